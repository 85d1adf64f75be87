"""Which validation steps run before a check, read from the revision's own source.

The validator is a method (`__post_init__`) whose body is a sequence of steps
(`self._handle_x()`), followed by further check methods the launch calls afterwards
(`check_server_args`). To run "up to and including the record's function", the harness needs,
for each top-level statement of those methods, every function it can reach; the first
statement that reaches the record's function is where the run stops.

Reachability follows `self.m(...)` calls within the class and calls of module-level functions
of the loaded modules (`handle_x(self)` imported from an arg-groups module). A nested function
counts as part of the function that defines it. Pure stdlib `ast`: the parent uses it to say
why a record is not applicable, the child to truncate the run.
"""

from __future__ import annotations

import ast
import copy
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

Node = tuple[str, str]  # (file path, qualified function name: "ServerArgs._handle_x", "handle_y")


@dataclass(frozen=True)
class Step:
    phase: str  # the method the statement belongs to: "__post_init__" | "check_server_args"
    index: int  # its position among that method's top-level statements
    line: int
    end_line: int
    text: str  # the statement's first line, for the outcome's "ran up to ..."


@dataclass(frozen=True)
class StepPlan:
    """The ordered steps of validation and what each one reaches."""

    steps: tuple[Step, ...]
    reach: tuple[frozenset[Node], ...]  # per step
    phases: tuple[str, ...]  # the methods found, in run order
    main_file: str = ""
    args_class: str = ""
    missing: tuple[str, ...] = ()  # phase methods the spec names that this revision lacks

    def stop_for(self, node: Node, line: int = 0) -> Step | None:
        """The first step that reaches `node` (its function or a nested one), or None. A site
        in a phase method's own body (`line` given) stops at the statement holding it."""
        file, func = node
        for step, reach in zip(self.steps, self.reach, strict=True):
            if file == self.main_file and func == f"{self.args_class}.{step.phase}":
                if step.line <= line <= step.end_line:
                    return step
                continue
            for f, q in reach:
                if f == file and (q == func or func.startswith(q + ".")):
                    return step
        return None


def plan_steps(
    sources: Mapping[str, str],
    main_file: str,
    args_class: str,
    phases: Sequence[str],
    trees: Mapping[str, ast.Module] | None = None,
) -> StepPlan:
    """The steps of `phases` (methods of `args_class` in `main_file`), with their reach over
    every function defined in `sources` (path -> text; `trees`: the same already parsed)."""
    trees = trees or {path: ast.parse(text) for path, text in sources.items()}
    defs = _definitions(trees)
    by_name: dict[str, list[Node]] = {}
    for n in defs:
        by_name.setdefault(n[1], []).append(n)
    graph = {node: _callees(node, fn, by_name, args_class) for node, fn in defs.items()}
    steps, reach, found, missing = [], [], [], []
    for phase in phases:
        fn = defs.get((main_file, f"{args_class}.{phase}"))
        if fn is None:
            missing.append(phase)
            continue
        found.append(phase)
        for i, stmt in enumerate(fn.body):
            if i == 0 and _is_docstring(stmt):
                continue
            start = _callees((main_file, f"{args_class}.{phase}"), stmt, by_name, args_class)
            end = stmt.end_lineno or stmt.lineno
            steps.append(Step(phase, i, stmt.lineno, end, _first_line(sources[main_file], stmt)))
            reach.append(_closure(start, graph))
    return StepPlan(tuple(steps), tuple(reach), tuple(found), main_file, args_class, tuple(missing))


