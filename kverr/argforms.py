"""What an argparse declaration lets the parser print, read from its facts (a flag history line,
docs/CONTRACTS.md "Dataset directory": choices, type, action, nargs, options). Shared by the
build's argparse records and the catalog's answers; stdlib only (it is on the explain path)."""

from __future__ import annotations

import re
from collections.abc import Hashable, Mapping
from typing import Any

FORMS = ("invalid-choice", "invalid-value", "expected-argument", "unrecognized")
_NO_VALUE = {"store_true", "store_false", "store_const", "append_const", "count", "help", "version"}
_CONVERSION = re.compile(r"(?:[A-Za-z_]\w*\.)*([a-z_][a-z0-9_]*)")
# conversions that accept any text (optional_str: a helper of older vLLM releases that maps ""
# and "None" to None and returns any other text)
_NEVER_FAILS = {"str", "bool", "nullable_str", "optional_str"}


def literal_default(default: str | None) -> str | None:
    """A default that can be written on a command line as it is (`1`, `0.9`, `'auto'`)."""
    text = (default or "").strip()
    if re.fullmatch(r"-?\d+(?:\.\d+)?", text):
        return text
    if re.fullmatch(r"'[\w.-]{1,40}'|\"[\w.-]{1,40}\"", text):
        return text[1:-1]
    return None


def takes_value(f: dict[str, Any]) -> bool:
    """The option is followed by a value (its action stores what follows it); a custom Action
    is left out: its arity is its own business."""
    return bool(f.get("options")) and f.get("action") in (None, "store", "append", "extend")


def is_switch(f: dict[str, Any]) -> bool:
    action = f.get("action") or ""
    return action in _NO_VALUE or action.endswith("BooleanOptionalAction")


def expected_count(f: dict[str, Any]) -> str | None:
    """What argparse says the option expects when no value follows it ("one", "at least one",
    "2"), or None when it never says so (an optional value, a switch)."""
    if not takes_value(f):
        return None
    nargs = f.get("nargs")
    if nargs is None:
        return "one"
    if nargs == "+":
        return "at least one"
    return nargs if nargs.isdigit() and int(nargs) > 0 else None


def conversion(f: dict[str, Any]) -> str | None:
    """What the option's type converts a value to: the callable's __name__ (`json.loads` ->
    loads), the one a project's helper wraps (`optional_type(int)` -> int), or None when no
    conversion can fail: no type, str, or a class name (an annotation, not a function argparse
    calls)."""
    text = f.get("type") or ""
    while "(" in text and text.endswith(")"):  # `optional_type(parse_type(json.loads))`
        text = text[text.index("(") + 1 : -1]
    m = _CONVERSION.fullmatch(text)
    if not m or not takes_value(f) or m.group(1) in _NEVER_FAILS:
        return None
    if "invalid" in f and not f["invalid"]:
        return None  # the revision's own helpers refuse no value
    return m.group(1)


def applies(form: str, f: dict[str, Any]) -> bool:
    """Whether a declaration can make argparse print `form` about its option
    (`unrecognized` is about the option's absence, decided over the revisions)."""
    if form == "invalid-choice":
        return takes_value(f) and bool(f.get("choices"))
    if form == "invalid-value":  # `invalid`: what the revision's parser prints (build time)
        return (
            bool(f["invalid"]) and takes_value(f) if "invalid" in f else conversion(f) is not None
        )
    if form == "expected-argument":
        return expected_count(f) is not None
    return False


def accepted_options(f: dict[str, Any]) -> list[str]:
    """Every option string argparse accepts for the declaration (`--no-x` too for a
    BooleanOptionalAction)."""
    opts = list(f.get("options") or ())
    if (f.get("action") or "").endswith("BooleanOptionalAction"):
        opts += ["--no-" + o[2:] for o in opts if o.startswith("--")]
    return opts


def abbreviated(typed: str, owners: Mapping[str, Hashable]) -> str | None:
    """The option string `typed` names as argparse reads it with allow_abbrev, which both
    projects' parsers keep on: itself when declared, else the one whose option it starts
    (`--tp` for `--tp-size`); None when it starts none, or the strings of several options.
    `owners`: each option string -> its option (the strings of one option share it)."""
    if typed in owners:
        return typed
    if not typed.startswith("--"):
        return None
    found = [s for s in owners if s.startswith(typed)]
    return found[0] if len({owners[s] for s in found}) == 1 else None
