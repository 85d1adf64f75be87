"""A guard's derived values read as what they derive from (runs in the child).

A guard often reads a value no option sets directly: a property (`world_size_across_dp`:
`return self.world_size * self.data_parallel_size`) or an attribute a config computed once
from its fields (`self.world_size = self.pipeline_parallel_size * self.tensor_parallel_size`).
The solver varies options; it can turn such a guard only when the guard is written in terms
of them. `expand` rewrites each derived read of a guard into its definition, as the object's
own class states it (a property with one `return`, or an attribute its class assigns in
exactly one place from its own fields and module names), a few levels deep, and keeps the
rewrite only when it evaluates as the guard does right now. The solver's answers from it are
candidates like any other: the harness runs each before anything is trusted.
"""

from __future__ import annotations

import ast
import copy
import functools
import inspect
import sys
from collections.abc import Callable, Mapping
from typing import Any

from kverr.verify.sandbox import stubs
from kverr.verify.sandbox.steps import is_docstring, substitute, targets_of

DEPTH = 3  # definitions inside definitions (`world_size_across_dp` -> `world_size` -> options)

# path -> the module's parsed source, as the sandbox read it (the child sets it per revision)
TREES: Callable[[str], ast.Module | None] = lambda path: None  # noqa: E731


def expand(
    tree: ast.Expression, scope: dict[str, Any], options: Mapping[str, Any]
) -> ast.Expression | None:
    """`tree` with its derived reads replaced by their definitions (module names those need
    are added to `scope`), or None when nothing was derived or the rewrite does not evaluate
    as the guard does."""
    new, changed = copy.deepcopy(tree), False
    try:
        for _ in range(DEPTH):
            step = _Expand(scope, options)
            new = step.visit(new)
            if not step.changed:
                break
            changed = True
    except Exception:  # noqa: BLE001 - a definition read wrong is no rewrite, never the run's error
        return None
    if not changed:
        return None
    ast.fix_missing_locations(new)
    before, after = _value(tree, scope), _value(new, scope)
    return new if before is not None and before == after else None


def _value(tree: ast.Expression, scope: dict[str, Any]) -> Any:
    noted = len(stubs.NOTES)
    try:
        return bool(eval(compile(tree, "<derived>", "eval"), scope))  # noqa: S307 - sandboxed
    except BaseException:  # noqa: BLE001 - a rewrite that does not evaluate is no rewrite
        return None
    finally:
        del stubs.NOTES[noted:]


class _Expand(ast.NodeTransformer):
    def __init__(self, scope: dict[str, Any], options: Mapping[str, Any]) -> None:
        self.scope, self.options, self.changed = scope, options, False

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:  # noqa: N802 - ast's name
        if node.attr in self.options or not chain(node.value):
            return self.generic_visit(node)
        try:
            holder = eval(compile(ast.Expression(node.value), "<holder>", "eval"), self.scope)  # noqa: S307
        except BaseException:  # noqa: BLE001 - nothing there to read a definition from
            return node
        found = definition(type(holder), node.attr)
        if found is None:
            return node
        expr, self_name, module = found
        for name in _names(expr) - {self_name}:
            if name not in self.scope and name in vars(module):
                self.scope[name] = vars(module)[name]
        self.changed = True
        return substitute(expr, {self_name: node.value})


