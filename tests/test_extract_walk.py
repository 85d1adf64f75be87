"""extractor/walk.py: `walk(visitor, node)` must call on_visit and on_leave on exactly the nodes
libcst's own `node.visit(visitor)` does, in the same order, for every syntax we meet."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from kverr.extractor import walk as walk_module
from kverr.extractor.walk import walk

GOLDEN = Path(__file__).parent / "golden" / "extract"

SYNTAX = '''\
"""Doc."""
from __future__ import annotations
import os, sys as system
from a.b import (c, d as e)
from . import f
x: int = 1; y = x if x else (2)
z = [i * 2 for i in range(3) if i] + [*x, *y]
w = {k: v for k, v in {}.items()} | {**a, "b": 1}
s = {1, 2}; t = (1,); u = ()
g = (lambda a, /, b=1, *c, d, **e: a)(1, d=2)
sl = x[1:2, ::3, ...][-1]
print(f"{x!r:>{y}} and {z=}", "con" "cat", rb"raw")
n = not a and b or c < d <= e is not f in g
m = -x ** 2 @ y // z % w << 1 >> 2 & 3 ^ 4 | 5
if (v := len(x)) > 10:
    pass
elif v:
    ...
else:
    del x[0], y.z

@decorator(arg)
class K(Base, metaclass=Meta):
    a: int
    b: "str" = "b"

    @property
    async def m(self, *args: int, **kw) -> list[int]:
        global G
        nonlocal_ = 1
        async with a as b, c:
            async for i in self.items():
                await i
        try:
            yield from gen()
        except* ValueError as exc:
            raise RuntimeError("bad") from exc
        finally:
            return [(yield)]

def outer():
    value = 0
    def inner():
        nonlocal value
        value += 1
    for i in range(3):
        while i:
            break
        else:
            continue
    with open("f") as fh, open("g"):
        assert fh, f"no {fh}"
    match command.split():
        case [action, *rest] if action:
            logger.warning("x %s", rest)
        case {"key": value, **others}:
            pass
        case Point(x=0, y=0) | None:
            pass
        case _:
            raise SystemExit(1)
    try:
        pass
    except (OSError, ValueError):
        pass
    else:
        pass
    return value
'''


class _Events(cst.CSTVisitor):
    """Records every on_visit / on_leave; stops descending at `prune` node types."""

    def __init__(self, prune: tuple[type, ...] = ()) -> None:
        super().__init__()
        self.events: list[tuple[str, int]] = []
        self.prune = prune

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.events.append(("visit", id(node)))
        return not isinstance(node, self.prune)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.events.append(("leave", id(original_node)))


def _sources() -> list[tuple[str, str]]:
    found = [("syntax", SYNTAX)]
    found += [(p.name, p.read_text(encoding="utf-8")) for p in sorted(GOLDEN.glob("*.py"))]
    return found


def _same_events(text: str, prune: tuple[type, ...]) -> None:
    module = cst.parse_module(text)
    libcst_own, ours = _Events(prune), _Events(prune)
    module.visit(libcst_own)
    walk(ours, module)
    assert ours.events == libcst_own.events
    assert len(ours.events) > 20  # (a walk that visits nothing would also agree with itself)


@pytest.mark.parametrize("prune", [(), (cst.Call,), (cst.Attribute, cst.SimpleStatementLine)])
@pytest.mark.parametrize("name, text", _sources(), ids=[n for n, _ in _sources()])
def test_walk_visits_what_libcst_visits(name: str, text: str, prune) -> None:
    _same_events(text, prune)


def test_walk_visits_what_libcst_visits_in_the_seed(seed_module: str) -> None:
    for prune in ((), (cst.Call,)):
        _same_events(seed_module, prune)


def test_a_node_with_a_child_outside_its_learnt_order_is_visited_by_libcst(monkeypatch) -> None:
    """A node type whose children differ between nodes (an attribute the learnt order lacks
    holds a node) is handed to libcst whole: the events stay exact."""
    text = "a = (b)\nc = d\n"
    walk(_Events(), cst.parse_module(text))  # learn every type this text has
    order = walk_module._ORDER[cst.Name]
    assert "rpar" in order
    monkeypatch.setitem(walk_module._ORDER, cst.Name, tuple(n for n in order if n != "rpar"))
    monkeypatch.setitem(walk_module._OTHER, cst.Name, ("value", "rpar"))
    handed: list[cst.CSTNode] = []
    real = cst.Name._visit_and_replace_children

    def spy(self, visitor):
        handed.append(self)
        return real(self, visitor)

    module = cst.parse_module(text)
    libcst_own, ours = _Events(), _Events()
    module.visit(libcst_own)
    monkeypatch.setattr(cst.Name, "_visit_and_replace_children", spy)
    walk(ours, module)
    assert ours.events == libcst_own.events
    assert [n.value for n in handed] == ["b"]  # only the parenthesised name has a right paren


# ---------------------------------------------------------------- the stdlib walk (context.py)


def _naive_facts(tree):
    """What context.walk_facts must give, from ast.walk and plain isinstance tests."""
    import ast

    from kverr.extractor.context import MUTATORS

    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    mutated: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
            if n.func.attr in MUTATORS and isinstance(n.func.value, ast.Name):
                mutated.add(n.func.value.id)
        elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
            mutated.add(n.target.id)
        elif isinstance(n, (ast.Subscript, ast.Attribute)) and isinstance(n.value, ast.Name):
            if isinstance(n.ctx, (ast.Store, ast.Del)):
                mutated.add(n.value.id)
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            mutated.update(n.names)
    defs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return calls, mutated, defs


MUTATIONS = """
import os
A = []; B = {}; C = 0
A.append(1); B["k"] = 2; C += 1; os.environ["X"] = "1"; del B["k"]
def f(x):
    global G
    x.attr = 1
    return [g(y) for y in h(x)] + [lambda: k()]
"""


@pytest.mark.parametrize("name, text", [*_sources(), ("mutations", MUTATIONS)])
def test_walk_facts_is_ast_walk(name: str, text: str) -> None:
    """walk_facts reads only the fields that can hold a node and never queues leaves: its calls
    must still come in ast.walk's order, with the same mutated names and functions."""
    import ast

    from kverr.extractor.context import walk_facts

    tree = ast.parse(text)
    calls, mutated, defs = walk_facts(tree)
    want_calls, want_mutated, want_defs = _naive_facts(tree)
    assert calls == want_calls and mutated == want_mutated and defs == want_defs
    assert calls


def test_walk_facts_is_ast_walk_in_the_seed(seed_module: str) -> None:
    import ast

    from kverr.extractor.context import walk_facts

    tree = ast.parse(seed_module)
    assert walk_facts(tree) == _naive_facts(tree)
