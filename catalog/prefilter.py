"""The bulk prefilter of a scan: which lines of a block of log text may hold a known error.

Each record has one key (chosen when the catalog is built, stored with its anchor): a literal
piece of its message that every match must contain, picked to be rare in the default project's real log
lines (data/noise.json), not only in the catalog. All keys, the traceback header and a cut
mark at a line's end make one RE2 alternation, run over a whole block of lines at once: RE2
takes time linear in the block, where Python's `re` tries every alternative at every position
(500 s for the 20 MB that RE2 reads in 0.2 s). Only the lines it marks are cleaned and matched.
A log's alternation (`log_cuts`) leaves out the cut lines a scan would pass over anyway: a
timestamped line that ends in "..." and shows no pattern's head, most of a real log's marks.

A key is a necessary condition, never a guess: a line it does not mark cannot match a record.
So a key only holds literal text, a whitespace run where the pattern has one (a space matches
any run of blanks, as the matcher folds them) and `\\b` only where the pattern puts a blank
beside a word character. A message wrapped mid-word by a terminal keeps its key only when the
cut misses it; the lines that were cut there (as long as the longest line) are joined and read
again so such a key is still seen.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Iterable, Sequence
from itertools import accumulate

from kverr.catalog import patterns

# What `str.split()` takes for whitespace, as an RE2 class over code points.
BLANK_CLASS = (
    r"[\t-\r \x{1c}-\x{1f}\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}"
    r"\x{205f}\x{3000}]"
)
_WORD = re.compile(r"[0-9A-Za-z_]")
TRACEBACK = r"Traceback \(most recent call last\)"
# a cut mark ending a line (normalize.CUT_MARKS, then blanks, quotes, closing brackets)
CUT_AT_END_CLASS = BLANK_CLASS.replace(r"\t-\r", r"\t\x0b-\r")  # blanks, but no newline
CUT_MARK = r"(?:\.\.\.|…|\[truncated\]|\(truncated\))"
CUT_TRAIL = CUT_AT_END_CLASS + r"|['\")\]]"
CUT_AT_END = CUT_MARK + "(?:" + CUT_TRAIL + ")*$"  # the mark ends its own line
CRI_PARTIAL = r" (?:stdout|stderr) P "  # a line a container runtime split: joined in cleaning
# The bracketed timestamp that opens a log record, `[2025-01-01 10:00:00`, one atom a character
# (normalize.PREFIX_RE's first form, which then allows up to STAMP_TAIL characters to its `]`)
STAMP = tuple({"D": "[0-9]", "_": "[ T]"}.get(c, re.escape(c)) for c in "[DDDD-DD-DD_DD:DD:DD")
STAMP_TAIL = 80
# BLANK_CLASS (and the cut's, without "\n") as UTF-8 bytes, for RE2's Latin-1 mode, where a
# class is a set of bytes (and so matches a byte that is no UTF-8 as well)
BLANK_BYTES = (
    r"(?:[\t-\r \x1c-\x1f]|\xc2[\x85\xa0]|\xe1\x9a\x80|\xe2\x80[\x80-\x8a\xa8\xa9\xaf]"
    r"|\xe2\x81\x9f|\xe3\x80\x80)"
)
CUT_BLANK_BYTES = BLANK_BYTES.replace(r"\t-\r", r"\t\x0b-\r")
# A blank inside a key, as one byte class: ASCII blanks and every byte beyond ASCII, a superset
# of BLANK_BYTES (each of its multi-byte blanks is made of such bytes). A key is a necessary
# condition, so a superset only marks a line more (then matched exactly); the alternation of
# the exact UTF-8 blanks in every multi-word key slowed RE2's DFA over a whole log by a third.
KEY_BLANK_BYTES = r"[\t-\r \x1c-\x1f\x80-\xff]"
SMALL_BLOCK = 2048  # bytes: a block this short is read whole until the block regex is compiled
ROWS_FOUND = 64  # continuation lines a block's regex pass finds; the rest, by a split
SEAM = 48  # characters each side of a wrap that are read again joined (a key is shorter)
# a line that opens a log record: a bracketed timestamp `[2025-...]`, a level word (root logger)
RECORD_STARTS = ("[", "INFO", "WARNING", "ERROR", "DEBUG", "CRITICAL")


def _opens_none(words: Sequence[str]) -> str:
    """RE2 for a line break and the first characters of a line that starts with none of
    `words`: RE2 has no lookahead, so each word is spelled as the ways of leaving it."""
    heads: dict[str, list[str]] = {}
    for w in words:
        heads.setdefault(w[0], []).append(w[1:])
    alts = ["[^" + "".join(re.escape(c) for c in sorted(heads)) + "]"]
    for c, rests in sorted(heads.items()):
        if "" in rests:  # the word is this one character: nothing starting so is a continuation
            continue
        alts.append(re.escape(c) + "(?:" + _opens_none(rests)[2:] + ")")
    return "\\n(?:" + "|".join(alts) + ")"


def _bytewise(pattern: str) -> bytes:
    """`pattern` (RE2 syntax for text, BLANK_CLASS its only class beyond ASCII) for RE2's
    Latin-1 mode: every other character beyond ASCII as its UTF-8 bytes. (Keys are escaped
    literals and BLANK_CLASS: another `\\x{...}` would be a new kind of key.)"""
    pattern = pattern.replace(CUT_AT_END_CLASS, CUT_BLANK_BYTES).replace(
        BLANK_CLASS, KEY_BLANK_BYTES
    )
    if "\\x{" in pattern:
        raise ValueError(f"a prefilter key with a code point escape: {pattern[:200]!r}")
    return "".join(
        ch if ord(ch) < 128 else "".join(f"\\x{b:02x}" for b in ch.encode()) for ch in pattern
    ).encode()


MIN_KEY = 3  # characters; shorter literals are in every other line
# pieces in a row a key may take when every single piece and pair is in real log lines: a
# few records ("X is deprecated and will be removed in Y. Use Z.") read like other messages,
# and each line such a key marks costs a scan a look (bench_scan's log: ~12,600 key marks -> ~9,300)
LONGER = (3, 4)
# A cut message is judged only when it shows 15 literal characters (matcher.partial_hits):
# what it then certainly shows of its pattern is the pattern's head (`head`).
HEAD_CHARS = 15


def head(sh: patterns.Shape) -> str:
    """The longest piece of literal text every cut message judged by `sh` shows: a cut is
    judged once it shows HEAD_CHARS literal characters in order (matcher.partial_hits), so
    it shows the first HEAD_CHARS of the first run, or, when that run is shorter, the whole
    run and the first characters of the next, up to HEAD_CHARS in all. A pattern that opens
    with "." or "`" then has a head no cut line ending in "..." shows by chance."""
    best, before = "", 0
    for run in sh.runs:
        piece = run[: HEAD_CHARS - before]
        if len(piece) > len(best):
            best = piece
        before += len(run)
        if before >= HEAD_CHARS:
            break
    return best


def escape(text: str) -> str:
    """`text` as an RE2 literal (Python's re.escape is valid RE2 too, `\\ ` excepted)."""
    return re.escape(text).replace("\\ ", " ")


def candidates(
    sh: patterns.Shape, sizes: tuple[int, ...] = (1, 2)
) -> list[tuple[str, tuple[str, ...]]]:
    """(key regex, literal pieces) a text matching `sh` certainly contains: runs of `sizes`
    neighbouring pieces (single pieces, and pairs for records whose every word is common)."""
    out = []
    last = len(sh.runs) - 1
    for i, run in enumerate(sh.runs):
        # outside the run: a blank (a whitespace gap), a value, or the pattern's end, where an
        # unanchored search may start or stop inside a word
        before = sh.gaps[i] if sh.gaps[i] in ("ws", "var") else "end"
        after = (sh.gaps[i + 1] or "var") if i < last else (sh.tail_gap or "end")
        found = [(m.group(), m.start(), m.end()) for m in re.finditer(r"\S+", run)]
        for j in range(len(found)):
            for k in sizes:
                seq = found[j : j + k]
                if len(seq) < k or len(" ".join(p for p, _, _ in seq)) < MIN_KEY:
                    continue
                left = "ws" if seq[0][1] > 0 else before
                right = "ws" if seq[-1][2] < len(run) else after
                key = (BLANK_CLASS + "+").join(escape(p) for p, _, _ in seq)
                if left == "ws" and _WORD.match(seq[0][0][0]):
                    key = r"\b" + key
                if right == "ws" and _WORD.match(seq[-1][0][-1]):
                    key += r"\b"
                out.append((key, tuple(p for p, _, _ in seq)))
    return out


NOISE_MEMO = 50_000  # keys whose noise count is remembered (records share keys: a few per key)


class NoiseCount:
    """How often a candidate key occurs in real log lines (fewer is better). A key without
    `\\b` is counted with `str.count`; the others with `re` over just the lines holding the
    key's longest piece, so a build counts 10,000 keys in about a second."""

    def __init__(self, lines: Iterable[str]) -> None:
        self.lines = list(lines)
        self.text = "\n".join(self.lines)
        self.starts = list(accumulate((len(x) + 1 for x in self.lines[:-1]), initial=0))
        self._memo: dict[str, int] = {}

    def __call__(self, key: str, pieces: tuple[str, ...]) -> int:
        found = self._memo.get(key)
        if found is None:
            if len(self._memo) >= NOISE_MEMO:  # bounded: a catalog of 100,000 records asks
                self._memo.clear()  # for millions of keys, each record's own
            found = self._memo[key] = self._count(key, pieces)
        return found

    def _count(self, key: str, pieces: tuple[str, ...]) -> int:
        n = min(self.text.count(p) for p in pieces)  # an upper bound, and usually 0
        if not n or (len(pieces) == 1 and "\\b" not in key):
            return n
        longest = max(pieces, key=len)
        rows, at = set(), self.text.find(longest)
        while at >= 0:
            rows.add(bisect.bisect_right(self.starts, at) - 1)
            at = self.text.find(longest, at + 1)
        rx = re.compile(key.replace(BLANK_CLASS, r"\s"))
        return sum(len(rx.findall(self.lines[i])) for i in rows)


def _value_like(piece: str) -> bool:
    """A model or class name, a version (`Llama4`, `DeepseekV3ForCausalLM`, `fa3`): real logs
    print these as values in many lines, which a corpus of messages cannot count."""
    return any(c.isdigit() for c in piece) or any(c.isupper() for c in piece[1:])


def choose_key(sh: patterns.Shape, noise: NoiseCount, catalog_df: dict[str, int]) -> str | None:
    """The rarest key of a pattern: fewest noise hits, then words over names, then a single
    piece over a pair, then fewest records sharing it, then the longest. None when the pattern has no literal piece."""
    cands = candidates(sh)
    if not cands:
        return None

    def rank(c: tuple[str, tuple[str, ...]]) -> tuple:
        return (
            noise(*c),
            any(map(_value_like, c[1])),
            len(c[1]),
            catalog_df.get(c[0], 0),
            -len(" ".join(c[1])),
            c[0],
        )

    best = min(cands, key=rank)
    if noise(*best):  # every piece and pair is in real log lines: three or four in a row may not be
        best = min([best, *candidates(sh, LONGER)], key=rank)
    return best[0]


# ---------------------------------------------------------------- the automaton


def _re2():
    try:
        import re2
    except ImportError:  # pragma: no cover - a platform without the wheel: every line is read
        return None
    return re2


_CUT_FIRST = (b".", "…".encode(), b"[", b"(")
_CUT_TEXT = _bytewise("(?m)" + CUT_AT_END).decode()
_OPENS_NONE = _bytewise(_opens_none(RECORD_STARTS)).decode()
_BARE_CUTS = (b"...", "…".encode())  # a cut mark with nothing after it


def _not(atom: str) -> str:
    """A character that is neither `atom` (a class or one literal) nor a line break."""
    inside = atom[1:-1] if atom.startswith("[") and len(atom) > 2 else atom
    return "[^" + inside + "\\n]"


def log_cuts(heads: Sequence[str]) -> str:
    """RE2 (text, `(?m)`) for the lines ending in a cut mark that a log's scan must read: all of
    them but those that open with a timestamp (`STAMP`, its `]` within STAMP_TAIL characters)
    and show no pattern's head, no carriage return and no colour code. Such a line opens a log
    record under every project's forms (PREFIX_RE is among them, and a profile's own form cannot
    read an empty prefix there: regexsafe.line_form_problem), so its unit starts at it and its
    cleaned text is a piece of it before its mark: it shows no head either, and
    `stream.Scanner._mark` passes over it. A real log's cut lines are nearly all of this kind
    ("Loading weights ...", "Stopping server loop..."): one Python step each in `marked`,
    another in `stream.Scanner._drop_cut_records`, as much as the rest of a scan. RE2 has no
    lookahead, so "does not open with the timestamp" is spelt as where a line leaves it: a
    character unlike the stamp's at some atom (then anything, then the cut), a cut within the
    stamp's length, or the stamp with no `]` in the next STAMP_TAIL characters."""
    cut = CUT_AT_END
    left = "|".join("".join(STAMP[:i]) + _not(STAMP[i]) for i in range(len(STAMP)))
    stamp, n = "".join(STAMP), STAMP_TAIL
    alts = [
        f"^(?:{left})[^\\n]*{cut}",
        f"^[^\\n]{{0,{len(STAMP)}}}{cut}",  # the mark begins where the stamp would be
        f"^{stamp}(?:[^\\]\\n]{{{n + 1}}}[^\\n]*|[^\\]\\n]{{0,{n}}}){cut}",
        # shows a head, a carriage return or a colour code before the mark, or a return after it
        "(?:" + "|".join([*map(escape, sorted(set(heads))), r"\r", r"\x1b"]) + f")[^\\n]*{cut}",
        f"{CUT_MARK}(?:{CUT_TRAIL})*\\r(?:{CUT_TRAIL})*$",
    ]
    return "|".join(alts)


def sources(keys: Sequence[str], heads: Sequence[str] = ()) -> dict[str, str]:
    """The texts of the prefilter's regexes for these keys and heads: made once when the catalog
    is written (matcher.index_state stores them), as spelling ~2,500 keys bytewise cost a
    one-shot explain 50 ms. "" where there is nothing to look for."""
    alts = sorted(set(keys))
    # The block pass reads bytes as they are (a file may hold some that are no UTF-8):
    # Latin-1 mode, the pattern spelled in UTF-8 bytes (ASCII text: `_bytewise` escapes the
    # rest). Its last alternative matches the line break before a line that opens no record,
    # for the seams (`Prefilter._wrapped`).
    # A log's (`log`): the same, but of the lines cut with a mark only those `log_cuts` keeps
    # (without heads, any cut may be a message's: then a log is read as a paste is).
    log = [*alts, TRACEBACK, log_cuts(heads), CRI_PARTIAL] if heads else []
    return {
        "marks": _bytewise("(?m)" + "|".join([*alts, TRACEBACK, CUT_AT_END, CRI_PARTIAL])).decode(),
        "log": _bytewise("(?m)" + "|".join(log)).decode() if log else "",
        "joined": "|".join(alts),  # keys across a wrap (`_wrapped`)
        "heads": "|".join(map(escape, sorted(set(heads)))),
    }


class Prefilter:
    """One RE2 alternation over every key, the traceback header and end-of-line cut marks.
    Each regex is compiled on first use: a one-line paste needs only the first (7 compiles of
    ~2,500 alternatives cost a one-shot explain 45 ms). Without RE2 installed every line is
    read (the old cost, the same answers)."""

    def __init__(self, texts: dict[str, str]) -> None:
        # of the last `marked` block: lines marked for a cut alone -> where the cut mark starts
        self.cut_only: dict[int, int] = {}
        self.texts = texts
        self.re2 = _re2()
        if self.re2 is not None:
            self._unanchored = self.re2._Anchor.UNANCHORED
            self._both = self.re2._Anchor.ANCHOR_BOTH

    def _compile(self, text: str, latin1: bool = True):
        """`text` compiled (None without RE2 or without text)."""
        if self.re2 is None or not text:
            return None
        opts = self.re2.Options()
        opts.max_mem = 64 << 20  # the DFA of ~1,500 keys; past this RE2 would fall back to NFA
        if latin1:
            opts.encoding = self.re2.Options.Encoding.LATIN1
        return self.re2.compile(text.encode(), opts)

    @functools.cached_property
    def rx(self):
        """The marks, and the break before a line that opens no record (a row)."""
        return self._compile(self.texts["marks"] + "|" + _OPENS_NONE)

    @property
    def compiled(self) -> bool:
        """Whether `rx` has been compiled (cached_property keeps it in the instance's dict)."""
        return "rx" in self.__dict__

    @functools.cached_property
    def marks_rx(self):
        return self._compile(self.texts["marks"])

    @functools.cached_property
    def log_rx(self):
        """`rx` for a log: of the cut lines, only those `log_cuts` keeps (None: no such text)."""
        text = self.texts.get("log")
        return self._compile(text + "|" + _OPENS_NONE) if text else None

    @functools.cached_property
    def log_marks_rx(self):
        return self._compile(self.texts["log"])

    @functools.cached_property
    def joined_rx(self):
        return self._compile(self.texts["joined"], latin1=False)

    @functools.cached_property
    def cut_rx(self):
        return self._compile(_CUT_TEXT)

    @functools.cached_property
    def heads_rx(self):
        return self._compile(self.texts["heads"], latin1=False)

    def may_be_cut(self, body: str) -> bool:
        """False when `body` (a line before its cut mark) shows no pattern's head: no record
        can then be judged by its prefix (matcher.partial_hits), and the BM25 query is saved."""
        if self.heads_rx is None:
            return True
        return self.heads_rx.search(body.encode("utf-8", "surrogatepass")) is not None

    def marked(
        self, block: bytes, n: int, errors: str = "surrogatepass", log: bool = False
    ) -> dict[int, int]:
        """{line: offset of its start} for the lines of `block` (`n` lines of UTF-8 joined by
        "\\n") that a key, a traceback header or a cut mark touches: one RE2 pass, each match
        costing a call, and line numbers counted between matches by `bytes.count`, so the lines
        nothing marks cost no Python step. `log`: the block is a log's, whose cut lines are
        marked only where `log_cuts` says a scan must read them (a paste's cut lines say
        whether a cut was seen, so all are marked)."""
        # Every line is read without RE2, without keys, and for a short paste in a process
        # that has not compiled the regex yet (a one-shot explain), where that is cheaper than
        # compiling it and building its first DFA states (~30 ms). The answers are the same:
        # a key only ever skips a line. (`self.rx`, last, compiles it.) A log has its own
        # regex, whatever the block's size (the paste's is not compiled for it).
        self.cut_only = {}  # lines marked for their cut mark alone (see `cut_only`)
        log = log and self.log_rx is not None
        if log:
            rx = self.log_rx
        elif (
            self.re2 is None
            or (not self.compiled and len(block) <= SMALL_BLOCK)
            or (rx := self.rx) is None
        ):
            return _all_lines(block, n)
        out: dict[int, int] = {}
        rows: list[tuple[int, int]] = []  # (line, start) of lines that open no record
        # the binding's own Match: the Python wrapper costs more per call than the search
        match, anchor = rx._regexp.Match, self._unanchored
        whole = self.cut_rx._regexp.Match
        pos = last = line = 0  # `line`: the line that starts at offset `last`
        size = len(block)
        split = None  # (line, offset) from which the rows are found by splitting lines
        while pos <= size:
            start, end = match(anchor, block, pos, size)[0]
            if start < 0:
                break
            if block[start] == 10:  # the line break before a continuation (no key has one)
                line += block.count(b"\n", last, start + 1)
                last = pos = start + 1
                rows.append((line, last))
                if len(rows) >= ROWS_FOUND:  # bare text: a match a line costs more than a split
                    marks = self.log_marks_rx if log else self.marks_rx  # compiled here
                    split, match = (line, last), marks._regexp.Match
                continue
            first = block.rfind(b"\n", last, start) + 1 or last  # the start of its line
            line += block.count(b"\n", last, first)
            last = first
            nl = block.find(b"\n", start)
            # A log's cut alternatives match from a line's start or a head to the line's end,
            # before any key after that start: a match that ends its line is found again by the
            # paste's regex, whose first mark in the line says whether the cut is its only one.
            if log and end == (size if nl < 0 else nl):
                start, end = self.marks_rx._regexp.Match(anchor, block, first, size)[0]
            if nl < 0 or nl >= end:  # the usual: a match inside one line
                if line not in out:
                    out[line] = first
                across = 0
            else:  # a key across a wrap: every line it is on
                across = block.count(b"\n", start, end)
                at = first
                for k in range(line, line + across + 1):
                    out.setdefault(k, at)
                    at = block.find(b"\n", at) + 1
                nl = block.find(b"\n", end)
            # a cut mark, its line's first mark: no key before it ("..." alone: no call)
            if (end - start == 3 and block[start:end] in _BARE_CUTS) or (
                block.startswith(_CUT_FIRST, start)
                and whole(self._both, block, start, end)[0][0] >= 0
            ):
                self.cut_only[line] = start
            if nl < 0:
                break
            # one mark a line: read on from its end, where the next line's break may mark it
            line, last, pos = line + across + 1, nl + 1, nl
        if split is not None:  # past ROWS_FOUND rows, the rest are found line by line
            line, at = split
            rows.pop()  # (the row `split` starts at: found again)
            for piece in block[at:].split(b"\n"):
                if not piece.startswith(_RECORD_STARTS):
                    rows.append((line, at))
                line, at = line + 1, at + len(piece) + 1
        # else the last line is no continuation RE2 could see whole when it ends the block early
        elif (tail := block.rfind(b"\n") + 1) and not block.startswith(_RECORD_STARTS, tail):
            if not rows or rows[-1][1] != tail:
                rows.append((n - 1, tail))
        self._wrapped(block, rows, out, errors)
        return out

    def _wrapped(
        self, block: bytes, rows: list[tuple[int, int]], out: dict[int, int], errors: str
    ) -> None:
        """A terminal that wraps a long line cuts it anywhere, mid-word too, and a key cut
        there is in neither line. So each line that does not open a log record (no `[` or
        level word first: a continuation, `rows`, found in the block pass) is read again
        glued to the end of the line before, all such seams of the block in one search; a key
        across the seam marks both lines."""
        if not rows or self.joined_rx is None:
            return
        if len(rows) > ROWS_FOUND:  # bare text, most lines rows: the block's lines at once
            lines = block.decode("utf-8", errors).split("\n")
            ends = [lines[row - 1][-SEAM:] for row, _ in rows]
            seams = [a + lines[row][:SEAM] for a, (row, _) in zip(ends, rows, strict=True)]
        else:
            ends, seams = [], []
            for _, at in rows:
                before = block.rfind(b"\n", 0, at - 1) + 1
                end = block.find(b"\n", at)
                ends.append(block[before : at - 1].decode("utf-8", errors)[-SEAM:])
                line = block[at : len(block) if end < 0 else end].decode("utf-8", errors)
                seams.append(ends[-1] + line[:SEAM])
        cuts = [len(a) for a in ends]
        text = "\n".join(seams).encode("utf-8", "surrogatepass")
        starts = list(
            accumulate((len(x.encode("utf-8", "surrogatepass")) + 1 for x in seams), initial=0)
        )
        # finditer through the binding's own Match (the wrapper's Match objects cost more
        # than the search); keys are never empty, so each search goes on from a match's end
        match, anchor, pos, size = self.joined_rx._regexp.Match, self._unanchored, 0, len(text)
        while pos < size:
            start, end = match(anchor, text, pos, size)[0]
            if start < 0:
                break
            pos = end if end > start else start + 1
            k = bisect.bisect_right(starts, start) - 1
            cut = starts[k] + len(seams[k][: cuts[k]].encode("utf-8", "surrogatepass"))
            if start < cut < end:  # across the seam (inside one line: already seen)
                row, at = rows[k]
                out.setdefault(row - 1, block.rfind(b"\n", 0, at - 1) + 1)
                out.setdefault(row, at)


_RECORD_STARTS = tuple(s.encode() for s in RECORD_STARTS)


def _all_lines(block: bytes, n: int) -> dict[int, int]:
    """Without RE2: every line, with its start."""
    starts = [0]
    for _ in range(n - 1):
        starts.append(block.find(b"\n", starts[-1]) + 1)
    return dict(enumerate(starts))
