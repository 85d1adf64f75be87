"""Scan throughput: lines/s of `Catalog.scan` over a realistic SGLang launch log, in-process.

Baseline (same run): reading the same file line by line and doing nothing. Target: >= 50,000
lines/s. Errors (messages of catalog records without placeholders) are sprinkled in and must
all be found.

    python bench/bench_scan.py [--catalog FILE] [--lines 1000000] [--every 997]

Without --catalog it uses $KVERR_CATALOG or the packaged catalog, else a synthetic catalog of
600 records (about SGLang's size), and says which.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

from kverr.catalog import open_catalog, synth


def error_lines(cat, n: int = 12) -> list[str]:
    out = []
    for rec in cat.records():
        if rec.get("messagePattern") and not rec.get("placeholders") and rec.get("errorMessage"):
            cls = rec.get("errorClass")
            out.append(f"{cls}: {rec['errorMessage']}" if cls else rec["errorMessage"])
        if len(out) == n:
            break
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--catalog")
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--every", type=int, default=997)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        path, label = synth.pick_catalog(args.catalog, work)
        log = work / "launch.log"
        with open_catalog(path) as cat:
            errors = error_lines(cat)
            expected = {m.record["id"] for e in errors for m in cat.explain(e)[:1]}
            written = synth.launch_log(log, args.lines, errors, every=args.every)
            size_mb = log.stat().st_size / 1e6

            t0 = time.perf_counter()
            for _ in synth.lines_of(log):
                pass
            base = time.perf_counter() - t0

            cat.index  # noqa: B018 - index build is a one-time cost, reported by bench_scale
            rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            t0 = time.perf_counter()
            matches = cat.scan(synth.lines_of(log))
            took = time.perf_counter() - t0
            rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    found = {m.record["id"] for m in matches}
    print(f"catalog: {label}")
    print(
        f"log: {args.lines} lines, {size_mb:.1f} MB, {written} error lines ({len(errors)} distinct messages)"
    )
    print(f"baseline read loop: {args.lines / base:,.0f} lines/s")
    print(f"scan: {args.lines / took:,.0f} lines/s ({took:.2f} s), {len(found)} distinct errors found, "
          f"peak RSS growth {max(rss1 - rss0, 0) / 1024:.1f} MB")  # fmt: skip
    print(f"ratio scan/read: {base / took:.3f} (scan at {took / base:.1f}x the read time)")
    rate = args.lines / took
    print(f"target >= 50,000 lines/s: {'PASS' if rate >= 50_000 else 'FAIL'}; "
          f"all sprinkled errors found: {'yes' if expected <= found else 'NO'}")  # fmt: skip


if __name__ == "__main__":
    main()
