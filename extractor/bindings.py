"""What the plain names in a site's conditions stand for (see `Binding` in kverr/ftypes.py).

A check often tests a local, not the flag: `prefill = self.prefill_kernel or self.kernel`,
then `if prefill == "tiled"`. The records can only name the flag when the extractor says where
the local came from. Four sources, each read where it is cheap:
  - module-wide, with the stdlib `ast` (once per file, in module_context): what the callers in
    the file pass to each parameter, and which flags are declared with each argparse Action;
  - per site, on the libcst path: the reaching assignment of a local, the constants in scope,
    and what the function assigns to flags around the site.
"""

from __future__ import annotations

import ast
import bisect
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import libcst as cst
from kverr.extractor.flags import param_flag
from kverr.extractor.pysource import returned_test, undocumented
from kverr.extractor.templates import code, normalise
from kverr.extractor.walk import walk

from kverr.ftypes import Binding, FlagDecl

_LITERALS = (int, float, str, bool, type(None))

# ---------------------------------------------------------------- module-wide (stdlib ast)

# function name -> parameter -> ((argument source, flags it reads), ...) over the file's calls
ParamSources = dict[str, dict[str, tuple[tuple[str, tuple[str, ...]], ...]]]

_PASSES = 8  # a caller's parameter handed on: chains this deep are followed


def param_sources(
    tree: ast.Module,
    args_names: frozenset[str] = frozenset(),
    calls: Sequence[ast.Call] | None = None,
    classes: dict[str, str] | None = None,
    defs: Sequence[ast.AST] | None = None,
) -> ParamSources:
    """What each call in the file passes to each parameter of a function or method it defines:
    `self._check(self.rdma_device)` makes `device` of `_check(self, device)` stand for
    --rdma-device. Calls through `self.` bind methods (their first parameter is skipped).
    A caller that hands on a parameter of its own (`_verify(max_len=max_len)`) passes what
    its own callers pass; a pydantic `field_validator("x")` method's value is field x.
    `args_names`: the profile's names of the args object, besides `self`; `calls`: the tree's
    calls in `ast.walk` order, when the caller walked it already; `classes`: the classes that
    hold launch arguments -> their fields' flag prefix (`context.class_prefix`), so `self.x` in
    a config class is that config's field; `defs`: every function of the tree, nested ones too."""
    classes = classes or {}
    sigs: dict[str, list[str]] = {}
    methods: set[str] = set()
    unbound: dict[str, set[str]] = {}  # class -> its static and class methods
    out: ParamSources = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            sigs.setdefault(node.name, _params(node))
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    kinds = {_name(d) for d in item.decorator_list}
                    static = "staticmethod" in kinds
                    sigs.setdefault(item.name, _params(item)[0 if static else 1 :])
                    methods.add(item.name)
                    if kinds & {"staticmethod", "classmethod"}:
                        unbound.setdefault(node.name, set()).add(item.name)
                    _validated(item, classes.get(node.name), args_names, out)
    owner = _Owners(tree, defs, classes)
    handed: list[tuple[dict, str, str, ast.AST, str]] = []  # (table, param, src, caller, name)
    for call in ast.walk(tree) if calls is None else calls:
        if not isinstance(call, ast.Call):
            continue
        func = call.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            # `self._check(x)`, or a static method called through its class
            # (`SpeculativeConfig._override(self.max_model_len)`)
            own = func.value.id in ("self", "cls") and func.attr in methods
            name = func.attr if own or func.attr in unbound.get(func.value.id, ()) else None
        elif isinstance(func, ast.Name) and func.id not in methods:
            name = func.id
        else:
            name = None
        if name not in sigs or any(isinstance(a, ast.Starred) for a in call.args):
            continue
        params = sigs[name]
        given = list(zip(params, call.args, strict=False))
        given += [(k.arg, k.value) for k in call.keywords if k.arg in params]
        table = out.setdefault(name, {})
        caller, prefix = owner(call.lineno)
        for param, arg in given:
            src = ast.unparse(arg)
            if isinstance(arg, ast.Name) and caller is not None:
                handed.append((table, param, src, caller, arg.id))
            if all(s != src for s, _ in table.get(param, ())):
                row = (src, _ast_flags(arg, args_names, prefix))
                table[param] = (*table.get(param, ()), row)
    _hand_on(handed, out)
    return out


