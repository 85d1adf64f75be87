"""Files written whole or not at all, JSONL and a dataset's manifest read back, and what a killed
writer left behind.

Every writer builds its output beside the target under a name that carries the target's and
its own PID, then renames it into place: a file `.{name}.PID.HEX.tmp` (plus DuckDB's `.wal`
while a catalog is written), a directory `.{name}.tmp-PID`, the one it replaces moved aside
as `.{name}.old-PID` between the two renames. SIGKILL skips their cleanup: `sweep(target)`,
run by every writer first, removes such entries only when their owner is dead (no process
has that PID, and the entry has not changed for MIN_AGE seconds: a PID can be reused, and a
writer in another PID namespace sharing the folder looks dead from here). An `.old-PID` copy
is kept while the target itself is missing: a writer killed between its two renames left the
only copy there.

Stdlib only: the catalog loader runs on the `kverr explain` path when it builds the default
catalog on first use.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from kverr import __version__
from kverr.errors import DatasetError

# ---------------------------------------------------------------- writing


def temp_name(path: Path) -> Path:
    """A fresh temp name beside `path` that `sweep(path)` recognises."""
    return path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")


@contextlib.contextmanager
def replacing_file(path: Path, *, mode: int | None = None, create: bool = False) -> Iterator[Path]:
    """Yield a temp path beside `path`; when the block ends without error it is renamed over
    `path` (given `mode` first), and it is removed in any case. `create`: made empty and
    private (0600) here, never through a link someone planted; else the block creates it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    sweep(path)
    tmp = temp_name(path)
    try:
        if create:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        yield tmp
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    finally:
        for leftover in (tmp, tmp.with_name(tmp.name + ".wal")):
            with contextlib.suppress(OSError):
                leftover.unlink(missing_ok=True)


def write_atomic(path: Path, text: str | Iterable[str]) -> None:
    """`text`, or its pieces in order (a dataset of 70,000 records is never one string), as
    a shared file (0644) on disk before it is renamed into place."""
    with (
        replacing_file(path, mode=0o644, create=True) as tmp,
        open(tmp, "w", encoding="utf-8", newline="\n") as fh,
    ):
        fh.writelines([text] if isinstance(text, str) else text)
        fh.flush()
        os.fsync(fh.fileno())


@contextlib.contextmanager
def replacing_dir(out: Path) -> Iterator[Path]:
    """Yield an empty temp dir beside `out` (0700 while half-written); when the block ends
    without error it becomes `out` (0755), the earlier `out` removed; otherwise it is removed
    and `out` stays as it was."""
    out.parent.mkdir(parents=True, exist_ok=True)
    sweep(out)
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    old = out.with_name(f".{out.name}.old-{os.getpid()}")
    _remove(tmp)  # an earlier write of this process that failed
    tmp.mkdir(mode=0o700)
    try:
        yield tmp
        os.chmod(tmp, 0o755)  # a web server must read an exported site
        if out.exists():
            os.replace(out, old)
        os.replace(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)


# ---------------------------------------------------------------- JSONL


def iter_objects(path: Path, *, optional: bool = False) -> Iterator[tuple[str, dict[str, Any]]]:
    """(`path:line`, object) for every non-blank line, one at a time (memory for one object,
    however long the file). A missing file has none when `optional`; anything else wrong
    raises DatasetError naming the file and line and what to do."""
    if not path.is_file():
        if optional:
            return
        raise DatasetError(
            f"{path} is missing; point at a dataset directory written by `kverr build`."
        )
    try:
        with path.open(encoding="utf-8") as fh:
            for n, text in enumerate(fh, start=1):
                if not text.strip():
                    continue
                where = f"{path}:{n}"
                try:
                    obj = json.loads(text)
                except json.JSONDecodeError as exc:
                    raise DatasetError(
                        f"{where} is not valid JSON ({exc.msg}); fix or delete that line, or rebuild the dataset."
                    ) from None
                if not isinstance(obj, dict):
                    raise DatasetError(
                        f"{where} is not a JSON object; fix or delete that line, or rebuild the dataset."
                    )
                yield where, obj
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(
            f"{path} cannot be read ({exc}); check the file, or rebuild the dataset."
        ) from None


# A dataset directory's files beside manifest.json (records first: the catalog reads the rest whole)
DATASET_FILES = ("records.jsonl", "revisions.jsonl", "occurrences.jsonl", "flags.jsonl", "lineage.jsonl", "flaghistory.jsonl")  # fmt: skip
SCHEMA_VERSIONS = (2,)  # record schema versions kverr reads (manifest `schemaVersion`)


def read_manifest(dataset_dir: Path) -> dict[str, Any]:
    """The dataset's manifest.json, its schemaVersion one this kverr reads; DatasetError
    names the file and what to do."""
    path = dataset_dir / "manifest.json"
    if not path.is_file():
        raise DatasetError(
            f"{path} is missing; point at a dataset directory written by `kverr build`."
        )
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DatasetError(
            f"{path} is not valid JSON ({exc}); rebuild the dataset with `kverr build`."
        ) from None
    # A manifest without one predates the field (hand-made datasets): it is read as schema 2.
    version = manifest.get("schemaVersion", 2) if isinstance(manifest, dict) else None
    if type(version) is not int or version not in SCHEMA_VERSIONS:
        raise DatasetError(
            f"{path} has schemaVersion {version!r}, which kverr {__version__} cannot read (it reads"
            f" {', '.join(map(str, SCHEMA_VERSIONS))}); rebuild the dataset with this kverr's"
            " `kverr build`, or upgrade kverr."
        )
    return manifest


# ---------------------------------------------------------------- leftovers

MIN_AGE = 600.0  # seconds an entry must be untouched before a dead owner's file is removed

# What follows ".{target name}." in a temp entry's name; `pid` is its owner.
_TAIL = re.compile(
    r"(?:tmp|old)-(?P<pid>\d{1,10})|(?P<pid2>\d{1,10})(?:\.[0-9a-f]{8})?\.tmp(?:\.wal)?"
)


def sweep(target: Path | str, *, min_age: float = MIN_AGE) -> list[Path]:
    """Remove the stale temp entries of `target` (a dataset folder or catalog file) from its
    folder; returns what was removed. Best effort: what cannot be removed stays."""
    target = Path(target)
    prefix = f".{target.name}."
    removed = []
    try:
        entries = list(target.parent.iterdir())
    except OSError:
        return []
    now = time.time()
    for entry in entries:
        if not entry.name.startswith(prefix):
            continue
        m = _TAIL.fullmatch(entry.name[len(prefix) :])
        if m is None:
            continue
        if m.group().startswith("old-") and not target.exists():
            continue  # killed between its two renames: this is the only copy of the output
        pid = int(m["pid"] or m["pid2"])
        try:
            info = entry.lstat()
        except OSError:
            continue
        if now - info.st_mtime < min_age or _alive(pid):
            continue
        _remove(entry)
        if not entry.exists() and not entry.is_symlink():
            removed.append(entry)
    return removed


def _remove(entry: Path) -> None:
    if entry.is_dir() and not entry.is_symlink():
        shutil.rmtree(entry, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):  # not ours to remove (permissions): leave it
            entry.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    """True when a process with this PID exists (ours, or another user's)."""
    if pid <= 0 or os.name == "nt":  # (Windows' os.kill would end the process, not probe it)
        return True  # leave the entry alone
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except (OverflowError, OSError):
        return False  # a number no process can have
    return True
