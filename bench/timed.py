"""One timed run of a command, as every benchmark that spawns kverr measures it, and the kverr
they spawn."""

from __future__ import annotations

import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

# The kverr installed beside this interpreter (a venv's), else the one on PATH
KVERR = shutil.which("kverr", path=str(Path(sys.executable).parent)) or "kverr"


def timed(cmd: list[str], *, ok: tuple[int, ...] = (0,), **run) -> tuple[float, float, bytes]:
    """(wall seconds, CPU seconds of the child and its own children, stdout) of one run of
    `cmd` (`run`: subprocess.run's env, cwd, timeout); SystemExit naming the command when it
    exits with a code not in `ok`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, **run)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in ok:
        err = proc.stderr.decode(errors="replace")[-400:]
        raise SystemExit(f"{' '.join(cmd[:4])} exited {proc.returncode}: {err}")
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, proc.stdout