def _hand_on(handed: list[tuple[dict, str, str, ast.AST, str]], out: ParamSources) -> None:
    """A caller that hands on a parameter of its own, or a local computed from one
    (`torch_dtype = table[dtype]`), passes what its callers pass for that parameter (its
    name's flag when no caller in the file passes it): folded until nothing changes."""
    links = []
    for table, param, src, caller, name in handed:
        own = _params(caller)  # type: ignore[arg-type]
        theirs = [name] if name in own else _assigned_from(caller, name, own)
        if theirs:
            links.append((table, param, src, caller.name, theirs))  # type: ignore[attr-defined]
    for _ in range(_PASSES if links else 0):
        changed = False
        for table, param, src, caller, theirs in links:
            got = out.get(caller, {})
            more = [
                f
                for p in theirs
                for f in ([f for _, fl in got[p] for f in fl] if p in got else param_flag(p))
            ]
            rows = table[param]
            i = next(i for i, (s, _) in enumerate(rows) if s == src)
            flags = tuple(dict.fromkeys((*rows[i][1], *more)))
            if flags != rows[i][1]:
                table[param] = (*rows[:i], (src, flags), *rows[i + 1 :])
                changed = True
        if not changed:
            break


def _assigned_from(fn: ast.AST, name: str, params: Sequence[str]) -> list[str]:
    """The parameter of `fn` each value it assigns to the local `name` is made from, when
    each is made from one (`table[dtype]`; a value computed from several, such as a model's
    config from its name and revision, stands for none of them)."""
    found: dict[str, None] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            read = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
            mine = read.intersection(params) - {name}
            if len(mine) > 1:
                return []
            found.update(dict.fromkeys(mine))
    return list(found)


def _validated(
    fn: ast.FunctionDef | ast.AsyncFunctionDef,
    prefix: str | None,
    args_names: frozenset[str],
    out: ParamSources,
) -> None:
    """A `@field_validator("a", ...)` method of a class holding launch arguments is handed
    those fields as its first parameter after cls/self."""
    params = _params(fn)[1:]
    if prefix is None or not params:
        return
    for deco in fn.decorator_list:
        if not (isinstance(deco, ast.Call) and _name(deco.func) == "field_validator"):
            continue
        for a in deco.args:
            if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value != "*":
                read = ast.Attribute(ast.Name("self"), a.value)
                row = (f"self.{a.value}", _ast_flags(read, args_names, prefix))
                table = out.setdefault(fn.name, {})
                table[params[0]] = (*table.get(params[0], ()), row)


def _name(func: ast.expr) -> str | None:
    return func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)


class _Owners:
    """The innermost function around a line, and the flag prefix of its class (None outside
    a class holding launch arguments), found by the functions' lines."""

    def __init__(self, tree: ast.Module, defs: Sequence[ast.AST] | None, classes) -> None:
        self.tree, self.defs, self.classes = tree, defs, classes
        self.spans: list[tuple[int, int, int, ast.AST, str | None]] | None = None

    def __call__(self, line: int) -> tuple[ast.AST | None, str | None]:
        if self.spans is None:
            self.spans = sorted(self._spans(), key=lambda s: s[:3])
        k = bisect.bisect_right(self.spans, line, key=lambda s: s[0])
        for _, last, _, fn, prefix in reversed(self.spans[:k]):
            if last >= line:
                return fn, prefix
        return None, None

    def _spans(self) -> Iterator[tuple[int, int, int, ast.AST, str | None]]:
        prefix_of: dict[int, str | None] = {}
        for node in self.tree.body:
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    prefix_of[id(item)] = self.classes.get(node.name)
        defs = self.defs
        if defs is None:
            defs = [n for n in ast.walk(self.tree) if isinstance(n, _FUNCTIONS)]
        for fn in defs:
            if isinstance(fn, _FUNCTIONS):
                yield (
                    fn.lineno,
                    fn.end_lineno or fn.lineno,
                    fn.col_offset,
                    fn,
                    prefix_of.get(id(fn)),
                )


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _params(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    return [a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)]


