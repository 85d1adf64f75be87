"""Control-flow context of a site, read off the path of libcst nodes from the unit root to it:
the if/elif/else/while/match/except clauses it sits in, earlier early exits in the same
function, the comment block above it and the local message assignments that reach it."""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import libcst as cst
from kverr.extractor.templates import Alternative, code, normalise

_EXITS = (cst.Return, cst.Continue, cst.Break)
_FUNCS = (cst.FunctionDef, cst.Lambda)


@dataclass(frozen=True)
class RawGuard:
    """A guard before positions and flags are attached: the test node and its clause node."""

    test: cst.BaseExpression | None
    text: str
    holds: bool
    kind: str
    anchor: cst.CSTNode  # statement whose line the guard reports


def guards_on_path(path: Sequence[cst.CSTNode]) -> list[RawGuard]:
    """Clauses entered on the way to the site, plus early exits before it, in program order."""
    out: list[RawGuard] = []
    start = function_start(path)
    for i in range(start, len(path) - 1):
        node, child = path[i], path[i + 1]
        if isinstance(node, cst.If):
            out.extend(_if_guards(node, child, path, i))
        elif isinstance(node, cst.While) and child is node.body:
            out.append(RawGuard(node.test, _text(node.test), True, "while", node))
        elif isinstance(node, cst.MatchCase) and child is node.body:
            subject = _match_subject(path, i)
            text = f"{subject} matches {normalise(code(node.pattern))}"
            if node.guard is not None:
                text += f" if {_text(node.guard)}"
            out.append(RawGuard(node.guard, text, True, "match", path[i - 1]))
        elif isinstance(node, cst.ExceptHandler) and child is node.body:
            caught = normalise(code(node.type)) if node.type is not None else "BaseException"
            out.append(RawGuard(None, f"except {caught}", True, "try", _stmt_above(path, i)))
        if isinstance(node, (cst.IndentedBlock, cst.Module)) and i >= start:
            out.extend(_early_exits(node.body, child))
    return out


def function_start(path: Sequence[cst.CSTNode]) -> int:
    for i in range(len(path) - 1, -1, -1):
        if isinstance(path[i], _FUNCS):
            return i
    return 0


_TEXT_MEMO: dict[int, tuple[cst.CSTNode, str]] = {}


def _text(node: cst.CSTNode) -> str:
    """Normalised source of a test; memoised because every site under a clause asks again
    (the node is kept in the memo so its id cannot be reused while the entry lives)."""
    hit = _TEXT_MEMO.get(id(node))
    if hit is not None and hit[0] is node:
        return hit[1]
    if len(_TEXT_MEMO) > 4096:
        _TEXT_MEMO.clear()
    text = test_text(node)
    _TEXT_MEMO[id(node)] = (node, text)
    return text


def test_text(node: cst.CSTNode) -> str:
    """A condition as one line, without the parentheses that only let it span lines."""
    if getattr(node, "lpar", None):
        node = node.with_changes(lpar=[], rpar=[])
    return normalise(code(node))


def _if_guards(node: cst.If, child: cst.CSTNode, path: Sequence[cst.CSTNode], i: int):
    is_elif = i > 0 and isinstance(path[i - 1], cst.If) and path[i - 1].orelse is node
    own = "elif" if is_elif else "if"
    if child is node.body:
        return [RawGuard(node.test, _text(node.test), True, own, node)]
    if child is node.orelse:
        entering = "elif" if isinstance(child, cst.If) else "else"
        return [RawGuard(node.test, _text(node.test), False, entering, node)]
    return []


def _match_subject(path: Sequence[cst.CSTNode], i: int) -> str:
    for j in range(i, -1, -1):
        if isinstance(path[j], cst.Match):
            return _text(path[j].subject)  # type: ignore[attr-defined]
    return "?"


def _stmt_above(path: Sequence[cst.CSTNode], i: int) -> cst.CSTNode:
    for j in range(i, -1, -1):
        if isinstance(path[j], cst.BaseCompoundStatement):
            return path[j]
    return path[i]


# Early exits kept per site (the nearest): the shipped projects have at most a handful before any
# site; a block of thousands must not give each site thousands of guards.
MAX_EARLY_EXITS = 64

# The early exits of each block, found once per block: every site in the block asks for the ones
# above it, and scanning the block again for each site was quadratic in its statements.
# (Keyed by id, with the block kept so the id cannot be reused while the entry lives.)
_EXITS_MEMO: dict[int, tuple[Sequence[cst.CSTNode], dict[int, int], list[int], list[RawGuard]]] = {}


