"""Lineage: when a message is edited its id changes (ids hash the message), so link the new
record to the one it replaced.

Between two consecutive revisions, a record that disappears and one that appears are the same
error edited when they are the same kind, sit in the same context (same function, or the same
guard tests) and their messages share most tokens. Pairing is greedy, best score first, one
partner each, and an id only ever links to an older one the first time it appears, so a revert
can never make a cycle.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

_TOKEN = re.compile(r"[A-Za-z0-9_]+|\{[^}]*\}|--[A-Za-z0-9-]+")

# Same function and same guards is strong evidence: a looser text match is enough.
MIN_SIMILARITY_SAME_CONTEXT = 0.34
MIN_SIMILARITY_PARTIAL_CONTEXT = 0.5


@dataclass(frozen=True)
class Entry:
    """What lineage needs to know about one record at one revision."""

    id: str
    kind: str
    message: str  # the errorMessage, or the assert condition when there is no message
    function: str | None = None
    guard: str = ""  # fingerprint of the guard tests ("" when unguarded)
    error_class: str | None = None


def tokens(text: str) -> frozenset[str]:
    return frozenset(t.lower() for t in _TOKEN.findall(text))


def similarity(a: str, b: str) -> float:
    """Jaccard similarity of the two messages' word tokens (placeholders and --flags are tokens)."""
    ta, tb = tokens(a), tokens(b)
    if not ta and not tb:
        return 1.0
    return len(ta & tb) / len(ta | tb)


def _score(old: Entry, new: Entry) -> float:
    if old.kind != new.kind:
        return 0.0
    same_fn = old.function is not None and old.function == new.function
    same_guard = old.guard == new.guard and old.guard != ""
    if not (same_fn or same_guard):
        return 0.0
    sim = similarity(old.message, new.message)
    floor = (
        MIN_SIMILARITY_SAME_CONTEXT if same_fn and same_guard else MIN_SIMILARITY_PARTIAL_CONTEXT
    )
    return sim if sim >= floor else 0.0


def link(
    prev: Sequence[Entry], cur: Sequence[Entry], seen: Iterable[str] = ()
) -> list[tuple[str, str]]:
    """(new_id, old_id) pairs: records of `prev` gone from `cur`, matched to records new in `cur`.
    `seen` holds every id met in earlier revisions; those never count as new."""
    prev_ids = {e.id for e in prev}
    cur_ids = {e.id for e in cur}
    old_seen = set(seen) | prev_ids
    gone = _unique(e for e in prev if e.id not in cur_ids)
    new = _unique(e for e in cur if e.id not in old_seen)
    scored = sorted(
        ((s, o.id, n.id) for o in gone for n in new if (s := _score(o, n)) > 0),
        key=lambda t: (-t[0], t[1], t[2]),
    )
    used_old: set[str] = set()
    used_new: set[str] = set()
    pairs = []
    for _, old_id, new_id in scored:
        if old_id in used_old or new_id in used_new:
            continue
        used_old.add(old_id)
        used_new.add(new_id)
        pairs.append((new_id, old_id))
    return sorted(pairs)


def _unique(entries: Iterable[Entry]) -> list[Entry]:
    """One entry per id (a record can occur at several sites; the first one stands for it)."""
    out: dict[str, Entry] = {}
    for e in entries:
        out.setdefault(e.id, e)
    return list(out.values())


def lineage(revisions: Sequence[tuple[str | None, Sequence[Entry]]]) -> list[dict]:
    """Lineage lines `{"id", "previousId", "sha"}` over revisions given oldest first, sorted by id.
    `sha` is the first revision where `id` replaced `previousId` (LineageFold over them all)."""
    fold = LineageFold()
    for sha, entries in revisions:
        fold.add(sha, frozenset(e.id for e in entries), lambda es=entries: es)
    return fold.lines()


class LineageFold:
    """`lineage` one revision at a time. Its state (`to_state`) is small and JSON-able, so a
    history build can keep it and add the next commit without walking the history again; the
    previous revision's entries are given back on restore (the caller holds them anyway)."""

    def __init__(self, state: dict | None = None, prev: Callable[[], Sequence[Entry]] = tuple):
        state = state or {}
        self.seen: set[str] = set(state.get("seen", ()))  # ids of every revision before prev
        self.prev_ids: frozenset[str] = frozenset(state.get("prevIds", ()))
        self.found: dict[str, dict] = {ln["id"]: ln for ln in state.get("lines", ())}
        self.prev = prev

    def add(self, sha: str | None, ids: frozenset[str], entries: Callable[[], Sequence[Entry]]):
        if ids != self.prev_ids:
            if (self.prev_ids - ids) and (ids - self.prev_ids - self.seen):  # gone and new ids
                for new_id, old_id in link(self.prev(), entries(), self.seen):
                    self.found.setdefault(new_id, {"id": new_id, "previousId": old_id, "sha": sha})
            self.seen |= self.prev_ids
        self.prev_ids, self.prev = ids, entries

    def lines(self) -> list[dict]:
        return [self.found[k] for k in sorted(self.found)]

    def to_state(self) -> dict:
        return {"seen": sorted(self.seen), "prevIds": sorted(self.prev_ids), "lines": self.lines()}


def apply(records: Iterable[dict], lines: Iterable[Mapping]) -> None:
    """Set `previousId` on each record that replaced an older one (in place)."""
    previous = {ln["id"]: ln["previousId"] for ln in lines}
    for rec in records:
        rec["previousId"] = previous.get(rec["id"], rec.get("previousId"))
