"""Scan throughput on a realistic SGLang log, as a ratio to reading the same file.

The log is real SGLang noise: its own INFO and WARNING messages from outside the server-args
files, rendered (data/noise.json, scripts/noise_corpus.py), and its runtime lines, each with
SGLang's `[2025-01-01 10:00:00 TP0] ` prefix; every `--every`-th entry is a known error (a
message of a catalog record without placeholders), all of which must be found. The scan is
what `kverr explain --file LOG` runs (catalog/query.py); any other record it answers is an
answer to noise, and is counted. The floor, measured in the same
process on the same file: a Python loop that only reads its lines. Both are timed in CPU
seconds of that process (time.process_time), best of RUNS: the machine may be shared, and
time a busy neighbour takes is no cost of either.
Targets: scan <= 5x the read loop, >= 150,000 lines/s, RSS growth bounded.

    python bench/bench_scan.py [--catalog FILE] [--lines 1000000] [--small 100000]
                               [--every 997] [--before DIR]

Each measurement runs in a fresh child process, which reports its own peak RSS (ru_maxrss):
the same scan of a `--small`-line and a `--lines`-line log shows what memory grows with the
log (it should not). `--before DIR`: also measure the kverr checkout at DIR (e.g. a worktree
of main) on the same logs, with DIR/.venv/bin/python when there is one, so a change is shown
before and after in one run; the two are interleaved, so a busy machine slows both alike.
Without --catalog it uses $KVERR_CATALOG or the packaged catalog, else a synthetic catalog of
600 records (about SGLang's size), and says which; the --before child reads the same file,
except for the packaged datasets, which it loads itself (its catalog format may differ).
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

from kverr.catalog import load_datasets, open_catalog, store

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))  # the synthetic datasets of tests/synth.py
import synth  # noqa: E402

PACKAGES = ("extractor", "records", "schema", "catalog", "pipeline", "feeds", "profiles")
RUNS = 3  # best of: the machine may be shared, and a child's first read warms the page cache


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
    """Read loop, then scan, of `log` in this process: lines/s, ratio, peak RSS, found ids."""
    from kverr.catalog.query import explain_query  # the checkout's own, as the CLI runs it

    lines = sum(1 for _ in synth.lines_of(log))
    with open_catalog(catalog) as cat:
        cat.index  # noqa: B018 - the index build is a one-time cost, reported by bench_scale
        reads, scans = [], []
        for _ in range(RUNS):
            t0 = time.process_time()
            for _ in synth.lines_of(log):
                pass
            reads.append(time.process_time() - t0)
            t0 = time.process_time()
            _, matches, _ = explain_query(cat, None, log)
            scans.append(time.process_time() - t0)
        found = sorted({m.record["id"] for m in matches})
    base, took = min(reads), min(scans)
    return {
        "lines": lines,
        "read_lps": lines / base,
        "scan_lps": lines / took,
        "scan_s": took,
        "ratio": took / base,
        "peak_rss_mb": peak_rss_mb(),
        "found": found,
    }


def peak_rss_mb() -> float:
    """This process's peak RSS: VmHWM (ru_maxrss survives exec: a child would report the
    parent's peak, the log generation's included), else ru_maxrss."""
    try:
        for row in Path("/proc/self/status").read_text().splitlines():
            if row.startswith("VmHWM:"):
                return int(row.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(checkout: Path | None, log: Path, catalog: str | None, cache: Path) -> dict:
    """`measure` in a fresh process: this checkout's (None), or the kverr at `checkout`, by
    its own venv's python, else by this python with its folders mapped to the `kverr` names.
    `catalog`: the same file for both (None: the checkout builds its own packaged one)."""
    cmd = [sys.executable, __file__, "--measure", str(log)]
    if catalog:
        cmd += ["--catalog", catalog]
    env = dict(os.environ)
    with tempfile.TemporaryDirectory() as tree:
        if checkout is not None:
            # without a catalog: its own packaged one, in its own cache (a build prunes others)
            env["XDG_CACHE_HOME"] = str(cache)
            env.pop("KVERR_CATALOG", None)
            own = checkout / ".venv" / "bin" / "python"
            if own.exists():
                cmd[0] = str(own)
            else:
                pkg = Path(tree) / "kverr"
                pkg.mkdir()
                for entry in (checkout / "kverr").iterdir():
                    (pkg / entry.name).symlink_to(entry)
                for name in (*PACKAGES, "verify", "data"):
                    if (checkout / name).is_dir():
                        (pkg / name).symlink_to(checkout / name)
                env["PYTHONPATH"] = tree
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def report(label: str, small: dict, big: dict) -> None:
    print(
        f"{label}: {big['lines']:,} lines: read loop {big['read_lps']:,.0f} lines/s;"
        f" scan {big['scan_lps']:,.0f} lines/s ({big['scan_s']:.2f} s) ="
        f" {big['ratio']:.2f}x the read loop; {len(big['found'])} distinct errors found\n"
        f"    peak RSS of the scanning process: {small['peak_rss_mb']:.1f} MB at"
        f" {small['lines']:,} lines, {big['peak_rss_mb']:.1f} MB at {big['lines']:,}"
        f" (growth {big['peak_rss_mb'] - small['peak_rss_mb']:+.1f} MB);"
        f" {small['lines']:,} lines: {small['ratio']:.2f}x"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--catalog")
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--small", type=int, default=100_000, help="the smaller log, for RSS growth")
    ap.add_argument("--every", type=int, default=997)
    ap.add_argument("--before", type=Path, help="another kverr checkout to measure as well")
    ap.add_argument("--measure", type=Path, help=argparse.SUPPRESS)  # the child's side
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.catalog)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        path, label = synth.pick_catalog(args.catalog, work)
        packaged = label.startswith("default") and bool(store.packaged_datasets())
        if packaged:
            # a private copy: a build in another process prunes the shared cache's catalogs
            path, label = work / "catalog.duckdb", "the packaged datasets, loaded for this run"
            load_datasets(store.packaged_datasets(), path)
        with open_catalog(path) as cat:
            errors = error_lines(cat)
            expected = {m.record["id"] for e in errors for m in cat.explain(e)[:1]}
        logs, written = {}, {}
        for n in (args.small, args.lines):
            logs[n] = work / f"launch-{n}.log"
            written[n] = synth.realistic_log(logs[n], n, errors, every=args.every)
        before = args.before.resolve() if args.before else None
        results: dict[tuple[str, int], dict] = {}
        for n in (args.small, args.lines):  # interleaved: a busy spell slows both alike
            if before:
                # the packaged datasets: the other checkout loads its own catalog from them,
                # in its own catalog format (which may differ from this checkout's)
                theirs = None if packaged else str(path)
                results["before", n] = child(before, logs[n], theirs, work / "cache")
            results["after", n] = child(None, logs[n], str(path), work / "cache")
        size_mb = logs[args.lines].stat().st_size / 1e6
    print(f"catalog: {label}")
    print(f"log: {args.lines:,} lines, {size_mb:.1f} MB of SGLang noise (data/noise.json),"
          f" {written[args.lines]} error entries ({len(errors)} distinct messages)")  # fmt: skip
    small, big = results["after", args.small], results["after", args.lines]
    if before:
        report(
            f"before ({args.before})", results["before", args.small], results["before", args.lines]
        )
    report("after", small, big)
    if before:
        old = results["before", args.lines]
        print(f"speed-up: {big['scan_lps'] / old['scan_lps']:.1f}x lines/s; ratio to the"
              f" read loop {old['ratio']:.2f}x -> {big['ratio']:.2f}x")  # fmt: skip
    ok = big["ratio"] <= 5 and big["scan_lps"] >= 150_000
    print(f"targets: scan <= 5x the read loop and >= 150,000 lines/s: {'PASS' if ok else 'FAIL'};"
          f" all sprinkled errors found: {'yes' if expected <= set(big['found']) else 'NO'}")  # fmt: skip
    # precision on the noise: every other record answered is an answer to a line of noise
    for name, res in (("before", results.get(("before", args.lines))), ("after", big)):
        if res is not None:
            extra = sorted(set(res["found"]) - expected)
            print(f"{name}: answers on noise: {len(extra)} distinct records beyond the sprinkled"
                  f" errors{': ' + ', '.join(extra[:8]) if extra else ''}")  # fmt: skip


if __name__ == "__main__":
    main()
