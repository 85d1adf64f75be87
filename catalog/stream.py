"""One path for a paste and a log: blocks of lines, a bulk prefilter, and the paste's joins,
cut-message and traceback handling run over a bounded window around each line it marks.

A log then gives, for every message in it, the answer that pasting the message alone gives:
the lines around a marked line are cut into the message they belong to (its *unit*), and the
unit is read exactly as a paste of it would be. A unit starts at a line that starts a log record
(a timestamp, a logger's level and name: `normalize.starts_record`), at a traceback header, or
after a blank or fence line, and runs to the next such line: a message the program prints with
embedded newlines, or that a terminal wrapped, is one unit; the log lines around it are others.
A unit has at most UNIT_LINES lines; a longer run of lines without a start (bare stderr) is
read in windows of UNIT_LINES lines every GRID lines, so a message of up to GRID lines lies
whole in one of them, and each line is read at most twice.

Memory is bounded by a block of lines, the window kept behind it, one traceback (at most
TRACEBACK_LINES lines) and the hits kept; never by the input. Time is linear: the prefilter
reads each byte once, each marked line costs at most two windows.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from itertools import islice

from kverr.catalog import matcher, normalize
from kverr.catalog.matcher import Hit

BLOCK_LINES = 2048  # lines the prefilter reads at once
UNIT_LINES = matcher.PARAGRAPH_LINES  # the longest unit (a wrapped or multi-line message)
GRID = UNIT_LINES // 2
TRACEBACK_LINES = 2000  # a traceback is read until its exception line, at most this far
PARTIAL_MEMO = 512  # cut messages judged, by text (a log repeats the same cut line)

BLANK, FENCE, START, MORE = 0, 1, 2, 3  # what a line is to the units around it


class Scanner:
    """Feed it the lines of an input (`feed`), then ask for the hits (`paste_hits` for a
    paste, `log_hits` for a log). `allowed`: only these record ids."""

    def __init__(self, idx: matcher.Index, allowed: set[str] | None = None) -> None:
        self.idx, self.allowed = idx, allowed
        self.forms = idx.forms
        self.lines: list[str] = []  # raw lines base .. base + len (0-based input indexes)
        self.base = 0
        self.ended = False
        self.marked: set[int] = set()
        self.cut_only: set[int] = set()  # marked lines whose only mark is a cut at their end
        self.pending: list[int] = []  # marked lines whose unit is not read yet, in order
        self.kinds: dict[int, tuple[int, str]] = {}  # index -> (kind, cleaned text)
        self.done: set[tuple[int, int]] = set()  # windows read
        self.tb: list[str] | None = None  # the traceback being read (cleaned lines)
        self.tb_next = 0  # the next line it reads
        self.units: list[list[Hit]] = []  # hits, merged per unit, in input order
        self.cut_seen = False  # a line ended with a cut mark (a paste then skips fuzzy)
        self.partials: dict[str, list[Hit]] = {}
        self.hint_lines: dict[int, str] = {}  # line number -> raw line, for lines that hit
        self.total = 0
        self.chars = 0
        self.head: list[str] | None = []  # the whole input while it may still be a paste

    # ------------------------------------------------------------ reading

    def feed(self, lines: Iterable[str]) -> None:
        """Read every line of `lines` (with or without their "\\n")."""
        it = iter(lines)
        while chunk := list(islice(it, BLOCK_LINES)):
            self._block(*_plain(chunk))
        self.ended = True
        self._block([], "")

    def _block(self, chunk: list[str], text: str) -> None:
        """Read `chunk` (lines, each maybe still ending in "\\n"), `text` its lines joined."""
        matcher.spend()
        start = self.base + len(self.lines)
        if chunk:
            self.total += len(chunk)
            if self.head is not None:
                self.chars += len(text) + 1
                self.head.extend(chunk)
                if len(self.head) > matcher.PASTE_LINES or self.chars > matcher.PASTE_CHARS:
                    self.head = None  # a log: nothing of it is kept whole
            block = text.encode("utf-8", "surrogatepass")
            pf = self.idx.prefilter
            found = sorted(start + i for i in pf.marked(chunk, block))
            self.cut_only.update(start + i for i in pf.cut_only)
            self.lines.extend(chunk)
            self.marked.update(found)
            self.pending.extend(found)
        self._read_traceback()
        end = self.base + len(self.lines)
        ready = (
            len(self.pending)
            if self.ended
            else bisect.bisect_left(self.pending, end - UNIT_LINES - 1)
        )
        for t in self.pending[:ready]:
            self._mark(t)
        del self.pending[:ready]
        self._trim()

    def _trim(self) -> None:
        keep = 2 * UNIT_LINES + 2
        if len(self.lines) <= keep + BLOCK_LINES:
            return
        drop = len(self.lines) - keep
        del self.lines[:drop]
        self.base += drop
        self.kinds = {i: k for i, k in self.kinds.items() if i >= self.base}
        self.marked = {i for i in self.marked if i >= self.base}
        self.cut_only = {i for i in self.cut_only if i >= self.base}
        self.done = {w for w in self.done if w[1] > self.base}

    def _kind(self, i: int) -> tuple[int, str]:
        k = self.kinds.get(i)
        if k is None:
            raw = _raw(self.lines[i - self.base])
            text = normalize.clean_line(raw, self.forms)
            if not text.strip():
                k = (BLANK, text)
            elif normalize.is_fence(text):
                k = (FENCE, text)
            elif normalize.starts_record(raw, self.forms) or normalize.is_traceback_header(text):
                k = (START, text)
            else:
                k = (MORE, text)
            self.kinds[i] = k
        return k

    # ------------------------------------------------------------ units

    def _mark(self, t: int) -> None:
        kind, text = self._kind(t)
        if self.tb is None and normalize.is_traceback_header(text):
            self.tb, self.tb_next = [], t
            self._read_traceback()
        if kind in (BLANK, FENCE):
            return
        if t in self.cut_only and kind == START:
            # a log record cut short: its unit starts here, so the line alone must show the
            # head of a pattern (most "...Loading..." lines show none: no unit, no BM25)
            body = normalize.truncated(text)
            if body is None:
                return
            self.cut_seen = True
            if not self.idx.prefilter.may_be_cut(body[-matcher.PARTIAL_CHARS :]):
                return
        for a, b in self._windows(t):
            if (a, b) not in self.done:
                self.done.add((a, b))
                self._unit(a, b)

    def _windows(self, t: int) -> list[tuple[int, int]]:
        """The unit holding line `t`, or the windows of a long run that hold it. A log record
        (from its prefixed line) runs over blank lines, as a message printed with empty lines
        does; without a record around it, a blank line ends a unit, as in a paste."""
        end = self.base + len(self.lines)
        start, record, after_blank = None, False, None
        for i in range(t, t - UNIT_LINES, -1):
            if i < self.base:
                break
            kind = self._kind(i)[0]
            if kind == START:
                start, record = i, True
                break
            if kind == FENCE:
                start = i + 1 if after_blank is None else after_blank
                break
            if kind == BLANK and after_blank is None:
                after_blank = i + 1
            if i == 0:
                start = 0 if after_blank is None else after_blank
                break
        else:
            start = after_blank
        if start is None and after_blank is not None:
            start = after_blank
        stop = None
        for j in range(t + 1, (start if start is not None else t) + UNIT_LINES + 1):
            if j >= end:
                stop = j if self.ended else None
                break
            kind = self._kind(j)[0]
            if kind in (START, FENCE) or (kind == BLANK and not record):
                stop = j
                break
        if start is not None and stop is not None:
            return [(start, stop)]
        lo = start if start is not None else -(1 << 62)
        hi = stop if stop is not None else 1 << 62
        origin = start if start is not None else 0
        g = origin + (t - origin) // GRID * GRID
        return [
            (max(a, lo, 0), min(a + UNIT_LINES, hi, end))
            for a in (g - GRID, g)
            if a + UNIT_LINES > t and a + UNIT_LINES > lo
        ]

    def _unit(self, a: int, b: int) -> None:
        """Read lines a..b-1 as a paste of them alone is read (matcher.explain_text)."""
        idx, allowed = self.idx, self.allowed
        raw = self.lines[a - self.base : b - self.base]
        if any(" P " in r for r in raw):  # a container runtime's split lines: joined there
            numbered = [(a + no, t) for no, t in normalize.clean_lines(raw, self.forms)]
        else:  # cleaned already, to find the unit
            numbered = [(i + 1, self._kind(i)[1]) for i in range(a, b)]
        numbered = [(no, t) for no, t in numbered if t.strip()]
        if not numbered:
            return
        hits: list[Hit] = []
        for no, line in numbered:
            for h in matcher.pattern_hits(idx, line, allowed=allowed):
                h.line = no
                hits.append(h)
        texts = [" ".join(t.split()) for _, t in numbered]
        if len(numbered) > 1:
            on_line = {(h.index, h.line) for h in hits}
            for variant, (joined, offsets) in enumerate(normalize.joins(texts), 1):
                for h in matcher.pattern_hits(idx, joined, variant=variant, allowed=allowed):
                    first = bisect.bisect_right(offsets, h.span[1]) - 1
                    last = bisect.bisect_right(offsets, max(h.span[2] - 1, h.span[1])) - 1
                    # a message one line already shows, read again with its neighbours
                    if any((h.index, numbered[k][0]) in on_line for k in range(first, last + 1)):
                        continue
                    h.line = numbered[first][0]
                    hits.append(h)
            hits = matcher._drop_contained(hits)
        seen = {h.line for h in hits}
        for k, (no, line) in enumerate(numbered):
            if no in seen or normalize.truncated(line) is None:
                continue
            self.cut_seen = True
            hits += self._partial(line, no)
            if k:  # a cut message wrapped over the lines before: judged as they read joined
                for joined, _ in normalize.joins([t for t in texts[: k + 1]]):
                    hits += self._partial(joined, numbered[0][0])
        if hits:
            self._keep(_merge_per_line(idx, hits))

    def _partial(self, text: str, no: int) -> list[Hit]:
        body = normalize.truncated(text)
        if body is None or not self.idx.prefilter.may_be_cut(body[-matcher.PARTIAL_CHARS :]):
            return []
        found = self.partials.get(text)
        if found is None:
            found = matcher.partial_hits(self.idx, text, None, allowed=self.allowed)
            if len(self.partials) >= PARTIAL_MEMO:
                self.partials.clear()
            self.partials[text] = found
        body = normalize.truncated(text) or ""
        return [
            Hit(h.index, h.score, h.how, no, dict(h.values), h.span, h.covered, body) for h in found
        ]

    def _keep(self, hits: list[Hit]) -> None:
        self.units.append(hits)
        for h in hits:
            if h.line is not None and h.line - 1 >= self.base:
                self.hint_lines.setdefault(h.line, _raw(self.lines[h.line - 1 - self.base]))

    # ------------------------------------------------------------ tracebacks

    def _read_traceback(self) -> None:
        """Feed the traceback being read the lines that arrived; parse it at its exception
        line (as normalize.parse_tracebacks reads a paste), or give up after TRACEBACK_LINES."""
        end = self.base + len(self.lines)
        while self.tb is not None and self.tb_next < end:
            i = self.tb_next
            self.tb_next += 1
            text = (
                self._kind(i)[1]
                if i in self.kinds
                else normalize.clean_line(_raw(self.lines[i - self.base]), self.forms)
            )
            self.tb.append(text[: matcher.TRACEBACK_LINE_CHARS])
            if len(self.tb) > 1 and (_ends(text) or len(self.tb) >= TRACEBACK_LINES):
                found = [
                    h
                    for tb in normalize.parse_tracebacks(self.tb)
                    for h in matcher.frame_hits(self.idx, tb, i + 1, allowed=self.allowed)
                ]
                for h in found:  # where the traceback was, to meet its message's own hit
                    h.span = (-1, i + 2 - len(self.tb), i + 1)
                if found:
                    self._keep(found)
                # the line that ended it may open the next one ("Traceback ..." again)
                if normalize.is_traceback_header(text):
                    self.tb = [text[: matcher.TRACEBACK_LINE_CHARS]]
                else:
                    self.tb = None

    # ------------------------------------------------------------ answers

    def log_hits(self, hints: dict[int, normalize.Hint] | None) -> list[Hit]:
        """Every known error, each (record, values) once at its first line, most severe first."""
        first: dict[tuple, Hit] = {}
        for unit in self._tracebacks_met():
            for h in unit:
                # the same message again is reported once; another message that reads as the
                # same record (a different cut of it) is an answer of its own
                key = (h.index, tuple(sorted(h.values.items())), h.text)
                old = first.get(key)
                if old is None:
                    if len(first) >= matcher.SCAN_MAX_HITS:
                        continue
                    first[key] = h
                elif (h.line or 0) < (old.line or 0):
                    first[key] = h
        hits = list(first.values())
        if hints is not None and (self.forms.prefixes or self.forms.suffixes):
            for h in hits:
                raw = self.hint_lines.get(h.line)
                hint = normalize.line_hint(raw, self.forms) if raw is not None else None
                if hint is not None:
                    hints[h.line] = hint
        return matcher.log_order(self.idx, hits)

    def _tracebacks_met(self) -> list[list[Hit]]:
        """The units, with a traceback's frame hit folded into the hit of its own message (the
        exception line, or the code line that spells it) as a paste's merge folds them."""
        spans = {}
        for unit in self.units:
            for h in unit:
                if h.how == "traceback" and h.span and h.span[0] == -1:
                    spans.setdefault(h.index, []).append(h)
        if not spans:
            return self.units
        gone = set()
        for unit in self.units:
            for h in unit:
                for tb in spans.get(h.index, ()) if h.how != "traceback" else ():
                    if id(tb) not in gone and tb.span[1] <= (h.line or 0) <= tb.span[2]:
                        gone.add(id(tb))
                        h.score = min(1.0, max(h.score, tb.score) + 0.02)
        return [[h for h in unit if id(h) not in gone] for unit in self.units]

    def paste_hits(self, hints: dict[int, normalize.Hint]) -> list[Hit]:
        """A paste's hits: as a log's, then the paste's own extras (bounded by its size): the
        whole paste joined across blank lines (a banner), and when nothing matched exactly, a
        message cut short without a mark, then a fuzzy match."""
        idx, allowed = self.idx, self.allowed
        numbered = list(normalize.clean_lines(self.head or [], self.forms, hints))
        hits = [h for unit in self.units for h in unit]
        whole = [
            (no, " ".join(t.split())) for no, t in numbered[: matcher.WHOLE_LINES + 1] if t.strip()
        ]
        if 1 < len(numbered) <= matcher.WHOLE_LINES and len(whole) > 1:
            for variant, (joined, offsets) in enumerate(normalize.joins([t for _, t in whole]), 1):
                for h in matcher.pattern_hits(idx, joined, variant=variant + 8, allowed=allowed):
                    h.line = whole[bisect.bisect_right(offsets, h.span[1]) - 1][0]
                    hits.append(h)
            # (a cut message's text is its prefix: it explains no line by literal words)
            cut = [h for h in hits if h.how == "partial"]
            hits = matcher._drop_contained([h for h in hits if h.how != "partial"]) + cut
        exact = [h for h in hits if h.how != "partial"]
        if not exact and not self.cut_seen:
            hits = matcher.uncut_fallbacks(idx, numbered, allowed)
        return matcher.merge(idx, hits, hints)

    def is_paste(self) -> bool:
        return self.head is not None


