"""Which validation steps run before a check, read from the revision's own source.

The validator is a method (`__post_init__`) whose body is a sequence of steps
(`self._handle_x()`), followed by further check methods the launch calls afterwards
(`check_server_args`). To run "up to and including the record's function", the harness needs,
for each top-level statement of those methods, every function it can reach; the first
statement that reaches the record's function is where the run stops.

Reachability follows `self.m(...)` calls within the class and calls of module-level functions
of the loaded modules (`handle_x(self)` imported from an arg-groups module); a spec that says
`follow = "all"` also follows the config classes a step builds and the methods it calls on
them (`_Index`). A nested function counts as part of the function that defines it. Pure stdlib `ast`: the parent uses it to say
why a record is not applicable, the child to truncate the run.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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
    # function -> the functions of the loaded modules that call it (why a function is not
    # reached: nothing calls it, or only what no step reaches)
    callers: Mapping[Node, frozenset[Node]] = dataclasses.field(default_factory=dict, compare=False)
    # The run goes on to the last step that may reach a check, not the first: reach followed
    # through every object over-approximates (`_Index`), and the first step that might reach
    # it may not.
    last: bool = False
    # what building the parser reaches: its type functions run as the command line is parsed
    at_parse: frozenset[Node] = frozenset()
    # what a piece of a step reaches (ways_in: does this branch's call lead to the function?)
    reaches: Any = dataclasses.field(default=None, compare=False, repr=False)
    # what building a class runs (its __init__, __post_init__, validators and their callees)
    on_build: Any = dataclasses.field(default=None, compare=False, repr=False)

    def built_with(self, node: Node, classes: Sequence[str]) -> bool:
        """`node` runs when one of `classes` is built (a config class a JSON option is
        parsed into: its validators run while the command line is parsed)."""
        return self.on_build is not None and any(within(node, self.on_build(c)) for c in classes)

    def stop_for(self, node: Node, line: int = 0) -> Step | None:
        """The first (or, with `last`, the last) step that reaches `node` (its function or a
        nested one), or None. A site in a phase method's own body (`line` given) stops at the
        statement holding it."""
        file, func = node
        found = None
        for step, reach in zip(self.steps, self.reach, strict=True):
            if file == self.main_file and func == f"{self.args_class}.{step.phase}":
                if step.line <= line <= step.end_line:
                    return step
                continue
            if within(node, reach):
                found = step
                if not self.last:
                    return step
        return found

    def parse_time(self, node: Node) -> bool:
        """`node` runs while the command line is parsed (a type function the parser calls)."""
        return within(node, self.at_parse)


def within(node: Node, reach: Iterable[Node]) -> bool:
    """`node` is one of `reach`'s functions, or nested in one."""
    file, func = node
    return any(f == file and (q == func or func.startswith(q + ".")) for f, q in reach)


def plan_steps(
    sources: Mapping[str, str],
    main_file: str,
    args_class: str,
    phases: Sequence[str],
    trees: Mapping[str, ast.Module] | None = None,
    follow: str = "self",
    validators: Sequence[str] = (),
    add_args: str = "",
) -> StepPlan:
    """The steps of `phases` (methods of `args_class` in `main_file`), with their reach over
    every function defined in `sources` (path -> text; `trees`: the same already parsed).
    `follow="all"` also follows classes built and methods called on any object (see
    `_Index`); `validators`: decorators whose methods run when their class is built;
    `add_args`: the method that builds the parser (what it reaches runs at parse time)."""
    trees = trees or {path: ast.parse(text) for path, text in sources.items()}
    defs = definitions(trees)
    index = _Index(defs, trees, args_class, follow == "all", frozenset(validators))
    graph = {node: index.callees(node, fn) for node, fn in defs.items()}
    steps, reach, found, missing = [], [], [], []
    lines = sources[main_file].splitlines()
    for phase in phases:
        fn = defs.get((main_file, f"{args_class}.{phase}"))
        if fn is None:
            missing.append(phase)
            continue
        found.append(phase)
        for i, stmt in enumerate(fn.body):
            if i == 0 and is_docstring(stmt):
                continue
            start = index.callees((main_file, f"{args_class}.{phase}"), stmt)
            end = stmt.end_lineno or stmt.lineno
            steps.append(Step(phase, i, stmt.lineno, end, _first_line(lines, stmt)))
            reach.append(_closure(start, graph))
    callers: dict[Node, set[Node]] = {}
    for caller, callees in graph.items():
        for callee in callees:
            if callee != caller:
                callers.setdefault(callee, set()).add(caller)
    builder = (main_file, f"{args_class}.{add_args}")
    at_parse = _closure(index.callees(builder, defs[builder]), graph) if builder in defs else set()
    return StepPlan(
        tuple(steps),
        tuple(reach),
        tuple(found),
        main_file,
        args_class,
        tuple(missing),
        {k: frozenset(v) for k, v in callers.items()},
        last=follow == "all",
        at_parse=frozenset(at_parse),
        reaches=lambda node, body: _closure(index.callees(node, body), graph),
        on_build=lambda cls: _closure(set(index.built.get(cls, ())), graph),
    )


