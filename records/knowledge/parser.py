"""The knowledge of an argparse record (records/argparse_records.py): the parser's own refusal
of one option, worded from the option's docs, its history and the launches that use it.

    parser_knowledge(form, flag, spans, revisions, decls, docs, kind="", count="")

`spans` are the option's flag-history lines (records/argparse_records.py reads them), oldest
first, so the releases where its choices changed, or where it went away, are known.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from kverr.records.conditions import join_words
from kverr.records.knowledge import docs as D
from kverr.records.knowledge.text import _clause, _help, compose

from kverr.ftypes import Docs, FlagDecl, Revision

_KINDS = {"int": "an integer", "float": "a number", "loads": "JSON text"}


def parser_knowledge(
    form: str,
    flag: str,
    spans: Sequence[dict[str, Any]],
    revisions: Sequence[Revision],
    decls: dict[str, FlagDecl],
    docs: Docs | None,
    *,
    kind: str = "",
    count: str = "",
) -> dict[str, Any]:
    """meaning, documentation, commonSituations, preventionTips and learnMore of one
    argparse record."""
    note = D.about(flag, decls, docs)
    clause = (_clause(note.text) if note is not None else "") or _help(flag, decls)
    what = f"{flag}: {clause}." if clause else ""
    parts = {"what": what, "why": _why(form, flag, spans, kind, count)}
    parts = {k: v for k, v in parts.items() if v}
    out: dict[str, Any] = {
        "meaning": parts,
        "documentation": compose(parts),
        "commonSituations": " ".join(
            s for s in (_history(form, spans, revisions), _used(flag, decls, docs)) if s
        ),
        "preventionTips": _tips(form, flag, spans, revisions),
    }
    url = D.link(flag, decls, docs)
    if url:
        out["learnMore"] = url
    return out


def _why(form: str, flag: str, spans: Sequence[dict[str, Any]], kind: str, count: str) -> str:
    """Why the parser refused it, in this option's own terms."""
    newest = spans[-1] if spans else {}
    if form == "invalid-choice":
        choices = list(newest.get("choices") or [])
        shown = ", ".join(choices[:4]) + (", ..." if len(choices) > 4 else "")
        return (
            f"The parser accepts only the values its release declares for {flag} (the newest"
            f" built: {shown}); a value another release has, or a misspelt one, stops it."
        )
    if form == "invalid-value":
        default = _default(newest.get("default"))
        also = f" (its default is {default})" if default else ""
        word = _KINDS.get(kind)
        if word:
            return f"The parser reads the value of {flag} as {word}{also}, and a word that is not one stops it."
        return (
            f"The parser converts the value of {flag} with {kind}{also}, and stops when that fails."
        )
    if form == "expected-argument":
        takes = {"": "a value", "one": "a value", "at least one": "at least one value"}.get(
            count, f"{count} values"
        )
        return (
            f"{flag} takes {takes}, and the parser found none after it: the option ended the"
            " command line, or the word after it starts with '-' and was read as another option."
        )
    return f"The parser of the releases after {flag} was removed or renamed has no such option."


def _default(text: str | None) -> str:
    """A default written as a literal (`32`, `0.9`, `'auto'`), else "" (a name such as
    `ServerArgs.x` is no value a reader can use)."""
    value = (text or "").strip()
    if re.fullmatch(r"-?\d+(?:\.\d+)?", value):
        return value
    m = re.fullmatch(r"'([\w.-]{1,40})'|\"([\w.-]{1,40})\"", value)
    return (m.group(1) or m.group(2)) if m else ""


def _releases(ords: Sequence[int], revisions: Sequence[Revision]) -> list[str]:
    """The first release tag at or after each revision ord (the release that ships it)."""
    out = []
    for o in ords:
        tag = next((t for r in revisions[o:] for t in r.tags), None)
        if tag:
            out.append(tag)
    return list(dict.fromkeys(out))


def _history(form: str, spans: Sequence[dict[str, Any]], revisions: Sequence[Revision]) -> str:
    """What the option's history says about meeting this: the releases that changed its
    choices; the last release that had it."""
    if form == "invalid-choice":
        changed = [
            b["from"]
            for a, b in zip(spans, spans[1:], strict=False)
            if (a.get("choices") or []) != (b.get("choices") or [])
        ]
        names = _releases(changed, revisions)
        if names:
            return (
                f"Its choices changed in {join_words(names[-4:])}: a launch script written for"
                " one release can pass a value another lacks."
            )
    if form == "unrecognized" and spans:
        last = [r for r in revisions[: spans[-1]["to"] + 1] if r.tags][-1:]
        if last:
            return (
                f"Launch scripts kept from {last[0].tags[0]} or earlier still pass it to a"
                " release that no longer has it."
            )
    return ""


def _used(flag: str, decls: dict[str, FlagDecl], docs: Docs | None) -> str:
    return D.seen_in_launches(D.usage(flag, decls, docs), flag)


def _tips(
    form: str, flag: str, spans: Sequence[dict[str, Any]], revisions: Sequence[Revision]
) -> list[str]:
    if form == "unrecognized" and spans:
        gone = (
            _releases([spans[-1]["to"] + 1], revisions)
            if spans[-1]["to"] + 1 < len(revisions)
            else []
        )
        if gone:
            return [f"Take {flag} out of launch scripts before upgrading to {gone[0]}"]
    return []
