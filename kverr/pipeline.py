"""`kverr build`: source(s) -> extraction (cached) -> records -> lineage -> dataset dir -> catalog.

One revision or a thousand go through the same path:

1. plan      each revision's files as (path, blob sha) — a directory is one revision.
2. extract   every distinct (path, blob) once, ever: the blob cache maps it to a serialised
             FileExtraction; within a changed file the unit cache lets unchanged functions skip
             libcst. Both live in one sqlite file next to the output (stdlib only; duckdb stays
             in catalog/). `jobs > 1` spreads the blobs over processes.
3. scan      per revision: ids and sites (cached per file set), folded oldest first into
             occurrence spans, lineage (edited messages link new id -> old id) and each record's
             newest revision. The folded state is cached under a hash chain of the revisions, so
             a build that adds commits to a built history folds in only the new ones.
4. records   the newest form of each record, built at the last revision that has it (cached).
5. write     all dataset files into a temp dir, then swapped in: Ctrl-C never leaves a
             half-written dataset, and the cache keeps the finished work for the re-run.
"""

from __future__ import annotations

import functools
import gc
import hashlib
import json
import os
import shutil
import sqlite3
import time
import zlib
from collections.abc import Callable, Iterator, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kverr import leftovers
from kverr.errors import DatasetError, SourceError
from kverr.extractor import sources
from kverr.ftypes import (
    FileExtraction,
    FlagDecl,
    ParseFailure,
    Revision,
    SourceFile,
    from_json,
    to_json,
)

Progress = Callable[[str, int, int], None]  # (phase, done, total)

CACHE_NAME = ".kverr-cache.sqlite"
CACHE_FORMAT = "2"  # bump when what this module stores in the cache changes shape


# ---------------------------------------------------------------- result


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


# ---------------------------------------------------------------- cache


@functools.cache
def _code_fingerprint(*folders: str) -> str:
    """Hash of the code that produced a cached value: editing the extractor (or records) must
    invalidate what it produced, without anyone remembering to bump a version. Computed once per
    process, which is when that code was imported."""
    import kverr

    h = hashlib.sha256(f"{kverr.__version__}:{CACHE_FORMAT}".encode())
    root = Path(kverr.__file__).resolve().parents[1]
    h.update((root / "kverr" / "ftypes.py").read_bytes())  # the serialised shapes
    for folder in folders:
        for path in sorted((root / folder).rglob("*")):
            if path.suffix in (".py", ".json") and path.name != "sources.py" and path.is_file():
                h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


class Cache:
    """One sqlite file: `kv(ns, key, value)` with zlib-compressed JSON values. Single writer
    (the parent process); workers open it read-only."""

    def __init__(self, path: Path, *, readonly: bool = False) -> None:
        self.path = path
        try:
            if readonly:
                self.db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                self.db = sqlite3.connect(path, timeout=30)
                self.db.execute("PRAGMA journal_mode=WAL")
                self.db.execute(
                    "CREATE TABLE IF NOT EXISTS kv (ns TEXT, key TEXT, value BLOB, PRIMARY KEY (ns, key))"
                )
                self.db.commit()
        except sqlite3.DatabaseError as exc:
            raise DatasetError(
                f"cache {path} is unreadable ({exc}); delete it and build again."
            ) from None

    def has(self, ns: str, key: str) -> bool:
        return (
            self.db.execute("SELECT 1 FROM kv WHERE ns = ? AND key = ?", (ns, key)).fetchone()
            is not None
        )

    def get(self, ns: str, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM kv WHERE ns = ? AND key = ?", (ns, key)).fetchone()
        return zlib.decompress(row[0]).decode() if row else None

    def put_many(self, ns: str, items: dict[str, str]) -> None:
        rows = [(ns, k, zlib.compress(v.encode(), 1)) for k, v in items.items()]
        self.db.executemany("INSERT OR REPLACE INTO kv VALUES (?, ?, ?)", rows)

    def commit(self) -> None:
        self.db.commit()

    def close(self) -> None:
        self.db.commit()
        self.db.close()


class UnitCache(MutableMapping[str, str]):
    """The extractor's per-unit cache: reads through to sqlite, collects new entries in memory
    so the parent process can persist them (workers never write the sqlite file)."""

    def __init__(self, cache: Cache | None) -> None:
        self.cache = cache
        self.local: dict[str, str] = {}
        self.new: dict[str, str] = {}

    def __getitem__(self, key: str) -> str:
        if key in self.local:
            return self.local[key]
        value = self.cache.get("unit", key) if self.cache else None
        if value is None:
            raise KeyError(key)
        self.local[key] = value
        return value

    def __setitem__(self, key: str, value: str) -> None:
        self.local[key] = value
        self.new[key] = value

    def __delitem__(self, key: str) -> None:
        self.local.pop(key, None)
        self.new.pop(key, None)

    def __iter__(self) -> Iterator[str]:
        return iter(self.local)

    def __len__(self) -> int:
        return len(self.local)

    def take_new(self) -> dict[str, str]:
        new, self.new = self.new, {}
        return new


# ---------------------------------------------------------------- extraction (worker side)

_WORKER: dict[str, Any] = {}


def _worker_init(cache_path: str | None) -> None:
    import signal

    # Ctrl-C is the parent's business (it stops the pool and keeps what is cached); workers
    # would otherwise each print a KeyboardInterrupt traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    cache = (
        Cache(Path(cache_path), readonly=True) if cache_path and Path(cache_path).exists() else None
    )
    _WORKER["units"] = UnitCache(cache)