def is_docstring(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def self_attr(node: ast.AST) -> str | None:
    """The `x` of a `self.x` read, else None."""
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    ):
        return node.attr
    return None


def targets_of(stmt: ast.AST) -> list[ast.expr]:
    """What an assignment (`=`, `+=`, `x: T = v`) assigns to; [] for any other node."""
    if isinstance(stmt, ast.Assign):
        return list(stmt.targets)
    if isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
        return [stmt.target]
    return []


def substitute(expr: ast.expr, values: Mapping[str, ast.expr]) -> ast.expr:
    """A copy of `expr` with each name it reads that `values` holds replaced by (a copy of)
    that expression."""

    class Put(ast.NodeTransformer):
        def visit_Name(self, n: ast.Name) -> ast.AST:  # noqa: N802 - ast's name
            return (
                copy.deepcopy(values[n.id]) if isinstance(n.ctx, ast.Load) and n.id in values else n
            )

    return Put().visit(copy.deepcopy(expr))


def _first_line(lines: Sequence[str], stmt: ast.stmt) -> str:
    return lines[stmt.lineno - 1].strip() if 0 < stmt.lineno <= len(lines) else ""


def definitions(trees: Mapping[str, ast.Module]) -> dict[Node, ast.AST]:
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


class _Index:
    """What a call or an attribute reaches among the loaded modules' functions.

    Always: `self.m()` (a method of the args class, or of the class the caller belongs to)
    and a bare `f()` (a module-level function). With `everything`: a class called is built,
    which runs its `__init__`, `__post_init__` and the methods decorated by one of
    `validators`, and so is a class or function handed on by name (`type=parse_x`,
    `TypeAdapter(XConfig)`); `obj.m()` reaches every method named `m` (the object's class is
    not known from the source: a config held by another, `self.model_config.verify_x()`); and
    reading an attribute that some class defines as a property runs it. That over-approximates, so a
    run may stop at a step before the one that truly reaches a check: the check then does not
    fire there and stays unverified, never wrongly verified."""

    def __init__(
        self,
        defs: Mapping[Node, ast.AST],
        trees: Mapping[str, ast.Module],
        args_class: str,
        everything: bool,
        validators: frozenset[str],
    ) -> None:
        self.args_class, self.everything = args_class, everything
        self.by_name: dict[str, list[Node]] = {}
        self.methods: dict[str, list[Node]] = {}
        self.properties: dict[str, list[Node]] = {}
        self.built: dict[str, list[Node]] = {}
        for n, fn in defs.items():
            self.by_name.setdefault(n[1], []).append(n)
            owner, dot, method = n[1].rpartition(".")
            if not dot:
                continue
            self.methods.setdefault(method, []).append(n)
            names = {_decorator(d) for d in getattr(fn, "decorator_list", ())}
            if names & {"property", "cached_property"}:
                self.properties.setdefault(method, []).append(n)
            if method in ("__init__", "__post_init__") or names & validators:
                self.built.setdefault(owner, []).append(n)
        # `Backend["x"]` runs the metaclass's __getitem__ (an enum that words its own error)
        self.indexed: dict[str, list[Node]] = {}
        for tree in trees.values():
            for cls in tree.body:
                if isinstance(cls, ast.ClassDef):
                    for kw in cls.keywords:
                        if kw.arg == "metaclass" and isinstance(kw.value, ast.Name):
                            found = self.by_name.get(f"{kw.value.id}.__getitem__", [])
                            self.indexed.setdefault(cls.name, []).extend(found)

    def callees(self, node: Node, body: ast.AST) -> set[Node]:
        """Functions `body` reaches; the enclosing node itself counts, so nested helpers are
        reached with their parent."""
        out = {node} if isinstance(body, (ast.FunctionDef, ast.AsyncFunctionDef)) else set()
        own = node[1].rpartition(".")[0]
        for sub in ast.walk(body):
            if self.everything and isinstance(sub, ast.Attribute):
                out.update(self.properties.get(sub.attr, ()))
            if isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Name):
                out.update(self.indexed.get(sub.value.id, ()))
            if self.everything and isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
                # a function or class handed on (`type=parse_x`, `TypeAdapter(XConfig)`) is
                # called, or built, by whoever receives it
                out.update(self.by_name.get(sub.id, ()))
                out.update(self.built.get(sub.id, ()))
            if not isinstance(sub, ast.Call):
                continue
            f = sub.func
            if isinstance(f, ast.Attribute):
                if isinstance(f.value, ast.Name) and f.value.id == "self":
                    for cls in dict.fromkeys((self.args_class, own)):
                        out.update(self.by_name.get(f"{cls}.{f.attr}", ()))
                elif self.everything:
                    out.update(self.methods.get(f.attr, ()))
            elif isinstance(f, ast.Name):
                out.update(self.by_name.get(f.id, ()))
                if self.everything:
                    out.update(self.built.get(f.id, ()))
        return out


