"""Message templates: turn the libcst expression a program prints into literal parts and
placeholders, exactly as Python would render it.

Plain functions over libcst nodes. A template is built as a list of *variants* (one per text
the expression can produce, e.g. a message assigned differently in two branches); each
variant is a list of `Part`s. `template_for` returns None when it cannot tell what text the
expression produces; `template_for_or_raise` raises `TemplateError` instead.
"""

from __future__ import annotations

import ast
import codecs
import itertools
import os
import re
import string
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

import libcst as cst
from kverr.extractor.context import _UNSET, Wrapper, const_eval, is_deterministic
from kverr.extractor.render import too_wide

from kverr.errors import KverrError
from kverr.ftypes import Part, Template

MAX_VARIANTS = 16
_CODE = cst.Module(body=[])
_CONVERT: dict[str, Callable[[object], str]] = {"r": repr, "s": str, "a": ascii}

Variants = list[list[Part]]
Alternative = tuple[cst.BaseExpression, list[cst.BaseExpression]]


class TemplateError(KverrError):
    """Strict mode (KVERR_STRICT=1): a message shape the extractor cannot resolve."""


def strict() -> bool:
    return os.environ.get("KVERR_STRICT", "") not in ("", "0")


@dataclass
class TemplateContext:
    """What a message expression can see: constants, wrapper helpers, local message variables."""

    constants: dict[str, object] = field(default_factory=dict)
    wrappers: dict[str, Wrapper] = field(default_factory=dict)
    # name -> alternatives (base expression, appended expressions); None when not a local message
    resolve_local: Callable[[str], list[Alternative] | None] = field(default=lambda name: None)
    bindings: dict[str, Variants] = field(default_factory=dict)  # wrapper parameters
    resolving: set[str] = field(default_factory=set)
    wrapper_nodes: dict[str, cst.BaseExpression] = field(default_factory=dict)


def code(node: cst.CSTNode) -> str:
    return _CODE.code_for_node(node)


def normalise(src: str) -> str:
    """Collapse the whitespace (and drop comments and backslash continuations) of multi-line
    source into one line."""
    if "\n" not in src and "#" not in src:
        return src.strip()
    lines = []
    for line in src.splitlines():
        if "#" in line:
            line = _strip_comment(line)
        line = line.strip()
        if (len(line) - len(line.rstrip("\\"))) % 2:  # an odd run ends in a continuation
            line = line[:-1].rstrip()
        lines.append(line)
    out = " ".join(x for x in lines if x)
    return out.replace("( ", "(").replace(" )", ")").replace("[ ", "[").replace(" ]", "]")


def _strip_comment(line: str) -> str:
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote and line[i - 1] != "\\":
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#":
            return line[:i]
    return line


# ---------------------------------------------------------------- public


def templates_for(node: cst.BaseExpression, ctx: TemplateContext) -> tuple[Template, ...] | None:
    """Every text `node` can produce, or None when it cannot be resolved (or has too many)."""
    try:
        variants = _str_variants(node, ctx)
    except _TooMany:
        return None
    if variants is None:
        value = _const(node, ctx)
        if value is _UNSET or not is_deterministic(value):
            return None
        variants = [[Part(text=str(value))]]
    return tuple(Template(merge_literals(v)) for v in _dedupe(variants))


def template_for(node: cst.BaseExpression, ctx: TemplateContext) -> Template | None:
    """The single template of `node`; None when unresolvable or when it has several variants."""
    found = templates_for(node, ctx)
    return found[0] if found is not None and len(found) == 1 else None


def template_for_or_raise(node: cst.BaseExpression, ctx: TemplateContext) -> Template:
    found = template_for(node, ctx)
    if found is None:
        raise TemplateError(
            f"cannot resolve the message expression `{normalise(code(node))}`; "
            "write the message as a literal, f-string, %-format or .format() call."
        )
    return found


def dynamic(node: cst.CSTNode) -> Template:
    """The explicit stand-in for a message the extractor cannot resolve."""
    if strict():
        raise TemplateError(
            f"cannot resolve the message expression `{normalise(code(node))}` "
            "(KVERR_STRICT=1); make the fixture resolvable or unset KVERR_STRICT."
        )
    return Template((Part(expr=normalise(code(node)), dynamic=True),))


