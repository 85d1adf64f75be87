"""assemble: the newest form of each record (built at the last revision that has it, cached),
lineage applied, the newest flag declarations, occurrences, collisions and overlay warnings.
"""

from __future__ import annotations

import functools
import hashlib
import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kverr.extractor.sources import shown
from kverr.pipeline.cache import Cache, code_fingerprint
from kverr.pipeline.docs import DocsReader, base_revision
from kverr.pipeline.history import Scan
from kverr.pipeline.plan import Plan

from kverr.errors import DatasetError, KverrWarning, SourceError
from kverr.ftypes import FlagDecl, ParseFailure, from_json, to_json
from kverr.profile import Profile

if TYPE_CHECKING:
    from kverr.pipeline.run import Clock


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
    flag_history: list[dict] = field(default_factory=list)  # flaghistory.jsonl lines


def load_overlay(path: Path | None) -> tuple[Any, str]:
    """The curated overlay and a fingerprint of its bytes (cached records depend on it)."""
    if path is None:
        return None, ""
    from kverr.records import load_overlay

    return load_overlay(path), hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def assemble(
    plan: Plan,
    cache: Cache,
    scan: Scan,
    loaded_overlay: tuple[Any, str],
    dataset_version: str | None,
    clock: Clock | None = None,
    docs: DocsReader | None = None,
) -> Assembled:
    """Ids per revision -> newest form of each record -> lineage -> occurrences. `docs`: the
    project's documentation at each revision (pipeline/docs.py), for the knowledge fields."""
    from kverr.records import EPOCH, overlay_warnings

    overlay, overlay_fp = loaded_overlay
    version = dataset_version or plan.revisions[-1].date or EPOCH
    records_fp = (
        code_fingerprint("extractor", "records", "schema") + plan.profile.fingerprint() + overlay_fp
    )
    last_ord = pin_to_commits(plan, scan)
    skipped: dict[str, str] = {}
    records = _newest_forms(plan, cache, scan, last_ord, overlay, records_fp, skipped, docs)
    records = _repin_to_commit(plan, records)
    if clock:
        clock.lap("records")
    lines = [
        line
        for line in scan.lineage.lines()
        if line["id"] not in skipped and line["previousId"] not in skipped
    ]
    from kverr.records import lineage as lin

    lin.apply(records, lines)
    current = {e["id"] for e in scan.entries_at(len(plan.revisions) - 1)}
    newest = [r for r in records if r["id"] in current]
    _warn_skipped(skipped)
    return Assembled(
        records=records,
        occurrences=[s for s in scan.spans if s["id"] not in skipped],
        flags=_newest_flags(plan, scan, cache),
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


def _warn_skipped(skipped: dict[str, str]) -> None:
    """One warning per record left out for failing the schema (`file:line: why`)."""
    for why in sorted(skipped.values()):
        warnings.warn(KverrWarning(f"record skipped at {shown(why)}"), stacklevel=3)


def add_argparse(
    plan: Plan, cache: Cache, scan: Scan, a: Assembled, docs: DocsReader | None = None
) -> None:
    """argparse's own errors (records/argparse_records.py) and the flag history they are read
    from; with --verify, the verify step then runs each one's fix through its revision's own
    parser (verify/parsing.py). `docs`: the documentation of the newest revision built."""
    from kverr.records.argparse_records import argparse_records

    texts: dict[tuple[str, str], str] = {}  # most flags' newest declaration share one blob

    def source(path: str, ord_: int) -> str | None:
        blob = dict(plan.files[ord_]).get(path)
        if blob is None:
            return None
        if (path, blob) not in texts:
            texts[(path, blob)] = plan.read(path, blob).text
        return texts[(path, blob)]

    repo = plan.repository or plan.profile.repository
    decls = {d.name: d for d in a.flags}
    fp = code_fingerprint("records", "schema")
    seen: dict[str, str] = {}  # id -> key of the records this build validates

    def checked(rec: dict) -> bool:
        key = hashlib.sha256((fp + json.dumps(rec, sort_keys=True)).encode()).hexdigest()
        if cache.has("argparse", key):
            return True
        seen[rec["id"]] = key
        return False

    invalid: dict[str, str] = {}
    newest = docs.at(base_revision(plan.revisions, len(plan.revisions) - 1)) if docs else None
    recs, occs = argparse_records(
        scan.flag_spans, decls, plan.revisions, scan.flag_last, source, plan.profile, repo,
        checked, invalid, docs=newest, launched=functools.cache(lambda n: profile_at(plan, n)),
    )  # fmt: skip
    _warn_skipped(invalid)
    cache.put_many("argparse", {key: "1" for rid, key in seen.items() if rid not in invalid})
    a.records = sorted(a.records + recs, key=lambda r: r["id"])
    a.occurrences = a.occurrences + occs
    a.flag_history = scan.flag_spans


def pin_to_commits(plan: Plan, scan: Scan) -> dict[str, int]:
    """id -> the revision its newest form is built at (and the verify step verifies it at). A
    record that lives on into a snapshot revision in a file the snapshot did not replace is
    still the code of the newest commit: it is built there, so only records from snapshot
    files lose their sha and link."""
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


def _newest_flags(plan: Plan, scan: Scan, cache: Cache) -> list[FlagDecl]:
    """Each flag as declared in the last revision that declares it (later files of a revision
    win), reading the declarations of only those revisions: each one's linked declarations are
    kept in the cache by the revision's key (its files and the code), so a rebuild or one new
    commit does not decode and link some sixty revisions' sites again to read their flags."""
    out: dict[str, FlagDecl] = {}
    for ord_ in sorted(set(scan.flag_last.values())):
        key = scan.keys[ord_]
        raw = cache.get("revflags", key)
        if raw is not None:
            flags = from_json(raw)
        else:
            flags = [f for e in scan.loader.load(plan.files[ord_], text=False) for f in e.flags]
            if scan.keeps(ord_):
                cache.put_many("revflags", {key: to_json(flags)})
        for f in flags:
            if scan.flag_last.get(f.name) == ord_:
                out[f.name] = f
    return [out[n] for n in sorted(out)]


def _newest_forms(
    plan: Plan,
    cache: Cache,
    scan: Scan,
    last_ord: dict[str, int],
    overlay: Any,
    records_fp: str,
    skipped: dict[str, str],
    docs: DocsReader | None = None,
) -> list[dict]:
    """Each record as built at the last revision that has it: from the record cache, or one
    build_records per revision that still owes records. Adding a commit rebuilds only it.
    A record that fails the schema is left out: `skipped` gets its id and `file:line: why`
    (kept in the cache, so a rebuild says it again)."""
    from kverr.records import build_records

    out: dict[str, dict] = {}
    missing: dict[int, list[str]] = {}

    def rkey(ord_: int, rid: str) -> str:
        rev = plan.revisions[ord_]
        # Where history decided the ids, which site holds `rid` depends on the revisions before.
        history = f":{scan.chain[ord_]}" if ord_ in scan.settled else ""
        # A snapshot's imported constants come from the commit under it (extractor/imports.py).
        base = f":{_base_sha(plan)}" if rev.sha is None else ""
        return (
            f"{records_fp}:{scan.keys[ord_]}:{rev.sha}{base}:{rev.repo}:{rev.date}:{rid}{history}"
            + docs_key(ord_)
        )

    def docs_key(ord_: int) -> str:
        if docs is None:
            return ""
        if ord_ not in doc_keys:
            doc_keys[ord_] = ":" + docs.key(base_revision(plan.revisions, ord_))
        return doc_keys[ord_]

    doc_keys: dict[int, str] = {}

    for rid, ord_ in last_ord.items():
        hit = cache.get("record", rkey(ord_, rid))
        if hit is None:
            missing.setdefault(ord_, []).append(rid)
            continue
        rec = json.loads(hit)
        if "skipped" in rec:
            skipped[rid] = rec["skipped"]
        else:
            out[rid] = rec
    for ord_, ids in sorted(missing.items()):
        exts = with_imports(plan, ord_, scan.loader.load(plan.files[ord_], text=True))
        rev, previous = plan.revisions[ord_], scan.previous_at(ord_)
        # Only the ids this revision owes the dataset are built (and validated): ~100x less
        # work, while build_records still sees every site for ids and earlier checks.
        invalid: dict[str, str] = {}
        at = docs.at(base_revision(plan.revisions, ord_)) if docs is not None else None
        built = build_records(
            exts, rev, overlay=overlay, only=set(ids), previous=previous,
            profile=profile_at(plan, ord_), invalid=invalid, docs=at,
        )  # fmt: skip
        by_id: dict[str, dict] = {r["id"]: r for r in built}
        by_id.update((rid, {"skipped": why}) for rid, why in invalid.items())
        lost = [rid for rid in ids if rid not in by_id]
        if lost:
            raise DatasetError(
                f"records and identity disagree on {lost[0]} at {plan.revisions[ord_].sha}; report this kverr bug."
            )
        skipped.update(invalid)
        if scan.keeps(ord_):
            fresh = {rkey(ord_, rid): json.dumps(by_id[rid], sort_keys=True) for rid in ids}
            cache.put_many("record", fresh)
            cache.commit()
        out.update({rid: by_id[rid] for rid in ids if rid not in invalid})
    return [out[rid] for rid in sorted(out)]


def profile_at(plan: Plan, ord_: int) -> Profile | None:
    """The project as it launched at the revision (kverr.profile.launched_at): a file of
    the revision's tree exists when git has it (a snapshot asks the commit under it)."""
    profile, sha = plan.profile, plan.revisions[ord_].sha or _base_sha(plan)
    if profile is None or not profile.launch_before or plan.read_object is None or sha is None:
        return profile

    def present(path: str) -> bool:
        try:
            plan.read_object(f"{sha}:{path}")
        except SourceError:
            return False
        return True

    return profile.launched_at(present)


def _base_sha(plan: Plan) -> str | None:
    return next((r.sha for r in reversed(plan.revisions) if r.sha), None)


def with_imports(plan: Plan, ord_: int, exts: list) -> list:
    """Imported constants resolved at the revision (a snapshot reads the commit under it)."""
    sha = plan.revisions[ord_].sha or _base_sha(plan)
    if plan.read_object is None or sha is None:
        return exts  # a directory build has no commit to read other modules from
    from kverr.extractor.imports import git_reader, resolve_imports

    return resolve_imports(exts, git_reader(plan.read_object, sha))


def _collisions(records: list[dict]) -> list[tuple[str, str, str]]:
    """(id_a, id_b, message_b): a's pattern also matches b's message. Only records of the newest
    revision are compared: old and edited forms of one message naturally match each other, and
    what a user pastes today is matched against today's records first."""
    from kverr.records.collisions import collisions

    message = {r["id"]: r["errorMessage"] for r in records}
    return [(a, b, message[b]) for a, b in collisions(records)]
