"""What the fix search tells the child's solver about each launch option (its flag, whether
it is a switch, its choices, default, known values and sample value), from the flag
declarations the revision's own parser reported. A field decides which values the solver
tries for an attribute (sandbox/solve.py), so its table is part of the run cache key (step.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from kverr.extractor.pysource import literal
from kverr.records.knowledge.facts import help_examples, is_json, sample_value
from kverr.verify.search import candidates, values
from kverr.verify.search.typed import list_item

from kverr.ftypes import FlagDecl


def fields_of(
    decls: Mapping[str, FlagDecl],
    assigned: Mapping[str, list[Any] | None] | None = None,
    compared: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, dict[str, Any]]:
    """attribute -> what the child's solver needs about the option that sets it; `assigned`:
    attribute -> the literal values the validation code assigns it (None: some other value;
    reading.assigned_values), so that the solver can tell when it has tried every value;
    `compared`: attribute -> the strings the code compares it with (values.compared_values)."""
    out: dict[str, dict[str, Any]] = {}
    assigned = assigned or {}
    compared = compared or {}
    decls = decls if isinstance(decls, dict) else dict(decls)
    for name, d in decls.items():
        out.setdefault(
            d.dest,
            {
                # A free-text option's known values and a sample value: the only words the
                # solver tries for it (never the words the code compares other options with).
                **_known(name, d, assigned.get(d.dest), compared.get(d.dest, ()), decls),
                "flag": name,
                "switch": candidates.is_switch(name, dict(decls)),
                "choices": _typed(d.choices or (), d.type),
                "assigned": assigned.get(d.dest, []),
                # the value when the option is left out ([] when not plain data)
                "default": _literal_default(d.default),
                "list": (d.type or "").startswith("list["),
                "int": "int" in (d.type or "") and not (d.type or "").startswith("list["),
                "float": "float" in (d.type or "") and not (d.type or "").startswith("list["),
                "json": is_json(d),  # JSON text: the solver tries objects
                # a list's items: "list[int] | None" -> "int" (numbers to try, not words)
                "item": list_item(d.type),
                # numbers a deployment uses (verify/search/values.py): what a fix tries first
                "typical": values.typical_numbers(d.help, assigned.get(d.dest)),
            },
        )
    return out


def _known(
    name: str,
    d: FlagDecl,
    assigned: Sequence[Any] | None,
    compared: Sequence[str],
    decls: dict[str, FlagDecl],
) -> dict[str, Any]:
    """{"values", "sample"} of an option without choices (see verify/search/values.py): its help
    text's examples first (what `--help` tells a user to type), then the strings the code
    compares it with, the strings the validation code assigns it, its default."""
    if d.choices:
        return {}
    default = _literal_default(d.default)
    found = [
        *help_examples(d.help),
        *compared,
        *(v for v in assigned or () if type(v) is str),
        *(v for v in default if type(v) is str),
    ]
    return {
        "values": [v for v in dict.fromkeys(found) if v],
        "sample": sample_value(name, decls),
    }


def _literal_default(text: str | None) -> list[Any]:
    """[the default] when it is plain data, [] when it is not known."""
    if text is None:
        return [None]
    value = literal(text)
    return [value] if type(value) in (str, int, float, bool) or value is None else []


def _typed(choices: Sequence[str], kind: str | None) -> list[Any]:
    """Choices as the parsed attribute holds them: numbers for an int option (`choices=[16,
    32]` arrive here as text)."""
    if kind == "int" and all(re.fullmatch(r"-?\d+", c) for c in choices):
        return [int(c) for c in choices]
    if kind == "bool" and set(choices) <= {"true", "false"}:
        return [c == "true" for c in choices]  # a JSON field's switch: `--x.flag true`
    return list(choices)