def _ast_flags(
    node: ast.AST,
    args_names: frozenset[str],
    prefix: str | None = None,
    *,
    view: Callable[[str], bool] | None = None,
    self_reads: bool = True,
) -> tuple[str, ...]:
    """`self.x` / `args.x` reads in an argument, as `--x` (undeclared ones are dropped later by
    filter_flags, like every other flag read); `self.x` in a config class (`prefix`) is that
    config's field, `--<prefix>.x`, and a path read through it is read whole
    (`self.parallel_config.enable_dbo`: `--<prefix>.parallel-config.enable-dbo`, which
    flags.FlagTable.resolve names). `view`: whether a name holds a config object
    (`parallel_config`), whose fields read as `--parallel-config.x`; `self_reads` False: `self`
    holds no launch arguments where `node` is (a method of another class)."""
    found = []
    inner: set[int] = set()  # attributes read as part of a longer path, or called
    for n in ast.walk(node):  # (breadth first: a path's outermost attribute comes first)
        if isinstance(n, ast.Call):
            inner.add(id(n.func))  # `self.cfg.is_x()`: a method, no field (`self.cfg` is read)
        if not isinstance(n, ast.Attribute) or id(n) in inner:
            continue
        attrs: list[str] = []
        cur: ast.expr = n
        while isinstance(cur, ast.Attribute):
            attrs.insert(0, cur.attr)
            inner.add(id(cur.value))
            cur = cur.value
        if not isinstance(cur, ast.Name):
            continue
        # (a private attribute is no field: the path ends before it)
        cut = next((i for i, a in enumerate(attrs) if a.startswith("_")), len(attrs))
        path, holder = attrs[:cut], cur.id
        if not path:
            continue
        if holder == "self" and self_reads:
            found.append("--" + ".".join([prefix, *path] if prefix else path).replace("_", "-"))
        elif holder in args_names:
            found.append("--" + ".".join(path).replace("_", "-"))
        elif view is not None and view(holder):
            found.append("--" + ".".join([holder, *path]).replace("_", "-"))
    return tuple(dict.fromkeys(found))


def predicates(
    stmts: Sequence[ast.stmt],
    args_names: frozenset[str],
    classes: dict[str, str],
    defs: Sequence[ast.AST],
    view: Callable[[str], bool] | None = None,
) -> tuple[dict[str, tuple[str, ...]], dict[str, str]]:
    """Method name -> the flags it tests, for each method of a class holding launch arguments
    (`classes`: class -> its fields' flag prefix) that takes only `self` and either only
    returns an expression over its fields, or returns a list it fills under tests of them
    (`_collected`): a guard that calls it reads them. And, of those that only return a test,
    method name -> that test's source (`enable_mamba_extra_buffer()`:
    `self.mamba_scheduler_strategy == 'extra_buffer'`): a guard that calls it reads as that
    test (records/names.py)."""
    out: dict[str, tuple[str, ...]] = {}
    code: dict[str, str] = {}
    for prefix, item in _methods(stmts, classes, defs):
        body = undocumented(item)
        if not body:
            continue
        if _params(item) != ["self"]:
            found = _none_unless(body, args_names, prefix)
        elif (test := returned_test(item)) is not None:
            found = _ast_flags(test, args_names, prefix)
            if found:
                code.setdefault(item.name, ast.unparse(test))
        else:
            found = _collected(body, args_names, prefix, view)
        if found:
            out.setdefault(item.name, found)
    return out, code