def _early_exits(body: Sequence[cst.CSTNode], child: cst.CSTNode) -> list[RawGuard]:
    """`if not cfg.x: return` before the site: the site runs only when the test is falsy."""
    hit = _EXITS_MEMO.get(id(body)) if len(body) > 16 else None  # a short block: just scan it
    if hit is None or hit[0] is not body:
        at, found = [], []
        for k, stmt in enumerate(body):
            if isinstance(stmt, cst.If) and stmt.orelse is None and _exits(stmt.body):
                at.append(k)
                found.append(RawGuard(stmt.test, _text(stmt.test), False, "early-exit", stmt))
        hit = (body, {id(stmt): k for k, stmt in enumerate(body)}, at, found)
        if len(body) > 16:
            if len(_EXITS_MEMO) > 256:
                _EXITS_MEMO.clear()
            _EXITS_MEMO[id(body)] = hit
    _, index, at, found = hit
    n = bisect.bisect_left(at, index.get(id(child), len(body)))
    return found[max(0, n - MAX_EARLY_EXITS) : n]


def _exits(block: cst.BaseSuite, kinds: tuple[type[cst.CSTNode], ...] = _EXITS) -> bool:
    """The block ends in one of `kinds` (with cst.Raise: it never reaches the next statement)."""
    stmts = block.body
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(block, cst.SimpleStatementSuite):
        return isinstance(last, kinds)
    return isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], kinds)


# ---------------------------------------------------------------- comments