def lazy_percent(
    fmt: cst.BaseExpression, args: list[cst.BaseExpression], ctx: TemplateContext
) -> tuple[Template, ...] | None:
    """`logger.warning("x=%s", x)`: logging applies `%` to the extra arguments lazily."""
    texts = _str_variants(fmt, ctx)
    if texts is None or any(not p.is_literal for v in texts for p in v):
        return None
    out: Variants = []
    for v in texts:
        fmt_text = "".join(p.text or "" for p in v)
        try:
            if len(args) == 1 and isinstance(args[0], cst.Dict):
                got = _percent(fmt_text, args[0], ctx)
            else:
                got = _percent_values(fmt_text, args, None, ctx)
        except _TooMany:
            return None
        if got is None:
            return None
        out.extend(got)
    return tuple(Template(merge_literals(v)) for v in _dedupe(out))


# ---------------------------------------------------------------- variants


class _TooMany(Exception):
    """More texts than MAX_VARIANTS: listing them all would bury the records."""


def _product(chunks: list[Variants]) -> Variants:
    out: Variants = []
    for combo in itertools.product(*chunks):
        out.append([p for chunk in combo for p in chunk])
        if len(out) > MAX_VARIANTS:
            raise _TooMany
    return out


def _dedupe(variants: Variants) -> Variants:
    seen: dict[tuple[Part, ...], None] = {}
    for v in variants:
        seen.setdefault(tuple(merge_literals(v)), None)
    return [list(k) for k in seen]


def merge_literals(parts: Iterable[Part]) -> tuple[Part, ...]:
    """Adjacent literal text as one part, empty text dropped. Text that keeps the name of the
    constant it was read from (extractor/imports.py) stays a part of its own."""
    out: list[Part] = []
    for p in parts:
        if p.is_literal and not p.text and not p.expr:
            continue
        if p.is_literal and not p.expr and out and out[-1].is_literal and not out[-1].expr:
            out[-1] = Part(text=(out[-1].text or "") + (p.text or ""))
        else:
            out.append(p)
    if any(p.is_literal and _SURROGATE.search(p.text or "") for p in out):
        out = [replace(p, text=visible(p.text)) if p.is_literal else p for p in out]
    return tuple(out)


_SURROGATE = re.compile("[\ud800-\udfff]")


def visible(text: str | None) -> str | None:
    """A literal's lone surrogates (`"\\ud800"` in the source) as the escape Python prints
    for them on stderr (backslashreplace): no UTF-8 encoder can take them as they are."""
    if text is None or _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _placeholder(node: cst.CSTNode, conversion: str | None = None, spec: str | None = None) -> Part:
    return Part(expr=normalise(code(node)), conversion=conversion, format_spec=spec)


def _inner(node: cst.BaseExpression, ctx: TemplateContext) -> Variants:
    """Variants of a value spliced into a larger message: a placeholder when not resolvable."""
    got = _str_variants(node, ctx)
    if got is not None:
        return got
    value = _const(node, ctx)
    if value is not _UNSET and is_deterministic(value):
        return [[Part(text=str(value))]]
    return [[_placeholder(node)]]


def _str_variants(node: cst.BaseExpression, ctx: TemplateContext) -> Variants | None:
    """Variants when `node` is recognisably string-building; None otherwise."""
    handler = _HANDLERS.get(type(node))
    return handler(node, ctx) if handler else None


def _simple_string(node: cst.SimpleString, ctx: TemplateContext) -> Variants | None:
    value = ast.literal_eval(node.value)
    return [[Part(text=value)]] if isinstance(value, str) else None


def _concatenated(node: cst.ConcatenatedString, ctx: TemplateContext) -> Variants | None:
    left = _str_variants(node.left, ctx)
    right = _str_variants(node.right, ctx)
    if left is None or right is None:
        return None
    return _product([left, right])


def _fstring(node: cst.FormattedString, ctx: TemplateContext) -> Variants | None:
    prefix = node.start.rstrip("'\"").lower().replace("f", "")
    chunks: list[Variants] = []
    for part in node.parts:
        if isinstance(part, cst.FormattedStringText):
            text = _decode(part.value, prefix, node.end).replace("{{", "{").replace("}}", "}")
            chunks.append([[Part(text=text)]])
        elif isinstance(part, cst.FormattedStringExpression):
            chunks.append(_fstring_expr(part, ctx))
        else:
            return None
    return _product(chunks)


def _decode(text: str, prefix: str, quote: str) -> str:
    if "r" in prefix or "\\" not in text:
        return text
    try:
        value = ast.literal_eval(prefix + quote + text + quote)
    except (SyntaxError, ValueError):
        value = codecs.decode(text.encode("latin-1", "backslashreplace"), "unicode_escape")
    return value if isinstance(value, str) else text


