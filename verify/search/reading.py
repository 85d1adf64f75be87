"""How a check's guards read, for the search and the watch: locals replaced by what they
hold, the call sites of a helper and what its parameters hold there, what methods read and
reset, the values the code assigns an attribute, an except clause as "its try body raises".

Pure stdlib `ast` over a revision's source text, memoised per text (a build asks per guard).
steps.py plans which validation steps run; this module reads what the code inside them does.
"""

from __future__ import annotations

import ast
import copy
import functools
from collections.abc import Sequence
from typing import Any

from kverr.extractor.pysource import (
    NOT_LITERAL,
    literal,
    parse_expr,
    parse_module,
    returned_test,
)
from kverr.verify.sandbox.steps import Node, definitions, self_attr, substitute, targets_of


def resets(text: str, function: str | None) -> dict[str, list[tuple[int, str, bool]]]:
    """attribute -> [(line, test, holds)]: the `if` tests under which `function` assigns
    `self.attribute` (the branch taken when the test `holds`). A launch option can be
    overwritten that way before a later guard reads it."""
    fn = function_node(text, function)
    if fn is None:
        return {}
    out: dict[str, list[tuple[int, str, bool]]] = {}

    def walk(body: list[ast.stmt], ifs: tuple[tuple[int, str, bool], ...]) -> None:
        for stmt in body:
            if isinstance(stmt, ast.If):
                test = ast.unparse(stmt.test)
                walk(stmt.body, (*ifs, (stmt.lineno, test, True)))
                walk(stmt.orelse, (*ifs, (stmt.lineno, test, False)))
                continue
            for t in targets_of(stmt):
                if self_attr(t) and ifs:
                    out.setdefault(t.attr, []).extend(
                        i for i in ifs if i not in out.get(t.attr, [])
                    )
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list) and not isinstance(stmt, ast.If):
                    walk(inner, ifs)

    walk(fn.body, ())  # type: ignore[attr-defined]
    return out


@functools.lru_cache(maxsize=8)
def defs_of(text: str) -> dict[Node, ast.AST]:
    """The functions of one source text, parsed once (the search asks per guard)."""
    try:
        return definitions({"": parse_module(text)})
    except SyntaxError:
        return {}


def function_node(text: str, function: str | None) -> ast.AST | None:
    return defs_of(text).get(("", function)) if function else None


def validated(text: str, function: str | None) -> dict[str, str]:
    """A validator of a named field (`@field_validator("numa_bind_nodes")`, a decorator
    called with the field names): its value parameter -> the first field it validates."""
    fn = function_node(text, function)
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return {}
    params = [a.arg for a in fn.args.args if a.arg not in ("self", "cls")]
    for d in fn.decorator_list:
        names = [
            a.value
            for a in getattr(d, "args", ())
            if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.isidentifier()
        ]
        if isinstance(d, ast.Call) and names and params:
            return {params[0]: names[0]}
    return {}


