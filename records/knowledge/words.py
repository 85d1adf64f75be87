"""Conditions -> words: the launch that reaches the site (`triggerScenarios`), and where users
meet the check (`commonSituations`: the models and platforms its guards test, how the
revision's docs, tests and CI launch its feature).
"""

from __future__ import annotations

import re

from kverr.records.conditions import Atom, join_words, phrase, show_value
from kverr.records.knowledge import docs, earlier
from kverr.records.knowledge.facts import (
    Facts,
    _takes_value,
    flag_default,
    in_files,
    meets_default,
)
from kverr.records.knowledge.text import feature_flags, model_option


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
    with_ = _with_values(
        [a for a in atoms if a.flag and not _without(a, f) and a.op != "is None"], f
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
    # a check each served request runs: the launch, if the words name one, is the server's
    request = served(f)
    bits = ["Serving a request after launching" if request else "Launching"]
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
    if len(bits) == 1 and request:
        bits = ["Serving a request"]  # (no word of the launch: "after launching" says nothing)
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
    # what the phases before the check did to the flags it reads changes who reaches it
    return " ".join([text, *earlier.sentences(f)])


def served(f: Facts) -> bool:
    """Whether the check runs for each request the server takes, not at launch (the profile's
    `request_checks`: the input validation of a tokenizer manager or an OpenAI server)."""
    function = (f.site.function or "").rpartition(".")[2]
    return any(
        in_files(f.site.file, (path,)) and in_files(function, names)
        for path, names in f.profile.request_checks
    )


def _with_values(atoms: list[Atom], f: Facts) -> list[str]:
    """Each fact in words; the facts that a flag is not one value or another become one
    `--x other than a or b`."""
    out: list[str] = []
    done: set[str] = set()
    for a in atoms:
        if a.flag in done:
            continue
        same = [b for b in atoms if b.flag == a.flag and b.op == "!="]
        if a.op != "!=" or len(same) < 2:
            out.append(_at_default(a, f))
            continue
        done.add(a.flag or "")
        via = f" ({a.via})" if a.via else ""
        out.append(f"{a.flag} other than {' or '.join(show_value(b.value) for b in same)}{via}")
    return out


def _without(a: Atom, f: Facts) -> bool:
    """`not cfg.x` reads "without --x", unless x defaults to something truthy: then only an
    explicitly empty value gets here."""
    return bool(a.flag) and a.op == "unset" and not flag_default(a.flag or "", f.decls)


def _at_default(a: Atom, f: Facts) -> str:
    if a.op == "unset":  # a truthy default (see _without)
        return f"{a.flag} set to an empty value"
    met = meets_default(a, f.decls)
    if met and a.op in ("==", "in", ">", ">=", "<", "<="):
        return f"{phrase(a)} (the default)"
    if met and a.op in ("set", "is not None"):
        # "with --chunked-prefill-size set" would read as a choice the user made
        return f"{a.flag} ({show_value(flag_default(a.flag or '', f.decls))} by default)"
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
    """Where users meet this check, from evidence only: the model family and platform its
    guards test, and how the revision's own docs, tests and CI launch its feature (the
    options set with it, the values given, the models served); "" when that is thin."""
    exprs = [a for a in (*f.context, *f.direct) if a.flag is None]
    models = [phrase(a) for a in exprs if a.topic == "model" and a.holds][-1:]
    where = [phrase(a) for a in exprs if a.topic in ("platform", "hardware") and a.holds]
    where = list(dict.fromkeys(where))  # ("not on CUDA" names no platform a user is on)
    bits = []
    if models or where:
        bits.append(("It comes up serving " + models[0] if models else "It comes up")
                    + (" " + " and ".join(where) if where else "") + ".")  # fmt: skip
    seen = _launches(f)
    if seen:
        bits.append(seen)
    return " ".join(bits)


def _launches(f: Facts) -> str:
    """How the revision's launches use the check's feature: "In this release's docs and tests,
    --enable-dp-attention is set in 179 launches, most often with --moe-a2a-backend and
    --dp-size, serving DeepSeek-V3 and DeepSeek-V3.2-Exp." A value the check tests narrows
    it to launches with that value. "" when fewer than two launches, or nothing goes with it."""
    # Only options the check wants given: launches that set one it wants left out are no
    # evidence of where it comes up.
    atoms = f.context + f.direct
    wanted = {a.flag for a in atoms if a.flag and a.op not in ("unset", "is None")}
    wanted |= {fl for a in atoms if a.flag is None for fl in a.flags}
    model = model_option(f.profile)
    for flag in [fl for fl in feature_flags(f) if fl != model and fl in wanted][:3]:
        value = _value_tested(flag, f)
        text = docs.seen_in_launches(
            docs.usage(flag, f.decls, f.docs, value),
            f"{flag} {value}" if value else flag,
            values=value is None and _takes_value(f.decls.get(flag)),
        )
        if text:
            return text
    return ""


def _value_tested(flag: str, f: Facts) -> str | None:
    """The one value the check tests `flag` for (`--attention-backend == 'cutlass_mla'`, also
    inside an either-or), when it tests one: the launches that matter are those with it."""
    found = {
        str(a.value)
        for a in f.context + f.direct
        if a.flag == flag and a.op == "==" and isinstance(a.value, str)
    }
    for a in f.context + f.direct:
        if a.flag is None:
            found.update(
                m.group(1) for m in re.finditer(re.escape(flag) + r" == '([^']+)'", a.text)
            )
    return found.pop() if len(found) == 1 else None
