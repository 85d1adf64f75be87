"""The strings a guard compares `self.<attr>` with, looks for in it, splits it by: the solver's
candidates in the child (solve.py), and what verify/search/values.py counts. Pure stdlib `ast`."""

from __future__ import annotations

import ast
import re

from kverr.verify.sandbox.steps import self_attr

_PREFIX_METHODS = frozenset({"startswith", "endswith"})


def _attrs(node: ast.AST) -> set[str]:
    """The `self.<attr>` a node reads (itself, or inside it: `self.device.lower()`)."""
    return {a for n in ast.walk(node) if (a := self_attr(n))}


def strings(node: ast.AST) -> list[str]:
    """The string constants a comparison's other side holds: "npu", ("cuda", "xpu")."""
    if isinstance(node, ast.Constant) and type(node.value) is str:
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant) and type(e.value) is str]
    return []


def comparisons(tree: ast.AST) -> list[tuple[str, str, bool]]:
    """(attribute, string, fragment) for each string `tree` compares a `self.<attribute>` with:
    as a whole value (`==`, `!=`, `in`/`not in` a literal collection, `startswith`,
    `endswith`; fragment False) or as a part looked for inside it (`":" in self.x`; True)."""
    out: list[tuple[str, str, bool]] = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Compare):
            operands = [n.left, *n.comparators]
            for a, b, op in zip(operands, operands[1:], n.ops, strict=False):
                left, right = strings(a), strings(b)
                if not (left or right):
                    continue
                if isinstance(op, (ast.In, ast.NotIn)) and left:
                    out += [(attr, s, True) for attr in _attrs(b) for s in left]
                    continue
                out += [(attr, s, False) for attr in _attrs(a) for s in right]
                out += [(attr, s, False) for attr in _attrs(b) for s in left]
        elif (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr in _PREFIX_METHODS
            and n.args
        ):
            found = strings(n.args[0])
            out += [(attr, s, False) for attr in _attrs(n.func.value) for s in found]
    return out


def separators(tree: ast.AST, attr: str) -> list[str]:
    """The separators `tree` splits `self.<attr>` by (`self.x.split(",")`): its value is a
    list written as one word."""
    return list(
        dict.fromkeys(
            n.args[0].value
            for n in ast.walk(tree)
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "split"
            and n.args
            and isinstance(n.args[0], ast.Constant)
            and type(n.args[0].value) is str
            and n.args[0].value
            and attr in _attrs(n.func.value)
        )
    )


def listed(known: list[str], sep: str) -> list[str]:
    """Words for an option read as a `sep`-separated list, from its known values: the items
    alone, an item twice (`mlx5_0,mlx5_0`), and one more item of the same form that is none of
    them (`mlx5_9`: a name that is not there)."""
    items = list(dict.fromkeys(i.strip() for v in known for i in v.split(sep) if i.strip()))
    if not items:
        return []
    first = items[0]
    other = re.sub(r"\d+$", lambda m: "9" * len(m.group(0)), first)
    if other in items or other == first:
        other = first + "_9"
    return [*items, sep.join([first, first]), other]


def compared_in(tree: ast.AST, attr: str) -> tuple[list[str], list[str]]:
    """(values, fragments) of `comparisons` for one attribute, each once, in order."""
    found = comparisons(tree)
    values = [s for a, s, frag in found if a == attr and not frag]
    fragments = [s for a, s, frag in found if a == attr and frag]
    return list(dict.fromkeys(values)), list(dict.fromkeys(fragments))


def others_words(tree: ast.AST, attr: str) -> set[str]:
    """The strings `tree` compares other attributes than `attr` with, and `attr` never."""
    found = comparisons(tree)
    return {s for a, s, _ in found if a != attr} - {s for a, s, _ in found if a == attr}
