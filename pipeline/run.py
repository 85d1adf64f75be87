"""`build`: plan -> extract (scanning each revision as its blobs are ready) -> assemble -> write
-> catalog. The one entry point the CLI, the tests and the benchmarks call.
"""

from __future__ import annotations

import functools
import gc
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kverr.extractor.depth import OUT_OF_MEMORY
from kverr.extractor.sources import shown
from kverr.pipeline.assemble import add_argparse, assemble, load_overlay, pin_to_commits
from kverr.pipeline.cache import CACHE_NAME, Cache, code_fingerprint
from kverr.pipeline.docs import docs_reader, finish
from kverr.pipeline.extract import GC_THRESHOLD, Progress, run_extraction
from kverr.pipeline.history import Scan, Scanner
from kverr.pipeline.introduce import apply as introduce
from kverr.pipeline.introduce import introducing_commits, touching_soon
from kverr.pipeline.plan import Plan, add_snapshot, link_repo, plan_directory_default, plan_git
from kverr.pipeline.spec import BuildSpec
from kverr.pipeline.write import check_out, make_manifest, write_out

from kverr.errors import KverrWarning
from kverr.ftypes import ParseFailure, Revision, SourceFile
from kverr.profile import load_profile


@dataclass
class BuildResult:
    out: Path
    catalog: Path | None
    revisions: list[Revision]
    counts: dict[str, Any]  # the manifest's counts
    stats: dict[str, int]  # cache use: blobs, blobs_parsed, units_parsed, unit_cache_hits, ...
    failures: list[ParseFailure] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # overlay warnings
    collisions: list[Any] = field(default_factory=list)  # pattern collisions, when available
    seconds: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)  # seconds per phase
    cache: Path | None = None  # the extraction cache file this build read and wrote
    verify: Any = None  # verify.step.VerifyReport when the build ran --verify


