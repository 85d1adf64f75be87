"""What a flag class's phases assign before a check: `__post_init__` calls `_handle_*` methods
one after another, and a field one of them sets (`if self.dp_size == 1: self.enable_dp_lm_head =
False`) is what every later check reads. Reads the file with the stdlib parser, once per text.
"""

from __future__ import annotations

import ast
import operator
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


@lru_cache(maxsize=2)
def _parsed(text: str) -> ast.Module | None:
    """One parse of a file's text for all that is read of it here (a revision's records ask
    for each of their sites in turn)."""
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


def _class_defs(text: str) -> list[ast.ClassDef]:
    """The module's top-level classes ([] when the text does not parse)."""
    tree = _parsed(text)
    return [c for c in tree.body if isinstance(c, ast.ClassDef)] if tree is not None else []


def _methods(cls: ast.ClassDef) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    return {f.name: f for f in cls.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}


@lru_cache(maxsize=8)
def _phases(
    text: str, entries: tuple[str, ...]
) -> dict[str, tuple[dict[str, tuple[int, ...]], tuple[_Entry, ...]]]:
    """class -> (method -> when it runs, every assignment of those methods in run order).
    `when` is the entry's index, then the line of each call on the way: comparing two such
    tuples (a statement's line appended) tells which runs first."""
    out = {}
    for cls in _class_defs(text):
        methods = _methods(cls)
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


def called_under(
    text: str, function: str | None, guards: Sequence[tuple[str, bool]] = (), line: int = 0
) -> str:
    """The test a method of a class is only ever called under, when it reads nothing of the
    launch (what a launch sets is the extractor's: `Site.reached`): a helper called for some
    models only (`model_arch in ['NemotronHForCausalLM', 'Lfm2ForCausalLM']`, the architectures
    of every call in one list), or under the same test at every call (`not is_npu()`).

    A call never reaches the site at `line` when its constant arguments take one of the
    site's `guards` (test, whether it holds on the way) the other way (`support_mamba_cache=
    False` stops before a check that needs it true), or turn on an earlier check of the
    method that the site's own way fails (`if not support_extra: assert not self.extra()`,
    before a site under `self.extra()`). "" when a call is under no test, or the calls'
    tests differ otherwise."""
    if not function or function.count(".") != 1:
        return ""
    cls, _, method = function.partition(".")
    found = _under(text).get(cls, {}).get(method)
    if not found:
        return ""
    before = [c for c in _checks(text).get(function, ()) if c[0] < line]
    chains = [
        chain
        for chain, args in found
        if _may_reach(args, guards) and not _stopped(args, before, guards)
    ]
    if not chains or not all(chains):
        return ""
    if len(set(chains)) == 1:
        return " and ".join(chains[0])
    # the calls under a test of values alone (`elif model_arch in [...]:`), their values in one
    # list; a call under more than that (`is_deepseek_nsa(hf_config)` too) narrows its values
    # in a way a list cannot say, and is left out ("a model such as": not all of them)
    picked = [_one_of(chain) for chain in chains if len(chain) == 1]
    names = {p[0] for p in picked if p}
    if picked and all(picked) and len(names) == 1:
        values = dict.fromkeys(v for p in picked for v in p[1])  # type: ignore[index]
        return f"{names.pop()} in [{', '.join(values)}]"
    return ""


_Call = tuple[tuple[str, ...], tuple[tuple[str, object], ...]]  # (tests around it, constants)


@lru_cache(maxsize=8)
def _under(text: str) -> dict[str, dict[str, list[_Call]]]:
    """class -> method -> for each `self.m(...)` call in the class: the tests of the ifs around
    it in its method that read no field of `self` (outermost first), and the constant value
    each parameter gets (the method's defaults, then the call's own constants)."""
    out: dict[str, dict[str, list[_Call]]] = {}
    for cls in _class_defs(text):
        methods = _methods(cls)
        calls: dict[str, list[_Call]] = {}
        for fn in methods.values():
            _calls_in(fn.body, (), calls, methods)
        out[cls.name] = calls
    return out


def _calls_in(body: Sequence[ast.stmt], tests: tuple[str, ...], calls: dict, methods: dict) -> None:
    """Each `self.m(...)` call in `body`, with the tests around it (`tests`, then the ifs on
    the way); an `else` adds nothing known, an `elif` its own test."""
    for stmt in body:
        if isinstance(stmt, ast.If):
            _record(stmt.test, tests, calls, methods)
            inner = (*tests, ast.unparse(stmt.test)) if not _reads_self(stmt.test) else tests
            _calls_in(stmt.body, inner, calls, methods)
            _calls_in(stmt.orelse, tests, calls, methods)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue  # its own scope
        else:
            blocks = [s for s in ast.iter_child_nodes(stmt) if isinstance(s, ast.stmt)]
            for child in ast.iter_child_nodes(stmt):
                if not isinstance(child, ast.stmt):
                    _record(child, tests, calls, methods)
            _calls_in(blocks, tests, calls, methods)  # a loop, try or with: the same tests


def _record(node: ast.AST, tests: tuple[str, ...], calls: dict, methods: dict) -> None:
    for n in ast.walk(node):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and _is_self(n.func.value):
            target = methods.get(n.func.attr)
            args = _constants(target, n) if target is not None else ()
            calls.setdefault(n.func.attr, []).append((tests, args))