def _none_unless(
    body: Sequence[ast.stmt], args_names: frozenset[str], prefix: str
) -> tuple[str, ...]:
    """The flags that decide whether a method returns None at all, whatever it is passed:
    its top-level `if self.speculative_config is None: return None`, when every other return
    gives a value. (`speculative_config = self.create_speculative_config(model_config)`, then
    `if speculative_config is not None and ...`: that test is about --speculative-config.)"""
    exits = [
        s
        for s in body
        if isinstance(s, ast.If)
        and not s.orelse
        and len(s.body) == 1
        and isinstance(s.body[0], ast.Return)
        and _is_none(s.body[0].value)
    ]
    returns = [n for s in body for n in ast.walk(s) if isinstance(n, ast.Return)]
    mine = {id(s.body[0]) for s in exits}
    if not exits or any(_is_none(r.value) for r in returns if id(r) not in mine):
        return ()
    return tuple(dict.fromkeys(f for s in exits for f in _ast_flags(s.test, args_names, prefix)))


def _is_none(node: ast.expr | None) -> bool:
    return node is None or (isinstance(node, ast.Constant) and node.value is None)


def _collected(
    body: Sequence[ast.stmt],
    args_names: frozenset[str],
    prefix: str,
    view: Callable[[str], bool] | None,
) -> tuple[str, ...]:
    """The flags a method reads to fill the list it returns: `unsupported = []`, then
    `if self.parallel_config.enable_dbo: unsupported.append("dual batch overlap")`, ...,
    `return unsupported`. Each item is there because of the tests around its append; a check
    of the list (`if unsupported: raise ...`) is about those flags. () for any other body."""
    last = body[-1]
    if not (isinstance(last, ast.Return) and isinstance(last.value, ast.Name)):
        return ()
    name = last.value.id
    if not any(
        isinstance(s, (ast.Assign, ast.AnnAssign))
        and isinstance(s.value, ast.List)
        and not s.value.elts
        and any(isinstance(t, ast.Name) and t.id == name for t in _targets(s))
        for s in body
    ):
        return ()  # (the list it returns starts empty in its body)
    found: list[str] = []

    def visit(stmts: Sequence[ast.stmt], tests: tuple[ast.expr, ...]) -> None:
        for s in stmts:
            if isinstance(s, ast.If):
                visit(s.body, (*tests, s.test))
                visit(s.orelse, tests)  # (an elif is an If of its own: its test is its own)
            elif isinstance(s, (ast.For, ast.While, ast.With, ast.Try)):
                for block in ("body", "orelse", "finalbody"):
                    visit(getattr(s, block, []), tests)
                for h in getattr(s, "handlers", []):
                    visit(h.body, tests)
            elif _fills(s, name):
                for t in tests:
                    found.extend(_ast_flags(t, args_names, prefix, view=view))

    visit(body, ())
    return tuple(dict.fromkeys(found))


def _targets(s: ast.Assign | ast.AnnAssign) -> list[ast.expr]:
    return s.targets if isinstance(s, ast.Assign) else [s.target]


def _fills(s: ast.stmt, name: str) -> bool:
    """`name.append(...)` / `name.extend(...)` / `name += ...`."""
    if isinstance(s, ast.AugAssign):
        return isinstance(s.target, ast.Name) and s.target.id == name
    call = s.value if isinstance(s, ast.Expr) else None
    return (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr in ("append", "extend")
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id == name
    )


def _methods(
    stmts: Sequence[ast.stmt], classes: dict[str, str], defs: Sequence[ast.AST]
) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """(flag prefix, method) for each method of a class holding launch arguments, whole: from
    `defs` (every function of the file) where `stmts` is a large file's outline, whose
    functions are blanked (extractor/skeleton.py)."""
    whole = {d.lineno: d for d in defs if isinstance(d, _FUNCTIONS)}
    for node in stmts:
        if isinstance(node, ast.ClassDef) and node.name in classes:
            for item in node.body:
                if isinstance(item, _FUNCTIONS):
                    yield classes[node.name], whole.get(item.lineno, item)  # type: ignore[misc]


