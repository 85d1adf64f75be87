"""Module context: what a file binds at module level, computed once with the stdlib `ast`.

Every unit (top-level function / method) of a file is extracted against this context:
constants that messages interpolate, names bound to loggers / the logging, warnings and sys
modules, tiny wrapper helpers (ANSI colour), and the classes whose fields are CLI flags (the
project profile's rules say which). The stdlib parser is C and ~6x faster than libcst, so
module-wide facts come from it; libcst only sees the units that actually hold sites.
"""

from __future__ import annotations

import ast
import collections
import functools
import hashlib
import re
from collections.abc import Collection, Container, Sequence
from dataclasses import dataclass, field

from kverr.ftypes import ExtractRules, FlagDecl, to_json

# `logger.log(logging.WARNING, ...)`: the logging module's level names. Which logger methods
# report a site (`warning`, `warning_once`, ...) is the profile's `log_methods`.
LOG_LEVELS = {
    "warning": "warning",
    "warn": "warning",
    "error": "error",
    "exception": "error",
    "critical": "critical",
    "fatal": "critical",
    "info": "info",
}
LOGGER_FACTORIES = {"getLogger", "init_logger", "get_logger"}
MUTATORS = {
    "append", "extend", "update", "add", "discard", "remove", "pop", "insert", "clear",
    "setdefault", "sort", "reverse", "popitem", "__setitem__", "__delitem__",
}  # fmt: skip
_UNSET = object()
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # a superset of the names a text reads


@dataclass(frozen=True)
class Wrapper:
    """A helper whose whole body is `return <string expression of its parameters>`."""

    params: tuple[str, ...]
    source: str  # source of the returned expression


@dataclass
class ModuleContext:
    constants: dict[str, object] = field(default_factory=dict)
    literals: dict[str, object] = field(default_factory=dict)  # first values, mutated or not
    literal_types: tuple[tuple[str, tuple[str, ...]], ...] = ()  # flags.literal_aliases
    loggers: set[str] = field(default_factory=set)
    logging_mods: set[str] = field(default_factory=set)
    logger_factories: set[str] = field(default_factory=set)  # bare names: getLogger, init_logger
    warnings_mods: set[str] = field(default_factory=set)
    warn_funcs: set[str] = field(default_factory=set)
    sys_mods: set[str] = field(default_factory=set)
    exit_funcs: set[str] = field(default_factory=set)
    wrappers: dict[str, Wrapper] = field(default_factory=dict)
    # classes of this module holding launch arguments -> the prefix of their fields' flags
    # ("" for a flag class, see `class_prefix`)
    args_classes: dict[str, str] = field(default_factory=dict)
    flags: tuple[FlagDecl, ...] = ()
    rules: ExtractRules | None = None
    params: dict = field(default_factory=dict)  # bindings.param_sources: what callers pass
    # a launch-arguments class's method that only returns a test of its fields, or a list it
    # fills under such tests, or (taking parameters) None unless its fields say otherwise ->
    # those fields' flags (`self.splitting_ops_contain_attention()` reads
    # --compilation-config.splitting-ops); bindings.predicates
    predicates: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # of those, one that only returns a test of its fields -> that test's source
    predicate_code: dict[str, str] = field(default_factory=dict)
    # a function called only under tests of flags -> those flags (bindings.caller_guards):
    # `self.m` for a launch-arguments class's method, `f` for a module's function
    callers: dict[str, tuple[str, ...]] = field(default_factory=dict)
    actions: dict[str, tuple[str, ...]] = field(default_factory=dict)  # Action class -> flags
    imports: dict[str, str] = field(default_factory=dict)  # UPPER_CASE name -> "module:NAME"
    # the file is on the profile's launch path: the args object is read off any object there
    launch: bool = False
    _reprs: dict[tuple[str, str], str] = field(default_factory=dict, repr=False, compare=False)

    def fingerprint(self, names: set[str]) -> str:
        """Hash of the context entries a unit can see, restricted to the names it mentions, so
        an unrelated constant edit elsewhere in the file does not invalidate its cache entry.
        Costs the names a unit mentions, not the size of the context: a file of thousands of
        constants and functions asked this once per function."""
        parts = []
        for label, table in (
            ("c", self.constants),
            ("w", self.wrappers),
            ("l", self.loggers),
            ("lm", self.logging_mods),
            ("lf", self.logger_factories),
            ("wm", self.warnings_mods),
            ("wf", self.warn_funcs),
            ("sm", self.sys_mods),
            ("sf", self.exit_funcs),
            ("a", self.args_classes),
            ("p", self.params),
            ("pr", self.predicates),
            ("pc", self.predicate_code),
            ("cg", self.callers),
            ("ac", self.actions),
            ("im", self.imports),
        ):
            for k in sorted(k for k in names if k in table):
                parts.append(f"{label}:{k}={self._shown(label, table, k)}")
        return hashlib.sha256("\n".join(parts).encode("utf-8", "surrogatepass")).hexdigest()

    def _shown(self, label: str, table: dict | set, key: str) -> str:
        if isinstance(table, set):
            return ""
        if label in ("a", "im"):
            return table[key]
        shown = self._reprs.get((label, key))  # each value's repr made once
        if shown is None:
            shown = self._reprs[(label, key)] = repr(table[key])
        return shown


