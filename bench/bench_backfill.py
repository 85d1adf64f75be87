"""Backfill every commit that touched the SGLang server-args files: its ratio to the ast floor,
--jobs N against --jobs 1, the no-op rebuild, one new commit, and the cache's size.

    python bench/bench_backfill.py /work/.mirror/Clarit-AI+Engram/repo [--jobs 2] [--limit N] [--rounds 1]

Floor (same run): a fresh process that reads the build's distinct (path, blob)s with one
`git cat-file --batch` and runs the stdlib `ast.parse` on each: what any extractor of those
files must do. The floor runs before and after each backfill: the backfill with one process
(as N-1 commits plus the newest on top, which is what a full run costs; then a no-op
rebuild) and the backfill with --jobs, in turn. Each backfill's ratio is to the mean of the
two floors beside it (the machine's speed drifts); medians over --rounds. Targets (issue
15): the --jobs backfill <= 3x the floor, --jobs 2 faster than --jobs 1 in wall time, the
extraction cache <= 5x the dataset it produced; no-op < 10 s, one new commit < 1 s.
Skipped in CI: it needs the repository path.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kverr.extractor import sources
from kverr.pipeline import BuildSpec, GitSource, build
from kverr.pipeline.plan import plan_git

from kverr.profile import load_profile

SGLANG = load_profile("sglang")
FLOOR = r"""
import ast, subprocess, sys, time
repo, blobs = sys.argv[1], sys.argv[2:]
git = subprocess.Popen(["git", "-C", repo, "cat-file", "--batch"], stdin=subprocess.PIPE,
                       stdout=subprocess.PIPE)
for blob in blobs:
    git.stdin.write(blob.encode() + b"\n")
    git.stdin.flush()
    size = int(git.stdout.readline().split()[2])
    data = git.stdout.read(size + 1)[:-1]
    ast.parse(data.decode("utf-8", "surrogateescape"))
