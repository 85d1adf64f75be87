"""Temp files a killed kverr left beside its output, removed by the next run that writes there.

Every writer builds its output next to the target and renames it into place, naming the temp
after the target and its own PID: the dataset writer `.{out}.tmp-PID` (and `.{out}.old-PID`
for the dataset it replaces), `load_dataset` `.{catalog}.PID.HEX.tmp` plus DuckDB's `.wal`,
the Parquet and JSONL exports `.{out}.PID.tmp`, the site and Markdown exports `.{out}.tmp-PID`
(and `.{out}.old-PID`). SIGKILL skips their cleanup. `sweep(target)` removes such
entries only when their owner is dead: no process has that PID, and the entry has not changed
for MIN_AGE seconds (a PID can be reused, and a build in another PID namespace sharing the
folder looks dead from here). An `.old-PID` copy is kept while the target itself is missing:
a writer killed between its two renames left the only copy there.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import time
from pathlib import Path

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
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):  # not ours to remove (permissions): leave it
                entry.unlink(missing_ok=True)
        if not entry.exists() and not entry.is_symlink():
            removed.append(entry)
    return removed


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