def caller_guards(
    stmts: Sequence[ast.stmt],
    args_names: frozenset[str],
    classes: dict[str, str],
    defs: Sequence[ast.AST],
    view: Callable[[str], bool],
) -> dict[str, tuple[str, ...]]:
    """What a check that reads no flag of its own is reached through: the flags the `if`
    tests around every call of its function read, when each call has such a test. Keys:
    `self.m` for a method of a class holding launch arguments, called through `self`
    (`if parallel_config.enable_expert_parallel: self._verify_with_expert_parallelism()`),
    and `f` for a module's function (`if self.max_num_partial_prefills > 1:
    _raise_unsupported_error(...)`), wherever in the file it is called. `view`: whether a
    name is a config object's (`parallel_config`), whose fields are read as its flags."""
    found: dict[str, list[tuple[str, ...]]] = {}

    def read(test: ast.expr, prefix: str | None) -> tuple[str, ...]:
        return _ast_flags(test, args_names, prefix, view=view, self_reads=prefix is not None)

    def visit(node: ast.AST, tests: tuple[str, ...], prefix: str | None) -> None:
        if isinstance(node, (*_FUNCTIONS, ast.ClassDef, ast.Lambda)):
            return  # a scope of its own
        if isinstance(node, ast.If):
            visit(node.test, tests, prefix)
            for stmt in node.body:
                visit(stmt, (*tests, *read(node.test, prefix)), prefix)
            # (an `elif` chain is mostly about other things: each branch its own test)
            for stmt in node.orelse:
                visit(stmt, tests, prefix)
            return
        func = node.func if isinstance(node, ast.Call) else None
        if isinstance(func, ast.Name):
            found.setdefault(func.id, []).append(tests)
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            if func.value.id == "self" and prefix is not None:
                found.setdefault(f"self.{func.attr}", []).append(tests)
        for child in ast.iter_child_nodes(node):
            visit(child, tests, prefix)

    methods = list(_methods(stmts, classes, defs))
    for prefix, item in methods:
        for stmt in item.body:
            visit(stmt, (), prefix)
    mine = {id(item) for _, item in methods}
    for fn in defs:
        if isinstance(fn, _FUNCTIONS) and id(fn) not in mine:
            for stmt in fn.body:
                visit(stmt, (), None)
    for stmt in stmts:  # module-level calls
        visit(stmt, (), None)
    return {
        name: tuple(dict.fromkeys(f for t in calls for f in t))
        for name, calls in found.items()
        if all(calls)  # (a call under no test of a flag: any launch may reach it)
    }


def action_flags(decls: Sequence[FlagDecl]) -> dict[str, tuple[str, ...]]:
    """argparse Action class name -> the flags declared with `action=` that class."""
    out: dict[str, tuple[str, ...]] = {}
    for d in decls:
        if d.action and d.action.isidentifier():
            out[d.action] = (*out.get(d.action, ()), d.name)
    return out


def imported_constants(stmts: Sequence[ast.stmt]) -> dict[str, str]:
    """`from pkg.mod import CHUNK_SIZE as FLA_CHUNK_SIZE` -> {"FLA_CHUNK_SIZE":
    "pkg.mod:CHUNK_SIZE"} for UPPER_CASE names (constants by convention); a relative import
    keeps its dots ("..mod:NAME"). A file is extracted alone; imports.py reads the value
    from the module at the same revision afterwards."""
    out: dict[str, str] = {}
    for node in stmts:
        if isinstance(node, ast.ImportFrom) and (node.module or node.level):
            module = "." * node.level + (node.module or "")
            for a in node.names:
                bound = a.asname or a.name
                if a.name != "*" and a.name.isupper() and bound.isupper():
                    out[bound] = f"{module}:{a.name}"
    return out


# ---------------------------------------------------------------- per site (libcst)


class _NameReads(cst.CSTVisitor):
    """Plain names an expression reads, first-seen order: not attribute names, not the called
    function's own name, not keyword names."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        walk(self, node.value)
        return False

    def visit_Call(self, node: cst.Call) -> bool:
        if not isinstance(node.func, cst.Name):
            walk(self, node.func)
        for arg in node.args:
            walk(self, arg.value)
        return False

    def visit_Name(self, node: cst.Name) -> None:
        if node.value not in ("True", "False", "None") and node.value not in self.found:
            self.found.append(node.value)


class _MethodCalls(cst.CSTVisitor):
    """`(receiver, method)` of each call without arguments on a plain name (`self.m()`)."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, str]] = []

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if (
            not node.args
            and isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and (func.value.value, func.attr.value) not in self.found
        ):
            self.found.append((func.value.value, func.attr.value))


