"""Prose: comments, docstrings and the message's own sentences, read as text a user can take;
the `documentation` field (why the check exists).
"""

from __future__ import annotations

import ast
import re

from kverr.records.conditions import join_words
from kverr.records.knowledge import notices
from kverr.records.knowledge.facts import Facts

from kverr.ftypes import FlagDecl


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
    if notices.is_notice(f):
        parts.append(notices.did(f))  # a notice's meaning: what the code did instead
    if not any(parts):
        parts.append(_docstring(f))
    if not any(parts):
        parts.append(flags_sentence(f))
    return " ".join(p for p in parts if p)


# Where the code says nothing, the documentation names the flags the check reads; a build over
# the history puts the commit that introduced the check in front (records.knowledge.introduced).
FLAGS_LEAD = "It checks "


def flags_sentence(f: Facts) -> str:
    """The flags the check reads, each with its declared help, as one sentence:
    "It checks --page-size (the number of tokens in a page) and --chunked-prefill-size (...)."
    Empty when none of them declares help."""
    atoms = (*f.context, *f.direct)
    flags = [a.flag for a in atoms if a.flag] + [fl for a in atoms if not a.flag for fl in a.flags]
    flags = list(dict.fromkeys([*flags, *f.site.flags]))
    if not any(_help(fl, f.decls) for fl in flags):
        return ""
    return FLAGS_LEAD + join_words([_with_help(fl, f.decls) for fl in flags]) + "."


# A docstring that opens with one of these summarises what its function does ("Validate IB
# devices before passing to mooncake.", "Configure GPU memory-dependent settings ..."): that
# is the helper's job, not why this check exists.
_JOB = re.compile(
    r"(check|validate|verify|ensure|configure|set|handle|parse|extract|convert|compute|get|"
    r"return|initiali[sz]e|create|build|load|process|update|apply|adjust|automatically)\b",
    re.I,
)


def _docstring(f: Facts) -> str:
    """The enclosing function's docstring summary, only when it explains something and shares
    a word with this check (its message or flags): never an unrelated helper's."""
    text = _first_paragraph(f.site.docstring)
    if not text or _JOB.match(text):
        return ""
    words = _content_words(text)
    mine = _content_words(f.literal + " " + " ".join(f.site.flags).replace("-", " "))
    return text if words & mine else ""


_STOP = {"this", "that", "with", "when", "only", "must", "should", "will", "have", "from", "into",
         "than", "then", "also", "used", "uses", "using", "does", "not", "the", "and", "for"}  # fmt: skip


def _content_words(text: str) -> set[str]:
    out = set()
    for w in re.findall(r"[a-z0-9]{3,}", text.lower()):
        w = w[:-1] if len(w) > 4 and w.endswith("s") else w
        if w not in _STOP:
            out.add(w)
    return out


def _help(flag: str, decls: dict[str, FlagDecl]) -> str:
    """The first sentence of a flag's help, as a lower-case clause."""
    d = decls.get(flag)
    if not d or not d.help:
        return ""
    text = re.sub(r"^[fr]?['\"]", "", d.help.strip())  # an f-string help kept its prefix
    # The first sentence (not cut at "e.g."), and nothing of an f-string's runtime parts.
    text = re.split(r"(?<=[\w)][\w)][\w)])\.\s+", text, maxsplit=1)[0]
    if "{" in text:
        return ""
    text = _prose(text).rstrip(".")
    if text[:1].isupper() and not text[1:2].isupper():
        text = text[0].lower() + text[1:]
    return text


def _with_help(flag: str, decls: dict[str, FlagDecl]) -> str:
    text = _help(flag, decls)
    return f"{flag} ({text})" if text else flag


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


def introduced(documentation: str, commit: dict) -> str:
    """`documentation` with the commit that introduced the check in front, when the code said
    nothing (empty, or only the flags sentence): "Introduced in #8746 (14fdd5274): feat: add
    priority based scheduling .... <first paragraph of its body>"."""
    if documentation and not documentation.startswith(FLAGS_LEAD):
        return documentation
    subject = " ".join((commit.get("subject") or "").split())
    pr = re.search(r"\(#(\d+)\)\s*$|^Merge pull request #(\d+)", subject)
    number = next((g for g in pr.groups() if g), None) if pr else None
    title = subject[: pr.start()].strip() if pr and pr.start() > 0 else subject
    where = f"#{number} ({commit['sha'][:9]})" if number else f"commit {commit['sha'][:9]}"
    text = f"Introduced in {where}: {title.rstrip('.')}."
    para = _first_body_paragraph(commit.get("body") or "")
    if para:
        text += " " + para
    return f"{text} {documentation}".strip()


_TRAILER = re.compile(r"^[\w-]+(-by)?:\s", re.I)  # Signed-off-by:, Co-authored-by:, ...


def _first_body_paragraph(body: str) -> str:
    """The first paragraph of a commit body that is prose: not trailers, not a bare list of
    bullets or links, at most ~400 characters (cut at a sentence)."""
    for para in re.split(r"\n\s*\n", body.strip()):
        lines = [ln.strip() for ln in para.splitlines() if ln.strip()]
        lines = [ln for ln in lines if not _TRAILER.match(ln)]
        text = " ".join(" ".join(lines).split())
        if len(text.split()) < 5 or re.match(r"(https?://|[-*#]|\d+\.\s)", text):
            continue
        if len(text) > 400:
            cut = text.rfind(". ", 0, 400)
            text = text[: cut + 1] if cut > 0 else text[:399].rstrip() + "…"
        return text if text[-1] in ".!?…" else text + "."
    return ""
