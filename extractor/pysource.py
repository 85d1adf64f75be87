"""The one reader of Python source text: every stage that needs a syntax tree of upstream
code or of a guard's text asks here, so what "parse" means (which grammar, which errors
are the caller's) is decided once."""

from __future__ import annotations

import ast


def parse_module(text: str, filename: str = "<source>") -> ast.Module:
    """A whole file's tree. SyntaxError (and ValueError for NUL bytes) are the caller's to
    handle: a revision may hold a file this Python cannot read."""
    return ast.parse(text, filename)


def parse_expr(text: str) -> ast.expr:
    """One expression (a guard's test, a default, a fix's value), surrounding whitespace
    ignored."""
    return ast.parse(text.strip(), mode="eval").body
