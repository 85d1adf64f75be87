"""The bulk prefilter of a scan: which lines of a block of log text may hold a known error.

Each record has one key (chosen when the catalog is built, stored with its anchor): a literal
piece of its message that every match must contain, picked to be rare in the default project's real log
lines (data/noise.json), not only in the catalog. All keys, the traceback header and a cut
mark at a line's end make one RE2 alternation, run over a whole block of lines at once: RE2
takes time linear in the block, where Python's `re` tries every alternative at every position
(500 s for the 20 MB that RE2 reads in 0.2 s). Only the lines it marks are cleaned and matched.

A key is a necessary condition, never a guess: a line it does not mark cannot match a record.
So a key only holds literal text, a whitespace run where the pattern has one (a space matches
any run of blanks, as the matcher folds them) and `\\b` only where the pattern puts a blank
beside a word character. A message wrapped mid-word by a terminal keeps its key only when the
cut misses it; the lines that were cut there (as long as the longest line) are joined and read
again so such a key is still seen.
"""

from __future__ import annotations

import bisect
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
CUT_AT_END = (  # blanks, but no newline: the mark ends its own line
    r"(?:\.\.\.|…|\[truncated\]|\(truncated\))(?:"
    + BLANK_CLASS.replace(r"\t-\r", r"\t\x0b-\r")
    + r"|['\")\]])*$"
)
CRI_PARTIAL = r" (?:stdout|stderr) P "  # a line a container runtime split: joined in cleaning
SLICE = 16 << 10
SEAM = 48  # characters each side of a wrap that are read again joined (a key is shorter)
# a line that opens a log record: a bracketed timestamp `[2025-...]`, a level word (root logger)
RECORD_STARTS = ("[", "INFO", "WARNING", "ERROR", "DEBUG", "CRITICAL")
MIN_KEY = 3  # characters; shorter literals are in every other line
# A cut message is judged only when it shows 15 literal characters (matcher.partial_hits), so
# it holds the first 15 of its pattern's first literal run (or the whole run, if shorter).
HEAD_CHARS = 15


def escape(text: str) -> str:
    """`text` as an RE2 literal (Python's re.escape is valid RE2 too, `\\ ` excepted)."""
    return re.escape(text).replace("\\ ", " ")


def candidates(sh: patterns.Shape) -> list[tuple[str, tuple[str, ...]]]:
    """(key regex, literal pieces) a text matching `sh` certainly contains: single pieces, and
    pairs of neighbouring pieces (for records whose every word is common)."""
    out = []
    last = len(sh.runs) - 1
    for i, run in enumerate(sh.runs):
        # outside the run: a blank (a whitespace gap), a value, or the pattern's end, where an
        # unanchored search may start or stop inside a word
        before = sh.gaps[i] if sh.gaps[i] in ("ws", "var") else "end"
        after = (sh.gaps[i + 1] or "var") if i < last else (sh.tail_gap or "end")
        found = [(m.group(), m.start(), m.end()) for m in re.finditer(r"\S+", run)]
        for j in range(len(found)):
            for k in (1, 2):
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
        if key not in self._memo:
            self._memo[key] = self._count(key, pieces)
        return self._memo[key]

    def _count(self, key: str, pieces: tuple[str, ...]) -> int:
        n = min(self.text.count(p) for p in pieces)  # an upper bound, and usually 0
        if not n or (len(pieces) == 1 and "\\b" not in key):
            return n
        longest = max(pieces, key=len)
        rows, at = set(), self.text.find(longest)
        while at >= 0:
            rows.add(bisect.bisect_right(self.starts, at) - 1)
            at = self.text.find(longest, at + 1)
        rx = re.compile(_python_re(key))
        return sum(len(rx.findall(self.lines[i])) for i in rows)


def _python_re(key: str) -> str:
    return key.replace(BLANK_CLASS, r"\s")


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
    return min(
        cands,
        key=lambda c: (
            noise(*c),
            any(map(_value_like, c[1])),
            len(c[1]),
            catalog_df.get(c[0], 0),
            -len(" ".join(c[1])),
            c[0],
        ),
    )[0]


# ---------------------------------------------------------------- the automaton


def _re2():
    try:
        import re2
    except ImportError:  # pragma: no cover - a platform without the wheel: every line is read
        return None
    return re2


_CUT_FIRST = (b".", "…".encode(), b"[", b"(")