def _extract_one(src: SourceFile) -> tuple[FileExtraction, dict[str, int], dict[str, str]]:
    """Extract one file: (its FileExtraction without text, its stats, new unit-cache entries)."""
    units: UnitCache = _WORKER.setdefault("units", UnitCache(None))
    if src.error:
        line, col, message = src.error.split(":", 2)
        ext = FileExtraction(
            source=src, failures=(ParseFailure(src.path, int(line), int(col), message),)
        )
    else:
        from kverr.extractor.run import extract_raw

        # Raw: a site's flags are filtered against the whole file set later (_link_flags),
        # so one cached extraction serves every revision the blob appears in.
        ext = extract_raw(src, units)
    # The text is in git (or on disk) already; caching it again would double the cache size.
    slim = FileExtraction(
        source=SourceFile(src.path, "", src.blob, src.error),
        sites=ext.sites,
        flags=ext.flags,
        failures=ext.failures,
        stats=dict(ext.stats),
    )
    return slim, dict(ext.stats), units.take_new()


def _extract_one_json(src: SourceFile) -> tuple[str, dict[str, int], dict[str, str]]:
    """The worker-process form: serialised once, in the worker, instead of pickled."""
    slim, stats, units = _extract_one(src)
    return to_json(slim), stats, units


def _run_extraction(
    todo: Sequence[tuple[str, str]],
    read: Callable[[str, str], SourceFile],
    cache: Cache,
    jobs: int,
    on_done: Callable[[SourceFile, str, dict[str, int], FileExtraction | None], None],
) -> None:
    """Extract `todo` (in-process or over `jobs` processes); the parent persists every result
    and new unit entries as they arrive, committing every few seconds so an interrupt keeps them."""
    last = time.monotonic()

    def take(
        src: SourceFile,
        ext_json: str,
        file_stats: dict[str, int],
        new_units: dict[str, str],
        ext: FileExtraction | None = None,
    ) -> None:
        nonlocal last
        cache.put_many("unit", new_units)
        on_done(src, ext_json, file_stats, ext)
        if time.monotonic() - last > 2:
            cache.commit()
            last = time.monotonic()

    if jobs <= 1 or len(todo) <= 1:
        _WORKER["units"] = UnitCache(cache)
        try:
            for path, blob in todo:
                src = read(path, blob)
                ext, file_stats, new_units = _extract_one(src)
                take(src, to_json(ext), file_stats, new_units, ext)
        finally:
            # Every unit read stays in its memory: dropped with the build, or a long-lived
            # caller (the benchmark, a server) keeps them all and pays for them in GC time.
            _WORKER.pop("units", None)
    else:
        import multiprocessing

        cache.commit()
        with multiprocessing.get_context("spawn").Pool(
            jobs, _worker_init, (str(cache.path),)
        ) as pool:
            # Neighbouring versions share most functions: small ordered chunks keep each
            # worker's in-memory unit cache warm while results still stream back.
            srcs = (read(p, b) for p, b in todo)
            for (path, blob), result in zip(
                todo, pool.imap(_extract_one_json, srcs, chunksize=8), strict=True
            ):
                take(SourceFile(path, "", blob), *result)
    cache.commit()


# ---------------------------------------------------------------- plan


@dataclass(frozen=True)
class Plan:
    revisions: list[Revision]
    files: list[list[tuple[str, str]]]  # per revision: (path, blob), sorted by path
    read: Callable[[str, str], SourceFile]  # (path, blob) -> SourceFile
    repository: str | None
    close: Callable[[], None]
    # --snapshot files: {"path", "repoPath", "blob", "label", "date"} (the manifest's provenance)
    snapshots: tuple[dict, ...] = ()


def plan_directory(path: Path, globs: Sequence[str]) -> Plan:
    revision, files = sources.read_directory(path, globs)
    by_key = {(f.path, f.blob): f for f in files}
    return Plan([revision], [sorted(by_key)], lambda p, b: by_key[(p, b)], None, lambda: None)


def _plan_directory_default(path: Path, globs: Sequence[str] | None) -> tuple[Plan, list[str]]:
    """A directory without --files: the SGLang file set when it is an SGLang tree, else every .py."""
    if globs:
        return plan_directory(path, globs), list(globs)
    try:
        return plan_directory(path, sources.DEFAULT_GLOBS), list(sources.DEFAULT_GLOBS)
    except SourceError:
        return plan_directory(path, ["**/*.py"]), ["**/*.py"]


def plan_git(
    repo: Path,
    revs: Sequence[str],
    *,
    tags_glob: str | None,
    touching: bool,
    globs: Sequence[str],
    repo_name: str | None,
    cache: Cache | None = None,
) -> Plan:
    revisions = sources.list_revisions(
        repo, revs, tags_glob=tags_glob, touching=touching, globs=globs, repo_name=repo_name
    )
    files = [_tree(repo, r.sha or "", globs, cache) for r in revisions]
    if not any(files):
        raise SourceError(sources._no_match(f"{repo} at the selected revisions", globs))
    reader = sources.BlobReader(repo)
    return Plan(revisions, files, reader.source, repo_name, reader.close)