def _fstring_expr(part: cst.FormattedStringExpression, ctx: TemplateContext) -> Variants:
    lead: list[Part] = []
    conversion = part.conversion
    spec = None
    if part.format_spec is not None:
        if not all(isinstance(p, cst.FormattedStringText) for p in part.format_spec):
            # a nested `{x:{width}}` spec: the rendered width is a runtime value
            if strict():
                raise TemplateError(
                    f"nested format spec in `{normalise(code(part))}` (KVERR_STRICT=1)"
                )
            return [[Part(expr=normalise(code(part.expression)), dynamic=True)]]
        spec = "".join(p.value for p in part.format_spec)  # type: ignore[union-attr]
    if part.equal is not None:
        # f"{x=}" prints the expression text as written, then repr() unless told otherwise
        bare = part.with_changes(conversion=None, format_spec=None)
        lead = [Part(text=code(bare)[1:-1])]
        if conversion is None and spec is None:
            conversion = "r"
    text = formatted(_const(part.expression, ctx), conversion, spec)
    if text is not None:
        return [lead + [Part(text=text)]]
    if conversion is None and not spec:
        got = _str_variants(part.expression, ctx)
        if got is not None:
            return [lead + v for v in got]
    return [lead + [_placeholder(part.expression, conversion, spec)]]


def _binary(node: cst.BinaryOperation, ctx: TemplateContext) -> Variants | None:
    if isinstance(node.operator, cst.Add):
        left = _str_variants(node.left, ctx)
        right = _str_variants(node.right, ctx)
        if left is None and right is None:
            return None
        return _product(
            [
                left if left is not None else _inner(node.left, ctx),
                right if right is not None else _inner(node.right, ctx),
            ]
        )
    if isinstance(node.operator, cst.Modulo):
        fmt = _str_variants(node.left, ctx)
        if fmt is None or any(not p.is_literal for v in fmt for p in v):
            return None
        out: Variants = []
        for v in fmt:
            got = _percent("".join(p.text or "" for p in v), node.right, ctx)
            if got is None:
                return None
            out.extend(got)
        return out
    return None


def _if_exp(node: cst.IfExp, ctx: TemplateContext) -> Variants | None:
    body = _str_variants(node.body, ctx)
    orelse = _str_variants(node.orelse, ctx)
    if body is None and orelse is None:
        return None
    out = (body or _inner(node.body, ctx)) + (orelse or _inner(node.orelse, ctx))
    if len(out) > MAX_VARIANTS:
        raise _TooMany
    return out


def _name(node: cst.Name, ctx: TemplateContext) -> Variants | None:
    if node.value in ctx.bindings:
        return ctx.bindings[node.value]
    value = ctx.constants.get(node.value, _UNSET)
    if isinstance(value, str):
        return [[Part(text=value)]]
    if node.value in ctx.resolving:
        return None
    alternatives = ctx.resolve_local(node.value)
    if not alternatives:
        return None
    ctx.resolving.add(node.value)
    try:
        out: Variants = []
        for base, augs in alternatives:
            first = _str_variants(base, ctx)
            if first is None:
                return None
            out.extend(_product([first] + [_inner(a, ctx) for a in augs]))
            if len(out) > MAX_VARIANTS:
                return None
        return out
    except _TooMany:
        return None  # too many texts to list: the local stays a placeholder
    finally:
        ctx.resolving.discard(node.value)


def _call(node: cst.Call, ctx: TemplateContext) -> Variants | None:
    func = node.func
    positional = [a.value for a in node.args if not a.keyword and not a.star]
    if isinstance(func, cst.Name):
        if func.value in ("str", "repr", "ascii") and len(positional) == 1 and len(node.args) == 1:
            conv = {"str": "s", "repr": "r", "ascii": "a"}[func.value]
            arg = positional[0]
            value = _const(arg, ctx)
            if value is not _UNSET and is_deterministic(value):
                return [[Part(text=_CONVERT[conv](value))]]
            if conv == "s":
                got = _str_variants(arg, ctx)
                if got is not None:
                    return got
            return [[_placeholder(arg, conv)]]
        wrapper = ctx.wrappers.get(func.value)
        if wrapper is not None and len(positional) == len(node.args) == len(wrapper.params):
            return _inline_wrapper(func.value, wrapper, positional, ctx)
    if isinstance(func, cst.Attribute) and func.attr.value == "format":
        return _format_call(node, ctx)
    if isinstance(func, cst.Attribute) and func.attr.value == "join" and len(node.args) == 1:
        return _join_call(func.value, node.args[0].value, ctx)
    return None


