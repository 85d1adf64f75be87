"""The libcst pass over one unit (a top-level function, a method, or a module-level statement):
find every raise / assert / logging / warnings / exit site and describe it.

Positions come from the stdlib `ast` of the whole file: libcst and `ast` see the same
statements in the same pre-order, so the n-th statement libcst visits is the n-th `ast.stmt`.
That avoids libcst's PositionProvider, which costs more than the parse itself.
"""

from __future__ import annotations

import ast
import dataclasses
import re
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import libcst as cst
from kverr.extractor import bindings as bind
from kverr.extractor.context import (
    LOG_LEVELS,
    ModuleContext,
    glob_re,
    logger_names,
    parameter_names,
    scope_constants,
    snake_case,
)
from kverr.extractor.context import mutated_names as _mutated
from kverr.extractor.flags import param_flag
from kverr.extractor.guards import (
    RawGuard,
    comment_above,
    exits_comment,
    function_start,
    guards_on_path,
    reaching,
    test_text,
)
from kverr.extractor.templates import (
    TemplateContext,
    TemplateError,
    code,
    dynamic,
    lazy_percent,
    normalise,
    templates_for,
)
from kverr.extractor.walk import walk

from kverr.ftypes import NAMING_BINDINGS, Binding, Guard, Site, Template

Position = tuple[int, int, int, int]  # line, end_line, col, end_col (file coordinates)
# Names holding the launch-arguments object map to its path: "" for the object itself, a dotted
# path for a config object reached from it ("speculative_config", "app_config.cache_config"),
# which prefixes the flags read on it (see flags.resolve_flag).
ArgsNames = dict[str, str]
_WORDS = re.compile(r"[A-Za-z_]\w*")
_STMT = (cst.BaseSmallStatement, cst.BaseCompoundStatement)
_CONTAINERS = (
    cst.Module, cst.IndentedBlock, cst.SimpleStatementLine, cst.SimpleStatementSuite, cst.Else,
    cst.ExceptHandler, cst.ExceptStarHandler, cst.Finally, cst.MatchCase,
)  # fmt: skip


@dataclass
class _Scope:
    """Facts about one function, computed the first time a site inside it needs them."""

    node: cst.FunctionDef
    qualname: str
    ast_node: ast.AST | None
    args_names: ArgsNames = field(default_factory=dict)
    constants: dict[str, object] | None = None
    assign_index: dict[str, set[int]] | None = None
    index_opaque: set[str] | None = None  # names _index_function cannot follow
    assigns: list[cst.Assign] | None = None  # every `x = ...` of the function (bindings.py)
    targets: dict | None = None  # the same from the stdlib tree (bindings.tuple_targets)
    # statement -> attrs it may assign; block -> its fold (bindings.flag_assignments)
    maybe_assigned: dict[int, object] = field(default_factory=dict)
    opaque: set[str] = field(default_factory=set)
    loggers: set[str] = field(default_factory=set)
    bound: set[str] = field(default_factory=set)