def add_snapshot(
    plan: Plan, specs: Sequence[str], *, label: str, date: str | None, globs: Sequence[str]
) -> Plan:
    """One more revision after the git ones: the newest git revision's files with the snapshot
    files added or replacing theirs. It is no commit, so its sha is null; its tag is `label`
    and its date the one given (never the clock: a rebuild must be byte-identical)."""
    if not date:
        raise SourceError("--snapshot needs --snapshot-date ISO (e.g. 2026-08-28T05:10:05Z).")
    date = sources.parse_date(date, what="--snapshot-date")
    base = plan.revisions[-1]
    if base.date and date < base.date:
        raise SourceError(
            f"--snapshot-date {date} is older than the newest revision built ({base.sha[:12]}, {base.date}); pass a later date."
        )
    if any(label in r.tags for r in plan.revisions) or not label.strip():
        raise SourceError(
            f"--snapshot-label {label!r} is empty or already a tag of a revision built; pass another label."
        )
    placed: dict[str, tuple[str, SourceFile]] = {}
    for spec in specs:
        for disk, src in sources.read_snapshot(spec, globs):
            placed[src.path] = (disk, src)
    files = dict(plan.files[-1])
    files.update({path: src.blob for path, (_, src) in placed.items()})
    by_key = {(src.path, src.blob): src for _, src in placed.values()}
    where = ", ".join(f"{disk} at {path}" for path, (disk, _) in sorted(placed.items()))
    revision = Revision(
        repo=base.repo,
        sha=None,
        date=date,
        tags=(label,),
        subject=f"snapshot {label}: {where}, over {base.sha[:12]} (files from disk, not a commit)",
    )
    provenance = tuple(
        {"path": disk, "repoPath": path, "blob": src.blob, "label": label, "date": date}
        for path, (disk, src) in sorted(placed.items())
    )
    read = plan.read
    return Plan(
        revisions=[*plan.revisions, revision],
        files=[*plan.files, sorted(files.items())],
        read=lambda p, b: by_key.get((p, b)) or read(p, b),
        repository=plan.repository,
        close=plan.close,
        snapshots=plan.snapshots + provenance,
    )


def _tree(repo: Path, sha: str, globs: Sequence[str], cache: Cache | None) -> list[tuple[str, str]]:
    """A commit's matching files never change: cached, a no-op rebuild spawns no ls-tree."""
    key = f"{sha}:{json.dumps(list(globs))}"
    hit = cache.get("tree", key) if cache else None
    if hit is not None:
        return [tuple(x) for x in json.loads(hit)]
    files = sources.list_files(repo, sha, globs)
    if cache:
        cache.put_many("tree", {key: json.dumps(files)})
    return files


# ---------------------------------------------------------------- build


