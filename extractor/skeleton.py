"""A file too large to parse whole, read one function at a time.

`ast.parse` of a whole file holds about 120 bytes per source byte (a 10 MB file: 1.2 GB), and
the extractor keeps that tree while it works through the file. Past WHOLE_FILE_BYTES it parses
the file's outline instead: the same lines with the body of each function blanked out (its
lines stay, empty, so every line number holds), which keeps all the module context reads of
the tree (module-level statements, class fields, the functions that declare flags) and where
every function starts and ends. Each blanked function is parsed on its own, once here for the
facts the module context takes from every node (the calls and the names a function mutates,
placed as a walk of the whole file would meet them; whether it wraps a message), and again
when its unit is extracted (`parse_stub`). What is held is the outline and one function.

The outline comes from one scan of the text for its logical lines (strings, comments,
brackets and line continuations, as Python's tokenizer reads them), without a tree. A text the
scan or a parse refuses is reported like any syntax error, at its line in the file (a file this
large is never handed to libcst whole: syntax newer than this Python is an error here).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import NamedTuple

from kverr.extractor.context import Place, callee_name, placed_facts, wrapper_of

WHOLE_FILE_BYTES = 1 << 20  # larger files are parsed as an outline (the shipped ones: 300 KB)


@dataclass(frozen=True)
class Stub:
    """A function whose body the outline leaves out."""

    first: int  # its first line, decorators included
    end: int  # its last line
    member: bool  # inside a class: its lines are indented, and parsed under `if 1:`


class _Line(NamedTuple):  # a tuple: a file of 200,000 of them stays small
    start: int
    end: int
    indent: int  # columns, tabs to the next multiple of 8 (as Python counts them)
    word: str  # what it starts with: a keyword or name, `@`, or the character


# ---------------------------------------------------------------- logical lines

_CODE = re.compile(r"^[ \t\f]*(?=[^ \t\f\n#])", re.M)  # the next line holding code: its indent
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|.", re.S)
_INDENT = re.compile(r"[ \t\f]*")
_TOKEN = re.compile(r"'''|\"\"\"|'|\"|#|[()\[\]{}]|\\\n|\n")
_TOKEN_IN = re.compile(r"'''|\"\"\"|'|\"|#|[()\[\]{}]")  # within brackets: lines go on
# inside a string: an escape (skipped), its closing quote, or (one quote) a line's end
_STOP = {
    quote: re.compile(r"\\.|" + quote + ("" if len(quote) == 3 else "|\n"), re.S)
    for quote in ("'''", '"""', "'", '"')
}


def _close(text: str, pos: int, quote: str) -> int:
    """Where the string opened by `quote` before `pos` ends, or -1 if it never does. A
    search per escape: one regex spanning the string kept a backtracking state per
    character (an unclosed string of 4 MB held 445 MB)."""
    stop = _STOP[quote]
    while (m := stop.search(text, pos)) is not None:
        if m.group() == quote:
            return m.end()
        if m.group() == "\n":
            return -1
        pos = m.end()
    return -1


def logical_lines(text: str) -> list[_Line]:
    """Each logical line of `text` (lines split at "\\n" only); a SyntaxError when a string
    never closes. A string's prefix letters do not change where it ends, so they are not read.
    Blank lines, comments and line breaks within brackets are skipped by one search each,
    never a step per line."""
    out: list[_Line] = []
    pos, line, n = 0, 1, len(text)
    while (code := _CODE.search(text, pos)) is not None:
        line += text.count("\n", pos, code.start())
        pos, depth = code.end(), 0
        word = _WORD.match(text, pos)
        while (m := (_TOKEN_IN if depth else _TOKEN).search(text, pos)) is not None:
            tok, pos = m.group(), m.end()
            if tok == "\n":  # (outside brackets)
                break
            if tok == "#":
                pos = text.find("\n", pos) % (n + 1)  # to the line's end (or the text's)
            elif tok in "([{":
                depth += 1
            elif tok in ")]}":
                depth = max(depth - 1, 0)
            elif tok != "\\\n":
                pos = _close(text, pos, tok)
                if pos < 0:
                    raise SyntaxError("unterminated string literal", ("<unknown>", line, 1, ""))
        else:
            pos = n
        breaks = text.count("\n", code.start(), pos)
        ended = text[pos - 1 : pos] == "\n"
        width = len(code.group().expandtabs(8))
        out.append(_Line(line, line + breaks - ended, width, word.group() if word else ""))
        line += breaks
    return out