class SiteCollector(cst.CSTVisitor):
    def __init__(
        self,
        mctx: ModuleContext,
        path: str,
        lines: Sequence[str],
        position: Callable[[int, cst.CSTNode], Position],
        ast_stmt: Callable[[int], ast.AST | None],
        busy: Callable[[int], bool] = lambda ordinal: True,
        prefix: tuple[str, ...] = (),
        in_args_class: str | None = None,
        skip_wrapper: bool = False,
    ) -> None:
        super().__init__()
        self.mctx, self.path, self.lines = mctx, path, lines
        self.position, self.ast_stmt = position, ast_stmt
        # busy(n): statement n's own expressions may hold a site call. Skipping the
        # expressions of the others is most of the speed: libcst visits are pure Python.
        self.busy = busy
        self.current: list[bool] = [True]
        self.names: list[str] = list(prefix)
        self.class_args: list[str | None] = [in_args_class]
        self.stack: list[cst.CSTNode] = []
        self.ordinal: dict[int, int] = {}
        self.count = -1
        self.skip_wrapper = skip_wrapper
        self.scopes: list[_Scope] = []
        self.sites: list[Site] = []
        self.flag_memo: dict[int, list[str]] = {}
        self.name_memo: dict[int, list[str]] = {}
        self.call_memo: dict[int, list[tuple[str, str]]] = {}
        self.log_methods = mctx.rules.severity()
        self.args = _ArgsRules(mctx)

    # ------------------------------------------------------------ traversal bookkeeping

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.stack.append(node)
        if isinstance(node, _STMT):
            if self.skip_wrapper:
                self.skip_wrapper = False  # the `class _K:` line that lets a method parse alone
                self.ordinal[id(node)] = -1
                self.current.append(False)
                return True
            self.count += 1
            self.ordinal[id(node)] = self.count
            self.current.append(self.busy(self.count))
        elif not self.current[-1] and not isinstance(node, _CONTAINERS):
            return False  # only statements nest statements; this one's own parts hold no site
        return super().on_visit(node)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        super().on_leave(original_node)
        if isinstance(original_node, _STMT):
            self.current.pop()
        self.stack.pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if self.ordinal.get(id(node)) == -1:
            return
        self.names.append(node.name.value)
        self.class_args.append(self.mctx.args_classes.get(node.name.value))

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        if self.ordinal.get(id(original_node)) == -1:
            return
        self.names.pop()
        self.class_args.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.names.append(node.name.value)
        scope = _Scope(node, ".".join(self.names), self.ast_stmt(self.ordinal[id(node)]))
        scope.args_names = _args_params(node, self.args, self.class_args[-1])
        self.scopes.append(scope)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.names.pop()
        self.scopes.pop()

    # ------------------------------------------------------------ sites

    def visit_Raise(self, node: cst.Raise) -> None:
        if node.exc is None:
            return  # bare re-raise: the original site already reports it
        exc, message = node.exc, None
        if isinstance(exc, cst.Call):
            cls = normalise(code(exc.func))
            message = _first_positional(exc)
        else:
            cls = normalise(code(exc))
        kind = "exit" if cls.rsplit(".", 1)[-1] == "SystemExit" else "raise"
        if isinstance(message, (cst.Integer, cst.Name)) and kind == "exit":
            message = None if isinstance(message, cst.Integer) else message
        self._emit(kind, cls, "error", message, None, None)

    def visit_Assert(self, node: cst.Assert) -> None:
        self._emit("assert", "AssertionError", "error", node.msg, None, node.test)

    def visit_Call(self, node: cst.Call) -> None:
        found = self._classify(node)
        if found is None:
            return
        kind, severity, error_class, call_name, message, lazy = found
        self._emit(kind, error_class, severity, message, lazy, None, call_name)

    def _classify(self, node: cst.Call):
        """(kind, severity, error_class, call text, message node, lazy %-args) or None."""
        func = node.func
        positional = [a.value for a in node.args if a.keyword is None and not a.star]
        if isinstance(func, cst.Attribute):
            attr = func.attr.value
            owner = func.value
            severity = self.log_methods.get(attr)
            if severity is not None and self._is_logger(owner):
                msg = positional[0] if positional else _keyword(node, "msg")
                return "log", severity, None, f"{code(owner)}.{attr}", msg, positional[1:]
            if attr == "log" and self._is_logger(owner) and len(positional) >= 2:
                level = normalise(code(positional[0])).rsplit(".", 1)[-1].lower()
                sev = LOG_LEVELS.get(level, "info")
                return "log", sev, None, f"{code(owner)}.log", positional[1], positional[2:]
            if isinstance(owner, cst.Name):
                if attr == "warn" and owner.value in self.mctx.warnings_mods:
                    return self._warn(node, positional, f"{owner.value}.warn")
                if attr == "exit" and owner.value in self.mctx.sys_mods:
                    return self._exit(positional, f"{owner.value}.exit")
        elif isinstance(func, cst.Name):
            if func.value in self.mctx.warn_funcs:
                return self._warn(node, positional, func.value)
            if func.value in self.mctx.exit_funcs:
                return self._exit(positional, func.value)
        return None

    def _warn(self, node: cst.Call, positional, call_name: str):
        category = positional[1] if len(positional) > 1 else _keyword(node, "category")
        cls = normalise(code(category)) if category is not None else "UserWarning"
        message = positional[0] if positional else _keyword(node, "message")
        return "warn", "warning", cls, call_name, message, []

    def _exit(self, positional, call_name: str):
        if not positional or isinstance(positional[0], cst.Integer):
            return None  # sys.exit() / sys.exit(1) print nothing: no message to explain
        return "exit", "error", "SystemExit", call_name, positional[0], []

    def _is_logger(self, owner: cst.BaseExpression) -> bool:
        if isinstance(owner, cst.Name):
            name = owner.value
            if name in self.mctx.logging_mods:
                return True
            local = self.scopes[-1].loggers if self.scopes else set()
            return name in self.mctx.loggers or name in local
        if isinstance(owner, cst.Call):  # logging.getLogger(__name__).warning(...)
            f = owner.func
            if isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name):
                return f.attr.value == "getLogger" and f.value.value in self.mctx.logging_mods
            if isinstance(f, cst.Name):
                return f.value in self.mctx.logger_factories
        return False

    # ------------------------------------------------------------ building a Site

    def _emit(self, kind, error_class, severity, message, lazy, test, call_name=None) -> None:
        stmt = next(n for n in reversed(self.stack) if isinstance(n, _STMT))
        line, end_line, col, end_col = self.position(self.ordinal[id(stmt)], stmt)
        scope = self.scopes[-1] if self.scopes else None
        if scope is not None:
            self._prepare(scope)
        tctx = self._template_context(scope)
        raw = guards_on_path(self.stack)
        guards = [self._guard(g, scope) for g in raw]
        condition = None
        if test is not None:
            condition = test_text(test)
            guards.append(Guard(condition, False, "assert", line, tuple(self._flags(test, scope))))
        try:
            templates = self._templates(message, lazy, tctx)
        except TemplateError as exc:  # strict mode: say where
            raise TemplateError(f"{self.path}:{line}: {exc}") from None
        bindings = self._bindings(
            scope, [g.test for g in raw] + [test, message, *(lazy or [])], guards
        )
        guards, bindings = self._loosened(raw, guards, bindings, [test, message, *(lazy or [])])
        flags = _ordered(
            [f for g in guards for f in g.flags]
            + (self._flags(message, scope) if message is not None else [])
            + [f for a in lazy or [] for f in self._flags(a, scope)]
            + [f for b in bindings if b.kind in NAMING_BINDINGS for f in b.flags]
        )
        fn = scope.qualname if scope else (".".join(self.names) or None)
        snippet = _snippet(self.lines, line, end_line, col, end_col)
        docstring = scope.node.get_docstring() if scope else None
        comment = comment_above(self.stack) or exits_comment(
            self.stack, " ".join(p.text or "" for t in templates for p in t.parts if p.is_literal)
        )
        for variant, template in enumerate(templates, start=1 if len(templates) > 1 else 0):
            self.sites.append(
                Site(
                    kind=kind,
                    file=self.path,
                    line=line,
                    end_line=end_line,
                    col=col,
                    end_col=end_col,
                    function=fn,
                    error_class=error_class,
                    severity=severity,
                    template=template,
                    snippet=snippet,
                    guards=tuple(guards),
                    flags=tuple(flags),
                    comment=comment,
                    docstring=docstring,
                    variant=variant,
                    condition=condition,
                    logger_call=call_name,
                    bindings=bindings,
                    reached=self._callers(scope),
                )
            )

    def _callers(self, scope: _Scope | None) -> tuple[str, ...]:
        """The flags the tests around every call of the site's function read (a method of a
        launch-arguments class through `self`, or a function of the module)."""
        if scope is None or len(self.scopes) != 1:
            return ()
        name = scope.node.name.value
        at = next(i for i in range(len(self.stack) - 1, -1, -1) if self.stack[i] is scope.node)
        if at >= 2 and isinstance(self.stack[at - 2], cst.ClassDef):  # a method
            return (
                self.mctx.callers.get(f"self.{name}", ()) if self.class_args[-1] is not None else ()
            )
        return self.mctx.callers.get(name, ())

    def _templates(self, message, lazy, tctx) -> tuple[Template, ...]:
        if message is None:
            return (Template(()),)
        found = lazy_percent(message, list(lazy), tctx) if lazy else templates_for(message, tctx)
        if found is None:
            return (dynamic(message),)
        return found

    def _loosened(
        self, raw: list[RawGuard], guards: list[Guard], bindings: tuple[Binding, ...], rest: list
    ) -> tuple[list[Guard], tuple[Binding, ...]]:
        """The guards and bindings less the flags of an early exit the launch may pass whatever
        they hold: `if not input_tokens and inputs_embeds is None: return` is passed by any
        request with tokens, so a flag `inputs_embeds` was computed from is none of the site's
        (one conjunct of the exit reads no flag, and the code, not the launch, decides it)."""
        named = {b.name: b.flags for b in bindings if b.kind in NAMING_BINDINGS and b.flags}

        def reads(node: cst.CSTNode) -> bool:
            scope = self.scopes[-1] if self.scopes else None
            names = bind.names_read([node], self.name_memo)
            return bool(self._flags(node, scope)) or any(n in named for n in names)

        loose = [
            k
            for k, g in enumerate(raw)
            if g.kind == "early-exit" and not all(map(reads, _conjuncts(g.test)))
        ]
        if not loose:
            return guards, bindings
        kept = [g.test for k, g in enumerate(raw) if k not in loose] + rest
        still = set(bind.names_read([n for n in kept if n is not None], self.name_memo))
        only = set(bind.names_read([raw[k].test for k in loose], self.name_memo)) - still
        guards = [
            dataclasses.replace(g, flags=()) if k in loose else g for k, g in enumerate(guards)
        ]
        bindings = tuple(b for b in bindings if b.name not in only or b.kind not in NAMING_BINDINGS)
        return guards, bindings

    def _guard(self, g: RawGuard, scope: _Scope | None) -> Guard:
        line = self.position(self.ordinal.get(id(g.anchor), -1), g.anchor)[0]
        flags = self._flags(g.test, scope) if g.test is not None else []
        if g.test is not None and scope is not None:
            flags = _ordered([*flags, *self._kept(g.test, scope, line)])
        return Guard(g.text, g.holds, g.kind, line, tuple(flags))

    def _kept(self, test: cst.CSTNode, scope: _Scope, line: int) -> list[str]:
        """The flags of `self.x` in a test where the function itself set it from them in a
        statement of its body before the test (`self.prefill_backend_str = args.prefill_backend
        or args.backend`): a model runner keeps what it read of the launch under its own name."""
        read = {a.attr.value for a in _self_attributes(test)}
        out: list[str] = []
        for stmt in scope.node.body.body if read else ():
            if not isinstance(stmt, cst.SimpleStatementLine):
                continue
            for small in stmt.body:
                if not (isinstance(small, cst.Assign) and len(small.targets) == 1):
                    continue
                target = small.targets[0].target
                mine = [a.attr.value for a in _self_attributes(target) if a is target]
                at = self.position(self.ordinal.get(id(small), -1), small)[0]
                if mine and mine[0] in read and 0 < at < line:
                    out += self._flags(small.value, scope)
        return out

    # ------------------------------------------------------------ scope facts

    def _prepare(self, scope: _Scope) -> None:
        if scope.constants is not None:
            return
        scope.constants = dict(self.mctx.constants)
        node = scope.ast_node or _reparse(scope.node)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            bound, messages, walrus, aliases = _function_facts(
                node, set(self.mctx.wrappers), scope.args_names, self.args
            )
            mutated = _mutated(node)
            for name in bound:
                scope.constants.pop(name, None)  # a local binding shadows the module constant
            env = {k: v for k, v in self.mctx.constants.items() if k not in bound}
            scope.constants.update(
                scope_constants(node.body, env, mutated, deep=True, params=parameter_names(node))
            )
            scope.loggers = logger_names(node.body, self.mctx)
            scope.bound, scope.opaque = messages, walrus
            scope.args_names.update(aliases)
        else:  # not even the function parses with this Python's ast: index with libcst
            scope.assign_index, scope.opaque = _index_function(scope.node)
            scope.index_opaque = set(scope.opaque)
            scope.bound = set(scope.assign_index)

    def _template_context(self, scope: _Scope | None) -> TemplateContext:
        if scope is None:
            return TemplateContext(constants=self.mctx.constants, wrappers=self.mctx.wrappers)
        path = list(self.stack)

        def resolve(name: str):
            if name not in scope.bound:
                return None  # never assigned here: a parameter, global or builtin
            index, _ = self._index(scope)
            if name in scope.opaque or name not in index:
                return None
            ids = index[name]
            return reaching(name, path, lambda stmt: id(stmt) in ids)

        return TemplateContext(
            constants=scope.constants or {}, wrappers=self.mctx.wrappers, resolve_local=resolve
        )

    # ------------------------------------------------------------ what names stand for

    def _bindings(
        self, scope: _Scope | None, nodes: list, guards: list[Guard]
    ) -> tuple[Binding, ...]:
        """Bindings (kverr/ftypes.py) of the plain names the guards and message read, and the
        flags the function assigns around the site."""
        if scope is None:
            return ()
        out: list[Binding] = []
        fn = scope.node
        action = None
        if fn.name.value == "__call__" and len(self.names) > 1:
            action = self.mctx.actions.get(self.names[-2])
        if action:
            out.append(Binding("values", "action", None, action))
        for name in bind.names_read(nodes, self.name_memo):
            if name not in scope.args_names and not (action and name == "values"):
                found = self._binding(scope, name)
                if found is not None:
                    out.append(found)
        code = self.mctx.predicate_code
        for receiver, method in bind.methods_called(nodes, self.call_memo):
            # (its own class's, through `self`, or the flag class's, through `args`: another
            # config's method of the same name is another test)
            held = scope.args_names.get(receiver)
            if method in code and held is not None and (receiver == "self" or held == ""):
                flags = self.mctx.predicates.get(method, ())
                out.append(Binding(method, "method", code[method], flags))
        out += self._assignments(scope, guards)
        return tuple(out)

    def _binding(self, scope: _Scope, name: str) -> Binding | None:
        fn = scope.node
        params = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)]
        param = name in params or name in [p.name.value for p in fn.params.kwonly_params]
        if param:  # (a default it may be given later in the body makes it no constant)
            sources = self.mctx.params.get(fn.name.value, {}).get(name, ())
            flags = tuple(dict.fromkeys(f for _, fl in sources for f in fl))
            if not sources:  # no caller in the file: the parameter's name says what it is
                flags = param_flag(name)
            if flags:
                value = sources[0][0] if len(sources) == 1 else None
                return Binding(name, "param", value, flags)
        consts = scope.constants or {}
        if name in consts:
            return bind.constant(name, consts[name])
        if param:
            return None
        if name in scope.opaque:  # (the stdlib tree's walrus targets, before any indexing)
            walrused = self._walrus(scope, name)
            if walrused is not None:
                return walrused
        index, opaque = self._index(scope)
        if name not in index:
            imported = self.mctx.imports.get(name)  # its value: the build reads that module
            return Binding(name, "import", imported) if imported else None
        if name in opaque:
            looped = self._looped(scope, name)
            if looped is not None:
                return looped
            if isinstance(scope.ast_node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if scope.targets is None:
                    scope.targets = bind.tuple_targets(scope.ast_node)
                found = bind.ast_unpacked(
                    scope.targets,
                    name,
                    lambda n: _ast_args_path(n, scope.args_names, self.args) is not None,
                )
            else:  # only libcst parses this function
                if scope.assigns is None:
                    scope.assigns = bind.function_assignments(fn)
                is_args = lambda n: _args_path(n, scope.args_names, self.args) is not None  # noqa: E731
                got = bind.unpacked(scope.assigns, name, is_args)
                found = (bind.source(got[0]), got[1]) if got else None
            return Binding(name, "local", f"{found[0]}[{found[1]}]") if found else None
        mine = lambda stmt: id(stmt) in index[name]  # noqa: E731
        alts = reaching(name, self.stack, mine)
        if not alts or any(augs for _, augs in alts):
            return None
        flags = _ordered([f for value, _ in alts for f in self._flags(value, scope)])
        # reassigned since the branch that leads here tested it (`mode = self.mode`, then
        # `if mode == X: msg = f"{mode} ..."; mode = Y; log(msg)`): what that branch read
        for k in range(len(self.stack) - 1, 0, -1) if not flags else ():
            if isinstance(self.stack[k], (cst.If, cst.While)):
                there = reaching(name, self.stack[: k + 1], mine) or []
                if not any(augs for _, augs in there):
                    flags = _ordered([f for v, _ in there for f in self._flags(v, scope)])
                    alts = there if flags else alts
                if flags:
                    break
        if not flags:
            return None
        texts = {bind.source(value) for value, _ in alts}
        return Binding(name, "local", texts.pop() if len(texts) == 1 else None, tuple(flags))

    def _looped(self, scope: _Scope, name: str) -> Binding | None:
        """`op` of `for op in self.custom_ops:` around the site: an item of the flags the loop
        goes over (the innermost loop that binds the name); over a display of several
        (`for flag, value in (("--a", self.a), ("--b", self.b))`), the value of one of them."""
        for node in reversed(self.stack):
            if isinstance(node, (cst.For, cst.CompFor)) and name in _names_in(node.target):
                flags = tuple(self._flags(node.iter, scope))
                display = isinstance(node.iter, (cst.Tuple, cst.List, cst.Set))
                return Binding(name, "local" if display else "item", None, flags) if flags else None
        return None

    def _walrus(self, scope: _Scope, name: str) -> Binding | None:
        """`x` of `if x := self.x:` around the site: the value the enclosing test bound (the
        innermost test that binds the name)."""
        found: list[cst.NamedExpr] = []

        class _Bound(cst.CSTVisitor):
            def visit_NamedExpr(self, n: cst.NamedExpr) -> None:
                if isinstance(n.target, cst.Name) and n.target.value == name:
                    found.append(n)

        for node in reversed(self.stack):
            if isinstance(node, (cst.If, cst.While)):
                walk(_Bound(), node.test)
            if found:
                flags = tuple(self._flags(found[0].value, scope))
                return Binding(name, "local", bind.source(found[0].value), flags) if flags else None
        return None

    def _index(self, scope: _Scope) -> tuple[dict[str, set[int]], set[str]]:
        if scope.assign_index is None or scope.index_opaque is None:
            scope.assign_index, scope.index_opaque = _index_function(scope.node)
            scope.opaque |= scope.index_opaque
        return scope.assign_index, scope.index_opaque

    def _assignments(self, scope: _Scope, guards: list[Guard]) -> list[Binding]:
        """`self.x = ...` on the path before the site (kept when a guard reads x, or when it
        sits inside the site's branch) and after the site in its own block."""
        guard_lines = [g.line for g in guards if g.kind not in ("early-exit", "assert")]
        read = {f for g in guards for f in g.flags}

        def line_of(stmt: cst.CSTNode) -> int:
            return self.position(self.ordinal.get(id(stmt), -1), stmt)[0]

        def path_of(node: cst.BaseExpression) -> str | None:
            return _args_path(node, scope.args_names, self.args)

        def may_assign(stmt: cst.CSTNode) -> set[str] | None:
            ordinal = self.ordinal.get(id(stmt))
            node = self.ast_stmt(ordinal) if ordinal is not None else None
            return bind.ast_maybe_assigned(node, scope.args_names) if node is not None else None

        before, after = bind.flag_assignments(
            self.stack,
            function_start(self.stack),
            path_of,
            line_of,
            scope.maybe_assigned,
            may_assign,
        )
        inner = max(guard_lines, default=0)

        def flag(dotted: str) -> str:  # (a config's field keeps its path: link.py resolves it)
            return "--" + dotted.replace("_", "-")

        # flags: the one assigned, then those its value reads (`self.x = self.y` -> x, y)
        out = [
            Binding(
                attr,
                "assigned",
                bind.source(value),
                tuple(dict.fromkeys([flag(dotted), *self._flags(value, scope)])),
                line,
            )
            for attr, value, line, dotted in before
            if flag(dotted) in read or line > inner
        ]
        out += [
            Binding(attr, "sets", bind.source(value), (flag(dotted),))
            for attr, value, _, dotted in after
        ]
        return out

    def _flags(self, node: cst.CSTNode | None, scope: _Scope | None) -> list[str]:
        if node is None:
            return []
        memo = self.flag_memo.get(id(node))  # one guard test is shared by many sites
        if memo is not None:
            return memo
        names = scope.args_names if scope else self.args.default_names
        finder = _FlagFinder(names, self.args, self.mctx.predicates)
        walk(finder, node)
        self.flag_memo[id(node)] = finder.flags
        return finder.flags


# ---------------------------------------------------------------- helpers


def _conjuncts(test: cst.BaseExpression | None) -> list[cst.BaseExpression]:
    """The parts of `a and b and c` (a test of one part: none)."""
    if not (isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And)):
        return []
    parts = _conjuncts(test.left) or [test.left]
    return parts + (_conjuncts(test.right) or [test.right])


