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

A block is UTF-8 bytes (a file's, as read: reader.BoundedLines.blocks) or text (a paste, a list
of lines). The prefilter reads it in one RE2 pass (prefilter.Prefilter.marked), counting line
numbers between its matches; the lines are kept as that block (`Lines`), and only the lines
around a mark are ever decoded, so a line nothing marks costs no Python step. A log repeats its
lines: what a record's line cleans to, a cut line's verdict and a one-line unit's answer are
remembered by text (`_Memo`, bounded), and a line cut with `...` that opens a record and shows
no pattern's head before its mark is not marked at all when it opens with a timestamp
(a log's regex, prefilter.log_cuts), else dropped before anything is decoded
(`_drop_cut_records`).

Memory is bounded by two blocks, the window kept behind them, one traceback (at most
TRACEBACK_LINES lines), the memos and the hits kept (each message once, at most
matcher.SCAN_MAX_HITS, plus those of the lines a traceback may still fold: `_Kept`); never
by the input, however often it repeats a message. Time is linear: the
prefilter reads each byte once, each marked line costs at most two windows.
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Iterable
from itertools import accumulate, islice

from kverr.catalog import matcher, normalize
from kverr.catalog.matcher import Hit

from kverr.pattern import fold_space

BLOCK_LINES = 2048  # lines the prefilter reads at once
UNIT_LINES = matcher.PARAGRAPH_LINES  # the longest unit (a wrapped or multi-line message)
GRID = UNIT_LINES // 2
TRACEBACK_LINES = 2000  # a traceback is read until its exception line, at most this far
PARTIAL_MEMO = 512  # cut messages judged, by text (a log repeats the same cut line)
# A log repeats its lines: what a line cleans to, a cut line's verdict and a one-line unit's
# answer are remembered by text: lines up to MEMO_CHARS, each memo at most MEMO entries and
# MEMO_TOTAL characters of keys (then it starts over), so memory stays bounded
MEMO, MEMO_CHARS, MEMO_TOTAL = 16384, 4096, 1 << 21

BLANK, FENCE, START, MORE = 0, 1, 2, 3  # what a line is to the units around it


class Scanner:
    """Feed it the lines of an input (`feed`), then ask for the hits (`paste_hits` for a
    paste, `log_hits` for a log). `allowed`: only these record ids."""

    def __init__(self, idx: matcher.Index, allowed: set[str] | None = None) -> None:
        self.idx, self.allowed = idx, allowed
        self.forms = idx.forms
        self.suffix_leads = [lead.encode() for _, lead, _ in self.forms.suffix_forms]
        self.lines = Lines()  # the raw lines kept (0-based input indexes), decoded on demand
        self.ended = False
        self.cut_only: set[int] = set()  # marked lines whose only mark is a cut at their end
        self.pending: list[int] = []  # marked lines whose unit is not read yet, in order
        self.kinds: dict[int, tuple[int, str]] = {}  # index -> (kind, cleaned text)
        self.done: set[tuple[int, int]] = set()  # windows read
        self.tb: list[str] | None = None  # the traceback being read (cleaned lines)
        self.tb_next = 0  # the next line it reads
        self.tb_start = 0  # the line it starts at
        self.units: list[list[Hit]] = []  # a paste's hits, merged per unit, in input order
        self.kept = _Kept()  # a log's hits: each message once, bounded (`_Kept`)
        self.cut_seen = False  # a line ended with a cut mark (a paste then skips fuzzy)
        self.partials: dict[str, list[Hit]] = {}
        self.cleaned = _Memo()  # a record's line after its first prefix -> (kind, text)
        self.cut_verdicts = _Memo()  # text -> (cut, no head shown)
        self.one_line = _Memo()  # text -> (hits, cut seen)
        self.hint_lines: dict[int, str] = {}  # a paste's: line number -> raw line, if it hit
        # a paste's: line number -> (file, line) of the innermost frame of its traceback
        self.frames: dict[int, tuple[str, int]] = {}
        # joined text -> its pattern hits (a log's: the last one alone)
        self.joined: dict[str, list[Hit]] = {}
        self.chars = 0
        self.head: list[str] | None = []  # the whole input while it may still be a paste

    # ------------------------------------------------------------ reading

    def feed(self, lines: Iterable[str]) -> None:
        """Read every line of `lines` (with or without their "\\n")."""
        it = iter(lines)
        self.feed_blocks(_plain(chunk) for chunk in iter(lambda: list(islice(it, BLOCK_LINES)), []))

    def feed_blocks(self, blocks: Iterable[tuple[str | bytes, int]]) -> None:
        """Read every block of `blocks`: (text, n), n lines joined by "\\n", as text or as
        UTF-8 bytes (reader.BoundedLines.blocks)."""
        for text, n in blocks:
            self._block(text, n)
        self.ended = True
        self._block("", 0)

    def _block(self, text: str | bytes, n: int) -> None:
        """Read the `n` lines joined in `text`: the prefilter marks lines in the block's bytes,
        and only the lines around a mark are ever decoded."""
        matcher.spend()
        start = self.lines.end
        if n:
            # bytes come from a file, read as with errors="replace"; text may hold surrogates
            errors = "replace" if isinstance(text, bytes) else "surrogatepass"
            if self.head is not None:
                head = text.decode("utf-8", errors) if isinstance(text, bytes) else text
                self.chars += len(head) + 1
                self.head.extend(head.split("\n"))
                if len(self.head) > matcher.PASTE_LINES or self.chars > matcher.PASTE_CHARS:
                    self.head = None  # a log: nothing of it is kept whole
                    self.joined, self.frames = {}, {}
            block = text if isinstance(text, bytes) else text.encode("utf-8", errors)
            pf = self.idx.prefilter
            found = pf.marked(block, n, errors, log=self.head is None)
            if self.head is None and pf.cut_only:  # a log: see `_no_cut_answer`
                self._drop_cut_records(block, found, pf.cut_only, errors)
            self.lines.add(block, n, found, errors)
            self.cut_only.update(start + i for i in pf.cut_only)
            self.pending.extend(sorted(start + i for i in found))
        self._read_traceback()
        end = self.lines.end
        ready = (
            len(self.pending)
            if self.ended
            else bisect.bisect_left(self.pending, end - UNIT_LINES - 1)
        )
        for t in self.pending[:ready]:
            self._mark(t)
        del self.pending[:ready]
        self._trim()
        if self.head is None:
            self._to_kept()
            self.kept.settle(self._tb_floor(), self.lines.base)

    def _tb_floor(self) -> int:
        """The first line a traceback hit found from now on can start at: the one being read's,
        or the next mark's (where `_mark` starts one)."""
        at = self.lines.end
        if self.pending:
            at = min(at, self.pending[0])
        if self.tb is not None:
            at = min(at, self.tb_start)
        return at + 1

    def _drop_cut_records(
        self, block: bytes, found: dict[int, int], cut: dict[int, int], errors: str
    ) -> None:
        """Unmark the lines marked for their cut alone (line -> its mark's offset in `cut`)
        that `_mark` would pass over: a line that opens a log record, so its unit starts
        there, and shows no pattern's head before the mark, so neither does the text
        `normalize.truncated` finds before it: that text is a part of the line's, the mark
        the same one, when no colour code, redraw (`record_layer`) or log-form suffix (none's
        leading literal) changes the line. Whether a cut was seen matters to a paste alone,
        never to a log."""
        pf = self.idx.prefilter
        if pf.heads_rx is None:  # then any cut may be a message's (`may_be_cut`)
            return
        forms, leads = self.forms, self.suffix_leads
        short = [(k, found[k], mark) for k, mark in cut.items() if mark - found[k] <= MEMO_CHARS]
        if not short:
            return
        # Which of them show a head before their mark: one search over the pieces joined, not
        # a call per line (a log holds thousands of "...Loading..." lines; a head found
        # across a join only keeps a line, which `_mark` then reads as before).
        pieces = [block[at:mark] for _, at, mark in short]
        ends = list(accumulate(len(x) + 1 for x in pieces))
        shown = {
            bisect.bisect_right(ends, m.start()) for m in pf.heads_rx.finditer(b"\n".join(pieces))
        }
        for n, (k, at, mark) in enumerate(short):
            if n in shown:
                continue
            end = block.find(b"\n", mark)
            end = len(block) if end < 0 else end
            if leads and any(block.find(lead, at, end) >= 0 for lead in leads):
                continue
            if normalize.record_layer(block[at:end].decode("utf-8", errors), forms) > 0:
                del found[k], cut[k]

    def _trim(self) -> None:
        if not self.lines.trim(self.lines.end - (2 * UNIT_LINES + 2)):
            return
        base = self.lines.base
        self.kinds = {i: k for i, k in self.kinds.items() if i >= base}
        self.cut_only = {i for i in self.cut_only if i >= base}
        self.done = {w for w in self.done if w[1] > base}

    def _kind(self, i: int) -> tuple[int, str]:
        k = self.kinds.get(i)
        if k is None:
            raw = self.lines[i]
            at = normalize.record_layer(raw, self.forms) if len(raw) <= MEMO_CHARS else 0
            if not at:
                text = normalize.clean_line(raw, self.forms)
                opens = normalize.starts_record(raw, self.forms)
                k = _kind_of(text, START if opens or normalize.is_traceback_header(text) else MORE)
            else:
                rest = raw[at:]
                k = self.cleaned.get(rest)
                if k is None:  # a record's line: START, unless nothing or a fence follows
                    k = _kind_of(normalize.clean_rest(rest, self.forms), START)
                    self.cleaned.put(rest, k)
            self.kinds[i] = k
        return k

    # ------------------------------------------------------------ units

    def _mark(self, t: int) -> None:
        kind, text = self._kind(t)
        if self.tb is None and normalize.is_traceback_header(text):
            self.tb, self.tb_next, self.tb_start = [], t, t
            self._read_traceback()
        if kind in (BLANK, FENCE):
            return
        if t in self.cut_only and kind == START:
            # a log record cut short: its unit starts here, so the line alone must show the
            # head of a pattern (most "...Loading..." lines show none: no unit, no BM25)
            verdict = self.cut_verdicts.get(text)
            if verdict is None:
                body = normalize.truncated(text)
                verdict = (body is not None, body is None or not self._may_be_cut(body))
                self.cut_verdicts.put(text, verdict)
            self.cut_seen = self.cut_seen or verdict[0]
            if verdict[1]:
                return
        if kind == START:  # its unit starts here, and is this line alone if a unit follows
            nxt = t + 1
            alone = self._kind(nxt)[0] in (START, FENCE) if nxt < self.lines.end else self.ended
            if alone:  # (what `_windows` finds, without its walks)
                if (t, nxt) not in self.done:
                    self.done.add((t, nxt))
                    self._unit(t, nxt)
                return
        for a, b in self._windows(t):
            if (a, b) not in self.done:
                self.done.add((a, b))
                self._unit(a, b)

    def _windows(self, t: int) -> list[tuple[int, int]]:
        """The unit holding line `t`, or the windows of a long run that hold it. A log record
        (from its prefixed line) runs over blank lines, as a message printed with empty lines
        does; without a record around it, a blank line ends a unit, as in a paste."""
        end = self.lines.end
        start, record, after_blank = None, False, None
        for i in range(t, t - UNIT_LINES, -1):
            if i < self.lines.base:
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
        if start is None:  # no start within reach: the unit begins after a blank line, if any
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

    def _may_be_cut(self, body: str) -> bool:
        return self.idx.prefilter.may_be_cut(body[-matcher.PARTIAL_CHARS :])

    def _unit(self, a: int, b: int) -> None:
        """Read lines a..b-1 as a paste of them alone is read; a line that is a unit alone
        answers as the same text did before (its hits, moved to its line)."""
        if b != a + 1 or " P " in self.lines[a]:
            self._keep(self._read_unit(a, b))
            return
        text = self._kind(a)[1]
        got = self.one_line.get(text)
        if got is not None:
            self.cut_seen = self.cut_seen or got[1]
            self._keep([_moved(h, a + 1) for h in got[0]])
            return
        seen, self.cut_seen = self.cut_seen, False
        hits = self._read_unit(a, b)
        # copied before they are kept: a log's traceback folding raises a kept hit's score
        self.one_line.put(text, ([_moved(h, None) for h in hits], self.cut_seen))
        self.cut_seen = seen or self.cut_seen
        self._keep(hits)

    def _read_unit(self, a: int, b: int) -> list[Hit]:
        """The hits of lines a..b-1, merged per line, as a paste of them alone is read
        (matcher.explain_text)."""
        idx, allowed = self.idx, self.allowed
        raw = [self.lines[i] for i in range(a, b)]
        if any(" P " in r for r in raw):  # a container runtime's split lines: joined there
            numbered = [(a + no, t) for no, t in normalize.clean_lines(raw, self.forms)]
        else:  # cleaned already, to find the unit
            numbered = [(i + 1, self._kind(i)[1]) for i in range(a, b)]
        numbered = [(no, t) for no, t in numbered if t.strip()]
        if not numbered:
            return []
        hits: list[Hit] = []
        for no, line in numbered:
            for h in matcher.pattern_hits(idx, line, allowed=allowed):
                h.line = no
                hits.append(h)
        texts = [fold_space(t) for _, t in numbered]
        if len(numbered) > 1:
            on_line = {(h.index, h.line) for h in hits}
            for variant, (joined, offsets) in enumerate(normalize.joins(texts), 1):
                for h in self._joined_hits(joined, variant):
                    first = matcher.line_of(offsets, h.span[1])
                    last = matcher.line_of(offsets, max(h.span[2] - 1, h.span[1]))
                    # a message one line already shows, read again with its neighbours
                    if any((h.index, numbered[k][0]) in on_line for k in range(first, last + 1)):
                        continue
                    h.line = numbered[matcher.match_start(self.idx, h, offsets)][0]
                    hits.append(h)
            hits = matcher._drop_contained(hits)
        seen = {h.line for h in hits}
        start = 0  # where a message cut on line k may begin: after the last one that ended
        for k, (no, line) in enumerate(numbered):
            if no in seen:
                start = k + 1
                continue
            if normalize.truncated(line) is None:
                continue
            self.cut_seen = True
            hits += self._partial(line, (no,))
            if k > start:  # a cut message wrapped over the lines before: judged as they read joined
                nos = tuple(n for n, _ in numbered[start : k + 1])
                for joined, offsets in normalize.joins(texts[start : k + 1]):
                    hits += self._partial(joined, nos, offsets)
            # A line cut with "..." ends its message, so the next cut line's message begins
            # after it; joining from the unit's start instead made a unit of cut lines cost
            # the square of its length.
            start = k + 1
        return _one_cut_per_line(idx, _merge_per_line(idx, hits)) if hits else []

    def _joined_hits(self, text: str, variant: int) -> list[Hit]:
        """matcher.pattern_hits of a joined reading of lines. A paste remembers them by text:
        its whole-paste joins (`paste_hits`) read again what a unit of all its lines read (a
        traceback, a wrapped message), and each join costs every candidate's check."""
        # pattern_hits reads the text with its blanks collapsed: the "\n" and " " joins of
        # lines are then one text (and its spans the same offsets: one blank either way)
        key = fold_space(text)
        got = self.joined.get(key)
        if got is None:
            if self.head is None:  # a log: the readings of one unit come one after the other
                self.joined.clear()
            got = self.joined[key] = matcher.pattern_hits(
                self.idx, key, variant=variant, allowed=self.allowed
            )
        # copies: callers set a hit's line, and the span names the reading it came from
        out = [_moved(h, None) for h in got]
        for h in out:
            h.span = (variant, *h.span[1:])
        return out

    def _partial(
        self, text: str, nos: tuple[int, ...], offsets: tuple[int, ...] = (0,)
    ) -> list[Hit]:
        """The records `text` shows cut short; `text` reads lines `nos` joined (`offsets`: where
        each starts in it). Each hit is at the line its message starts on (never the log line
        or the prose before it), and its text is the message from that line on: the same cut
        read alone and read joined with the line before is one answer."""
        body = normalize.truncated(text)
        if body is None or not self._may_be_cut(body):
            return []
        found = self.partials.get(text)
        if found is None:
            found = matcher.partial_hits(self.idx, text, None, allowed=self.allowed)
            if len(self.partials) >= PARTIAL_MEMO:
                self.partials.clear()
            self.partials[text] = found
        out = []
        for h in found:
            k = matcher.line_of(offsets, matcher.cut_start(self.idx, h.index, text))
            out.append(_moved(h, nos[k], body[offsets[k] :]))
        return out

    def _keep(self, hits: list[Hit]) -> None:
        """Keep a unit's hits: all of them while the input may be a paste (bounded by its
        size), then in `kept`, which keeps each message once, with its raw line (for hints)."""
        if not hits:
            return
        base = self.lines.base
        if self.head is not None:
            self.units.append(hits)
            for h in hits:
                if h.line is not None and h.line - 1 >= base:
                    self.hint_lines.setdefault(h.line, self.lines[h.line - 1])
            return
        self._to_kept()
        for h in hits:
            raw = self.lines[h.line - 1] if h.line is not None and h.line - 1 >= base else None
            self.kept.add(h, raw)

    def _to_kept(self) -> None:
        """The hits kept while the input could still be a paste, moved to `kept`."""
        for unit in self.units:
            for h in unit:
                self.kept.add(h, self.hint_lines.get(h.line) if h.line is not None else None)
        self.units, self.hint_lines = [], {}

    # ------------------------------------------------------------ tracebacks

    def _read_traceback(self) -> None:
        """Feed the traceback being read the lines that arrived; parse it at its exception
        line (as normalize.parse_tracebacks reads a paste), or give up after TRACEBACK_LINES."""
        end = self.lines.end
        while self.tb is not None and self.tb_next < end:
            matcher.spend()  # a flood of traceback headers costs time quadratic in its lines
            i = self.tb_next
            self.tb_next += 1
            text = (
                self._kind(i)[1]
                if i in self.kinds
                else normalize.clean_line(self.lines[i], self.forms)
            )
            self.tb.append(text[: matcher.TRACEBACK_LINE_CHARS])
            if len(self.tb) > 1 and (_ends(text) or len(self.tb) >= TRACEBACK_LINES):
                tbs = normalize.parse_tracebacks(self.tb)
                found = [
                    h
                    for tb in tbs
                    for h in matcher.frame_hits(self.idx, tb, i + 1, allowed=self.allowed)
                ]
                if self.head is not None:  # a paste: its lines name the place they were raised
                    first = i + 1 - len(self.tb)  # the 0-based index of self.tb[0]
                    for tb in tbs:
                        for no in range(first + tb.start + 1, first + tb.exc_index + 2):
                            self.frames[no] = (tb.file, tb.line)
                for h in found:  # where the traceback was, to meet its message's own hit
                    h.span = (-1, i + 2 - len(self.tb), i + 1)
                if found:
                    self._keep(found)
                # the line that ended it may open the next one ("Traceback ..." again)
                if normalize.is_traceback_header(text):
                    self.tb, self.tb_start = [text[: matcher.TRACEBACK_LINE_CHARS]], i
                else:
                    self.tb = None

    # ------------------------------------------------------------ answers

    def log_hits(self, hints: dict[int, normalize.Hint] | None) -> list[Hit]:
        """Every known error, each (record, values) once at its first line, most severe first."""
        self._to_kept()
        kept = self.kept.answers()
        if hints is not None and (self.forms.prefixes or self.forms.suffixes):
            for h, raw in kept:
                hint = normalize.line_hint(raw, self.forms) if raw is not None else None
                if hint is not None:
                    hints[h.line] = hint
        return matcher.log_order(self.idx, [h for h, _ in kept])

    def paste_hits(self, hints: dict[int, normalize.Hint]) -> list[Hit]:
        """A paste's hits: as a log's, then the paste's own extras (bounded by its size): the
        whole paste joined across blank lines (a banner), and when nothing matched exactly, a
        message cut short without a mark, then a fuzzy match."""
        idx, allowed = self.idx, self.allowed
        numbered = list(normalize.clean_lines(self.head or [], self.forms, hints))
        hits = [h for unit in self.units for h in unit]
        whole = [(no, fold_space(t)) for no, t in numbered[: matcher.WHOLE_LINES + 1] if t.strip()]
        if 1 < len(numbered) <= matcher.WHOLE_LINES and len(whole) > 1:
            for variant, (joined, offsets) in enumerate(normalize.joins([t for _, t in whole]), 1):
                for h in self._joined_hits(joined, variant + 8):
                    h.line = whole[matcher.match_start(idx, h, offsets)][0]
                    hits.append(h)
            # (a cut message's text is its prefix: it explains no line by literal words)
            cut = [h for h in hits if h.how == "partial"]
            hits = matcher._drop_contained([h for h in hits if h.how != "partial"]) + cut
        exact = [h for h in hits if h.how != "partial"]
        if not exact and not self.cut_seen:
            hits = matcher.uncut_fallbacks(idx, numbered, allowed)
        return matcher.one_per_line(idx, matcher.merge(idx, hits, hints, self.frames))

    def is_paste(self) -> bool:
        return self.head is not None


def _merge_per_line(idx: matcher.Index, hits: list[Hit]) -> list[Hit]:
    """One hit per record and line: the readings of one message (its line alone, the joins)
    become one; the same message on two lines of a unit stays two."""
    groups: dict[tuple[int, int | None], list[Hit]] = {}
    for h in hits:
        groups.setdefault((h.index, h.line), []).append(h)
    return [h for group in groups.values() for h in matcher.merge(idx, group)]


def _one_cut_per_line(idx: matcher.Index, hits: list[Hit]) -> list[Hit]:
    """A cut line's answer, as a paste gives it: matcher.one_per_line over the cut hits, which
    come best and newest first (matcher.partial_hits), so an older wording of the same check
    is no second answer; records sharing the first one's message all stay."""
    kept = {id(h) for h in matcher.one_per_line(idx, [h for h in hits if h.how == "partial"])}
    return [h for h in hits if h.how != "partial" or id(h) in kept]


def _kind_of(text: str, other: int) -> tuple[int, str]:
    """(what a cleaned line is to the units around it: BLANK, FENCE, else `other`; the text)."""
    return (BLANK if not text.strip() else FENCE if normalize.is_fence(text) else other, text)


def _moved(h: Hit, line: int | None, text: str | None = None) -> Hit:
    """A copy of `h` at `line` (a later pass may change a kept hit's score), with `text` as
    the text it matched when given."""
    text = h.text if text is None else text
    return Hit(h.index, h.score, h.how, line, dict(h.values), h.span, h.covered, text)


class _Kept:
    """A log's hits, each message once: the same (record, values, text) again keeps only its
    earliest line, and at most SCAN_MAX_HITS of them are kept. A traceback's frame hit is
    folded into the first hit of its own message that falls in the traceback's lines (the
    exception line, or the code line that spells it) as a paste's merge folds them; the two
    may arrive in either order. So a hit waits (`queue`, in arrival order) until nothing that
    comes later can fold into it or it into something: a message's hit until no traceback
    still to come can start at or before its line (`floor`), a frame hit until no message's
    hit can come inside its traceback's lines (past `base`, the first line still read). Then
    it is counted, in arrival order, as all hits at the end were before. What waits lies in a
    window of lines (a block, a unit, a traceback), so what is kept is bounded, not the log."""

    def __init__(self) -> None:
        self.queue: deque[_Entry] = deque()
        self.frames: dict[int, list[_Entry]] = {}  # frame hits not folded yet, by record
        self.open: dict[int, deque[_Entry]] = {}  # waiting message hits, by record
        self.first: dict[tuple, _Entry] = {}  # (record, values, text) -> its earliest hit

    def add(self, h: Hit, raw: str | None) -> None:
        e = _Entry(h, raw)
        self.queue.append(e)
        if h.how != "traceback":
            e.kind = _MESSAGE
            self._fold_into(e)
            self.open.setdefault(h.index, deque()).append(e)
        elif h.span and h.span[0] == -1:
            e.kind = _FRAME
            if not self._fold(e):
                self.frames.setdefault(h.index, []).append(e)

    def _fold(self, frame: _Entry) -> bool:
        """Fold a frame hit into the first waiting hit of its message; False when none is."""
        _, lo, hi = frame.hit.span
        for e in self.open.get(frame.hit.index, ()):
            if lo <= (e.hit.line or 0) <= hi:
                _raise(e.hit, frame)
                return True
        return False

    def _fold_into(self, e: _Entry) -> None:
        """Fold into a message's new hit the frame hits waiting for it, in their order."""
        frames = self.frames.get(e.hit.index)
        if not frames:
            return
        line = e.hit.line or 0
        for f in frames:
            if f.hit.span[1] <= line <= f.hit.span[2]:
                _raise(e.hit, f)
        self.frames[e.hit.index] = [f for f in frames if not f.gone]

    def settle(self, floor: int, base: int, every: bool = False) -> None:
        """Count the hits nothing can fold any more: no traceback found later starts before
        line `floor`, no hit found later is before line `base` + 1 (`every`: the input ended)."""
        queue = self.queue
        while queue:
            e = queue[0]
            h = e.hit
            if e.gone:
                pass
            elif e.kind == _MESSAGE:
                if not every and (h.line or 0) >= floor:
                    return
                self.open[h.index].popleft()
            elif e.kind == _FRAME:
                if not every and h.span[2] > base:
                    return
                self.frames[h.index].remove(e)
            queue.popleft()
            if not e.gone:
                self._count(e)

    def _count(self, e: _Entry) -> None:
        # the same message again is reported once; another message that reads as the same
        # record (a different cut of it) is an answer of its own
        h = e.hit
        key = (h.index, tuple(sorted(h.values.items())), h.text)
        old = self.first.get(key)
        if old is None:
            if len(self.first) < matcher.SCAN_MAX_HITS:
                self.first[key] = e
        elif (h.line or 0) < (old.hit.line or 0):
            self.first[key] = e

    def answers(self) -> list[tuple[Hit, str | None]]:
        """Each message's hit and its raw line, once the input has ended."""
        self.settle(0, 0, every=True)
        return [(e.hit, e.raw) for e in self.first.values()]

    def size(self) -> int:
        """Hits held (a test's measure of the bound)."""
        return len(self.queue) + len(self.first)


_OTHER, _MESSAGE, _FRAME = 0, 1, 2  # what a kept hit is to traceback folding


class _Entry:
    __slots__ = ("hit", "raw", "kind", "gone")

    def __init__(self, hit: Hit, raw: str | None) -> None:
        self.hit, self.raw, self.kind, self.gone = hit, raw, _OTHER, False


def _raise(h: Hit, frame: _Entry) -> None:
    """A message's hit with its traceback's frame hit folded in (two agreements)."""
    frame.gone = True
    h.score = min(1.0, max(h.score, frame.hit.score) + 0.02)


class _Memo(dict):
    """Answers by text, bounded (MEMO, MEMO_CHARS, MEMO_TOTAL): a log of ever new lines makes
    it start over, which costs nothing but the misses."""

    chars = 0

    def put(self, key: str, value: object) -> None:
        if len(key) > MEMO_CHARS:
            return
        if len(self) >= MEMO or self.chars > MEMO_TOTAL:
            self.clear()
            self.chars = 0
        self[key] = value
        self.chars += len(key)


def _ends(text: str) -> bool:
    """The line that ends a traceback: not indented, not a frame, not blank."""
    return bool(text) and not text.startswith((" ", "\t")) and not normalize.FRAME_RE.match(text)


def _plain(chunk: list[str]) -> tuple[str, int]:
    """(text, n): `chunk` as a block of n physical lines joined by "\\n". A file's lines keep
    their "\\n"; a list given by a caller may hold several lines in one string."""
    text = "".join(chunk)
    n = text.count("\n")
    if n == len(chunk) and text.endswith("\n"):  # a file's lines: each ends with its "\n"
        return text[:-1], n
    if (
        n == len(chunk) - 1
        and not chunk[-1].endswith("\n")
        and all(x.endswith("\n") for x in chunk[:-1])
    ):
        return text, len(chunk)
    if n == 0:
        return "\n".join(chunk), len(chunk)
    lines = "\n".join(x[:-1] if x.endswith("\n") else x for x in chunk).split("\n")
    return "\n".join(lines), len(lines)


class Lines:
    """The lines `base` .. `end` of the input, kept as the UTF-8 blocks they came in. A line is
    found from the nearest line whose start is known (the prefilter's marks, each block's
    ends), by `find`, and decoded when asked for: a block of 10,000 lines with a mark in a few
    costs a few decodes, not 10,000 strings."""

    def __init__(self) -> None:
        self.blocks: list[_Block] = []
        self.base = 0
        self.end = 0

    def add(self, block: bytes, n: int, starts: dict[int, int], errors: str) -> None:
        self.blocks.append(_Block(self.end, block, n, starts, errors))
        self.end += n

    def __getitem__(self, i: int) -> str:
        blocks = self.blocks
        for j in range(len(blocks) - 1, -1, -1):  # a scan reads the last block or the one before
            b = blocks[j]
            if i >= b.first:
                return b.line(i - b.first)
        raise IndexError(i)

    def trim(self, keep_from: int) -> bool:
        """Drop the blocks wholly before line `keep_from`; True when some were."""
        k = 0
        while k < len(self.blocks) - 1 and self.blocks[k + 1].first <= keep_from:
            k += 1
        if not k:
            return False
        del self.blocks[:k]
        self.base = self.blocks[0].first
        return True


class _Block:
    __slots__ = ("first", "data", "n", "starts", "known", "text", "errors")

    def __init__(
        self, first: int, data: bytes, n: int, starts: dict[int, int], errors: str
    ) -> None:
        self.first, self.data, self.n, self.errors = first, data, n, errors
        self.starts = {0: 0, **starts}  # line -> offset of its start
        self.known = sorted(self.starts)
        self.text: dict[int, str] = {}

    def line(self, k: int) -> str:
        text = self.text.get(k)
        if text is None:
            start = self._start(k)
            end = self.data.find(b"\n", start)
            text = self.data[start : len(self.data) if end < 0 else end].decode(
                "utf-8", self.errors
            )
            self.text[k] = text
        return text

    def _start(self, k: int) -> int:
        at = self.starts.get(k)
        if at is not None:
            return at
        if not 0 <= k < self.n:
            raise IndexError(k)
        j = bisect.bisect_right(self.known, k) - 1
        below = self.known[j]
        above = self.known[j + 1] if j + 1 < len(self.known) else None
        data = self.data
        if above is not None and above - k < k - below:  # back from the start above
            at = self.starts[above]
            for _ in range(above - k):
                at = data.rfind(b"\n", 0, at - 1) + 1
        else:
            at = self.starts[below]
            for _ in range(k - below):
                at = data.find(b"\n", at) + 1
        self.starts[k] = at
        bisect.insort(self.known, k)
        return at
