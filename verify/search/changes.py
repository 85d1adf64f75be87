"""The order the fix search tries candidate changes in, and a change in words: what counts
as keeping the user's options, giving a feature up, moving a value, a placeholder.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from kverr.records.conditions import Atom
from kverr.records.knowledge.facts import holds_for, is_json
from kverr.verify.sandbox.solve import ENV
from kverr.verify.search import candidates

from kverr.ftypes import FixChange, FlagDecl, Launch


def rank(found: Sequence[FixChange], before: Launch, message: str = "") -> list[FixChange]:
    """The order fixes are tried in, so that the first that verifies is the smallest: one that
    keeps every option the user set (adds or changes another) before one that changes an
    option the launch set, before one that gives up a feature the check is about (an option of
    an enclosing condition), removal of a feature flag last; fewer edits first; then the
    message's advice before derived values.

    An option the launch set, moved to the value the run's `message` printed for it (the
    limit it names: `--max-model-len 32768` for "greater than the derived max_model_len
    (32768)"), keeps its feature, and comes before any environment variable that lifts the
    check (`VLLM_ALLOW_LONG_MAX_MODEL_LEN=1`, which the check warns against).

    Between two changes of options the launch set, the one to the option whose value the
    message printed comes first, with the message's own advice: "Invalid backend for
    piecewise compilation: other" is fixed by another backend, not by turning the compilation
    mode the check is under off."""
    printed = {c for c in found if _to_printed(c, before, message)}
    blamed = _blamed(before, message)

    def key(c: FixChange) -> tuple:
        # `--x` where the launch says `--no-x` changes the user's choice as much as a value
        names = {m for _, name, _ in c.edits for m in (name, _negated(name))}
        # The message's "use --y v instead": v moves from the option the launch set to --y,
        # which gives nothing up.
        moved = c.source == "advice" and _moves(c, before)
        # Emptying an option the launch sets (`--x ''`) gives it up as much as removing it.
        gives_up = any(
            (op == "drop" or (op == "set" and v == "")) and before.has(n) for op, n, v in c.edits
        ) or undoes(FixChange(tuple(e for e in c.edits if e[0] == "env"), c.source), before)
        return (
            c.source == "remove" or (gives_up and not moved),
            c.source == "feature" and c not in printed,
            bool(printed) and any(op == "env" for op, _, _ in c.edits),
            any(before.has(n) for n in names) and not moved,
            not (names & blamed or c.source == "advice"),  # (the message's own advice too)
            len(c.edits),
            is_metavar(c),  # the option's name in capitals says less than a real value
            any(op == "set" and v == "" for op, _, v in c.edits),  # `--x ''`: removing says it
            candidates._RANK.get(c.source, 9),
        )

    return sorted(found, key=key)


def _negated(flag: str) -> str:
    """`--no-x` for `--x` and `--x` for `--no-x`: the two spellings of one switch."""
    return "--" + flag[5:] if flag.startswith("--no-") else "--no-" + flag[2:]


def _blamed(before: Launch, message: str) -> set[str]:
    """The options of the launch whose value the message prints (a word of two characters
    or more, whole: "other" in "...: other", not the "1" of "tp_size=1")."""
    return {
        name
        for name, value in before.args
        if isinstance(value, str)
        and len(value) > 1
        and re.search(rf"(?<![\w.-]){re.escape(value)}(?![\w.-])", message)
    }


def _to_printed(c: FixChange, before: Launch, message: str) -> bool:
    """`c` sets one option the launch set to a number the message printed."""
    if not message or len(c.edits) != 1:
        return False
    op, name, value = c.edits[0]
    if op != "set" or not before.has(name) or not isinstance(value, str):
        return False
    return (
        re.fullmatch(r"\d+", value) is not None
        and re.search(rf"(?<![\w.]){value}(?:\.0)?(?![\w.])", message) is not None
    )


def is_metavar(c: FixChange) -> bool:
    """A value of the change is only its option's name in capitals (EPLB_ALGORITHM)."""
    return any(
        op == "set" and isinstance(v, str) and v == n.lstrip("-").replace("-", "_").upper()
        for op, n, v in c.edits
    )