# ---------------------------------------------------------------- constants


def const_eval(node: ast.AST, env: dict[str, object]) -> object:
    """Evaluate a literal-ish expression (literals, known constant names, a few pure builtins);
    returns _UNSET when it is not a compile-time constant, or past the folding bounds."""
    try:
        return _const(node, env)
    except _NotConst:
        return _UNSET


# Folding stops where a value gets big: past these, a name is a runtime value (a placeholder
# in the message). 40 lines of `A1 = A0 + A0` would otherwise fold into a terabyte.
MAX_FOLDED_CHARS = 64 * 1024  # characters (bytes) of the strings in one value, all counted
MAX_FOLDED_ITEMS = 4096  # items of its lists, tuples, sets and dicts, nested ones counted
_SIZED = (str, bytes, list, tuple)


def bounded(value: object) -> object:
    """`value`, or _NotConst when it holds more than the folding bounds allow. Looks at
    MAX_FOLDED_ITEMS items at most, so a check costs no more than a bound."""
    chars = items = 0
    todo = [value]
    while todo:
        v = todo.pop()
        if isinstance(v, (str, bytes)):
            chars += len(v)
            if chars > MAX_FOLDED_CHARS:
                raise _NotConst
        elif isinstance(v, (list, tuple, set, frozenset, dict)):
            items += len(v)
            if items > MAX_FOLDED_ITEMS:
                raise _NotConst
            todo.extend(v.items() if isinstance(v, dict) else v)
    return value


def _sum(left: object, right: object) -> object:
    """`left + right` for constants, refused before it is made when it would pass a bound."""
    if isinstance(left, _SIZED) and isinstance(right, _SIZED):
        cap = MAX_FOLDED_CHARS if isinstance(left, (str, bytes)) else MAX_FOLDED_ITEMS
        if len(left) + len(right) > cap:
            raise _NotConst
    try:
        return bounded(left + right)  # type: ignore[operator]
    except TypeError as exc:  # `1 + "a"` raises at runtime: not a constant
        raise _NotConst from exc


class _NotConst(Exception):
    pass


_PURE_CALLS = {
    "sorted": sorted, "list": list, "tuple": tuple, "len": len, "str": str, "repr": repr,
    "min": min, "max": max, "set": set, "frozenset": frozenset, "int": int, "float": float,
}  # fmt: skip
_ORDER_SENSITIVE = {"list", "tuple", "str", "repr", "join"}


def _unordered(value: object) -> bool:
    return isinstance(value, (set, frozenset)) and not is_deterministic(value)


_PURE_METHODS = {"join", "keys", "values", "items", "upper", "lower", "strip", "title"}


