"""Did a run report exactly this record? The rule behind every "verified".

A raise/assert record fires when the run raised its error class from its own statement (the
innermost frame in the revision's modules lies within the statement's lines) with a message
its pattern matches. A log/warning record fires when the run logged, from its statement, a
message its pattern matches. The "after" of a fix passes when the run went through the same
steps without raising anything and, for a log record, without logging it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kverr.verify.harness import Outcome

_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Expect:
    """What the record's statement reports, and where it sits in the revision."""

    kind: str  # raise | assert | exit | log | warn
    error_class: str | None
    pattern: str  # the record's messagePattern ("" when the message has too little text)
    file: str
    line: int
    end_line: int

    @property
    def logs(self) -> bool:
        return self.kind in ("log", "warn")


def _matches(pattern: str, message: str) -> bool:
    if not pattern:
        return True
    try:
        # The matcher's own normalisation: every whitespace run is one space.
        return re.search(pattern, _SPACE.sub(" ", message)) is not None
    except re.error:
        return False


def _here(expect: Expect, file: str, line: int) -> bool:
    return file == expect.file and expect.line <= line <= max(expect.end_line, expect.line)


def fires(outcome: Outcome, expect: Expect) -> bool:
    """The run reported exactly this record."""
    if expect.logs:
        return any(
            _here(expect, g.file, g.line) and _matches(expect.pattern, g.message)
            for g in outcome.logs
        )
    if outcome.status != "raised":
        return False
    if expect.error_class and outcome.exc_class != expect.error_class.rsplit(".", 1)[-1]:
        return False
    return _here(expect, outcome.file, outcome.line) and _matches(expect.pattern, outcome.message)


def passes(outcome: Outcome, expect: Expect) -> bool:
    """The run went through the steps without this record (and, for an error, without any)."""
    return outcome.status == "passed" and not fires(outcome, expect)


def what_happened(outcome: Outcome) -> str:
    """One clause for a reason: what the run did instead."""
    if outcome.status == "raised":
        where = f" at {outcome.file.rsplit('/', 1)[-1]}:{outcome.line}" if outcome.file else ""
        text = outcome.message.strip().splitlines()[0] if outcome.message.strip() else ""
        if len(text) > 100:
            text = text[:99] + "…"
        return f"raised {outcome.exc_class}{where}" + (f" ({text})" if text else "")
    if outcome.status == "passed":
        return "passed"
    if outcome.status == "undecidable":
        return f"could not be decided: it reads {outcome.reason}"
    if outcome.status == "parse-error":
        return f"was rejected by the argument parser ({outcome.reason})"
    return f"{outcome.status}" + (f" ({outcome.reason})" if outcome.reason else "")
