"""extract: every distinct (path, blob) once, ever, in-process or over `jobs` processes.

The unit cache holds each function's sites, keyed by its text and what it reads of the module;
the blob cache maps (path, blob) to the keys of its units and its flag declarations (a set
shared by content, their lines apart), not to a copy of every site: a thousand revisions of a
file share most functions. `Loader` puts revisions back together one at a time and links site
flags against the whole file set.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kverr.pipeline.cache import (
    Cache,
    SharedUnits,
    UnitCache,
    chunked,
    code_fingerprint,
    get_chunked,
    unit_ns,
)
from kverr.pipeline.plan import Plan

from kverr.errors import DatasetError
from kverr.ftypes import (
    ExtractRules,
    FileExtraction,
    FlagDecl,
    ParseFailure,
    Site,
    SourceFile,
    from_json,
    from_plain,
    moved,
    to_plain,
)

Progress = Callable[[str, int, int], None]  # (phase, done, total)
FLAGSET_NS = "flagset"  # pieces of flag declarations without their lines, by content
# the fields of a declaration that move with every edit above it: kept per blob
_LINES = tuple(f.name for f in dataclasses.fields(FlagDecl) if f.name in ("line", "end_line"))

_WORKER: dict[str, Any] = {}
GC_THRESHOLD = 50_000  # a build's first-generation allocations between collections (Python: 700)


def _worker_init(cache_path: str | None, rules: ExtractRules, shared: str | None = None) -> None:
    import signal

    # Ctrl-C is the parent's business (it stops the pool and keeps what is cached); workers
    # would otherwise each print a KeyboardInterrupt traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The parent's build runs with fewer GC passes (run._fewer_gc_passes); a spawned worker
    # starts at Python's default, and re-walking its parsed trees there cost the workers of
    # a --jobs 2 backfill about 40% more CPU than the same extraction in one process.
    gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])
    cache = (
        Cache(Path(cache_path), readonly=True) if cache_path and Path(cache_path).exists() else None
    )
    _WORKER["units"] = UnitCache(cache, SharedUnits(Path(shared)) if shared else None)
    _WORKER["rules"] = rules


def _extract_one(src: SourceFile) -> tuple[str, dict[str, int], dict[str, str], dict[str, str]]:
    """Extract one file: (its blob-cache value, its stats, new unit-cache entries, new pieces of
    flag sets). Only cache values leave, never sites: the Loader decodes each unit once."""
    units: UnitCache = _WORKER.setdefault("units", UnitCache(None))
    keys: list[tuple[str, int]] = []
    if src.error:
        line, col, message = src.error.split(":", 2)
        ext = FileExtraction(
            source=src, failures=(ParseFailure(src.path, int(line), int(col), message),)
        )
    else:
        from kverr.extractor.run import extract_raw

        # Raw: a site's flags are filtered against the whole file set later (link_flags),
        # so one cached extraction serves every revision the blob appears in.
        ext = extract_raw(src, units, _WORKER["rules"], keys)
    # The text is in git (or on disk) already; caching it again would double the cache size.
    slim = dataclasses.replace(ext, source=SourceFile(src.path, "", src.blob, src.error))
    value, flagsets = blob_value(slim, keys)
    return value, dict(ext.stats), units.take_new(), flagsets


def blob_value(ext: FileExtraction, keys: list[tuple[str, int]]) -> tuple[str, dict[str, str]]:
    """(the blob cache's value for `ext`, the pieces of its flag set). `keys`: its units
    (extract_raw); a file without units keeps its sites in the value."""
    flags = to_plain(list(ext.flags))
    lines = [[d.pop(name) for name in _LINES] for d in flags]
    ref, pieces = chunked(flags, "name")
    whole = bool(ext.sites)  # extract_raw returned them: no units hold them
    rest = dataclasses.replace(ext, flags=())
    value = {"ext": to_plain(rest), "units": None if whole else keys, "flags": [ref, lines]}
    return json.dumps(value, sort_keys=True, ensure_ascii=False), pieces


def run_extraction(
    todo: Sequence[tuple[str, str]],
    read: Callable[[str, str], SourceFile],
    cache: Cache,
    jobs: int,
    on_done: Callable[[SourceFile, str, dict[str, int]], None],
    rules: ExtractRules,
) -> None:
    """Extract `todo` (in-process or over `jobs` processes); the parent persists every result
    and new unit entries as they arrive, committing every few seconds so an interrupt keeps them."""
    last = time.monotonic()

    def take(
        src: SourceFile,
        value: str,
        file_stats: dict[str, int],
        new_units: dict[str, str],
        flagsets: dict[str, str],
    ) -> None:
        nonlocal last
        cache.put_many(unit_ns(), new_units)
        cache.put_new(FLAGSET_NS, flagsets)
        on_done(src, value, file_stats)
        # With workers, a function one of them parsed is committed at once (they also share
        # it through SharedUnits as soon as it is parsed): the function cache is theirs.
        if time.monotonic() - last > 2 or (new_units and jobs > 1):
            cache.commit()
            last = time.monotonic()

    if jobs <= 1 or len(todo) <= 1:
        _WORKER["units"] = UnitCache(cache)
        _WORKER["rules"] = rules
        try:
            for path, blob in todo:
                src = read(path, blob)
                take(src, *_extract_one(src))
        finally:
            # Every unit read stays in its memory: dropped with the build, or a long-lived
            # caller (the benchmark, a server) keeps them all and pays for them in GC time.
            _WORKER.pop("units", None)
            _WORKER.pop("rules", None)
    else:
        import multiprocessing
        import tempfile

        cache.commit()
        with (
            tempfile.TemporaryDirectory(prefix="kverr-units-") as tmp,
            multiprocessing.get_context("spawn").Pool(
                jobs, _worker_init, (str(cache.path), rules, _shared_units(Path(tmp)))
            ) as pool,
        ):
            # Neighbouring versions share most functions: small ordered chunks keep each
            # worker's in-memory unit cache warm while results still stream back.
            srcs = (read(p, b) for p, b in todo)
            for (path, blob), result in zip(
                todo, pool.imap(_extract_one, srcs, chunksize=8), strict=True
            ):
                take(SourceFile(path, "", blob), *result)
    cache.commit()


def _shared_units(folder: Path) -> str:
    """A new SharedUnits file in `folder` (made here, so the workers only open it)."""
    path = folder / "units.sqlite"
    SharedUnits(path).close()
    return str(path)


class Loader:
    """Cached extractions for one revision at a time, with text restored when records need it."""

    def __init__(self, plan: Plan, cache: Cache) -> None:
        self.plan, self.cache = plan, cache
        self.fp = code_fingerprint("extractor") + plan.profile.fingerprint("extract")
        self.memo: dict[tuple[str, str], FileExtraction] = {}
        # Extracted in this run and not yet used: its cache value, not read back from the file.
        self.fresh: dict[tuple[str, str], str] = {}
        # Extracted in this run and never cached (history.Scanner.taint): kept for the build.
        self.transient: dict[tuple[str, str], str] = {}
        # decoded units and flag sets of the last revision loaded: its neighbours share most
        self.units: dict[Any, tuple[Site, ...]] = {}  # key, or (path, key, start): placed
        self.flagsets: dict[str, list[dict]] = {}
        # the last revision's declarations by the flag-set item they were decoded from (that
        # dict itself is kept, so the id names it): a changed blob shares most of its pieces
        self.decls: dict[int, tuple[dict, FlagDecl]] = {}

    def load(self, files: list[tuple[str, str]], *, text: bool) -> list[FileExtraction]:
        memo: dict[tuple[str, str], FileExtraction] = {}
        units: dict[Any, tuple[Site, ...]] = {}
        flagsets: dict[str, list[dict]] = {}
        decls: dict[int, tuple[dict, FlagDecl]] = {}
        for pb in files:
            raw = self.memo.get(pb) or self.fresh.pop(pb, None) or self.transient.get(pb)
            if raw is None:
                raw = self.cache.get("blob", f"{self.fp}:{pb[0]}:{pb[1]}")
            if raw is None:
                raise self._lost("an extraction")
            memo[pb] = (
                raw
                if isinstance(raw, FileExtraction)
                else self._decode(raw, units, flagsets, decls)
            )
        self.memo = memo  # neighbours share most blobs: keep only the last revision's
        self.units, self.flagsets, self.decls = units, flagsets, decls
        exts = [memo[pb] for pb in files]
        if text:
            exts = [
                dataclasses.replace(e, source=self.plan.read(*pb))
                for e, pb in zip(exts, files, strict=True)
            ]
        return link_flags(exts, self.plan.profile.extract)

    def _decode(self, raw: str, units: dict, flagsets: dict, decls: dict) -> FileExtraction:
        from kverr.extractor.link import site_order, sites_of_units

        value = json.loads(raw)
        ext = from_plain(value["ext"])
        ref, lines = value["flags"]
        flagsets.update((k, self.flagsets[k]) for k in ref["pieces"] if k in self.flagsets)
        items = get_chunked(self.cache, FLAGSET_NS, ref, flagsets)
        if items is None:
            raise self._lost("flag declarations")
        flags = tuple(self._decl(d, at, decls) for d, at in zip(items, lines, strict=True))
        if value["units"] is None:  # sites kept whole (blob_value)
            return dataclasses.replace(ext, flags=flags)
        path, placed = ext.source.path, []
        for k, start in value["units"]:
            at = (path, k, start)  # a unit that did not move keeps the sites placed before
            if at not in units:
                if at in self.units:
                    units[at] = self.units[at]
                else:
                    if k not in units:
                        units[k] = self.units.get(k) or tuple(from_json(self._get(unit_ns(), k)))
                    units[at] = sites_of_units(path, [(units[k], start)])
            placed += units[at]
        placed.sort(key=site_order)
        return dataclasses.replace(ext, sites=tuple(placed), flags=flags)

    def _decl(self, item: dict, at: list[int], decls: dict) -> FlagDecl:
        """The declaration of a flag-set item at lines `at`: decoded once while the revisions
        that follow share the item (an edit moves the lines of every flag below it: those are
        replaced, not decoded again). A changed blob decoded its ~380 declarations anew."""
        lines = dict(zip(_LINES, at, strict=True))
        hit = decls.get(id(item)) or self.decls.get(id(item))
        if hit is None or hit[0] is not item:
            hit = (item, from_plain({**item, **lines}))
        decl = hit[1]
        if any(getattr(decl, k) != v for k, v in lines.items()):
            decl = moved(decl, **lines)
            hit = (item, decl)
        decls[id(item)] = hit
        return decl

    def _get(self, ns: str, key: str) -> str:
        raw = self.cache.get(ns, key)
        if raw is None:
            raise self._lost("a function's sites")
        return raw

    def _lost(self, what: str) -> DatasetError:
        return DatasetError(f"cache {self.cache.path} lost {what}; delete it and build again.")


def link_flags(
    exts: list[FileExtraction], rules: ExtractRules | None = None
) -> list[FileExtraction]:
    """The extractor's second pass over a whole file set: site flags limited to declared flags,
    the launch path's sites to those `rules` keep there."""
    from kverr.extractor.link import filter_flags

    decls = tuple(d for e in exts for d in e.flags)
    return [filter_flags(e, decls, rules) for e in exts]
