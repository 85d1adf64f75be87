"""Pieces of display text shared by the terminal card, the site and the Markdown answer:
the before/after commands of an example fix and the flags that changed between them, a
placeholder's short label (`{self.page_size}` shows as ‹page_size›), code spans in prose, and
a record's releases as ranges ("v0.4.1.post7 … v0.5.10rc0 · 87 releases").

Plain functions over strings: no styling here, each view styles the pieces its own way.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

_EXAMPLE = re.compile(r"\s*#\s*before\s*\n(.*?)\n\s*#\s*after\s*\n(.*)", re.S | re.I)
_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_PLACEHOLDER = re.compile(r"\{([^{}\n]{1,200})\}")


@dataclass(frozen=True)
class ExampleFix:
    """An exampleFix as two commands: the launch that raises the error and the one that does not."""

    before: str
    after: str

    def removed(self) -> set[str]:
        """Arguments of `before` that `after` drops or changes."""
        return set(self.before.split()) - set(self.after.split())

    def added(self) -> set[str]:
        """Arguments of `after` that `before` lacks (new flags, changed values)."""
        return set(self.after.split()) - set(self.before.split())


def example_fix(text: str | None) -> ExampleFix | None:
    """`# before\\n<cmd>\\n# after\\n<cmd>` as an ExampleFix; None for any other shape."""
    m = _EXAMPLE.match(text or "")
    if not m:
        return None
    return ExampleFix(" ".join(m.group(1).split()), " ".join(m.group(2).split()))


def changed_spans(command: str, changed: set[str]) -> list[tuple[str, bool]]:
    """`command` cut into (text, changed?) runs, whitespace kept: what a view highlights."""
    out: list[tuple[str, bool]] = []
    for piece in re.split(r"(\s+)", command):
        if piece:
            out.append((piece, piece in changed))
    return out


def placeholder_label(expr: str) -> str:
    """A short name for a value the message prints: `self.page_size` -> ‹page_size›."""
    expr = expr.strip()
    if _DOTTED.fullmatch(expr):
        expr = expr.rsplit(".", 1)[-1]
    return f"‹{expr}›"


def placeholder_spans(message: str, placeholders: Sequence[str]) -> list[tuple[str, str | None]]:
    """The message as (text, placeholder expr or None) runs; `{expr!r}` / `{expr:.2f}` count too."""
    out: list[tuple[str, str | None]] = []
    pos = 0
    for expr in placeholders:
        found = re.compile(r"\{" + re.escape(expr) + r"(?:![rsa])?(?::[^{}]*)?\}").search(
            message, pos
        )
        if not found:
            continue
        if found.start() > pos:
            out.append((message[pos : found.start()], None))
        out.append((found.group(), expr))
        pos = found.end()
    if pos < len(message):
        out.append((message[pos:], None))
    return out


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
    return _PLACEHOLDER.sub(lambda m: placeholder_label(m.group(1)), text)


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
    return f"{text} · {n} release{'s' if n != 1 else ''}"


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
