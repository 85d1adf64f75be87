"""Writing exports without ever leaving a half-written or clobbered output behind.

A directory export is built in a sibling temp dir and swapped in at the end. An existing
directory is replaced only when it is empty or carries the marker of an earlier kverr export,
so pointing `kverr export site` at the wrong folder cannot delete someone's files.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from kverr import leftovers
from kverr.errors import KverrError

MARKER = ".kverr-export"


class OutputError(KverrError):
    """An export destination that kverr will not overwrite or cannot write."""


def _check_replaceable(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise OutputError(
            f"{out} is a file, not a directory; pass a directory path to export into."
        )
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).exists():
        raise OutputError(
            f"{out} is not empty and was not written by kverr; pick an empty or new directory."
        )


@contextlib.contextmanager
def replace_dir(out: Path) -> Iterator[Path]:
    """Yield a temp dir beside `out`; on success it becomes `out`, on failure it is removed."""
    out = out.resolve()
    _check_replaceable(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    leftovers.sweep(out)  # what exports killed before their cleanup left here
    # Named after the target and this process (kverr/leftovers.py), so the next export can
    # tell a killed one's folder from a running one's.
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    _remove(tmp)  # an earlier export of this process that failed
    tmp.mkdir(mode=0o700)
    try:
        yield tmp
        (tmp / MARKER).write_text("written by kverr export; safe to replace\n", encoding="utf-8")
        os.chmod(
            tmp, 0o755
        )  # made 0700 while half-written; a docs site must be readable by a web server
        old = None
        if out.exists():
            old = out.with_name(f".{out.name}.old-{os.getpid()}")
            os.replace(out, old)
        os.replace(tmp, out)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def write_file_atomic(path: Path, text: str) -> None:
    """Temp file + rename, so a crash leaves the old file or the new one, never a mix."""
    path = Path(path)
    if path.is_dir():
        raise OutputError(
            f"{path} is a directory; pass a file path such as {path / 'errors.jsonl'}."
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    leftovers.sweep(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")  # (see replace_dir)
    _remove(tmp)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # (never through a link)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