# ---------------------------------------------------------------- the outline

CHUNK_BYTES = 256 * 1024  # the outline is parsed a run of statements at a time, about this much


def outline(lines: list[str]) -> tuple[ast.Module, dict[int, Stub], tuple] | None:
    """(the outline's tree, the id of each blanked function's node -> its Stub, the facts
    `context.walk_facts` gives for the whole file). A SyntaxError (at its line in the file)
    when the text is no Python this interpreter parses; None when the outline misses a
    function it blanked (then the whole-file parse is the judge)."""
    logical = logical_lines("\n".join(lines))
    kept = list(lines)
    stubs = _blank(logical, kept, lines)  # by the line of its `def`
    tree = _parse_runs(kept, _statements(logical))
    del kept, logical
    found: dict[int, Stub] = {}
    for node in _functions(tree.body):
        stub = stubs.get(node.lineno)
        if stub is not None:
            node.end_lineno = stub.end  # the outline's node spans the real function
            node.end_col_offset = len(lines[stub.end - 1].encode())
            found[id(node)] = stub
    if len(found) != len(stubs):
        return None
    return tree, found, _facts(tree, found, lines)


def _blank(logical: list[_Line], kept: list[str], lines: list[str]) -> dict[int, Stub]:
    """Blank in `kept` the body of each function of the module or of a class in it (at any
    depth of classes) that the module context has no use for; the others stay whole.
    One pass over the logical lines, nested by indentation on a stack."""
    stubs: dict[int, Stub] = {}
    # open blocks: (indent, index of the head line, kind: "module", "class", "def" or "")
    stack: list[tuple[int, int, str]] = [(-1, -1, "module")]

    def close(i: int) -> None:  # the block on top ends before logical line `i`
        _, head, kind = stack.pop()
        if kind != "def" or i == head + 1:
            return  # (a body on the `def` line itself is left as it is)
        first, end, j = logical[head].start, logical[i - 1].end, head
        while (
            j > 0 and logical[j - 1].word == "@" and logical[j - 1].indent == logical[head].indent
        ):
            j -= 1
            first = logical[j].start
        if _needed(lines, first, end):
            return
        body = logical[head + 1].start
        kept[body - 1] = _INDENT.match(lines[body - 1]).group() + "pass"
        kept[body:end] = [""] * (end - body)
        stubs[logical[head].start] = Stub(first, end, stack[-1][2] == "class")

    for i, ln in enumerate(logical):
        while ln.indent <= stack[-1][0]:
            close(i)
        outer = stack[-1][2] in ("module", "class")
        kind = "class" if ln.word == "class" else "def" if _is_def(ln, lines) else ""
        stack.append((ln.indent, i, kind if outer else ""))
    while len(stack) > 1:
        close(len(logical))
    return stubs


def _statements(logical: list[_Line]) -> list[int]:
    """The first line of each module-level statement (its decorators and clauses with it)."""
    out: list[int] = []
    glued = False  # after a decorator: the def or class belongs to it
    for ln in logical:
        if ln.indent == 0:
            if not glued and ln.word not in ("else", "elif", "except", "finally"):
                out.append(ln.start)
            glued = ln.word == "@"
    return out


