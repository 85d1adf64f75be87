"""A cheap nesting-depth scan, so libcst never sees a tree deep enough to crash it.

libcst's native parser segfaults on about 3,000 nested parentheses, and its Python side raises
RecursionError from about 200 nested calls or 500 chained `+`; a segfault takes the whole build
down, where the rule is that a file we cannot read becomes a ParseFailure and the others go on.
One tokenize pass (linear, no tree) estimates how deep the tree of each statement gets, and a
unit past MAX_DEPTH is reported instead of parsed.

The estimate over-counts on purpose: every bracket is a level, and so is every operator or
keyword (`+`, `.`, `not`, `and`, `if`, `lambda`, ...) since the last comma at its level, since
a chain of them nests in libcst's tree (`a + b + c` is BinOp(BinOp(a, b), c)). The shipped
projects' files measure at most 25; libcst copes with 100 of every construct.
"""

from __future__ import annotations

import io
import tokenize

MAX_DEPTH = 100
# Python's parser runs out of its own stack (a MemoryError, not a RecursionError) only past
# about 2,000 nested levels: a MemoryError on a file estimated below this is the machine's.
PARSER_STACK = 1000
_NESTING_KEYWORDS = frozenset({"not", "and", "or", "if", "else", "lambda", "await", "in", "is"})
TOO_DEEP = "too deeply nested"  # the start of every ParseFailure message this gives
OUT_OF_MEMORY = "out of memory while parsing"  # a MemoryError that is not the parser's own


def too_deep(text: str, limit: int = MAX_DEPTH) -> int | None:
    """The 1-based line where the nesting of `text` first passes `limit`, or None.

    Text that does not tokenize (syntax newer than this Python's tokenizer) is judged by its
    brackets alone, counted as characters: strings may add to that count, never hide one."""
    try:
        return _scan_tokens(text, limit)
    except (tokenize.TokenError, SyntaxError):
        return _scan_brackets(text, limit)


def _scan_tokens(text: str, limit: int) -> int | None:
    counts = [0]  # per open bracket level (level 0: the statement): operators since its last comma
    depth = 0  # open brackets plus the sum of `counts`
    prev = None  # the previous token that is not a comment or line break
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        kind, s = tok.type, tok.string
        if kind == tokenize.OP:
            if s in "([{":
                if s != "{" and prev is not None and _ends_operand(prev):
                    counts[-1] += 1  # a call or subscript trailer: `f(x)(y)[0]` nests too
                    depth += 1
                counts.append(0)
                depth += 1
            elif s in ")]}":
                if len(counts) > 1:
                    depth -= 1 + counts.pop()
            elif s == ",":
                depth -= counts[-1]
                counts[-1] = 0
            else:
                counts[-1] += 1
                depth += 1
        elif kind == tokenize.STRING and "f" in s[: s.find(s[-1])].lower():
            # an f-string is one token here, but libcst parses the expressions inside it
            inner = _scan_brackets(s, limit - depth)
            if inner is not None:
                return tok.start[0] + inner - 1
        elif kind == tokenize.NAME and s in _NESTING_KEYWORDS:
            counts[-1] += 1
            depth += 1
        elif kind == tokenize.NEWLINE:  # a statement ends: nothing is open any more
            counts, depth = [0], 0
        if depth > limit:
            return tok.start[0]
        if kind not in (tokenize.COMMENT, tokenize.NL):
            prev = tok
    return None


def _ends_operand(tok: tokenize.TokenInfo) -> bool:
    if tok.type == tokenize.OP:
        return tok.string in ")]}"
    if tok.type == tokenize.NAME:
        return tok.string not in _NESTING_KEYWORDS and tok.string not in ("return", "yield")
    return tok.type in (tokenize.STRING, tokenize.NUMBER)


def _scan_brackets(text: str, limit: int) -> int | None:
    depth = 0
    line = 1
    for c in text:
        if c in "([{":
            depth += 1
            if depth > limit:
                return line
        elif c in ")]}":
            depth = max(0, depth - 1)
        elif c == "\n":
            line += 1
    return None
