"""history: per revision, ids and sites, folded oldest first into occurrence spans, lineage
(edited messages link new id -> old id) and each record's newest revision.

Entries depend only on a file set and the code, so they are cached per file set; the folded
state is cached under a hash chain of the revisions, so a build that adds commits to a built
history folds in only the new ones.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kverr.pipeline.cache import Cache, chunked, code_fingerprint, get_chunked
from kverr.pipeline.extract import Loader, Progress
from kverr.pipeline.plan import Plan

from kverr.errors import DatasetError
from kverr.ftypes import FileExtraction, Profile, Revision, to_json


def _entries(
    exts: list[FileExtraction],
    profile: Profile,
    memo: dict | None = None,
    by_text: dict | None = None,
) -> list[dict]:
    """One entry per site of a revision: its id without history (records.identity, the same rule
    build_records uses), where it is, what lineage compares, and the claim fields (`bare`, `alt`,
    `variant`) that let _settle re-decide a shared key with history. Cheap: no record is built.
    `memo`: the claims of the revision before, by site object (a site the Loader kept, and
    linking left alone, is the same object there); `by_text`: their keys by the site's text
    (identity.claim_text), for the sites an edit above them moved; both filled with this
    revision's."""
    from kverr.records.identity import Claim, claim_keys, claim_text, guard_key, settle

    sites = [site for ext in exts for site in ext.sites]
    before = dict(memo or {})
    before_text = dict(by_text or {})
    for held in (memo, by_text):
        if held is not None:
            held.clear()
    text_keys: dict = {} if by_text is None else by_text
    claims = []
    for site in sites:
        known = before.get(id(site))
        if known is None or known[0] is not site:
            text = claim_text(site)
            keys = text_keys.get(text) or before_text.get(text)
            if keys is None:
                keys = (*claim_keys(site, profile), guard_key(site))
            text_keys[text] = keys
            bare, alt, guard, shown = keys
            claim = Claim(bare, alt, site.file, site.line, site.variant, site.function, guard)
            known = (site, claim, shown)
        if memo is not None:
            memo[id(site)] = known
        claims.append(known)
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
            "guardText": text,  # what `guard` hashes: diff shows it old -> new
            "kind": site.kind,
            "errorClass": site.error_class,
            "message": site.template.display() or site.condition or "",
        }
        for (site, c, text), rid in zip(claims, settle([c for _, c, _ in claims]), strict=True)
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


@dataclass
class Scan:
    """What the scan folds out of the revisions, oldest first. Its state after the newest
    revision is cached (`fold`), keyed by a hash chain over every revision's file set and sha:
    adding a commit restores the state of the history before it and folds in only the new one."""

    loader: Loader
    entries_at: Callable[[int], list[dict]]  # ord -> that revision's entries
    keys: list[str] = field(default_factory=list)  # per revision: cache key of its file set
    chain: list[str] = field(default_factory=list)  # per revision: key of the history up to it
    last_ord: dict[str, int] = field(default_factory=dict)  # id -> last revision that has it
    flag_last: dict[str, int] = field(default_factory=dict)  # flag -> last revision declaring it
    failures: dict[str, dict] = field(default_factory=dict)
    sites: int = 0  # in the newest revision
    spans: list[dict] = field(default_factory=list)  # occurrences.jsonl lines, see _fold_spans
    open_spans: dict[str, dict] = field(default_factory=dict)  # id -> its newest span
    flag_spans: list[dict] = field(default_factory=list)  # flaghistory.jsonl lines, _fold_flags
    open_flags: dict[str, dict] = field(default_factory=dict)  # flag -> its newest span
    lineage: Any = None  # records.lineage.LineageFold
    # Revisions whose ids history decided (a shared key someone held before): their entries are
    # cached under the history's chain key (`settled`), and their records are built with it.
    settled: set[int] = field(default_factory=set)
    # Revisions with a file this run could not extract for reasons of its own (out of memory):
    # nothing derived from them is cached, so the next build does them again.
    tainted: set[int] = field(default_factory=set)

    def keeps(self, ord_: int) -> bool:
        """Whether what revision `ord_` gives may be cached."""
        return ord_ not in self.tainted

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
            "flagSpans": self.flag_spans,
            "lineage": self.lineage.to_state(),
        }

    def restore(self, state: dict) -> None:
        self.last_ord, self.flag_last = state["lastOrd"], state["flagLast"]
        self.failures = {json.dumps(f, sort_keys=True): f for f in state["failures"]}
        self.sites, self.spans = state["sites"], state["spans"]
        self.open_spans = {sp["id"]: sp for sp in self.spans}  # creation order: newest wins
        self.flag_spans = state["flagSpans"]
        self.open_flags = {sp["name"]: sp for sp in self.flag_spans}
        self.settled = set(state["settled"])