def _const(node: ast.AST, env: dict[str, object]) -> object:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in env:
            return env[node.id]
        raise _NotConst
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        items: list[object] = []
        for elt in node.elts:
            if isinstance(elt, ast.Starred):
                items.extend(_const(elt.value, env))  # type: ignore[arg-type]
            else:
                items.append(_const(elt, env))
        if isinstance(node, ast.List):
            return bounded(items)
        if isinstance(node, ast.Tuple):
            return bounded(tuple(items))
        try:
            return bounded(set(items))
        except TypeError as exc:  # an unhashable item
            raise _NotConst from exc
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise _NotConst
        try:
            pairs = zip(node.keys, node.values, strict=True)
            return bounded({_const(k, env): _const(v, env) for k, v in pairs})  # type: ignore[arg-type]
        except TypeError as exc:
            raise _NotConst from exc
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _const(node.operand, env)
        if not isinstance(v, (int, float, complex)):
            raise _NotConst  # `-"a"` raises at runtime
        return -v if isinstance(node.op, ast.USub) else +v
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _sum(_const(node.left, env), _const(node.right, env))
    if isinstance(node, ast.Call) and not any(k.arg not in ("reverse",) for k in node.keywords):
        # what a call makes is as big as what it is given, at most: checked before it runs
        args = [bounded(_const(a, env)) for a in node.args]
        kwargs = {k.arg: _const(k.value, env) for k in node.keywords if k.arg}
        if any(_unordered(a) for a in args) and callee_name(node.func) in _ORDER_SENSITIVE:
            raise _NotConst  # list({...}) / ", ".join({...}) follow the per-process hash order
        if isinstance(node.func, ast.Name) and node.func.id in _PURE_CALLS:
            if node.func.id in env:  # shadowed builtin
                raise _NotConst
            try:
                return bounded(_PURE_CALLS[node.func.id](*args, **kwargs))
            except Exception as exc:  # evaluating would raise at runtime too: not a constant
                raise _NotConst from exc
        if isinstance(node.func, ast.Attribute) and node.func.attr in _PURE_METHODS:
            target = bounded(_const(node.func.value, env))
            if node.func.attr == "join" and args and isinstance(args[0], _SIZED + (set, dict)):
                # the separator repeats once per item: 64 KiB of it between 4,096 items
                if len(target) * len(args[0]) > MAX_FOLDED_CHARS:  # type: ignore[arg-type]
                    raise _NotConst
            try:
                return bounded(getattr(target, node.func.attr)(*args))
            except Exception as exc:
                raise _NotConst from exc
    raise _NotConst


def is_deterministic(value: object) -> bool:
    """str() of a multi-element set of strings changes between processes (hash seed)."""
    if isinstance(value, (set, frozenset)):
        # ints hash to themselves, so their set order is the same in every process
        return len(value) <= 1 or all(type(v) is int for v in value)
    if isinstance(value, (list, tuple)):
        return all(is_deterministic(v) for v in value)
    if isinstance(value, dict):
        return all(is_deterministic(k) and is_deterministic(v) for k, v in value.items())
    return True


def mutated_names(tree: ast.AST) -> set[str]:
    """Names mutated anywhere (method calls, item assignment, augmented assignment, global)."""
    return walk_facts(tree)[1]


def first_line(node: ast.stmt) -> int:
    """A statement's first line: a decorated def or class starts at its first decorator."""
    return min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])


def walk_facts(tree: ast.AST) -> tuple[list[ast.Call], set[str], list[ast.AST]]:
    """The calls of `tree` in `ast.walk` order, the names it mutates (`mutated_names`) and its
    functions (defs, nested ones too): all the module context needs from every node, in one
    walk of the file. Three walks (mutated names, flag declarations, parameter sources) were
    most of the cost of a file whose functions were all cached. Leaves (names, constants,
    contexts, operators) are judged from their parent and never queued: leaving them out
    keeps `ast.walk`'s order of the rest."""
    return _walk_facts(tree)  # type: ignore[return-value]


Place = tuple[int, tuple[int, ...]]  # a node's depth, and its child indices from the root


def placed_facts(
    tree: ast.AST, at: Place, stop: Container[int] = ()
) -> tuple[list[tuple[Place, ast.Call]], set[str], list[ast.AST], dict[int, Place]]:
    """`walk_facts` of a piece of a file whose root sits at `at`: each call with its place,
    which sorts as `ast.walk` of the whole file would visit it (depth, then child indices).
    The children of a node whose id is in `stop` are not walked (skeleton.py walks those
    functions on their own); the last item is the place of each such node."""
    return _walk_facts(tree, at, stop)  # type: ignore[return-value]


