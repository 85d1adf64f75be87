"""The names in a site's guards, read through its bindings (kverr/ftypes.py `Binding`).

Two uses, kept apart because only one is exact:
  - `resolve` rewrites a guard's test with what is known for sure: a constant by its value
    (`TILE % x` -> `64 % x`), a local or a parameter with one known value by that value
    (`prefill == "a"` -> `(self.prefill_kernel or self.kernel) == "a"`), and a flag the
    function assigned a literal before the guard by that literal. The rewritten test is what
    the words and the validationCode read.
  - `name_flags` maps the other names to the flag they most likely hold, for the words only:
    a parameter several callers pass different flags to, `values` in an argparse Action, a
    local unpacked from a helper call. A validationCode never reads them (a bare name is not a
    flag of the parsed arguments), so no check is built on a guess.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping

from kverr.extractor.context import callee_name
from kverr.extractor.pysource import NOT_LITERAL, expr_or_none, literal

from kverr.ftypes import NAMING_BINDINGS, Binding, Site

# A module's attribute is no launch field: `torch.dtype` is a type, not --dtype.
_MODULES = frozenset({"torch", "np", "numpy", "math", "os", "sys", "typing", "envs"})


def attr_flag(node: ast.Attribute, attrs: Mapping[str, str]) -> str | None:
    """The flag an attribute read stands for, by its last name (`model_config.dtype`)."""
    if isinstance(node.value, ast.Name) and node.value.id in _MODULES:
        return None
    return attrs[node.attr] if node.attr in attrs else None  # (`in`: _AnyAttr holds every name)


def exact_values(site: Site) -> dict[str, str]:
    """name -> the source it stands for, when that is known for sure."""
    out = {}
    for b in site.bindings:
        if b.kind == "constant" and b.value is not None:
            out[b.name] = b.value
        elif b.kind in ("local", "param") and b.value and b.flags and not _unpacked(b):
            out[b.name] = b.value
    return out


def name_flags(site: Site) -> dict[str, str]:
    """name -> its most likely flag, for the names `exact_values` cannot resolve."""
    exact = exact_values(site)
    return {
        b.name: b.flags[0]
        for b in site.bindings
        if b.kind in NAMING_BINDINGS and b.flags and b.name not in exact
    }


def item_names(site: Site) -> set[str]:
    """The names that hold one item of a flag's list (a loop's variable), not its value."""
    return {b.name for b in site.bindings if b.kind == "item" and b.flags}


def notes(site: Site, test: str) -> dict[str, str]:
    """flag -> how a name in `test` reaches it, for the words: "falling back to --kernel" (a
    fallback chain, or what a helper's name says), "or --backup-device" (callers differ)."""
    node = expr_or_none(test)
    if node is None:
        return {}
    read = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    out: dict[str, str] = {}
    for b in site.bindings:
        if b.name not in read or len(b.flags) < 2 or b.kind not in ("local", "param"):
            continue
        rest = " and ".join(b.flags[1:])
        if b.kind == "param" and b.value is None:
            out.setdefault(b.flags[0], f"or {rest}, whichever the caller passes")
        else:
            out.setdefault(b.flags[0], f"falling back to {rest}")
    return out


def _unpacked(b: Binding) -> bool:
    """`<call>[i]`: a local unpacked from a helper whose body is not read here."""
    node = expr_or_none(b.value or "")
    return isinstance(node, ast.Subscript) and isinstance(node.value, ast.Call)


def resolve(test: str, line: int, site: Site) -> str:
    """`test` (a guard at `line`) with exactly known names and earlier literal assignments to
    flags replaced by their values; unchanged when nothing applies or it does not parse.
    (`value_flags` lists the flags the substituted values read.)"""
    exact = exact_values(site)
    assigned = {b.name: b.value for b in _replaced(site, line)}
    methods = {b.name: b.value for b in site.bindings if b.kind == "method" and b.value}
    if not exact and not assigned and not methods:
        return test
    node = expr_or_none(test)
    if node is None:
        return test
    sub = _Substitute(exact, assigned, _built(site), methods)
    new = _Fold().visit(sub.visit(node))
    return ast.unparse(new) if sub.done else test


def _replaced(site: Site, line: int) -> list[Binding]:
    """The assignments before `line` that put a literal, another flag's value or an
    environment variable's in place of the user's: a guard after them reads that, not what
    the launch said."""
    return [
        b
        for b in site.bindings
        if b.kind == "assigned"
        and b.line < line
        and b.value is not None
        and (
            literal(b.value) is not NOT_LITERAL
            or _flag_read(b.value)
            or env_name(expr_or_none(b.value)) is not None  # (`= envs.APP_DP_SIZE`)
        )
    ]


def in_place(site: Site, flags: Iterable[str]) -> list[str]:
    """`flags` with each flag the code overwrites before the site reads it replaced by the
    flags its new value reads (`self.topk = self.breadth`: --topk -> --breadth): the launch's
    value of such a flag is not what the check is about. Not when the launch's value still
    decides: a guard read it before the assignment (`if self.backend is None: self.backend =
    "x"`: the launch that sets it never gets here), or a local kept it (`paths =
    self.paths; self.paths = []`). A notice keeps them all: it reports what the code chose
    ("Use fa3 as attention backend")."""
    if site.severity not in ("error", "critical"):
        return list(flags)
    held = {f for b in site.bindings if b.kind in ("local", "param") for f in b.flags}
    replaced = {
        b.flags[0]: b.flags[1:]
        for b in _replaced(site, site.line)
        if b.flags
        and b.flags[0] not in b.flags[1:]
        and b.flags[0] not in held
        and not any(b.flags[0] in g.flags for g in site.guards if g.line < b.line)
    }
    return list(dict.fromkeys(new for fl in flags for new in replaced.get(fl, (fl,))))


def value_flags(test: str, line: int, site: Site) -> tuple[str, ...]:
    """Flags the exactly known names in `test` stand for (their values read them), and those
    the values of earlier assignments it reads through read. A name bound to a constructor
    call stands only for the arguments the test reads of it (`_built`)."""
    node = expr_or_none(test)
    if node is None:
        return ()
    read = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    attrs = {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
    exact = exact_values(site)
    built = _built(site)
    named = []
    for b in site.bindings:
        if b.name not in read or b.name not in exact:
            continue
        if b.name in built:
            shown = ast.unparse(_Substitute(exact, {}, built).visit(expr_or_none(test) or node))
            named += [f for f in b.flags if _reads(shown, f)]
        else:
            named += list(b.flags)
    through = [
        f
        for b in site.bindings
        if b.kind == "assigned" and b.name in attrs and b.line < line
        for f in b.flags[1:]
    ]
    return tuple(dict.fromkeys(named + through))


def _flag_read(text: str) -> bool:
    """`self.other_flag`: the check then reads that flag (the code copied it over). The
    receiver is named as args objects are (`self`, `cfg`, `args`, `*_args`)."""
    node = expr_or_none(text)
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and (node.value.id in ("self", "args", "cfg") or node.value.id.endswith("_args"))
    )


def _built(site: Site) -> dict[str, tuple[ast.expr | None, ast.Call]]:
    """name -> (condition, call) for a local bound to a constructor call with keyword
    arguments (`cfg = Config(a=self.a, b=self.b, ...)`, or `Config(...) if self.on else None`,
    condition `self.on`): a test reads one argument of it (`cfg.a`) or whether it was built,
    never all of them, so spelling the whole call out would name every flag it passes."""
    out = {}
    for name, value in exact_values(site).items():
        node = expr_or_none(value)
        cond = None
        if isinstance(node, ast.IfExp) and is_none(node.orelse):
            cond, node = node.test, node.body
        if _constructor(node):
            out[name] = (cond, node)  # type: ignore[assignment]  # _constructor: a Call
    return out


def _constructor(node: ast.expr | None) -> bool:
    """`Config(a=..., b=...)` (or `Config(self.a, self.b, self.c, ...)`): a call of a class
    (capitalised, as Python names them) given several values, none unpacked from a mapping.
    A function's result may be None or anything (`x = pick(a=...)`), and a one-value wrapper
    (`Path(self.x)`) reads as what it wraps: both are left as the value they are."""
    if not isinstance(node, ast.Call) or not (node.keywords or len(node.args) >= 3):
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name[:1].isupper() and all(k.arg for k in node.keywords)


def unread_arguments(site: Site) -> set[str]:
    """Flags a site carries only as arguments of a constructor call no guard or placeholder
    reads (`cfg = Config(a=self.a, b=self.b)` where the test reads `cfg.a`: --b): the record
    is not about them."""
    built = _built(site)
    if not built:
        return set()
    passed = {f for b in site.bindings if b.name in built for f in b.flags}
    kept = {f for g in site.guards for f in g.flags}
    kept |= {f for b in site.bindings if b.name not in built for f in b.flags}
    exact = exact_values(site)
    texts = [g.test for g in site.guards] + [p.expr or "" for p in site.template.placeholders]
    for text in filter(None, texts):
        node = expr_or_none(text)
        if node is None:
            kept |= passed  # unreadable: keep what it may read
            continue
        shown = _Substitute(exact, {}, built).visit(node)
        kept |= {f for f in passed if _reads(ast.unparse(shown), f)}
        # A test that reads something the call derives (`cfg.enabled`, `cfg.window()`) may
        # depend on any of its arguments: the record stays findable under all of them.
        left = {n.id for n in ast.walk(shown) if isinstance(n, ast.Name)}
        kept |= {f for b in site.bindings if b.name in built and b.name in left for f in b.flags}
    return passed - kept


def is_none(node: ast.expr) -> bool:
    """`None` written out."""
    return isinstance(node, ast.Constant) and node.value is None


def _reads(text: str, flag: str) -> bool:
    """Whether `text` reads the attribute a flag is stored in (`self.max_loras`)."""
    attr = flag.lstrip("-").replace("-", "_").rpartition(".")[2]
    node = expr_or_none(text)
    return node is not None and any(
        isinstance(n, ast.Attribute) and n.attr == attr for n in ast.walk(node)
    )


class _Substitute(ast.NodeTransformer):
    def __init__(
        self,
        names: dict[str, str],
        attrs: dict[str, str],
        built: dict[str, tuple[ast.expr | None, ast.Call]] | None = None,
        methods: dict[str, str] | None = None,
    ) -> None:
        self.names, self.attrs = names, attrs
        self.built = built or {}
        self.methods = methods or {}
        self.done = False

    def visit_Call(self, node: ast.Call) -> ast.AST:
        # `self.uses_buffer()` that only returns `self.strategy == "buffer"` is that test, read
        # through the call's own receiver
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and func.attr in self.methods
            and not (node.args or node.keywords)
        ):
            test = expr_or_none(self.methods[func.attr])
            if test is not None:
                self.done = True
                return _Receiver(func.value).visit(test)
        return self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        # `cfg is not None` for `cfg = Config(...) if self.on else None` is `self.on`: whether
        # it was built, not what it was built from.
        left = node.left
        if (
            isinstance(left, ast.Name)
            and left.id in self.built
            and len(node.ops) == 1
            and isinstance(node.ops[0], (ast.Is, ast.IsNot))
            and is_none(node.comparators[0])
        ):
            cond, _ = self.built[left.id]
            self.done = True
            built: ast.expr = cond if cond is not None else ast.Constant(True)
            if isinstance(node.ops[0], ast.Is):
                return ast.UnaryOp(ast.Not(), built)
            return built
        return self.generic_visit(node)

    def _value(self, text: str, node: ast.AST) -> ast.AST:
        new = expr_or_none(text)
        if new is None:
            return node
        self.done = True
        return new

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.built:
            return node  # its name says more than a call with every argument spelled out
        if node.id in self.names and isinstance(node.ctx, ast.Load):
            return self._value(self.names[node.id], node)
        return node

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if node.attr in self.attrs and isinstance(node.ctx, ast.Load):
            return self._value(self.attrs[node.attr], node)
        base = node.value
        if isinstance(base, ast.Name) and base.id in self.built and isinstance(node.ctx, ast.Load):
            # `cfg.a` of `cfg = Config(a=self.a, ...)` is the argument it was given
            _, call = self.built[base.id]
            given = next((k.value for k in call.keywords if k.arg == node.attr), None)
            if given is not None:
                self.done = True
                return given
            return node
        return self.generic_visit(node)