def _fewer_gc_passes(fn: Callable[..., BuildResult]) -> Callable[..., BuildResult]:
    """Run `fn` with a high first-generation GC threshold. A build allocates many small objects
    (a parsed module, decoded cache values) that live until it ends; at Python's default
    threshold the collector re-walks them hundreds of times, about a tenth of a second of an
    incremental build. The threshold is put back afterwards."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> BuildResult:
        old = gc.get_threshold()
        gc.set_threshold(max(old[0], 50_000), *old[1:])
        try:
            return fn(*args, **kwargs)
        finally:
            gc.set_threshold(*old)

    return wrapper


@_fewer_gc_passes
def build(
    *,
    out: Path,
    source: Path | None = None,
    git_repo: Path | None = None,
    revs: Sequence[str] = (),
    tags_glob: str | None = None,
    touching: bool = False,
    globs: Sequence[str] | None = None,
    catalog: Path | None = None,
    jobs: int = 1,
    repo_name: str | None = None,
    overlay: Path | None = None,
    cache_path: Path | None = None,
    dataset_version: str | None = None,
    snapshots: Sequence[str] = (),
    snapshot_label: str = "snapshot",
    snapshot_date: str | None = None,
    command: Sequence[str] = (),
    on_progress: Progress | None = None,
) -> BuildResult:
    """Build the dataset directory `out` (and the catalog, when given) from a directory or a
    git repository. Idempotent: a second run with nothing new reuses every cached result.
    `snapshots` (`PATH=REPO_PATH`, git builds only) add one revision after the git ones."""
    started = time.monotonic()
    clock = _Clock()
    progress = on_progress or (lambda phase, done, total: None)
    _check_out(out)
    if git_repo is None and source is None:
        raise SourceError("nothing to build; pass a directory or file, or --git REPO.")
    if snapshots and git_repo is None:
        raise SourceError("--snapshot places files over a git revision; add --git REPO.")
    loaded_overlay = _load_overlay(overlay)  # a bad overlay fails now, not after extraction
    cache = Cache(cache_path or (catalog or out).resolve().parent / CACHE_NAME)
    try:
        if git_repo is not None:
            repo_name = repo_name or _link_repo(Path(git_repo), globs)
            globs = list(globs or sources.DEFAULT_GLOBS)
            plan = plan_git(
                Path(git_repo),
                revs,
                tags_glob=tags_glob,
                touching=touching,
                globs=globs,
                repo_name=repo_name,
                cache=cache,
            )
            if snapshots:
                plan = add_snapshot(
                    plan, snapshots, label=snapshot_label, date=snapshot_date, globs=globs
                )
        else:
            plan, globs = _plan_directory_default(Path(source), globs)
    except BaseException:
        cache.close()
        raise
    clock.lap("plan")
    try:
        stats, scan = _extract_all(plan, cache, jobs, progress)
        clock.lap("extract+ids")
        assembled = _assemble(plan, cache, scan, loaded_overlay, dataset_version, clock)
    finally:
        plan.close()
        cache.close()
    manifest = _manifest(plan, globs, assembled, stats, command)
    _write(out, plan.revisions, assembled, manifest)
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
    )


def _link_repo(git_repo: Path, globs: Sequence[str] | None) -> str:
    """The GitHub `owner/name` that githubUrl links point into when --repo-name is not given:
    the repository's GitHub origin, else SGLang's for the SGLang file set. Another project
    without a GitHub origin must say, rather than get links into SGLang."""
    from kverr.records import DEFAULT_REPO

    name = sources.github_name(git_repo)
    if name:
        return name
    if not globs or list(globs) == list(sources.DEFAULT_GLOBS):
        return DEFAULT_REPO
    raise SourceError(
        f"{git_repo} has no GitHub origin to link records to; pass --repo-name OWNER/NAME."
    )


class _Clock:
    """Seconds per build phase, for the summary and the benchmark (never in the dataset)."""

    def __init__(self) -> None:
        self.t = time.monotonic()
        self.laps: dict[str, float] = {}

    def lap(self, name: str) -> None:
        now = time.monotonic()
        self.laps[name] = round(self.laps.get(name, 0.0) + now - self.t, 3)
        self.t = now


def _check_out(out: Path) -> None:
    """Never overwrite something that is not a kverr dataset (never lose data)."""
    if out.exists() and (
        not out.is_dir() or (any(out.iterdir()) and not (out / "manifest.json").exists())
    ):
        raise DatasetError(
            f"{out} exists and is not a kverr dataset directory; pass a new or empty --out."
        )


def _extract_all(
    plan: Plan, cache: Cache, jobs: int, progress: Progress
) -> tuple[dict[str, int], _Scan]:
    """Extract every (path, blob) the plan needs that the blob cache does not already hold, and
    scan each revision as soon as its blobs are ready: the fresh extraction is used while still
    in memory (no decode), and with --jobs the scan overlaps the workers' extraction."""
    fp = _code_fingerprint("extractor")
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
    scanner = _Scanner(plan, cache, stats, progress)
    pending = set(todo)

    def on_done(
        src: SourceFile, ext_json: str, file_stats: dict[str, int], ext: FileExtraction | None
    ) -> None:
        key = (src.path, src.blob)
        cache.put_many("blob", {f"{fp}:{src.path}:{src.blob}": ext_json})
        scanner.loader.fresh[key] = ext if ext is not None else ext_json
        pending.discard(key)
        stats["blobs_parsed"] += 1
        stats["units_parsed"] += file_stats.get("units_parsed", 0)
        stats["unit_cache_hits"] += file_stats.get("cache_hits", 0)
        progress("extract", stats["blobs_parsed"], len(todo))
        scanner.advance(pending)

    if todo:
        _run_extraction(todo, plan.read, cache, jobs, on_done)
    scanner.advance(set())
    scanner.save()
    cache.commit()
    return stats, scanner.scan


# ---------------------------------------------------------------- records, occurrences, lineage


@dataclass
class Assembled:
    records: list[dict]  # newest form of each record, sorted by id, previousId set
    occurrences: list[dict]  # spans of revisions, see _occurrences
    flags: list[FlagDecl]  # newest declaration of each flag, sorted by name
    lineage: list[dict]
    failures: list[ParseFailure]
    warnings: list[str]
    collisions: list[Any]
    files: list[str]
    dataset_version: str
    sites: int  # sites in the newest revision


def _entries(exts: list[FileExtraction]) -> list[dict]:
    """One entry per site of a revision: its id without history (records.identity, the same rule
    build_records uses), where it is, what lineage compares, and the claim fields (`bare`, `alt`,
    `variant`) that let _settle re-decide a shared key with history. Cheap: no record is built."""
    from kverr.records.identity import claim_of, settle

    sites = [site for ext in exts for site in ext.sites]
    claims = [claim_of(site) for site in sites]
    out = [
        {
            "id": rid,
            "bare": c.bare,
            "alt": c.alt,
            "file": site.file,
            "line": site.line,
            "variant": site.variant,
            "function": site.function,
            "guard": c.guard,
            "kind": site.kind,
            "errorClass": site.error_class,
            "message": site.template.display() or site.condition or "",
        }
        for site, c, rid in zip(sites, claims, settle(claims), strict=True)
    ]
    return sorted(out, key=lambda e: (e["id"], e["file"], e["line"]))


def _holders(entries: list[dict]) -> dict[str, tuple[str, str | None, str]]:
    """bare id -> (file, function, guard) of the site holding it: records.identity's `previous`."""
    return {
        e["bare"]: (e["file"], e["function"], e["guard"]) for e in entries if e["id"] == e["bare"]
    }


def _settle(entries: list[dict], previous: dict) -> list[dict]:
    """A revision's entries with ids decided by history (the site that held a shared bare id in
    the revision before keeps it); the same list when history changes nothing."""
    from kverr.records.identity import Claim, settle

    shared: dict[str, int] = {}
    for e in entries:
        shared[e["bare"]] = shared.get(e["bare"], 0) + 1
    if not any(n > 1 and bare in previous for bare, n in shared.items()):
        return entries  # the common case: no shared key someone held before
    claims = [
        Claim(e["bare"], e["alt"], e["file"], e["line"], e["variant"], e["function"], e["guard"])
        for e in entries
    ]
    ids = settle(claims, previous)
    if all(e["id"] == rid for e, rid in zip(entries, ids, strict=True)):
        return entries
    out = [{**e, "id": rid} for e, rid in zip(entries, ids, strict=True)]
    return sorted(out, key=lambda e: (e["id"], e["file"], e["line"]))


