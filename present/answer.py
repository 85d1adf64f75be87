"""One answer per record, built once, then drawn per medium: present/text.py (the terminal),
present/markdown.py (the card a bot posts, the Markdown export, the API's format=markdown),
present/html.py (the site's record page).

The fix comes first: the user's own launch, fixed and checked, when the paste held one
(Match.yours); advice from the values the message printed (Match.advice); the record's ways
out and its example launch; and whether that fix was verified, in a user's words. Then what it
means, why it fired, its flags, releases and source. What each section is called is said here
and nowhere else.

`kverr check`'s report (verify/preflight.py's report_json) is a CheckAnswer, drawn by the same
two renderers that draw a card.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kverr.present import display, verdict
from kverr.present.display import Command, ExampleFix

from kverr import template
from kverr.answers import Match
from kverr.term import escape_data

# The sections of every answer, in the order every medium shows them.
LABELS: dict[str, str] = {
    "fix": "How to fix",
    "meaning": "What it means",
    "why": "Why it fired",
    "flags": "Flags",
    "releases": "Releases",
    "source": "Source",
}
SECTIONS = tuple(LABELS)
ID = "kverr id"
PROJECT = "Project"
OTHER_WAYS = "Other ways out:"  # the record's fixes, when the user's own launch is the answer
BEFORE, AFTER, LEFT_OUT = "Before:", "After:", "After: leave it out"
FLAG_COLUMNS = ("Flag", "Help", "Default", "Choices / type")


@dataclass(frozen=True)
class Fix:
    """What to do, best first. `yours` and `example` are never both set: the user's own
    launch, fixed and checked, is the answer, and the record's example is someone else's."""

    yours: ExampleFix | None = None  # the user's launch, before and after
    said: str = ""  # one sentence on the user's launch: checked against what, or why no fix
    advice: tuple[str, ...] = ()  # from the values the message printed
    solutions: tuple[str, ...] = ()  # the record's ways out (an argparse answer's sentences)
    example: ExampleFix | None = None  # the record's example launch, before and after
    example_text: str = ""  # an example in no before/after shape, shown as written
    status: str = ""  # whether the record's fix was verified ("" when `yours` answers)
    verified: bool = False

    def __bool__(self) -> bool:
        return bool(
            self.yours or self.said or self.advice or self.solutions or self.example
            or self.example_text
        )  # fmt: skip


@dataclass(frozen=True)
class Flag:
    """A flag of the check, with its declaration where the medium has one (site, export)."""

    name: str
    help: str = ""
    default: str = ""
    choices: tuple[str, ...] = ()
    kind: str = ""  # its action or type, shown when it has no choices


@dataclass(frozen=True)
class Source:
    where: str  # path:line
    url: str | None  # a plain https link, or None
    function: str = ""
    sha: str = ""


@dataclass(frozen=True)
class Answer:
    record: dict[str, Any]
    runs: tuple[display.Run, ...]  # the message, values in place
    fix: Fix
    meaning: str  # prose, with the pasted values in place
    why: str
    situations: str  # a page's (site, export); an answer to a paste has none
    declared: tuple[tuple[str, str], ...]  # an argparse answer's (label, text) rows
    flags: tuple[Flag, ...]
    releases: tuple[str, ...]
    order: tuple[str, ...]  # the releases of the record's project, oldest first (ranges)
    source: Source
    project: str = ""  # which project answered and what told it (explain)
    how: str = ""  # "pattern match 0.99 · input line 1"; "" for a record looked up

    @property
    def id(self) -> str:
        return self.record.get("id") or ""

    @property
    def what(self) -> str:
        return self.record.get("errorClass") or self.record.get("kind") or ""

    @property
    def span(self) -> str:
        return display.release_span(self.releases, self.order)

    @property
    def gaps(self) -> list[str]:
        return display.release_gaps(self.releases, self.order)

    def sections(self) -> list[str]:
        """The sections this answer has, in order (a record without flags has no Flags)."""
        has = {
            "fix": bool(self.fix),
            "meaning": bool(self.meaning),
            "why": bool(self.why or self.situations),
            "flags": bool(self.flags),
            "releases": bool(self.releases),
            "source": True,
        }
        return [key for key in SECTIONS if has[key]]


def fill(text: str, record: Mapping[str, Any], values: Mapping[str, str]) -> str:
    """A record's prose with the values captured from the pasted line in place of the
    placeholders it names: "--schedule={self.schedule}" -> "--schedule=lpm"."""
    return template.fill(text, record.get("placeholders") or [], values)


def of_match(
    m: Match,
    orders: display.Orders | None = None,
    *,
    verbose: bool = False,
    names: Mapping[str, str] | None = None,
) -> Answer:
    """The answer to a match: every string of it escaped first (kverr.term.escape_data), so a
    control character shows as `\\x1b` in every medium. `verbose`, `names`: how the verdict is
    said (verdict.fix_status)."""
    m = escape_data(m)
    rec = m.record
    if m.argparse:  # answered for the pasted values from the catalog's releases
        solutions = tuple(m.argparse.get("text") or ())
        example, example_text = argparse_example(m), ""
    else:
        solutions = tuple(s for s in rec.get("solutions") or () if s)
        example = display.example_fix(rec.get("exampleFix"))
        example_text = "" if example else rec.get("exampleFix") or ""
    yours = yours_example(m)
    fix = Fix(
        yours=yours,
        said=verdict.yours_status(m.yours, verbose=verbose),
        advice=tuple(fill(a, rec, m.values) for a in m.advice),
        solutions=tuple(fill(s, rec, m.values) for s in _past(solutions, m.advice)),
        # the record's verdict is about its own example launch, someone else's
        example=None if yours else example,
        example_text="" if yours else example_text,
        # (an argparse answer without an example shows no fix the verdict could be about)
        status=""
        if yours or (m.argparse and example is None)
        else verdict.fix_status(rec, verbose=verbose, names=names),
        verified=verdict.is_verified(rec),
    )
    how = [] if m.how == "id" else [f"{m.how} match {m.score:.2f}"]
    if m.line is not None:
        how.append(f"input line {m.line}")
    return _answer(
        rec, fix, m.revisions, display.order_of(orders, m), values=m.values, declared=tuple(argparse_rows(m)),
        project=project_text(m), how=" · ".join(how), situations=False,
    )  # fmt: skip


# an option given a value: a number, or a word with a digit or a comma (`mlx5_0,mlx5_1`), not
# the prose after it ("--x and --y", "Leave --x unset")
_SETS = re.compile(r"(--[a-z0-9][\w.-]*)[ =](-?\d[\d.]*|[\w.-]*[\d,][\w.,-]*)")


def _past(solutions: Sequence[str], advice: Sequence[str]) -> list[str]:
    """The record's ways to fix, less those that give an option the pasted values move a
    value of their own: "Launch with --max-loaded-loras 2" is its example's launch, and
    "Use --max-loaded-loras 4, 8 or 16 (not 2)" this user's."""
    moved = {m.group(1) for a in advice for m in _SETS.finditer(a)}
    return [s for s in solutions if not any(m.group(1) in moved for m in _SETS.finditer(s))]