def comment_above(path: Sequence[cst.CSTNode]) -> str | None:
    """The comment block right above the site's statement line. When the site opens its block,
    the comment above the enclosing clause (and that clause's trailing comment) explains it,
    climbing while each clause is itself the first statement of its block."""
    i = len(path) - 1
    while i >= 0 and not isinstance(path[i], (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
        i -= 1
    while i >= 1:
        node, parent = path[i], path[i - 1]
        text = _leading(node)
        if text:
            return text
        if isinstance(parent, cst.Module) and parent.body and parent.body[0] is node:
            return _leading_block(parent.header)  # a unit parsed alone: comments open the file
        if not (isinstance(parent, cst.IndentedBlock) and parent.body and parent.body[0] is node):
            return None
        header = parent.header.comment.value[1:].strip() if parent.header.comment else ""
        clause = path[i - 2] if i > 1 else None
        above = _leading(clause) if clause is not None else None
        if above or header:
            return "\n".join(x for x in (above, header) if x)
        i -= 2
        while i >= 0 and not isinstance(path[i], cst.BaseCompoundStatement):
            i -= 1
        if i >= 0 and isinstance(path[i], (cst.FunctionDef, cst.ClassDef)):
            return None  # the docstring, not a comment, explains a function's first statement
    return None


def exits_comment(path: Sequence[cst.CSTNode], message: str) -> str | None:
    """The comment above one of the early exits right before the site (`if not connector:
    return`, then the check), when it speaks of what the message says: such a comment often
    explains the check those exits let through ("KV connectors that pin memory end up with
    stale registrations ... so we reject the combination"). Only early exits may stand
    between it and the site, and it must share two content words with the message (a comment
    about the exit alone, "nothing to check without a connector", shares fewer)."""
    i = len(path) - 1
    while i >= 1 and not isinstance(path[i], (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
        i -= 1
    body = getattr(path[i - 1], "body", None) if i >= 1 else None
    if not isinstance(body, (list, tuple)):
        return None
    at = next((k for k, stmt in enumerate(body) if stmt is path[i]), 0)
    mine = _words(message)
    for stmt in reversed(body[:at]):
        if not (isinstance(stmt, cst.If) and stmt.orelse is None and _exits(stmt.body)):
            return None
        text = _leading(stmt)
        if text:
            return text if len(_words(text) & mine) >= 2 else None
    return None


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z][a-z0-9_]{3,}", text.lower()) if w not in _COMMON}


_COMMON = {"this", "that", "with", "when", "only", "must", "should", "will", "have", "from",
           "than", "then", "also", "does", "into", "your", "please", "because"}  # fmt: skip


def _leading(node: cst.CSTNode) -> str | None:
    return _leading_block(getattr(node, "leading_lines", ()))


def _leading_block(lines: Sequence[cst.EmptyLine]) -> str | None:
    block: list[str] = []
    for line in lines:
        if line.comment is None:
            block = []  # a blank line ends the block: keep only the one touching the statement
        else:
            block.append(line.comment.value[1:].removeprefix(" ").rstrip())
    return "\n".join(block) if block else None


# ---------------------------------------------------------------- reaching definitions


class _Opaque(Exception):
    """The name is bound in a way we do not model (tuple target, loop variable, walrus...)."""


def reaching(
    name: str, path: Sequence[cst.CSTNode], assigns: Callable[[cst.CSTNode], bool]
) -> list[Alternative] | None:
    """The assignments to a local `name` that reach the site, as (base, appended parts) pairs.
    None when the name is not a local message (never assigned, a parameter, or opaque)."""
    try:
        return _reaching(name, path, assigns)
    except _Opaque:
        return None


def _reaching(name, path, assigns) -> list[Alternative] | None:
    found: list[Alternative] = []
    pending: list[list[cst.BaseExpression]] = [[]]
    for i in range(len(path) - 2, -1, -1):
        node, child = path[i], path[i + 1]
        if isinstance(node, _FUNCS) or isinstance(node, cst.ClassDef):
            return None if pending else found  # reached the scope start: a parameter/global
        body = getattr(node, "body", None)
        if isinstance(node, (cst.IndentedBlock, cst.Module, cst.SimpleStatementLine)) or (
            isinstance(node, cst.SimpleStatementSuite)
        ):
            assert isinstance(body, Sequence)
            idx = next(k for k, s in enumerate(body) if s is child)
            nxt: list[list[cst.BaseExpression]] = []
            for augs in pending:
                got, fall = _scan(body[:idx], name, augs, assigns)
                found.extend(got)
                nxt.extend(fall)
            pending = _unique(nxt)
            if not pending:
                return found
    return None if pending else found


def _unique(items: list[list[cst.BaseExpression]]) -> list[list[cst.BaseExpression]]:
    seen: dict[tuple[int, ...], list[cst.BaseExpression]] = {}
    for augs in items:
        seen.setdefault(tuple(id(a) for a in augs), augs)
    if len(seen) > 16:
        raise _Opaque
    return list(seen.values())


def _scan(stmts, name, augs, assigns):
    """Walk `stmts` backwards from their end. Returns (resolved alternatives, fall-through
    appended-lists) — a fall-through means the value comes from before `stmts`."""
    pending = [augs]
    found: list[Alternative] = []
    for stmt in reversed(stmts):
        if not pending:
            break
        if not assigns(stmt):
            continue
        nxt = []
        for a in pending:
            got, fall = _effect(stmt, name, a, assigns)
            found.extend(got)
            nxt.extend(fall)
        pending = _unique(nxt)
    return found, pending


def _effect(stmt, name, augs, assigns):
    if isinstance(stmt, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
        return _scan(stmt.body, name, augs, assigns)
    if isinstance(stmt, cst.Assign):
        targets = [t.target for t in stmt.targets]
        if all(isinstance(t, cst.Name) for t in targets):
            value = stmt.value
            if (
                isinstance(value, cst.BinaryOperation)
                and isinstance(value.operator, cst.Add)
                and isinstance(value.left, cst.Name)
                and value.left.value == name
            ):
                return [], [[value.right, *augs]]
            return [(value, augs)], []
        raise _Opaque
    if isinstance(stmt, cst.AnnAssign) and isinstance(stmt.target, cst.Name):
        if stmt.value is None:
            return [], [augs]
        return [(stmt.value, augs)], []
    if isinstance(stmt, cst.AugAssign) and isinstance(stmt.target, cst.Name):
        if isinstance(stmt.operator, cst.AddAssign):
            return [], [[stmt.value, *augs]]
        raise _Opaque
    if isinstance(stmt, cst.If):
        return _branches(stmt, name, augs, assigns)
    if isinstance(stmt, (cst.With,)):
        return _scan(stmt.body.body, name, augs, assigns)
    if isinstance(stmt, (cst.For, cst.While)):
        got, fall = _scan(stmt.body.body, name, augs, assigns)
        return got, [*fall, augs]  # the body may not run at all
    if isinstance(stmt, cst.Try):
        got, fall = _scan(stmt.body.body, name, augs, assigns)
        return got, [*fall, augs]
    if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
        return [], [augs]
    raise _Opaque


def _branches(stmt: cst.If, name, augs, assigns):
    found: list[Alternative] = []
    fall: list[list[cst.BaseExpression]] = []
    node: cst.If | cst.Else | None = stmt
    while node is not None:
        if not _exits(node.body, (*_EXITS, cst.Raise)):
            got, f = _scan(node.body.body, name, augs, assigns)
            found.extend(got)
            fall.extend(f)
        node = node.orelse if isinstance(node, cst.If) else None
    if not _has_else(stmt):
        fall.append(augs)
    return found, fall


def _has_else(stmt: cst.If) -> bool:
    node: cst.BaseCompoundStatement | cst.Else | None = stmt
    while isinstance(node, cst.If):
        node = node.orelse
    return isinstance(node, cst.Else)
