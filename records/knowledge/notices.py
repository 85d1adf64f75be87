"""Notices: a warning or an info line is expected behaviour, not an error to fix.

What helps is what the code did instead ("<product> sets --max-requests to 48 for this launch",
the product named by the profile) and how to make that choice yourself so the notice goes away ("Pass --max-requests yourself").
Giving up the feature the launch asked for (dropping speculative decoding because it reset
--max-requests) is never the answer. What the code did comes from the flags it assigns in
the notice's own branch (Binding "assigned" after the innermost guard, and "sets").
"""

from __future__ import annotations

import ast
import re

from kverr.extractor.pysource import NOT_LITERAL, expr_or_none, literal
from kverr.records.conditions import Atom, dest_of, join_words, phrase, show_value
from kverr.records.knowledge.facts import (
    _BOOL_OR_NONE,
    Facts,
    holds_for,
    sample_value,
    takes_value,
)


def is_notice(f: Facts) -> bool:
    """A warning or info line that is not a deprecation (those carry their own advice)."""
    return f.site.severity in ("warning", "info") and "deprecat" not in f.literal.lower()


def chosen(f: Facts) -> list[tuple[str, str]]:
    """(flag, value source) the code assigns in the site's branch, in program order."""
    guards = [g.line for g in f.site.guards if g.kind not in ("early-exit", "assert")]
    inner = max(guards, default=0)
    out: dict[str, str] = {}
    for b in f.site.bindings:
        if b.flags and b.value and (b.kind == "sets" or (b.kind == "assigned" and b.line > inner)):
            out.pop(b.flags[0], None)
            out[b.flags[0]] = b.value
    return list(out.items())


def did(f: Facts) -> str:
    """What the code did, as one sentence; "" when it assigned no flag."""
    parts = [_did(flag, value, f) for flag, value in chosen(f)]
    parts = [p for p in parts if p]
    return f"{f.profile.product} {join_words(parts)} for this launch." if parts else ""


def _did(flag: str, value: str, f: Facts) -> str:
    lit = literal(value)
    if lit is True:
        return f"turns {flag} on"
    if lit is False:
        return f"turns {flag} off"
    if lit is None and value.strip() == "None":
        return f"clears {flag}"
    if lit is not NOT_LITERAL:
        return f"sets {flag} to {show_value(lit)}"
    member = _MEMBER.fullmatch(value.strip())
    if member:  # `CUDAGraphMode.NONE`: the name a launch writes for it
        return f"sets {flag} to {member.group(1)}"
    other = _flag_read(value, f)
    return f"sets {flag} to the value of {other}" if other else f"picks {flag} itself"


_MEMBER = re.compile(r"[A-Z][A-Za-z0-9]*\.([A-Z][A-Z0-9_]*)")  # an enum's member


def solutions(f: Facts) -> list[str]:
    """How to make the code's choice yourself, for each flag it assigns that the notice's
    conditions test (choosing one the conditions do not test would not silence it), and for
    each value-taking flag whose absence is the condition ("falling back to auto discovery")."""
    out = [f"Pass {flag} yourself to choose its value" for flag in _unset(f)]
    for flag, value, atom in choosable(f):
        lit = literal(value)
        if atom.op in ("unset", "is None") and lit is True:
            out.append(
                f"Pass {flag} yourself: {f.profile.product} turns it on for this launch anyway"
            )
        elif atom.op in ("unset", "is None"):
            used = (
                f" ({f.profile.product} uses {show_value(lit)} otherwise)" if showable(lit) else ""
            )
            out.append(f"Pass {flag} yourself to choose its value{used}")
        elif lit in (False, None) and atom.positive:
            out.append(f"Leave out {flag}: {f.profile.product} turns it off for this launch anyway")
        elif showable(lit) and (arg := _arg(flag, lit, f)):
            out.append(f"Pass {arg} yourself: the value {f.profile.product} uses here")
    return out


NOTHING = "Nothing to change"


def nothing_to_change(f: Facts) -> str:
    """The advice for a notice no choice of yours silences: it only says what the code does
    (the record's fix search, too, finds only giving the feature up). "" for a notice that
    points at something to change outside the launch: its message names a likely cause
    ("Some GPUs may be occupied by other processes"), or it fires on a comparison of values
    measured at run time (free memory against a share of it), which the machine's state, not
    the launch, decides."""
    done = did(f).rstrip(".")
    if done:
        return f"{NOTHING}: {done}"
    atoms = (*f.context, *f.direct)
    if _SUSPECTS.search(f.literal) or consequence(f.literal) or any(map(_measured, atoms)):
        return ""  # ("may cause the engine to crash": something to change after all)
    when = _one_per_flag([a for a in atoms if (a.flag and a.positive) or a.topic in _WHERE])
    if when:
        return f"{NOTHING}: {f.profile.product} reports this {_launches(when)} and goes on"
    return ""  # nothing the launch could say about it: no advice at all, not a stock line


def _one_per_flag(atoms: list[Atom]) -> list[Atom]:
    """One fact per option, the one that says most (`--x=a` over `--x set`), in first order:
    "with --x set and --x" says one thing twice."""
    best: dict[object, Atom] = {}
    for a in atoms:
        key = a.flag or id(a)
        if key not in best or best[key].only_given:
            best[key] = a
    return list(best.values())


def consequence(sentence: str) -> bool:
    """A sentence that says what goes wrong ("Enabling this manually may cause the engine to
    crash"), without runtime values: an explanation even where it starts as an action does."""
    return (
        bool(_CONSEQUENCE.search(sentence)) and "{" not in sentence and len(sentence.split()) >= 6
    )