class _Loader:
    """Cached extractions for one revision at a time, with text restored when records need it."""

    def __init__(self, plan: Plan, cache: Cache) -> None:
        self.plan, self.cache = plan, cache
        self.fp = _code_fingerprint("extractor")
        self.memo: dict[tuple[str, str], FileExtraction] = {}
        # Extracted in this run and not yet used: the object itself, or its JSON from a worker.
        self.fresh: dict[tuple[str, str], FileExtraction | str] = {}

    def load(self, files: list[tuple[str, str]], *, text: bool) -> list[FileExtraction]:
        memo = {}
        for pb in files:
            raw = self.memo.get(pb) or self.fresh.pop(pb, None)
            if raw is None:
                raw = self.cache.get("blob", f"{self.fp}:{pb[0]}:{pb[1]}") or "null"
            ext = from_json(raw) if isinstance(raw, str) else raw
            if ext is None:
                raise DatasetError(
                    f"cache {self.cache.path} lost an extraction; delete it and build again."
                )
            memo[pb] = ext
        self.memo = memo  # neighbours share most blobs: keep only the last revision's
        exts = [memo[pb] for pb in files]
        if text:
            exts = [_with_text(e, self.plan.read(*pb)) for e, pb in zip(exts, files, strict=True)]
        return _link_flags(exts)


def _with_text(ext: FileExtraction, src: SourceFile) -> FileExtraction:
    return FileExtraction(
        source=src, sites=ext.sites, flags=ext.flags, failures=ext.failures, stats=ext.stats
    )


def _link_flags(exts: list[FileExtraction]) -> list[FileExtraction]:
    """The extractor's second pass over a whole file set: site flags limited to declared flags."""
    from kverr.extractor.run import filter_flags

    decls = tuple(d for e in exts for d in e.flags)
    return [filter_flags(e, decls) for e in exts]


def _load_overlay(path: Path | None) -> tuple[Any, str]:
    """The curated overlay and a fingerprint of its bytes (cached records depend on it)."""
    if path is None:
        return None, ""
    from kverr.records import load_overlay

    return load_overlay(path), hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def _assemble(
    plan: Plan,
    cache: Cache,
    scan: _Scan,
    loaded_overlay: tuple[Any, str],
    dataset_version: str | None,
    clock: _Clock | None = None,
) -> Assembled:
    """Ids per revision -> newest form of each record -> lineage -> occurrences."""
    from kverr.records import overlay_warnings

    overlay, overlay_fp = loaded_overlay
    version = dataset_version or plan.revisions[-1].date or "1970-01-01T00:00:00.000Z"
    records_fp = _code_fingerprint("extractor", "records", "schema") + overlay_fp
    last_ord = _pin_to_commits(plan, scan)
    records = _newest_forms(plan, cache, scan, last_ord, overlay, records_fp)
    records = _repin_to_commit(plan, records)
    if clock:
        clock.lap("records")
    lines = scan.lineage.lines()
    from kverr.records import lineage as lin

    lin.apply(records, lines)
    current = {e["id"] for e in scan.entries_at(len(plan.revisions) - 1)}
    newest = [r for r in records if r["id"] in current]
    return Assembled(
        records=records,
        occurrences=scan.spans,
        flags=_newest_flags(scan, cache),
        lineage=lines,
        failures=sorted(
            (from_json(json.dumps(f)) for f in scan.failures.values()),
            key=lambda f: (f.path, f.line, f.col, f.message),
        ),
        # "no longer exists" means: not in the newest revision built
        warnings=overlay_warnings(newest, overlay),
        collisions=_collisions(newest),
        files=sorted({p for files in plan.files for p, _ in files}),
        dataset_version=version,
        sites=scan.sites,
    )


def _pin_to_commits(plan: Plan, scan: _Scan) -> dict[str, int]:
    """id -> the revision its newest form is built at. A record that lives on into a snapshot
    revision in a file the snapshot did not replace is still the code of the newest commit:
    it is built there, so only records from snapshot files lose their sha and link."""
    if not plan.snapshots:
        return scan.last_ord
    snap_paths = {s["repoPath"] for s in plan.snapshots}
    base = max(i for i, r in enumerate(plan.revisions) if r.sha)
    at_base = {e["id"] for e in scan.entries_at(base)}
    from_snapshot = {
        e["id"]
        for n in range(base + 1, len(plan.revisions))
        for e in scan.entries_at(n)
        if e["file"] in snap_paths
    }
    return {
        rid: base if n > base and rid in at_base and rid not in from_snapshot else n
        for rid, n in scan.last_ord.items()
    }


def _repin_to_commit(plan: Plan, records: list[dict]) -> list[dict]:
    """A record first seen at a snapshot revision but sitting in a file the snapshot did not
    touch (e.g. an id whose holder history moved there) shows the newest
    commit's code: it links to that commit rather than claiming no sha."""
    if not plan.snapshots:
        return records
    from kverr.records import repin

    base = max(i for i, r in enumerate(plan.revisions) if r.sha)
    same = dict(plan.files[base]).items() & dict(plan.files[-1]).items()
    unchanged = {path for path, _ in same} - {s["repoPath"] for s in plan.snapshots}
    return [
        repin(r, plan.revisions[base])
        if r["analyzedSha"] is None and r["filePath"] in unchanged
        else r
        for r in records
    ]