@functools.lru_cache(maxsize=4096)
def inline_locals(
    text: str, function: str | None, test: str, line: int, params: tuple[tuple[str, str], ...] = ()
) -> str:
    """`test` with each local it reads replaced by the expression assigned to it before
    `line` (when assigned exactly once there), so that the guard reads `self.x` directly and
    a changed attribute changes it: `prefill_attn_backend in supported` becomes
    `self.get_attention_backends()[0] in ['triton', ...]`. `params`: (name, expression) a
    parameter holds on the path (see `parameters`)."""
    fn = function_node(text, function)
    node = parse_test(test)
    if fn is None or node is None:
        return test
    defs: dict[str, list[ast.expr]] = {}
    looped: dict[str, ast.For] = {}
    binders = _binders(fn)
    chain = _enclosing_blocks(fn, line)
    top_ids = frozenset(map(id, chain))
    for sub in binders:
        if _other_branch(sub, chain, line):
            continue  # (`if a: x = 1 else: x = 2; <test>` in the else: only x = 2 reaches it)
        first = _first_item(sub, line)
        if first is not None:
            # A loop, the test in its body: the watch evaluates the test in the first
            # iteration, where the loop's names hold the first item's values.
            for name, value in first.items():
                defs.setdefault(name, []).append(value)
                looped[name] = sub  # type: ignore[assignment]
            continue
        step = _refines(sub, looped, line)
        if step is not None:
            # `x = x.strip()` in that loop's body, before the test: x is the first item,
            # stripped.
            name, value = step
            defs[name] = [substitute(value, {name: defs[name][-1]})]
            continue
        if not isinstance(sub, ast.Assign) or sub.lineno >= line or len(sub.targets) != 1:
            if isinstance(sub, (ast.AugAssign, ast.AnnAssign, ast.For, ast.With)):
                for t in ast.walk(sub.target if not isinstance(sub, ast.With) else sub):
                    if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store):
                        defs.setdefault(t.id, []).extend([None, None])  # type: ignore[list-item]
            continue
        target = sub.targets[0]
        # An attribute of self counts only when set on every path to the test (a statement
        # of a block the test is in): set in another branch, it keeps its earlier value.
        top = id(sub) in top_ids
        names = target.elts if isinstance(target, ast.Tuple) else [target]
        if any(not _key(e) or (isinstance(e, ast.Attribute) and not top) for e in names):
            for e in names:
                if _key(e):
                    defs.setdefault(_key(e), []).extend([None, None])  # type: ignore[list-item]
            continue
        if isinstance(target, ast.Tuple):
            for i, e in enumerate(target.elts):
                index = ast.Subscript(value=sub.value, slice=ast.Constant(i), ctx=ast.Load())
                defs.setdefault(_key(e), []).append(index)
        else:
            defs.setdefault(_key(target), []).append(sub.value)
    once = {
        name: exprs[0] for name, exprs in defs.items() if len(exprs) == 1 and exprs[0] is not None
    }
    for name, source in params:  # a parameter holds what the call site passes
        if name not in defs:
            expr = parse_test(source)
            if expr is not None:
                once[name] = expr
    for _ in range(3):  # a local defined from another local
        changed = False

        class Inline(ast.NodeTransformer):
            def visit_Name(self, n: ast.Name) -> ast.AST:
                nonlocal changed
                if isinstance(n.ctx, ast.Load) and n.id in once:
                    changed = True
                    return copy.deepcopy(once[n.id])  # never edit the cached function's tree
                return n

            def visit_Call(self, n: ast.Call) -> ast.AST:
                # `getattr(self, "x")` (after the loop names are in) reads as `self.x`.
                n = self.generic_visit(n)  # type: ignore[assignment]
                if (
                    isinstance(n.func, ast.Name)
                    and n.func.id == "getattr"
                    and len(n.args) == 2
                    and isinstance(n.args[0], ast.Name)
                    and n.args[0].id == "self"
                    and isinstance(n.args[1], ast.Constant)
                    and isinstance(n.args[1].value, str)
                    and n.args[1].value.isidentifier()
                ):
                    return ast.Attribute(value=n.args[0], attr=n.args[1].value, ctx=ast.Load())
                if _copies(n):
                    # a copy holds what it was copied from (`copy.deepcopy(self.config).x`
                    # is the option's field `self.config.x`)
                    return n.args[0]
                return n

            def visit_Attribute(self, n: ast.Attribute) -> ast.AST:
                # `self.x_str` set once earlier in the function from options (`self.a_str,
                # self.b_str = self.get_attention_backends()`) reads as that expression.
                nonlocal changed
                key = _key(n)
                if isinstance(n.ctx, ast.Load) and key and key in once:
                    changed = True
                    return copy.deepcopy(once[key])
                return self.generic_visit(n)

        node = Inline().visit(node)
        if not changed:
            break
    return ast.unparse(node)


def _copies(call: ast.Call) -> bool:
    """`copy.deepcopy(x)`, `copy.copy(x)` or the bare names imported from copy."""
    f = call.func
    name = f.attr if isinstance(f, ast.Attribute) and ast.unparse(f.value) == "copy" else None
    name = f.id if isinstance(f, ast.Name) else name
    return name in ("deepcopy", "copy") and len(call.args) == 1 and not call.keywords


_BINDERS = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.With)


@functools.lru_cache(maxsize=256)
def _binders(fn: ast.AST) -> tuple[ast.AST, ...]:
    """The statements of `fn` that bind names, in ast.walk order (nodes of the same parse as
    `fn`: _other_branch compares them by identity)."""
    return tuple(n for n in ast.walk(fn) if isinstance(n, _BINDERS))


