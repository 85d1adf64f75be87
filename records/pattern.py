"""messagePattern: a regex for a message template, and the safety check every pattern passes.

Rules (docs/CONTRACTS.md "messagePattern"):
- Python `re` and RE2 syntax only: no backreferences, lookaround, atomic groups, possessive
  quantifiers, conditionals or comments; named groups use the `(?P<name>...)` form both accept.
- No nested quantifiers (a repeated group that itself holds a repeat), and every placeholder is a
  bounded group, so RE2 runs in linear time and Python's backtracking is bounded per start.
- Literal text is exact, with one choice about whitespace: a single space stays a literal space
  (readable patterns, like the hand-written ones), any other whitespace run (newline, tab, several
  spaces) becomes `\\s+`. Matchers fold each whitespace run of their input to one space
  (kverr/pattern.py), so terminal-wrapped or re-indented log lines still match.
- Each placeholder is a named group `v0`, `v1`, ... accepting what Python prints for the value:
  a number-shaped group when the format spec says so (`:.2f`, `:d`), otherwise any text on one
  line, 1..256 characters for a repr (`!r` never prints nothing), 0..256 otherwise. The group is
  lazy when literal words follow (it stops at them) and greedy when only punctuation is left
  (so `got {x!r}.` captures `'1.5'` whole, not `'1`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from kverr import regexsafe
from kverr.errors import SchemaError
from kverr.ftypes import Part, Template

MAX_VALUE = 256  # longest placeholder value a pattern captures
_REGEX_SPECIAL = set("\\.^$*+?()[]{}|")
_NUMBER = r"[-+]?(?:[0-9][0-9_,]{0,30}(?:\.[0-9]{0,20})?(?:[eE][-+]?[0-9]{1,4})?|inf|nan)%?"
_INT = r"[-+]?[0-9][0-9_,]{0,30}"
_HEX = r"[-+]?(?:0[xXoObB])?[0-9a-fA-F]{1,32}"


# ------------------------------------------------------------------ building


def escape_literal(text: str) -> str:
    """Exact text as a regex; whitespace per the module rule (one space literal, runs `\\s+`)."""
    out: list[str] = []
    for chunk in re.split(r"(\s+)", text):
        if not chunk:
            continue
        if chunk.isspace():
            out.append(" " if chunk == " " else r"\s+")
        else:
            out.append("".join("\\" + c if c in _REGEX_SPECIAL else c for c in chunk))
    return "".join(out)


def group_body(part: Part, *, lazy: bool) -> str:
    """Regex for one placeholder's printed value (without the surrounding named group).

    A format spec starting with "%" is printf-style (`%`-formatting, lazy logging arguments):
    `%r` prints a repr, `%d` an integer, `%.2f` a number, `%s` anything.
    """
    spec = (part.format_spec or "").strip()
    conversion = part.conversion
    kind = spec[-1:] if spec else ""
    if spec.startswith("%"):
        if kind in ("r", "a"):
            conversion = kind
        elif kind == "i" or kind == "u":
            kind = "d"
        elif kind == "s":
            kind = ""
    if conversion in (None, "s") and kind in ("e", "E", "f", "F", "g", "G", "%", "n"):
        return _NUMBER
    if conversion in (None, "s") and kind == "d":
        return _INT
    if conversion in (None, "s") and kind in ("x", "X", "o", "b"):
        return _HEX
    low = 1 if conversion in ("r", "a") else 0
    return f".{{{low},{MAX_VALUE}}}" + ("?" if lazy else "")


def _words_follow(parts: Sequence[Part], start: int) -> bool:
    """True when literal text with a letter or digit follows before the next placeholder."""
    for p in parts[start:]:
        if not p.is_literal:
            return True  # another placeholder: stay lazy so the two split the text
        if re.search(r"[A-Za-z0-9]", p.text or ""):
            return True
    return False


MIN_LITERAL = 4  # letters/digits a message needs before a pattern can tell it apart


def pattern_for(template: Template) -> str:
    """The messagePattern of a template.

    "" for an empty template (a message-less assert) and for one whose literal text has fewer
    than MIN_LITERAL letters or digits (`raise ValueError(msg)`, `f"{a}: {b}"`): such a pattern
    would match any line, so those records are found through a traceback frame only.
    """
    literal = "".join(p.text or "" for p in template.parts if p.is_literal)
    if len(re.findall(r"[A-Za-z0-9]", literal)) < MIN_LITERAL:
        return ""
    out: list[str] = []
    index = 0
    parts = template.parts
    for i, part in enumerate(parts):
        if part.is_literal:
            out.append(escape_literal(part.text or ""))
            continue
        body = group_body(part, lazy=_words_follow(parts, i + 1))
        out.append(f"(?P<v{index}>{body})")
        index += 1
    return "".join(out)


def placeholders_of(template: Template) -> list[str]:
    """The expression behind each group v0, v1, ... in order."""
    return [p.expr or "..." for p in template.placeholders]


# ------------------------------------------------------------------ safety check


def check_pattern(pattern: str, *, who: str = "pattern") -> None:
    """Raise SchemaError unless `pattern` is safe (kverr.regexsafe: compiles in `re`, RE2
    syntax, no nested repeats). Used on every built record and on hand-edited datasets."""
    why = regexsafe.problem(pattern) if pattern else None
    if why:
        raise SchemaError(
            f"{who}: messagePattern {pattern[:80]!r} is unsafe because {why}; "
            "rewrite it with bounded groups and plain literals."
        )


# ------------------------------------------------------------------ sample values for tests

_LIST_HINT = re.compile(r"(^|\W)(sorted|list|tuple)\(|CHOICES|_list$|s$")
_NUM_HINT = re.compile(
    r"(size|num|count|len|port|rank|dim|tokens|_tp|_pp|_dp|_ep|steps|topk|bs)\b", re.I
)
_FLOAT_HINT = re.compile(r"(ratio|fraction|frac|mem|threshold|factor|rate|scale)", re.I)
_PATH_HINT = re.compile(r"(path|dir|file|model)", re.I)
_BOOL_HINT = re.compile(r"(^|\.)(is_|enable_|disable_|use_|has_)")


def sample_value(part: Part) -> Any:
    """A realistic Python value for a placeholder, guessed from its expression and format spec."""
    expr = part.expr or ""
    spec = (part.format_spec or "").strip()
    if spec[-1:] in ("e", "E", "f", "F", "g", "G", "%", "n"):
        return 0.875
    if spec[-1:] in ("d", "i", "u", "x", "X", "o", "b"):
        return 48
    if _BOOL_HINT.search(expr):
        return True
    if _FLOAT_HINT.search(expr):
        return 0.88
    if _NUM_HINT.search(expr):
        return 8
    if _LIST_HINT.search(expr):
        return ["flashinfer", "triton"]
    if _PATH_HINT.search(expr):
        return "/models/Llama-3.1-8B-Instruct"
    return "fa3"
