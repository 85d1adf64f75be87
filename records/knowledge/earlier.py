"""What the phases before a check did to the flags it reads (extractor/phases.py), over parsed
`args`: `--lora-paths` turns on `--enable-lora`, `--dp-size 1` turns off `--enable-dp-lm-head`,
`--speculative-algorithm NEXTN` is read as EAGLE. The pre-flight check reads each flag as the
check does (`effective`), and the trigger says so in words (`sentences`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kverr.extractor.phases import negate
from kverr.extractor.pysource import expr_or_none
from kverr.records.conditions import (
    Atom,
    atoms_of,
    flag_attrs,
    join_words,
    phrase,
    show_value,
)
from kverr.records.knowledge.facts import Facts, holds_for

from kverr.ftypes import Assignment, FlagDecl

MAX_CHARS = 400  # a value folded past this is no longer something a reader can check


@dataclass(frozen=True)
class Form:
    """A flag's value by the time the check reads it, over `args`: `exact` where the value
    itself matters, `truthy` where only its truth does (reads more simply)."""

    exact: str
    truthy: str


@dataclass(frozen=True)
class Step:
    """One earlier assignment to a flag the check reads, over `args`."""

    flag: str
    value: str  # over args
    condition: str  # over args, flags' values at that point substituted ("": always)
    source: Assignment  # its condition: the tests it runs under, early returns included


def steps(f: Facts, line: int | None = None) -> tuple[dict[str, Form], list[Step]]:
    """(args attribute -> its value at the test on `line`, for the flags the check reads that an
    earlier phase may change; the simple assignments to those flags, in run order). A flag that an
    assignment the code cannot follow (a call's result, one in a loop, under a condition on
    anything but flags) may change is left as the user gave it."""
    if not f.earlier:
        return {}, []
    # A test reads the flag before what its own branch assigns: the innermost test by default
    line = line or max((r.guard.line for r in f.readings if r.guard.kind != "passed"), default=0)
    line = line or f.site.line
    read = _read_attrs(f)
    forms: dict[str, Form | None] = {}
    out: list[Step] = []
    for a in f.earlier:
        if a.function == f.site.function and a.line >= line:
            break
        flag = _flag_of(a.field, f.decls)
        if flag is None:
            continue  # not a flag: a condition reading it is not over `args` either
        attr = _attr(flag, f.decls)
        prev = forms.get(attr, Form(f"args.{attr}", f"args.{attr}"))
        value = _over_args(a.value, forms, f.decls, boolean=False) if a.value else None
        # an early return the code cannot put over `args` (a dummy model's short cut) is
        # taken to let the launch go on: the launches a check is about are real ones
        past = [p for p in a.past if _over_args(p, forms, f.decls, boolean=True)]
        source = " and ".join(c for c in (*past, a.condition) if c)
        cond = _over_args(source, forms, f.decls, boolean=True) if source else ""
        if prev is None or value is None or cond is None:
            forms[attr] = None
            continue
        form = _combine(prev, value, cond)
        forms[attr] = form if len(form.exact) <= MAX_CHARS else None
        if attr in read:
            out.append(Step(flag, value, cond, Assignment(a.field, a.value, source, a.function)))
    known = {k: v for k, v in forms.items() if v is not None and k in read}
    return known, [s for s in out if _attr(s.flag, f.decls) in known]


def at_check(f: Facts) -> Callable[[Callable[[str], object]], dict[str, object]]:
    """For a launch whose options are `value_of(flag)` (UNKNOWN: not known): flag -> the value
    the check reads, for each flag an earlier phase may change; UNKNOWN where kverr cannot
    work it out (an assignment the code cannot follow, a value it cannot compute, None). The
    phases are read once; the launches are many."""
    from kverr.advice import evaluate  # (the one reader of a condition over options)

    forms, _ = steps(f)
    plans: dict[str, tuple[str, dict[str, str]] | None] = {}
    for a in f.earlier:
        flag = _flag_of(a.field, f.decls)
        if flag is None or flag in plans:
            continue
        form = forms.get(_attr(flag, f.decls))
        if form is None:
            plans[flag] = None
            continue
        names = {
            x: _flag_of(x, f.decls) or "--" + x.replace("_", "-")
            for x in re.findall(r"\bargs\.(\w+)", form.exact)
        }
        plans[flag] = (
            re.sub(r"\bargs\.(\w+)", lambda m, n=names: n[m.group(1)], form.exact),
            names,
        )

    def reads(value_of: Callable[[str], object]) -> dict[str, object]:
        out: dict[str, object] = {}
        for flag, plan in plans.items():
            values = {n: value_of(n) for n in plan[1].values()} if plan else {}
            if plan is None or UNKNOWN in values.values():
                out[flag] = UNKNOWN
                continue
            got = evaluate(plan[0], values)  # type: ignore[arg-type]
            out[flag] = UNKNOWN if got is None else got
        return out

    return reads


UNKNOWN = object()  # (at_check: a value the phases make that kverr cannot work out)


def substitute(expr: str, forms: dict[str, Form]) -> str:
    """`expr` over `args` with each flag an earlier phase changes read as the check reads it."""
    node = expr_or_none(expr)
    if node is None or not forms:
        return expr
    return ast.unparse(_subst(node, forms, boolean=True))


def _combine(prev: Form, value: str, cond: str) -> Form:
    if not cond:
        return Form(value, value)
    exact = f"({value} if {cond} else {prev.exact})"
    if value == "True":
        return Form(exact, f"({prev.truthy} or {_grouped(cond)})")
    if value in ("False", "None"):
        # `if self.x and c: self.x = False`: the launch that reads x true already has x
        rest = [c for c in conjuncts(cond) if c != prev.truthy] or ["True"]
        return Form(exact, f"({prev.truthy} and {negate(' and '.join(rest))})")
    return Form(exact, exact)


def conjuncts(cond: str) -> list[str]:
    node = expr_or_none(cond)
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
        return [ast.unparse(v) for v in node.values]
    return [cond]


def _grouped(cond: str) -> str:
    node = expr_or_none(cond)
    return f"({cond})" if isinstance(node, (ast.BoolOp, ast.IfExp)) else cond


def _over_args(
    text: str, forms: dict[str, Form | None], decls: dict[str, FlagDecl], *, boolean: bool
) -> str | None:
    """`self.<field>` reads in `text` as `args` reads (each flag as earlier steps left it);
    None when the text reads anything else (a platform probe, a computed field)."""
    node = expr_or_none(text)
    if node is None:
        return None
    attrs: dict[str, Form] = {}
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self":
            flag = _flag_of(n.attr, decls)
            attr = _attr(flag, decls) if flag else None
            form = forms.get(attr, Form(f"args.{attr}", f"args.{attr}")) if attr else None
            if form is None:
                return None
            attrs[n.attr] = form
            n.value.id = "args"  # marked: read below as the flag's form
        elif isinstance(n, ast.Name) and n.id not in ("self", "args", "len", "bool"):
            return None
        elif isinstance(n, ast.Call) and not (
            isinstance(n.func, ast.Name) and n.func.id in ("len", "bool")
        ):
            return None
    return ast.unparse(_subst(node, attrs, boolean=boolean))


def _subst(node: ast.AST, forms: dict[str, Form], *, boolean: bool) -> ast.AST:
    """`args.x` replaced by its form: the truthy one where only truth counts (an if's test, an
    operand of and/or/not there), the exact one anywhere else."""
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "args"
        and node.attr in forms
    ):
        form = forms[node.attr]
        return expr_or_none(form.truthy if boolean else form.exact) or node
    for name, value in ast.iter_fields(node):
        inner = (
            boolean
            if isinstance(node, ast.BoolOp)
            or (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not))
            or (isinstance(node, ast.IfExp) and name != "test")
            else isinstance(node, ast.IfExp)
        )
        if isinstance(value, ast.AST):
            setattr(node, name, _subst(value, forms, boolean=inner))
        elif isinstance(value, list):
            setattr(
                node,
                name,
                [_subst(v, forms, boolean=inner) if isinstance(v, ast.AST) else v for v in value],
            )
    return node


def sentences(f: Facts) -> list[str]:
    """The earlier assignments that change who reaches the check, in words."""
    forms, found = steps(f)
    out: list[str] = []
    for i, s in enumerate(found):
        later = any(t.flag == s.flag for t in found[i + 1 :])
        text = _sentence(s, f, last=not later)
        if text and text not in out:
            out.append(text)
    return out


def _sentence(s: Step, f: Facts, *, last: bool) -> str | None:
    a, flag = s.source, s.flag
    attrs = flag_attrs(tuple(f.decls), None, f.profile)
    atoms = atoms_of(a.condition.replace("self.", "args."), True, attrs)
    if any(not phrase(x) for x in atoms) or _contradicts(atoms, flag, f):
        return None
    value = _value_words(a.value or "", f.decls)
    if not a.condition:
        return f"An earlier step sets {flag} to {value} before this check."
    others = [phrase(x) for x in atoms if x.flag != flag]
    mine = [x for x in atoms if x.flag == flag]
    if not _changes(mine, a.value, f):
        return None
    # `if self.x is None: self.x = ...`: only a launch that leaves the flag out gets the value
    unset = any(x.op in ("is None", "unset") for x in mine)
    unless = " when it is not given" if unset else ""
    if value == "True" and others:
        unless = f" when {flag} is not given" if unset else ""
        return f"{join_words(others)} also turns on {flag}{unless}."
    if value in ("False", "None") and others:
        # the check needs the flag on, and no later step may turn it back on
        cannot = last and not mine and any(x.flag == flag and x.positive for x in _own_atoms(f))
        off = "turned off" if value == "False" else "cleared"
        tail = ", so this check cannot fire" if cannot else ""
        return f"With {join_words(others)}, {flag} is {off} before this check{unless}{tail}."
    if value.startswith("--") and mine and not others:
        return f"{flag} defaults to {value} when not given."
    if len(mine) == 1 and not others and mine[0].op in _VALUE_OPS:
        before = phrase(mine[0]).removeprefix(flag).strip().removeprefix("=")
        return f"{flag} {before} is read as {value}."
    if others:
        return f"With {join_words(others)}, {flag} is set to {value} before this check{unless}."
    return None


def _own_atoms(f: Facts) -> tuple[Atom, ...]:
    return f.direct + f.context


def _contradicts(atoms: Sequence[Atom], flag: str, f: Facts) -> bool:
    """The step runs only for a value of another flag the check rules out (`x == a` against
    `x == b`): no launch that reaches the check took it."""
    for x in atoms:
        if x.op not in ("==", "in") or x.flag in (None, flag):
            continue
        values = (x.value,) if x.op == "==" else tuple(x.value)
        tests = [y for y in _own_atoms(f) if y.flag == x.flag]
        if any(not any(holds_for(y, v) for v in values) for y in tests):
            return True
    return False


def _changes(mine: Sequence[Atom], value: str | None, f: Facts) -> bool:
    """Whether a step that rewrites one value of the flag (`x == a` -> b) changes a test of the
    check on it: NEXTN read as EAGLE matters to `in (EAGLE, ...)`, not to `== NGRAM` or to
    `is not None`. Any other step may."""
    node = expr_or_none(value or "")
    rewrites = [x for x in mine if x.op == "=="]
    if not rewrites or not isinstance(node, ast.Constant):
        return True
    tests = [y for y in _own_atoms(f) if y.flag == rewrites[0].flag]
    old = rewrites[0].value
    return any(holds_for(y, old) != holds_for(y, node.value) for y in tests)


_VALUE_OPS = ("==", "!=", "in", "not in", "<", "<=", ">", ">=")


def _value_words(value: str, decls: dict[str, FlagDecl]) -> str:
    node = expr_or_none(value)
    if isinstance(node, ast.Attribute):
        return _flag_of(node.attr, decls) or value
    if isinstance(node, ast.Constant):
        return (
            value if isinstance(node.value, bool) or node.value is None else show_value(node.value)
        )
    return value


def _read_attrs(f: Facts) -> set[str]:
    """The flags the check's own path reads (an earlier check it passed is not its path)."""
    own = [r for r in f.readings if r.guard.kind != "passed"]
    flags = {a.flag for r in own for a in r.atoms if a.flag}
    flags |= {fl for r in own for a in r.atoms for fl in a.flags}
    flags |= {fl for r in own for fl in r.guard.flags}
    return {_attr(fl, f.decls) for fl in flags if fl}


def _flag_of(field: str, decls: dict[str, FlagDecl]) -> str | None:
    name = "--" + field.replace("_", "-")
    if name in decls:
        return name
    return _by_dest(decls).get(field)


_DESTS: dict[int, tuple[dict[str, FlagDecl], dict[str, str]]] = {}


def _by_dest(decls: dict[str, FlagDecl]) -> dict[str, str]:
    """dest -> flag, made once per map of declarations (a build shares one across its sites;
    the phases read hundreds of fields per site)."""
    held = _DESTS.get(id(decls))
    if held is None or held[0] is not decls:
        if len(_DESTS) > 8:
            _DESTS.clear()
        held = _DESTS[id(decls)] = (decls, {d.dest: d.name for d in decls.values()})
    return held[1]


def _attr(flag: str, decls: dict[str, FlagDecl]) -> str:
    d = decls.get(flag)
    return (d.arg_dest if d else None) or (d.dest if d else None) or flag[2:].replace("-", "_")
