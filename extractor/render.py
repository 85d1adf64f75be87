"""Render a template with concrete values, exactly as the program would print the message."""

from __future__ import annotations

from collections.abc import Mapping

from kverr.ftypes import Template

_CONVERT = {"r": repr, "s": str, "a": ascii}


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
        if spec.startswith("%"):
            out.append(spec % (value,))
            continue
        if part.conversion:
            value = _CONVERT[part.conversion](value)
        out.append(format(value, spec))
    return "".join(out)
