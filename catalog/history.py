"""What changed between two revisions, and the life of one error across revisions.

Both read only the catalog's revisions / occurrences / lineage tables (plus `Catalog.get` and
`Catalog.explain`), so they answer in milliseconds from any catalog built from several revisions.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kverr.answers import Revision
from kverr.errors import NotFound, QueryError

_MAX_CHAIN = 1000  # lineage walks stop here even on a hand-edited (cyclic) lineage table


# ---------------------------------------------------------------- SQL helpers


def occurrences_at(cat: Any, ord_: int) -> dict[str, dict]:
    """id -> {file, line, function, guard, guard_text} for every record present at `ord_`."""
    sql = """SELECT id, file, lines[$1 - from_ord + 1] AS line, function, guard, guard_text
             FROM occurrences WHERE $1 BETWEEN from_ord AND to_ord ORDER BY id, file, line"""
    out: dict[str, dict] = {}
    for row in cat.con.execute(sql, [ord_]).dicts():
        out.setdefault(row.pop("id"), row)
    return out


def lineage_map(cat: Any) -> dict[str, str]:
    """id -> previous id, for every edited message."""
    return dict(cat.con.execute("SELECT id, previous_id FROM lineage").fetchall())


# ---------------------------------------------------------------- diff


@dataclass(frozen=True)
class Diff:
    rev_a: Revision
    rev_b: Revision
    added: list[dict] = field(default_factory=list)
    removed: list[dict] = field(default_factory=list)
    # {"old", "new", "what": [message|class|guard|id]}, and "guard": {"old", "new"} (each
    # {"hash", "text"}) when the guard changed
    changed: list[dict] = field(default_factory=list)
    moved: list[dict] = field(default_factory=list)  # {"record", "from", "to"}

    def to_dict(self) -> dict:
        return {
            "from": self.rev_a.to_dict(),
            "to": self.rev_b.to_dict(),
            "added": self.added,
            "removed": self.removed,
            "changed": self.changed,
            "moved": self.moved,
        }


def summary(cat: Any, record_id: str, where: dict | None = None) -> dict:
    """The few fields a diff or history line shows, located where the revision has it."""
    rec = cat.get(record_id) or {}
    where = where or {}
    return {
        "id": record_id,
        "kind": rec.get("kind"),
        "errorClass": rec.get("errorClass"),
        "severity": rec.get("severity"),
        "message": rec.get("errorMessage", ""),
        "file": where.get("file", rec.get("filePath")),
        "line": where.get("line", rec.get("lineNumber")),
        "function": where.get("function"),
    }


def diff(cat: Any, rev_a: str, rev_b: str, *, project: str | None = None) -> Diff:
    """Errors added, removed, changed (edited message / class / guard, via lineage) and moved
    (same id, another file or function) from `rev_a` to `rev_b`, two revisions of one project,
    each list in file and line order. Symmetric: B->A is A->B with added and removed, old and
    new, from and to swapped (lineage points from a newer id to the one it replaced, so the
    pairs are always found from the older revision to the newer one, whichever way round they
    were asked)."""
    ra = cat.resolve_version(rev_a, project=project)
    several = len(cat.projects) > 1  # then REV_B must be a revision of REV_A's project
    rb = cat.resolve_version(rev_b, project=project or (ra.project if several else None))
    if ra.ord > rb.ord:
        return _reversed(_diff(cat, rb, ra))
    return _diff(cat, ra, rb)


def _diff(cat: Any, ra: Revision, rb: Revision) -> Diff:
    """diff() from the older revision `ra` to the newer `rb`."""
    occ_a, occ_b = occurrences_at(cat, ra.ord), occurrences_at(cat, rb.ord)
    removed = set(occ_a) - set(occ_b)
    added = set(occ_b) - set(occ_a)
    previous = lineage_map(cat)
    changed = []
    for new_id in sorted(added):
        old_id = next((i for i in _ancestors(new_id, previous) if i in removed), None)
        if old_id is None:
            continue
        removed.discard(old_id)
        added.discard(new_id)
        old, new = summary(cat, old_id, occ_a[old_id]), summary(cat, new_id, occ_b[new_id])
        what = [k for k, f in (("message", "message"), ("class", "errorClass")) if old[f] != new[f]]
        if occ_a[old_id].get("guard") != occ_b[new_id].get("guard"):
            what.append("guard")
        # Same text, class and guards under a new id: identity changed (e.g. a duplicate appeared).
        changed.append(_change(old, new, what or ["id"], occ_a[old_id], occ_b[new_id]))
    moved = []
    for rid in sorted(set(occ_a) & set(occ_b)):
        a, b = occ_a[rid], occ_b[rid]
        if a.get("guard") != b.get("guard"):
            changed.append(_change(summary(cat, rid, a), summary(cat, rid, b), ["guard"], a, b))
        if (a["file"], a.get("function")) != (b["file"], b.get("function")):
            moved.append({"record": summary(cat, rid, b), "from": _place(a), "to": _place(b)})
    return Diff(
        rev_a=ra,
        rev_b=rb,
        added=sorted((summary(cat, i, occ_b[i]) for i in added), key=_where),
        removed=sorted((summary(cat, i, occ_a[i]) for i in removed), key=_where),
        changed=sorted(changed, key=lambda c: _where(c["new"])),
        moved=sorted(moved, key=lambda mv: _where(mv["to"]) + (mv["record"]["id"],)),
    )


def _change(old: dict, new: dict, what: list[str], occ_old: dict, occ_new: dict) -> dict:
    out = {"old": old, "new": new, "what": what}
    if "guard" in what:
        # The guard tests themselves, old -> new; a dataset built before they were kept has
        # only their hashes (the text is then null).
        out["guard"] = {"old": _guard(occ_old), "new": _guard(occ_new)}
    return out


def _guard(occ: dict) -> dict:
    return {"hash": occ.get("guard") or "", "text": occ.get("guard_text")}


def _where(item: dict) -> tuple:
    return (item.get("file") or "", item.get("line") or 0, item.get("id") or "")


def _reversed(d: Diff) -> Diff:
    """The same diff read the other way round (see diff)."""

    def flip(ch: dict) -> dict:
        out = {"old": ch["new"], "new": ch["old"], "what": ch["what"]}
        if "guard" in ch:
            out["guard"] = {"old": ch["guard"]["new"], "new": ch["guard"]["old"]}
        return out

    return Diff(
        rev_a=d.rev_b,
        rev_b=d.rev_a,
        added=d.removed,
        removed=d.added,
        changed=sorted((flip(c) for c in d.changed), key=lambda c: _where(c["new"])),
        moved=sorted(
            (
                {"record": {**mv["record"], **mv["from"]}, "from": mv["to"], "to": mv["from"]}
                for mv in d.moved
            ),
            key=lambda mv: _where(mv["to"]) + (mv["record"]["id"],),
        ),
    )


def _place(occ: dict) -> dict:
    return {"file": occ["file"], "line": occ["line"], "function": occ.get("function")}


def _ancestors(record_id: str, previous: dict[str, str]) -> Iterator[str]:
    """The ids `record_id` replaced, newest first."""
    cur = record_id
    for _ in range(_MAX_CHAIN):
        cur = previous.get(cur)
        if cur is None:
            return
        yield cur


# ---------------------------------------------------------------- history


@dataclass(frozen=True)
class History:
    record: dict  # summary of the record
    query: str
    revisions: list[Revision]  # where it exists
    introduced: dict | None  # {"sha", "date", "subject", "release"}
    disappeared: dict | None  # {"sha", "date", "subject", "release"}: first revision without it
    previous: list[str] = field(default_factory=list)  # older ids it replaced, newest first
    successor: str | None = None  # the id that replaced it, when its message was edited
    total_revisions: int = 0
    # the releases containing it, as every view names them (Catalog.releases_of): the card's
    # "Releases" line and the history's "releases:" line are one list
    releases: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "query": self.query,
            "record": self.record,
            "revisions": [r.to_dict() for r in self.revisions],
            "introduced": self.introduced,
            "disappeared": self.disappeared,
            "previousIds": self.previous,
            "replacedBy": self.successor,
            "revisionsBuilt": self.total_revisions,
            "releases": self.releases,
        }


def resolve_record(cat: Any, id_or_text: str) -> str:
    """A record id as given, or the best match for a pasted log line."""
    text = id_or_text.strip()
    if not text:
        raise QueryError("the history query is empty; pass a record id or a quoted log line.")
    rid = cat.find_id(text) if len(text) <= 120 else None
    if rid is not None:  # an id, an id prefix or the slug `kverr explain` prints
        return rid
    matches = cat.explain(text)
    if not matches:
        raise NotFound(
            f"no record matches {text[:60]!r}; check the id with `kverr explain` or paste more of the log line."
        )
    return matches[0].record["id"]


def history(cat: Any, id_or_text: str) -> History:
    """Where a record exists, when it was introduced and when it disappeared (commit, date and
    the first release tag at or after that point)."""
    rid = resolve_record(cat, id_or_text)
    where = cat.revisions_of(rid)
    present = {r.ord for r in where}
    # the revisions of the record's own project: another project's are neither before nor after
    project = next((r.project for r in where), None)
    revisions = cat.revisions(project=project) if project else cat.revisions()
    rows = [r for r in revisions if r.ord in present]
    introduced = disappeared = None
    if rows:
        first, last = rows[0].ord, rows[-1].ord
        introduced = _point(rows[0], _first_release(revisions, first, present, want=True))
        after = [r for r in revisions if r.ord > last]
        if after:
            disappeared = _point(after[0], _first_release(revisions, last + 1, present, want=False))
    previous = lineage_map(cat)
    successor = next((k for k, v in sorted(previous.items()) if v == rid), None)
    return History(
        record=summary(cat, rid),
        query=id_or_text,
        revisions=rows,
        introduced=introduced,
        disappeared=disappeared,
        previous=list(_ancestors(rid, previous)),
        successor=successor,
        total_revisions=len(revisions),
        releases=cat.releases_of(rid),
    )


def _first_release(
    revisions: list[Revision], start: int, present: set, *, want: bool
) -> str | None:
    """The first tagged revision from `start` on that has (want=True) or lacks the record."""
    for r in revisions:
        if r.ord >= start and r.tags and (r.ord in present) is want:
            return r.tags[0]
    return None


def _point(row: Revision, release: str | None) -> dict:
    return {"sha": row.sha, "date": row.date, "subject": row.subject, "release": release}