def methods_called(
    nodes: Sequence[cst.CSTNode | None], memo: dict[int, list[tuple[str, str]]]
) -> list[tuple[str, str]]:
    """The `(receiver, method)` calls without arguments `nodes` make, first-seen order."""
    return _gathered(nodes, memo, _MethodCalls)


def names_read(nodes: Sequence[cst.CSTNode | None], memo: dict[int, list[str]]) -> list[str]:
    """The plain names `nodes` read, first-seen order."""
    return _gathered(nodes, memo, _NameReads)


def _gathered(nodes: Sequence[cst.CSTNode | None], memo: dict[int, list], visitor: type) -> list:
    """What a `visitor` finds (its `found`) in `nodes`, first-seen order; `memo` (per node)
    because the guard tests of a block are shared by all its sites."""
    out: list = []
    for node in nodes:
        if node is None:
            continue
        found = memo.get(id(node))
        if found is None:
            seen = visitor()
            walk(seen, node)
            found = memo[id(node)] = seen.found
        out.extend(x for x in found if x not in out)
    return out


def constant(name: str, value: object) -> Binding | None:
    """A constant worth showing by value: a literal or a short list of literals."""
    if isinstance(value, (list, tuple, set, frozenset)):
        if not all(isinstance(v, _LITERALS) for v in value):
            return None
        if isinstance(value, (set, frozenset)):
            value = sorted(value, key=repr)
    elif not isinstance(value, _LITERALS):
        return None
    text = repr(value)
    return Binding(name, "constant", text) if len(text) <= 200 else None


def unpacked(
    assigns: Sequence[cst.Assign], name: str, is_args: Callable[[cst.BaseExpression], bool]
):
    """`a, b = <call on the launch arguments>`: (call, index of `name`) when that is the only
    assignment to `name` among the function's `assigns` (function_assignments); else None."""
    found: list[tuple[cst.Call, int]] = []
    others = 0
    for node in assigns:
        for target in node.targets:
            t = target.target
            if isinstance(t, cst.Name) and t.value == name:
                others += 1
            elif isinstance(t, (cst.Tuple, cst.List)):
                names = [
                    e.value.value if isinstance(e.value, cst.Name) else None for e in t.elements
                ]
                if name in names:
                    if isinstance(node.value, cst.Call) and _on_args(node.value, is_args):
                        found.append((node.value, names.index(name)))
                    else:
                        others += 1
    return found[0] if len(found) == 1 and not others else None


def tuple_targets(fn: ast.AST) -> dict[str, list[tuple[ast.Assign, list[str | None] | None]]]:
    """Each name's assignments in the function, in walk order, as (assignment, the names of
    its tuple target, or None for a plain `name = ...`): what `ast_unpacked` reads, found in
    one walk rather than one per name."""
    out: dict[str, list[tuple[ast.Assign, list[str | None] | None]]] = {}
    for node in ast.walk(fn):
        if not isinstance(node, ast.Assign):
            continue  # (ast.walk descends into nested defs: their names are rare enough here)
        for t in node.targets:
            if isinstance(t, ast.Name):
                out.setdefault(t.id, []).append((node, None))
            elif isinstance(t, (ast.Tuple, ast.List)):
                names = [e.id if isinstance(e, ast.Name) else None for e in t.elts]
                for name in dict.fromkeys(n for n in names if n is not None):
                    out.setdefault(name, []).append((node, names))
    return out


