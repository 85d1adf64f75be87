"""Writing exports without ever leaving a half-written or clobbered output behind.

A directory export is built in a sibling temp dir and swapped in at the end, a file export
in a sibling temp file renamed over it. An existing directory is replaced only when it is
empty or carries the marker of an earlier kverr export, so pointing `kverr export site` at
the wrong folder cannot delete someone's files. A write that fails (a full disk, a folder
kverr may not write) removes the temp and leaves the earlier output as it was; the user
gets one sentence naming the output and what to do.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from pathlib import Path

from kverr import io
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
    """Yield a temp dir beside `out`; on success it becomes `out`, on failure it is removed
    (an OSError becomes an OutputError naming `out`)."""
    out = out.resolve()
    _check_replaceable(out)
    with _writing(out), io.replacing_dir(out) as tmp:
        yield tmp
        (tmp / MARKER).write_text("written by kverr export; safe to replace\n", encoding="utf-8")


@contextlib.contextmanager
def replace_file(path: Path, suffix: str) -> Iterator[Path]:
    """Yield a temp file path beside `path` (created empty, mode 0600); on success it is renamed
    over `path`, on failure removed (an OSError becomes an OutputError naming `path`).
    `suffix`: the format's, for the example file name when `path` is a directory."""
    path = Path(path)
    if path.is_dir():
        raise OutputError(
            f"{path} is a directory; pass a file path such as {path / ('errors' + suffix)}."
        )
    with _writing(path), io.replacing_file(path, mode=0o644, create=True) as tmp:
        yield tmp


# A write that fails for want of room: a full disk or quota, or a file larger than the
# file system (or the process's size limit) takes.
_NO_ROOM = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


@contextlib.contextmanager
def _writing(out: Path) -> Iterator[None]:
    try:
        yield
    except OSError as exc:
        why = exc.strerror or str(exc)
        if exc.errno in _NO_ROOM:
            raise OutputError(
                f"cannot write {out} ({why}); free space on {_disk_of(out)}, or export to"
                " another disk, then run the export again."
            ) from None
        where = f": {exc.filename}" if exc.filename else ""
        raise OutputError(
            f"cannot write {out} ({why}{where}); pick an output path in a writable directory."
        ) from None


def _disk_of(path: Path) -> str:
    """The mount point holding `path`: what `df` names and what must be freed."""
    here = Path(os.path.abspath(path)).parent
    while not os.path.ismount(here) and here != here.parent:
        here = here.parent
    return f"the disk mounted at {here}"
