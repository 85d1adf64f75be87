"""What a flag class's phases assign before a check: `__post_init__` calls `_handle_*` methods
one after another, and a field one of them sets (`if self.dp_size == 1: self.enable_dp_lm_head =
False`) is what every later check reads. Reads the file with the stdlib parser, once per text.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache

from kverr.ftypes import Assignment

# An if statement's lines and those of the branch a statement sits in
_Branch = tuple[int, int, int, int]
# One entry per assignment: (when it runs, the early returns it follows as (method, what lets
# the launch go on), the branches it sits in, what it is)
_Entry = tuple[tuple[int, ...], tuple[tuple[str, str], ...], tuple[_Branch, ...], Assignment]


def assignments_before(
    text: str, function: str | None, line: int, entries: Sequence[str]
) -> tuple[Assignment, ...]:
    """The `self.<field> = ...` statements that run before line `line` of method `function`
    ("Cls.method") when a launch runs the class's phase `entries` in order, oldest first.
    Empty when the method is not reached from an entry (or the file does not parse)."""
    if not function or not entries or "." not in function:
        return ()
    cls, _, method = function.rpartition(".")
    keys, table = _phases(text, tuple(entries)).get(cls, ({}, ()))
    key = keys.get(method)
    if key is None:
        return ()
    at = (*key, line)
    chain = {name for name, k in keys.items() if at[: len(k)] == k}
    out = []
    for when, exits, branches, a in table:
        if when >= at:
            break
        if a.function == function and any(
            start <= line <= end and not first <= line <= last
            for start, end, first, last in branches
        ):
            continue  # another branch of an if the site is in: it never runs before the site
        # An early return the site's own call chain passed stopped the site too; one of a
        # method that ran before leaves what follows it to the launches it did not stop.
        stops = [cond for method, cond in exits if method not in chain]
        out.append(replace(a, past=tuple(stops)) if stops else a)
    return tuple(out)


@lru_cache(maxsize=8)
def _phases(
    text: str, entries: tuple[str, ...]
) -> dict[str, tuple[dict[str, tuple[int, ...]], tuple[_Entry, ...]]]:
    """class -> (method -> when it runs, every assignment of those methods in run order).
    `when` is the entry's index, then the line of each call on the way: comparing two such
    tuples (a statement's line appended) tells which runs first."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return {}
    out = {}
    for cls in tree.body:
        if not isinstance(cls, ast.ClassDef):
            continue
        methods = {
            f.name: f for f in cls.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
        }
        keys: dict[str, tuple[int, ...]] = {}
        for i, name in enumerate(entries):
            if name in methods and name not in keys:
                _order(name, (i,), methods, keys)
        if not keys:
            continue
        # `if c: return` in a method's own block: what runs after it, there and in the methods
        # it calls later, runs only when c is false
        stops = [
            (name, (*key, stmt.lineno), negate(ast.unparse(stmt.test)))
            for name, key in keys.items()
            for stmt in methods[name].body
            if isinstance(stmt, ast.If) and not stmt.orelse and _returns(stmt.body)
        ]
        table: list[_Entry] = []
        for name, key in keys.items():
            for line, branches, a in _assigned(methods[name].body, (), (), f"{cls.name}.{name}"):
                when = (*key, line)
                exits = tuple(
                    (m, cond)
                    for m, at, cond in stops
                    if at < when and when[: len(keys[m])] == keys[m]
                )
                table.append((when, exits, branches, a))
        out[cls.name] = (keys, tuple(sorted(table, key=lambda e: e[0])))
    return out


def _order(name: str, key: tuple[int, ...], methods: dict, keys: dict) -> None:
    """Each method reached from `name` by `self.m(...)` calls, keyed by when it first runs."""
    keys[name] = key
    calls = [
        n
        for n in ast.walk(methods[name])
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and _is_self(n.func.value)
        and n.func.attr in methods
    ]
    for call in sorted(calls, key=lambda c: (c.lineno, c.col_offset)):
        if call.func.attr not in keys:  # type: ignore[attr-defined]
            _order(call.func.attr, (*key, call.lineno), methods, keys)  # type: ignore[attr-defined]


def _assigned(
    body: Sequence[ast.stmt], conds: tuple[str, ...], branches: tuple[_Branch, ...], qual: str
) -> list[tuple[int, tuple[_Branch, ...], Assignment]]:
    """(line, branches, assignment) for each `self.x = ...` in `body`, with the ifs it sits in."""
    out = []
    for stmt in body:
        if isinstance(stmt, ast.If):
            test = ast.unparse(stmt.test)
            for block, cond in ((stmt.body, test), (stmt.orelse, negate(test))):
                if block:
                    where = (stmt.lineno, _end(stmt), block[0].lineno, _end(block[-1]))
                    out += _assigned(block, (*conds, cond), (*branches, where), qual)
        elif isinstance(stmt, ast.With):
            out += _assigned(stmt.body, conds, branches, qual)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue  # its own scope
        else:
            simple = isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
            for target in _self_targets(stmt):
                value = _simple_value(stmt.value) if simple else None  # type: ignore[attr-defined]
                cond = " and ".join(conds)
                a = Assignment(target, value, cond, function=qual, line=stmt.lineno)
                out.append((stmt.lineno, branches, a))
    return out


def _self_targets(stmt: ast.stmt) -> list[str]:
    """The fields a statement may assign: its own targets, or any `self.x =` inside a loop,
    try or match (whose values are then unknown)."""
    if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        nodes = [n for t in targets for n in ast.walk(t)]
    else:
        nodes = [n for n in ast.walk(stmt) if isinstance(n, ast.Attribute) and _stored(n)]
    return [
        n.attr for n in nodes if isinstance(n, ast.Attribute) and _is_self(n.value) and _stored(n)
    ]


def _stored(n: ast.Attribute) -> bool:
    return isinstance(n.ctx, ast.Store)


def _simple_value(node: ast.expr) -> str | None:
    """A constant, another field or its negation; None for anything else."""
    inner = node.operand if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) else node
    if isinstance(inner, ast.Constant) or (
        isinstance(inner, ast.Attribute) and _is_self(inner.value)
    ):
        return ast.unparse(node)
    return None


def _end(node: ast.stmt) -> int:
    return node.end_lineno or node.lineno


def _returns(body: Sequence[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], ast.Return)


_INVERSE = {
    ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot,
    ast.IsNot: ast.Is, ast.Lt: ast.GtE, ast.GtE: ast.Lt, ast.Gt: ast.LtE, ast.LtE: ast.Gt,
}  # fmt: skip


def negate(expr: str) -> str:
    """`not expr`, written the way a person would: `x == 1` -> `x != 1`, `not x` -> `x`."""
    try:
        node = ast.parse(expr, mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return f"not ({expr})"
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return ast.unparse(node.operand)
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        node.ops = [_INVERSE[type(node.ops[0])]()]
        return ast.unparse(node)
    if isinstance(node, (ast.Attribute, ast.Name)):
        return f"not {expr}"
    return f"not ({expr})"


def _is_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"
