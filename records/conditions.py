"""Guard conditions read as flag facts: `cfg.enable_hisparse` holding -> "--enable-hisparse is set".

The knowledge fields (trigger, fix, solutions, validationCode) all start from the same reading
of a site's guards, done here once with the stdlib `ast` (guard tests are short expressions).
An attribute read counts as a flag when the extractor listed that flag for the guard or the
site; its receiver does not matter (`self.x`, `cfg.x`, `resolved_view(server_args).x`).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kverr.ftypes import Guard, Site

_NEGATE = {
    "set": "unset", "unset": "set", "==": "!=", "!=": "==", "in": "not in", "not in": "in",
    ">": "<=", "<=": ">", ">=": "<", "<": ">=", "is None": "is not None", "is not None": "is None",
}  # fmt: skip
_CMP = {
    ast.Eq: "==", ast.NotEq: "!=", ast.In: "in", ast.NotIn: "not in", ast.Gt: ">",
    ast.GtE: ">=", ast.Lt: "<", ast.LtE: "<=",
}  # fmt: skip
_FLIP = {">": "<", "<": ">", ">=": "<=", "<=": ">=", "==": "==", "!=": "!="}
POSITIVE_OPS = ("set", "==", "in", "is not None")
_NO_VALUE = object()


@dataclass(frozen=True)
class Atom:
    """One fact that holds on the path to a site."""

    flag: str | None  # "--enable-hisparse"; None for a condition that is not about one flag
    op: str  # set | unset | == | != | in | not in | > | >= | < | <= | is None | is not None | expr
    value: Any = None  # literal compared with (a tuple for in / not in)
    text: str = ""  # op == "expr": the source of the condition; holds says which way
    holds: bool = True
    flags: tuple[str, ...] = ()  # flags an "expr" atom reads

    @property
    def positive(self) -> bool:
        return self.flag is not None and self.op in POSITIVE_OPS

    def negated(self) -> Atom:
        if self.op == "expr":
            return Atom(None, "expr", text=self.text, holds=not self.holds, flags=self.flags)
        return Atom(self.flag, _NEGATE[self.op], self.value)


@dataclass(frozen=True)
class Reading:
    """A guard (or an assert's own test) read as atoms."""

    guard: Guard
    atoms: tuple[Atom, ...]
    role: str  # "direct" | "enclosing" | "gate" (an early exit before the site)


def dest_of(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


def flag_attrs(flags: tuple[str, ...]) -> dict[str, str]:
    """attribute name -> flag, for the flags the extractor saw."""
    return {dest_of(f): f for f in flags}


def parse(test: str) -> ast.expr | None:
    try:
        return ast.parse(test.strip(), mode="eval").body
    except SyntaxError:
        return None


def atoms_of(test: str, holds: bool, attrs: dict[str, str]) -> tuple[Atom, ...]:
    node = parse(test)
    if node is None:
        return (Atom(None, "expr", text=test, holds=holds),)
    return tuple(_atoms(node, holds, attrs))


def _atoms(node: ast.expr, holds: bool, attrs: dict[str, str]) -> list[Atom]:
    if isinstance(node, ast.Constant):
        return []  # `if False:` / a resolved constant says nothing about the launch
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return _atoms(node.operand, not holds, attrs)
    if isinstance(node, ast.BoolOp):
        # A conjunction that holds (or a disjunction that fails) splits into independent facts.
        if isinstance(node.op, ast.And) == holds:
            return [a for v in node.values for a in _atoms(v, holds, attrs)]
        return [_opaque(node, holds, attrs)]
    flag = _flag_of(node, attrs)
    if flag:
        return [Atom(flag, "set" if holds else "unset")]
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        atom = _compare(node.left, node.ops[0], node.comparators[0], attrs)
        if atom is not None:
            return [atom if holds else atom.negated()]
    return [_opaque(node, holds, attrs)]


def _compare(left: ast.expr, op: ast.cmpop, right: ast.expr, attrs: dict[str, str]) -> Atom | None:
    if isinstance(op, (ast.Is, ast.IsNot)):
        flag = _flag_of(left, attrs)
        if flag and isinstance(right, ast.Constant) and right.value is None:
            return Atom(flag, "is None" if isinstance(op, ast.Is) else "is not None")
        return None
    name = _CMP.get(type(op))
    if name is None:
        return None
    flag, value = _flag_of(left, attrs), _literal(right)
    if flag is None and name in _FLIP:  # `1 < cfg.x` reads as `cfg.x > 1`
        flag, value, name = _flag_of(right, attrs), _literal(left), _FLIP[name]
    if flag is None or value is _NO_VALUE:
        return None
    if name in ("in", "not in"):
        if not isinstance(value, (tuple, list, set, frozenset)):
            return None
        value = (
            tuple(sorted(value, key=repr)) if isinstance(value, (set, frozenset)) else tuple(value)
        )
    return Atom(flag, name, value)


def _flag_of(node: ast.expr, attrs: dict[str, str]) -> str | None:
    if isinstance(node, ast.Attribute) and node.attr in attrs:
        return attrs[node.attr]
    return None


def _literal(node: ast.expr) -> Any:
    """The literal a flag is compared with, made hashable (atoms are deduplicated as keys)."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return _NO_VALUE
    if isinstance(value, list):
        value = tuple(value)
    try:
        hash(value)
    except TypeError:
        return _NO_VALUE
    return value


def _opaque(node: ast.expr, holds: bool, attrs: dict[str, str]) -> Atom:
    seen = [
        attrs[n.attr] for n in ast.walk(node) if isinstance(n, ast.Attribute) and n.attr in attrs
    ]
    text = ast.unparse(_AsFlags(attrs).visit(node))
    return Atom(None, "expr", text=text, holds=holds, flags=tuple(dict.fromkeys(seen)))


class _AsFlags(ast.NodeTransformer):
    """Show a flag read as the flag itself: `resolved_view(server_args).x_y` -> `--x-y`."""

    def __init__(self, attrs: dict[str, str]) -> None:
        self.attrs = attrs

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if node.attr in self.attrs:
            return ast.Name(id=self.attrs[node.attr], ctx=ast.Load())
        return self.generic_visit(node)


# ------------------------------------------------------------------ the site's path


def earlier_checks(site: Site, siblings: Sequence[Site]) -> tuple[Guard, ...]:
    """Checks that must have passed for control to reach `site`, read off the sites before it.

    An earlier `if <test>: raise ...` on the same path (its other guards are a prefix of
    ours) means `<test>` was false here; an earlier `assert <cond>` means `<cond>` held. The
    extractor reports only `return`-style early exits as guards, so these come from siblings.
    """
    own = {(g.test, g.holds) for g in site.guards}
    out: dict[tuple[str, bool], Guard] = {}
    for t in siblings:
        if t.file != site.file or t.function != site.function or t.line >= site.line:
            continue
        theirs = tuple(g for g in t.guards if g.kind != "assert")
        if t.kind == "assert" and t.condition and _is_prefix(theirs, site.guards):
            flags = tuple(f for g in t.guards if g.kind == "assert" for f in g.flags)
            g = Guard(test=t.condition, holds=True, kind="passed", line=t.line, flags=flags)
        elif t.kind in ("raise", "exit") and theirs and theirs[-1].kind in ("if", "elif"):
            d = theirs[-1]
            if not d.holds or (d.test, True) in own or not _is_prefix(theirs[:-1], site.guards):
                continue
            g = Guard(test=d.test, holds=False, kind="passed", line=d.line, flags=tuple(d.flags))
        else:
            continue
        if (g.test, g.holds) not in own:
            out.setdefault((g.test, g.holds), g)
    return tuple(out.values())


def _is_prefix(short: Sequence[Guard], long: Sequence[Guard]) -> bool:
    key = lambda g: (g.test, g.holds, g.kind)  # noqa: E731
    return len(short) <= len(long) and [key(g) for g in short] == [
        key(g) for g in long[: len(short)]
    ]


def readings(site: Site, passed: Sequence[Guard] = ()) -> list[Reading]:
    """Every guard on the path to the site as atoms, outermost first, the direct one last.

    The direct condition is an assert's own test (it failed), else the innermost enclosing
    if/elif/else/while/match. Early exits before the site (`if not x: return`, earlier
    `if y: raise`) are gates: checks the launch has already passed.
    """
    own = [g for g in site.guards if g.kind != "assert"]
    if site.kind == "assert" and site.condition:
        # The extractor lists an assert's own test last (kind "assert", holds False); take it
        # from `condition` so a hand-built Site reads the same.
        direct = Guard(test=site.condition, holds=False, kind="assert", line=site.line)
        flags = tuple(f for g in site.guards if g.kind == "assert" for f in g.flags)
        direct = Guard(direct.test, False, "assert", site.line, flags)
    else:
        direct = None
    all_guards = sorted((*own, *passed), key=lambda g: g.line)
    names = list(site.flags) + [f for g in all_guards for f in g.flags]
    attrs = flag_attrs(tuple(dict.fromkeys(names + list(direct.flags if direct else ()))))
    out: list[Reading] = []
    for g in all_guards:
        role = "gate" if g.kind in ("early-exit", "try", "passed") else "enclosing"
        out.append(Reading(g, atoms_of(g.test, g.holds, attrs), role))
    if direct is not None:
        out.append(Reading(direct, atoms_of(direct.test, False, attrs), "direct"))
    else:
        for i in range(len(out) - 1, -1, -1):
            if out[i].role == "enclosing":
                out[i] = Reading(out[i].guard, out[i].atoms, "direct")
                break
    return out


# ------------------------------------------------------------------ rendering


def show_value(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, tuple):  # list literals were made tuples only to be hashable
        return "[" + ", ".join(repr(v) for v in value) + "]"
    return repr(value)


def cli_arg(
    flag: str, op: str, value: Any = None, *, choices: tuple[str, ...] | None = None
) -> str | None:
    """The command-line fragment that makes `flag op value` true, or None when unknown."""
    if op == "set":
        return flag
    if op in ("==", "in"):
        v = value[0] if op == "in" else value
        if v is True:
            return flag
        if v is False or v is None:
            return None
        return f"{flag}={show_value(v)}"
    if (
        op in (">", ">=", "<", "<=")
        and isinstance(value, (int, float))
        and not isinstance(value, bool)
    ):
        step = {">": 1, ">=": 0, "<": -1, "<=": 0}[op]
        return f"{flag}={show_value(value + step)}"
    if op == "is not None":
        return f"{flag}={choices[0]}" if choices else f"{flag}=<value>"
    if op in ("!=", "not in") and choices:
        banned = value if op == "not in" else (value,)
        for c in choices:
            if c not in {show_value(b) for b in banned}:
                return f"{flag}={c}"
    return None


def phrase(atom: Atom) -> str:
    """Plain words for an atom: `--x=1`, `--x set to a or b`, `` `expr` is false ``."""
    if atom.flag is None:
        text = atom.text if len(atom.text) <= 100 else atom.text[:97] + "..."
        return f"`{text}` is {'true' if atom.holds else 'false'}"
    f, v = atom.flag, atom.value
    if atom.op == "set":
        return f
    if atom.op == "unset":
        return f"{f} off"
    if atom.op == "==":
        return f if v is True else f"{f}={show_value(v)}"
    if atom.op == "!=":
        return f"{f} other than {show_value(v)}"
    if atom.op == "in":
        return f"{f}={show_value(v[0])}" if len(v) == 1 else f"{f} set to {_or(v)}"
    if atom.op == "not in":
        return f"{f} not {_or(v)}"
    if atom.op == "is None":
        return f"{f} unset"
    if atom.op == "is not None":
        return f"{f} set"
    return f"{f} {atom.op} {show_value(v)}"


def _or(values: tuple) -> str:
    shown = [show_value(v) for v in values]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " or " + shown[-1]


def join_words(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]