def _walk_facts(tree: ast.AST, at: Place | None = None, stop: Container[int] = ()) -> tuple:
    calls: list[ast.Call] = []
    out: set[str] = set()
    defs: list[ast.AST] = []
    todo = collections.deque([tree])
    pop, push = todo.popleft, todo.append
    places = None if at is None else collections.deque([at])
    call_places: list[Place] = []
    stopped: dict[int, Place] = {}
    while todo:
        node = pop()
        kind = node.__class__
        if kind is ast.Call:
            calls.append(node)
            f = node.func
            if (
                f.__class__ is ast.Attribute
                and f.attr in MUTATORS
                and f.value.__class__ is ast.Name
            ):
                out.add(f.value.id)
        elif kind is ast.AugAssign:
            if node.target.__class__ is ast.Name:
                out.add(node.target.id)
        elif kind is ast.Subscript or kind is ast.Attribute:
            if node.ctx.__class__ in _STORES and node.value.__class__ is ast.Name:
                out.add(node.value.id)
        elif kind is ast.Global or kind is ast.Nonlocal:
            out.update(node.names)
        elif kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
            defs.append(node)
        if places is None:
            _push_children(node, push, _LEAVES)
            continue
        depth, path = here = places.popleft()
        if kind is ast.Call:
            call_places.append(here)
        if id(node) in stop:
            stopped[id(node)] = here
            continue
        children: list[ast.AST] = []
        _push_children(node, children.append, _LEAVES)
        for i, child in enumerate(children):
            push(child)
            places.append((depth + 1, (*path, i)))
    if places is None:
        return calls, out, defs
    return list(zip(call_places, calls, strict=True)), out, defs, stopped


def _push_children(node: ast.AST, push, skip: set[type]) -> None:
    """`push` each child node of `node` whose type is not in `skip` (what `ast.iter_child_nodes`
    yields, without its generator and its isinstance test of every field)."""
    fields = _CHILD_FIELDS.get(node.__class__)
    if fields is None:
        fields = _CHILD_FIELDS[node.__class__] = tuple(
            f for f in node._fields if f not in _NO_CHILD
        )
    for name in fields:
        value = getattr(node, name, None)
        if value.__class__ is list:
            for item in value:
                if isinstance(item, ast.AST) and item.__class__ not in skip:
                    push(item)
        elif isinstance(value, ast.AST) and value.__class__ not in skip:
            push(value)


# Fields that never hold a node both walks queue: names and flags (str, int) and contexts and
# operators (leaves either walk skips). Reading them was a third of each walk's field reads.
_NO_CHILD = frozenset({
    "id", "attr", "arg", "name", "module", "level", "conversion", "kind", "type_comment",
    "simple", "is_async", "ctx", "op", "ops",
})  # fmt: skip
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


_STORES = {ast.Store, ast.Del}
# node types without child nodes that walk_facts looks at
_LEAVES = {
    ast.Name, ast.Constant, ast.Load, ast.Store, ast.Del, ast.alias,
    *ast.boolop.__subclasses__(), *ast.operator.__subclasses__(),
    *ast.unaryop.__subclasses__(), *ast.cmpop.__subclasses__(),
}  # fmt: skip


def assigned_counts(stmts: list[ast.stmt] | ast.AST) -> dict[str, int]:
    """How often each plain name is bound in a scope (not descending into nested defs). The
    walk reads each node's fields itself and never queues what binds nothing (constants,
    contexts, operators), as `walk_facts` does: `ast.iter_child_nodes` on every node of a
    3,000-line function was a tenth of a backfill's extraction."""
    counts: dict[str, int] = {}
    todo: list[ast.AST] = list(stmts) if isinstance(stmts, list) else [stmts]
    pop, push = todo.pop, todo.append
    while todo:
        node = pop()
        kind = node.__class__
        if kind in _SCOPES:
            counts[getattr(node, "name", "")] = counts.get(getattr(node, "name", ""), 0) + 1
            continue
        if kind is ast.Name:
            if node.ctx.__class__ in _STORES:
                counts[node.id] = counts.get(node.id, 0) + 1
            continue
        if kind is ast.alias:
            name = (node.asname or node.name).split(".")[0]
            counts[name] = counts.get(name, 0) + 1
            continue
        if kind is ast.arg:
            counts[node.arg] = counts.get(node.arg, 0) + 2  # a parameter is never a constant
        _push_children(node, push, _UNBOUND)
    return counts


_SCOPES = {ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda}


