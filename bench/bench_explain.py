"""Whole-process `kverr explain "<line>"`: median wall time vs. the `import duckdb` floor.

Baseline (same run): `python -c "import duckdb"` (a bare interpreter plus duckdb, which every
explain needs). Target: explain median < 300 ms. Runs the real console script in a fresh
process each time, human view and --json.

    python bench/bench_explain.py [--catalog FILE] [--runs 15]

Without --catalog it uses $KVERR_CATALOG or the packaged catalog (built into the cache first,
outside the timing), else a synthetic catalog of 600 records, and says which.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kverr.catalog import open_catalog, synth


def sample_line(path: Path) -> str:
    with open_catalog(path) as cat:
        for rec in cat.records():
            if (
                rec.get("messagePattern")
                and not rec.get("placeholders")
                and rec.get("errorMessage")
            ):
                return f"[2026-04-07 10:05:08 TP0] {rec.get('errorClass') or 'ValueError'}: {rec['errorMessage']}"
    raise SystemExit(f"no record with a plain message in {path}")


def median_ms(cmd: list[str], runs: int, env: dict[str, str], expect: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, env=env)
        times.append(time.perf_counter() - t0)
        if proc.returncode != expect:
            raise SystemExit(f"{cmd[:3]} exited {proc.returncode}: {proc.stderr.decode()[-300:]}")
    return statistics.median(times) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--catalog")
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path, label = synth.pick_catalog(args.catalog, Path(tmp))
        line = sample_line(path)
        env = {**os.environ, "KVERR_CATALOG": str(path), "COLUMNS": "100"}
        kverr = shutil.which("kverr", path=str(Path(sys.executable).parent)) or "kverr"
        floor = median_ms([sys.executable, "-c", "import duckdb"], args.runs, env, 0)
        human = median_ms([kverr, "explain", line], args.runs, env, 0)
        as_json = median_ms([kverr, "explain", line, "--json"], args.runs, env, 0)
        miss = median_ms([kverr, "explain", "all quiet on the launch front"], args.runs, env, 1)
    print(f"catalog: {label}")
    print(f"line: {line[:100]}{'...' if len(line) > 100 else ''}")
    print(f"baseline python -c 'import duckdb': median {floor:.0f} ms ({args.runs} runs)")
    for name, ms in (
        ("explain (card view)", human),
        ("explain --json", as_json),
        ("explain, no match", miss),
    ):
        print(f"{name}: median {ms:.0f} ms, ratio to baseline {ms / floor:.2f}x")
    print(f"target < 300 ms: {'PASS' if max(human, as_json, miss) < 300 else 'FAIL'}")


if __name__ == "__main__":
    main()
