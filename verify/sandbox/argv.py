"""The argv stage (child side): what the launch does to its command line before parsing it.

SGLang's `prepare_server_args(argv)` builds the parser and, when the command line holds
`--config FILE`, hands it to ConfigArgumentMerger, which reads the file and returns the command
line with the file's options put in; only then does it call `parser.parse_args(argv)`. The
spec names that function (`[verify.argv] entry`). Its top-level statements before the parse
call become a function of the command line, run for real on every launch:

    stage = build_stage(tree, path, "prepare_server_args", "ServerArgs", "add_cli_args", ns)
    argv = stage.run(argv, parser)

Statements that only build the parser (`p = argparse.ArgumentParser(...)` and
`ServerArgs.add_cli_args(p)`) get the harness's own parser instead: the same options, built
once per environment rather than once per run. `reach` holds the functions those statements
can call (a class they instantiate, the methods called on the instance, the methods those call
on `self`), so a check there is known to be decided at argv time. Pure stdlib `ast`.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kverr.verify.sandbox.steps import Node, definitions, within

PARSER = "__kverr_parser__"  # the harness's parser, handed to the stage as an argument
_PARSE_CALLS = ("parse_args", "parse_known_args")


@dataclass
class ArgvStage:
    """The entry point's statements before the parse, compiled; `reason` says why not when
    the revision gives no such stage (no entry function, no parse call in it, or the
    statements fail on a plain launch)."""

    entry: str
    function: Any = None
    reach: frozenset[Node] = frozenset()
    reason: str = ""

    @property
    def ready(self) -> bool:
        return self.function is not None and not self.reason

    def run(self, argv: Sequence[str], parser: Any) -> list[str]:
        out = self.function(list(argv), parser)
        if not isinstance(out, list) or not all(isinstance(w, str) for w in out):
            raise TypeError(f"{self.entry} turned the command line into {type(out).__name__}")
        return out

    def probe(self, parser: Any) -> None:
        """Run once on an empty command line: a stage that fails on any launch is no stage
        (every run would report its failure instead of the check it was after)."""
        if not self.ready:
            return
        try:
            self.run([], parser)
        except BaseException as exc:  # noqa: BLE001 - the reason is data
            what = f"{type(exc).__name__}: {exc}"[:200]
            self.reason = f"{self.entry} fails before parsing a plain launch ({what})"

    def reaches(self, file: str, function: str) -> bool:
        return self.ready and within((file, function), self.reach)

    def to_json(self) -> dict[str, Any]:
        return {
            "entry": self.entry,
            "ready": self.ready,
            "reason": self.reason,
            "reach": sorted([list(n) for n in self.reach]),
        }


def build_stage(
    trees: Mapping[str, ast.Module],
    main_path: str,
    entry: str,
    args_class: str,
    add_args: str,
    namespace: dict[str, Any],
) -> ArgvStage:
    """The stage of `entry` (a top-level function of `main_path`), compiled in `namespace` (the
    main module's globals); `trees`: the loaded modules, for what the statements reach."""
    fn = next(
        (n for n in trees[main_path].body if isinstance(n, ast.FunctionDef) and n.name == entry),
        None,
    )
    if fn is None:
        return ArgvStage(entry, reason=f"this revision's {main_path} has no {entry}()")
    params = [a.arg for a in fn.args.args]
    body = prefix(fn)
    if body is None or not params:
        return ArgvStage(
            entry, reason=f"this revision's {entry}() does not parse a command line it is given"
        )
    own = _OwnParser(args_class, add_args)
    stmts = [own.visit(copy.deepcopy(s)) for s in body]
    back = ast.Return(ast.Name(params[0], ast.Load()))
    ast.copy_location(back, fn)
    args = ast.arguments(
        posonlyargs=[],
        args=[ast.arg(params[0]), ast.arg(PARSER)],
        kwonlyargs=[],
        kw_defaults=[],
        defaults=[],
    )
    function = compiled(fn, args, [*stmts, back], main_path, namespace)
    return ArgvStage(entry, function, reach(stmts, trees))


def compiled(
    fn: ast.FunctionDef, args: ast.arguments, body: list[ast.stmt], path: str, namespace: dict
) -> Any:
    """A function named as `fn`, with `args` and `body`, at `fn`'s lines: compiled as `path`'s
    code in `namespace` (the module's globals)."""
    short = ast.FunctionDef(
        name=fn.name, args=args, body=body, decorator_list=[], returns=None, type_comment=None
    )
    ast.copy_location(short, fn)
    module = ast.fix_missing_locations(ast.Module(body=[short], type_ignores=[]))
    local: dict[str, Any] = {}
    exec(compile(module, path, "exec"), namespace, local)  # noqa: S102 - the revision's own
    return local[fn.name]


def prefix(fn: ast.FunctionDef) -> list[ast.stmt] | None:
    """The top-level statements of `fn` before the first that parses (docstring left out);
    None when none does."""
    out: list[ast.stmt] = []
    for i, stmt in enumerate(fn.body):
        if any(
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr in _PARSE_CALLS
            for n in ast.walk(stmt)
        ):
            return out
        docstring = isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
        if not (i == 0 and docstring):
            out.append(stmt)
    return None


class _OwnParser(ast.NodeTransformer):
    """`p = argparse.ArgumentParser(...)` -> `p = <the harness's parser>`; the call adding the
    options to it -> `pass` (the harness's parser has them already)."""

    def __init__(self, args_class: str, add_args: str) -> None:
        self.args_class, self.add_args = args_class, add_args

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        value = node.value
        if isinstance(value, ast.Call) and _called(value) == "ArgumentParser":
            new = ast.Assign(targets=node.targets, value=ast.Name(PARSER, ast.Load()))
            return ast.copy_location(new, node)
        return self.generic_visit(node)

    def visit_Expr(self, node: ast.Expr) -> ast.AST:
        call = node.value
        if (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr == self.add_args
            and isinstance(call.func.value, ast.Name)
            and call.func.value.id == self.args_class
        ):
            return ast.copy_location(ast.Pass(), node)
        return self.generic_visit(node)


def _called(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def reach(body: Sequence[ast.stmt], trees: Mapping[str, ast.Module]) -> frozenset[Node]:
    """Functions of the loaded modules that `body` can call, transitively."""
    defs = definitions(trees)
    classes = {
        n.name: path
        for path, tree in trees.items()
        for n in tree.body
        if isinstance(n, ast.ClassDef)
    }
    functions = {q: path for path, q in defs if "." not in q}
    seen: set[Node] = set()
    todo: list[Node] = []

    def add(node: Node) -> None:
        if node in defs and node not in seen:
            seen.add(node)
            todo.append(node)

    def scan(code: Sequence[ast.AST], owner: str | None) -> None:
        made = {}  # local name -> the class it was made from (`m = Merger(parser)`)
        for top in code:
            for n in ast.walk(top):
                if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call):
                    cls = _called(n.value) if isinstance(n.value.func, ast.Name) else ""
                    if cls in classes:
                        made.update({t.id: cls for t in n.targets if isinstance(t, ast.Name)})
        for top in code:
            for n in ast.walk(top):
                if not isinstance(n, ast.Call):
                    continue
                f = n.func
                if isinstance(f, ast.Name) and f.id in classes:
                    add((classes[f.id], f"{f.id}.__init__"))
                elif isinstance(f, ast.Name) and f.id in functions:
                    add((functions[f.id], f.id))
                elif isinstance(f, ast.Attribute):
                    # `self.m()`, `merger.m()` (made above), `Merger.m()`, `Merger(p).m()`
                    base = f.value
                    if isinstance(base, ast.Call) and isinstance(base.func, ast.Name):
                        cls = base.func.id
                    elif isinstance(base, ast.Name):
                        cls = owner if base.id == "self" else made.get(base.id, base.id)
                    else:
                        continue
                    if cls in classes:
                        add((classes[cls], f"{cls}.{f.attr}"))

    scan(body, None)
    while todo:
        path, qual = todo.pop()
        scan([defs[(path, qual)]], qual.split(".")[0] if "." in qual else None)
    return frozenset(seen)
