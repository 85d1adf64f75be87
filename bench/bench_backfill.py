"""Backfill every commit that touched the SGLang server-args files, then show the cache at work.

    python bench/bench_backfill.py /work/.mirror/Clarit-AI+Engram/repo [--jobs 2] [--limit N]

Prints: commits processed; blobs and functions actually parsed; the full backfill time
single-process (as N-1 commits plus the newest one added on top, which is what a full run
costs) and with --jobs; the no-op rebuild time; the time to add one new commit. Targets on a
2-core machine: full backfill < 300 s, no-op < 10 s, new commit < 1 s. Each figure is also
given as a ratio to the single-process full backfill measured in the same run (the baseline).
Skipped in CI: it needs the repository path.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from kverr.extractor import sources
from kverr.pipeline import build

from kverr.profile import load_profile

SGLANG_FILES = load_profile("sglang").files


def _run(label: str, **kwargs) -> tuple[float, dict]:
    t0 = time.perf_counter()
    result = build(**kwargs)
    took = time.perf_counter() - t0
    s = result.stats
    print(
        f"{label:<34} {took:8.2f} s   revisions {s['revisions']:5d}  blobs parsed {s['blobs_parsed']:5d}"
        f" (cached {s['blob_cache_hits']:5d})  functions parsed {s['units_parsed']:6d} (cached {s['unit_cache_hits']:6d})"
        f"  records {result.counts['records']}",
        flush=True,
    )
    print(
        f"{'':<34} phases: " + ", ".join(f"{k} {v:.2f}s" for k, v in result.timings.items()),
        flush=True,
    )
    return took, s


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repo", type=Path, help="SGLang git repository (bare is fine)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument(
        "--limit", type=int, default=0, help="only the newest N touching commits (quick runs)"
    )
    ap.add_argument(
        "--catalog", action="store_true", help="also load a DuckDB catalog in each build"
    )
    args = ap.parse_args()

    revs = sources.list_revisions(args.repo, [], touching=True)
    if args.limit:
        revs = revs[-args.limit :]
    first, before_last, last = revs[0].sha, revs[-2].sha, revs[-1].sha
    # A range that starts just before the oldest commit (or covers all history).
    start = f"{first}~1" if _has_parent(args.repo, first) else None
    base = [f"{start}..{before_last}"] if start else [before_last]
    full = [f"{start}..{last}"] if start else [last]
    print(f"repository {args.repo}: {len(revs)} commits touch {', '.join(SGLANG_FILES)}")

    with tempfile.TemporaryDirectory(prefix="kverr-bench-") as tmp:
        t = Path(tmp)

        def opts(out: str, cache: str, revs: list[str], jobs: int = 1) -> dict:
            return dict(
                out=t / out,
                git_repo=args.repo,
                revs=revs,
                touching=True,
                cache_path=t / cache,
                jobs=jobs,
                repo_name="sgl-project/sglang",
                catalog=(t / f"{out}.duckdb") if args.catalog else None,
            )

        t_base, s_base = _run("backfill N-1 commits, 1 process", **opts("a", "c1.sqlite", base))
        t_new, s_new = _run("add the newest commit", **opts("a", "c1.sqlite", full))
        t_noop, _ = _run("no-op rebuild", **opts("a", "c1.sqlite", full))
        t_jobs, s_jobs = _run(
            f"full backfill, --jobs {args.jobs}", **opts("b", "c2.sqlite", full, args.jobs)
        )

    single = t_base + t_new
    print()
    print(f"commits processed             {s_jobs['revisions']}")
    print(
        f"blobs parsed (full backfill)  {s_jobs['blobs_parsed']} of {s_jobs['blobs']} distinct (path, blob)"
    )
    print(
        f"functions parsed              {s_base['units_parsed'] + s_new['units_parsed']} "
        f"(unit-cache hits {s_base['unit_cache_hits'] + s_new['unit_cache_hits']})"
    )
    print(f"full backfill, 1 process      {single:8.2f} s  (baseline 1.00; target < 300 s)")
    print(f"full backfill, --jobs {args.jobs}       {t_jobs:8.2f} s  (ratio {t_jobs / single:.2f})")
    print(
        f"no-op rebuild                 {t_noop:8.2f} s  (ratio {t_noop / single:.3f}; target < 10 s)"
    )
    print(
        f"add one new commit            {t_new:8.2f} s  (ratio {t_new / single:.3f}; target < 1 s; "
        f"{s_new['blobs_parsed']} blob(s), {s_new['units_parsed']} function(s) parsed)"
    )
    return 0


def _has_parent(repo: Path, sha: str) -> bool:
    try:
        sources.resolve(repo, f"{sha}~1")
        return True
    except Exception:
        return False


if __name__ == "__main__":
    sys.exit(main())