def _join_call(
    sep_node: cst.BaseExpression, arg: cst.BaseExpression, ctx: TemplateContext
) -> Variants | None:
    """`" ".join(["a", f"{x}"])`: a literal list of pieces joined by a literal separator."""
    sep = _str_variants(sep_node, ctx)
    if sep is None or len(sep) != 1 or any(not p.is_literal for p in sep[0]):
        return None
    if not isinstance(arg, (cst.List, cst.Tuple)) or not arg.elements:
        return None
    if any(isinstance(e, cst.StarredElement) for e in arg.elements):
        return None
    chunks: list[Variants] = []
    for i, element in enumerate(arg.elements):
        if i:
            chunks.append(sep)
        chunks.append(_inner(element.value, ctx))
    return _product(chunks)


def _inline_wrapper(
    name: str, wrapper: Wrapper, args: list[cst.BaseExpression], ctx: TemplateContext
) -> Variants | None:
    body = ctx.wrapper_nodes.get(name)
    if body is None:
        body = cst.parse_expression("(" + wrapper.source + ")")
        ctx.wrapper_nodes[name] = body
    inner = TemplateContext(
        constants=ctx.constants,
        wrappers={k: v for k, v in ctx.wrappers.items() if k != name},
        bindings={p: _inner(a, ctx) for p, a in zip(wrapper.params, args, strict=True)},
        wrapper_nodes=ctx.wrapper_nodes,
    )
    return _str_variants(body, inner)


# ---------------------------------------------------------------- % and .format()

_PCT = re.compile(
    r"%(?:\((?P<key>[^)]*)\))?(?P<spec>[-#0 +]*(?:\*|\d+)?(?:\.(?:\*|\d+))?)[hlL]?"
    r"(?P<type>[diouxXeEfFgGcrsa%])"
)


def _percent(fmt: str, rhs: cst.BaseExpression, ctx: TemplateContext) -> Variants | None:
    keys = [m.group("key") for m in _PCT.finditer(fmt) if m.group("type") != "%"]
    if keys and all(k is not None for k in keys):
        return _percent_values(fmt, [], _mapping(rhs), ctx, rhs)
    if isinstance(rhs, cst.Tuple):
        if any(isinstance(e, cst.StarredElement) for e in rhs.elements):
            return None
        return _percent_values(fmt, [e.value for e in rhs.elements], None, ctx)
    if len(keys) == 1:
        return _percent_values(fmt, [rhs], None, ctx)
    if isinstance(rhs, (cst.Name, cst.Attribute)) and keys:
        # `fmt % values` with a tuple held in a variable: its items, in order
        src = normalise(code(rhs))
        items = [cst.parse_expression(f"{src}[{i}]") for i in range(len(keys))]
        return _percent_values(fmt, items, None, ctx)
    return None


def _mapping(rhs: cst.BaseExpression) -> dict[str, cst.BaseExpression] | None:
    if not isinstance(rhs, cst.Dict):
        return None
    out = {}
    for e in rhs.elements:
        if not isinstance(e, cst.DictElement) or not isinstance(e.key, cst.SimpleString):
            return None
        out[ast.literal_eval(e.key.value)] = e.value
    return out


def _percent_values(
    fmt: str,
    values: list[cst.BaseExpression],
    mapping: dict[str, cst.BaseExpression] | None,
    ctx: TemplateContext,
    rhs: cst.BaseExpression | None = None,
) -> Variants | None:
    chunks: list[Variants] = []
    pos = 0
    it = iter(values)
    used = 0
    for m in _PCT.finditer(fmt):
        chunks.append([[Part(text=fmt[pos : m.start()])]])
        pos = m.end()
        kind, spec, key = m.group("type"), m.group("spec"), m.group("key")
        if kind == "%":
            chunks.append([[Part(text="%")]])
            continue
        if "*" in spec:
            return None
        if key is not None:
            if mapping is not None:
                if key not in mapping:
                    return None
                value_node: cst.BaseExpression | None = mapping[key]
            else:
                assert rhs is not None
                chunks.append([[Part(expr=f"{normalise(code(rhs))}[{key!r}]", **_pct_fmt(m))]])
                continue
        else:
            value_node = next(it, None)
            used += 1
        if value_node is None:
            return None
        chunks.append(_pct_value(value_node, kind, spec, m.group(0), ctx))
    if used != len(values):
        return None  # wrong arity raises TypeError at runtime: not a message we can model
    chunks.append([[Part(text=fmt[pos:])]])
    return _product(chunks)


def _pct_fmt(m: re.Match[str]) -> dict[str, str | None]:
    kind, spec = m.group("type"), m.group("spec")
    if kind in "rsa" and not spec:
        return {"conversion": kind, "format_spec": None}
    return {"conversion": None, "format_spec": "%" + spec + kind}


