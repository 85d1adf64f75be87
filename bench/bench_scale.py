"""Lookup time at 1,000 vs 100,000 synthetic records: the anchor prefilter keeps it flat; and
the memory a load of each takes.

Baseline (same run): the 1,000-record catalog. Targets: 100,000 records within 3x of it; the
100,000-record load <= 500 MB peak RSS, measured in a child process that does only
the load (beside it: the peak of a child that only imports the loader).

    python bench/bench_scale.py [--small 1000] [--large 100000] [--lookups 300]
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kverr.catalog import open_catalog

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))  # the synthetic datasets of tests/synth.py
import synth  # noqa: E402


def queries(records: list[dict], n: int, seed: int = 11) -> list[str]:
    """Half hits (a record's message with values filled in, behind a log prefix), half misses."""
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        if i % 2:
            out.append(
                "[2026-04-07 10:05:08 TP0] Decode batch. #running-req: 3, #token: 9000, token usage: 0.01"
            )
            continue
        rec = rnd.choice(records)
        out.append(
            "[2026-04-07 10:05:08 TP0] ValueError: "
            + rec["errorMessage"].replace("{v}", str(rnd.randrange(1, 99)))
        )
    return out


# The child's own peak: VmHWM belongs to its address space (ru_maxrss carries the parent's
# RSS at fork over into the child, and the parent holds the synthetic records).
LOAD = """
import resource, sys, time
from kverr.catalog import load_dataset
t0 = time.perf_counter()
if sys.argv[1] != "-":
    load_dataset(sys.argv[1], sys.argv[2])
try:
    with open("/proc/self/status") as fh:
        kb = next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))
except OSError:
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(time.perf_counter() - t0, kb)
"""


def load_in_child(ds: str, catalog: str) -> tuple[float, float]:
    """(seconds, peak RSS in MB) of a process that loads `ds` into `catalog` ("-": no load)."""
    out = subprocess.run([sys.executable, "-c", LOAD, ds, catalog], capture_output=True,
                         text=True, check=True).stdout.split()  # fmt: skip
    return float(out[0]), int(out[1]) / 1024


def measure(n: int, lookups: int, work: Path) -> dict[str, float]:
    records = synth.synthetic_records(n)
    ds = synth.write_files(work / f"ds{n}", records)
    load_s, load_mb = load_in_child(str(ds), str(work / f"c{n}.duckdb"))
    with open_catalog(work / f"c{n}.duckdb") as cat:
        t0 = time.perf_counter()
        cat.index  # noqa: B018 - build the in-memory anchor index once, as a long-lived process would
        index_s = time.perf_counter() - t0
        qs = queries(records, lookups)
        times, hits = [], 0
        for q in qs:
            t0 = time.perf_counter()
            found = cat.explain(q)
            times.append(time.perf_counter() - t0)
            hits += bool(found)
    return {"load_s": load_s, "load_mb": load_mb, "index_s": index_s, "median_ms": statistics.median(times) * 1000,
            "p95_ms": sorted(times)[int(len(times) * 0.95)] * 1000, "hits": hits, "lookups": len(qs)}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", type=int, default=1000)
    ap.add_argument("--large", type=int, default=100_000)
    ap.add_argument("--lookups", type=int, default=300)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        small = measure(args.small, args.lookups, Path(tmp))
        large = measure(args.large, args.lookups, Path(tmp))
        _, bare_mb = load_in_child("-", "-")
    for n, r in ((args.small, small), (args.large, large)):
        print(f"{n:>7} records: load {r['load_s']:.2f} s, peak RSS {r['load_mb']:.0f} MB, index {r['index_s'] * 1000:.0f} ms, "
              f"lookup median {r['median_ms']:.3f} ms, p95 {r['p95_ms']:.3f} ms, hits {r['hits']}/{r['lookups']}")  # fmt: skip
    print(f"{args.large} records: load peak RSS {large['load_mb']:.0f} MB (a child that only imports the loader:"
          f" {bare_mb:.0f} MB; target <= 500 MB: {'PASS' if large['load_mb'] <= 500 else 'FAIL'})")  # fmt: skip
    ratio = large["median_ms"] / small["median_ms"]
    print(f"ratio {args.large}/{args.small} (baseline: the {args.small}-record catalog, same run): {ratio:.2f}x "
          f"(target <= 3x: {'PASS' if ratio <= 3 else 'FAIL'})")  # fmt: skip


if __name__ == "__main__":
    main()
