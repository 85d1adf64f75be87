"""The values a free-text option is known to take, so that the fix search offers a user what
they would recognise (`--device cpu`) and never another option's word (`--device flashinfer`,
a string the same function happens to compare some other option with).

An option without declared choices is known by:

- the strings the code compares it with (`self.device == "npu"`, `self.device in (...)`,
  `self.device.startswith("cuda")`, `"cuda" in self.device`), anywhere in the args class,
  most often compared first;
- the `Literal[...]` of its field's annotation (`Optional[Literal["static", "dynamic"]]`);
- the literals the validation code assigns it (reading.assigned_values);
- the examples of its help text (records.knowledge.facts.help_examples) and its default.

A whole-number option is known by the numbers a deployment gives it (`typical_numbers`): what
the validation code assigns it and what its help shows, which a fix tries before a boundary.

`sandbox/compared.py` is the same reading over one guard, for the solver in the child
(sandbox/solve.py): the strings that guard compares the attribute with come first. Pure stdlib `ast`.
"""

from __future__ import annotations

import ast
import functools
from collections import Counter
from collections.abc import Sequence
from typing import Any

from kverr.extractor.pysource import parse_module
from kverr.records.knowledge.facts import help_examples
from kverr.verify.sandbox.compared import comparisons, strings
from kverr.verify.search.reading import defs_of, function_node, words_of


@functools.lru_cache(maxsize=8)
def compared_values(text: str, args_class: str) -> dict[str, tuple[str, ...]]:
    """attribute -> the strings the args class's methods compare `self.<attribute>` with and
    its annotation's Literal values, most often compared first (ties: first seen)."""
    counts: dict[str, Counter[str]] = {}
    order: dict[str, dict[str, None]] = {}

    def note(attr: str, found: list[str]) -> None:
        for v in found:
            counts.setdefault(attr, Counter())[v] += 1
            order.setdefault(attr, {}).setdefault(v, None)

    for (_, qual), fn in defs_of(text).items():
        if not qual.startswith(f"{args_class}."):
            continue
        for attr, value, fragment in comparisons(fn):
            if not fragment:
                note(attr, [value])
    literal = _literal_fields(text, args_class)
    out: dict[str, tuple[str, ...]] = {}
    for attr in {*counts, *literal}:
        seen = list(order.get(attr, {}))
        ranked = sorted(seen, key=lambda v: (-counts[attr][v], seen.index(v)))
        out[attr] = tuple(dict.fromkeys([*literal.get(attr, ()), *ranked]))
    return out


def _literal_fields(text: str, args_class: str) -> dict[str, list[str]]:
    """field -> the strings of a `Literal[...]` in its annotation."""
    try:
        tree = parse_module(text)
    except SyntaxError:
        return {}
    out: dict[str, list[str]] = {}
    for cls in tree.body:
        if not (isinstance(cls, ast.ClassDef) and cls.name == args_class):
            continue
        for stmt in cls.body:
            if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
                continue
            for n in ast.walk(stmt.annotation):
                if (
                    isinstance(n, ast.Subscript)
                    and isinstance(n.value, (ast.Name, ast.Attribute))
                    and (n.value.id if isinstance(n.value, ast.Name) else n.value.attr) == "Literal"
                ):
                    out.setdefault(stmt.target.id, []).extend(strings(n.slice))
    return out


@functools.lru_cache(maxsize=1024)
def owners(text: str, function: str | None) -> dict[str, list[str]]:
    """word -> the attributes the function compares it with (`self.speculative_algorithm ==
    "NGRAM"`, `"all" in self.modules`): a word of its short strings (reading.words_of) that
    the solver offers those attributes alone, never another option."""
    fn = function_node(text, function)
    if fn is None:
        return {}
    words = set(words_of(text, function))
    out: dict[str, set[str]] = {}
    for attr, s, _ in comparisons(fn):
        if s in words:
            out.setdefault(s, set()).add(attr)
    return {w: sorted(a) for w, a in sorted(out.items())}


def typical_numbers(helptext: str | None, assigned: Sequence[Any] | None) -> list[int]:
    """Whole numbers a deployment gives an option, as the revision says them: the positive
    values its validation code assigns it (`self.chunked_prefill_size = 8192` for a GPU's
    memory) and those its help text shows. A fix offers these before a guard's boundary, so
    it reads `--max-loras-per-batch 8`, not `1`."""
    found = [v for v in assigned or () if type(v) is int and v > 0]
    found += [int(w) for w in help_examples(helptext) if w.isdigit() and int(w) > 0]
    return list(dict.fromkeys(found))
