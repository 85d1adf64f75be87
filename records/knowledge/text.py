"""Prose: comments, docstrings and the message's own sentences, read as text a user can take;
the `documentation` field (why the check exists).
"""

from __future__ import annotations

import ast
import re

from kverr.records.knowledge.facts import Facts


def _prose(text: str | None) -> str:
    """A comment or docstring paragraph as one line of prose, without tool pragmas."""
    if not text:
        return ""
    keep = []
    for line in text.splitlines():
        s = line.strip().lstrip("#").strip()
        if re.match(r"(noqa|type:|pragma|fmt:|pylint|TODO\b|FIXME\b|XXX\b)", s) or _is_code(s):
            continue
        keep.append(s)
    out = " ".join(" ".join(keep).split())
    if out and out[-1] not in ".!?:)":
        out += "."
    return out


def _is_code(line: str) -> bool:
    """A commented-out statement (`self.x = True`), which is not prose for a user."""
    if not re.search(r"[=()\[\]]", line):
        return False
    try:
        ast.parse(line)
    except SyntaxError:
        return False
    return True


def _first_paragraph(doc: str | None) -> str:
    if not doc:
        return ""
    return _prose(re.split(r"\n\s*\n", doc.strip(), maxsplit=1)[0])


def _sentences(text: str) -> list[str]:
    parts = re.split(r"(?<=[.;!?])\s+(?=[A-Za-z`'\"-])|;\s*", text)
    return [p.strip() for p in parts if p.strip()]


def documentation(f: Facts) -> str:
    """Why the check exists: the comment above the site and the message's own explanation
    (a `because`/`since`/`, as` clause, the text after a colon, a sentence that explains);
    the enclosing docstring's summary only when neither says anything."""
    parts = [_prose(f.site.comment)] if _says_why(f.site.comment) else []
    for reason in message_reasons(f):
        if not any(_restates(reason, p) for p in parts):
            parts.append(reason)
    if not parts:
        parts.append(_first_paragraph(f.site.docstring))
    return " ".join(p for p in parts if p)


def _restates(text: str, earlier: str) -> bool:
    """Most of the content words of `text` are already in `earlier` (the comment said it)."""
    words = {w for w in re.findall(r"[\w/-]{4,}", text.lower())}
    seen = {w for w in re.findall(r"[\w/-]{4,}", earlier.lower())}
    return bool(words) and len(words & seen) / len(words) >= 0.5


def _says_why(comment: str | None) -> bool:
    """A comment worth showing a user: a sentence, not a section label ("# Other platforms
    backends"), a bare link or a note to the developers."""
    text = _prose(comment)
    words = re.sub(r"https?://\S+", "", text).split()
    if len(words) < 5:
        return False
    return not re.match(r"(take care|handle|todo|fixme|hack|note to self)\b", text, re.I)


_REASON = re.compile(r"(?:,\s*as|\bsince|\bbecause(?! of)|\bas(?= it\b))\s+(?P<why>[^.;,]+)", re.I)
# Sentences of a message that are advice (solutions), the action taken, or a list of values:
# not explanations.
_NOT_WHY = re.compile(
    r"(please|you can|you should|you may|try|consider|use|set|pass|setting|disabling|enabling|"
    r"using|ignoring|switching|falling|forcing|does|do|will|must|expected|got)\b",
    re.I,
)


def _explains(text: str) -> bool:
    """A sentence that can stand alone as an explanation: no runtime value, no list of
    allowed values or conditions, not advice or the action taken."""
    if "{" in text or len(text.split()) < 5 or not text[:1].isalpha() or _NOT_WHY.match(text):
        return False
    return "==" not in text and text.count("'") < 4 and ": " not in text[:40].rstrip(":")


def message_reasons(f: Facts) -> list[str]:
    """Explanations the message itself gives, as sentences without runtime values."""
    out = []
    sentences = _sentences(f.message)
    for m in _REASON.finditer(f.message):
        why = m.group("why").strip()
        if len(why.split()) >= 5 and "{" not in why:
            out.append(why[0].upper() + why[1:].rstrip(" .") + ".")
    head, sep, tail = f.message.partition(": ")
    if sep and len(head.split()) > 2 and _explains(tail.strip()):  # "AMD/ROCm: ..." is a label
        out.append(tail.strip()[0].upper() + tail.strip()[1:].rstrip(" .") + ".")
    for s in sentences[1:]:
        if _explains(s) and not _IMPERATIVE.match(s):
            out.append(s.rstrip(" .") + ".")
    return list(dict.fromkeys(out))


_IMPERATIVE = re.compile(
    r"^(?:please\s+|you can\s+|you should\s+|you need to\s+)?(pass|use|set|run|remove|drop|"
    r"disable|enable|install|unset|try|specify|add|choose|consider|increase|decrease|reduce|"
    r"upgrade|switch|provide|make sure|change|update|export|lower|turn|select|rebuild|reinstall|"
    r"downgrade|check|verify|ensure|point|explicitly|override)\b",
    re.I,
)


def _advice_sentences(message: str) -> list[str]:
    """Sentences and clauses of a message that may be advice: ", please ..." and
    "..., try to use ..." start one too, and so does a sentence glued on without a space."""
    text = re.sub(r"\.(?=[A-Z][a-z])", ". ", message)
    parts = []
    for s in _sentences(text):
        parts.extend(
            p.strip()
            for p in re.split(r",\s*(?=(?:please|try|you can|you should)\b)", s, flags=re.I)
        )
    return [p for p in parts if p]