def ast_unpacked(
    targets: dict[str, list[tuple[ast.Assign, list[str | None] | None]]],
    name: str,
    is_args: Callable[[ast.AST], bool],
):
    """`unpacked` on the function's stdlib tree (its `tuple_targets`): (call source, index)
    or None."""
    found: list[tuple[ast.Call, int]] = []
    others = 0
    for node, names in targets.get(name, ()):
        if names is None:
            others += 1
            continue
        call = node.value
        on_args = isinstance(call, ast.Call) and (
            (isinstance(call.func, ast.Attribute) and is_args(call.func.value))
            or any(is_args(a) for a in call.args)
        )
        if on_args:
            found.append((call, names.index(name)))
        else:
            others += 1
    if len(found) == 1 and not others:
        return ast.unparse(found[0][0]), found[0][1]
    return None


def _on_args(call: cst.Call, is_args: Callable[[cst.BaseExpression], bool]) -> bool:
    if isinstance(call.func, cst.Attribute) and is_args(call.func.value):
        return True
    return any(is_args(a.value) for a in call.args)


def function_assignments(fn: cst.FunctionDef) -> list[cst.Assign]:
    out: list[cst.Assign] = []

    class _Find(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            out.append(node)

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is fn  # a nested def has its own locals

    walk(_Find(), fn)
    return out


Assigned = tuple[str, cst.BaseExpression, int, str]  # (attr, value, line, dotted path)


def flag_assignments(
    path: Sequence[cst.CSTNode],
    start: int,
    path_of: Callable[[cst.BaseExpression], str | None],
    line_of: Callable[[cst.CSTNode], int],
    memo: dict[int, Any],
    may_assign: Callable[[cst.CSTNode], set[str] | None] = lambda stmt: None,
) -> tuple[list[Assigned], list[Assigned]]:
    """Assignments `<args>.attr = value` around the site, as (attr, value, line, dotted):
    (unconditional ones on the path before the site, ones after it in its own block).
    `path_of` reads an assignment's holder: None when it holds no launch arguments, else its
    path ("" for the args object itself), so `dotted` is the assigned field's whole path
    (`pass_config.enable_sp` for `pass_config.enable_sp = False`), or `attr`.
    `memo` is the function's scratch, shared by its sites: what each statement may assign, and
    each block's statements folded so far (`_BlockFold`), so the work is linear in the
    statements of a function, not in statements times sites (1,600 checks took 8 s here)."""
    before: list[Assigned] = []
    after: list[Assigned] = []
    own = _own_block(path)
    for i in range(start, len(path) - 1):
        node, child = path[i], path[i + 1]
        if not isinstance(node, cst.IndentedBlock):
            continue
        fold = memo.get(id(node))
        if fold is None:
            fold = memo[id(node)] = _BlockFold(node, path_of, line_of, memo, may_assign)
        idx = fold.pos.get(id(child))
        if idx is None:
            continue
        # A later assignment the path may or may not run (in a branch, a loop, `+=`) makes an
        # earlier unconditional one no longer the value the check reads.
        clobbered, kept = fold.upto(idx)
        before = [b for b in before if b[0] not in clobbered] + kept
        if node is own:
            after.extend(fold.after(idx))
    return before, after


class _BlockFold:
    """The statements of one block read once for every site in it: sites come in source
    order, so the fold up to a site's statement goes on from where the previous site's ended."""

    def __init__(self, block, path_of, line_of, memo, may_assign) -> None:
        self.body = block.body
        self.pos = {id(stmt): k for k, stmt in enumerate(self.body)}
        self.path_of, self.line_of, self.memo, self.may_assign = path_of, line_of, memo, may_assign
        self.done = 0  # statements folded
        self.clobbered: set[str] = set()  # attributes a folded statement may assign
        self.kept: list[Assigned] = []  # assignments still standing
        # every assignment of the block, and where each statement's begin (for `after`)
        self.tail: tuple[list, list[int]] | None = None

    def _simple(self, k: int) -> list:
        return _simple_assignments(self.body[k], self.path_of, self.line_of)

    def _maybe(self, stmt: cst.CSTNode) -> set[str]:
        maybe = self.memo.get(id(stmt))
        if maybe is None:
            # the stdlib tree of the statement when the caller has it (cheap), else libcst
            maybe = self.may_assign(stmt)
            maybe = self.memo[id(stmt)] = (
                maybe
                if maybe is not None
                else _maybe_assigned(stmt, lambda n: self.path_of(n) is not None)
            )
        return maybe

    def upto(self, idx: int) -> tuple[set[str], list[Assigned]]:
        """(attributes body[:idx] may assign, its unconditional assignments still standing)."""
        if idx < self.done:  # (a site out of order: fold again from the start)
            self.done, self.clobbered, self.kept = 0, set(), []
        for k in range(self.done, idx):
            maybe = self._maybe(self.body[k])
            if maybe:
                self.clobbered |= maybe
                self.kept = [b for b in self.kept if b[0] not in maybe]
            self.kept.extend(self._simple(k))
        self.done = idx
        return self.clobbered, self.kept

    def after(self, idx: int) -> list[Assigned]:
        """The unconditional assignments of body[idx + 1:] (read once; their lines are not
        known yet, since the visit has not reached them, and nobody reads them)."""
        if self.tail is None:
            flat: list = []
            starts = []
            for k in range(len(self.body)):
                starts.append(len(flat))
                flat.extend(self._simple(k))
            starts.append(len(flat))
            self.tail = (flat, starts)
        flat, starts = self.tail
        return flat[starts[idx + 1] :]


def _maybe_assigned(stmt: cst.CSTNode, is_args: Callable[[cst.BaseExpression], bool]) -> set[str]:
    """Attributes of the launch arguments a compound statement may assign, or a simple one
    changes in place (`+=`)."""
    found: set[str] = set()
    if isinstance(stmt, cst.SimpleStatementLine):
        # a `+=` is one of the line's own statements: no visitor over the line's expressions
        # (most of a block is such lines, and the visit of each was 3% of a backfill)
        for small in stmt.body:
            if isinstance(small, cst.AugAssign):
                t = small.target
                if isinstance(t, cst.Attribute) and is_args(t.value):
                    found.add(t.attr.value)
        return found

    class _Find(cst.CSTVisitor):
        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            self._target(node.target)

        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            if not isinstance(stmt, cst.SimpleStatementLine):
                self._target(node.target)

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            if not isinstance(stmt, cst.SimpleStatementLine):
                self._target(node.target)

        def _target(self, t: cst.BaseExpression) -> None:
            if isinstance(t, cst.Attribute) and is_args(t.value):
                found.add(t.attr.value)

    walk(_Find(), stmt)
    return found


def ast_maybe_assigned(stmt: ast.AST, args_names: set[str]) -> set[str]:
    """_maybe_assigned on the stdlib tree of the same statement (keep the two in step)."""
    simple = not isinstance(stmt, (ast.If, ast.For, ast.While, ast.With, ast.Try, ast.Match))
    out = set()
    for n in ast.walk(stmt):
        if isinstance(n, ast.AugAssign) or (
            not simple and isinstance(n, (ast.Assign, ast.AnnAssign))
        ):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            for t in targets:
                if (
                    isinstance(t, ast.Attribute)
                    and isinstance(t.value, ast.Name)
                    and t.value.id in args_names
                ):
                    out.add(t.attr)
    return out


def _own_block(path: Sequence[cst.CSTNode]) -> cst.CSTNode | None:
    for node in reversed(path):
        if isinstance(node, cst.IndentedBlock):
            return node
    return None


def _simple_assignments(stmt, path_of, line_of) -> list[Assigned]:
    if not isinstance(stmt, cst.SimpleStatementLine):
        return []
    out = []
    for small in stmt.body:
        if isinstance(small, (cst.Assign, cst.AnnAssign)):
            targets = (
                [t.target for t in small.targets]
                if isinstance(small, cst.Assign)
                else [small.target]
            )
            for t in targets:
                if (
                    not isinstance(t, cst.Attribute)
                    or small.value is None
                    or t.attr.value.startswith("_")
                ):
                    continue
                holder = path_of(t.value)
                if holder is not None:
                    dotted = f"{holder}.{t.attr.value}" if holder else t.attr.value
                    out.append((t.attr.value, small.value, line_of(small), dotted))
    return out


def source(node: cst.CSTNode) -> str:
    return normalise(code(node))
