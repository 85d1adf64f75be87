"""Render a template with concrete values, exactly as the program would print the message."""

from __future__ import annotations

import re
from collections.abc import Mapping

from kverr.ftypes import Template

_CONVERT = {"r": repr, "s": str, "a": ascii}
MAX_WIDTH = 4096  # a format spec's width or precision: `{x:>999999999}` would be a gigabyte
_NUMBER = re.compile(r"[0-9]+")


def too_wide(spec: str) -> bool:
    """Whether a format spec (`>10`, `%08.3f`) asks for more than MAX_WIDTH characters."""
    return any(len(n) > 4 or int(n) > MAX_WIDTH for n in _NUMBER.findall(spec))


def render(template: Template, values: Mapping[str, object]) -> str:
    """`values` maps each placeholder's `expr` to the runtime value. A format spec starting
    with "%" is a printf-style conversion from `%`-formatting or lazy logging arguments."""
    out: list[str] = []
    for part in template.parts:
        if part.is_literal:
            out.append(part.text or "")
            continue
        value = values[part.expr or ""]
        spec = part.format_spec or ""
        if too_wide(spec):  # the value unpadded, rather than a gigabyte of padding
            spec = ""
        if spec.startswith("%"):
            out.append(spec % (value,))
            continue
        if part.conversion:
            value = _CONVERT[part.conversion](value)
        out.append(format(value, spec))
    return "".join(out)