def parameter_names(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    a = fn.args
    named = [*a.posonlyargs, *a.args, *a.kwonlyargs, *filter(None, (a.vararg, a.kwarg))]
    return {arg.arg for arg in named}


_UNBOUND = _LEAVES - {ast.Name, ast.alias}  # leaves that bind no name


def scope_constants(
    stmts: list[ast.stmt],
    env: dict[str, object],
    mutated: set[str],
    *,
    deep: bool = False,
    params: Collection[str] = (),
) -> dict[str, object]:
    """Names bound exactly once in `stmts` to a constant expression and never mutated. A
    parameter of the function (`params`) is none, even when one branch sets it once: elsewhere
    it holds what the caller passed."""
    counts = assigned_counts(stmts)
    out: dict[str, object] = {}
    todo: list[ast.AST] = list(stmts)
    while todo:
        node = todo.pop(0)
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            value = node.value
            if value is not None and len(targets) == 1 and isinstance(targets[0], ast.Name):
                name = targets[0].id
                if counts.get(name) == 1 and name not in mutated and name not in params:
                    v = const_eval(value, {**env, **out})
                    if v is not _UNSET:
                        out[name] = v
        elif deep and not isinstance(
            node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
        ):
            todo.extend(c for c in ast.iter_child_nodes(node) if isinstance(c, ast.stmt))
    return out


# ---------------------------------------------------------------- bindings


def callee_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def is_logger_factory(call: ast.AST, ctx: ModuleContext) -> bool:
    if not isinstance(call, ast.Call):
        return False
    f = call.func
    if isinstance(f, ast.Attribute) and f.attr in LOGGER_FACTORIES:
        return not (f.attr == "getLogger" and not _is_name_in(f.value, ctx.logging_mods))
    if isinstance(f, ast.Name):
        return f.id in ctx.logger_factories or f.id in ("init_logger", "get_logger")
    return False


def _is_name_in(node: ast.AST, names: set[str]) -> bool:
    return isinstance(node, ast.Name) and node.id in names


def bind_imports(stmts: list[ast.stmt], ctx: ModuleContext) -> None:
    for node in stmts:
        if isinstance(node, ast.Import):
            for a in node.names:
                bound = a.asname or a.name.split(".")[0]
                table = {
                    "logging": ctx.logging_mods,
                    "warnings": ctx.warnings_mods,
                    "sys": ctx.sys_mods,
                }.get(a.name)
                if table is not None:
                    table.add(bound)
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                bound = a.asname or a.name
                if node.module == "logging" and a.name == "getLogger":
                    ctx.logger_factories.add(bound)
                elif node.module == "warnings" and a.name == "warn":
                    ctx.warn_funcs.add(bound)
                elif node.module == "sys" and a.name == "exit":
                    ctx.exit_funcs.add(bound)
                elif a.name in ("init_logger", "get_logger"):
                    ctx.logger_factories.add(bound)
                elif a.name == "logger":
                    # another module's logger: its binding is out of reach, its name is not
                    ctx.loggers.add(bound)


def logger_names(stmts: list[ast.stmt], ctx: ModuleContext) -> set[str]:
    """Names assigned from a logger factory in this statement list (one scope, shallow)."""
    out: set[str] = set()
    todo = list(stmts)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if is_logger_factory(node.value, ctx):
                out.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            todo.extend(c for c in ast.iter_child_nodes(node) if isinstance(c, ast.stmt))
    return out


def wrapper_of(node: ast.FunctionDef, text_lines: list[str]) -> Wrapper | None:
    body = [s for s in node.body if not is_docstring(s)]
    if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
        return None
    ret = body[0].value
    if not isinstance(ret, (ast.JoinedStr, ast.BinOp)):
        return None
    a = node.args
    if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or not a.args:
        return None
    src = _segment(text_lines, ret)
    if src is None:
        return None
    return Wrapper(tuple(p.arg for p in a.args), src)


def _segment(lines: Sequence[str], node: ast.expr) -> str | None:
    """`ast.get_source_segment` over the file's lines, without joining the whole file for
    each expression (a file of one-line helpers made that quadratic)."""
    if node.end_lineno is None or node.end_col_offset is None:
        return None
    picked = [line.encode() for line in lines[node.lineno - 1 : node.end_lineno]]
    if not picked:
        return None
    if len(picked) == 1:
        return picked[0][node.col_offset : node.end_col_offset].decode()
    first, last = picked[0][node.col_offset :], picked[-1][: node.end_col_offset]
    return b"\n".join([first, *picked[1:-1], last]).decode()


def is_docstring(stmt: ast.stmt | None) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def glob_re(globs: Sequence[str]) -> re.Pattern[str]:
    """One compiled test for a profile's name globs (fnmatch syntax, case-sensitive)."""
    return _glob_re(tuple(globs))


@functools.lru_cache(maxsize=64)
def _glob_re(globs: tuple[str, ...]) -> re.Pattern[str]:
    import fnmatch

    if not globs:
        return re.compile(r"(?!)")
    return re.compile("|".join(f"(?:{fnmatch.translate(g)})" for g in globs))


def class_prefix(name: str, rules: ExtractRules) -> str | None:
    """How a class's fields reach the command line: "" when they are flags themselves (a flag
    class: `--field-name`), the class in snake_case when it is a config class (its fields are
    named after the flag class's field or its JSON option, see flags.resolve_flag), None when
    the class holds no launch arguments."""
    if glob_re(rules.flag_classes).match(name):
        return ""
    if glob_re(rules.config_classes).match(name):
        return snake_case(name)
    return None


def snake_case(name: str) -> str:
    """`SpeculativeConfig` -> `speculative_config`, `KVTransferConfig` -> `kv_transfer_config`."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


@functools.lru_cache(maxsize=16)
def rules_key(rules: ExtractRules) -> str:
    """A unit's extraction depends on the rules as much as on its text (cache keys)."""
    return hashlib.sha256(to_json(rules).encode()).hexdigest()[:16]


def split_lines(text: str) -> list[str]:
    # Python's own line breaks only (str.splitlines also splits on \f, \x1c, ...)
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def module_context(
    tree: ast.Module,
    text: str,
    path: str = "",
    rules: ExtractRules | None = None,
    lines: list[str] | None = None,
    facts: tuple | None = None,
) -> ModuleContext:
    """What the file's units may read of it. `lines`: the text split at Python's own line
    breaks (the caller has them), so the flag declarations of earlier revisions are reused.
    `facts`: when `tree` is the file's outline (skeleton.py), `walk_facts` of the whole file
    and the wrappers among the functions the outline leaves out."""
    # local: both import this module (bindings through templates)
    from kverr.extractor.bindings import (
        action_flags,
        caller_guards,
        imported_constants,
        param_sources,
        predicates,
    )
    from kverr.extractor.flags import flag_decls, literal_aliases
    from kverr.extractor.sources import matches_any

    ctx = ModuleContext(rules=rules or default_rules())
    ctx.launch = bool(path) and matches_any(path, ctx.rules.launch_path)
    stmts = list(tree.body)
    # imports may sit under `if TYPE_CHECKING:` / try blocks: look one level in as well
    flat = _flatten(stmts)
    bind_imports(flat, ctx)
    ctx.loggers |= logger_names(stmts, ctx)
    calls, mutated, defs = walk_facts(tree) if facts is None else facts[:3]
    ctx.constants = scope_constants(stmts, {}, mutated)
    ctx.literals = scope_constants(stmts, {}, set())
    lines = split_lines(text) if lines is None else lines
    wrappers = facts[3] if facts is not None else {}  # an outline's blanked ones, by node id
    for node in stmts:
        if isinstance(node, ast.FunctionDef):
            w = wrappers.get(id(node)) or wrapper_of(node, lines)
            if w is not None:
                ctx.wrappers[node.name] = w
        elif isinstance(node, ast.ClassDef):
            prefix = class_prefix(node.name, ctx.rules)
            if prefix is not None:
                ctx.args_classes[node.name] = prefix
    ctx.flags = flag_decls(tree, ctx, path, calls, lines, defs)
    ctx.literal_types = literal_aliases(tree)
    names = frozenset(n for n in ctx.rules.args_names if n.isidentifier())
    ctx.params = param_sources(tree, names, calls, ctx.args_classes, defs)
    views = glob_re(ctx.rules.config_views)
    view = lambda n: bool(views.match(n))  # noqa: E731
    ctx.predicates, ctx.predicate_code = predicates(stmts, names, ctx.args_classes, defs, view)
    ctx.callers = caller_guards(stmts, names, ctx.args_classes, defs, view)
    ctx.actions = action_flags(ctx.flags)
    ctx.imports = imported_constants(flat)
    return ctx


def default_rules() -> ExtractRules:
    """The default project's rules, for callers that name no profile (tests, one-off runs)."""
    from kverr.profile import default_profile

    return default_profile().extract


def _flatten(stmts: list[ast.stmt]) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for s in stmts:
        out.append(s)
        if isinstance(s, (ast.If, ast.Try)):
            out.extend(_flatten([c for c in ast.iter_child_nodes(s) if isinstance(c, ast.stmt)]))
            for h in getattr(s, "handlers", []):
                out.extend(_flatten(h.body))
    return out