def _moves(c: FixChange, before: Launch) -> bool:
    """A value dropped from one option the launch sets and given to another."""
    dropped = {before.value(n) for op, n, _ in c.edits if op == "drop" and before.has(n)}
    return any(op == "set" and v in dropped and v is not None for op, _, v in c.edits)


def undoes(c: FixChange, launch: Launch) -> bool:
    """Drops or empties an option the launch set, or unsets or changes an environment
    variable it set (`FAKE_TURBO=true` where the code wants "1" gives turbo up as surely as
    unsetting it)."""
    return any(
        (op == "env" and any(k == n and old != v for k, old in launch.env))
        or (op != "env" and launch.has(n) and (op == "drop" or v in ("", None)))
        for op, n, v in c.edits
    )


def breaks(c: FixChange, atoms: Sequence[Atom]) -> bool:
    """Sets an option that one of `atoms` is about to a value that makes it false: the check
    would no longer be the one reached (`--nnodes 1` where the record needs nnodes > 1)."""
    facts = [a for a in atoms if a.flag]
    for op, name, value in c.edits:
        if op != "set" or value is None:
            continue
        given = _literal(value)
        if any(a.flag == name and not holds_for(a, given) for a in facts):
            return True
    return False


def _literal(value: object) -> object:
    """A command-line value as the code compares it: 2, 0.5, true, or the text itself."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


def solved_edit(
    flag: str, value: Any, decls: Mapping[str, FlagDecl]
) -> tuple[str, str, str | None]:
    if flag.startswith(ENV):  # an environment variable the guard reads (solve.py)
        return ("env", flag[len(ENV) :], None if value is None else str(value))
    if isinstance(value, dict) or (isinstance(value, list) and is_json(decls.get(flag))):
        return ("set", flag, json.dumps(value))  # a JSON option's value, as JSON text
    switch = candidates.is_switch(flag, dict(decls))
    if value is True and switch:
        return ("set", flag, None)
    if value is False and switch:
        # A switch whose default is not off (None: the code decides) is turned off by its
        # negative form (`--no-enable-x`), not by leaving it out.
        negative = _negative(flag, decls)
        return ("set", negative, None) if negative else ("drop", flag, None)
    if value is None:
        return ("drop", flag, None)
    if isinstance(value, bool):
        return ("set", flag, str(value).lower())
    if isinstance(value, (list, tuple)):
        if not value:
            d = decls.get(flag)
            if d is not None and "." in d.dest:  # a JSON option's field takes [] as written
                return ("set", flag, "[]")
            return ("drop", flag, None)  # an empty list is the option left out
        return ("set", flag, tuple(str(v) for v in value))  # type: ignore[return-value]
    return ("set", flag, str(value))


def _negative(flag: str, decls: Mapping[str, FlagDecl]) -> str | None:
    """`--no-x` for a switch `--x` whose default is not False, when the parser declares it."""
    d = decls.get(flag)
    if d is None or d.default == "False":
        return None
    name = "--no-" + flag[2:]
    other = decls.get(name)
    return name if other is not None and other.dest == d.dest and name != flag else None


def describe(change: FixChange) -> str:
    """A change in words: "--tp-size 2 and --moe-dp-size 2", "removing --x", "SGLANG_X=1"."""
    parts = []
    for op, name, value in change.edits:
        if isinstance(value, (tuple, list)):
            value = " ".join(value)
        if op == "set":
            parts.append(f"{name} {value}" if value is not None else name)
        elif op == "drop":
            parts.append(f"removing {name}")
        elif op == "env":
            parts.append(f"{name}={value}" if value is not None else f"unsetting {name}")
        elif op == "model":
            parts.append(f"a {value} model")
    return " and ".join(parts)