_BLOCKS = ("body", "orelse", "finalbody")


def _enclosing_blocks(fn: ast.AST, line: int) -> tuple[ast.stmt, ...]:
    """The statements of every block `line` lies in, from the function's own body down
    (`else: self.x = env; if self.x > 1:` - the assignment is on every path there)."""
    out: list[ast.stmt] = []
    block: list[ast.stmt] | None = getattr(fn, "body", None)
    while block:
        out.extend(block)
        holder = next((st for st in block if st.lineno <= line <= (st.end_lineno or 0)), None)
        if holder is None:
            break
        inner = [
            b
            for name in _BLOCKS
            if isinstance(b := getattr(holder, name, None), list) and b
            if b[0].lineno <= line <= (b[-1].end_lineno or 0)
        ]
        inner += [
            h.body
            for h in getattr(holder, "handlers", ())
            if h.lineno <= line <= (h.end_lineno or 0)
        ]
        block = (
            inner[0] if inner and not isinstance(holder, (ast.FunctionDef, ast.ClassDef)) else None
        )
    return tuple(out)


def _other_branch(node: ast.AST, chain: Sequence[ast.stmt], line: int) -> bool:
    """`node` lies in a branch of a statement that holds `line` in another branch: the
    innermost statement of the blocks `line` lies in that holds `node` holds `line` too."""
    if any(st is node for st in chain):
        return False  # a statement of a block `line` lies in
    at = getattr(node, "lineno", 0)
    holders = [st for st in chain if st.lineno <= at <= (st.end_lineno or 0)]
    if not holders:
        return False
    inner = max(holders, key=lambda st: st.lineno)
    return inner.lineno <= line <= (inner.end_lineno or 0)


def _refines(node: ast.AST, looped: dict[str, ast.For], line: int) -> tuple[str, ast.expr] | None:
    """(name, value) for `name = f(name)`, a statement of the body of the loop binding `name`,
    before `line`."""
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
        return None
    target = node.targets[0]
    if not isinstance(target, ast.Name) or target.id not in looped or node.lineno >= line:
        return None
    if not any(node is stmt for stmt in looped[target.id].body):
        return None
    reads = any(isinstance(n, ast.Name) and n.id == target.id for n in ast.walk(node.value))
    return (target.id, node.value) if reads else None


def _first_item(node: ast.AST, line: int) -> dict[str, ast.expr] | None:
    """name -> value in the first iteration of `for a, b in [(x, y), ...]` (literal items)
    when `line` lies in the loop's body; None otherwise."""
    if not isinstance(node, ast.For) or not (node.lineno < line <= (node.end_lineno or 0)):
        return None
    if isinstance(node.target, ast.Name) and not isinstance(node.iter, (ast.List, ast.Tuple)):
        # Any other iterable: its first item, `next(iter(self.x.keys()))`.
        first = ast.Call(
            func=ast.Name("next", ast.Load()),
            args=[ast.Call(func=ast.Name("iter", ast.Load()), args=[node.iter], keywords=[])],
            keywords=[],
        )
        return {node.target.id: first}
    if not isinstance(node.iter, (ast.List, ast.Tuple)) or not node.iter.elts:
        return None
    item = node.iter.elts[0]
    if isinstance(node.target, ast.Name):
        return {node.target.id: item} if isinstance(item, ast.Constant) else None
    if isinstance(node.target, ast.Tuple) and isinstance(item, (ast.Tuple, ast.List)):
        names = node.target.elts
        if len(names) == len(item.elts) and all(isinstance(e, ast.Name) for e in names):
            if all(isinstance(v, ast.Constant) for v in item.elts):
                return {e.id: v for e, v in zip(names, item.elts, strict=True)}  # type: ignore[union-attr]
    return None