class _Receiver(ast.NodeTransformer):
    """A method's test with its `self` as the receiver it was called on."""

    def __init__(self, receiver: ast.expr) -> None:
        self.receiver = receiver

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return self.receiver if node.id == "self" else node


class _Fold(ast.NodeTransformer):
    """A comparison over constants (`32 > 16` once a value is known) becomes its result, and so
    does small arithmetic feeding it, so the words drop a condition the code already decided.
    Only cheap operations on numbers and short strings: the source may be hostile too."""

    def _fold(self, node: ast.expr) -> ast.AST:
        self.generic_visit(node)
        kids = [n for n in ast.iter_child_nodes(node) if isinstance(n, ast.expr)]
        if not all(isinstance(n, ast.Constant) and _small(n.value) for n in kids):
            return node
        if isinstance(node, ast.BinOp) and not isinstance(node.op, _CHEAP):
            return node  # `9 ** 9 ** 9`, `"a" * 10**9`: not worth the risk
        if isinstance(node, ast.BinOp) and not all(
            isinstance(n.value, (int, float)) and not isinstance(n.value, bool) for n in kids
        ):
            return node
        if (
            isinstance(node, ast.Compare)
            and any(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops)
            and not all(n.value is None or isinstance(n.value, bool) for n in kids)
        ):
            # `"x" is "x"` depends on interning, not on the code, and compiling it prints a
            # SyntaxWarning ("is" with a literal) into every build: left as written.
            return node
        try:
            value = eval(compile(ast.Expression(node), "<fold>", "eval"), {"__builtins__": {}})
        except Exception:  # 1 / 0, "a" < 1: leave it as written
            return node
        return ast.copy_location(ast.Constant(value), node) if _small(value) else node

    visit_Compare = visit_BinOp = visit_UnaryOp = visit_BoolOp = _fold


_CHEAP = (ast.Add, ast.Sub, ast.Mult, ast.Mod, ast.FloorDiv, ast.Div)


def _small(value: object) -> bool:
    if isinstance(value, bool) or value is None:
        return True
    if isinstance(value, (int, float)):
        return abs(value) < 1e15
    if isinstance(value, str):
        return len(value) <= 200
    if isinstance(value, tuple):
        return len(value) <= 64 and all(_small(v) for v in value)
    return False


def env_name(node: ast.expr) -> str | None:
    """`os.environ.get("X")` / `os.getenv("X")` / `envs.X` (a module of environment
    variables) -> "X"."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return node.attr if node.value.id == "envs" and node.attr.isupper() else None
    if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
        name = callee_name(node.func) or ""
        if name in ("get", "getenv") and isinstance(node.args[0].value, str):
            return node.args[0].value
    return None
