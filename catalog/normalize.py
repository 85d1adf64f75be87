"""Turn what a user pastes into the messages the program printed: plain functions, no state.

Real pastes carry log prefixes, colour codes, CRLF, terminal wrapping, truncation and whole
tracebacks. Each function here removes one of those layers. Generic forms (container runtime,
root logger, rank, Ray actor, quotes) are here; each project's own log forms come from its
profile (`[explain]`, through the catalog: `LogForms`), and stripping one says which project
printed the line, and for a logger that prints `[file.py:123]`, where.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import accumulate

from kverr.pattern import BLANKS

ANSI_RE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]{0,512}(?:\x07|\x1b\\)|\x1b[@-Z\\-_]"
)
# Container runtimes (CRI): "2026-04-07T10:05:08.123456789Z stderr F msg"; "P" marks a line the
# runtime split, continued by the next entry.
CRI_RE = re.compile(
    r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d) (?:(stdout|stderr) ([FP]) )?"
)
# One layer of prefix each; stacked prefixes are stripped in a loop.
PREFIX_RE = re.compile(
    r"""(?:
      \[\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?[^\]\n]{0,80}\]\ ?     # timestamp: [2026-04-07 10:05:08 TP0]
    | (?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL):[\w.\-]{0,200}:\ ?  # root logger: WARNING:pkg.module:
    | \[rank\d{1,6}\]:\ ?                                                   # torchrun: [rank0]:
    | \(\w{1,80}\ pid=\d+[^)\n]{0,80}\)\ ?                                  # Ray: (WorkerDict pid=123, ip=...)
    | >\ ?                                                                 # quoted in an issue or e-mail
    )""",
    re.X,
)
# warnings.warn output: "/x/server_args.py:123: UserWarning: message"
WARN_RE = re.compile(r"\S{1,500}\.py:\d+: (\w*Warning): ")
# What marks a message cut short, and what may trail the mark (closing quotes and brackets).
CUT_MARKS = ("...", "…", "[...]", "(truncated)", "[truncated]")
_AFTER_CUT = BLANKS + "'\")]"
FRAME_RE = re.compile(
    r'\s*File "(?P<file>[^"]{1,1000})", line (?P<line>\d+), in (?P<func>\S{1,300})'
)
EXC_RE = re.compile(
    r"(?P<cls>(?:[A-Za-z_][\w]*\.){0,8}[A-Z]\w*(?:Error|Exception|Warning|Exit|Interrupt))(?::\s?(?P<msg>.*))?$"
)
CARETS_RE = re.compile(r"\s*[\^~]+\s*$")


# Plain classes, not dataclasses: these sit on explain's start-up path, where generating a
# dataclass's methods costs more than the whole lookup.
class Hint:
    """What a project's log form around a line said: who printed it and, when the logger
    prints it (`[arg_utils.py:123]`), where."""

    __slots__ = ("project", "file", "line")

    def __init__(self, project: str, file: str | None = None, line: int | None = None) -> None:
        self.project, self.file, self.line = project, file, line

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Hint) and (self.project, self.file, self.line) == (
            other.project,
            other.file,
            other.line,
        )

    def __repr__(self) -> str:
        return f"Hint({self.project!r}, {self.file!r}, {self.line!r})"


class LogForms:
    """The log forms of a catalog's projects: (project, regex) prefixes and suffixes, as their
    profiles declare them (bounded repeats, checked by kverr.regexsafe.line_form_problem).

    `prefix_re`: the projects' prefixes (first: they are more specific) and the generic ones, as
    one regex, so a layer costs one `match`, as before; group `pN` says which project form
    matched. `suffix_forms`: (project, leading literal, regex), found with `rfind`, then
    matched from there. Both are built here, once: a scan reads them for every line."""

    __slots__ = ("prefixes", "suffixes", "prefix_re", "suffix_forms")

    def __init__(
        self, prefixes: tuple[tuple[str, str], ...] = (), suffixes: tuple[tuple[str, str], ...] = ()
    ) -> None:
        self.prefixes, self.suffixes = tuple(prefixes), tuple(suffixes)
        self.prefix_re = PREFIX_RE
        if self.prefixes:
            alts = []
            for n, (_, form) in enumerate(self.prefixes):
                form = re.sub(r"\(\?P<(file|line)>", rf"(?P<p{n}_\1>", form)
                alts.append(f"(?P<p{n}>{form})")
            self.prefix_re = re.compile("|".join([*alts, f"(?x:{PREFIX_RE.pattern})"]))
        self.suffix_forms: tuple[tuple[str, str, re.Pattern[str]], ...] = ()
        if self.suffixes:
            from kverr.regexsafe import leading_literal

            self.suffix_forms = tuple(
                (p, leading_literal(f), re.compile(f)) for p, f in self.suffixes
            )


NO_FORMS = LogForms()


def strip_prefixes(
    line: str, forms: LogForms = NO_FORMS, hint: list[Hint] | None = None, layers: int = 8
) -> str:
    """Remove log prefixes (the projects' own, root logger, container runtime, rank, Ray,
    quotes), at most `layers` of them; a project form that matched is appended to `hint`."""
    rx = forms.prefix_re
    for _ in range(layers):
        m = CRI_RE.match(line) or rx.match(line) or WARN_RE.match(line)
        if not m or not m.end():
            return line
        if hint is not None and m.re is rx and (m.lastgroup or "").startswith("p"):
            hint.append(_hint(forms, m))
        line = line[m.end() :]
    return line


def starts_record(line: str, forms: LogForms = NO_FORMS) -> bool:
    """Whether a raw line opens a log record: among its prefixes is one a logger writes once per
    record (a timestamp, `LEVEL:name:`, a warnings.warn location, a project's form), not only
    ones written on every physical line (container runtime, torchrun rank, Ray actor, a quote).
    The lines after it up to the next such line are that record's (streaming units)."""
    if "\r" in line:
        line = line.rstrip("\r").rsplit("\r", 1)[-1]
    if "\x1b" in line:
        line = ANSI_RE.sub("", line)
    rx = forms.prefix_re
    for _ in range(8):
        m = CRI_RE.match(line) or rx.match(line) or WARN_RE.match(line)
        if not m or not m.end():
            return False
        if m.re is WARN_RE or (m.re is rx and not m.group().startswith(_LINE_LAYERS)):
            return True
        line = line[m.end() :]
    return False


_LINE_LAYERS = ("[rank", "(", ">")  # PREFIX_RE's per-line forms, by their first characters


def record_layer(line: str, forms: LogForms = NO_FORMS) -> int:
    """Where a raw line's first prefix ends when that prefix opens a log record (a timestamp,
    a project's form: `starts_record` then holds), else 0. Whatever that prefix said, the rest
    of the line is cleaned the same, so a scan can remember a cleaned line by its rest."""
    if "\r" in line or "\x1b" in line or CRI_RE.match(line):
        return 0
    m = forms.prefix_re.match(line)
    if not m or not m.end() or m.group().startswith(_LINE_LAYERS):
        return 0
    return m.end()


def clean_rest(rest: str, forms: LogForms = NO_FORMS) -> str:
    """`clean_line` of a line whose first prefix, a record's (`record_layer`), is cut off."""
    line = strip_prefixes(rest, forms, layers=7)
    if forms.suffixes:
        line = strip_suffixes(line, forms)
    return line.rstrip()


FENCES = ("```", "~~~")


def is_fence(text: str) -> bool:
    """A Markdown code fence (```` ```text ````): it frames a message, it is never part of one."""
    return text.lstrip().startswith(FENCES)


def is_traceback_header(text: str) -> bool:
    return text.lstrip().startswith("Traceback (most recent call last)")


def _hint(forms: LogForms, m: re.Match[str]) -> Hint:
    n = m.lastgroup or ""
    where, at = m.group(f"{n}_file") if f"{n}_file" in m.re.groupindex else None, None
    if f"{n}_line" in m.re.groupindex and m.group(f"{n}_line"):
        at = int(m.group(f"{n}_line"))
    return Hint(forms.prefixes[int(n[1:])][0], where, at)


def strip_suffixes(line: str, forms: LogForms, hint: list[Hint] | None = None) -> str:
    """Remove what a project's logger writes after the message (pydantic's `[type=...]`)."""
    for project, lead, rx in forms.suffix_forms:
        at = line.rfind(lead)
        if at >= 0 and rx.fullmatch(line, at):
            line = line[:at]
            if hint is not None:
                hint.append(Hint(project))
    return line


def clean_line(line: str, forms: LogForms = NO_FORMS, hint: list[Hint] | None = None) -> str:
    """One physical line -> the text the program wrote (no ANSI, no prefixes, no trailing blanks)."""
    if "\r" in line:  # a progress bar redraws over itself: the last redraw is what was seen
        line = line.rstrip("\r").rsplit("\r", 1)[-1]
    if "\x1b" in line:
        line = ANSI_RE.sub("", line)
    line = strip_prefixes(line, forms, hint)
    if forms.suffixes:
        line = strip_suffixes(line, forms, hint)
    if "\\'" in line or '\\"' in line:
        # a message quoted in a JSON body or a repr (an HTTP error, an exception in a list)
        # shows its own quotes escaped: `the model\'s context length`
        line = line.replace("\\'", "'").replace('\\"', '"')
    return line.rstrip()


# A line a container runtime split is re-joined up to this many characters; the runtime splits
# at 16 KB, and an endless run of "P" entries must not grow one string without bound.
MAX_JOINED = 1 << 16


def clean_lines(
    lines: Iterable[str],
    forms: LogForms = NO_FORMS,
    hints: dict[int, Hint] | None = None,
) -> Iterator[tuple[int, str]]:
    """(1-based line number, cleaned text), re-joining lines a container runtime split ("P").
    `hints`: filled with line number -> what a project's log form said about that line (a scan
    of a long log passes None and asks `line_hint` about the few lines that matched)."""
    pending: tuple[int, str] | None = None
    for no, raw in enumerate(lines, 1):
        raw = raw.rstrip("\n")
        m = CRI_RE.match(raw)
        if m and m.group(2) == "P":
            body = raw[m.end() :]
            if pending is None:
                pending = (no, body[:MAX_JOINED])
            elif len(pending[1]) < MAX_JOINED:
                pending = (pending[0], (pending[1] + body)[:MAX_JOINED])
            continue
        if pending:
            no, raw = pending[0], pending[1] + (raw[m.end() :] if m else raw)
            pending = None
        yield no, _cleaned(raw, forms, hints, no)
    if pending:
        yield pending[0], _cleaned(pending[1], forms, hints, pending[0])


def _cleaned(raw: str, forms: LogForms, hints: dict[int, Hint] | None, no: int) -> str:
    """`clean_line`; with `hints`, what a project's log form said about line `no` goes there
    (the form that names a file, else the first)."""
    if hints is None:
        return clean_line(raw, forms)
    seen: list[Hint] = []
    out = clean_line(raw, forms, seen)
    if seen:
        hints[no] = next((h for h in seen if h.file), seen[0])
    return out


def line_hint(raw: str, forms: LogForms) -> Hint | None:
    """What a project's log form says about one raw line (None: no project form)."""
    hints: dict[int, Hint] = {}
    _cleaned(raw, forms, hints, 0)
    return hints.get(0)


def truncated(text: str) -> str | None:
    """The text before a `...` / `…` cut, or None when the text is not cut off.

    String operations, not a regex: a `\\s*...$` search restarts at every blank of a long run
    of spaces, which made 20,000 spaces cost 16 s; this is linear. The mark may be followed by
    blanks, quotes and closing brackets."""
    tail = len(text.rstrip(_AFTER_CUT))  # text[tail:]: blanks, quotes, closing brackets
    # Only a mark's last character can be one of those, so a mark ends at `tail` or one later.
    starts = [
        e - len(mark)
        for e in (tail, tail + 1)
        for mark in CUT_MARKS
        if e <= len(text) and text.endswith(mark, 0, e)
    ]
    if not starts:
        return None
    start = min(starts)
    if _elided(text, start):
        return None
    return text[:start].rstrip() or None


def _elided(text: str, start: int) -> bool:
    """`...` as an element of a repr, `ServerArgs(model_path='m', ...)` or `[1, 2, ...]`: an
    element position before it (after `,`, `(`, `[`, `{`, `=` or `:`) and a bracket closing
    right after it. A message cut short is cut inside its words: `... with --enable-str...`."""
    mark = "..." if text.startswith("...", start) else "…" if text.startswith("…", start) else ""
    if not mark:
        return False
    after = text[start + len(mark) :].lstrip(BLANKS)
    return after[:1] in (")", "]", "}") and text[:start].rstrip(BLANKS)[-1:] in _ELEMENT_START


_ELEMENT_START = (",", "(", "[", "{", "=", ":")


def strip_exception(text: str) -> tuple[str | None, str]:
    """("ValueError", "msg") for "ValueError: msg"; (None, text) otherwise."""
    m = EXC_RE.match(text)
    if not m:
        return None, text
    return m.group("cls").rsplit(".", 1)[-1], m.group("msg") or ""


# ---------------------------------------------------------------- wrapped messages


def joins(lines: list[str]) -> list[tuple[str, list[int]]]:
    """Ways a message wrapped over `lines` may have read: (text, start offset of each line).

    A terminal hard-wraps at a fixed width, often mid-word (join with nothing); an issue tracker
    or mail client wraps at spaces (join with a space). "smart" picks per break: lines as long
    as the longest line were cut by the terminal.
    """
    n = len(lines) - 1
    out: dict[str, list[int]] = {}
    for seps in (_smart_seps(lines), ["\n"] * n, [" "] * n, [""] * n):
        pieces = [s + sep for s, sep in zip(lines, [*seps, ""], strict=True)]
        out.setdefault("".join(pieces), list(accumulate(map(len, pieces[:-1]), initial=0)))
    return list(out.items())


def _smart_seps(lines: list[str]) -> list[str]:
    width = max(len(s) for s in lines)
    return ["" if len(s) == width or s.endswith(" ") else " " for s in lines[:-1]]


# ---------------------------------------------------------------- tracebacks


@dataclass(frozen=True)
class Traceback:
    """The innermost frame of a Python traceback and the exception it ended with."""

    file: str
    line: int
    function: str
    code: str  # the source line Python printed for the frame ("" when absent)
    exc_class: str | None
    message: str  # may be "" (a bare `assert`)
    start: int  # index (in the given list) of the "Traceback" header line
    exc_index: int  # index of the exception line


def parse_tracebacks(lines: list[str]) -> list[Traceback]:
    """Every traceback in cleaned `lines`; chained ones ("During handling ...") each count."""
    out = []
    i = 0
    while i < len(lines):
        if is_traceback_header(lines[i]):
            tb, i = _parse_one(lines, i)
            if tb:
                out.append(tb)
        else:
            i += 1
    return out


def cut_traceback(lines: list[str]) -> Traceback | None:
    """A traceback cut after its innermost frame, before the exception line (an issue title
    or a chat client kept only so much): the last frame and its code line, when the text ends
    there; None otherwise. Its header may be cut too."""
    kept = [(i, s) for i, s in enumerate(lines[-2000:], max(0, len(lines) - 2000)) if s.strip()]
    kept = [(i, s) for i, s in kept if not CARETS_RE.match(s)]
    if len(kept) < 2:
        return None
    (k, frame_line), (j, code) = kept[-2], kept[-1]
    m = FRAME_RE.match(frame_line)
    if m is None or FRAME_RE.match(code) or not code.startswith((" ", "\t")):
        return None
    return Traceback(m["file"], int(m["line"]), m["func"], code.strip(), None, "", k, j)


def _parse_one(lines: list[str], start: int) -> tuple[Traceback | None, int]:
    frame: tuple[str, int, str] | None = None
    code = ""
    i = start + 1
    end = min(len(lines), start + 2000)  # bounded: a runaway paste cannot make this quadratic
    while i < end:
        s = lines[i]
        m = FRAME_RE.match(s)
        if m:
            frame, code = (m["file"], int(m["line"]), m["func"]), ""
        elif s.startswith((" ", "\t")) or not s.strip():
            if frame and not code and s.strip() and not CARETS_RE.match(s):
                code = s.strip()
        else:
            cls, msg = strip_exception(s.strip())
            if cls is None and frame is None:
                return None, i
            if frame is None:
                return None, i + 1
            return Traceback(*frame, code, cls, msg if cls else s.strip(), start, i), i + 1
        i += 1
    return None, i
