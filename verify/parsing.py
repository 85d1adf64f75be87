"""argparse records (records/argparse_records.py) judged by the revision's own parser.

    verdict = judge_argparse(record, run, launch="python -m pkg --model-path M", program="x.py")

An argparse record's example fix is two launches. The before line must be rejected by the
parser of the revision the record applies at (the newest one), with a message the record's own
pattern matches as explain reads a paste: argparse's `x.py: error: ` in front, in the `before`
group. The after line must then go through that revision's whole validation, the parser and
every phase (__post_init__, check_server_args): passing the parser alone would show a command
that the next check may still stop, and the phases cost a millisecond or two more per record.
Both runs go to the build's one child through the run cache, like every other record's.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kverr.verify.harness import Outcome, Target
from kverr.verify.judge import what_happened

from kverr.ftypes import Launch

_SPACE = re.compile(r"\s+")

Run = Callable[[Launch, Target], Outcome]


@dataclass(frozen=True)
class Fix:
    """The words of the example fix's two lines after the launch command."""

    before: tuple[str, ...]
    after: tuple[str, ...]


@dataclass(frozen=True)
class Judged:
    """What the parser said: verified, or why not; `ran`: the check ran (a fix it did not
    pass is then shown as advice only, no command)."""

    verified: bool
    reason: str
    ran: bool


def fix_of(example_fix: str, launch: str) -> Fix | None:
    """The before/after words of a record's example fix, or None when it has none or it is
    not two launches of `launch` (the profile's command, model path included)."""
    lines = (example_fix or "").splitlines()
    if len(lines) != 4 or lines[0] != "# before" or lines[2] != "# after":
        return None
    words = []
    for line in (lines[1], lines[3]):
        if line != launch and not line.startswith(launch + " "):
            return None
        try:
            words.append(tuple(shlex.split(line[len(launch) :])))
        except ValueError:
            return None
    return Fix(*words)


def launch_of(words: Sequence[str]) -> Launch:
    """Command-line words as a Launch: each option with the words up to the next option."""
    args: list[tuple[str, Any]] = []
    for word in words:
        if word.startswith("-") or not args:
            args.append((word, None))
            continue
        option, value = args[-1]
        value = (
            word if value is None else (*(value if isinstance(value, tuple) else (value,)), word)
        )
        args[-1] = (option, value)
    return Launch(args=tuple(args))


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
        m = re.search(pattern, message)
    except re.error:
        return False
    if m is None:
        return False
    before = (m.groupdict().get("before") or "").split()
    return before == ([f"{program}:", "error:"] if program else [])


def judge_argparse(record: dict, run: Run, *, launch: str, program: str) -> Judged:
    """The record's example fix through its revision's parser (see the module docstring)."""
    fix = fix_of(record.get("exampleFix", ""), launch)
    if fix is None:
        why = (
            "nothing to run: the record has no example fix (explain answers from the pasted"
            " option, with the closest names)"
            if not record.get("exampleFix")
            else f"its example fix is not two launches of `{launch}`"
        )
        return Judged(False, why, ran=False)
    where = (record["filePath"], None, record.get("lineNumber") or 0)
    first = run(launch_of(fix.before), Target(*where, until="parse"))
    if first.status != "parse-error":
        return Judged(False, f"the before line {what_happened(first)}, not argparse's error", True)
    message = printed(first.reason, program)
    if not rejected_as_recorded(record.get("messagePattern", ""), message, program):
        shown = message if len(message) <= 160 else message[:159] + "…"
        return Judged(
            False, f"the parser rejected the before line with another message ({shown})", True
        )
    second = run(launch_of(fix.after), Target(*where, until="end"))
    if second.status != "passed":
        return Judged(
            False, f"the before line gives this error, but the after line {what_happened(second)}",
            True,
        )  # fmt: skip
    return Judged(True, "", True)