def _decorator(node: ast.expr) -> str:
    """A decorator's name: `property`, `field_validator` of `@field_validator("x")`."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _closure(start: set[Node], graph: Mapping[Node, set[Node]]) -> frozenset[Node]:
    seen, todo = set(start), list(start)
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return frozenset(seen)


def ways_in(
    plan: StepPlan, trees: Mapping[str, ast.Module], node: Node
) -> list[tuple[str, int, str, bool]]:
    """The tests inside the steps that may reach `node` that decide whether the step builds
    or calls anything at all (`LoRAConfig(...) if self.enable_lora else None`, `if
    self.speculative_config is None: return None` in a helper the step calls is not seen):
    (phase method, line, test, the truth value that takes the branch with the call), for the
    tests that read the args object (`self.x`). The search watches them where they run."""
    out: list[tuple[str, int, str, bool]] = []
    main = trees.get(plan.main_file)
    if main is None:
        return out
    stmts = {
        (n.lineno, item.name): n
        for cls in main.body
        if isinstance(cls, ast.ClassDef) and cls.name == plan.args_class
        for item in cls.body
        if isinstance(item, ast.FunctionDef)
        for n in item.body
    }
    for step, reach in zip(plan.steps, plan.reach, strict=True):
        stmt = stmts.get((step.line, step.phase))
        if stmt is None or not within(node, reach):
            continue
        for sub in ast.walk(stmt):
            if not isinstance(sub, (ast.If, ast.IfExp)):
                continue
            body = sub.body if isinstance(sub, ast.IfExp) else ast.Module(sub.body, [])
            orelse = sub.orelse if isinstance(sub, ast.IfExp) else ast.Module(sub.orelse, [])
            test = ast.unparse(sub.test)
            if "self." not in test:
                continue
            phase = f"{plan.args_class}.{step.phase}"
            if _leads(plan, phase, body, node):
                out.append((phase, sub.test.lineno, test, True))
            elif _leads(plan, phase, orelse, node):
                out.append((phase, sub.test.lineno, test, False))
    return out


def _leads(plan: StepPlan, phase: str, branch: ast.AST | None, node: Node) -> bool:
    """The branch calls something, and (when the plan can tell) what it calls reaches `node`:
    a branch that only logs or reads an address is no way in."""
    if branch is None or not any(isinstance(n, ast.Call) for n in ast.walk(branch)):
        return False
    if plan.reaches is None:
        return True
    reach = plan.reaches((plan.main_file, phase), branch) - {(plan.main_file, phase)}
    return within(node, reach)
