"""The first answer after `pip install .`, beside a warm one, in one run; and `kverr serve`'s start.

    python bench/bench_first.py [--venv DIR] [--rounds 5] [--checkout]

Install: the checkout's files as a fresh clone has them (tracked and untracked, the ignored
left out: `git ls-files -co --exclude-standard`) are copied to a temp folder and installed with
`pip install` into a fresh venv; the wheel build makes the packaged catalog (setup.py), so its
wall time is a row. `--venv DIR` installs there once and reuses it on later runs.

Rows, each a fresh process of the installed `kverr`, in turn (first, warm, first, warm ...:
load from other jobs on the machine hits both alike), medians over --rounds of wall seconds
and the child's CPU seconds (which move less with load):
- first explain: an empty XDG_CACHE_HOME, `kverr explain LINE`.
- warm explain: the same command on a cache that already holds the catalog.
- first/warm: the target is <= 3; every first output must be byte for byte the warm one.
- serve: `kverr serve --port 0` spawned, its URL read from stderr, /healthz polled every 10 ms:
  seconds from spawn to the first 200 (target <= 1 s), on a warm cache and on an empty one;
  the CPU column is the server's own until then (read from /proc).
- --checkout: `python -m kverr explain LINE` in this checkout on an empty cache, where no
  shipped catalog exists and the first use builds one (13 s of CPU): the cost the wheel
  removes, shown for scale (one run).
"""

from __future__ import annotations

import argparse
import http.client
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timed import timed

ROOT = Path(__file__).resolve().parent.parent
LINE = "ValueError: --ssl-keyfile requires --ssl-certfile to be specified as well."
TARGET_RATIO, TARGET_SERVE = 3.0, 1.0


def install(venv: Path) -> float | None:
    """A copy of the checkout installed into `venv` (made fresh); its wall seconds. None when
    the venv already holds an install (--venv given again)."""
    if (venv / "bin" / "kverr").is_file():
        return None
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout.split(b"\0")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="kverr-clone-") as tmp:
        for name in filter(None, files):
            src, dst = ROOT / os.fsdecode(name), Path(tmp) / os.fsdecode(name)
            if src.is_file():
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dst)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        t0 = time.perf_counter()
        subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", tmp], check=True)
        return time.perf_counter() - t0


def cpu_of(pid: int) -> float:
    """CPU seconds a live process has used so far (Linux /proc; nan elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def serve_start(kverr: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(wall, CPU) seconds from spawning `kverr serve --port 0` to its first 200 on /healthz."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [*kverr, "serve", "--port", "0"],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, env=env, cwd=cwd, text=True,
    )  # fmt: skip
    try:
        line = proc.stderr.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        if not m:
            raise SystemExit(f"kverr serve printed no URL: {line!r}")
        deadline = t0 + 120
        while time.perf_counter() < deadline:
            conn = http.client.HTTPConnection("127.0.0.1", int(m.group(1)), timeout=5)
            try:
                conn.request("GET", "/healthz")
                if conn.getresponse().status == 200:
                    return time.perf_counter() - t0, cpu_of(proc.pid)
            except OSError:
                pass
            finally:
                conn.close()
            time.sleep(0.01)
        raise SystemExit("kverr serve did not answer /healthz with 200 within 120 s")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        proc.stderr.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--venv", type=Path, help="install here once and reuse it (default: a temp venv)"
    )
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--checkout", action="store_true", help="also time the checkout's first use")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="kverr-first-"))
    venv = args.venv or work / "venv"
    took = install(venv)
    kverr = [str(venv / "bin" / "kverr")]
    env = {**os.environ, "KVERR_CATALOG": ""}
    env.pop("PYTHONPATH", None)

    def cache(name: str) -> dict[str, str]:
        return {**env, "XDG_CACHE_HOME": str(work / name)}

    explain = [*kverr, "explain", LINE]
    warm_env = cache("warm")
    _, _, expected = timed(explain, env=warm_env, cwd=work, timeout=900)  # fills the warm cache
    first, warm = [], []
    for n in range(args.rounds):
        wall, cpu, out = timed(explain, env=cache(f"first-{n}"), cwd=work, timeout=900)
        if out != expected:
            raise SystemExit("a first explain printed other text than a warm one")
        first.append((wall, cpu))
        wall, cpu, out = timed(explain, env=warm_env, cwd=work, timeout=900)
        if out != expected:
            raise SystemExit("a warm explain printed other text than the first")
        warm.append((wall, cpu))
    serve_warm = [serve_start(kverr, warm_env, work) for _ in range(args.rounds)]
    serve_cold = [serve_start(kverr, cache(f"serve-{n}"), work) for n in range(args.rounds)]

    def med(rows, i=0):
        return statistics.median(r[i] for r in rows)

    print(f"kverr installed in {venv}" + (f": pip install {took:.1f} s" if took else " (reused)"))
    print(f"{'row':<34}{'wall s':>8}{'cpu s':>8}")
    print(f"{'first explain (empty cache)':<34}{med(first):>8.3f}{med(first, 1):>8.3f}")
    print(f"{'warm explain':<34}{med(warm):>8.3f}{med(warm, 1):>8.3f}")
    ratio, cpu_ratio = med(first) / med(warm), med(first, 1) / med(warm, 1)
    verdict = "ok" if ratio <= TARGET_RATIO else "OVER"
    print(
        f"{'first / warm':<34}{ratio:>8.2f}{cpu_ratio:>8.2f}  target <= {TARGET_RATIO:g}: {verdict}"
    )
    print("outputs: every first explain printed the warm one's bytes")
    for label, rows in (("serve -> /healthz 200 (warm)", serve_warm),
                        ("serve -> /healthz 200 (empty)", serve_cold)):  # fmt: skip
        verdict = "ok" if med(rows) <= TARGET_SERVE else "OVER"
        print(
            f"{label:<34}{med(rows):>8.3f}{med(rows, 1):>8.3f}  target <= {TARGET_SERVE:g}: {verdict}"
        )
    if args.checkout:
        checkout = [sys.executable, "-m", "kverr", "explain", LINE]
        wall, cpu, out = timed(checkout, env=cache("checkout"), cwd=ROOT, timeout=900)
        same = "same output" if out == expected else "OTHER OUTPUT"
        print(f"{'checkout first use (builds)':<34}{wall:>8.3f}{cpu:>8.3f}  {same}")
    print(f"rounds: {args.rounds}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    shutil.rmtree(work, ignore_errors=True)  # (a --venv lives elsewhere and stays)


if __name__ == "__main__":
    main()