@dataclass
class _Scan:
    """What the scan folds out of the revisions, oldest first. Its state after the newest
    revision is cached (`fold`), keyed by a hash chain over every revision's file set and sha:
    adding a commit restores the state of the history before it and folds in only the new one."""

    loader: _Loader
    entries_at: Callable[[int], list[dict]]  # ord -> that revision's entries
    keys: list[str] = field(default_factory=list)  # per revision: cache key of its file set
    chain: list[str] = field(default_factory=list)  # per revision: key of the history up to it
    last_ord: dict[str, int] = field(default_factory=dict)  # id -> last revision that has it
    flag_last: dict[str, int] = field(default_factory=dict)  # flag -> last revision declaring it
    failures: dict[str, dict] = field(default_factory=dict)
    sites: int = 0  # in the newest revision
    spans: list[dict] = field(default_factory=list)  # occurrences.jsonl lines, see _fold_spans
    open_spans: dict[str, dict] = field(default_factory=dict)  # id -> its newest span
    lineage: Any = None  # records.lineage.LineageFold
    # Revisions whose ids history decided (a shared key someone held before): their entries are
    # cached under the history's chain key (`settled`), and their records are built with it.
    settled: set[int] = field(default_factory=set)

    def previous_at(self, ord_: int) -> dict | None:
        """records.identity's `previous` for revision `ord_`: None when history decided nothing."""
        return _holders(self.entries_at(ord_ - 1)) if ord_ in self.settled else None

    def state(self) -> dict:
        return {
            "settled": sorted(self.settled),
            "lastOrd": self.last_ord,
            "flagLast": self.flag_last,
            "failures": list(self.failures.values()),
            "sites": self.sites,
            "spans": self.spans,
            "lineage": self.lineage.to_state(),
        }

    def restore(self, state: dict) -> None:
        self.last_ord, self.flag_last = state["lastOrd"], state["flagLast"]
        self.failures = {json.dumps(f, sort_keys=True): f for f in state["failures"]}
        self.sites, self.spans = state["sites"], state["spans"]
        self.open_spans = {sp["id"]: sp for sp in self.spans}  # creation order: newest wins
        self.settled = set(state["settled"])


class _Scanner:
    """Entries of every revision, oldest first, each computed once per distinct file set (the
    value is cached: entries depend only on the files and the code, not on the commit), folded
    into occurrence spans, lineage and the newest revision of each record and flag."""

    def __init__(self, plan: Plan, cache: Cache, stats: dict[str, int], progress: Progress) -> None:
        from kverr.records.lineage import LineageFold

        self.plan, self.cache, self.stats, self.progress = plan, cache, stats, progress
        self.fp = _code_fingerprint("extractor", "records")
        self.loader = _Loader(plan, cache)
        self.held: dict[int, list[dict]] = {}  # entries scanned in this run, by ord
        self.scan = _Scan(loader=self.loader, entries_at=self.entries_at)
        self.scan.keys = [
            hashlib.sha256(json.dumps([self.fp, files]).encode()).hexdigest()
            for files in plan.files
        ]
        self.chain = self.scan.chain = _chain(self.scan.keys, plan.revisions)
        stats["revisions_built"] = 0
        self.next = self.restored = 0  # revisions folded already / restored from the cache
        self.scan.lineage = LineageFold()
        for ord_ in range(len(self.chain) - 1, -1, -1):  # the longest history already folded
            raw = cache.get("fold", self.chain[ord_])
            if raw is not None:
                state = json.loads(raw)
                self.scan.restore(state)
                self.scan.lineage = LineageFold(state["lineage"], self._entries_fn(ord_))
                self.next = self.restored = ord_ + 1
                progress("records", ord_ + 1, len(plan.revisions))
                break
        stats["revisions_restored"] = self.restored

    def entries_at(self, ord_: int) -> list[dict]:
        if ord_ not in self.held:
            if ord_ in self.scan.settled:
                raw = self.cache.get("settled", self.chain[ord_])
            else:
                raw = self.cache.get("rev", self.scan.keys[ord_])
            if raw is None:
                raise DatasetError(
                    f"cache {self.cache.path} lost a revision's entries; delete it and build again."
                )
            self.held[ord_] = json.loads(raw)["entries"]
        return self.held[ord_]

    def _entries_fn(self, ord_: int) -> Callable[[], list[Any]]:
        from kverr.records.lineage import Entry

        return lambda: [
            Entry(e["id"], e["kind"], e["message"], e["function"], e["guard"], e["errorClass"])
            for e in self.entries_at(ord_)
        ]

    def advance(self, pending: set[tuple[str, str]]) -> None:
        """Scan every next revision none of whose blobs is still being extracted."""
        files = self.plan.files
        while self.next < len(files) and not pending.intersection(files[self.next]):
            self._step(self.next)
            self.next += 1

    def save(self) -> None:
        """Keep the folded state of this history, unless it was restored whole."""
        if self.restored < len(self.chain):
            self.cache.put_many("fold", {self.chain[-1]: json.dumps(self.scan.state())})

    def _step(self, ord_: int) -> None:
        files, scan = self.plan.files[ord_], self.scan
        key = scan.keys[ord_]
        cached = self.cache.get("rev", key)
        if cached is None:
            exts = self.loader.load(files, text=False)
            value = {
                "entries": _entries(exts),
                "flagNames": [f.name for e in exts for f in e.flags],
                "failures": [json.loads(to_json(f)) for e in exts for f in e.failures],
                "sites": sum(len(e.sites) for e in exts),
            }
            # The full declarations are large and only a few revisions' are ever read.
            flags = [json.loads(to_json(f)) for e in exts for f in e.flags]
            self.cache.put_many("rev", {key: json.dumps(value)})
            self.cache.put_many("revflags", {key: json.dumps(flags)})
            self.stats["revisions_built"] += 1
        else:
            value = json.loads(cached)
        for pb in files:  # never used again unless a later revision has it (then: memo or cache)
            self.loader.fresh.pop(pb, None)
        entries = value["entries"]
        if ord_ > 0:
            entries = _settle(entries, _holders(self.entries_at(ord_ - 1)))
            if entries is not value["entries"]:
                scan.settled.add(ord_)
                self.cache.put_many("settled", {self.chain[ord_]: json.dumps({"entries": entries})})
        self.held[ord_] = entries
        for e in entries:
            scan.last_ord[e["id"]] = ord_
        for name in value["flagNames"]:
            scan.flag_last[name] = ord_
        for f in value["failures"]:
            scan.failures.setdefault(json.dumps(f, sort_keys=True), f)
        scan.sites = value["sites"]
        _fold_spans(scan, ord_, entries)
        scan.lineage.add(
            self.plan.revisions[ord_].sha,
            frozenset(e["id"] for e in entries),
            self._entries_fn(ord_),
        )
        self.progress("records", ord_ + 1, len(self.plan.revisions))


