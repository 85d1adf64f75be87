"""Watching a run (child side): each guard of the record's path evaluated where the code
evaluates it, with the plain values it read, and the solver asked for values that give the
other truth value (solve.py)."""

from __future__ import annotations

import ast
from typing import Any

from kverr.verify.sandbox import solve, stubs
from kverr.verify.sandbox.steps import self_attr


class Watch:
    """Lines the record's function ran, and each watched guard evaluated right where the code
    evaluates it: its truth value and the plain values of the names and `self.x` it reads.

    A guard may belong to another function (`"function"`: the caller on the way to the record's
    function). The search reads this to tell which guard came out wrong and what the values
    were (after every earlier step ran), instead of guessing them from the source."""

    def __init__(self, codes: dict[str, Any], main: str, watch: Any) -> None:
        self.guards = [dict(w) for w in watch]
        self.main = codes.get(main)
        self.code = self.main  # tracing is on when there is something to watch
        self.by_place: dict[tuple[str, int, str], list[int]] = {}
        for i, g in enumerate(self.guards):
            code = codes.get(g.get("function") or main)
            if code is not None:
                key = (code.co_filename, code.co_firstlineno, code.co_name)
                self.by_place.setdefault(key, []).append(i)
        self.entered = False
        self.lines: set[int] = set()
        self.seen: dict[int, dict[str, Any]] = {}

    def global_trace(self, frame: Any, event: str, arg: Any) -> Any:
        code = frame.f_code
        # By place, not identity: a phase cut short is a new code object of the same function.
        indices = self.by_place.get((code.co_filename, code.co_firstlineno, code.co_name))
        if indices is None:
            return None
        is_main = self.main is not None and code.co_firstlineno == self.main.co_firstlineno
        if is_main:
            self.entered = True

        def local_trace(frame: Any, event: str, arg: Any) -> Any:
            if event == "line":
                line = frame.f_lineno
                if is_main:
                    self.lines.add(line)
                for i in indices:
                    g = self.guards[i]
                    if i not in self.seen and g["line"] <= line <= g["line"] + 10:
                        try:
                            self.seen[i] = _evaluate(g, frame)
                        except Exception:  # noqa: BLE001 - the watch never breaks the run
                            self.seen[i] = {"value": None, "names": {}}
            return local_trace

        return local_trace

    def report(self) -> dict[str, Any]:
        return {
            "entered": self.entered,
            "guards": {str(self.guards[i]["line"]): v for i, v in self.seen.items()},
        }


def _evaluate(guard: dict[str, Any], frame: Any) -> dict[str, Any]:
    """A watched guard in the frame's scope: {"value": bool or None, "names": {name: plain
    value}}, and "solutions" when the search wants the other value (see solve.py)."""
    noted = len(stubs.NOTES)
    out: dict[str, Any] = {"value": None, "names": {}}
    tree = _parse(guard["test"])
    if tree is None:
        return out
    scope = {**frame.f_globals, **frame.f_locals, "__kverr_raises__": solve.raises}
    if "self" not in scope:
        tree = _as_locals(tree, guard.get("aliases") or {}, scope)
    for node in ast.walk(tree):
        name = value = None
        if isinstance(node, ast.Name) and node.id in scope:
            name, value = node.id, scope[node.id]
        elif self_attr(node) and "self" in scope:
            name = f"self.{node.attr}"
            value = getattr(scope["self"], "__dict__", {}).get(node.attr, _ABSENT)
        if name is not None and plain(value):
            shown = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
            out["names"][name] = shown
    try:
        out["value"] = bool(eval(compile(tree, "<guard>", "eval"), scope))  # noqa: S307
    except BaseException:  # noqa: BLE001 - a guard the watch cannot evaluate stays None
        out["value"] = None
    want = guard.get("want")
    keep = [k for k in map(_parse, guard.get("keep", ())) if k is not None]
    if "self" not in scope:  # the path's guards read the frame's locals the same way
        keep = [_as_locals(k, guard.get("aliases") or {}, scope) for k in keep]

    def solved(wanted: bool, near: bool) -> Any:
        return solve.solve(
            tree, scope, wanted, guard.get("fields", {}), guard.get("vars", ()),
            guard.get("words", ()), near, keep, guard.get("owners") or {},
            guard.get("aliases") or {},
        )  # fmt: skip

    if guard.get("flip") and want is not None and out["value"] is not None and out["value"] == want:
        out["flipped"] = solved(not want, True)
    if guard.get("others") and want is not None and out["value"] == want:
        # Other values under which it still comes out this way (the search's way round a
        # test it cannot solve for: search.Search._accepted).
        out["others"] = solved(want, False)
    if want is not None and out["value"] is not None and out["value"] != want:
        out["solutions"] = solved(want, bool(guard.get("near")))
        fields = guard.get("fields", {})
        if not out["solutions"] and solve.exhausted(
            tree, fields, list(frame.f_locals), guard.get("vars", ()), guard.get("aliases"), scope
        ):
            # Every value it can see was tried: if none turns it even without the path's
            # other guards, no command line does (the parser's choices rule it out).
            out["exhausted"] = not keep or not solve.solve(
                tree, scope, want, fields, aliases=guard.get("aliases") or {}
            )
    del stubs.NOTES[noted:]  # the watch's own look must not make the run undecided
    return out


_ABSENT = object()


def _as_locals(tree: ast.Expression, aliases: dict[str, str], scope: dict[str, Any]) -> Any:
    """A validator's guard as its frame has it: the records read its value parameter as the
    field it validates (`self.numa_bind_nodes`); a classmethod validator holds it as `value`."""
    local = {attr: name for name, attr in aliases.items() if name in scope and "." not in name}

    class Back(ast.NodeTransformer):
        def visit_Attribute(self, node: ast.Attribute) -> ast.AST:  # noqa: N802 - ast's name
            path = ast.unparse(node)  # (`self.draft.max_len` as a whole)
            if path.startswith("self.") and path[5:] in local:
                return ast.copy_location(ast.Name(local[path[5:]], ast.Load()), node)
            return self.generic_visit(node)

    return ast.fix_missing_locations(Back().visit(tree)) if local else tree


def _parse(test: str) -> ast.Expression | None:
    try:
        return ast.parse(test, mode="eval")
    except SyntaxError:
        return None


def plain(value: Any) -> bool:
    if type(value) in (str, int, float, bool, type(None)):
        return True
    if type(value) in (list, tuple, set, frozenset):
        return all(plain(v) for v in value)
    return False
