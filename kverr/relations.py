"""Comparisons over command-line options, as code and as words, both ways.

The records say a check's arithmetic in words ("--tp-size is not a multiple of --dp-size",
"Make --ep-size equal to 1 or --tp-size"); `kverr explain` reads those words back into the
condition it solves with the values a message printed. One module holds both directions, so
what one writes the other reads.

    relation_words("--tp-size % --dp-size == 0", holds=False)
        -> "--tp-size not a multiple of --dp-size"
    stated("Launching when --tp-size is not a multiple of --dp-size.")
        -> [("--tp-size % --dp-size == 0", False)]
"""

from __future__ import annotations

import ast
import functools
import re

OPTION = re.compile(r"--[a-z0-9][a-z0-9-]{0,80}")
# an option, or a key of a config's JSON option: --x-config.y
KEYED = re.compile(r"--[a-z][a-z0-9_.-]*[a-z0-9]")


@functools.lru_cache(maxsize=4096)  # (the same condition is run for many launches)
def options_expr(
    text: str, option: re.Pattern[str] = OPTION
) -> tuple[ast.expr | None, dict[str, str]]:
    """A condition over command-line options (`--tp-size % --dp-size == 0`: what `option`
    matches) as an expression, each option a name (`o_tp_size`), and name -> option."""
    from kverr.extractor.pysource import expr_or_none  # the explain path leaves it until here

    names: dict[str, str] = {}

    def name(m: re.Match[str]) -> str:
        names[option_name(m.group())] = m.group()
        return option_name(m.group())

    return expr_or_none(option.sub(name, text)), names


def option_name(option: str) -> str:
    """`--tp-size` as a Python name: `o_tp_size`."""
    return "o_" + re.sub(r"\W", "_", option.lstrip("-"))


# ---------------------------------------------------------------- code -> words

_RELATION = {
    ast.Eq: "equal to", ast.NotEq: "different from", ast.Lt: "below", ast.LtE: "at most",
    ast.Gt: "above", ast.GtE: "at least",
}  # fmt: skip
_FLIP = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.GtE, ast.GtE: ast.Lt,
         ast.Gt: ast.LtE, ast.LtE: ast.Gt}  # fmt: skip
_ARITH = {ast.Mult: "times", ast.Add: "plus", ast.Sub: "minus", ast.Div: "divided by",
          ast.FloorDiv: "divided by"}  # fmt: skip


def relation_words(text: str, holds: bool) -> str:
    """A comparison over flags in words, as it holds (`holds`) or as it fails:
    `--tp-size % --dp-size == 0` -> "--tp-size a multiple of --dp-size" / "--tp-size not a
    multiple of --dp-size"; `a > b` failing -> "a at most b"; "" where a side is code a user
    cannot set."""
    return " ".join(relation(text, holds))


def relation(text: str, holds: bool) -> tuple[str, ...]:
    """(what is compared, how it relates) of `relation_words`, or () where it has none."""
    node, flags = options_expr(text, KEYED)
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1):
        return ()
    left, right = node.left, node.comparators[0]
    if type(node.ops[0]) in (ast.In, ast.NotIn) and isinstance(right, (ast.List, ast.Tuple)):
        # `--ep-size in [1, --tp-size]`: "--ep-size equal to 1 or --tp-size"
        a, items = _side(left, flags), [_side(e, flags) for e in right.elts]
        if not (a and items and all(items) and any(i.startswith("--") for i in items)):
            return ()  # (a list of values alone is an option's fact: `--x in ('a', 'b')`)
        if (type(node.ops[0]) is ast.In) == holds:
            return a, "equal to " + listed(items, " or ")
        if len(items) == 2:
            return a, f"neither {items[0]} nor {items[1]}"
        return a, "none of " + listed(items, " and ")
    if type(node.ops[0]) not in _RELATION:
        return ()
    op = type(node.ops[0]) if holds else _FLIP[type(node.ops[0])]
    if (
        isinstance(left, ast.BinOp)
        and isinstance(left.op, ast.Mod)
        and isinstance(right, ast.Constant)
        and right.value == 0
        and op in (ast.Eq, ast.NotEq)
    ):
        a, b = _side(left.left, flags), _side(left.right, flags)
        nor = "" if op is ast.Eq else "not "
        if a and b and not a.startswith("--") and b.startswith("--"):
            return b, f"{nor}a divisor of {a}"  # (`64 % --page-width`: 64 is no option)
        return (a, f"{nor}a multiple of {b}") if a and b else ()
    a, b = _side(left, flags), _side(right, flags)
    # (`x != x` over two objects that read as one option says nothing in words)
    return (a, f"{_RELATION[op]} {b}") if a and b and a != b else ()