def _fewer_gc_passes(fn: Callable[..., BuildResult]) -> Callable[..., BuildResult]:
    """Run `fn` with a high first-generation GC threshold. A build allocates many small objects
    (a parsed module, decoded cache values) that live until it ends; at Python's default
    threshold the collector re-walks them hundreds of times, about a tenth of a second of an
    incremental build. The threshold is put back afterwards."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> BuildResult:
        old = gc.get_threshold()
        gc.set_threshold(max(old[0], GC_THRESHOLD), *old[1:])
        try:
            return fn(*args, **kwargs)
        finally:
            gc.set_threshold(*old)

    return wrapper


@_fewer_gc_passes
def build(spec: BuildSpec, *, on_progress: Progress | None = None) -> BuildResult:
    """Build the dataset directory `spec.out` (and the catalog, when given). Idempotent: a
    second run with nothing new reuses every cached result."""
    started = time.monotonic()
    clock = Clock()
    progress = on_progress or (lambda phase, done, total: None)
    out, catalog, git = spec.out, spec.catalog, spec.git
    git_repo = Path(git.repo) if git is not None else None
    check_out(out)
    profile = load_profile(spec.profile)  # a bad profile fails now, not after extraction
    if spec.verify:
        from kverr.verify import confine
        from kverr.verify.spec import spec_for

        spec_for(profile).platform(spec.platform)  # an unknown --platform fails now
        confine.require(spec.trust_repo)  # no sandbox here: refuse now, before any work
    loaded_overlay = load_overlay(spec.overlay)  # a bad overlay fails now, not after extraction
    cache = Cache(spec.cache or (catalog or out).resolve().parent / CACHE_NAME)
    globs = spec.globs
    try:
        if git is not None:
            repo_name = spec.repo_name or link_repo(git_repo, globs, profile)
            globs = list(globs or profile.file_set())
            plan = plan_git(
                git_repo,
                git.revs,
                tags_glob=git.tags,
                touching=git.touching,
                globs=globs,
                repo_name=repo_name,
                cache=cache,
                profile=profile,
            )
            if git.snapshots:
                plan = add_snapshot(
                    plan, git.snapshots, label=git.snapshot_label, date=git.snapshot_date,
                    globs=globs,
                )  # fmt: skip
        else:
            plan, globs = plan_directory_default(
                Path(spec.source), globs, repo_name=spec.repo_name, profile=profile
            )
    except BaseException:
        cache.close()
        raise
    clock.lap("plan")
    docs = docs_reader(git_repo, profile, plan.repository, cache)
    try:
        touching = touching_soon(git_repo, plan, globs, cache)
        stats, scan = _extract_and_scan(plan, cache, spec.jobs, progress)
        clock.lap("extract+ids")
        assembled = assemble(plan, cache, scan, loaded_overlay, spec.dataset_version, clock, docs)
        commits = introducing_commits(
            git_repo, plan, scan.spans, assembled.lineage, touching(), cache
        )
        assembled.records = introduce(assembled.records, commits)
        clock.lap("introduce")
        add_argparse(plan, cache, scan, assembled, docs)
        clock.lap("argparse")
        report = None
        if spec.verify:
            from kverr.verify.step import verify_step

            # --jobs N: N sandbox children per platform share the records.
            assembled.records, report = verify_step(
                plan, cache, scan, assembled.records, pinned=pin_to_commits(plan, scan),
                repo=git_repo, platform=spec.platform,
                progress=progress, workers=spec.jobs, occurrences=assembled.occurrences,
                trust_repo=spec.trust_repo,
            )  # fmt: skip
            clock.lap("verify")
        assembled.records = finish(
            assembled.records, scan.flag_spans, plan.revisions, profile, scan.spans,
            assembled.lineage,
        )  # fmt: skip
    finally:
        if docs is not None:
            docs.close()
        plan.close()
        cache.close()
    manifest = make_manifest(plan, globs, assembled, stats, spec.command)
    if report is not None:
        manifest["counts"]["verification"] = report.to_dict()
    write_out(out, plan.revisions, assembled, manifest, plan.files)
    clock.lap("write")
    if catalog is not None:
        from kverr.catalog import load_dataset

        load_dataset(out, catalog)
        clock.lap("catalog")
    return BuildResult(
        out=out,
        catalog=catalog,
        revisions=plan.revisions,
        counts=manifest["counts"],
        stats=stats,
        failures=assembled.failures,
        warnings=assembled.warnings,
        collisions=assembled.collisions,
        seconds=time.monotonic() - started,
        timings=clock.laps,
        cache=cache.path,
        verify=report,
    )


class Clock:
    """Seconds per build phase, for the summary and the benchmark (never in the dataset)."""

    def __init__(self) -> None:
        self.t = time.monotonic()
        self.laps: dict[str, float] = {}

    def lap(self, name: str) -> None:
        now = time.monotonic()
        self.laps[name] = round(self.laps.get(name, 0.0) + now - self.t, 3)
        self.t = now


def _extract_and_scan(
    plan: Plan, cache: Cache, jobs: int, progress: Progress
) -> tuple[dict[str, int], Scan]:
    """Extract every (path, blob) the plan needs that the blob cache does not already hold, and
    scan each revision as soon as its blobs are ready: the fresh extraction is used while still
    in memory (no decode), and with --jobs the scan overlaps the workers' extraction."""
    fp = code_fingerprint("extractor") + plan.profile.fingerprint("extract")
    distinct = list(dict.fromkeys(pf for files in plan.files for pf in files))
    todo = [(p, b) for p, b in distinct if not cache.has("blob", f"{fp}:{p}:{b}")]
    stats = {
        "revisions": len(plan.revisions),
        "blobs": len(distinct),
        "blobs_parsed": 0,
        "blob_cache_hits": len(distinct) - len(todo),
        "units_parsed": 0,
        "unit_cache_hits": 0,
    }
    progress("extract", 0, len(todo))
    scanner = Scanner(plan, cache, stats, progress)
    pending = set(todo)

    def on_done(src: SourceFile, value: str, file_stats: dict[str, int]) -> None:
        key = (src.path, src.blob)
        if file_stats.get("retry"):  # this run's trouble, not the file's: kept out of the cache
            scanner.taint(key, value)
            warnings.warn(
                KverrWarning(
                    f"{shown(src.path)}: {OUT_OF_MEMORY}; its records are missing from this"
                    " build, which caches nothing that depends on it (the next build tries again)"
                ),
                stacklevel=2,
            )
        else:
            cache.put_many("blob", {f"{fp}:{src.path}:{src.blob}": value})
        scanner.loader.fresh[key] = value
        pending.discard(key)
        stats["blobs_parsed"] += 1
        stats["units_parsed"] += file_stats.get("units_parsed", 0)
        stats["unit_cache_hits"] += file_stats.get("cache_hits", 0)
        progress("extract", stats["blobs_parsed"], len(todo))
        scanner.advance(pending)

    if todo:
        run_extraction(todo, plan.read, cache, jobs, on_done, plan.profile.extract)
    scanner.advance(set())
    scanner.save()
    cache.commit()
    return stats, scanner.scan
