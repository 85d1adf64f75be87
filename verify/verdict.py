"""The verdict on a record's fix: the rule that judges a run, and the one type every verdict is.

A raise/assert record fires when the run raised its error class from its own statement (the
innermost frame in the revision's modules lies within the statement's lines) with a message
its pattern matches. A log/warning record fires when the run logged, from its statement, a
message its pattern matches. An argparse record fires when the parser rejected the command
line with a message its pattern finds as explain reads a paste (`prog: error: ` in its
`before` group). The "after" of a fix passes when the run went through the same steps without
raising anything and, for a log record, without logging it.

A record shows a command only when its check passed it: a verified verdict carries its own
before/after; any other verdict drops the record's derived fix, unless nothing ran that could
have judged it (`keep_fix`), and then it is shown marked not verified.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kverr.records.conditions import or_list
from kverr.records.knowledge.notices import NOTHING
from kverr.verify.harness import Outcome

from kverr.ftypes import FixChange, Launch
from kverr.pattern import compiled

_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Expect:
    """What the record's statement reports, and where it sits in the revision."""

    kind: str  # raise | assert | exit | log | warn | argparse
    error_class: str | None
    pattern: str  # the record's messagePattern ("" when the message has too little text)
    file: str
    line: int
    end_line: int
    program: str = ""  # argparse: the program name argparse prints in front of its error
    # the message's literal text between its values, each whitespace run one space: what a
    # value longer than the pattern's bounded groups capture leaves to compare
    literals: tuple[str, ...] = ()

    @property
    def logs(self) -> bool:
        return self.kind in ("log", "warn")


def _matches(pattern: str, message: str, literals: Sequence[str] = ()) -> bool:
    """The record's pattern finds the message, or (a value longer than the pattern's groups
    take: "Must be one of [...]" with 40 quantization methods) the message holds the
    template's literal text in order."""
    if not pattern:
        return True
    text = _SPACE.sub(" ", message)  # the matcher's own normalisation: each run one space
    try:
        if compiled(pattern).search(text) is not None:
            return True
    except re.error:
        return False
    return bool(literals) and _in_order(literals, text)


def _in_order(parts: Sequence[str], text: str) -> bool:
    at = 0
    for part in parts:
        i = text.find(part, at)
        if i < 0:
            return False
        at = i + len(part)
    return True


def _here(expect: Expect, file: str, line: int) -> bool:
    return file == expect.file and expect.line <= line <= max(expect.end_line, expect.line)


def printed(reason: str, program: str) -> str:
    """The parser's message as argparse prints it (`prog: error: message`), spaces as the
    matcher normalises them."""
    head = f"{program}: error: " if program else ""
    return _SPACE.sub(" ", head + reason).strip()


def rejected_as_recorded(pattern: str, message: str, program: str) -> bool:
    """The record's pattern finds the printed message, the way explain searches a paste, and
    its `before` group holds just the program's `prog: error:` (the answer keeps only the
    project's programs)."""
    try:
        m = compiled(pattern).search(message)
    except re.error:
        return False
    if m is None:
        return False
    before = (m.groupdict().get("before") or "").split()
    return before == ([f"{program}:", "error:"] if program else [])


def fires(outcome: Outcome, expect: Expect) -> bool:
    """The run reported exactly this record."""
    if expect.kind == "argparse":
        return outcome.status == "parse-error" and rejected_as_recorded(
            expect.pattern, printed(outcome.reason, expect.program), expect.program
        )
    if expect.logs:
        return any(
            _here(expect, g.file, g.line) and _matches(expect.pattern, g.message, expect.literals)
            for g in outcome.logs
        )
    if outcome.status != "raised":
        return False
    if expect.error_class and outcome.exc_class != expect.error_class.rsplit(".", 1)[-1]:
        return False
    return _here(expect, outcome.file, outcome.line) and _matches(
        expect.pattern, outcome.message, expect.literals
    )


def passes(outcome: Outcome, expect: Expect) -> bool:
    """The run went through the steps without this record (and, for an error, without any)."""
    return outcome.status == "passed" and not fires(outcome, expect)


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def steady(text: str) -> str:
    """A run's words without what differs from one run to the next (`<function loads at
    0x7f…>` -> `<function loads>`), so a rebuild writes the same reason."""
    return _ADDRESS.sub("", text)


def what_happened(outcome: Outcome) -> str:
    """One clause for a reason: what the run did instead."""
    if outcome.status == "raised":
        where = f" at {outcome.file.rsplit('/', 1)[-1]}:{outcome.line}" if outcome.file else ""
        message = steady(outcome.message).strip()
        text = message.splitlines()[0] if message else ""
        if len(text) > 100:
            text = text[:99] + "…"
        return f"raised {outcome.exc_class}{where}" + (f" ({text})" if text else "")
    if outcome.status == "passed":
        return "passed"
    if outcome.status == "undecidable":
        return f"could not be decided: it reads {outcome.reason}"
    if outcome.status == "parse-error":
        return f"was rejected by the argument parser ({steady(outcome.reason)})"
    return f"{outcome.status}" + (f" ({steady(outcome.reason)})" if outcome.reason else "")