def of_record(
    rec: dict[str, Any],
    releases: Sequence[str],
    order: Sequence[str] = (),  # the releases of the record's project, oldest first
    declarations: Mapping[str, Mapping[str, Any]] | None = None,
) -> Answer:
    """The answer a page shows for a record (the site, the Markdown export): no paste, so no
    values, launch or advice. `declarations`: flag name -> its declaration. Strings are kept
    as the record has them; each renderer escapes for its medium."""
    example = display.example_fix(rec.get("exampleFix"))
    fix = Fix(
        solutions=tuple(s for s in rec.get("solutions") or () if s),
        example=example,
        example_text="" if example else rec.get("exampleFix") or "",
        status=verdict.fix_status(rec),
        verified=verdict.is_verified(rec),
    )
    return _answer(rec, fix, releases, order, declarations=declarations or {})


def _answer(
    rec: dict[str, Any],
    fix: Fix,
    releases: Sequence[str],
    order: Sequence[str],
    *,
    values: Mapping[str, str] | None = None,
    declarations: Mapping[str, Mapping[str, Any]] | None = None,
    declared: tuple[tuple[str, str], ...] = (),
    project: str = "",
    how: str = "",
    situations: bool = True,
) -> Answer:
    values = values or {}
    if not fix:  # no fix to give: no verdict about it either
        fix = Fix()
    return Answer(
        record=rec,
        runs=tuple(display.message_runs(rec, values)),
        fix=fix,
        meaning=fill(rec.get("documentation") or "", rec, values),
        why=fill(rec.get("triggerScenarios") or "", rec, values),
        situations=rec.get("commonSituations") or "" if situations else "",
        declared=declared,
        flags=tuple(_flag(name, (declarations or {}).get(name)) for name in rec.get("flags") or ()),
        releases=tuple(releases),
        order=tuple(order),
        source=Source(
            where=f"{rec.get('filePath')}:{rec.get('lineNumber')}",
            url=display.safe_url(rec.get("githubUrl")),
            function=rec.get("function") or "",
            sha=(rec.get("analyzedSha") or "")[:10],
        ),
        project=project,
        how=how,
    )


