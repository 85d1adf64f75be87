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

import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kverr.verify.harness import Outcome, Target
from kverr.verify.verdict import Expect, Verdict, fires, passes, printed, what_happened

from kverr.ftypes import Launch

Run = Callable[[Launch, Target], Outcome]


@dataclass(frozen=True)
class Fix:
    """The words of the example fix's two lines after the launch command."""

    before: tuple[str, ...]
    after: tuple[str, ...]


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


def judge_argparse(
    record: dict, run: Run, *, launch: str, program: str, launches: tuple[str, ...] = ()
) -> Verdict:
    """The record's example fix through its revision's parser (see the module docstring).
    `launches`: other commands the example may be written with (the project's launch at
    the revision the example was written for, which may not be the one judged)."""
    fix = next(
        (f for f in (fix_of(record.get("exampleFix", ""), c) for c in (launch, *launches)) if f),
        None,
    )
    if fix is None:
        why = (
            "nothing to run: the record has no example fix (explain answers from the pasted"
            " option, with the closest names)"
            if not record.get("exampleFix")
            else f"its example fix is not two launches of `{launch}`"
        )
        return Verdict("unverified", why, keep_fix=True)
    where = (record["filePath"], None, record.get("lineNumber") or 0)
    expect = Expect("argparse", None, record.get("messagePattern", ""), where[0], 0, 0, program)
    first = run(launch_of(fix.before), Target(*where, until="parse"))
    if first.status != "parse-error":
        return Verdict(
            "unverified", f"the before line {what_happened(first)}, not argparse's error"
        )
    if not fires(first, expect):
        message = printed(first.reason, program)
        shown = message if len(message) <= 160 else message[:159] + "…"
        return Verdict(
            "unverified", f"the parser rejected the before line with another message ({shown})"
        )
    second = run(launch_of(fix.after), Target(*where, until="end"))
    if not passes(second, expect):
        return Verdict(
            "unverified",
            f"the before line gives this error, but the after line {what_happened(second)}",
        )
    return Verdict("verified", keep_fix=True)  # the record's own fix, as the parser passed it
