"""Conditions -> words: the launch that reaches the site (`triggerScenarios`), and where users
meet the check (`commonSituations`: what the options' defaults already give, and the
revision's own launches, in its docs, tests and CI, that meet every condition, else the ones
that make its choices and get past it: the deployments it is about).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from kverr.extractor.sources import matches_any
from kverr.records.conditions import Atom, either_words, join_words, phrase, show_value
from kverr.records.knowledge import docs, earlier
from kverr.records.knowledge.earlier import UNKNOWN
from kverr.records.knowledge.facts import (
    Facts,
    flag_default,
    holds_for,
    known_default,
    meets_default,
    takes_list,
)
from kverr.records.knowledge.text import model_option

from kverr.advice import evaluate
from kverr.ftypes import DocLaunch


def trigger_scenarios(f: Facts) -> str:
    """The launch that reaches the site, in words: the model, the flags, the platform, then
    any other condition; and the earlier checks of the validator it already passed."""
    atoms = _launch_atoms(f)
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
    facts = [a for a in atoms if a.flag]
    when = [_left(a, facts) for a in exprs if a.topic not in ("model", "platform", "hardware")]
    when = [w for w in when if w]
    if not (with_ or without or exprs):
        return ""
    # a check each served request runs: the launch, if the words name one, is the server's
    request = f.served
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
    exits = f.exits
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


def _left(a: Atom, facts: list[Atom]) -> str:
    """A choice of conditions in words, less those the launch's flag facts rule out: with
    `--algo=EAGLE`, "either --algo not EAGLE or X is not enabled" is "X is not enabled"."""
    alts = a.either()
    if len(alts) > 1 and any(_implies(b, p) for b in facts for p in alts):
        return ""  # (with `--backend=auto`, "either --backend not uva or ..." always holds)
    kept = [p for p in alts if not any(_excludes(b, p) for b in facts)]
    if not kept or len(kept) == len(alts):
        return phrase(a)  # (none left: the conditions contradict, as the code has them)
    return either_words([phrase(p) for p in kept])


def _implies(fact: Atom, other: Atom) -> bool:
    """Whether every value of the flag that meets `fact` meets `other`."""
    values = _values(fact) if fact.flag and fact.flag == other.flag else None
    return values is not None and all(holds_for(other, v) is True for v in values)


def _excludes(fact: Atom, other: Atom) -> bool:
    """Whether no value of the flag meets both facts about it."""
    if not (fact.flag and fact.flag == other.flag):
        return False
    if fact.op in ("==", "in"):
        values = _values(fact)
        return values is not None and not any(holds_for(other, v) for v in values)
    return {fact.op, other.op} in _APART


def _values(fact: Atom) -> tuple | None:
    """The values `--x == a` / `--x in (a, b)` allows, None for any other fact."""
    if fact.op not in ("==", "in"):
        return None
    values = fact.value if fact.op == "in" else (fact.value,)
    return values if isinstance(values, tuple) else None


# facts about one flag no value meets together (`unset` and `is not None` do: `--x 0`)
_APART = ({"set", "unset"}, {"set", "is None"}, {"is not None", "is None"})


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
    if met and a.only_given:
        # "with --chunked-prefill-size set" would read as a choice the user made
        return f"{a.flag} ({show_value(flag_default(a.flag or '', f.decls))} by default)"
    return phrase(a)


def _noted(a: Atom) -> str:
    return f"{a.flag} ({a.via})" if a.via else a.flag or ""


def _last_per_flag(atoms: list[Atom]) -> list[Atom]:
    """Drop a fact that a later one about the same flag implies or refines
    (`--x set` then `--x > 4`; `--x other than a` then `--x=b`), a bare `--x set` that a
    fact about its value implies wherever it stands (`--x=fa3` then `--x is not None`), and
    `--x` off where `--x is None` says it is not given at all."""
    out = []
    for i, a in enumerate(atoms):
        same = [b for j, b in enumerate(atoms) if j != i and a.flag and b.flag == a.flag]
        later = [b for b in atoms[i + 1 :] if a.flag and b.flag == a.flag]
        if any(b.op == "==" for b in later):
            continue
        if a.positive and any(a.only_given or not b.only_given for b in later):
            continue
        if a.only_given and any(b.positive and not b.only_given for b in same):
            continue
        if a.op == "unset" and any(b.op == "is None" for b in same):
            continue  # (not given at all says it: "without --x and --x")
        out.append(a)
    return out


def common_situations(f: Facts) -> str:
    """Where users meet this check, from evidence only: what the defaults already give (so a
    launch needs only the rest), and which of the revision's own launches (docs, tests, CI)
    meet every condition the check tests, with the options and models they go with; where
    none does, the deployments it is about (`_deployments`). "" where none of these says more
    than the trigger."""
    atoms = _launch_atoms(f)
    if f.served:
        return ""  # a request's check: what a request sends fires it, not a launch
    phases = earlier.at_check(f) if f.earlier else None  # (read once: launches are many)
    said = met = ""
    if atoms and all(map(_readable, atoms)) and not matches_any(f.site.file, f.profile.launch_path):
        # (a launch-path check reads the running server's state: no launch's words decide it)
        said = _by_default(atoms, f, phases)
        if said.startswith("Every launch hits"):
            return said  # (every launch of the docs and tests would be counted: no news)
        met = _meeting(atoms, f, phases)
    # (no launch hits it: the ones that make its choices say how deployments get past it)
    return " ".join(filter(None, [said, met or _deployments(atoms, f, phases)]))


_WHERE = ("model", "platform", "hardware")  # conditions a launch's words can be read for


def _readable(a: Atom) -> bool:
    """A condition a launch decides: a flag fact, a model, platform or environment test, or
    arithmetic over options that kverr can run."""
    if a.flag or a.topic in (*_WHERE, "env"):
        return True
    probe = {fl: 1 for fl in a.flags}  # (any number: only whether it runs at all matters)
    return a.topic in ("", "flags") and bool(a.flags) and evaluate(a.text, probe) is not None


def _launch_atoms(f: Facts) -> list[Atom]:
    """The conditions a launch must meet to reach the site: the early exits on the way, the
    enclosing ifs and the direct test, one (the last) per flag."""
    return _last_per_flag(list(dict.fromkeys(f.exits + f.context + f.direct)))


Phases = Callable[[Callable[[str], object]], dict[str, object]] | None  # earlier.at_check


def _reads(la: DocLaunch | None, f: Facts, phases: Phases) -> Callable[[str], object]:
    """flag -> what the check reads of it for the launch `la` (None: one that sets nothing):
    its given value, else its declared default, each as the phases before the check leave
    it; UNKNOWN where that is not known."""

    def given(flag: str) -> object:
        raw = docs.given(la, flag, f.decls) if la else None
        if raw is None:
            return _declared(flag, f)
        if docs.unresolved(raw) or takes_list(f.decls.get(flag)):
            return UNKNOWN  # (a launch is read one word per option: a list's is its first)
        return _typed(raw)

    changed = phases(given) if phases else {}
    return lambda flag: changed[flag] if flag in changed else given(flag)


def _declared(flag: str, f: Facts) -> object:
    d = known_default(flag, f.decls)
    return UNKNOWN if d is None else d


def _holds(a: Atom, reads: Callable[[str], object], f: Facts) -> bool:
    """Whether a launch whose options read as `reads` makes the condition true; unknown is
    false (a value the code picks, an expression kverr cannot run)."""
    if a.topic == "env":  # a launch's options set no variable: only the unset state holds
        return phrase(a).endswith(("is not set", "is not enabled"))
    if a.via:
        return False  # read through a local the code computes: not the launch's value
    if a.flag:
        value = reads(a.flag)
        return value is not UNKNOWN and holds_for(a, value)
    values = {fl: reads(fl) for fl in a.flags}
    if UNKNOWN in values.values():
        return False
    got = evaluate(a.text, values)  # type: ignore[arg-type]
    return got is not None and bool(got) == a.holds


def _by_default(atoms: list[Atom], f: Facts, phases: Phases) -> str:
    """ "Any launch with --disable-radix-cache hits it: --chunked-prefill-size is 8192 by
    default." Said only when the defaults give part of the check; otherwise the trigger says
    it all."""
    # conditions every launch meets unless it changes an option: the defaults, as the check
    # reads them, give them
    reads = _reads(None, f, phases)
    tests = [a for a in atoms if a.topic not in _WHERE]
    free = [a for a in tests if _holds(a, reads, f)]
    if not free:
        return ""
    picked = [a for a in tests if a not in free]
    if {*_flags_of(free)} & {*_flags_of(picked)}:
        return ""  # (a default the launch must change cannot also be what gives the rest)
    # (a flag's fact reads "with --x=1", any other condition a clause: "when --a is below --b")
    chosen = [phrase(a) for a in picked if a.flag]
    clauses = [phrase(a) for a in picked if not a.flag]
    where = _where(atoms)
    flags = dict.fromkeys(_flags_of(free))
    states: dict[str, list[str]] = {}
    for fl in flags:
        states.setdefault(_default_state(reads(fl)), []).append(fl)
    defaults = join_words(
        [
            f"{join_words(fls)} {'is' if len(fls) == 1 else 'are'} {state}"
            for state, fls in states.items()
        ]
        + [f"{phrase(a)} by default" for a in free if a.topic == "env"]
    )
    if not (chosen or clauses):
        return f"Every launch{where} hits it with the default options: {defaults}."
    given = f" with {join_words(chosen)}" if chosen else ""
    if clauses:
        given += f"{',' if chosen else ''} when {join_words(clauses)}{',' if chosen else ''}"
    return f"Any launch{where}{given} hits it: {defaults}."


def _flags_of(atoms: list[Atom]) -> list[str]:
    return [fl for a in atoms for fl in (a.flag, *a.flags) if fl]


def _where(atoms: list[Atom]) -> str:
    """ " of an Olmo2ForCausalLM model on an SM100 (Blackwell) GPU" from the launch's model and
    platform conditions."""
    models = [phrase(a) for a in atoms if a.topic == "model" and a.flag is None][-1:]
    return (" of " + models[0] if models else "") + _platform(atoms)


def _platform(atoms: list[Atom]) -> str:
    return "".join(" " + phrase(a) for a in atoms if a.topic in ("platform", "hardware"))


def _on(a: Atom) -> bool:
    return a.holds and not phrase(a).startswith("not ")


def _default_state(value: object) -> str:
    """How the check reads an option the launch does not give: "8192 by default"."""
    if isinstance(value, bool):
        return "on by default" if value else "off by default"
    return "unset by default" if value is None else f"{show_value(value)} by default"


def _meeting(atoms: list[Atom], f: Facts, phases: Phases) -> str:
    """The revision's own launches that meet every condition of the check, in one sentence:
    how many, where, the options and models they go with. A model condition is met by a
    launch whose model names one of its architectures; a platform's is not written in
    launches, so the sentence names it."""
    if f.docs is None or not all(map(_on, (a for a in atoms if a.topic in _WHERE[1:]))):
        return ""  # ("not on CUDA" names no platform a launch is on)
    tests = [a for a in (*atoms, *f.passed) if a.topic not in _WHERE]
    models = [a for a in atoms if a.topic == "model" and a.flag is None]
    archs = [_ARCH.findall(a.text) for a in models]
    if not all(archs):
        return ""  # "a hybrid model": no architecture to read a launch's model for
    if not (any(not _other_than(a) for a in models) or any(_chosen(a) for a in tests)):
        return ""  # only conditions most launches meet ("--quantization not fp8"): no evidence
    found = [
        la
        for la in docs.launches(f.docs)
        if all(_serves_as(la, a, names) for a, names in zip(models, archs, strict=True))
        and _meets(tests, _reads(la, f, phases), f)
    ]
    if not found:
        return ""
    where = _platform(atoms)
    flags = {fl for a in tests for fl in (a.flag, *a.flags) if fl}
    return docs.met_by(found, flags, f.decls, f.docs, ("hits", "hit"), f" it{where}")


def _deployments(atoms: list[Atom], f: Facts, phases: Phases) -> str:
    """The deployments of the check's feature, as the revision's own launches show them: the
    launches that make every choice the check needs (the options it needs given, the model it
    needs served) and give what it asks for instead of what it refuses, else those that make
    the choices, with the options and models they go with. ("As this check asks": a launch
    with `--attention-backend dual_chunk_flash_attn` serving Qwen2.5-7B-Instruct-1M shows which
    deployment a check refusing another backend for such a model is about.) "" unless two
    launches do and they say more than the choice: what goes with it or what they serve."""
    if f.docs is None:
        return ""
    models = [a for a in atoms if a.topic == "model" and a.flag is None and not _other_than(a)]
    archs = [_ARCH.findall(a.text) for a in models]
    # ("a model with dual_chunk_attention_config": no architecture a launch's model is read
    # for; what the check asks of such a model still tells its launches)
    unread = [a for a in atoms if a.topic not in _WHERE and not (a.flag or a.flags or _readable(a))]
    vague = not all(archs) or any(map(_of_model, unread))
    models, archs = [m for m, a in zip(models, archs, strict=True) if a], [a for a in archs if a]
    if not all(map(_of_model, unread)):
        return ""  # (a condition on no option, which no launch shows, may rule them all out)
    # the choices: what a launch must give for the check to apply (not what the defaults
    # already give: every launch makes that one)
    # (either way: as declared, which a launch's own words are read against, and as the check
    # reads it, after the code before it)
    unset = (_reads(None, f, None), _reads(None, f, phases))

    def choice(a: Atom) -> bool:
        given = a.topic not in _WHERE and _chosen(a) and _readable(a)
        return given and not any(_holds(a, reads, f) for reads in unset)

    made = [a for a in atoms if choice(a)]
    # what the check asks for: its test (the last, as the prevention tip reads it) turned round
    # (an error's: a notice asks nothing, it adjusts; and only with the check's choices or
    # model, which say whose deployment it is)
    tested = [a for a in f.direct if a.flag and not a.via]
    error = f.site.severity in ("error", "critical")
    asked = [tested[-1].negated()] if tested and error and (made or models or vague) else []
    asked = [a for a in asked if choice(a)]
    if vague and not made and not models and not any(_named_value(a) for a in asked):
        # (what the model's config decides, told by a value its launches give, such as the
        # one backend those models need; a switch many launches give says nothing of them)
        return ""
    if not (made or models or asked):
        return ""  # (a deployment is told by an option it sets or the model it serves)
    if not made and not asked and not all(a.topic in _WHERE or _readable(a) for a in atoms):
        return ""  # (a model's launches, where a condition no launch shows may rule out all)
    served = " " + phrase(models[-1]) if models else ""
    launches = [la for la in docs.launches(f.docs) if all(_serves(la, n) for n in archs)]
    for shown, how in ((made + asked, ", as this check asks"), (made, "")):
        if (how and not asked) or (vague and not how) or not (shown or models):
            continue
        # (what the launch gives: "runs with" says so, whatever the code makes of it first)
        found = [la for la in launches if _meets(shown, _reads(la, f, None), f)]
        if len(found) < (1 if how else 2):  # (one launch giving what it asks says whose it is)
            continue
        # (what the launches serve is said apart; the option naming it goes with every launch)
        flags = {fl for a in shown for fl in (a.flag, *a.flags) if fl} | {model_option(f.profile)}
        with_ = " with " + join_words([phrase(a) for a in shown]) if shown else ""
        said = docs.met_by(found, flags, f.decls, f.docs, ("runs", "run"), served + with_ + how)
        if "most often with" in said or ", serving" in said:
            return said
    return ""


def _named_value(a: Atom) -> bool:
    """An option given a named value (`--attention-backend=dual_chunk_flash_attn`), not a
    switch turned on."""
    return a.op in ("==", "in") and not isinstance(a.value, bool)


def _of_model(a: Atom) -> bool:
    """A test of what the served model's config holds (`hf_config.dual_chunk_attention_config`
    set): a launch names its model, not that."""
    return bool(re.search(r"\b(?:hf|hf_text|model)_config\b", a.text))


def _meets(tests: list[Atom], reads: Callable[[str], object], f: Facts) -> bool:
    return all(_holds(a, reads, f) for a in tests)


def _chosen(a: Atom) -> bool:
    """A condition a launch meets only by giving an option: set, a value, a bound, arithmetic."""
    if a.flag:
        return a.op in ("set", "==", "in", "is not None", ">", ">=", "<", "<=")
    return bool(a.flags) and a.topic != "env"


_ARCH = re.compile(r"""['"]([A-Z]\w+?)(?:For\w+|Model)?['"]""")


def _other_than(a: Atom) -> bool:
    # (`arch not in [...]` holding, or `arch in [...]` failing: the words say which)
    return phrase(a).startswith("a model other than")


def _serves_as(la: DocLaunch, a: Atom, archs: list[str]) -> bool:
    """Whether the launch's model meets the model condition: one of its architectures, or,
    for "a model other than …", a model the launch names that is none of them."""
    if _other_than(a):
        return bool(la.model) and not _serves(la, archs)
    return _serves(la, archs)


def _serves(la: DocLaunch, archs: list[str]) -> bool:
    """The launch's model is one of these architectures, as its name spells the family
    ("Olmo2" in "OLMo-2-1124-7B", "Qwen3Next" in "Qwen3-Next-80B-A3B")."""
    model = re.sub(r"[^a-z0-9]", "", la.model.lower())
    return bool(model) and any(re.sub(r"[^a-z0-9]", "", a.lower()) in model for a in archs)


def _typed(raw: str) -> object:
    """A launch's value as the parser would give it: a switch is True, a number a number."""
    if raw == "":
        return True
    for kind in (int, float):
        try:
            return kind(raw)
        except ValueError:
            pass
    return raw
