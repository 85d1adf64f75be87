"""The child's reader of a revision's files: one `git cat-file --batch` for its whole life, run
as the parent names it (extractor.sources' `git_command` and `GIT_ENV`: read-only whatever the
repository's config says), so the child reads git without importing the extractor."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence


class Blobs:
    def __init__(self, argv: Sequence[str], env: Mapping[str, str]) -> None:
        pipe = subprocess.PIPE
        self._proc = subprocess.Popen(list(argv), stdin=pipe, stdout=pipe,
                                      stderr=subprocess.DEVNULL, env={**os.environ, **env})  # fmt: skip

    def read(self, obj: str) -> bytes:
        """The object's bytes; LookupError when the repository lacks it."""
        stdin, stdout = self._proc.stdin, self._proc.stdout
        assert stdin is not None and stdout is not None
        if "\n" in obj or "\r" in obj:
            raise LookupError(f"object name {obj!r} holds a line break; git cannot be asked for it")
        stdin.write(obj.encode("utf-8", "surrogateescape") + b"\n")
        stdin.flush()
        header = stdout.readline().decode("utf-8", "replace").split()
        if len(header) != 3 or not header[2].isdigit():
            raise LookupError(f"object {obj!r} is missing from the repository")
        data = stdout.read(int(header[2]))
        stdout.read(1)  # the newline after each object
        return data


def text_of(data: bytes) -> str:
    """A file's text as the build reads it (extractor.sources.decode_source): UTF-8 without a
    BOM; bytes that are not UTF-8 stay surrogate escapes, which compile() then refuses."""
    return data.decode("utf-8", "surrogateescape").removeprefix("\ufeff")