def chain(node: ast.AST) -> bool:
    """`a`, `a.b.c`: read without calling anything."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


@functools.lru_cache(maxsize=512)
def definition(cls: type, attr: str) -> tuple[ast.expr, str, Any] | None:
    """(expression, the name it calls the object, its module) defining `cls().attr`: a
    property whose body is one `return`, or the one assignment `self.attr = ...` in the
    class's methods whose other names are the module's (no locals, no parameters)."""
    if cls.__module__ not in sys.modules or cls.__module__.startswith("kverr."):
        return None  # the sandbox's own stand-ins (stubs, a model profile's facts) define nothing
    module = sys.modules[cls.__module__]
    static = inspect.getattr_static(cls, attr, None)
    if isinstance(static, (property, functools.cached_property)):
        fn = static.fget if isinstance(static, property) else static.func
        node = _function_node(fn)
        if node is None or not node.args.args:
            return None
        body = [s for s in node.body if not is_docstring(s)]
        if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
            return body[0].value, node.args.args[0].arg, module
        return None
    if static is not None and not isinstance(static, (int, float, str, bool, type(None))):
        return None  # a method, a descriptor: not a value the class assigns
    klass = _class_node(cls)
    if klass is None:
        return None
    found = []
    for fn in klass.body:
        if not isinstance(fn, ast.FunctionDef) or not fn.args.args:
            continue
        me = fn.args.args[0].arg
        local = {a.arg for a in (*fn.args.args, *fn.args.kwonlyargs)} - {me}
        local |= {
            t.id for n in ast.walk(fn) if isinstance(n, (ast.Assign, ast.For, ast.With))
            for t in ast.walk(n) if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)
        }  # fmt: skip
        for n in ast.walk(fn):
            for t in targets_of(n):
                if (
                    isinstance(t, ast.Attribute)
                    and t.attr == attr
                    and isinstance(t.value, ast.Name)
                    and t.value.id == me
                ):
                    value = getattr(n, "value", None)
                    clean = value is not None and not isinstance(n, ast.AugAssign)
                    reads = _names(value) if clean else set()
                    found.append((value, me) if clean and not reads & local else None)
    if len(found) != 1 or found[0] is None:
        return None
    return found[0][0], found[0][1], module


def env_reads(tree: ast.Expression, scope: dict[str, Any]) -> list[str]:
    """Environment variables the properties a guard reads read themselves (`if
    self.use_v2_model_runner:` whose getter starts with `envs.VLLM_USE_V2_MODEL_RUNNER`):
    names in capitals read off a module of the getter's globals. The guard is evaluated live,
    so the solver changing one changes what the property returns."""
    out: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not chain(node.value):
            continue
        noted = len(stubs.NOTES)
        try:
            holder = eval(compile(ast.Expression(node.value), "<holder>", "eval"), scope)  # noqa: S307
            static = inspect.getattr_static(type(holder), node.attr, None)
        except BaseException:  # noqa: BLE001 - nothing there to read
            continue
        finally:
            del stubs.NOTES[noted:]  # a stub met on the way is not the run's answer
        fn = static.fget if isinstance(static, property) else None
        body = _function_node(fn) if fn is not None else None
        names = getattr(fn, "__globals__", {})
        for n in ast.walk(body) if body is not None else ():
            if (
                isinstance(n, ast.Attribute)
                and isinstance(n.value, ast.Name)
                and stubs.is_module(names.get(n.value.id))
                and n.attr.isupper()
            ):
                out.append(n.attr)
    return list(dict.fromkeys(out))


def _function_node(fn: Any) -> ast.FunctionDef | None:
    code = getattr(fn, "__code__", None)
    tree = TREES(code.co_filename) if code is not None else None
    if tree is None:
        return None
    for n in ast.walk(tree):
        if isinstance(n, ast.FunctionDef) and n.name == fn.__name__:
            lines = {n.lineno, *(d.lineno for d in n.decorator_list)}
            if code.co_firstlineno in lines:
                return n
    return None


def _class_node(cls: type) -> ast.ClassDef | None:
    """The class's statement, found through one of its own functions' code."""
    codes = [
        getattr(v, "__code__", None) or getattr(getattr(v, "__func__", None), "__code__", None)
        for v in vars(cls).values()
    ]
    path = next((c.co_filename for c in codes if c is not None), None)
    tree = TREES(path) if path else None
    if tree is None:
        return None
    return next(
        (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls.__name__), None
    )


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