class Scanner:
    """Entries of every revision, oldest first, each computed once per distinct file set (the
    value is cached: entries depend only on the files and the code, not on the commit), folded
    into occurrence spans, lineage and the newest revision of each record and flag."""

    def __init__(self, plan: Plan, cache: Cache, stats: dict[str, int], progress: Progress) -> None:
        from kverr.records.lineage import LineageFold

        self.plan, self.cache, self.stats, self.progress = plan, cache, stats, progress
        # ids depend on the profile's identity rules as much as on the code; ":3": entries carry
        # guardText, and each revision its flags' facts, in newer cache formats
        self.fp = code_fingerprint("extractor", "records") + ":5" + plan.profile.fingerprint()
        self.loader = Loader(plan, cache)
        self.held: dict[int, list[dict]] = {}  # entries scanned in this run, by ord
        self.pieces: dict[str, list] = {}  # cached pieces of revisions' values read (get_rev)
        self.claims: dict[int, tuple] = {}  # the last revision's claims by site (_entries)
        self.claim_keys: dict[tuple, tuple] = {}  # and their keys by site text (_entries)
        self.converter_memo: dict[str, dict] = {}  # blob -> its argparse type helpers
        self.scan = Scan(loader=self.loader, entries_at=self.entries_at)
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
                value = json.loads(raw) if raw is not None else None
            else:
                value = get_rev(self.cache, self.scan.keys[ord_], self.pieces)
            if value is None:
                raise DatasetError(
                    f"cache {self.cache.path} lost a revision's entries; delete it and build again."
                )
            self.held[ord_] = value["entries"]
        return self.held[ord_]

    def _entries_fn(self, ord_: int) -> Callable[[], list[Any]]:
        from kverr.records.lineage import Entry

        return lambda: [
            Entry(e["id"], e["kind"], e["message"], e["function"], e["guard"], e["errorClass"])
            for e in self.entries_at(ord_)
        ]

    def taint(self, key: tuple[str, str], value: str) -> None:
        """`key`'s extraction (`value`) is this run's only: every revision holding it is
        scanned from it, and nothing that follows from those revisions is cached."""
        self.loader.transient[key] = value
        self.scan.tainted.update(n for n, files in enumerate(self.plan.files) if key in files)

    def advance(self, pending: set[tuple[str, str]]) -> None:
        """Scan every next revision none of whose blobs is still being extracted."""
        files = self.plan.files
        while self.next < len(files) and not pending.intersection(files[self.next]):
            self._step(self.next)
            self.next += 1

    def save(self) -> None:
        """Keep the folded state of this history, unless it was restored whole."""
        if self.restored < len(self.chain) and not self.scan.tainted:
            self.cache.put_many("fold", {self.chain[-1]: json.dumps(self.scan.state())})

    def _converters(self, files: list[tuple[str, str]]) -> dict:
        """The revision's own argparse type helpers (extractor.converters), read once per blob."""
        from kverr.extractor.converters import converter_models

        out: dict = {}
        for path, blob in files:
            got = self.converter_memo.get(blob)
            if got is None:
                text = self.plan.read(path, blob).text or ""
                got = self.converter_memo[blob] = converter_models([text])
            for name, model in got.items():
                out.setdefault(name, model)
        return out

    def _step(self, ord_: int) -> None:
        files, scan = self.plan.files[ord_], self.scan
        key = scan.keys[ord_]
        value = get_rev(self.cache, key, self.pieces)
        if value is None:
            exts = self.loader.load(files, text=False)
            value = {
                "entries": _entries(exts, self.plan.profile, self.claims, self.claim_keys),
                "flagNames": [f.name for e in exts for f in e.flags],
                "flagFacts": flag_facts(
                    exts,
                    self.plan.profile.extract.argument_kwargs,
                    self._converters(files),
                    [self.loader.memo[pb] for pb in files],  # before linking: every config field
                ),
                "failures": [json.loads(to_json(f)) for e in exts for f in e.failures],
                "sites": sum(len(e.sites) for e in exts),
            }
            # (the full declarations are read back from the blobs, for the few revisions whose
            # declarations the dataset shows: assemble._newest_flags)
            if scan.keeps(ord_):
                put_rev(self.cache, key, value)
            self.stats["revisions_built"] += 1
        for pb in files:  # never used again unless a later revision has it (then: memo or cache)
            self.loader.fresh.pop(pb, None)
        entries = value["entries"]
        if ord_ > 0:
            entries = _settle(entries, _holders(self.entries_at(ord_ - 1)))
            if entries is not value["entries"]:
                scan.settled.add(ord_)
                if scan.keeps(ord_):
                    self.cache.put_many(
                        "settled", {self.chain[ord_]: json.dumps({"entries": entries})}
                    )
        self.held[ord_] = entries
        for e in entries:
            scan.last_ord[e["id"]] = ord_
        for name in value["flagNames"]:
            scan.flag_last[name] = ord_
        for f in value["failures"]:
            scan.failures.setdefault(json.dumps(f, sort_keys=True), f)
        scan.sites = value["sites"]
        _fold_spans(scan, ord_, entries)
        _fold_flags(scan, ord_, value["flagFacts"])
        scan.lineage.add(
            self.plan.revisions[ord_].sha,
            frozenset(e["id"] for e in entries),
            self._entries_fn(ord_),
        )
        self.progress("records", ord_ + 1, len(self.plan.revisions))