def _parse_runs(kept: list[str], starts: list[int]) -> ast.Module:
    """The outline parsed a run of statements at a time (about CHUNK_BYTES each): the parse
    of a whole outline of 100,000 small functions peaked at half a gigabyte."""
    body: list[ast.stmt] = []
    bounds = [*starts, len(kept) + 1]
    first, size = 1, 0
    for k, start in enumerate(bounds[1:], 1):
        size += sum(len(line) + 1 for line in kept[bounds[k - 1] - 1 : start - 1])
        if size < CHUNK_BYTES and start <= len(kept):
            continue
        run = ast.parse("\n".join(kept[first - 1 : start - 1]))
        if first > 1:
            ast.increment_lineno(run, first - 1)
        body += run.body
        first, size = start, 0
    return ast.Module(body=body, type_ignores=[])


def _is_def(ln: _Line, lines: list[str]) -> bool:
    if ln.word == "def":
        return True
    return ln.word == "async" and _ASYNC_DEF.match(lines[ln.start - 1]) is not None


_ASYNC_DEF = re.compile(r"[ \t\f]*async[ \t\f]+def\b")


def _needed(lines: list[str], first: int, end: int) -> bool:
    """Whether the module context reads this function's body beyond what `_facts` takes from
    it alone: it declares flags (an add_argument call, read with the module around it)."""
    return any("add_argument" in line for line in lines[first - 1 : end])


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _functions(body: list[ast.stmt]):
    for node in body:
        if isinstance(node, _DEFS):
            yield node
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node.body)


# ---------------------------------------------------------------- facts


def _facts(tree: ast.Module, stubs: dict[int, Stub], lines: list[str]) -> tuple:
    """`walk_facts` of the whole file, from the outline and each blanked function on its own
    (the calls in the order a walk of the whole file meets them, the mutated names, the
    functions: those the outline holds, as no add_argument call sits in a blanked one), and
    the wrappers among the blanked module-level functions (`context.wrapper_of`), by the id
    of the outline's node."""
    calls, mutated, defs, at = placed_facts(tree, (0, ()), stubs)
    named = _defined(tree)
    top = {id(n) for n in tree.body if isinstance(n, ast.FunctionDef)}
    wrappers = {}
    for key, place in at.items():
        stub = stubs[key]
        node = parse_stub(lines, stub, place_lines=False)
        more, changed, _, _ = placed_facts(node, place)
        calls += [c for c in more if callee_name(c[1].func) in named]  # what param_sources reads
        mutated |= changed
        if key in top:  # (its lines counted from its first, as it was parsed)
            found = wrapper_of(node, lines[stub.first - 1 : stub.end])  # type: ignore[arg-type]
            if found is not None:
                wrappers[key] = found
    calls.sort(key=lambda c: c[0])
    return [c for _, c in calls], mutated, defs, wrappers


def _defined(tree: ast.Module) -> set[str]:
    """The functions and methods bindings.param_sources knows the parameters of."""
    out = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            out.update(n.name for n in node.body if isinstance(n, _DEFS))
        elif isinstance(node, _DEFS):
            out.add(node.name)
    return out


def parse_stub(lines: list[str], stub: Stub, *, place_lines: bool = True) -> ast.stmt:
    """The real node of a blanked function, at its lines in the file (`place_lines`)."""
    text = "\n".join(lines[stub.first - 1 : stub.end])
    shift = stub.first - (2 if stub.member else 1)
    try:
        tree = ast.parse("if 1:\n" + text if stub.member else text)
    except SyntaxError as exc:  # its line in the file
        exc.lineno = (exc.lineno or 1) + shift
        exc.end_lineno = exc.end_lineno and exc.end_lineno + shift
        raise
    (node,) = tree.body[0].body if stub.member else tree.body  # type: ignore[attr-defined]
    if place_lines:
        ast.increment_lineno(node, shift)
    return node


__all__ = ["WHOLE_FILE_BYTES", "Place", "Stub", "outline", "parse_stub"]