def _flag(name: str, decl: Mapping[str, Any] | None) -> Flag:
    d = decl or {}
    return Flag(
        name=name,
        help=d.get("help") or "",
        default=str(d.get("default") or ""),
        choices=tuple(str(c) for c in d.get("choices") or ()),
        kind=d.get("action") or d.get("type") or "",
    )


def yours_example(m: Match) -> ExampleFix | None:
    """The fix of the user's own launch (Match.yours), before and after, when there is one."""
    y = m.yours or {}
    if not (y.get("before") and y.get("after")):
        return None
    return ExampleFix(display.parse_command(y["before"]), display.parse_command(y["after"]))


def argparse_rows(m: Match, limit: int = 4) -> list[tuple[str, str]]:
    """(label, text) rows of an argparse answer: the choices, or the type and default, of
    each release range (newest first)."""
    a = m.argparse or {}
    rows: list[tuple[str, str]] = []
    for group in (a.get("choices") or [])[:limit]:
        rows.append(("Choices", f"{group['range']}: {', '.join(group['choices'])}"))
    for decl in (a.get("declarations") or [])[:limit]:
        default = f"default {decl['default']}" if decl.get("default") else ""
        what = ", ".join(x for x in (decl.get("type"), default) if x)
        rows.append(("Declared", f"{decl['range']}: {what or 'no type'}"))
    more = max(len(a.get("choices") or []), len(a.get("declarations") or [])) - limit
    if more > 0:
        label = rows[-1][0]
        rows.append((label, f"… {more} earlier declaration{'s' if more != 1 else ''}"))
    return rows


def argparse_example(m: Match) -> ExampleFix | None:
    """The option as pasted and as it should be (an empty `after`: leave it out)."""
    a = m.argparse or {}
    ex = a.get("example") or {}
    if not ex.get("before"):
        return None
    flag = a.get("flag")
    return ExampleFix(
        display.command(display.option_words(ex["before"], flag)),
        display.command(display.option_words(ex.get("after") or "", flag)),
    )


_DETECTED = {
    "--project": "as asked (--project)",
    "log form": "its log format",
    "message": "the message",
}


def project_text(m: Match) -> str:
    """Which project answered and what told it (`kverr explain` says so); "" for a record looked
    up by id."""
    p = m.project
    how = _DETECTED.get(p.get("detectedBy", ""))
    if not p or how is None:
        return p.get("product", "") if p else ""
    return f"{p.get('product', p.get('name'))}, matched by {how}"