def put_rev(cache: Cache, key: str, value: dict) -> None:
    """A revision's value (entries, flag names, ...) stored as its sites' lines and pieces kept
    once per content (cache.chunked): neighbouring revisions differ mostly in the lines their
    sites moved to, and in a few entries (a value was about 45 KB, its lines 1 KB)."""
    lines = [e["line"] for e in value["entries"]]
    entries, pieces = chunked(
        [{k: v for k, v in e.items() if k != "line"} for e in value["entries"]], "id"
    )
    rest = json.dumps({k: v for k, v in value.items() if k != "entries"}, sort_keys=True)
    pieces[ref := hashlib.sha256(rest.encode()).hexdigest()[:32]] = rest
    cache.put_new("revbody", pieces)
    cache.put_many("rev", {key: json.dumps({"entries": entries, "rest": ref, "lines": lines})})


def get_rev(cache: Cache, key: str, memo: dict | None = None) -> dict | None:
    """put_rev's value back (None when the cache lacks it). `memo`: pieces read before
    (neighbouring revisions share most)."""
    raw = cache.get("rev", key)
    if raw is None:
        return None
    ref = json.loads(raw)
    rest = cache.get("revbody", ref["rest"])
    entries = get_chunked(cache, "revbody", ref["entries"], memo)
    if rest is None or entries is None:
        return None
    lines = ref["lines"]
    return {
        **json.loads(rest),
        "entries": [_with_line(e, n) for e, n in zip(entries, lines, strict=True)],
    }


def _with_line(entry: dict, line: int) -> dict:
    out = {}
    for k, v in entry.items():  # the key order _entries gives
        out[k] = v
        if k == "file":
            out["line"] = line
    return out


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


def _fold_spans(scan: Scan, ord_: int, entries: list[dict]) -> None:
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
        if e.get("guardText"):
            span["guardText"] = e["guardText"]
        scan.open_spans[rid] = span
        scan.spans.append(span)


# What argparse's answers need of a declaration (records/argparse_records.py); help is left out:
# it changes with most edits of the text and only the newest is shown (flags.jsonl).
FLAG_FACTS = ("choices", "type", "default", "action", "nargs", "options", "file", "invalid")


