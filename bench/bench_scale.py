"""Lookup time at 1,000 vs 100,000 synthetic records: the anchor prefilter keeps it flat.

Baseline (same run): the 1,000-record catalog. Target: 100,000 records within 3x of it.

    python bench/bench_scale.py [--small 1000] [--large 100000] [--lookups 300]
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

from kverr.catalog import load_dataset, open_catalog, synth


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


def measure(n: int, lookups: int, work: Path) -> dict[str, float]:
    records = synth.synthetic_records(n)
    ds = synth.write_files(work / f"ds{n}", records)
    t0 = time.perf_counter()
    load_dataset(ds, work / f"c{n}.duckdb")
    load_s = time.perf_counter() - t0
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
    return {"load_s": load_s, "index_s": index_s, "median_ms": statistics.median(times) * 1000,
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
    for n, r in ((args.small, small), (args.large, large)):
        print(f"{n:>7} records: load {r['load_s']:.2f} s, index {r['index_s'] * 1000:.0f} ms, "
              f"lookup median {r['median_ms']:.3f} ms, p95 {r['p95_ms']:.3f} ms, hits {r['hits']}/{r['lookups']}")  # fmt: skip
    ratio = large["median_ms"] / small["median_ms"]
    print(f"ratio {args.large}/{args.small} (baseline: the {args.small}-record catalog, same run): {ratio:.2f}x "
          f"(target <= 3x: {'PASS' if ratio <= 3 else 'FAIL'})")  # fmt: skip


if __name__ == "__main__":
    main()