# What goes wrong with the refused launch, said in the message's first sentence (which is
# otherwise the refusal itself, no explanation) or a later one
_CONSEQUENCE = re.compile(
    r"\b(?:is unstable|produces? (?:incorrect|wrong|garbage)|(?:may|can|will|would|could)"
    r"(?: likely)? (?:lead to|cause|result in|produce|crash|hang|corrupt|deadlock)|"
    r"(?:leads|led) to (?:an? )?(?:error|crash|hang|incorrect|wrong))",
    re.I,
)


_WHERE = ("model", "platform", "hardware", "env")
# A message that guesses at a cause ("Some GPUs may be occupied by other processes", "this
# will likely lead to an error") names something to look at, not expected behaviour; a
# consequence it only hedges ("pages may be padded to 64 tokens") is what the code does.
_SUSPECTS = re.compile(r"\b(?:may|might|could) be \w+ by\b|\b(?:probably|possibly|likely)\b", re.I)


def _measured(a: Atom) -> bool:
    """A condition in code that orders two values the code computes (`free < total * 0.9`):
    no flag, platform or model fact, and no literal on either side. (An equality of two
    locals is more often two settings the code picked, `prefill_backend != decode_backend`.)"""
    if a.flag or a.flags or a.topic:
        return False
    node = expr_or_none(a.text)
    if node is None:
        return False
    if not (isinstance(node, ast.Compare) and all(isinstance(o, _ORDER) for o in node.ops)):
        return False
    sides = (node.left, *node.comparators)
    return all(literal(ast.unparse(x)) is NOT_LITERAL for x in sides)


_ORDER = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)


def _launches(atoms: list[Atom]) -> str:
    """The launches a notice reports on, as one phrase: options and the model after "with",
    a platform after "on", anything else (a variable set) as a clause after "when", so that
    "with APP_X is not enabled" or "with on CUDA" is never written."""
    nouns, places, clauses = [], [], []
    for a in atoms:
        words = phrase(a)
        if a.flag or a.topic == "model":
            nouns.append(words)
        elif words.startswith(("on ", "not on ")):
            places.append(words)
        else:
            clauses.append(words)
    nouns, places, clauses = (list(dict.fromkeys(x)) for x in (nouns, places, clauses))
    # (the platform first: "for launches on ROCm with A and B", never "with A, on ROCm and B")
    head = "for launches" if nouns or places else ""
    head += " " + join_words(places) if places else ""
    head += " with " + join_words(nouns) if nouns else ""
    if not clauses:
        return head
    return (f"{head}, when " if head else "when ") + join_words(clauses) + ","


def example_after(f: Facts, before: list[str]) -> list[str] | None:
    """`before` with the code's choices made explicit; None when no choice silences it."""
    after = list(before) + [f"{flag}={sample_value(flag, f.decls, f.docs)}" for flag in _unset(f)]
    for flag, value, atom in choosable(f):
        lit = literal(value)
        mine = [a for a in after if a == flag or a.startswith(flag + "=")]
        if lit in (False, None) and atom.positive:
            after = [a for a in after if a not in mine]
        elif lit is True and atom.op in ("unset", "is None"):
            after.append(flag)
        elif showable(lit) and lit is not True and (arg := _arg(flag, lit, f)):
            after = [a for a in after if a not in mine] + [arg]
    return after if after != before else None


def _arg(flag: str, value: object, f: Facts) -> str | None:
    """`flag` given `value` as the command line spells it; None when it cannot. A switch takes
    no value (argparse rejects `--async-scheduling=False`): True is the bare flag, False its
    `--no-` form where the flag has one (BooleanOptionalAction, or a `bool | None` field, which
    only such an action can leave unset)."""
    decl = f.decls.get(flag)
    if "." in flag and isinstance(value, bool):
        return f"{flag}={str(value).lower()}"  # a JSON option's field: a JSON value
    if decl is None or takes_value(decl) or "." in flag:
        return f"{flag}={show_value(value)}"
    if value is True:
        return flag
    kind = (decl.type or "").replace("Optional[", "").strip("]")
    negatable = "BooleanOptional" in (decl.action or "") or (
        not decl.action and _BOOL_OR_NONE.fullmatch(kind) is not None
    )
    return "--no-" + flag.removeprefix("--") if value is False and negatable else None


def _unset(f: Facts) -> list[str]:
    """Value-taking flags the notice fires without (`if self.x is None: <pick one>`) whose
    assignment the extractor does not see; switches are left alone (turning a feature on to
    silence a notice is no fix)."""
    if chosen(f):
        return []  # the code's own choice is what to make explicit
    return list(
        dict.fromkeys(
            a.flag
            for a in f.direct
            if a.flag and a.op in ("unset", "is None") and takes_value(f.decls.get(a.flag))
        )
    )


def choosable(f: Facts) -> list[tuple[str, str, Atom]]:
    """(flag, value, the condition on it) for each flag the code assigns that a condition of
    the notice tests, when choosing that value yourself makes the condition false (setting
    `--x=auto` yourself does not silence a notice that fires on `--x == "auto"`)."""
    tested = {a.flag: a for a in (*f.context, *f.direct) if a.flag}
    out = []
    for flag, value in chosen(f):
        atom, lit = tested.get(flag), literal(value)
        if atom is not None and (lit is NOT_LITERAL or not holds_for(atom, lit)):
            out.append((flag, value, atom))
    return out


def showable(value: object) -> bool:
    """A value worth writing on a command line."""
    return value is not NOT_LITERAL and value is not None and not isinstance(value, (dict, set))


def _flag_read(value: str, f: Facts) -> str | None:
    """`self.tp_size` -> "--tp-size" when the value is a plain read of a declared flag."""
    m = re.fullmatch(r"\w+\.(\w+)", value.strip())
    if not m:
        return None
    for flag in f.decls:
        if dest_of(flag) == m.group(1):
            return flag
    return None