git.stdin.close()
git.wait()
"""


def floor(repo: Path, blobs: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", FLOOR, str(repo), *blobs], check=True)
    return time.perf_counter() - t0


def _run(label: str, **kwargs) -> tuple[float, dict, object]:
    t0 = time.perf_counter()
    result = build(BuildSpec(**kwargs))
    took = time.perf_counter() - t0
    s = result.stats
    print(
        f"{label:<34} {took:8.2f} s   revisions {s['revisions']:5d}  blobs parsed {s['blobs_parsed']:5d}"
        f" (cached {s['blob_cache_hits']:5d})  functions parsed {s['units_parsed']:6d} (cached {s['unit_cache_hits']:6d})",
        flush=True,
    )
    print(
        f"{'':<34} phases: " + ", ".join(f"{k} {v:.2f}s" for k, v in result.timings.items()),
        flush=True,
    )
    return took, s, result


def _size(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*") if p.is_file())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repo", type=Path, help="SGLang git repository (bare is fine)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument(
        "--limit", type=int, default=0, help="only the newest N touching commits (quick runs)"
    )
    ap.add_argument("--rounds", type=int, default=1, help="backfill pairs, run in turn")
    args = ap.parse_args()

    revs = sources.list_revisions(args.repo, [], touching=True, globs=list(SGLANG.files))
    if args.limit:
        revs = revs[-args.limit :]
    first, before_last, last = revs[0].sha, revs[-2].sha, revs[-1].sha
    # A range that starts just before the oldest commit (or covers all history).
    start = f"{first}~1" if _has_parent(args.repo, first) else None
    base = [f"{start}..{before_last}"] if start else [before_last]
    full = [f"{start}..{last}"] if start else [last]
    plan = plan_git(args.repo, full, tags_glob=None, touching=True, globs=list(SGLANG.files),
                    repo_name="sgl-project/sglang", profile=SGLANG)  # fmt: skip
    blobs = sorted({b for files in plan.files for _, b in files})
    plan.close()
    print(f"repository {args.repo}: {len(revs)} commits touch {', '.join(SGLANG.files)};"
          f" {len(blobs)} distinct blobs")  # fmt: skip

    floors: list[float] = []
    single: list[float] = []
    jobs: list[float] = []
    with tempfile.TemporaryDirectory(prefix="kverr-bench-") as tmp:
        t = Path(tmp)

        def opts(out: str, cache: str, revs: list[str], jobs: int = 1) -> dict:
            return dict(out=t / out, source=GitSource(args.repo, revs=revs, touching=True),
                        cache=t / cache, jobs=jobs, repo_name="sgl-project/sglang")  # fmt: skip

        def floor_run() -> float:
            floors.append(floor(args.repo, blobs))
            print(f"{'floor: cat-file + ast.parse':<34} {floors[-1]:8.2f} s", flush=True)
            return floors[-1]

        # A B A C A ...: each backfill is set against the floors run just before and just
        # after it. The machine's speed drifts by a fifth within minutes (seen: the same
        # floor at 13.1 s and 22.8 s in one run), so a ratio to a floor run elsewhere in
        # the run says more about the drift than about kverr.
        single_ratios: list[float] = []
        jobs_ratios: list[float] = []
        before = floor_run()
        for r in range(args.rounds):
            t_base, s_base, _ = _run(
                "backfill N-1 commits, 1 process", **opts(f"a{r}", f"c1{r}.sqlite", base)
            )
            t_new, s_new, _ = _run("add the newest commit", **opts(f"a{r}", f"c1{r}.sqlite", full))
            single.append(t_base + t_new)
            between = floor_run()
            single_ratios.append(single[-1] / ((before + between) / 2))
            t_noop, _, _ = _run("no-op rebuild", **opts(f"a{r}", f"c1{r}.sqlite", full))
            t_jobs, s_jobs, _ = _run(f"full backfill, --jobs {args.jobs}", **opts(f"b{r}", f"c2{r}.sqlite", full, args.jobs))  # fmt: skip
            jobs.append(t_jobs)
            before = floor_run()
            jobs_ratios.append(t_jobs / ((between + before) / 2))
        cache_mb = _size(t / "c10.sqlite") / 1e6
        data_mb = _size(t / "a0") / 1e6

    f, one, many = statistics.median(floors), statistics.median(single), statistics.median(jobs)
    r_one, r_many = statistics.median(single_ratios), statistics.median(jobs_ratios)
    print()
    print(f"commits processed             {s_jobs['revisions']}")
    print(
        f"blobs parsed (full backfill)  {s_jobs['blobs_parsed']} of {s_jobs['blobs']} distinct (path, blob)"
    )
    print(
        f"functions parsed              {s_base['units_parsed'] + s_new['units_parsed']} "
        f"(unit-cache hits {s_base['unit_cache_hits'] + s_new['unit_cache_hits']})"
    )
    print(f"floor (cat-file + ast.parse)  {f:8.2f} s  (median of {len(floors)}: "
          + ", ".join(f"{x:.2f}" for x in floors) + ")")  # fmt: skip
    print(
        f"full backfill, 1 process      {one:8.2f} s  ({r_one:.2f}x the floors beside it; "
        f"{one / f:.2f}x the median floor)"
    )
    print(
        f"full backfill, --jobs {args.jobs}       {many:8.2f} s  ({r_many:.2f}x the floors beside it;"
        f" {many / f:.2f}x the median floor; {many / one:.2f}x --jobs 1:"
        f" {'faster' if many < one else 'NOT faster'}; target <= 3x: {'PASS' if r_many <= 3 else 'FAIL'})"
    )
    print(f"no-op rebuild                 {t_noop:8.2f} s  (target < 10 s)")
    print(
        f"add one new commit            {t_new:8.2f} s  (target < 1 s; "
        f"{s_new['blobs_parsed']} blob(s), {s_new['units_parsed']} function(s) parsed)"
    )
    print(f"extraction cache              {cache_mb:8.1f} MB  ({cache_mb / data_mb:.2f}x the dataset's"
          f" {data_mb:.1f} MB; target <= 5x: {'PASS' if cache_mb <= 5 * data_mb else 'FAIL'})")  # fmt: skip
    return 0


def _has_parent(repo: Path, sha: str) -> bool:
    try:
        sources.resolve(repo, f"{sha}~1")
        return True
    except Exception:
        return False


if __name__ == "__main__":
    sys.exit(main())
