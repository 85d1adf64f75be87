"""Conditions -> words: the launch that reaches the site (`triggerScenarios`) and what each
flag involved is for (`commonSituations`).
"""

from __future__ import annotations

import re

from kverr.records.conditions import (
    Atom,
    join_words,
    phrase,
)
from kverr.records.knowledge.facts import Facts
from kverr.records.knowledge.text import _prose

from kverr.ftypes import FlagDecl


def trigger_scenarios(f: Facts) -> str:
    """The launch that reaches the site, in words: the model, the flags, the platform, then
    any other condition; and the earlier checks of the validator it already passed."""
    atoms = _last_per_flag(list(dict.fromkeys(f.context + f.direct)))
    with_ = [
        phrase(a) for a in atoms if a.positive or (a.flag and a.op not in ("unset", "is None"))
    ]
    without = [a.flag for a in atoms if a.flag and a.op in ("unset", "is None")]
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
    passed = [phrase(a) for a in dict.fromkeys(f.passed)]
    if passed:
        text += (
            " The earlier checks of this validator already passed, so the launch also has "
            f"{join_words(passed)}."
        )
    return text


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


def _help(flag: str, decls: dict[str, FlagDecl]) -> str:
    """The first sentence of a flag's help, as a lower-case clause."""
    d = decls.get(flag)
    if not d or not d.help:
        return ""
    text = re.sub(r"^[fr]?['\"]", "", d.help.strip())  # an f-string help kept its prefix
    text = _prose(re.split(r"(?<=[\w)])\.\s+(?=[A-Z])", text, maxsplit=1)[0]).rstrip(".")
    if text[:1].isupper() and not text[1:2].isupper():
        text = text[0].lower() + text[1:]
    return text


def _with_help(flag: str, decls: dict[str, FlagDecl]) -> str:
    text = _help(flag, decls)
    return f"{flag} ({text})" if text else flag