class Prefilter:
    """One RE2 alternation over every key, the traceback header and end-of-line cut marks.
    Without RE2 installed every line is read (the old cost, the same answers)."""

    def __init__(self, keys: Sequence[str], heads: Sequence[str] = ()) -> None:
        self.cut_only: set[int] = set()  # of the last `marked` block: marked for a cut alone
        self.rx = None
        self.joined_rx = None
        self.heads_rx = None
        re2 = _re2()
        if re2 is None:
            return
        opts = re2.Options()
        opts.max_mem = 64 << 20  # the DFA of ~1,500 keys; past this RE2 would fall back to NFA
        alts = sorted(set(keys))
        self.rx = re2.compile(
            ("(?m)" + "|".join([*alts, TRACEBACK, CUT_AT_END, CRI_PARTIAL])).encode(), opts
        )
        self.joined_rx = re2.compile("|".join(alts).encode(), opts) if alts else None
        self.cut_rx = re2.compile(("(?m)" + CUT_AT_END).encode(), opts)
        if heads:
            self.heads_rx = re2.compile("|".join(map(escape, sorted(set(heads)))).encode(), opts)

    def may_be_cut(self, body: str) -> bool:
        """False when `body` (a line before its cut mark) shows no pattern's head: no record
        can then be judged by its prefix (matcher.partial_hits), and the BM25 query is saved."""
        if self.heads_rx is None:
            return True
        return self.heads_rx.search(body.encode("utf-8", "surrogatepass")) is not None

    def marked(self, lines: Sequence[str], block: bytes) -> set[int]:
        """Indexes of `lines` (joined by "\\n" into the UTF-8 `block`) that a key, a traceback
        header or a cut mark touches."""
        if self.rx is None:
            return set(range(len(lines)))
        out: set[int] = set()
        self.cut_only = set()  # lines marked for their cut mark alone (see `cut_only`)
        line = 0  # the line `at` is on
        at = 0
        # RE2's binding copies the text it is given on every call: searched in slices of about
        # SLICE bytes, a line that is marked costs a copy of its slice, not of the block
        while at < len(block):
            cut = block.find(b"\n", at + SLICE)
            # the slice holds one line more, so a key across its last line break is whole
            more = -1 if cut < 0 else block.find(b"\n", cut + 1)
            piece = block[at:] if more < 0 else block[at : more + 1]
            own = len(piece) if cut < 0 else cut + 1 - at  # matches starting here are its own
            pos, cur = 0, line  # `cur`: the line `pos` is on
            while (m := self.rx.search(piece, pos)) is not None:
                start, end = m.span()
                if start >= own:
                    break
                cur += piece.count(b"\n", pos, start)
                span = piece.count(b"\n", start, end)  # a key across a wrap: every line it is on
                out.update(range(cur, cur + span + 1))
                if piece.startswith(_CUT_FIRST, start) and self.cut_rx.fullmatch(m.group()):
                    self.cut_only.add(cur)  # a line's first mark: no key before its cut
                nl = piece.find(b"\n", end)
                if nl < 0:
                    break
                cur, pos = cur + span + 1, nl + 1  # one mark a line: the line is read whole
            line += piece.count(b"\n", 0, own)
            at = len(block) if cut < 0 else cut + 1
        self._wrapped(lines, out)
        out.discard(len(lines))  # (a key ending the block's last line break)
        return out

    def _wrapped(self, lines: Sequence[str], out: set[int]) -> None:
        """A terminal that wraps a long line cuts it anywhere, mid-word too, and a key cut
        there is in neither line. So each line that does not open a log record (no `[` or
        level word first: a continuation) is read again glued to the end of the line before,
        all such seams of the block in one search; a key across the seam marks both lines."""
        if self.joined_rx is None or len(lines) < 2:
            return
        rows = [i for i in range(1, len(lines)) if not lines[i].startswith(RECORD_STARTS)]
        if not rows:
            return
        seams, cuts = [], []
        for i in rows:
            a = lines[i - 1].rstrip("\n")[-SEAM:]
            seams.append(a + lines[i][:SEAM].rstrip("\n"))
            cuts.append(len(a))
        text = "\n".join(seams).encode("utf-8", "surrogatepass")
        starts = list(
            accumulate((len(x.encode("utf-8", "surrogatepass")) + 1 for x in seams), initial=0)
        )
        for m in self.joined_rx.finditer(text):
            k = bisect.bisect_right(starts, m.start()) - 1
            base = starts[k]
            cut = base + len(seams[k][: cuts[k]].encode("utf-8", "surrogatepass"))
            if m.start() < cut < m.end():  # across the seam (inside one line: already seen)
                out.update((rows[k] - 1, rows[k]))