def _is_docstring(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def _first_line(text: str, stmt: ast.stmt) -> str:
    lines = text.splitlines()
    return lines[stmt.lineno - 1].strip() if 0 < stmt.lineno <= len(lines) else ""


def _definitions(trees: Mapping[str, ast.Module]) -> dict[Node, ast.AST]:
    """Every top-level function and method (qualified like the extractor: `Class.method`)."""
    out: dict[Node, ast.AST] = {}
    for path, tree in trees.items():
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out[(path, node.name)] = node
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        out[(path, f"{node.name}.{item.name}")] = item
    return out


def _callees(
    node: Node, body: ast.AST, by_name: Mapping[str, list[Node]], args_class: str
) -> set[Node]:
    """Functions `body` calls: `self.m()` (a method of the args class, in any loaded file) and
    bare `f()` (a module-level function of a loaded file). The enclosing node itself counts,
    so nested helpers are reached with their parent."""
    out = {node} if isinstance(body, (ast.FunctionDef, ast.AsyncFunctionDef)) else set()
    for sub in ast.walk(body):
        if not isinstance(sub, ast.Call):
            continue
        f = sub.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self":
            out.update(by_name.get(f"{args_class}.{f.attr}", ()))
        elif isinstance(f, ast.Name):
            out.update(by_name.get(f.id, ()))
    return out


def _closure(start: set[Node], graph: Mapping[Node, set[Node]]) -> frozenset[Node]:
    seen, todo = set(start), list(start)
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return frozenset(seen)


def resets(text: str, function: str | None) -> dict[str, list[tuple[int, str, bool]]]:
    """attribute -> [(line, test, holds)]: the `if` tests under which `function` assigns
    `self.attribute` (the branch taken when the test `holds`). A launch option can be
    overwritten that way before a later guard reads it."""
    fn = _function(text, function)
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
            targets: list[ast.expr] = []
            if isinstance(stmt, ast.Assign):
                targets = list(stmt.targets)
            elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
                targets = [stmt.target]
            for t in targets:
                if (
                    isinstance(t, ast.Attribute)
                    and isinstance(t.value, ast.Name)
                    and t.value.id == "self"
                    and ifs
                ):
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
def _defs_of(text: str) -> dict[Node, ast.AST]:
    """The functions of one source text, parsed once (the search asks per guard)."""
    try:
        return _definitions({"": ast.parse(text)})
    except SyntaxError:
        return {}


def _function(text: str, function: str | None) -> ast.AST | None:
    return _defs_of(text).get(("", function)) if function else None


@functools.lru_cache(maxsize=4096)
def inline_locals(
    text: str, function: str | None, test: str, line: int, params: tuple[tuple[str, str], ...] = ()
) -> str:
    """`test` with each local it reads replaced by the expression assigned to it before
    `line` (when assigned exactly once there), so that the guard reads `self.x` directly and
    a changed attribute changes it: `prefill_attn_backend in supported` becomes
    `self.get_attention_backends()[0] in ['triton', ...]`. `params`: (name, expression) a
    parameter holds on the path (see `parameters`)."""
    fn = _function(text, function)
    node = _parse_expr(test)
    if fn is None or node is None:
        return test
    defs: dict[str, list[ast.expr]] = {}
    for sub in ast.walk(fn):
        if not isinstance(sub, ast.Assign) or sub.lineno >= line or len(sub.targets) != 1:
            if isinstance(sub, (ast.AugAssign, ast.AnnAssign, ast.For, ast.With)):
                for t in ast.walk(sub.target if not isinstance(sub, ast.With) else sub):
                    if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store):
                        defs.setdefault(t.id, []).extend([None, None])  # type: ignore[list-item]
            continue
        target = sub.targets[0]
        # An attribute of self counts only when set unconditionally (a statement of the
        # function's own body): set in a branch, it keeps its earlier value on other paths.
        top = any(sub is stmt for stmt in fn.body)  # type: ignore[attr-defined]
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
            expr = _parse_expr(source)
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