def _constants(fn: ast.FunctionDef | ast.AsyncFunctionDef, call: ast.Call):
    """The constant value of each parameter of `fn` for `call`: its default, else what the
    call passes, by position or keyword (a parameter given anything else is left out)."""
    a = fn.args
    params = [p.arg for p in (*a.posonlyargs, *a.args)][1:]  # (self)
    values: dict[str, object] = {}
    for p, d in zip(reversed(params), reversed(a.defaults), strict=False):  # (the last have them)
        values[p] = d
    for p, d in zip((k.arg for k in a.kwonlyargs), a.kw_defaults, strict=True):
        if d is not None:
            values[p] = d
    for p, v in zip(params, call.args, strict=False):  # (the first, by position)
        values[p] = v
    for k in call.keywords:
        if k.arg:
            values[k.arg] = k.value
    out = []
    for p, node in values.items():
        try:
            out.append((p, ast.literal_eval(node)))
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue
    return tuple(out)


def _may_reach(args: tuple[tuple[str, object], ...], guards: Sequence[tuple[str, bool]]) -> bool:
    """False when the call's constants decide one of the site's guards the other way."""
    known = dict(args)
    for test, holds in guards:
        got = _value(test, known)
        if got is not None and bool(got) != holds:
            return False
    return True


_Check = tuple[int, str, str | None]  # (line, the if's test, what it asserts; None: it raises)


@lru_cache(maxsize=8)
def _checks(text: str) -> dict[str, tuple[_Check, ...]]:
    """ "Cls.method" -> the checks at the top of its body under an if: `if t: assert a` or
    `if t: raise ...`, in line order."""
    out = {}
    for cls in _class_defs(text):
        for fn in _methods(cls).values():
            found = []
            for stmt in fn.body:
                if isinstance(stmt, ast.If) and not stmt.orelse and len(stmt.body) == 1:
                    inner = stmt.body[0]
                    test = ast.unparse(stmt.test)
                    if isinstance(inner, ast.Assert):
                        found.append((stmt.lineno, test, ast.unparse(inner.test)))
                    elif isinstance(inner, ast.Raise):
                        found.append((stmt.lineno, test, None))
            out[f"{cls.name}.{fn.name}"] = tuple(found)
    return out


def _stopped(
    args: tuple[tuple[str, object], ...],
    before: Sequence[_Check],
    guards: Sequence[tuple[str, bool]],
) -> bool:
    """Whether an earlier check that the call's constants turn on stops it before the site:
    one that raises, or asserts what the site's own guards deny."""
    known = dict(args)
    ways = {" ".join(t.split()): h for t, h in guards}
    for _, test, asserted in before:
        if not _value(test, known):
            continue  # (off for this call, or not decided by its constants)
        if asserted is None:
            return True
        inner, wanted = (asserted[4:], False) if asserted.startswith("not ") else (asserted, True)
        got = ways.get(" ".join(inner.split()))
        if got is not None and got != wanted:
            return True
    return False


_UNKNOWN = object()


@lru_cache(maxsize=4096)
def _expr(test: str) -> ast.expr | None:
    """A guard's test parsed once: each site's guards are weighed against every call of its
    method, and its callers' tests read for every site of the method."""
    try:
        return ast.parse(test, mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


def _value(test: str, known: dict[str, object]) -> object:
    """`test` over the parameters' constants: names, constants, not/and/or and comparisons;
    None when it reads anything else."""
    node = _expr(test)
    got = _eval(node, known) if node is not None else _UNKNOWN
    return None if got is _UNKNOWN else got


_COMPARE = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
}


def _eval(node: ast.expr, known: dict[str, object]) -> object:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return known.get(node.id, _UNKNOWN)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        v = _eval(node.operand, known)
        return _UNKNOWN if v is _UNKNOWN else not v
    if isinstance(node, ast.BoolOp):
        values = [_eval(v, known) for v in node.values]
        if _UNKNOWN in values:
            return _UNKNOWN
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        left, right = _eval(node.left, known), _eval(node.comparators[0], known)
        if _UNKNOWN in (left, right):
            return _UNKNOWN
        compare = _COMPARE.get(type(node.ops[0]))
        if compare is not None:
            return compare(left, right)
    return _UNKNOWN


def _one_of(chain: tuple[str, ...]) -> tuple[str, tuple[str, ...]] | None:
    """The test of `chain` that picks a name's values (`arch in ['A', 'B']`, `arch == 'A'`),
    as (name, values written as code)."""
    for test in chain:
        node = _expr(test)
        if (
            isinstance(node, ast.Compare)
            and len(node.ops) == 1
            and isinstance(node.left, ast.Name)
            and isinstance(node.ops[0], (ast.In, ast.Eq))
        ):
            right = node.comparators[0]
            items = right.elts if isinstance(right, (ast.List, ast.Tuple, ast.Set)) else [right]
            if items and all(isinstance(i, ast.Constant) for i in items):
                return node.left.id, tuple(ast.unparse(i) for i in items)
    return None


def _reads_self(test: ast.expr) -> bool:
    return any(isinstance(n, ast.Name) and n.id == "self" for n in ast.walk(test))