@functools.cache
def _own_fingerprint() -> str:
    """Hash of this module as imported (the fold's code), read once per process."""
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


def _chain(keys: list[str], revisions: list[Revision]) -> list[str]:
    """Per revision: a hash of every revision up to it (file set and sha), and of this module
    (the fold's code): the key of the folded state of that history."""
    h = hashlib.sha256(_own_fingerprint().encode())
    out = []
    for key, rev in zip(keys, revisions, strict=True):
        h.update(f"{key}:{rev.sha}\n".encode())
        out.append(h.copy().hexdigest())
    return out


def _fold_spans(scan: _Scan, ord_: int, entries: list[dict]) -> None:
    """Occurrences: one line per span of consecutive revisions (ords `from`..`to`, inclusive) in
    which a record sits in the same (file, function, guard), from its first site; `lines` holds
    its line at each revision of the span. Lines shift with almost every commit, so keeping them
    out of the span key is what makes a thousand-commit history a few lines per record."""
    seen: set[str] = set()
    for e in entries:
        rid = e["id"]
        if rid in seen:
            continue
        seen.add(rid)
        span = scan.open_spans.get(rid)
        if (
            span is not None
            and span["to"] == ord_ - 1
            and (span["file"], span["function"], span["guard"])
            == (e["file"], e["function"], e["guard"])
        ):
            span["to"] = ord_
            span["lines"].append(e["line"])
            continue
        span = {
            "id": rid,
            "file": e["file"],
            "function": e["function"],
            "guard": e["guard"],
            "from": ord_,
            "to": ord_,
            "lines": [e["line"]],
        }
        scan.open_spans[rid] = span
        scan.spans.append(span)


def _newest_flags(scan: _Scan, cache: Cache) -> list[FlagDecl]:
    """Each flag as declared in the last revision that declares it (later files of a revision
    win), reading the full declarations of only those revisions."""
    out: dict[str, dict] = {}
    for ord_ in sorted(set(scan.flag_last.values())):
        raw = cache.get("revflags", scan.keys[ord_])
        if raw is None:
            raise DatasetError(
                f"cache {cache.path} lost flag declarations; delete it and build again."
            )
        for f in json.loads(raw):
            if scan.flag_last.get(f["name"]) == ord_:
                out[f["name"]] = f
    return [from_json(json.dumps(out[n])) for n in sorted(out)]


def _newest_forms(
    plan: Plan,
    cache: Cache,
    scan: _Scan,
    last_ord: dict[str, int],
    overlay: Any,
    records_fp: str,
) -> list[dict]:
    """Each record as built at the last revision that has it: from the record cache, or one
    build_records per revision that still owes records. Adding a commit rebuilds only it."""
    from kverr.records import build_records

    out: dict[str, dict] = {}
    missing: dict[int, list[str]] = {}

    def rkey(ord_: int, rid: str) -> str:
        rev = plan.revisions[ord_]
        # Where history decided the ids, which site holds `rid` depends on the revisions before.
        history = f":{scan.chain[ord_]}" if ord_ in scan.settled else ""
        return f"{records_fp}:{scan.keys[ord_]}:{rev.sha}:{rev.repo}:{rev.date}:{rid}{history}"

    for rid, ord_ in last_ord.items():
        hit = cache.get("record", rkey(ord_, rid))
        if hit is not None:
            out[rid] = json.loads(hit)
        else:
            missing.setdefault(ord_, []).append(rid)
    for ord_, ids in sorted(missing.items()):
        exts = scan.loader.load(plan.files[ord_], text=True)
        rev, previous = plan.revisions[ord_], scan.previous_at(ord_)
        # Only the ids this revision owes the dataset are built (and validated): ~100x less
        # work, while build_records still sees every site for ids and earlier checks.
        built = build_records(exts, rev, overlay=overlay, only=set(ids), previous=previous)
        by_id = {r["id"]: r for r in built}
        lost = [rid for rid in ids if rid not in by_id]
        if lost:
            raise DatasetError(
                f"records and identity disagree on {lost[0]} at {plan.revisions[ord_].sha}; report this kverr bug."
            )
        fresh = {rkey(ord_, rid): json.dumps(by_id[rid], sort_keys=True) for rid in ids}
        cache.put_many("record", fresh)
        cache.commit()
        out.update({rid: by_id[rid] for rid in ids})
    return [out[rid] for rid in sorted(out)]


