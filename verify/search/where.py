"""Which platform and model a check is tried on: how a launch's model differs from the
default profile (for the verification's "model"), whether a check's path reads the model or
the machine, and which profiles answer something its code reads differently.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from typing import Any

from kverr.extractor.pysource import expr_or_none
from kverr.records.conditions import Atom
from kverr.records.knowledge.facts import Facts
from kverr.verify.harness import Outcome

from kverr.ftypes import FlagDecl, Launch


def model_label(launch: Launch, profiles: Mapping[str, Mapping[str, Any]]) -> str:
    """How a launch's model differs from the default profile, in a few words ("" if not);
    `profiles`: name -> its hf_config, so that an attribute the profile has anyway is not
    named again."""
    model = dict(launch.model)
    profile = model.pop("profile", None)
    own = profiles.get(profile or "", {})
    extra = ", ".join(
        f"{k} {' '.join(map(str, v)) if isinstance(v, (list, tuple)) else v}"
        for k, v in sorted(model.items())
        if not (isinstance(v, (list, tuple)) and list(v) == list(own.get(k, ())) or own.get(k) == v)
    )
    if profile and extra:
        return f"{profile} with {extra}"
    return profile or (f"the default model with {extra}" if extra else "")


_MODEL_WORDS = re.compile(
    r"hf_config|model_arch|model_config|architectures|is_multimodal|get_model_config|nsa|is_moe"
)


# stubs.MissingFact's message, as the run's reason reports it
MISSING_FACT = re.compile(r"the profile's model(?:'s hf_config|( config)) does not declare '(\w+)'")


def reads_model(f: Facts) -> bool:
    """The check's own path reads the model (its config, its architecture): its test, the
    ifs around it and the early exits before it, not the earlier checks of its function,
    which the run passed."""
    return any(
        _MODEL_WORDS.search(r.guard.test) or any(a.topic == "model" for a in r.atoms)
        for r in f.readings
        if r.guard.kind != "passed"
    )


def about_model(out: Outcome, watch: Sequence[Mapping[str, Any]]) -> bool:
    """A watched guard came out wrong that reads the model, or that no option value rights
    (a method of the model config, say), or the run never reached the function (a caller
    gated on the model)."""
    tests = {str(w["line"]): w["test"] for w in watch}
    wrong = [
        (tests.get(line, ""), g["solutions"])
        for line, g in out.trace.get("guards", {}).items()
        if g.get("value") is not None and "solutions" in g
    ]
    return not out.trace.get("entered", True) or any(
        _MODEL_WORDS.search(test) or not solutions for test, solutions in wrong
    )


def words_pattern(words: Sequence[str]) -> re.Pattern[str]:
    """Any of `words`: an identifier as a whole word, a path or dotted name as it is."""
    parts = [
        rf"\b{re.escape(w)}\b" if w.isidentifier() else re.escape(w)
        for w in sorted(set(words), key=len, reverse=True)
    ]
    return re.compile("|".join(parts))


def contradiction(atoms: Sequence[Atom]) -> str:
    """The option a path needs both None and given ("" when there is none): the branches on
    the way to the check say `x is None` and `x is not None`, directly or through a compound
    test of such facts (`not (x is None and y is None)` next to `x is None`, `y is None`).
    Such a check is dead code, which no command line reaches."""
    given: dict[str, bool] = {}  # option -> whether the path has it given (not None)
    for a in atoms:
        if a.flag and a.op in ("is None", "is not None"):
            want = a.op == "is not None"
            if given.setdefault(a.flag, want) != want:
                return a.flag
    for a in atoms:
        if a.op == "expr" and a.flags and all(fl in given for fl in a.flags):
            value = _none_test(a.text, given)
            if value is not None and value != a.holds:
                return a.flags[0]
    return ""


def _none_test(text: str, given: Mapping[str, bool]) -> bool | None:
    """`text` (options shown as themselves) evaluated from whether each option is given, when
    it only tests that (`--a is None and --b is None`); None for any other test."""
    names = {f"_o{i}": flag for i, flag in enumerate(sorted(given, key=len, reverse=True))}
    for name, flag in names.items():
        text = text.replace(flag, name)
    node = expr_or_none(text)
    if node is None:
        return None

    def value(n: ast.expr) -> bool | None:
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not):
            v = value(n.operand)
            return None if v is None else not v
        if isinstance(n, ast.BoolOp):
            parts = [value(v) for v in n.values]
            if None in parts:
                return None
            return all(parts) if isinstance(n.op, ast.And) else any(parts)
        if (
            isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.left, ast.Name)
            and n.left.id in names and isinstance(n.comparators[0], ast.Constant)
            and n.comparators[0].value is None and isinstance(n.ops[0], (ast.Is, ast.IsNot))
        ):  # fmt: skip
            is_given = given[names[n.left.id]]
            return is_given if isinstance(n.ops[0], ast.IsNot) else not is_given
        return None

    return value(node)


_ISINSTANCE = re.compile(r"isinstance\((--[\w-]+), (int|str|float)\)")


def typed_away(atoms: Sequence[Atom], decls: Mapping[str, FlagDecl]) -> str:
    """`--x is always a T` when the path needs `isinstance(--x, T)` false and the option is
    declared a plain T ("" otherwise): the parser gives it as a T, so only a caller of the
    Python API passes anything else (given that leaving it out did not reach the check)."""
    for a in atoms:
        m = _ISINSTANCE.fullmatch(a.text) if a.op == "expr" and not a.holds else None
        decl = decls.get(m[1]) if m else None
        if decl is None or "." in decl.dest or decl.nargs:
            continue
        kinds = {k.strip() for k in (decl.type or "").split("|")} - {"None", ""}
        if kinds == {m[2]}:
            shown = {"int": "an integer", "float": "a number", "str": "text"}[m[2]]
            return f"the command line always gives {m[1]} as {shown}"
    return ""


def choices_accepted(atoms: Sequence[Atom], decls: Mapping[str, FlagDecl]) -> str:
    """`--x takes only a or b` when the path needs the option outside a set of values that
    holds every choice the parser declares for it (and None, when it may be left out): no
    command line gives it another ("" otherwise)."""
    for a in atoms:
        decl = decls.get(a.flag or "")
        if decl is None or a.op not in ("not in", "!=") or not decl.choices:
            continue
        banned = set(a.value) if a.op == "not in" else {a.value}
        shown = {str(b) for b in banned}
        if all(str(c) in shown for c in decl.choices) and (None in banned or _required(decl)):
            return f"{a.flag} takes only {' or '.join(map(str, decl.choices))}"
    return ""


def _required(decl: FlagDecl) -> bool:
    """The option always holds a declared value: left out, its default is one of them."""
    return decl.default is not None and str(decl.default) in {str(c) for c in decl.choices}
