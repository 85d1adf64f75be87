"""The child's reader of a revision's files: one `git cat-file --batch` for its whole life.

The parent names the command and what its environment adds (extractor/sources.py's
`git_command` and `GIT_ENV`: read-only whatever the repository's config says), so that the
child reads git without importing the extractor.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence


class Blobs:
    def __init__(self, argv: Sequence[str], env: Mapping[str, str]) -> None:
        self._proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **env},
        )

    def read(self, obj: str) -> bytes:
        """The object's bytes; LookupError when the repository lacks it."""
        proc = self._proc
        assert proc.stdin is not None and proc.stdout is not None
        if "\n" in obj or "\r" in obj:
            raise LookupError(
                f"object name {obj!r} holds a line break; git cannot be asked for it."
            )
        proc.stdin.write(obj.encode("utf-8", "surrogateescape") + b"\n")
        proc.stdin.flush()
        header = proc.stdout.readline().decode("utf-8", "replace").split()
        if len(header) != 3 or not header[2].isdigit():
            raise LookupError(f"object {obj!r} is missing from the repository")
        data = proc.stdout.read(int(header[2]))
        proc.stdout.read(1)  # the newline after each object
        return data


def text_of(data: bytes) -> str:
    """A file's text as the build reads it (extractor.sources.decode_source): UTF-8 without a
    BOM; bytes that are not UTF-8 stay surrogate escapes, which compile() then refuses."""
    return data.decode("utf-8", "surrogateescape").removeprefix("\ufeff")
