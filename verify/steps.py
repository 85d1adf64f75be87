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
import dataclasses
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
    # function -> the functions of the loaded modules that call it (why a function is not
    # reached: nothing calls it, or only what no step reaches)
    callers: Mapping[Node, frozenset[Node]] = dataclasses.field(default_factory=dict, compare=False)

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
    lines = sources[main_file].splitlines()
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
            steps.append(Step(phase, i, stmt.lineno, end, _first_line(lines, stmt)))
            reach.append(_closure(start, graph))
    callers: dict[Node, set[Node]] = {}
    for caller, callees in graph.items():
        for callee in callees:
            if callee != caller:
                callers.setdefault(callee, set()).add(caller)
    return StepPlan(
        tuple(steps),
        tuple(reach),
        tuple(found),
        main_file,
        args_class,
        tuple(missing),
        {k: frozenset(v) for k, v in callers.items()},
    )


def _is_docstring(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def _first_line(lines: Sequence[str], stmt: ast.stmt) -> str:
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