def _first_positional(call: cst.Call) -> cst.BaseExpression | None:
    for a in call.args:
        if a.keyword is None and not a.star:
            return a.value
    return _keyword(call, "msg") or _keyword(call, "message")


def _keyword(call: cst.Call, name: str) -> cst.BaseExpression | None:
    for a in call.args:
        if a.keyword is not None and a.keyword.value == name:
            return a.value
    return None


def _self_attributes(node: cst.CSTNode) -> list[cst.Attribute]:
    """Every `self.x` in an expression."""
    out = []
    todo = [node]
    while todo:
        n = todo.pop()
        if (
            isinstance(n, cst.Attribute)
            and isinstance(n.value, cst.Name)
            and n.value.value == "self"
        ):
            out.append(n)
        todo.extend(n.children)
    return out


def _ordered(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _snippet(lines: Sequence[str], line: int, end_line: int, col: int, end_col: int) -> str:
    chunk = list(lines[line - 1 : end_line])
    if not chunk:
        return ""
    if len(chunk) == 1:
        return chunk[0][col:end_col]
    chunk[-1] = chunk[-1][:end_col]
    chunk[0] = chunk[0][col:]
    return "\n".join(chunk)


def _reparse(node: cst.FunctionDef) -> ast.AST | None:
    """The stdlib tree of one function, for the libcst-only path (newer syntax elsewhere)."""
    try:
        return ast.parse(textwrap.dedent(code(node))).body[0]
    except (SyntaxError, ValueError):
        return None


class _ArgsRules:
    """The profile's rules for recognising the launch-arguments object, compiled once."""

    def __init__(self, mctx: ModuleContext) -> None:
        rules = mctx.rules
        self.mctx = mctx
        self.names = glob_re(rules.args_names)
        self.views = glob_re(rules.view_calls)
        self.getters = glob_re(rules.args_getters)
        self.config_views = glob_re(rules.config_views)
        self.config_classes = glob_re(rules.config_classes)
        self.has_config = bool(rules.config_classes)
        # outside any function (a module-level statement): the plain names the profile lists
        self.default_names: ArgsNames = {n: "" for n in rules.args_names if n.isidentifier()}
        # On the launch path the args object is held by objects of every kind (a model
        # runner's `self.server_args`, a worker's `self.cache_config`), so an attribute of
        # that name is it, whatever holds it. Elsewhere only the known holders count.
        self.loose = mctx.launch
        self.copies = set(rules.launch_copies) if mctx.launch else set()
        # a config held in another's field under a name of its own (`offload_config.uva`, the
        # profile's code_fills): the path goes on through it
        self.fills = tuple(path for path, _ in rules.code_fills)
        self.filled_names = {path.rpartition(".")[2] for path in self.fills}

    def view(self, name: str) -> bool:
        return self.views.match(name) is not None

    def getter(self, name: str) -> bool:
        return self.getters.match(name) is not None

    def config_view(self, name: str) -> bool:
        return self.config_views.match(name) is not None

    def may_hold(self, name: str) -> bool:
        """Whether an attribute of this name may hold a config object (checked before the
        path of what it is read on, which costs more)."""
        return self.config_view(name) or name in self.filled_names

    def holds(self, base: str, name: str) -> bool:
        """Whether `base.name` is a config object: a config view, or a code_fills path
        (`offload_config.uva`)."""
        path = f".{base}.{name}"
        return self.config_view(name) or (
            name in self.filled_names and any(path.endswith("." + f) for f in self.fills)
        )


def _args_params(node: cst.FunctionDef, rules: _ArgsRules, class_prefix: str | None) -> ArgsNames:
    """Parameters that hold the launch-arguments object (or a config object of it): `self` in
    such a class, a name the profile lists, a parameter annotated with such a class, or, in a
    config class, an unannotated one named as a config view."""
    out: ArgsNames = {}
    flag_classes = [c for c, prefix in rules.mctx.args_classes.items() if c and prefix == ""]
    params = [*node.params.posonly_params, *node.params.params, *node.params.kwonly_params]
    for i, p in enumerate(params):
        name = p.name.value
        ann = code(p.annotation.annotation) if p.annotation else ""
        if rules.names.match(name) or any(c in ann for c in flag_classes):
            out[name] = ""
        elif i == 0 and name == "self" and class_prefix is not None:
            out[name] = class_prefix
        elif ann and rules.has_config:
            # `parallel_config: ParallelConfig`: a config class, here or in another module
            hits = [w for w in _WORDS.findall(ann) if rules.config_classes.match(w)]
            if hits:
                out[name] = snake_case(hits[0])
        elif not ann and class_prefix and rules.config_view(name):
            # `verify_with(self, parallel_config)` in a config class: the older config classes
            # annotated no parameter, and passed each other by the attribute's name
            out[name] = name
    return out


def _args_path(node: cst.BaseExpression, names: ArgsNames, rules: _ArgsRules) -> str | None:
    """The path of `node` when it is the launch-arguments object, a view of it, or a config
    object reached from it; None otherwise. The same rule as _ast_args_path, on libcst nodes:
    flag reads are found on libcst trees, aliases on the stdlib `ast` (the cheap pass).
    Converting one tree to the other on every attribute would cost more than keeping the two in
    step, so change both together."""
    if isinstance(node, cst.Name):
        hit = names.get(node.value)
        return _loose_path(node.value, rules) if hit is None and rules.loose else hit
    if isinstance(node, cst.Call):
        f = node.func
        if isinstance(f, cst.Name) and rules.view(f.value):
            return _args_path(node.args[0].value, names, rules) if node.args else None
        if isinstance(f, cst.Attribute) and rules.view(f.attr.value):
            return _args_path(f.value, names, rules) if not node.args else None
        if isinstance(f, cst.Name) and rules.getter(f.value):  # get_global_server_args()
            return "" if not node.args else None
    if isinstance(node, cst.Attribute) and rules.may_hold(node.attr.value):
        base = _args_path(node.value, names, rules)
        if base is not None and rules.holds(base, node.attr.value):
            return f"{base}.{node.attr.value}" if base else node.attr.value
    if rules.loose and isinstance(node, cst.Attribute):
        return _loose_path(node.attr.value, rules)
    return None


def _loose_path(name: str, rules: _ArgsRules) -> str | None:
    """On the launch path: `server_args` is the args object, `cache_config` a config view,
    whoever holds them."""
    if rules.names.match(name):
        return ""
    return name if rules.config_view(name) else None


def _ast_args_path(node: ast.AST, names: ArgsNames, rules: _ArgsRules) -> str | None:
    """_args_path on stdlib `ast` nodes; keep the two in step."""
    if isinstance(node, ast.Name):
        hit = names.get(node.id)
        return _loose_path(node.id, rules) if hit is None and rules.loose else hit
    if isinstance(node, ast.Call):
        f = node.func
        if isinstance(f, ast.Name) and rules.view(f.id):
            return _ast_args_path(node.args[0], names, rules) if node.args else None
        if isinstance(f, ast.Attribute) and rules.view(f.attr):
            return _ast_args_path(f.value, names, rules) if not node.args else None
        if isinstance(f, ast.Name) and rules.getter(f.id):
            return "" if not node.args else None
    if isinstance(node, ast.Attribute) and rules.may_hold(node.attr):
        base = _ast_args_path(node.value, names, rules)
        if base is not None and rules.holds(base, node.attr):
            return f"{base}.{node.attr}" if base else node.attr
    if rules.loose and isinstance(node, ast.Attribute):
        return _loose_path(node.attr, rules)
    return None


def _index_function(node: cst.FunctionDef) -> tuple[dict[str, set[int]], set[str]]:
    """Which statements (ids, at every nesting level) assign each name, and the names bound in
    ways reaching-definitions does not model. Walks statements only: assignments are statements
    (walrus targets come from the stdlib tree instead)."""
    index: dict[str, set[int]] = {}
    opaque: set[str] = set()

    def mark(name: str, path: list[cst.CSTNode], is_opaque: bool) -> None:
        index.setdefault(name, set()).update(id(n) for n in path)
        if is_opaque:
            opaque.add(name)

    def walk(stmts: Sequence[cst.CSTNode], stack: list[cst.CSTNode]) -> None:
        for st in stmts:
            path = [*stack, st]
            if isinstance(st, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
                walk(st.body, path)
            elif isinstance(st, cst.BaseSmallStatement):
                for name, is_opaque in _small_targets(st):
                    mark(name, path, is_opaque)
            elif isinstance(st, (cst.FunctionDef, cst.ClassDef)):
                mark(st.name.value, path, True)  # nested scopes bind their own names
            else:
                for name in _compound_targets(st):
                    mark(name, path, True)
                for block in _blocks(st):
                    walk(block, path)

    walk(node.body.body, [])
    return index, opaque


def _names_in(target: cst.CSTNode) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in _names_in(e.value)]
    if isinstance(target, cst.StarredElement):
        return _names_in(target.value)
    return []


def _small_targets(st: cst.BaseSmallStatement) -> list[tuple[str, bool]]:
    if isinstance(st, cst.Assign):
        return [
            (n, not isinstance(t.target, cst.Name)) for t in st.targets for n in _names_in(t.target)
        ]
    if isinstance(st, (cst.AnnAssign, cst.AugAssign)):
        return [(n, False) for n in _names_in(st.target)]
    if isinstance(st, cst.Del):
        return [(n, True) for n in _names_in(st.target)]
    if isinstance(st, (cst.Global, cst.Nonlocal)):
        return [(n.name.value, True) for n in st.names]
    if isinstance(st, (cst.Import, cst.ImportFrom)) and not isinstance(st.names, cst.ImportStar):
        return [
            (code(a.asname.name) if a.asname else code(a.name).split(".")[0], True)
            for a in st.names
        ]
    return []


def _compound_targets(st: cst.CSTNode) -> list[str]:
    if isinstance(st, cst.For):
        return _names_in(st.target)
    if isinstance(st, cst.With):
        return [n for item in st.items if item.asname for n in _names_in(item.asname.name)]
    if isinstance(st, (cst.Try, cst.TryStar)):
        return [n for h in st.handlers if h.name for n in _names_in(h.name.name)]
    return []


def _blocks(st: cst.CSTNode) -> list[Sequence[cst.CSTNode]]:
    out: list[Sequence[cst.CSTNode]] = []
    if isinstance(st, cst.If):
        node: cst.CSTNode | None = st
        while isinstance(node, cst.If):
            out.append(node.body.body)
            node = node.orelse
        if isinstance(node, cst.Else):
            out.append(node.body.body)
    elif isinstance(st, (cst.For, cst.While)):
        out.append(st.body.body)
        if st.orelse is not None:
            out.append(st.orelse.body.body)
    elif isinstance(st, (cst.Try, cst.TryStar)):
        out.append(st.body.body)
        out += [h.body.body for h in st.handlers]
        if st.orelse is not None:
            out.append(st.orelse.body.body)
        if st.finalbody is not None:
            out.append(st.finalbody.body.body)
    elif isinstance(st, cst.With):
        out.append(st.body.body)
    elif isinstance(st, cst.Match):
        out += [c.body.body for c in st.cases]
    return out


def _function_facts(
    node: ast.AST, wrappers: set[str], names: ArgsNames, rules: _ArgsRules
) -> tuple[set[str], set[str], set[str], ArgsNames]:
    """One walk of a function's stdlib tree (three walks were a twentieth of a backfill):
    - the names it binds (assigned, deleted, parameters): they shadow module constants;
    - the names some assignment gives a string-building value, and the walrus targets: only
      the first are worth a reaching-definitions search (`x = compute()` never yields a
      message text);
    - locals bound to the launch-arguments object or a view of it
      (`cfg = resolving_view(args)`), each seen by the assignments after it."""
    bound: set[str] = set()
    messages: set[str] = set()
    walrus: set[str] = set()
    names = dict(names)
    aliases: ArgsNames = {}
    for n in ast.walk(node):
        kind = n.__class__
        if kind is ast.Name:
            if n.ctx.__class__ is not ast.Load:
                bound.add(n.id)
        elif kind is ast.arg:
            bound.add(n.arg)
        elif kind is ast.AugAssign:
            if isinstance(n.target, ast.Name):
                messages.add(n.target.id)
        elif kind is ast.Assign or kind is ast.AnnAssign:
            if n.value is not None and _stringish(n.value, wrappers):
                targets = n.targets if kind is ast.Assign else [n.target]
                messages.update(t.id for t in targets if isinstance(t, ast.Name))
            if kind is ast.Assign and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
                path = _ast_args_path(n.value, names, rules)
                if path is not None:
                    names[n.targets[0].id] = aliases[n.targets[0].id] = path
        elif kind is ast.NamedExpr:
            walrus.add(n.target.id)
    return bound, messages, walrus, aliases


def _stringish(value: ast.AST, wrappers: set[str]) -> bool:
    if isinstance(value, ast.Constant):
        return isinstance(value.value, str)
    if isinstance(value, (ast.JoinedStr, ast.IfExp, ast.Name)):
        return True
    if isinstance(value, ast.BinOp):
        return isinstance(value.op, (ast.Add, ast.Mod))
    if isinstance(value, ast.Call):
        f = value.func
        if isinstance(f, ast.Attribute):
            return f.attr == "format"
        return isinstance(f, ast.Name) and (f.id in ("str", "repr") or f.id in wrappers)
    return False


class _FlagFinder(cst.CSTVisitor):
    """Attributes read on the launch-arguments object (or a view of it), first-seen order, as
    `--attr-name`; read on a config object reached from it, as `--path.attr-name`."""

    def __init__(
        self, names: ArgsNames, rules: _ArgsRules, predicates: Mapping[str, tuple[str, ...]]
    ) -> None:
        super().__init__()
        self.names, self.rules, self.predicates = names, rules, predicates
        self.flags: list[str] = []
        self.called: set[int] = set()
        self.receivers: set[int] = set()  # config objects read only for a field of theirs

    def visit_Call(self, node: cst.Call) -> None:
        self.called.add(id(node.func))
        func = node.func  # `self.contains_attention()`: the fields that method tests
        mine = isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)
        # (a method of parameters is there only for the tests that make it return None)
        if mine and func.value.value == "self":  # type: ignore[union-attr]
            for flag in self.predicates.get(func.attr.value, ()):  # type: ignore[union-attr]
                if flag not in self.flags:
                    self.flags.append(flag)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        attr = node.attr.value
        if id(node) in self.called or id(node) in self.receivers or attr.startswith("_"):
            return
        path = _args_path(node.value, self.names, self.rules)
        if path is None and attr in self.rules.copies:
            path = ""  # (a launch-path object's copy of the flag)
        if path is None:
            return
        if path and isinstance(node.value, cst.Attribute):
            self.receivers.add(id(node.value))
        flag = "--" + (f"{path}.{attr}" if path else attr).replace("_", "-")
        if flag not in self.flags:
            self.flags.append(flag)
