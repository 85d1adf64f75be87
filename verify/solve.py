"""Values that make a guard come out the way the search needs (runs in the child).

When the run reaches a watched guard, the child evaluates it where the code does. If the
search asked for another truth value, the guard is evaluated again on copies of the args
object with some launch options' attributes replaced, one option at a time, then two; the
first assignments that give the wanted value go back as candidate changes (`--tp-size 2
--moe-dp-size 2`, `--page-size 64`). The revision's own state is used throughout (values set by
earlier steps, FLA_CHUNK_SIZE, locals), and the harness still runs every candidate: nothing
found here is trusted by itself.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from kverr.verify import stubs

_NUMBERS = (1, 2, 4, 8, 3, 16, 32, 64, 0, -1)
MAX_FOUND = 4
MAX_TRIES = 1500  # evaluations per guard: a bound on time whatever the domains


def solve(
    tree: ast.Expression,
    scope: dict[str, Any],
    want: bool,
    fields: Mapping[str, dict[str, Any]],
    extra: Sequence[str] = (),
    words: Sequence[str] = (),
    near: bool = False,
) -> list[list[list[Any]]]:
    """Assignments [[option, value], ...] under which the guard evaluates to `want`.

    scope: the frame's globals and locals (with `self`); fields: attribute -> {"flag",
    "switch", "choices", "int"} for the attributes a launch option sets."""
    obj = scope.get("self")
    if obj is None or not hasattr(obj, "__dict__"):
        return []
    found_attrs = [*_self_attrs(tree), *extra]  # extra: what methods the guard calls read
    variables = [a for a in dict.fromkeys(found_attrs) if a in fields and hasattr(obj, a)]
    constants = _constants(tree, scope, obj)
    strings = list(dict.fromkeys([*_strings(tree), *words]))  # words: the function's own
    domains = {a: _domain(getattr(obj, a), fields[a], constants, strings, near) for a in variables}
    code = compile(tree, "<guard>", "eval")
    found: list[list[list[Any]]] = []
    tries = 0
    for size in (1, 2):
        for combo in itertools.combinations(variables, size):
            for values in itertools.product(*(domains[a] for a in combo)):
                tries += 1
                if tries > MAX_TRIES:
                    return found
                if _value(code, scope, obj, dict(zip(combo, values, strict=True))) is want:
                    found.append(
                        [[fields[a]["flag"], v] for a, v in zip(combo, values, strict=True)]
                    )
                    if len(found) >= MAX_FOUND:
                        return found
        if found:
            return found  # changing one option beats changing two
    return found


def _self_attrs(tree: ast.AST) -> list[str]:
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self":
            out.append(n.attr)
    return list(dict.fromkeys(out))


def _constants(tree: ast.AST, scope: dict[str, Any], obj: Any) -> list[int]:
    """Numbers the guard mentions or reads: literals, module constants (FLA_CHUNK_SIZE),
    other attributes' values."""
    out: list[int] = []
    for n in ast.walk(tree):
        value: Any = None
        if isinstance(n, ast.Constant):
            value = n.value
        elif isinstance(n, ast.Name):
            value = scope.get(n.id)
        elif (
            isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self"
        ):
            value = obj.__dict__.get(n.attr)
        if type(value) is int:
            out.append(value)
    return out


def _numbers(current: Any, constants: list[int]) -> list[int]:
    """The numbers the guard itself names first (the other side of a comparison, a constant
    such as FLA_CHUNK_SIZE), then the nearest to the current value; positive before zero and
    negative, which are rarely what a user means."""
    here = current if type(current) is int else 1
    named = [c for c in dict.fromkeys(constants) if c > 0 and c != current]
    rest = [*_NUMBERS, *(c * 2 for c in constants if c > 0)]
    rest = sorted(dict.fromkeys(v for v in rest if v not in named and v != current),
                  key=lambda v: (v <= 0, abs(v - here), v))  # fmt: skip
    return named + rest


def _strings(tree: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and type(n.value) is str]


def _domain(
    current: Any,
    field: Mapping[str, Any],
    constants: list[int],
    strings: list[str],
    near: bool = False,
) -> list[Any]:
    """Values worth trying for one attribute: the other truth value of a switch, the other
    choices, a few numbers around the guard's own (ints and floats), the guard's strings and
    a name containing each (`":" not in name` wants "name:x")."""
    if field.get("switch"):
        return [not current] if type(current) is bool else [True, False]
    if field.get("list"):
        return _lists(current, strings, near)
    if field.get("choices"):
        return [c for c in field["choices"] if c != current]
    if field.get("int") or type(current) is int:
        return _numbers(current, constants)
    if type(current) is float or field.get("float"):
        values = [0.5, 1.0, 0.0, 2.0, -1.0, 0.25, *map(float, constants)]
        return [v for v in dict.fromkeys(values) if v != current]
    if current is None or type(current) is str:
        # "" is how a command line empties a string option that has a default; None leaves
        # the option out (tried as a removal, last).
        values = [*strings, *(f"x{s}x" for s in strings if s), "x", "", None]
        return [v for v in dict.fromkeys(values) if v != current]
    return []


_WORDS = ("1", "2", "0", "-1", "0.5", "x")


def _lists(current: Any, strings: list[str], near: bool = False) -> list[list[str]]:
    """Lists one edit away from the current one (an item replaced, added or dropped), and
    fresh ones that start with a word the guard tests (`["tse", "1", "2", "3"]`); with
    `near` (a fix, not a way in) the one-edit ones first."""
    base = [str(v) for v in current] if isinstance(current, (list, tuple)) else []
    words = [*strings, *_WORDS]
    edits: list[list[str]] = []
    for i in range(len(base)):
        edits += [[*base[:i], w, *base[i + 1 :]] for w in words]
    edits += [[*base, w] for w in words]
    if base:
        edits.append(base[:-1])
    out: list[list[str]] = [*edits] if near else []
    out.append([])
    # Shortest first across words: a guard that wants "not tse" tries every other word before
    # longer lists of one word, so two chained guards settle in a step or two.
    out += [[s] for s in strings]
    out += [[s, "1"] for s in strings]
    out += [[s, "1", "2", "3"] for s in strings]
    if not near:
        out += edits
    unique: dict[tuple[str, ...], list[str]] = {}
    for v in out:
        if v != base:
            unique.setdefault(tuple(v), v)
    return list(unique.values())


def _value(code: Any, scope: dict[str, Any], obj: Any, changed: dict[str, Any]) -> bool | None:
    """The guard with some attributes changed in place, then put back (cheaper than a copy
    of an object with hundreds of fields, and methods of the object see the change)."""
    saved = {attr: obj.__dict__[attr] for attr in changed if attr in obj.__dict__}
    noted = len(stubs.NOTES)
    try:
        obj.__dict__.update(changed)
        return bool(eval(code, scope))  # noqa: S307 - the revision's guard, in the sandbox
    except BaseException:  # noqa: BLE001 - an assignment the guard cannot take offers nothing
        return None
    finally:
        for attr in changed:
            obj.__dict__.pop(attr, None)
        obj.__dict__.update(saved)
        del stubs.NOTES[noted:]
