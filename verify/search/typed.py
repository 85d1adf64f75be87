"""A candidate's values for the fields of a JSON option, written as its parser reads them.

A dotted option (`--eplb-config.log_balancedness`, dest `eplb_config.log_balancedness`) puts
one field into a JSON option, its value read as JSON: a switch is `true`, a list is `[1, 2]`,
a choice is one of the field's declared values (verify/sandbox/kinds.py, through the flag
declarations). The candidates (verify/search/candidates.py) know flags, not fields: a field
left to them gets the flag's name in capitals (`LOG_BALANCEDNESS`), which the parser rejects
before any check runs. Here a candidate's values for such fields are made ones the field
takes; every other value stays as the candidate wrote it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from kverr.ftypes import FixChange, FlagDecl, Launch

_NUMBER = re.compile(r"-?\d+(\.\d+)?")
_ENUM_NAME = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*")
# The text a candidate gives a field to reach a check of values it does not declare: the
# parser passes it on as text, the way it passes a user's typo.
TYPO = "other"


def is_field(decl: FlagDecl | None) -> bool:
    """A dotted option: one field of a JSON option (its dest is a path into that option)."""
    return decl is not None and "." in decl.dest


def launch(before: Launch, decls: Mapping[str, FlagDecl]) -> Launch:
    """`before` with each JSON field given a value of its kind, and a JSON option's empty
    object (`--x-config {}`, all a candidate knew to write) left out once a field of the same
    option is set: the fields are the whole option."""
    fielded = {decls[o].dest.partition(".")[0] for o, _ in before.args if is_field(decls.get(o))}
    args = tuple(
        (o, value(decls.get(o), v))
        for o, v in before.args
        if not (v == "{}" and o in decls and decls[o].dest in fielded)
    )
    return before if args == before.args else replace(before, args=args)


def change(c: FixChange, decls: Mapping[str, FlagDecl]) -> FixChange:
    """`c` with each JSON field it sets given a value of its kind."""
    edits = tuple(
        (op, n, value(decls.get(n), v)) if op == "set" else (op, n, v) for op, n, v in c.edits
    )
    return c if edits == c.edits else FixChange(edits, c.source, c.note)


def value(decl: FlagDecl | None, given: Any) -> Any:
    """`given` as the field `decl` takes it: words become a JSON list, a value outside the
    declared ones (a placeholder, a bare flag) the first declared one, a word where a number
    goes 1 (unless it may name an enum member: `VLLM_COMPILE`); a value of the right kind is
    kept, a wrong number too (the check may be about it: `-1` for a count)."""
    if not is_field(decl):
        return given
    assert decl is not None
    kind, choices = decl.type or "", decl.choices or ()
    words = given if isinstance(given, tuple) else (given,)
    text = " ".join(w for w in words if w is not None)
    if kind.startswith("list["):
        if text.startswith("["):
            return text
        item = list_item(kind)  # (`list[float] | None`: float)
        items = [w for w in words if w is not None and w != ""]
        if item in ("int", "float"):
            return json.dumps([_number(w) for w in items] or [1])
        return json.dumps(items)
    if kind == "json":
        return text if text.startswith(("{", "[")) else "{}"
    named = _ENUM_NAME.fullmatch(text) and text != decl.dest.rpartition(".")[2].upper()
    if kind in ("int", "float") and (text == TYPO or named):
        # A number field may be an enum a validator takes by name (`VLLM_COMPILE`, not the
        # placeholder MODE), and is given "other", meant to be no value it takes
        # (candidates.py), to reach that validator.
        return given
    if choices:  # (a field of declared words refuses any other before a check runs)
        return text if text in choices else choices[0]
    if kind.partition(" |")[0] == "bool":  # a switch the class declares (`bool | None`)
        return text if text in ("true", "false") else "true"
    if kind in ("int", "float"):
        return text if _NUMBER.fullmatch(text) else "1"
    return given


def list_item(kind: str | None) -> str | None:
    """The item type of a list annotation, as a value is written: "list[float] | None" ->
    "float", "list[int | str]" -> "str" (a word is an item too); None for no list."""
    m = re.match(r"list\[([^\]]+)\]", kind or "")
    if not m:
        return None
    parts = [p.strip() for p in m.group(1).split("|")]
    return "str" if "str" in parts else parts[0]


def _number(word: str) -> int | float:
    if _NUMBER.fullmatch(word):
        return float(word) if "." in word else int(word)
    return 1