def listed(items: list[str], last: str) -> str:
    """Words as a list: "a", "a or b", "a, b or c" (`last` joins the last two); "" for none."""
    return ", ".join(items[:-1]) + last + items[-1] if len(items) > 1 else "".join(items)


def _side(node: ast.expr, flags: dict[str, str]) -> str:
    """One side of a comparison in words, or "" when it holds code a user cannot set."""
    if isinstance(node, ast.Name):
        return flags.get(node.id, "")
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return repr(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _side(node.operand, flags)
        return f"-{inner}" if inner else ""
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITH:
        a, b = _side(node.left, flags), _side(node.right, flags)
        return f"{a} {_ARITH[type(node.op)]} {b}" if a and b else ""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "len"
        and len(node.args) == 1
    ):
        inner = _side(node.args[0], flags)
        return f"the number of {inner}" if inner.startswith("--") else ""
    return ""


# ---------------------------------------------------------------- words -> code

# One side as `_side` writes it: options, numbers, the number of a list option, arithmetic.
# (Every repetition is bounded: prose pasted to `kverr explain` is hostile.)
_TERM = r"(?:the number of )?--[a-z][a-z0-9_.-]{0,80}[a-z0-9]|-?\d{1,20}(?:\.\d{1,20})?"
_SIDE = rf"(?:{_TERM})(?: (?:times|plus|minus|divided by) (?:{_TERM})){{0,6}}"
_SAID = re.compile(
    rf"(?<![\w-])(?P<a>{_SIDE}) (?:is )?(?:"
    rf"(?P<nor>not )?a (?P<kind>multiple|divisor) of (?P<b>{_SIDE})"
    rf"|(?P<rel>equal to|different from|below|less than|at most|above|greater than|at least)"
    rf" (?P<c>{_SIDE}(?:(?:, | or ){_SIDE}){{0,8}})"
    rf"|neither (?P<d>{_SIDE}) nor (?P<e>{_SIDE})"
    rf"|none of (?P<f>{_SIDE}(?:(?:, | and ){_SIDE}){{0,8}})"
    r")(?![\w-])"
)
_OPS = {"equal to": "==", "different from": "!=", "below": "<", "less than": "<",
        "at most": "<=", "above": ">", "greater than": ">", "at least": ">="}  # fmt: skip
_WORDS_OP = {"times": "*", "plus": "+", "minus": "-", "divided by": "/"}


def stated(text: str) -> list[tuple[str, bool]]:
    """The comparisons `relation_words` wrote into `text`, each as (code, whether the words
    say it holds): "--tp-size is not a multiple of --dp-size" -> (`--tp-size % --dp-size ==
    0`, False)."""
    out = []
    for m in _SAID.finditer(text):
        a = _code(m.group("a"))
        if m.group("kind") == "multiple":
            out.append((f"{a} % {_code(m.group('b'))} == 0", not m.group("nor")))
        elif m.group("kind") == "divisor":
            out.append((f"{_code(m.group('b'))} % {a} == 0", not m.group("nor")))
        elif m.group("rel"):
            items = re.split(r", | or ", m.group("c"))
            if len(items) > 1:
                out.append((f"{a} in [{', '.join(map(_code, items))}]", True))
            else:
                out.append((f"{a} {_OPS[m.group('rel')]} {_code(items[0])}", True))
        else:
            items = (
                [m.group("d"), m.group("e")] if m.group("d") else re.split(", | and ", m.group("f"))
            )
            out.append((f"{a} in [{', '.join(map(_code, items))}]", False))
    return out


def _code(side: str) -> str:
    side = re.sub(r"the number of (--\S+)", r"len(\1)", side)
    for word, op in _WORDS_OP.items():
        side = side.replace(f" {word} ", f" {op} ")
    return side
