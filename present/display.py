"""Pieces of display text every medium shares (the terminal, Markdown, the site): the
before/after commands of an example fix and the flags that changed between them, a record's
title and its message with each placeholder as a value or a short label (`{self.page_size}`
shows as ‹page_size›), code spans in prose, and a record's releases as ranges
("v0.4.1.post7 … v0.5.10rc0 · 87 releases").

A command is shown safe to copy: each word quoted for the shell, and a word that is no
plausible option value (a paste's `$(id)`, shell syntax, control characters) as <VALUE>.

Plain functions over strings: no styling here, each view styles the pieces its own way.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kverr import template
from kverr.template import source_line
from kverr.term import escape_terminal

_EXAMPLE = re.compile(r"\s*#\s*before\s*\n(.*?)\n\s*#\s*after\s*\n(.*)", re.S | re.I)

VALUE = "<VALUE>"
HIDDEN_NOTE = f"{VALUE} stands for a value not shown: it is not a plausible option value."
# Shell syntax kverr's own fixes write (a config file, then the launch): kept where the
# command has it bare. Anywhere else these characters make a word no plausible value, as do
# a backslash (what escape_terminal leaves of a control character) and control characters.
_OPERATORS = ("&&", ">")
_SHELL = re.compile(r"[$`;|&<>()\\\n]")
_ASSIGNED = re.compile(r"(--?[A-Za-z0-9][\w.-]*=)(.*)", re.S)


@dataclass(frozen=True)
class Command:
    """A command line as shown: `words` as the program gets them, `shown` each as the shell
    reads it back (shlex.quote), <VALUE> for a word that is no plausible option value."""

    words: tuple[str, ...]
    shown: tuple[str, ...]

    @property
    def text(self) -> str:
        return " ".join(self.shown)

    @property
    def hidden(self) -> bool:
        return VALUE in self.shown


def command(words: Sequence[str]) -> Command:
    """Words (a flag and a pasted value) as a Command."""
    return Command(tuple(words), tuple(map(quote, words)))


def parse_command(text: str) -> Command:
    """Shell text (a record's exampleFix) as a Command: each word unquoted as the shell would,
    then quoted again; && and > stay operators only where the text has them unquoted."""
    lex = shlex.shlex(text, posix=True)
    lex.whitespace_split, lex.commenters = True, ""
    words, shown, start = [], [], 0
    try:
        while (word := lex.get_token()) is not None:
            end = lex.instream.tell()
            raw = text[start:end].strip()  # the word as written, quotes and all
            start = end
            words.append(word)
            shown.append(raw if raw in _OPERATORS else quote(word) if plausible(raw) else VALUE)
    except ValueError:  # an open quote: no shell reads it as written
        return command(text.split())
    return Command(tuple(words), tuple(shown))


def plausible(word: str) -> bool:
    """Could `word` be an option or its value as a person types it: no shell syntax, no
    backslash, no control character."""
    return not _SHELL.search(word) and escape_terminal(word) == word


def quote(word: str) -> str:
    """`word` as the shell reads it back (--flag='{}' rather than '--flag={}'), or <VALUE>."""
    if not plausible(word):
        return VALUE
    assigned = _ASSIGNED.fullmatch(word)
    if assigned:
        return assigned[1] + shlex.quote(assigned[2])
    return shlex.quote(word)


def option_words(text: str, flag: str | None) -> tuple[str, ...]:
    """An argparse answer's fragment, "FLAG VALUE" (catalog/argparse_answers.py), as its words:
    the flag and the pasted value whole, whatever the value holds."""
    if flag and text.startswith(flag + " "):
        return (flag, text[len(flag) + 1 :])
    return tuple(text.split())


_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


@dataclass(frozen=True)
class ExampleFix:
    """An exampleFix as two commands: the launch that raises the error and the one that does not."""

    before: Command
    after: Command

    def removed(self) -> set[str]:
        """Arguments of `before` that `after` drops or changes."""
        return set(self.before.words) - set(self.after.words)

    def added(self) -> set[str]:
        """Arguments of `after` that `before` lacks (new flags, changed values)."""
        return set(self.after.words) - set(self.before.words)


def example_fix(text: str | None) -> ExampleFix | None:
    """`# before\\n<cmd>\\n# after\\n<cmd>` as an ExampleFix; None for any other shape."""
    m = _EXAMPLE.match(text or "")
    if not m:
        return None
    return ExampleFix(parse_command(m.group(1)), parse_command(m.group(2)))


def safe_url(url: str | None) -> str | None:
    """A link target every view may use: a plain https URL, else None (a `javascript:` URL,
    spaces, quotes, brackets or a control character in a record are never linked)."""
    if url and _SAFE_URL.fullmatch(url):
        return url
    return None


_SAFE_URL = re.compile(r"https://[A-Za-z0-9.-]+/[\x21-\x7e]*")


def placeholder_label(expr: str) -> str:
    """A short name for a value the message prints: `self.page_size` -> ‹page_size›."""
    expr = expr.strip()
    if _DOTTED.fullmatch(expr):
        expr = expr.rsplit(".", 1)[-1]
    return f"‹{expr}›"


_FLAG_WORD = re.compile(r"(?<![\w-])--[A-Za-z0-9][A-Za-z0-9_-]*(?:=[^\s,;`]*[^\s,;.`)])?")


def code_spans(text: str, *, flags: bool = False) -> list[tuple[str, bool]]:
    """Prose as (text, is_code) runs: `backticked` runs are code, the backticks dropped; with
    `flags`, a bare `--flag` or `--flag=value` in the prose is code too. An unpaired backtick
    stays as text."""
    parts = text.split("`")
    if len(parts) % 2 == 0:  # odd number of backticks: keep the last one literally
        last = parts.pop()
        parts[-1] += "`" + last
    out: list[tuple[str, bool]] = []
    for i, part in enumerate(parts):
        if i % 2 == 1 or not flags:
            out.append((part, i % 2 == 1))
            continue
        pos = 0
        for m in _FLAG_WORD.finditer(part):
            out += [(part[pos : m.start()], False), (m.group(), True)]
            pos = m.end()
        out.append((part[pos:], False))
    return [(p, code) for p, code in out if p]


def label_placeholders(text: str) -> str:
    """`{self.page_size}` in prose (a trigger, a solution) as ‹page_size›."""
    return template.fold(text, placeholder_label)


# ---------------------------------------------------------------- a record's message

NO_MESSAGE = "(assert without a message)"
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def plain(text: str) -> str:
    """Terminal colour codes (`\\x1b[91m...`) a message may print are noise outside a
    terminal: gone; any other control character shows as its escape."""
    return escape_terminal(_ANSI.sub("", text))


def title_of(rec: Mapping[str, Any]) -> str:
    """A bare `assert cond` has no message: name it by its condition instead."""
    if said := plain(rec.get("errorMessage") or "").strip():
        return said
    return source_line(rec) or f"{rec.get('errorClass') or 'Error'} ({rec['id']})"


def label_of(rec: Mapping[str, Any]) -> str:
    """title_of as a reader sees it: `{self.page_size}` shown as ‹page_size›."""
    return "".join(run.text for run in message_runs(rec, title=True))


@dataclass(frozen=True)
class Run:
    """A piece of a message: its own words ("text"), a value captured from the paste
    ("value"), a placeholder not captured, shown as its ‹label› ("label"), or the statement
    of an assert that prints no message ("statement"). `expr`: the placeholder's expression."""

    text: str
    kind: str = "text"
    expr: str = ""


def message_runs(
    rec: Mapping[str, Any], values: Mapping[str, str] | None = None, *, title: bool = False
) -> list[Run]:
    """The record's message with each captured value (`values`) in place and each other
    placeholder as its label. `title`: the message as title_of names it (colour codes gone,
    a message-less assert as its condition alone)."""
    values = values or {}
    said = plain(rec.get("errorMessage") or "").strip() if title else rec.get("errorMessage")
    if not said:
        shown = title_of(rec) if title else f"{NO_MESSAGE} {source_line(rec)}"
        return [Run(shown, "statement")]
    out: list[Run] = []
    for text, expr in template.spans(said, rec.get("placeholders") or []):
        if expr is None:
            out.append(Run(text))
        elif expr in values:
            out.append(Run(values[expr], "value", expr))
        else:
            out.append(Run(placeholder_label(expr), "label", expr))
    return out


# ---------------------------------------------------------------- releases


def release_runs(names: Sequence[str], order: Sequence[str]) -> list[list[str]]:
    """`names` grouped into runs that are consecutive in `order` (the releases the catalog
    holds, oldest first): a break between two runs is a gap, releases that lack the record.
    Names missing from `order` (the newest commit's sha, a snapshot label) each make a run of
    their own at the end, in the order given."""
    pos = {name: i for i, name in enumerate(order)}
    known = sorted((n for n in set(names) if n in pos), key=pos.__getitem__)
    runs: list[list[str]] = []
    for name in known:
        if runs and pos[name] == pos[runs[-1][-1]] + 1:
            runs[-1].append(name)
        else:
            runs.append([name])
    return runs + [[n] for n in names if n not in pos]


def release_span(names: Sequence[str], order: Sequence[str]) -> str:
    """ "v0.4.1.post7 … v0.5.10rc0 · 87 releases": each run as its ends, runs separated by a
    comma (the gap between them is releases without the record); "" when there are none."""
    if not names:
        return ""
    runs = release_runs(names, order)
    text = ", ".join(_run(r) for r in runs)
    n = len(set(names))
    dated = any(name.startswith(APPROX) for name in names)
    note = f" ({APPROX}: the commit nearest the release's date)" if dated else ""
    return f"{text} · {n} release{'s' if n != 1 else ''}{note}"


# Each project's releases, oldest first (Catalog.release_orders). Two projects may both have
# a v0.2.0: a record's releases are ranged in its own project's order alone, or one project's
# v0.2.0 would sit in the other's sequence and show as both present and missing.
Orders = Mapping[str, Sequence[str]]


def order_of(orders: Orders | None, m: Any) -> Sequence[str]:
    """A match's project's releases (the catalog says whose each record is)."""
    return (orders or {}).get((m.project or {}).get("name") or "", ())


APPROX = "≈"  # a release name found by date (pipeline/releases.py): the code may differ a little


def release_gaps(names: Sequence[str], order: Sequence[str]) -> list[str]:
    """The releases between two runs, as ranges: where the record was absent, then back."""
    pos = {name: i for i, name in enumerate(order)}
    runs = [r for r in release_runs(names, order) if r[0] in pos]
    gaps = []
    for a, b in zip(runs, runs[1:], strict=False):
        missing = list(order[pos[a[-1]] + 1 : pos[b[0]]])
        if missing:
            gaps.append(_run(missing))
    return gaps


def _run(run: Sequence[str]) -> str:
    if len(run) >= 3:
        return f"{run[0]} … {run[-1]}"
    return ", ".join(run)
