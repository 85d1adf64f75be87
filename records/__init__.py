"""kverr.records: extracted sites -> schema-v2 record dicts (validated, sorted by id).

    build_records(extractions, revision, overlay=...)   every site of one revision
    record_for(site, source, revision, ...)             one site

Source fields come straight from the Site and the file; `id` from identity.py; the
messagePattern from pattern.py; the knowledge fields from knowledge/; curated text from
overlay.py last. `httpStatus` is always null: server-argument checks run at launch, before any
request, so no HTTP status is involved.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any
from urllib.parse import quote

from kverr.extractor.phases import assignments_before, called_under
from kverr.extractor.sources import matches_any
from kverr.records.identity import Holder, assign_ids, profile_or_default
from kverr.records.identity import record_id as lone_id
from kverr.records.knowledge import facts_for, knowledge_fields
from kverr.records.names import in_place, unread_arguments
from kverr.records.overlay import Overlay, apply_overlay, load_overlay, overlay_warnings
from kverr.records.pattern import check_pattern, pattern_for, placeholders_of

from kverr.errors import SchemaError
from kverr.ftypes import (
    Docs,
    FileExtraction,
    FlagDecl,
    Guard,
    Profile,
    Revision,
    Site,
    SourceFile,
    without_colour,
)

__all__ = [
    "EPOCH",
    "Overlay",
    "apply_overlay",
    "build_records",
    "flag_map",
    "load_overlay",
    "overlay_warnings",
    "record_for",
    "repin",
    "slug_for",
]

EPOCH = "1970-01-01T00:00:00.000Z"  # analyzedAt / datasetVersion of a directory build
WINDOW = 18  # lines of context either side of the statement, like the hand-written records
SLUG_CHARS = 48


def build_records(
    extractions: Sequence[FileExtraction],
    revision: Revision,
    *,
    overlay: Overlay | None = None,
    only: set[str] | frozenset[str] | None = None,
    previous: Mapping[str, Holder] | None = None,
    profile: Profile | None = None,
    invalid: dict[str, str] | None = None,
    docs: Docs | None = None,
) -> list[dict]:
    """Every site of one revision as a validated schema-v2 record, sorted by id.

    `profile`: the project (kverr.profile); its wording, launch command and identity rules
    shape the records (default: the default project's). `docs`: the revision's own
    documentation (pipeline/docs.py), which the knowledge fields read when given.

    `previous`: the bare-id holders of the revision before (records.identity.assign_ids), so a
    history build gives each record the id its fold gave it.

    `only`: derive just the records with these ids (a history build that needs a few newest
    forms); ids and knowledge still see every site of the revision, so each record equals
    its counterpart in a full build. Raises SchemaError (naming the record id and field) when a
    record does not validate: a dataset never holds an invalid record. With `invalid` (a
    build), such a record is left out instead and `invalid` maps its id to `file:line: why`,
    so one odd site does not cost the whole build.
    """
    profile = profile_or_default(profile)
    pairs = [(site, ex.source) for ex in extractions for site in ex.sites]
    decls = flag_map(ex.flags for ex in extractions)
    ids = assign_ids([site for site, _ in pairs], previous, profile)
    by_function: dict[tuple[str, str | None], list[Site]] = {}
    for site, _ in pairs:
        by_function.setdefault((site.file, site.function), []).append(site)
    records = [
        record_for(
            site,
            src,
            revision,
            record_id=rid,
            flags=decls,
            siblings=by_function[(site.file, site.function)],
            profile=profile,
            docs=docs,
        )
        for (site, src), rid in zip(pairs, ids, strict=True)
        if only is None or rid in only
    ]
    records = apply_overlay(records, overlay)
    return sorted(valid_only(records, invalid), key=lambda r: r["id"])


def valid_only(
    records: Iterable[dict],
    invalid: dict[str, str] | None = None,
    checked: Callable[[dict], bool] = lambda rec: False,
) -> list[dict]:
    """The records that pass schema v2 and the pattern check (those `checked` says passed
    before are not checked again). A SchemaError for one that does not, or with `invalid`,
    its id mapped to `file:line: why` instead, and the record left out."""
    from kverr.schema import validate_record

    out = []
    for rec in records:
        try:
            if not checked(rec):
                validate_record(rec)
                check_pattern(rec["messagePattern"], who=f"record {rec['id']}")
        except SchemaError as exc:
            if invalid is None:
                raise
            invalid[rec["id"]] = f"{rec['filePath']}:{rec['lineNumber']}: {exc}"
            continue
        out.append(rec)
    return out


def flag_map(groups: Iterable[Iterable[FlagDecl]]) -> dict[str, FlagDecl]:
    """Flag declarations by name; a later declaration of the same flag wins."""
    out: dict[str, FlagDecl] = {}
    for group in groups:
        for d in group:
            out[d.name] = d
    return out


def record_for(
    site: Site,
    source: SourceFile,
    revision: Revision,
    *,
    record_id: str | None = None,
    flags: dict[str, FlagDecl] | None = None,
    siblings: Sequence[Site] = (),
    profile: Profile | None = None,
    docs: Docs | None = None,
) -> dict[str, Any]:
    """The schema-v2 record of one site (not validated; build_records validates).

    `siblings`: the other sites of the same function, which tell which earlier checks passed.
    """
    profile = profile_or_default(profile)
    rid = record_id or lone_id(site, profile)
    repo = revision.repo or profile.repository
    pattern = pattern_for(site.template)
    start, end, code = source_window(source.text, site.line)
    sha = revision.sha
    rec: dict[str, Any] = {
        "id": rid,
        "repo": repo,
        "slug": slug_for(site, rid),
        "errorCode": None,
        "errorMessage": site.template.display(),
        "messagePattern": pattern,
        "errorClass": site.error_class,
        "httpStatus": None,
        "severity": site.severity,
        "filePath": site.file,
        "lineNumber": site.line,
        "sourceCode": code,
        "sourceCodeStart": start,
        "sourceCodeEnd": end,
        "githubUrl": github_url(repo, sha, site.file, start, end),
        "analyzedSha": sha,
        "analyzedAt": revision.date or EPOCH,
        "schemaVersion": 2,
        "kind": site.kind,
        "flags": _flags(site),
        "placeholders": placeholders_of(site.template),
        "previousId": None,
        "project": profile.name,
        # verify/ replaces this when the build runs the revision's own check (--verify).
        "verification": dict(NOT_VERIFIED),
    }
    if matches_any(site.file, profile.launch_path):
        rec["scope"] = "launch-path"
        rec["verification"] = dict(LAUNCH_PATH)
    earlier = assignments_before(source.text, site.function, site.line, profile.extract.phases)
    ways = [(g.test, g.holds) for g in site.guards]
    under = called_under(source.text, site.function, ways, site.line)
    if under:  # (the words only: the site's identity and flags are its own code's)
        # a helper called only for some models: its callers' test is a condition of the
        # launch, as an if around the check is
        site = dataclasses.replace(site, guards=(Guard(under, True, "if", 0), *site.guards))
    facts = facts_for(site, flags, pattern, siblings, profile, docs, earlier)
    rec.update(knowledge_fields(facts, repo))
    return rec


def github_url(repo: str, sha: str | None, path: str, start: int, end: int) -> str | None:
    """The permalink of lines start..end of `path` at commit `sha` (None without a commit).
    The path is percent-encoded: a file name may hold a newline, `#`, `?` or bytes that were
    not UTF-8 (surrogate escapes, encoded back to those bytes)."""
    if not sha:
        return None
    quoted = quote(path, safe="/", errors="surrogateescape")
    return f"https://github.com/{repo}/blob/{sha}/{quoted}#L{start}-L{end}"


def _flags(site: Site) -> list[str]:
    """The site's flags, less the arguments of a built config its checks never read (a
    record about `cfg.a` is not found under every flag `Config(...)` was given), and with a
    flag the code overwrites first replaced by the flags its new value reads."""
    unread = unread_arguments(site)
    return in_place(site, [f for f in dict.fromkeys(site.flags) if f not in unread])


# A launch-path check reads what only a running launch has (free GPU memory, the loaded
# model, the other ranks): no run before the launch can decide it.
LAUNCH_PATH = {
    "status": "unverified",
    "platform": None,
    "revision": None,
    "reason": "a launch-path check: it runs after start-up, against the GPU's memory and the "
    "loaded model, so no run before a launch can confirm the fix",
}
NOT_VERIFIED = {
    "status": "unverified",
    "platform": None,
    "revision": None,
    "reason": "the build did not run the revision's own check (kverr build --verify)",
}


def source_window(text: str, line: int) -> tuple[int, int, str]:
    """(start, end, code): WINDOW lines either side of `line`, clipped to the file."""
    lines = _lines(text)
    if not lines:
        return 1, 1, ""
    line = min(max(line, 1), len(lines))
    start, end = max(1, line - WINDOW), min(len(lines), line + WINDOW)
    return start, end, "\n".join(lines[start - 1 : end])


@lru_cache(maxsize=16)
def _lines(text: str) -> tuple[str, ...]:
    """Source lines split the way the parser counts them (every file's records share one split)."""
    lines = re.split(r"\r\n|\r|\n", text)
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the file does not start another line
    return tuple(lines)


def slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def slug_for(site: Site, rid: str) -> str:
    """First words of the message (its literal text), cut at 48 characters, then 6 hex of the id."""
    if site.template.is_empty:
        text = "assert " + (site.condition or "")
    else:
        text = " ".join(without_colour(p.text or "") for p in site.template.parts if p.is_literal)
    words = slugify(text)[:SLUG_CHARS].strip("-") or site.kind
    return f"{words}-{rid[:6]}"


def repin(record: dict, revision: Revision) -> dict:
    """The same record pinned to another revision (githubUrl, analyzedSha, analyzedAt).

    A history build can reuse the records of a file whose blob did not change between
    revisions instead of deriving them again; nothing else in a record depends on the revision
    (the repo field aside, which is the same for one repository).
    """
    sha = revision.sha
    start, end = record["sourceCodeStart"], record["sourceCodeEnd"]
    return {
        **record,
        "githubUrl": github_url(record["repo"], sha, record["filePath"], start, end),
        "analyzedSha": sha,
        "analyzedAt": revision.date or EPOCH,
    }
