"""Scan throughput on a realistic SGLang log, as a ratio to reading the same file.

The log is real SGLang noise: its own INFO and WARNING messages from outside the server-args
files, rendered (data/noise.json, scripts/noise_corpus.py), and its runtime lines, each with
SGLang's `[2025-01-01 10:00:00 TP0] ` prefix; every `--every`-th entry is a known error (a
message of a catalog record without placeholders), all of which must be found. The floor,
measured in the same process on the same file: a Python loop that only reads its lines.
Targets (issues 12 and 15): scan <= 5x the read loop, >= 150,000 lines/s, RSS growth bounded.

    python bench/bench_scan.py [--catalog FILE] [--lines 1000000] [--every 997] [--before DIR]

`--before DIR`: also measure the kverr checkout at DIR (e.g. a worktree of main) on the same
log, in a child process, read loop and all, so a change is shown before and after in one run.
Without --catalog it uses $KVERR_CATALOG or the packaged catalog, else a synthetic catalog of
600 records (about SGLang's size), and says which (the --before child builds its own).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kverr.catalog import open_catalog, synth

PACKAGES = ("extractor", "records", "schema", "catalog", "pipeline", "feeds", "profiles")


def error_lines(cat, n: int = 12) -> list[str]:
    out = []
    for rec in cat.records():
        if rec.get("messagePattern") and not rec.get("placeholders") and rec.get("errorMessage"):
            cls = rec.get("errorClass")
            out.append(f"{cls}: {rec['errorMessage']}" if cls else rec["errorMessage"])
        if len(out) == n:
            break
    return out


def measure(log: Path, catalog: str | None) -> dict:
    """Read loop, then scan, of `log` in this process: lines/s, ratio, RSS growth, found ids."""
    lines = sum(1 for _ in synth.lines_of(log))
    reads = []
    for _ in range(2):  # the second read is the warm floor the scan is compared to
        t0 = time.perf_counter()
        for _ in synth.lines_of(log):
            pass
        reads.append(time.perf_counter() - t0)
    base = min(reads)
    with open_catalog(catalog) as cat:
        cat.index  # noqa: B018 - the index build is a one-time cost, reported by bench_scale
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t0 = time.perf_counter()
        matches = cat.scan(synth.lines_of(log))
        took = time.perf_counter() - t0
        rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        found = sorted({m.record["id"] for m in matches})
    return {
        "lines": lines,
        "read_lps": lines / base,
        "scan_lps": lines / took,
        "scan_s": took,
        "ratio": took / base,
        "rss_growth_mb": max(rss1 - rss0, 0) / 1024,
        "found": found,
    }


def child(checkout: Path, log: Path) -> dict:
    """`measure` run by the kverr at `checkout`: its folders mapped to the `kverr` names."""
    with tempfile.TemporaryDirectory() as tree:
        pkg = Path(tree) / "kverr"
        pkg.mkdir()
        for entry in (checkout / "kverr").iterdir():
            (pkg / entry.name).symlink_to(entry)
        for name in (*PACKAGES, "verify", "data"):
            if (checkout / name).is_dir():
                (pkg / name).symlink_to(checkout / name)
        # its own packaged catalog, in its own format and cache (a build prunes older ones)
        env = {**os.environ, "PYTHONPATH": tree, "XDG_CACHE_HOME": str(Path(tree) / "cache")}
        env.pop("KVERR_CATALOG", None)
        out = subprocess.run(
            [sys.executable, __file__, "--measure", str(log)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    return json.loads(out.strip().splitlines()[-1])


def report(label: str, r: dict) -> None:
    print(
        f"{label}: read loop {r['read_lps']:,.0f} lines/s; scan {r['scan_lps']:,.0f} lines/s"
        f" ({r['scan_s']:.2f} s) = {r['ratio']:.2f}x the read time;"
        f" peak RSS growth {r['rss_growth_mb']:.1f} MB; {len(r['found'])} distinct errors found"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--catalog")
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--every", type=int, default=997)
    ap.add_argument("--before", type=Path, help="another kverr checkout to measure as well")
    ap.add_argument("--measure", type=Path, help=argparse.SUPPRESS)  # the child's side
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, None)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        path, label = synth.pick_catalog(args.catalog, work)
        log = work / "launch.log"
        with open_catalog(path) as cat:
            errors = error_lines(cat)
            expected = {m.record["id"] for e in errors for m in cat.explain(e)[:1]}
        written = synth.realistic_log(log, args.lines, errors, every=args.every)
        size_mb = log.stat().st_size / 1e6
        before = child(args.before.resolve(), log) if args.before else None
        after = measure(log, str(path))
    print(f"catalog: {label}")
    print(f"log: {after['lines']:,} lines, {size_mb:.1f} MB of SGLang noise (data/noise.json),"
          f" {written} error entries ({len(errors)} distinct messages)")  # fmt: skip
    if before:
        report(f"before ({args.before})", before)
    report("after", after)
    if before:
        print(f"speed-up: {after['scan_lps'] / before['scan_lps']:.1f}x lines/s; ratio to the"
              f" read loop {before['ratio']:.2f}x -> {after['ratio']:.2f}x")  # fmt: skip
    ok = after["ratio"] <= 5 and after["scan_lps"] >= 150_000
    print(f"targets: scan <= 5x the read loop and >= 150,000 lines/s: {'PASS' if ok else 'FAIL'};"
          f" all sprinkled errors found: {'yes' if expected <= set(after['found']) else 'NO'}")  # fmt: skip


if __name__ == "__main__":
    main()