def _merge_per_line(idx: matcher.Index, hits: list[Hit]) -> list[Hit]:
    """One hit per record and line: the readings of one message (its line alone, the joins)
    become one; the same message on two lines of a unit stays two."""
    groups: dict[tuple[int, int | None], list[Hit]] = {}
    for h in hits:
        groups.setdefault((h.index, h.line), []).append(h)
    return [h for group in groups.values() for h in matcher.merge(idx, group)]


def _ends(text: str) -> bool:
    """The line that ends a traceback: not indented, not a frame, not blank."""
    return bool(text) and not text.startswith((" ", "\t")) and not normalize.FRAME_RE.match(text)


def _plain(chunk: list[str]) -> tuple[list[str], str]:
    """(lines, text): `chunk` as one physical line each and the text they make. A file's lines
    keep their "\\n" (stripping them would copy every line; readers strip it: `_raw`); a list
    given by a caller may hold several lines in one string."""
    text = "".join(chunk)
    n = text.count("\n")
    if n == len(chunk) or (n == len(chunk) - 1 and not chunk[-1].endswith("\n")):
        return chunk, text
    if n == 0:
        return chunk, "\n".join(chunk)
    lines = "\n".join(x[:-1] if x.endswith("\n") else x for x in chunk).split("\n")
    return lines, "\n".join(lines)


def _raw(line: str) -> str:
    return line[:-1] if line.endswith("\n") else line
