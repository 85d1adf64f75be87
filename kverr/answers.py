"""What the catalog answers with: `Match` (a record found in pasted text), `CutLines` (the
input lines the bounded reader cut) and `Revision` (where source came from; a catalog's row).
Importable from kverr.ftypes as well, beside every other type that flows between the stages;
defined here so that `kverr explain`, which needs these alone, does not pay for generating
the methods of the build's dataclasses at start-up."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Revision:
    """Where a set of source files came from. All fields None for a plain directory; a
    catalog's row adds its place among the catalog's revisions (`ord`) and its `project`."""

    repo: str | None = None  # "sgl-project/sglang": used for githubUrl
    sha: str | None = None  # full 40-hex commit sha
    date: str | None = None  # commit time, ISO 8601 UTC with "Z"
    tags: tuple[str, ...] = ()
    subject: str | None = None  # first line of the commit message
    ord: int | None = None
    project: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A catalog row as JSON (`kverr history --json`, /versions, a diff's from and to)."""
        return {
            "ord": self.ord, "sha": self.sha, "date": self.date, "tags": list(self.tags),
            "subject": self.subject, "project": self.project,
        }  # fmt: skip


@dataclass(frozen=True)
class Match:
    record: dict[str, Any]  # the full schema-v2 record
    score: float  # [0, 1]
    how: str  # "pattern" | "traceback" | "partial" | "fuzzy"; "flag" | "id" (search, show)
    values: dict[str, str] = field(default_factory=dict)  # placeholder expr -> captured text
    line: int | None = None  # 1-based line in the input where the message starts
    # release tags (or short shas) containing the record; "releases" in JSON, as everywhere
    revisions: tuple[str, ...] = ()
    # {"name", "product", "detectedBy": "--project" | "log form" | "message"}
    project: dict[str, Any] = field(default_factory=dict)
    # an argparse record's answer for the pasted values (catalog/argparse_answers.py), computed
    # from the releases the catalog holds; None for every other match
    argparse: dict[str, Any] | None = None
    # the fix of the user's own launch, when the paste held one (verify/preflight.py
    # personal_answers): {"before", "after", "changed", "verification"} or {"status", "reason"}
    yours: dict[str, Any] | None = None
    # without a launch, the record's condition solved with the values the message printed
    # (kverr/advice.py): "With --tp-size 4, use --dp-size 4, 2 or 1 (not 3)."
    advice: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        from kverr.present.verdict import fix_status

        out = {
            "record": self.record,
            "score": round(self.score, 4),
            "match": self.how,
            "values": dict(self.values),
            "line": self.line,
            "releases": list(self.revisions),
            "fixStatus": fix_status(self.record),  # the verification in one sentence
            "project": dict(self.project),
        }
        if self.argparse is not None:
            out["argparse"] = self.argparse
        if self.yours is not None:
            out["yourFix"] = self.yours
        if self.advice:
            out["advice"] = list(self.advice)
        return out


@dataclass(frozen=True)
class CutLines:
    """Input lines longer than `max_chars`: only their first and last `max_chars // 2`
    characters were read."""

    max_chars: int
    count: int  # how many lines were cut
    lines: tuple[int, ...] = ()  # 1-based numbers of the first of them

    def to_dict(self) -> dict[str, Any]:
        return {"maxChars": self.max_chars, "count": self.count, "lines": list(self.lines)}


# ---------------------------------------------------------------- the --json contract
# Here beside Match, not in kverr.render: `explain --json` then imports no card, no terminal
# view (9 ms of a one-shot explain).


def explain_json(query: str, matches: Sequence[Match], cut: CutLines | None = None) -> str:
    """The `--json` contract: {"query": ..., "matches": [Match.to_dict(), ...]}, best first,
    and "cutLines" ({"maxChars", "count", "lines"}) when input lines were too long to read whole."""
    return "".join(explain_json_chunks(query, matches, cut))


def search_dict(
    query: dict[str, Any], matches: Sequence[Match], total: int, offset: int, limit: int
) -> dict[str, Any]:
    """`kverr search --json` and the MCP search tool: the query, the page's place, the total
    and the page's matches, as the API's /search writes them."""
    return {**query, "total": total, "offset": offset, "limit": limit,
            "matches": [m.to_dict() for m in matches]}  # fmt: skip


def explain_json_chunks(
    query: str, matches: Sequence[Match], cut: CutLines | None = None
) -> Iterator[str]:
    """`explain_json` a match at a time, the same bytes as `json.dumps(doc, indent=2)`: a scan
    can report 10,000 findings, and one string of all of them took 250 MB."""

    def dump(value: Any, depth: int) -> str:
        text = json.dumps(value, indent=2, ensure_ascii=False)
        return text.replace("\n", "\n" + "  " * depth)

    yield '{\n  "query": ' + dump(query, 1) + ',\n  "matches": ['
    for i, m in enumerate(matches):
        yield ("," if i else "") + "\n    " + dump(m.to_dict(), 2)
    yield "\n  ]" if matches else "]"
    if cut:
        yield ',\n  "cutLines": ' + dump(cut.to_dict(), 1)
    yield "\n}"
