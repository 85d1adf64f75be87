"""What argparse prints for a value an option's type refuses, when that type is one of the
project's own helpers: read from the helpers' definitions at each revision, since a project
rewrites them (`optional_type(int)` reported `invalid _optional_type value: 'x'` while it
called int itself, and `Value x cannot be converted to <class 'int'>.` once it went through a
`parse_type` helper that raises its own ArgumentTypeError).

A template holds `{value!r}` (the value as %r prints it), `{value}` (as str does) and, in the
repr of a function, `{address}` (`<function loads at {address}>`: the address differs per run).
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterable

# helpers that return any text they are given (or None): no value is refused
NEVER_FAILS = frozenset({"str", "bool", "nullable_str", "optional_str"})
_MARKERS = ("ArgumentTypeError", '"None"', "'None'", '["type"]')

# name -> (kind, detail, inner function's name); kinds:
#   convert   a factory whose inner function raises ArgumentTypeError(detail) when the wrapped
#             callable raises ValueError (detail: the template, `{wrapped}` for its repr)
#   optional  a factory whose inner function maps "" and "None" to None and converts the rest
#             through the helper named in detail ("": calls the wrapped callable itself)
#   delegate  a function that hands the value to the expression in detail
Models = dict[str, tuple[str, str, str]]


def converter_models(texts: Iterable[str]) -> Models:
    """The helpers the module-level functions of `texts` define (files that define none are
    not parsed)."""
    out: Models = {}
    for text in texts:
        if not any(m in text for m in _MARKERS):
            continue
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue  # (the extractor reports a file that does not parse)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                model = _model(node)
                if model is not None:
                    out.setdefault(node.name, model)
        for dest, func in _overrides(tree):
            out.setdefault(OVERRIDE + dest, ("override", func, ""))
    return out


OVERRIDE = "dest:"  # a models key: the type a helper gives one field by its name


def _overrides(tree: ast.Module) -> list[tuple[str, str]]:
    """`if name == "max_model_len": kwargs[name]["type"] = parse_len` (or `name in (...)`): the
    type a kwargs helper gives some fields by name, whatever their annotation says."""
    out = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)):
            continue
        test = node.test
        if not (isinstance(test.left, ast.Name) and len(test.comparators) == 1):
            continue
        right = test.comparators[0]
        if isinstance(test.ops[0], ast.Eq) and isinstance(right, ast.Constant):
            names = [right.value]
        elif isinstance(test.ops[0], ast.In) and isinstance(right, (ast.Tuple, ast.List, ast.Set)):
            names = [e.value for e in right.elts if isinstance(e, ast.Constant)]
        else:
            continue
        for stmt in node.body:
            target = stmt.targets[0] if isinstance(stmt, ast.Assign) else None
            if (
                isinstance(target, ast.Subscript)
                and isinstance(target.slice, ast.Constant)
                and target.slice.value == "type"
                and isinstance(stmt.value, ast.Name)
            ):
                out += [(n, stmt.value.id) for n in names if isinstance(n, str)]
    return out


def _model(fn: ast.FunctionDef) -> tuple[str, str, str] | None:
    params = [a.arg for a in fn.args.args]
    inner = next((n for n in fn.body if isinstance(n, ast.FunctionDef)), None)
    returns = [n for n in fn.body if isinstance(n, ast.Return) and n.value is not None]
    if inner is not None and params and inner.args.args:
        wrapped, value = params[0], inner.args.args[0].arg
        template = _raised(inner, value, wrapped)
        if template is not None:
            return ("convert", template, inner.name)
        if _tests_none(inner, value):
            for r in (n for n in ast.walk(inner) if isinstance(n, ast.Return)):
                call = r.value
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Call):
                    via = call.func.func
                    if isinstance(via, ast.Name):
                        return ("optional", via.id, inner.name)
                if isinstance(call, ast.Call) and _is_name(call.func, wrapped):
                    return ("optional", "", inner.name)
        return None
    if len(params) == 1 and returns:
        last = returns[-1].value
        if (
            isinstance(last, ast.Call)
            and isinstance(last.func, ast.Call)
            and [a for a in last.args if _is_name(a, params[0])]
        ):
            return ("delegate", ast.unparse(last.func), fn.name)
    return None


def _raised(fn: ast.FunctionDef, value: str, wrapped: str) -> str | None:
    """The template of `raise ...ArgumentTypeError(f"...")` in `fn`, when it formats the value."""
    for node in ast.walk(fn):
        if not (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)):
            continue
        func, args = node.exc.func, node.exc.args
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name != "ArgumentTypeError" or len(args) != 1 or not isinstance(args[0], ast.JoinedStr):
            continue
        parts, seen = [], False
        for part in args[0].values:
            if isinstance(part, ast.Constant):
                parts.append(str(part.value).replace("{", "{{").replace("}", "}}"))
            elif isinstance(part, ast.FormattedValue) and _is_name(part.value, value):
                parts.append("{value!r}" if part.conversion == ord("r") else "{value}")
                seen = True
            elif isinstance(part, ast.FormattedValue) and _is_name(part.value, wrapped):
                parts.append("{wrapped}")
            else:
                return None  # formats something kverr cannot know
        return "".join(parts) if seen else None
    return None


def _tests_none(fn: ast.FunctionDef, value: str) -> bool:
    return any(
        isinstance(n, ast.Compare)
        and _is_name(n.left, value)
        and any(isinstance(c, ast.Constant) and c.value == "None" for c in n.comparators)
        for n in ast.walk(fn)
    )


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def invalid_template(type_text: str | None, models: Models) -> str | None:
    """The message argparse prints for a value the type refuses, after `argument --x: `; None
    when no value is refused or kverr cannot tell what is printed."""
    if not type_text:
        return None
    try:
        node = ast.parse(type_text, mode="eval").body
    except (SyntaxError, ValueError):
        return None
    return _fails(node, models, 0)


def _fails(node: ast.expr, models: Models, depth: int) -> str | None:
    if depth > 8:
        return None
    if isinstance(node, (ast.Name, ast.Attribute)):
        name = node.id if isinstance(node, ast.Name) else node.attr
        if name in NEVER_FAILS or name[:1].isupper():
            return None  # (a class: a dataclass's validation, worded by its library)
        kind, detail, _ = models.get(name, ("", "", ""))
        if kind == "delegate":
            return _fails(ast.parse(detail, mode="eval").body, models, depth + 1)
        if kind:
            return None  # a factory passed uncalled: not what argparse calls
        return f"invalid {name} value: {{value!r}}"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) == 1:
        kind, detail, inner = models.get(node.func.id, ("", "", ""))
        wrapped = node.args[0]
        below = _fails(wrapped, models, depth + 1)
        if kind == "convert":
            if below is None or not below.startswith("invalid "):
                return below  # never fails, or raises its own ArgumentTypeError
            return detail.replace("{wrapped}", _repr(wrapped, models))
        if kind == "optional":
            if detail:
                return _fails(ast.Call(ast.Name(detail), [wrapped], []), models, depth + 1)
            if below is None or not below.startswith("invalid "):
                return below
            return f"invalid {inner} value: {{value!r}}"
    return None


def _repr(node: ast.expr, models: Models) -> str:
    """How Python prints the callable `node` names: `<class 'int'>`, `<function loads at 0x…>`."""
    if isinstance(node, ast.Name) and isinstance(getattr(builtins, node.id, None), type):
        return f"<class '{node.id}'>"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        inner = models.get(node.func.id, ("", "", node.func.id))[2]
        return f"<function {node.func.id}.<locals>.{inner} at {{address}}>"
    name = node.id if isinstance(node, ast.Name) else getattr(node, "attr", "?")
    return f"<function {name} at {{address}}>"
