"""Conditions -> words: the launch that reaches the site (`triggerScenarios`) and what each
flag involved is for (`commonSituations`).
"""

from __future__ import annotations

import ast
from dataclasses import replace

from kverr.records.conditions import (
    Atom,
    dest_of,
    join_words,
    parse,
    phrase,
    show_value,
)
from kverr.records.knowledge.facts import Facts, _default, meets_default
from kverr.records.knowledge.text import _help, _with_help
from kverr.records.names import exact_values, name_flags


def trigger_scenarios(f: Facts) -> str:
    """The launch that reaches the site, in words: the model, the flags, the platform, then
    any other condition; and the earlier checks of the validator it already passed."""
    # An early exit on the way (`if self.x is None: return`) is a condition of the launch
    # like an enclosing if, not an earlier check: it reads "with --x set".
    exits = tuple(
        a
        for r in f.readings
        if r.role == "gate" and r.guard.kind == "early-exit"
        for a in r.atoms
        if a in f.passed
    )
    atoms = _last_per_flag(list(dict.fromkeys(exits + f.context + f.direct)))
    shown = captured(f)
    with_ = _with_values(
        [a for a in atoms if a.flag and not _without(a, f) and a.op != "is None"], f, shown
    )
    without = [_noted(a) for a in atoms if _without(a, f) or (a.flag and a.op == "is None")]
    exprs = [a for a in atoms if a.flag is None]
    # An inner architecture test refines the outer one ("a NemotronH model" within "a hybrid
    # model"): the innermost that holds says it best.
    models = [a for a in exprs if a.topic == "model"]
    picked = [a for a in models if a.holds][-1:] or models[-1:]
    model = [phrase(a) for a in picked]
    where = [phrase(a) for a in exprs if a.topic in ("platform", "hardware")]
    when = [phrase(a) for a in exprs if a.topic not in ("model", "platform", "hardware")]
    if not (with_ or without or exprs):
        return ""
    bits = ["Launching"]
    if model:
        bits.append(" and ".join(model))
    flags = []
    if with_:
        flags.append("with " + join_words(with_))
    if without:
        flags.append("without " + join_words(without))
    if flags:
        bits.append(" and ".join(flags))
    if where:
        bits.append(" and ".join(where))
    text = " ".join(bits)
    if when:
        text += (", when " if flags or model or where else " when ") + join_words(when)
    text += "."
    # An earlier check the defaults pass says nothing about this launch.
    passed = [
        phrase(a)
        for a in dict.fromkeys(f.passed)
        if a not in exits and not meets_default(a, f.decls)
    ]
    if passed:
        text += (
            " The earlier checks of this validator already passed, so the launch also has "
            f"{join_words(passed)}."
        )
    return text


def captured(f: Facts) -> dict[str, str]:
    """flag -> the message placeholder that prints its value (`self.schedule` in "'{self.schedule}'
    is not supported"), so the words can show what the user passed: the record says
    `--schedule={self.schedule}` and `kverr explain` fills in the value it captured."""
    names = {**name_flags(f.site), **{k: "" for k in exact_values(f.site)}}
    by_dest = {dest_of(fl): fl for fl in f.site.flags}
    out: dict[str, str] = {}
    for part in f.site.template.placeholders:
        node = parse(part.expr or "")
        if isinstance(node, ast.Attribute) and node.attr in by_dest:
            out.setdefault(by_dest[node.attr], part.expr or "")
        elif isinstance(node, ast.Name) and names.get(node.id):
            out.setdefault(names[node.id], part.expr or "")
    return out


_NOT = ("!=", "not in", ">", ">=", "<", "<=")


def _with_values(atoms: list[Atom], f: Facts, shown: dict[str, str]) -> list[str]:
    """Each fact in words; the facts that say what a captured flag's value is not become one
    `--x={expr} (other than a or b)` (the explain view puts the value in)."""
    out: list[str] = []
    done: set[str] = set()
    for a in atoms:
        if a.flag in done:
            continue
        if a.flag not in shown or a.op not in _NOT:
            out.append(_at_default(a, f))
            continue
        done.add(a.flag)
        same = [b for b in atoms if b.flag == a.flag and b.op in _NOT]
        if all(b.op == "!=" for b in same):
            rest = "other than " + " or ".join(show_value(b.value) for b in same)
        else:
            rest = ", ".join(phrase(replace(b, via="")).removeprefix(f"{a.flag} ") for b in same)
        via = f", {a.via}" if a.via else ""
        out.append(f"{a.flag}={{{shown[a.flag]}}} ({rest}{via})")
    return out


def _without(a: Atom, f: Facts) -> bool:
    """`not cfg.x` reads "without --x", unless x defaults to something truthy: then only an
    explicitly empty value gets here."""
    return bool(a.flag) and a.op == "unset" and not _default(a.flag or "", f.decls)


def _at_default(a: Atom, f: Facts) -> str:
    if a.op == "unset":  # a truthy default (see _without)
        return f"{a.flag} set to an empty value"
    if meets_default(a, f.decls) and a.op in ("==", "in", ">", ">=", "<", "<="):
        return f"{phrase(a)} (the default)"
    return phrase(a)


def _noted(a: Atom) -> str:
    return f"{a.flag} ({a.via})" if a.via else a.flag or ""


def _last_per_flag(atoms: list[Atom]) -> list[Atom]:
    """Drop a fact that a later one about the same flag implies or refines
    (`--x set` then `--x > 4`; `--x other than a` then `--x=b`)."""
    out = []
    for i, a in enumerate(atoms):
        later = [b for b in atoms[i + 1 :] if a.flag and b.flag == a.flag]
        if any(b.op == "==" for b in later) or (a.positive and later):
            continue
        out.append(a)
    return out


def common_situations(f: Facts) -> str:
    """The launch a user is in when this shows up, told with what each flag is for (its
    declared help); empty when no flag involved declares help."""
    atoms = list(dict.fromkeys(f.context + f.direct))
    without = [a.flag for a in atoms if a.flag and a.op in ("unset", "is None")]
    using = [a.flag for a in atoms if a.flag and a.flag not in without]
    using += [fl for a in atoms if a.flag is None for fl in a.flags]
    if not (using or without):
        using = list(f.site.flags)
    using = [fl for fl in dict.fromkeys(using) if fl not in without]
    if not any(_help(fl, f.decls) for fl in (*using, *without)):
        return ""
    models = [a for a in atoms if a.flag is None and a.topic == "model" and a.holds]
    text = "Seen when launching"
    if models:
        text += " " + phrase(models[-1])
    if using:
        text += " with " + join_words([_with_help(fl, f.decls) for fl in using])
    if without:
        text += (
            (" but" if using else "")
            + " without "
            + join_words([_with_help(fl, f.decls) for fl in dict.fromkeys(without)])
        )
    return text + "."