def _key(node: ast.expr) -> str:
    """A local's name, or "self.x" for an attribute of self; "" for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    return f"self.{node.attr}" if self_attr(node) else ""


def parse_test(text: str) -> ast.expr | None:
    """A guard's test (any expression's text) as a tree; None when it does not parse."""
    try:
        return parse_expr(text)
    except SyntaxError:
        return None


@functools.lru_cache(maxsize=1024)
def parameters(text: str, function: str | None) -> dict[str, str]:
    """parameter -> its default: what a parameter holds that no call in the file passes
    (call_sites gives what each call passes)."""
    is_method = bool(function and _owner(text, function))
    return _bind(function_node(text, function), None, is_method)


def _sites_of(
    text: str, function: str | None
) -> list[tuple[str, list[tuple[int, str, bool]], ast.Call]]:
    """The calls of `function` in the file, in file order: a method through `self.` from
    another method of its own class, a function by its name."""
    if not function:
        return []
    name = function.rsplit(".", 1)[-1]
    owner = _owner(text, function)
    found = _all_calls(text).get((name, bool(owner)), [])
    return [c for c in found if not owner or c[0].startswith(owner + ".")]


def _owner(text: str, function: str) -> str:
    """The class `function` is a method of ("" for a module-level or nested function)."""
    owner, dot, _ = function.rpartition(".")
    if not dot or "." in owner:
        return ""
    return owner if owner in _classes(text) else ""


@functools.lru_cache(maxsize=8)
def _classes(text: str) -> frozenset[str]:
    return frozenset(n.name for n in parse_module(text).body if isinstance(n, ast.ClassDef))


@functools.lru_cache(maxsize=1024)
def call_sites(
    text: str, function: str | None, limit: int = 3
) -> list[tuple[str, list[tuple[int, str, bool]], dict[str, str]]]:
    """Up to `limit` call sites of `function`: (caller, the ifs on the way, parameter ->
    argument expression). A helper called with different arguments from different branches
    (`support_mamba_cache=False` for one model, True for another) is reached through one."""
    fn = function_node(text, function)
    is_method = bool(function and _owner(text, function))
    return [
        (caller, ifs, _bind(fn, call, is_method))
        for caller, ifs, call in _sites_of(text, function)[:limit]
    ]


def _bind(fn: ast.AST | None, call: ast.Call | None, is_method: bool) -> dict[str, str]:
    """parameter -> the argument expression the call passes, else its default."""
    if fn is None:
        return {}
    args = fn.args  # type: ignore[attr-defined]
    names = [a.arg for a in [*args.posonlyargs, *args.args]]
    if names and names[0] in ("self", "cls") and is_method:
        names = names[1:]
    out = {
        n: ast.unparse(d)
        for n, d in zip(names[len(names) - len(args.defaults) :], args.defaults, strict=True)
    }
    if call is not None:
        for n, a in zip(names, call.args, strict=False):
            out[n] = ast.unparse(a)
        for kw in call.keywords:
            if kw.arg in names:
                out[kw.arg] = ast.unparse(kw.value)
    return out


@functools.lru_cache(maxsize=8)
def _all_calls(
    text: str,
) -> dict[tuple[str, bool], list[tuple[str, list[tuple[int, str, bool]], ast.Call]]]:
    """(callee name, called on self) -> every (caller, ifs on the way, call), in file order."""
    out: dict[tuple[str, bool], list[tuple[str, list[tuple[int, str, bool]], ast.Call]]] = {}
    for (_, caller), fn in defs_of(text).items():
        for ifs, call in _calls_in(fn.body, ()):  # type: ignore[attr-defined]
            f = call.func
            if self_attr(f) or (
                isinstance(f, ast.Attribute)
                and isinstance(f.value, ast.Name)
                and f.value.id == caller.partition(".")[0]
            ):  # `self.m(...)`, or `Cls.m(...)` of a static method from its own class
                key = (f.attr, True)
            elif isinstance(f, ast.Name):
                key = (f.id, False)
            else:
                continue
            if not caller.endswith(f".{key[0]}") and caller != key[0]:
                out.setdefault(key, []).append((caller, list(ifs), call))
    return out


def _calls_in(
    body: list[ast.stmt], ifs: tuple[tuple[int, str, bool], ...]
) -> list[tuple[tuple[tuple[int, str, bool], ...], ast.Call]]:
    """Every call in `body` with the `if` tests enclosing it, in source order."""
    found: list[tuple[tuple[tuple[int, str, bool], ...], ast.Call]] = []
    for stmt in body:
        if isinstance(stmt, ast.If):
            found += [(ifs, c) for c in _shallow_calls(stmt.test)]
            test = ast.unparse(stmt.test)
            found += _calls_in(stmt.body, (*ifs, (stmt.lineno, test, True)))
            found += _calls_in(stmt.orelse, (*ifs, (stmt.lineno, test, False)))
            continue
        found += [(ifs, c) for c in _shallow_calls(stmt)]
        for field in ("body", "orelse", "handlers", "finalbody"):
            block = getattr(stmt, field, None)
            if isinstance(block, list):
                inner = [x for x in block if isinstance(x, ast.stmt)]
                for h in block:
                    if isinstance(h, ast.ExceptHandler):
                        inner += h.body
                found += _calls_in(inner, ifs)
    return found


def _shallow_calls(node: ast.AST) -> list[ast.Call]:
    """Calls in `node`, not entering nested statements (their own ifs are walked apart)."""
    out, todo = [], [node]
    while todo:
        n = todo.pop()
        if isinstance(n, ast.Call):
            out.append(n)
        todo.extend(c for c in ast.iter_child_nodes(n) if not isinstance(c, ast.stmt))
    return out[::-1]


@functools.lru_cache(maxsize=8)
def method_reads(text: str, args_class: str) -> dict[str, frozenset[str]]:
    """method -> the `self.x` attributes it reads, through the methods it calls, for the
    args class's methods: a guard calling `self.get_attention_backends()` depends on
    attention_backend and its prefill/decode variants."""
    own: dict[str, set[str]] = {}
    calls: dict[str, set[str]] = {}
    for (_, qual), fn in defs_of(text).items():
        cls, _, name = qual.partition(".")
        if cls != args_class or not name:
            continue
        reads, called = set(), set()
        for n in ast.walk(fn):
            if self_attr(n):
                reads.add(n.attr)
            if isinstance(n, ast.Call) and self_attr(n.func):
                called.add(n.func.attr)
        own[name], calls[name] = reads, called
    out = {}
    for name in own:
        seen, todo, reads = {name}, [name], set()
        while todo:
            m = todo.pop()
            reads |= own.get(m, set())
            for c in calls.get(m, ()):
                if c in own and c not in seen:
                    seen.add(c)
                    todo.append(c)
        out[name] = frozenset(reads - set(own))
    return out


@functools.lru_cache(maxsize=1024)
def words_of(text: str, function: str | None) -> tuple[str, ...]:
    """Short string constants of a function (`"tse"`, `"default"`): values its checks compare
    with, which a list-valued option may need."""
    fn = function_node(text, function)
    if fn is None:
        return ()
    out = [
        n.value
        for n in ast.walk(fn)
        if isinstance(n, ast.Constant)
        and type(n.value) is str
        and 0 < len(n.value) <= 24
        and " " not in n.value
        and "{" not in n.value
        and not n.value.startswith("-")  # a flag's name, never a value on a command line
    ]
    return tuple(dict.fromkeys(out))


@functools.lru_cache(maxsize=8)
def class_resets(text: str, args_class: str) -> dict[str, list[tuple[str, int, str, bool]]]:
    """attribute -> [(method, line, test, holds)]: every `if` under which a method of the args
    class assigns `self.attribute` (`_handle_data_parallelism` turns enable_dp_attention off
    when dp_size == 1, whichever check reads it later)."""
    out: dict[str, list[tuple[str, int, str, bool]]] = {}
    for (_, qual), _fn in defs_of(text).items():
        if not qual.startswith(f"{args_class}."):
            continue
        for attr, found in resets(text, qual).items():
            out.setdefault(attr, []).extend((qual, *f) for f in found)
    return out


@functools.lru_cache(maxsize=8)
def copied(text: str, args_class: str) -> dict[str, dict[str, str]]:
    """class -> {field: the args attribute it is built from}, for the fields the args class
    fills under another name: a keyword of a call in its methods (`MambaConfig(
    enable_stochastic_rounding=self.enable_mamba_cache_stochastic_rounding)`), or the field an
    option's default is taken from (`enable_mamba_cache_stochastic_rounding: bool =
    MambaConfig.enable_stochastic_rounding`). A check of that class reads the option."""
    out: dict[str, dict[str, str]] = {}
    for cls in parse_module(text).body:
        if not (isinstance(cls, ast.ClassDef) and cls.name == args_class):
            continue
        for stmt in cls.body:  # `x_y: bool = XConfig.y`: the option's default is the field's
            v = stmt.value if isinstance(stmt, ast.AnnAssign) else None
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                if isinstance(v, ast.Attribute) and isinstance(v.value, ast.Name):
                    if v.attr != stmt.target.id:
                        out.setdefault(v.value.id, {}).setdefault(v.attr, stmt.target.id)
    for (_, qual), fn in defs_of(text).items():
        if not qual.startswith(f"{args_class}."):
            continue
        for call in ast.walk(fn):
            if not isinstance(call, ast.Call):
                continue
            f = call.func
            name = (
                f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            )
            for kw in call.keywords:
                v = kw.value
                if name and kw.arg and self_attr(v) and v.attr != kw.arg:
                    out.setdefault(name, {}).setdefault(kw.arg, v.attr)
    return out


@functools.lru_cache(maxsize=1024)
def try_test(text: str, function: str | None, line: int, caught: str) -> str | None:
    """The condition of an except clause as an expression the watch can evaluate: "the try
    body at `line` raises what the clause catches" (`caught`: the guard's text, "except
    (ValueError, IndexError)"). The body's assignments and calls become a tuple evaluated in a
    lambda (a name the body assigned reads as its expression), so that the solver can ask
    which option values make `float(buckets_rule[1])` raise. None for a body with other
    statements (loops, branches), or a clause that catches everything."""
    fn = function_node(text, function)
    types = caught.removeprefix("except ").strip()
    if fn is None or types in ("", "BaseException", "Exception"):
        return None
    node = next((n for n in ast.walk(fn) if isinstance(n, ast.Try) and n.lineno == line), None)
    if node is None:
        return None
    assigned: dict[str, ast.expr] = {}
    values: list[ast.expr] = []
    for stmt in node.body:
        if isinstance(stmt, ast.Expr):
            values.append(substitute(stmt.value, assigned))
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            value = substitute(stmt.value, assigned)
            values.append(value)
            if isinstance(stmt.targets[0], ast.Name):
                assigned[stmt.targets[0].id] = value
        else:
            return None
    if not values:
        return None
    body = ast.unparse(ast.Tuple(elts=values, ctx=ast.Load()))
    return f"__kverr_raises__(lambda: {body}, {types})"


@functools.lru_cache(maxsize=8)
def assigned_values(text: str, args_class: str) -> dict[str, list[Any] | None]:
    """attribute -> every literal the args class's methods assign to `self.attribute` (None
    when one assignment is not a literal): with the parser's choices, every value the
    attribute can hold during validation."""
    out: dict[str, list[Any] | None] = {}
    for (_, qual), fn in defs_of(text).items():
        if not qual.startswith(f"{args_class}.") or qual.endswith(".__init__"):
            continue
        for node in ast.walk(fn):
            value = node.value if isinstance(node, ast.Assign) else None
            for t in targets_of(node):
                if not self_attr(t):
                    continue
                held = literal(value) if value is not None else NOT_LITERAL
                known = out.setdefault(t.attr, [])
                if held is NOT_LITERAL or known is None:
                    out[t.attr] = None
                elif held not in known:
                    known.append(held)
    return out


@functools.lru_cache(maxsize=1024)
def function_text(text: str, function: str | None) -> str:
    """The source of `function` (a method or a module-level function), "" when not found."""
    fn = function_node(text, function)
    if fn is None:
        return ""
    lines = text.splitlines()
    return "\n".join(lines[fn.lineno - 1 : fn.end_lineno])  # type: ignore[attr-defined]


@functools.lru_cache(maxsize=64)
def predicates(text: str) -> dict[str, dict[str, str]]:
    """Class -> method -> the test it returns, for each method of a module's classes that takes
    only `self` and only returns an expression (`def use_eagle(self): return self.method in
    (...)`): a guard calling it on a config tests that config's fields."""
    try:
        tree = parse_module(text)
    except (SyntaxError, ValueError):
        return {}  # a revision's file that does not parse has none
    out: dict[str, dict[str, str]] = {}
    for node in getattr(tree, "body", ()):
        if not isinstance(node, ast.ClassDef):
            continue
        for item in node.body:
            if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if (
                [a.arg for a in item.args.args] != ["self"]
                or item.args.vararg
                or item.args.kwonlyargs
            ):
                continue
            test = returned_test(item)
            if test is not None:
                out.setdefault(node.name, {})[item.name] = ast.unparse(test)
    return out