def _pct_value(
    node: cst.BaseExpression, kind: str, spec: str, whole: str, ctx: TemplateContext
) -> Variants:
    value = _const(node, ctx)
    pct = "%" + spec + kind
    if value is not _UNSET and is_deterministic(value) and not too_wide(spec):
        try:
            return [[Part(text=pct % (value,))]]
        except (TypeError, ValueError):
            pass
    if kind == "s" and not spec:
        got = _str_variants(node, ctx)
        if got is not None:
            return got
    if kind in "rsa" and not spec:
        return [[_placeholder(node, kind)]]
    return [[_placeholder(node, None, pct)]]


_FIELD = re.compile(r"^([^.\[]*)(.*)$", re.S)


def _format_call(node: cst.Call, ctx: TemplateContext) -> Variants | None:
    receiver = node.func.value  # type: ignore[attr-defined]
    fmt = _str_variants(receiver, ctx)
    if fmt is None or any(not p.is_literal for v in fmt for p in v):
        return None
    if any(a.star for a in node.args):
        return None
    positional = [a.value for a in node.args if a.keyword is None]
    keywords = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
    out: Variants = []
    for v in fmt:
        got = _format_text("".join(p.text or "" for p in v), positional, keywords, ctx)
        if got is None:
            return None
        out.extend(got)
    return out


def _format_text(
    text: str,
    positional: list[cst.BaseExpression],
    keywords: dict[str, cst.BaseExpression],
    ctx: TemplateContext,
) -> Variants | None:
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError:
        return None
    chunks: list[Variants] = []
    auto = 0
    for literal, field_name, spec, conversion in parsed:
        chunks.append([[Part(text=literal)]])
        if field_name is None:
            continue
        if spec and "{" in spec:
            return None
        head, rest = _FIELD.match(field_name).groups()  # type: ignore[union-attr]
        if head == "":
            head, auto = str(auto), auto + 1
        if head.isdigit():
            if int(head) >= len(positional):
                return None
            arg = positional[int(head)]
        elif head in keywords:
            arg = keywords[head]
        else:
            return None
        if rest:
            expr = normalise(code(arg)) + rest
            chunks.append([[Part(expr=expr, conversion=conversion, format_spec=spec or None)]])
            continue
        chunks.append(_value_parts(arg, conversion, spec or None, ctx))
    return _product(chunks)


def formatted(value: object, conversion: str | None, spec: str | None) -> str | None:
    """A constant as `format` prints it, or None: no constant, a spec too wide to fold
    (render.MAX_WIDTH), or one the value does not take."""
    if value is _UNSET or not is_deterministic(value) or too_wide(spec or ""):
        return None
    shown = _CONVERT[conversion](value) if conversion else value
    try:
        return format(shown, spec or "")
    except (TypeError, ValueError):
        return None


def _value_parts(
    arg: cst.BaseExpression, conversion: str | None, spec: str | None, ctx: TemplateContext
) -> Variants:
    text = formatted(_const(arg, ctx), conversion, spec)
    if text is not None:
        return [[Part(text=text)]]
    if conversion is None and not spec:
        got = _str_variants(arg, ctx)
        if got is not None:
            return got
    return [[_placeholder(arg, conversion, spec)]]


# ---------------------------------------------------------------- constants


_CONST_NODES = (
    cst.Name, cst.Call, cst.List, cst.Tuple, cst.Set, cst.Dict, cst.Subscript, cst.Integer,
    cst.Float, cst.UnaryOperation, cst.BinaryOperation,
)  # fmt: skip


def _const(node: cst.BaseExpression, ctx: TemplateContext) -> object:
    """The compile-time value of `node`, or _UNSET."""
    if isinstance(node, cst.Name):
        if node.value in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[node.value]
        return ctx.constants.get(node.value, _UNSET) if node.value not in ctx.bindings else _UNSET
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
        value = node.evaluated_value
        return value if isinstance(value, str) else _UNSET
    if not isinstance(node, _CONST_NODES):
        return _UNSET
    try:
        tree = ast.parse("(" + code(node) + ")", mode="eval")
    except SyntaxError:
        return _UNSET
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    if names & set(ctx.bindings):
        return _UNSET
    return const_eval(tree.body, ctx.constants)


_HANDLERS: dict[type, Callable[..., Variants | None]] = {
    cst.SimpleString: _simple_string,
    cst.ConcatenatedString: _concatenated,
    cst.FormattedString: _fstring,
    cst.BinaryOperation: _binary,
    cst.IfExp: _if_exp,
    cst.Name: _name,
    cst.Call: _call,
}
