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
    """Yield a temp dir beside `out`; on success it becomes `out`, on failure it is removed
    (an OSError becomes an OutputError naming `out`)."""
    out = out.resolve()
    _check_replaceable(out)
    with _writing(out):
        out.parent.mkdir(parents=True, exist_ok=True)
        leftovers.sweep(out)  # what exports killed before their cleanup left here
        # Named after the target and this process (kverr/leftovers.py), so the next export
        # can tell a killed one's folder from a running one's.
        tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
        _remove(tmp)  # an earlier export of this process that failed
        tmp.mkdir(mode=0o700)
        try:
            yield tmp
            (tmp / MARKER).write_text(
                "written by kverr export; safe to replace\n", encoding="utf-8"
            )
            os.chmod(tmp, 0o755)  # 0700 while half-written; a web server must read a docs site
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
    with _writing(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        leftovers.sweep(path)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")  # (see replace_dir)
        _remove(tmp)
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))  # never via a link
        try:
            yield tmp
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise


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
