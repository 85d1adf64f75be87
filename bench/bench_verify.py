"""What `kverr build --verify` costs: the shipped build with and without the verify step.

    python bench/bench_verify.py /work/.mirror/Clarit-AI+Engram/repo [--tags-only] [--platform P]

Builds the shipped dataset's revisions exactly as README "Regenerating the dataset" does (every
v* tag, every commit that touches the file set, the newest upstream commit, the seed snapshot
and the curated overlay) three times into temp dirs, each with its own fresh cache: without
--verify (the baseline, measured in the same run), with --verify cold, and with --verify again
on the warm cache. Prints wall seconds, the ratio to the baseline (target: the shipped build
stays within 2x), the runs of the check, the verified rate and each phase. `--tags-only` leaves
out the commits between tags (a quicker build whose verify step weighs more). Skipped in CI: it
needs the repository.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from kverr.pipeline import BuildSpec, GitSource, build

NEWEST = "3d3a32c0b9f50962ccdddadda02c52a59e45bbc8"
ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT.parent / "shared" / "seeds" / "kv_cache_hook.py"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repo", type=Path, help="SGLang git repository (bare is fine)")
    ap.add_argument(
        "--tags-only", action="store_true", help="the tags and the newest commit, not every commit"
    )
    ap.add_argument("--platform", default=None, help="platform profile (default: cuda-sm90)")
    args = ap.parse_args()
    git: dict = dict(revs=[NEWEST], tags="v*", touching=not args.tags_only)
    if SEED.is_file():
        git.update(
            snapshots=[f"{SEED}=python/sglang/srt/arg_groups/kv_cache_hook.py"],
            snapshot_label="seed",
            snapshot_date="2026-08-28T05:10:05Z",
        )
    opts: dict = dict(source=GitSource(args.repo, **git), repo_name="sgl-project/sglang")
    overlay = ROOT / "data" / "curated.json"
    if overlay.is_file():
        opts["overlay"] = overlay
    what = "tags + newest" if args.tags_only else "tags + every touching commit + newest"
    print(f"the shipped build's revisions ({what}, the seed snapshot, the overlay)", flush=True)
    with tempfile.TemporaryDirectory(prefix="kverr-bench-verify-") as tmp:
        t = Path(tmp)

        phase: dict[str, float] = {}

        def run(label: str, out: str, cache: str, verify: bool) -> float:
            t0 = time.perf_counter()
            spec = BuildSpec(
                out=t / out, cache=t / cache, verify=verify, platform=args.platform, **opts
            )
            r = build(spec)
            took = time.perf_counter() - t0
            phases = ", ".join(f"{k} {v:.2f}s" for k, v in r.timings.items())
            extra = ""
            if r.verify is not None:
                v = r.verify
                rate = 100 * v.verified_newest / v.errors_newest if v.errors_newest else 0.0
                main = (
                    100 * v.main_verified_newest / v.main_errors_newest
                    if v.main_errors_newest
                    else 0.0
                )
                extra = (
                    f"  runs {v.runs} (cached {v.cached}); verified {v.verified_newest}/"
                    f"{v.errors_newest} raise/assert at {v.newest} ({rate:.1f}%), "
                    f"{v.main_verified_newest}/{v.main_errors_newest} in "
                    f"{v.main_file.rsplit('/', 1)[-1]} ({main:.1f}%), "
                    f"{v.na_newest} not applicable"
                )
            print(
                f"{label:<28} {took:7.2f} s  {len(r.revisions)} revisions, "
                f"{r.counts['records']} records{extra}"
            )
            print(f"{'':<28} phases: {phases}", flush=True)
            phase[label] = r.timings.get("verify", 0.0)
            return took

        base = run("build, no verify", "a", "a.sqlite", False)
        cold = run("build --verify, cold cache", "b", "b.sqlite", True)
        warm = run("build --verify, warm cache", "b", "b.sqlite", True)
    print()
    print(f"baseline (no verify)      {base:7.2f} s  (1.00)")
    print(f"--verify, cold            {cold:7.2f} s  ({cold / base:.2f}x; target <= 2x)")
    print(f"--verify, warm (rebuild)  {warm:7.2f} s  ({warm / base:.2f}x)")
    step = phase["build --verify, cold cache"]
    # The extraction phases of two cold builds differ by a few seconds from run to run (other
    # work on the machine); the verify phase over the baseline is the step's own share.
    print(f"verify step alone         {step:7.2f} s  (baseline + step: {1 + step / base:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
