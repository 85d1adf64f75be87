"""A message template's placeholders as a record's text writes them: `{expr}` in errorMessage
and in the prose that names the same values, read one way by every stage and medium; and the
statement line a record stands for when it prints no message.

A placeholder may carry the conversion and format spec its source gave it (`{value!r}`,
`{ratio:.2f}`): argparse records print their values that way.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

_TAIL = r"(?:![rsa])?(?::[^{}]*)?\}"  # what may follow the expression inside the braces
# `{...}` in text whose placeholders are not at hand: on one line, 1..200 characters
ANY = re.compile(r"\{([^{}\n]{1,200})\}")
# a placeholder shaped as source names a value (`{self.x}`, `{d["k"]!r}`), not JSON in braces
NAMED = re.compile(r"\{[A-Za-z_][\w.]*(?:\[[^\]]*\])?" + _TAIL)


def _of(expr: str) -> re.Pattern[str]:
    return re.compile(r"\{" + re.escape(expr) + _TAIL)


def spans(message: str, placeholders: Sequence[str]) -> list[tuple[str, str | None]]:
    """The message as (text, placeholder expr or None) runs, the placeholders in their order."""
    out: list[tuple[str, str | None]] = []
    pos = 0
    for expr in placeholders:
        found = _of(expr).search(message, pos)
        if not found:
            continue
        if found.start() > pos:
            out.append((message[pos : found.start()], None))
        out.append((found.group(), expr))
        pos = found.end()
    if pos < len(message):
        out.append((message[pos:], None))
    return out


def fill(
    text: str,
    placeholders: Sequence[str],
    values: Mapping[str, str],
    show: Callable[[str, str], str] | None = None,
) -> str:
    """`text` with every placeholder `values` holds replaced, wherever it stands, by the value
    without its own quotes (`'lpm'` printed by a `!r`), or by `show(expr, that value)`; a
    placeholder without a value stays as written."""
    for expr in placeholders:
        value = values.get(expr)
        if value is None:
            continue
        bare = value[1:-1] if len(value) > 1 and value[0] == value[-1] in "'\"" else value
        new = show(expr, bare) if show else bare
        text = _of(expr).sub(lambda _, new=new: new, text)
    return text


def fold(text: str, show: Callable[[str], str]) -> str:
    """`text` (prose, or a message whose placeholders are not at hand) with each `{...}` it
    holds replaced by `show(what the braces hold)`."""
    return ANY.sub(lambda m: show(m.group(1)), text)


def source_line(rec: Mapping[str, Any]) -> str:
    """The statement's first source line, stripped, as the record's sourceCode window holds it
    (what a traceback frame prints)."""
    lines = (rec.get("sourceCode") or "").splitlines()
    i = (rec.get("lineNumber") or 0) - (rec.get("sourceCodeStart") or 0)
    return lines[i].strip() if 0 <= i < len(lines) else ""