def _collisions(records: list[dict]) -> list[tuple[str, str, str]]:
    """(id_a, id_b, message_b): a's pattern also matches b's message. Only records of the newest
    revision are compared: old and edited forms of one message naturally match each other, and
    what a user pastes today is matched against today's records first."""
    from kverr.records.collisions import collisions

    message = {r["id"]: r["errorMessage"] for r in records}
    return [(a, b, message[b]) for a, b in collisions(records)]


# ---------------------------------------------------------------- manifest and writing


def _manifest(
    plan: Plan, globs: Sequence[str], a: Assembled, stats: dict[str, int], command: Sequence[str]
) -> dict:
    from kverr import __version__

    severities: dict[str, int] = {}
    for rec in a.records:
        severities[rec.get("severity", "")] = severities.get(rec.get("severity", ""), 0) + 1
    return {
        "tool": "kverr",
        "toolVersion": __version__,
        "schemaVersion": 2,
        "repository": plan.repository,
        "revisions": [r.sha for r in plan.revisions],
        "fileSet": list(globs),
        "files": a.files,
        "counts": {
            "records": len(a.records),
            "sites": a.sites,
            "flags": len(a.flags),
            "failures": len(a.failures),
            "revisions": len(plan.revisions),
            "occurrences": len(a.occurrences),
            "lineage": len(a.lineage),
            "blobs": stats["blobs"],
            "severity": dict(sorted(severities.items())),
        },
        # Cache use differs between a first build and a rebuild: the only part of the dataset
        # directory that is not byte-identical across rebuilds of the same input.
        "build": {k: v for k, v in stats.items() if k not in ("revisions", "blobs")},
        "command": list(command),
        "datasetVersion": a.dataset_version,
        "provenance": _provenance(plan),
    }


def _provenance(plan: Plan) -> dict:
    """Where the revisions came from: a sentence, and each snapshot file (files from disk that
    are in no commit, so a reader can tell reconstructed code from upstream history)."""
    commits = [r for r in plan.revisions if r.sha]
    if not commits:
        return {"summary": "kverr build of a source directory", "snapshots": []}
    first, last = commits[0], commits[-1]
    text = (
        f"kverr build of {len(commits)} git revision(s) from {first.sha[:12]} ({first.date})"
        f" to {last.sha[:12]} ({last.date})"
    )
    for label in dict.fromkeys(s["label"] for s in plan.snapshots):
        files = [s for s in plan.snapshots if s["label"] == label]
        text += (
            f", then snapshot {label!r} ({files[0]['date']}): {len(files)} file(s) from disk placed"
            f" over {last.sha[:12]}, in no commit of the repository"
        )
    return {"summary": text, "snapshots": [dict(s) for s in plan.snapshots]}


def _write(out: Path, revisions: list[Revision], a: Assembled, manifest: dict) -> None:
    """Write the dataset into a sibling temp dir, then swap it in: an interrupt or a crash leaves
    either the old dataset or the new one, never a mix."""
    from kverr.records.dataset import readme_text, write_dataset

    out = out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    leftovers.sweep(out)  # what builds killed before their cleanup left here
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    old = out.parent / f".{out.name}.old-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        write_dataset(
            tmp,
            records=a.records,
            revisions=revisions,
            occurrences=a.occurrences,
            flags=a.flags,
            lineage=a.lineage,
            manifest=manifest,
        )
        (tmp / "README.md").write_text(readme_text(manifest, revisions), encoding="utf-8")
        if out.exists():
            os.replace(out, old)
        os.replace(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)


# ---------------------------------------------------------------- CLI helpers


def is_bare_repo(path: Path) -> bool:
    """A bare clone given as the PATH argument is built as a git source, not as a directory."""
    return path.is_dir() and (path / "HEAD").is_file() and (path / "objects").is_dir()


def split_targets(
    targets: Sequence[str], git_repo: Path | None, revs: Sequence[str]
) -> tuple[Path | None, Path | None, list[str]]:
    """`kverr build` positionals: with --git they are revisions/ranges; without, one PATH (a bare
    repository PATH is read as git, its further positionals as revisions)."""
    if git_repo is not None:
        return None, git_repo, [*targets, *revs]
    if not targets:
        raise SourceError("nothing to build; pass a directory or .py file, or --git REPO.")
    path = Path(targets[0])
    if is_bare_repo(path):
        return None, path, [*targets[1:], *revs]
    if len(targets) > 1 or revs:
        raise SourceError(
            f"{path} is read as a directory, so revisions make no sense; add --git {path} to build revisions."
        )
    return path, None, []