@dataclass(frozen=True)
class Verdict:
    """What the check said of one record's fix, and where it said it."""

    status: str  # verified | unverified | not-applicable
    reason: str = ""  # why not verified ("" when verified)
    platform: str | None = ""  # the platform profile it ran on (None: nothing ran anywhere)
    revision: str | None = ""  # the revision's short sha or label
    model: str = ""  # the model profile a verified fix ran with, when not the default one
    example_fix: str | None = None  # the verified before/after
    solution: str | None = None  # the verified change in words
    keep_fix: bool = False  # nothing ran that could judge the record's own fix: show it
    runs: int = 0
    # no validation step reaches the record's function (the step names who calls it instead)
    unreached: bool = False
    # the run reached the check and no value of a command line fires it: it states an
    # assumption of the code around it, so advice about launch options would be false
    no_launch: bool = False
    # (option, the declared choices that passed in the before's place): what "a value other
    # than A" comes to at this revision (core.Search._judged_choices)
    choices: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # the record's words to leave an option out, where leaving it out still fired the check
    refuted: tuple[str, ...] = ()

    @property
    def verification(self) -> dict[str, Any]:
        """The record's `verification` field."""
        out = {"status": self.status, "platform": self.platform, "revision": self.revision}
        out["reason"] = self.reason
        return {**out, "model": self.model} if self.model else out

    def apply(self, record: dict) -> dict:
        """The record with its verification, and the verified fix in place of the derived one."""
        out = dict(record)
        out["verification"] = self.verification
        if self.example_fix is not None:
            out["exampleFix"] = self.example_fix
        elif not self.keep_fix:
            out["exampleFix"] = ""
        if self.no_launch and record.get("severity") in ("error", "critical"):
            detail = self.reason.removeprefix(f"{NO_LAUNCH}: ")
            if " leaves `" in detail:  # the guard's code is the verification's, not the prose's
                detail = detail.split(" leaves `")[0] + " passes it"
            out["triggerScenarios"] = (
                f"No command line fires this check ({detail}): it states an assumption of the"
                " code around it, and fires only when that code breaks it."
            )
            out["solutions"] = [REPORT]
            out["preventionTips"] = []
        if self.refuted:
            out["solutions"] = [
                s
                for s in out.get("solutions", [])
                if not any(s == r or s.startswith(f"{r} when using ") for r in self.refuted)
            ]
        for flag, ok in self.choices:
            for key, judge in (("solutions", _judged), ("preventionTips", _judged_tip)):
                out[key] = [j for s in out.get(key, []) if (j := judge(s, flag, ok)) is not None]
        if self.solution:
            # A verified change beats "Nothing to change" (what the code alone says of a notice).
            out["solutions"] = [self.solution] + [
                s
                for s in out.get("solutions", [])
                if s != self.solution and not s.startswith(NOTHING)
            ]
        return out


def _judged(solution: str, flag: str, ok: Sequence[str]) -> str | None:
    """A solution that offers "a value other than" the refused ones (records/knowledge/
    fixes.py), as the values that passed in their place; None when none did."""
    if not solution.startswith(
        (f"Set {flag} to a value other than ", f"Use a {flag} value other than ")
    ):
        return solution
    return f"Set {flag} to {or_list(tuple(ok))}" if ok else None


def _judged_tip(tip: str, flag: str, ok: Sequence[str]) -> str | None:
    """A tip to keep `flag` "other than" the refused values (fixes.keep_words), as the values
    that passed in their place; None when none did."""
    found = re.search(rf"\b([Kk])eep {re.escape(flag)} other than .+?(?= when |$)", tip)
    if found is None:
        return tip
    if not ok:
        return None
    verb = "Set" if found.group(1) == "K" else "set"
    return tip[: found.start()] + f"{verb} {flag} to {or_list(tuple(ok))}" + tip[found.end() :]


NO_LAUNCH = "no command line reaches it"
REPORT = (
    "Report it to the project with the whole command line and the version: no launch option"
    " reaches this check, so its cause is in the release, not in the launch"
)


def verified(
    before: Launch,
    after: Launch,
    change: FixChange,
    command: tuple[str, tuple[str, ...]],
    **where: Any,
) -> Verdict:
    """The verdict on a fix whose before fired the record and whose after passed: its two
    launches as `command` (the launch command, its base options) writes them."""
    words = change.note if change.source == "config" else ""  # a config repair says itself
    return Verdict(
        "verified",
        example_fix=f"# before\n{before.command(*command)}\n# after\n{after.command(*command)}",
        solution=words or solution_text(change),
        **where,
    )


def solution_text(change: FixChange) -> str:
    """The verified change as an instruction: "Launch with --tp-size 2 and --moe-dp-size 2",
    "Remove --x", "Launch with --language-only, without --encoder-only"."""
    adds, drops, unsets = [], [], []
    for op, name, value in change.edits:
        words = [str(v) for v in value] if isinstance(value, (tuple, list)) else None
        if op == "set" and words is not None:
            # the words of a list option, as a command line has them
            value = " ".join(shlex.quote(w) for w in words)
        elif op == "set" and value is not None and re.search(r"[{}\s'\"]", str(value)):
            value = shlex.quote(str(value))
        if op == "set" and value is not None and re.search(r"[{}'\"]", str(value)):
            adds.append(f"`{name} {value}`")  # JSON, quoted words: a code span to copy
        elif op == "set":
            adds.append(f"{name} {value}" if value is not None else name)
        elif op == "env" and value is not None:
            adds.append(f"{name}={value}")
        elif op == "env":
            unsets.append(name)
        elif op == "drop":
            drops.append(name)
    if not adds:
        parts = [f"Remove {' and '.join(drops)}"] if drops else []
        parts += [f"unset {' and '.join(unsets)}"] if unsets else []
        text = "; ".join(parts)
        return text[:1].upper() + text[1:]
    text = "Launch with " + " and ".join(adds)
    return text + (", without " + " and ".join(drops + unsets) if drops + unsets else "")