def _key(node: ast.expr) -> str:
    """A local's name, or "self.x" for an attribute of self; "" for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"self.{node.attr}" if node.value.id == "self" else ""
    return ""


def _parse_expr(test: str) -> ast.expr | None:
    try:
        return ast.parse(test, mode="eval").body
    except SyntaxError:
        return None


@functools.lru_cache(maxsize=1024)
def call_guards(
    text: str, args_class: str, function: str | None
) -> tuple[str, list[tuple[int, str, bool]]] | None:
    """Where `function` is called from within the file, and the `if` tests on the way to that
    call: (caller, [(line, test, holds)]). The first call site in the file is taken."""
    found = _call_site(text, args_class, function)
    return (found[0], found[1]) if found else None


@functools.lru_cache(maxsize=1024)
def parameters(text: str, args_class: str, function: str | None) -> dict[str, str]:
    """parameter -> the argument expression of the first call site (`buckets_rule` ->
    `self.prompt_tokens_buckets`), or its default: what the parameter holds on that path."""
    fn = _function(text, function)
    found = _call_site(text, args_class, function)
    if fn is None:
        return {}
    args = fn.args  # type: ignore[attr-defined]
    names = [a.arg for a in [*args.posonlyargs, *args.args]]
    if names and names[0] == "self" and function and function.startswith(f"{args_class}."):
        names = names[1:]
    out: dict[str, str] = {}
    defaults = dict(zip(names[len(names) - len(args.defaults) :], args.defaults, strict=True))
    for name, default in defaults.items():
        out[name] = ast.unparse(default)
    if found is not None:
        call = found[2]
        for name, arg in zip(names, call.args, strict=False):
            out[name] = ast.unparse(arg)
        for kw in call.keywords:
            if kw.arg in names:
                out[kw.arg] = ast.unparse(kw.value)
    return out


def _call_site(
    text: str, args_class: str, function: str | None
) -> tuple[str, list[tuple[int, str, bool]], ast.Call] | None:
    if not function:
        return None
    name = function.rsplit(".", 1)[-1]
    is_method = function.startswith(f"{args_class}.")
    return _call_index(text).get((name, is_method))


@functools.lru_cache(maxsize=1024)
def call_sites(
    text: str, args_class: str, function: str | None, limit: int = 3
) -> list[tuple[str, list[tuple[int, str, bool]], dict[str, str]]]:
    """Up to `limit` call sites of `function`: (caller, the ifs on the way, parameter ->
    argument expression). A helper called with different arguments from different branches
    (`support_mamba_cache=False` for one model, True for another) is reached through one."""
    if not function:
        return []
    name = function.rsplit(".", 1)[-1]
    is_method = function.startswith(f"{args_class}.")
    fn = _function(text, function)
    return [
        (caller, ifs, _bind(fn, call, is_method))
        for caller, ifs, call in _all_calls(text).get((name, is_method), [])[:limit]
    ]


def _bind(fn: ast.AST | None, call: ast.Call | None, is_method: bool) -> dict[str, str]:
    """parameter -> the argument expression the call passes, else its default."""
    if fn is None:
        return {}
    args = fn.args  # type: ignore[attr-defined]
    names = [a.arg for a in [*args.posonlyargs, *args.args]]
    if names and names[0] == "self" and is_method:
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
    for (_, caller), fn in _defs_of(text).items():
        for ifs, call in _calls_in(fn.body, ()):  # type: ignore[attr-defined]
            f = call.func
            if (
                isinstance(f, ast.Attribute)
                and isinstance(f.value, ast.Name)
                and f.value.id == "self"
            ):
                key = (f.attr, True)
            elif isinstance(f, ast.Name):
                key = (f.id, False)
            else:
                continue
            if not caller.endswith(f".{key[0]}") and caller != key[0]:
                out.setdefault(key, []).append((caller, list(ifs), call))
    return out


@functools.lru_cache(maxsize=8)
def _call_index(
    text: str,
) -> dict[tuple[str, bool], tuple[str, list[tuple[int, str, bool]], ast.Call]]:
    """(callee name, called on self) -> (caller, the ifs on the way, the call), the first call
    site in file order: one walk of the file instead of one per function asked about."""
    out: dict[tuple[str, bool], tuple[str, list[tuple[int, str, bool]], ast.Call]] = {}
    for (_, caller), fn in _defs_of(text).items():
        for ifs, call in _calls_in(fn.body, ()):  # type: ignore[attr-defined]
            f = call.func
            if (
                isinstance(f, ast.Attribute)
                and isinstance(f.value, ast.Name)
                and f.value.id == "self"
            ):
                key = (f.attr, True)
            elif isinstance(f, ast.Name):
                key = (f.id, False)
            else:
                continue
            if not caller.endswith(f".{key[0]}") and caller != key[0]:
                out.setdefault(key, (caller, list(ifs), call))
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
    for (_, qual), fn in _defs_of(text).items():
        cls, _, name = qual.partition(".")
        if cls != args_class or not name:
            continue
        reads, called = set(), set()
        for n in ast.walk(fn):
            if (
                isinstance(n, ast.Attribute)
                and isinstance(n.value, ast.Name)
                and n.value.id == "self"
            ):
                reads.add(n.attr)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
                f = n.func
                if isinstance(f.value, ast.Name) and f.value.id == "self":
                    called.add(f.attr)
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
    fn = _function(text, function)
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
    for (_, qual), _fn in _defs_of(text).items():
        if not qual.startswith(f"{args_class}."):
            continue
        for attr, found in resets(text, qual).items():
            out.setdefault(attr, []).extend((qual, *f) for f in found)
    return out