def flag_facts(
    exts: Sequence[FileExtraction],
    kwargs_rule: str = "",
    converters: dict | None = None,
    raw: Sequence[FileExtraction] | None = None,
) -> list[dict]:
    """One revision's flags as argparse sees them, as flaghistory.jsonl compares them: a later
    declaration of a name wins (as in flags.jsonl); config fields (`--speculative-config.method`)
    are no argparse options of their own and are left out. `kwargs_rule` "annotation": an
    add_argument that unpacks a mapping declares what the field's annotation says
    (extractor.flags.annotation_facts, Literal aliases looked up over the whole file set).
    `invalid`: what the parser prints for a value the type refuses, through the revision's
    own type helpers (`converters`, extractor.converters), or None."""
    from kverr.extractor.converters import OVERRIDE, invalid_template
    from kverr.extractor.flags import annotation_facts, config_key, fills

    aliases = {name: members for e in exts for name, members in e.literals}
    fields = {  # a config's own annotation of each field: what its kwargs helper reads
        (config_key(d.dest.rpartition(".")[0]), d.dest.rpartition(".")[2]): d.type
        for e in raw or exts  # (`raw`: before linking, which drops fields a flag fills)
        for d in e.flags
        if "." in d.dest and not fills(d)
    }
    out: dict[str, dict] = {}
    for d in (d for e in exts for d in e.flags):
        if "." in d.name:
            continue
        facts = {k: getattr(d, k, None) for k in FLAG_FACTS}
        annotation = _kwargs_field(d.kwargs, fields) or d.type or ""
        derived = annotation_facts(annotation, aliases) if kwargs_rule and d.kwargs else None
        own = (converters or {}).get(OVERRIDE + d.dest)
        if derived is not None and own and derived["type"]:  # the helper's type for this field
            derived["type"] = re.sub(r"\b(int|float)\b", own[1], derived["type"], count=1)
        if derived is not None:  # what the call itself says (choices=, action=) still wins
            facts.update(type=derived["type"], nargs=facts["nargs"] or derived["nargs"])
            facts["choices"] = facts["choices"] or derived["choices"]
            facts["action"] = facts["action"] or derived["action"]
        for k in ("choices", "options"):
            if facts[k] is not None:
                facts[k] = list(facts[k])
        facts["invalid"] = invalid_template(facts["type"], converters or {})
        said = _SAID_SUCCESSOR.search(d.help or "")
        if said and said.group(1).split()[0] not in (d.options or (d.name,)):
            facts["successor"] = said.group(1).replace("=", " ", 1)
        out[d.name] = {"name": d.name, **facts}
    return [out[n] for n in sorted(out)]


# "--enable-flashinfer-mla is deprecated. Please use '--attention-backend flashinfer' instead.":
# the option a deprecated one's own help names in its place (flaghistory's `successor`)
_SAID_SUCCESSOR = re.compile(
    r"\buse\s+[`'\"]?(--[a-z0-9][a-z0-9-]{0,80}(?:[ =][\w./-]{1,60})?)[`'\"]?\s+instead\b", re.I
)
_KWARGS = re.compile(r"""(\w+)_kwargs\[["'](\w+)["']\]""")


def _kwargs_field(kwargs: str | None, fields: dict) -> str | None:
    """`scheduler_kwargs["max_num_seqs"]` -> the annotation of SchedulerConfig.max_num_seqs
    (the config whose kwargs the mapping holds), when the file set declares it."""
    from kverr.extractor.flags import config_key

    m = _KWARGS.search(kwargs or "")  # (also `{**cache_kwargs["x"], "default": None}`)
    return fields.get((config_key(m.group(1) + "_config"), m.group(2))) if m else None


def _fold_flags(scan: Scan, ord_: int, facts: list[dict]) -> None:
    """Flag history: one span per run of consecutive revisions (ords `from`..`to`) in which a
    flag is declared with the same facts; a revision without the flag ends its span."""
    for f in facts:
        span = scan.open_flags.get(f["name"])
        same = span is not None and all(span[k] == f[k] for k in FLAG_FACTS)
        if same and span["to"] == ord_ - 1 and span.get("successor") == f.get("successor"):
            span["to"] = ord_
            continue
        span = {**f, "from": ord_, "to": ord_}
        scan.open_flags[f["name"]] = span
        scan.flag_spans.append(span)