def message_key(m: Match) -> str:
    """What makes two matches one message: the text the program prints, whatever its source
    names the values (`{decode_backend!r}` in one module, `{self.decode_attention_backend!r}`
    in another); "" for a record without one (a bare assert)."""
    rec = m.record
    return rec.get("messagePattern") or rec.get("errorMessage") or ""


# ---------------------------------------------------------------- kverr check


@dataclass(frozen=True)
class CheckError:
    """One error the launch raises, with the fix of this very launch or why there is none."""

    what: str  # the exception class
    message: str
    where: str  # file:line, or ""
    changed: tuple[str, ...] = ()  # the options the fix changes
    fixed: Command | None = None  # the launch with this fix
    no_fix: str = ""
    id: str = ""


@dataclass(frozen=True)
class CheckAnswer:
    release: str
    platform: str
    model: str
    reason: str = ""  # why the launch was not checked at all
    launch: Command | None = None
    spelled: tuple[tuple[str, str], ...] = ()  # (what was typed, the option it is read as)
    unknown: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (option, close ones)
    served: tuple[str, ...] = ()  # the server's own options, which no check reads
    errors: tuple[CheckError, ...] = ()
    stopped: tuple[str, str] | None = None  # (status, reason) of a check that did not finish
    notices: tuple[str, ...] = ()  # what the release would change silently
    passed: bool = False
    fixed: Command | None = None  # the launch with every fix applied

    @property
    def hidden(self) -> bool:
        """Whether a command shows <VALUE> for a word that is no plausible option value."""
        cmds = [self.launch, self.fixed, *(e.fixed for e in self.errors)]
        return any(c is not None and c.hidden for c in cmds)


# What a check answer says, in every medium.
CHECKED = "kverr check"
NOT_CHECKED = "Not checked"
YOUR_LAUNCH = "Your launch"
SERVED = "the server's own options, which no check of the release reads"
NO_FIX = "No fix of this launch passes"
STOPPED = "The check stopped"
PASSES = "The launch passes every check of this release."
FIXED = "With every fix above, the launch passes:"


def adjusts(release: str) -> str:
    return f"{release} would adjust this launch:"


def your_fix(changed: str, release: str, platform: str) -> str:
    return f"Your fix changes {changed}, verified against {release}'s own checks on {platform}:"


def of_report(report: Mapping[str, Any]) -> CheckAnswer:
    """`kverr check`'s JSON report (verify/preflight.py report_json) as a CheckAnswer; the
    commands parsed so they show safe to copy (display.Command)."""

    def command(text: str | None) -> Command | None:
        return display.parse_command(text) if text else None

    errors = []
    for err in report.get("errors") or ():
        fix = err.get("yourFix") or {}
        statement = err.get("statement") or ""
        shown = f"{display.NO_MESSAGE} {statement}" if statement else display.NO_MESSAGE
        errors.append(
            CheckError(
                what=err.get("errorClass") or "",
                message=err.get("message") or shown,
                where=f"{err['file']}:{err.get('line')}" if err.get("file") else "",
                changed=tuple(fix.get("changed") or ()),
                fixed=command(fix.get("after")),
                no_fix=err.get("noFix") or "",
                id=err.get("id") or "",
            )
        )
    stopped = report.get("stopped")
    return CheckAnswer(
        release=report.get("release") or "",
        platform=report.get("platform") or "",
        model=report.get("model") or "",
        reason=report.get("reason") or "",
        launch=command((report.get("launch") or {}).get("command")),
        spelled=tuple((s["typed"], s["option"]) for s in report.get("spelled") or ()),
        unknown=tuple(
            (u["option"], tuple(u["didYouMean"])) for u in report.get("unknownOptions") or ()
        ),
        served=tuple(report.get("serverOptions") or ()),
        errors=tuple(errors),
        stopped=(stopped["status"], stopped.get("reason") or "") if stopped else None,
        notices=tuple(n["message"].strip() for n in report.get("notices") or ()),
        passed=bool(report.get("passed")),
        fixed=command(report.get("fixed")),
    )
