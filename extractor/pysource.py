"""The one reader of Python source text: every stage that needs a syntax tree of upstream
code or of a guard's text asks here, so what "parse" means (which grammar, which errors
are the caller's) is decided once."""

from __future__ import annotations

import ast

# What a text this Python cannot read raises: a syntax error, NUL bytes (ValueError before
# 3.11.4), and nesting or size past the parser's limits (the source may be hostile).
UNREADABLE = (SyntaxError, ValueError, RecursionError, MemoryError)


def parse_module(text: str, filename: str = "<source>") -> ast.Module:
    """A whole file's tree. SyntaxError (and ValueError for NUL bytes) are the caller's to
    handle: a revision may hold a file this Python cannot read."""
    return ast.parse(text, filename)


def parse_expr(text: str) -> ast.expr:
    """One expression (a guard's test, a default, a fix's value), surrounding whitespace
    ignored."""
    return ast.parse(text.strip(), mode="eval").body


NOT_LITERAL = object()  # what `literal` gives for a text that spells no literal


def literal(text: str | ast.expr) -> object:
    """The value a Python literal spells (`"a"`, `(1, 2)`, `-1.5`, `None`: as text or as a
    tree), else NOT_LITERAL."""
    try:
        return ast.literal_eval(text)
    except (*UNREADABLE, TypeError):
        return NOT_LITERAL


def module_or_none(text: str) -> ast.Module | None:
    """parse_module, or None when the text does not read as Python."""
    try:
        return parse_module(text)
    except UNREADABLE:
        return None


def expr_or_none(text: str) -> ast.expr | None:
    """parse_expr, or None when the text is no expression. An assignment expression alone
    (`x := self.x`, an `if`'s test) reads as if parenthesised, as it does in its statement."""
    for candidate in (text, f"({text.strip()})"):
        try:
            return parse_expr(candidate)
        except UNREADABLE:
            continue
    return None


def returned_test(item: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.expr | None:
    """The expression a function only returns (its docstring aside), else None."""
    body = undocumented(item)
    if len(body) == 1 and isinstance(body[0], ast.Return):
        return body[0].value
    return None


def undocumented(item: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.stmt]:
    """A function's statements less its docstring."""
    body = item.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        return body[1:]
    return body
