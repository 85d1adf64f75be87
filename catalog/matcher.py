"""From pasted text to records: anchor prefilter, then regexes, then ranking.

Ranking, best first: an exact pattern match (0.9-1.0) beats a traceback frame (0.8-0.88) beats a
truncated message whose literal prefix matches (0.55-0.85) beats a fuzzy BM25 match (<= 0.5).
Below MIN_SCORE nothing is returned: a wrong answer is worse than none. Fuzzy is only tried when
nothing exact matched, because bags of words cannot tell "--a requires --b" from "--b requires --a".
"""

from __future__ import annotations

import bisect
import dataclasses
import json
import os
import re
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from kverr.catalog import normalize, patterns, prefilter
from kverr.catalog.engine import duckdb

from kverr.errors import TooExpensive
from kverr.pattern import fold_space

MIN_SCORE = 0.35
FUZZY_MIN = 0.8  # normalised BM25 (harmonic mean of recall and precision) a fuzzy hit needs
WINDOW, OVERLAP = 8192, 2048  # long lines are searched in overlapping windows: bounded regex work
PASTE_LINES, PASTE_CHARS = 400, 256_000  # larger input is a log: scanned line by line
WHOLE_LINES = 60  # a paste this short is also searched as one joined text
PARAGRAPH_LINES = 40  # wrapped-message rejoining looks at most this many lines at once
SCAN_MAX_HITS = 10_000  # memory bound for a scan of a huge log
PARTIAL_CHARS = 8192  # a message cut with "..." ends the text: its prefix is in this tail
TRACEBACK_LINE_CHARS = 4096  # a traceback line kept for parsing (frames and code are short)
NEGATIONS = frozenset(
    "not no cannot never without nor neither isn doesn don aren won unsupported".split()
)
SEVERITY_RANK = {"critical": 0, "error": 1, "warning": 2, "info": 3}


@dataclass
class Hit:
    """A record found in the input, before it is dressed as a `Match`."""

    index: int  # position in Index.ids
    score: float
    how: str
    line: int | None
    values: dict[str, str] = field(default_factory=dict)  # group name -> text
    span: tuple[int, int, int] | None = None  # (variant, start, end) for overlap checks
    covered: int = 0  # literal characters matched (pattern) or seen before the cut (partial)
    text: str = ""  # what a pattern matched (whitespace folded), for shadowing across lines


# The columns the index is made of, in id order (one row per record; anchors: at most one each).
INDEX_SQL = (
    "SELECT r.id, r.pattern, r.severity, r.last_ord, a.token, r.project, a.key, a.head"
    " FROM records r LEFT JOIN anchors a USING (id) ORDER BY r.id"
)


def index_state(
    rows: Iterable[tuple], shapes: dict[str, patterns.Shape | None] | None = None
) -> dict[str, Any]:
    """The index's columns from INDEX_SQL's rows, as plain JSON-ready lists: computed once when
    the catalog is written (store.py keeps it in `meta`), so no process rebuilds it. `shapes`:
    the patterns' shapes by id, where the loader has them already (else each is parsed)."""
    state: dict[str, Any] = {
        "ids": [], "pattern": [], "severity": [], "last_ord": [], "project": [], "by_token": {},
        "required": [], "lit": [],
    }  # fmt: skip
    ids, by_token = state["ids"], state["by_token"]
    # the scan prefilter's keys (catalog/prefilter.py), and what a cut message shows of each
    # pattern at least: stored as the prefilter's regex texts alone
    keys: list[str] = []
    heads: list[str] = []
    for rid, pat, sev, last, tok, project, key, head in rows:
        if ids and ids[-1] == rid:
            continue
        i = len(ids)
        ids.append(rid)
        state["pattern"].append(pat)
        state["severity"].append(sev or "error")
        state["last_ord"].append(last if last is not None else -1)
        state["project"].append(project or "")
        required, lit = _literals(pat, shapes.get(rid) if shapes is not None else None)
        state["required"].append(required)
        state["lit"].append(lit)
        if tok:
            by_token.setdefault(tok, []).append(i)
            keys.append(key or re.escape(tok))
            if head:
                heads.append(head)
    state["prefilter"] = prefilter.sources(keys, heads)
    return state


def _literals(pattern: str | None, sh: patterns.Shape | None = None) -> tuple[list[str], int]:
    """(up to 3 longest literal runs of 4+ characters every match contains, literal character
    count) of a pattern: a candidate lacking a run is dropped before its pattern is compiled,
    and a one-shot explain meets a hundred candidates ("unrecognized arguments") and compiles
    the one or two that can match."""
    if sh is None and pattern:
        sh = patterns.shape_of(pattern)
    if sh is None:
        return [], 0
    return sorted((r for r in sh.runs if len(r) >= 4), key=len, reverse=True)[:3], sh.literal_chars


class Index:
    """The in-memory side of a catalog: ids, anchors and (lazily) compiled patterns."""

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        forms: normalize.LogForms | None = None,
        state: dict[str, Any] | None = None,
    ):
        self.con = con
        if state is None:  # a catalog without the stored index: read its columns now
            state = index_state(con.execute(INDEX_SQL).fetchall())
        self.ids: list[str] = state["ids"]
        self.pattern: list[str] = state["pattern"]
        self.severity: list[str] = state["severity"]
        self.by_token: dict[str, list[int]] = state["by_token"]
        self.last_ord: list[int] = state["last_ord"]
        self.project: list[str] = state["project"]
        self._prefilter_texts: dict[str, str] = state["prefilter"]  # (prefilter.sources)
        # literal runs each match holds, and its literal character count (`_literals`)
        self.required: list[list[str]] = state["required"]
        self.lit: list[int] = state["lit"]
        self.pos = {rid: i for i, rid in enumerate(self.ids)}
        self._compiled: dict[int, patterns.Searcher] = {}
        self._heads: dict[int, str] = {}
        self._by_code: dict[str, list[tuple]] | None = None
        # the projects' log forms: stripped from every line, and a hint of who printed it
        self.forms = forms or normalize.NO_FORMS
        self.multi = len(set(self.project)) > 1
        self._places: dict[int, tuple[str, int]] | None = None
        self._snapshots: set[int] | None = None  # ords of revisions without a sha
        self._in_commit: dict[int, bool] = {}  # record -> some commit holds it (`in_commits`)
        self.terms: dict[str, tuple] | None = None  # term -> its `terms` row, after warm()
        self._prefilter: prefilter.Prefilter | None = None
        self._openings: dict[str, list[int]] | None = None  # (opening)

    def opening(self, run: str) -> list[int]:
        """The records whose message is several lines that open with `run` and a value
        (matcher.first_line_whole): read on first use."""
        if self._openings is None:
            self._openings = {}
            for i, p in enumerate(self.pattern):
                if p and _FIRST_LINE.match(p):
                    self._openings.setdefault(patterns.shape(p).runs[0], []).append(i)
        return self._openings.get(run, [])

    @property
    def prefilter(self) -> prefilter.Prefilter:
        """The bulk prefilter over every record's key: compiled on first use."""
        if self._prefilter is None:
            self._prefilter = prefilter.Prefilter(self._prefilter_texts)
        return self._prefilter

    def place(self, i: int) -> tuple[str, int]:
        """(file, line) of record `i`: read on first use (only a logged `[file.py:N]` asks)."""
        if self._places is None:
            rows = self.con.execute("SELECT id, file, line FROM records").fetchall()
            self._places = {self.pos[r]: (f or "", n or 0) for r, f, n in rows if r in self.pos}
        return self._places.get(i, ("", 0))

    def in_commits(self, indexes: Iterable[int]) -> set[int]:
        """Those of records `indexes` that some commit holds, not only a snapshot of files from
        disk (revisions without a sha): read per record on first use, only for records that
        tie for a paste."""
        if self._snapshots is None:
            rows = self.con.execute("SELECT ord FROM revisions WHERE sha IS NULL").fetchall()
            self._snapshots = {o for (o,) in rows}
        todo = sorted({i for i in indexes if i not in self._in_commit})
        if todo:
            marks = ", ".join("?" * len(todo))
            rows = self.con.execute(
                f"SELECT id, from_ord, to_ord FROM occurrences WHERE id IN ({marks})",
                [self.ids[i] for i in todo],
            ).fetchall()
            found = dict.fromkeys(todo, False)
            snap = self._snapshots
            for rid, a, b in rows:
                # ords are consecutive within a project: a span holds a commit unless every
                # revision in it is a snapshot
                if a is not None and b is not None and sum(a <= o <= b for o in snap) <= b - a:
                    found[self.pos[rid]] = True
            self._in_commit.update(found)  # whole, for a server's other threads
        return {i for i in indexes if self._in_commit.get(i)}

    def head(self, i: int) -> str:
        """What every cut message judged against record `i` shows (prefilter.head)."""
        found = self._heads.get(i)
        if found is None:
            found = self._heads[i] = prefilter.head(patterns.shape(self.pattern[i]))
        return found

    def compiled(self, i: int) -> patterns.Searcher:
        """Record `i`'s searcher, compiled on first use."""
        found = self._compiled.get(i)
        if found is None:
            found = self._compiled[i] = patterns.searcher(self.pattern[i])
        return found

    def by_code_line(self, code: str) -> list[tuple[str, str | None, str | None, int, str | None]]:
        """(id, file, function, line, error class) of the records whose statement starts with
        `code`. Loaded whole on first use: a paste of 2,000 tracebacks asks 2,000 times."""
        if self._by_code is None:
            self._by_code = {}
            rows = self.con.execute(
                "SELECT code_line, id, file, function, line, error_class FROM records"
                " WHERE code_line IS NOT NULL ORDER BY id"
            ).fetchall()
            for code_line, *row in rows:
                self._by_code.setdefault(code_line, []).append(tuple(row))
        return self._by_code.get(code, [])

    def warm(self) -> None:
        """Read the term table and the traceback lookup into memory, and compile the block
        regex, for a long-lived process (the server): its requests then cost no DuckDB query.
        A one-shot explain reads the few terms it needs by primary key instead of the whole
        table."""
        if self.terms is None:
            rows = self.con.execute("SELECT term, idf, ids, recall, stop FROM terms").fetchall()
            self.terms = {r[0]: r for r in rows}
        self.by_code_line("")
        # the block regex too: a short paste is read line by line only until it is compiled
        # (prefilter.SMALL_BLOCK), which suits a one-shot explain, not a server's thousandth
        self.prefilter.rx  # noqa: B018 - compiled on first use

    def candidates(self, text: str) -> set[int]:
        """The records whose anchor token is among `text`'s tokens: a necessary condition of a
        match (a matching text tokenizes its anchor identically: patterns.anchor_tokens)."""
        out: set[int] = set()
        by_token = self.by_token
        # (the set is built token by token, in the text's order: the order its candidates
        # are tried in orders equal answers, so any other way of building it must keep it)
        for tok in patterns.TOKEN_RE.findall(text.lower()):
            hit = by_token.get(tok)
            if hit:
                out.update(hit)
        return out


# ---------------------------------------------------------------- cost

# The CPU one explain may spend. Every loop here is linear in the text, so the largest paste the
# API takes needs well under a second; the budget is the guard for what is still expensive
# (a hand-edited catalog's pattern, a slow machine), so one request cannot hold the others up.
EXPLAIN_BUDGET = 5.0


def default_budget() -> float:
    """EXPLAIN_BUDGET, or $KVERR_EXPLAIN_BUDGET (seconds) when it is set to a number: an operator
    on a slow machine may allow more, a busy public server less."""
    try:
        return float(os.environ.get("KVERR_EXPLAIN_BUDGET", EXPLAIN_BUDGET))
    except ValueError:
        return EXPLAIN_BUDGET


# (deadline in thread CPU seconds, budget) of the explain running in this thread. A context
# variable, not a parameter: every matcher loop checks it, and threading it through each
# function would change signatures the tests and the feeds call.
_deadline: ContextVar[tuple[float, float] | None] = ContextVar("kverr_deadline", default=None)


@contextmanager
def budget(seconds: float | None) -> Iterator[None]:
    """Inside the block, the matcher raises TooExpensive once this thread has spent `seconds`
    of CPU (None: no limit, for a whole log the user asked to scan). A block inside another
    never extends it: several texts of one request share the request's budget."""
    outer = _deadline.get()
    limit = None if seconds is None else (time.thread_time() + seconds, seconds)
    if outer is not None and (limit is None or outer[0] < limit[0]):
        limit = outer
    token = _deadline.set(limit)
    try:
        yield
    finally:
        _deadline.reset(token)


# Set by a server for work nobody may wait for any more (its client left, its deadline passed):
# the checks below are the only places a running match can be stopped from outside.
_stop: ContextVar[threading.Event | None] = ContextVar("kverr_stop", default=None)


@contextmanager
def stop_when(event: threading.Event) -> Iterator[None]:
    """Inside the block, the matcher raises TooExpensive at its next check once `event` is set
    (from any thread)."""
    token = _stop.set(event)
    try:
        yield
    finally:
        _stop.reset(token)


def spend() -> None:
    """Raise TooExpensive when the current explain is past its CPU budget, or was stopped."""
    limit = _deadline.get()
    if limit is not None and time.thread_time() > limit[0]:
        raise TooExpensive(
            f"too expensive to explain: matching this text took more than {limit[1]:g} s of CPU;"
            " send only the lines around the error."
        )
    stop = _stop.get()
    if stop is not None and stop.is_set():
        raise TooExpensive("matching was stopped: nobody waits for its answer any more.")


# ---------------------------------------------------------------- exact patterns


def _windows(text: str) -> Iterable[tuple[int, str]]:
    """(start, text) of each window of a non-empty `text`: the text itself when it is short."""
    for start in range(0, len(text), WINDOW - OVERLAP):
        yield start, text[start : start + WINDOW]
        if start + WINDOW >= len(text):
            return


def pattern_hits(
    idx: Index, text: str, *, variant: int = 0, allowed: set[str] | None = None
) -> list[Hit]:
    """Every record whose pattern occurs in `text`; `line` is left for the caller to set."""
    whole = idx.candidates(text)
    if not whole:  # most log lines stop here, before any copying
        return []
    # Patterns spell a whitespace run as one space (records/pattern.py): collapse to match.
    text = fold_space(text)
    hits = []
    seen: set[tuple[int, int]] = set()
    required, ids = idx.required, idx.ids
    for base, win in _windows(text):
        spend()
        # (no blank is in a token: one window's candidates are the whole text's)
        for i in whole if len(win) == len(text) else idx.candidates(win):
            if allowed is not None and ids[i] not in allowed:
                continue
            for r in required[i]:  # cheap necessary condition first
                if r not in win:
                    break
            else:
                m = idx.compiled(i).find(win)
                if m and (i, base + m[0]) not in seen:  # (seen through two overlapping windows)
                    seen.add((i, base + m[0]))
                    start, end, values = m
                    lit = idx.lit[i]
                    score = 0.9 + 0.1 * min(1.0, lit / max(end - start, 1))
                    span = (variant, base + start, base + end)
                    hits.append(Hit(i, score, "pattern", None, values, span, lit, win[start:end]))
    return _drop_shadowed(hits)


def _drop_shadowed(hits: list[Hit]) -> list[Hit]:
    """Where two patterns match overlapping text, keep the one that explains more of it with
    literal words ("X must be positive" over "X must be {v}"; "X, but got {v}" over "X"): the
    weaker is not a second answer. Equal patterns (one message raised from two sites) are
    both kept: each is a true answer.

    Hits are taken most literal words first; each is checked against the union of the spans
    kept with strictly more, held as sorted disjoint intervals: O(h log h), where comparing
    every pair was quadratic in the hits of a long paste."""
    hits.sort(key=lambda h: (-h.covered, -h.score))
    kept: list[Hit] = []
    stronger: dict[int, _Spans] = {}  # variant -> spans of kept hits with more literal words
    level: list[Hit] = []  # kept hits of the coverage being looked at
    for h in hits:
        if level and level[0].covered != h.covered:
            for k in level:
                stronger.setdefault(k.span[0], _Spans()).add(k.span[1], k.span[2])
            level = []
        v, a, b = h.span
        if v in stronger and stronger[v].overlaps(a, b):
            continue
        kept.append(h)
        level.append(h)
    return kept


class _Spans:
    """A union of half-open intervals as sorted, disjoint [start, end) pairs."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []

    def overlaps(self, a: int, b: int) -> bool:
        """True when [a, b) shares a position with the union."""
        i = bisect.bisect_left(self.starts, b) - 1  # the last interval starting before b
        return a < b and i >= 0 and self.ends[i] > a

    def add(self, a: int, b: int) -> None:
        if a >= b:
            return  # an empty span covers nothing
        lo = bisect.bisect_left(self.ends, a)  # first interval that ends at or after a
        hi = bisect.bisect_right(self.starts, b)  # past the last one starting at or before b
        if lo < hi:
            a, b = min(a, self.starts[lo]), max(b, self.ends[hi - 1])
        self.starts[lo:hi] = [a]
        self.ends[lo:hi] = [b]


def _drop_contained(hits: list[Hit]) -> list[Hit]:
    """`_drop_shadowed` across the lines of a paste: a pattern that matched one line of a
    wrapped message ("X.") gives way to one that matched the whole joined message ("X. Y.")
    with more literal words. Each distinct (text, coverage) is judged once: the join variants
    of a paste repeat the same matches."""
    texts = {(h.text, h.covered): h for h in hits if h.text}
    longest = sorted(texts.values(), key=lambda h: -h.covered)[:50]
    gone = {key for key in texts if any(k.covered > key[1] and key[0] in k.text for k in longest)}
    return [h for h in hits if not h.text or (h.text, h.covered) not in gone]


# ---------------------------------------------------------------- tracebacks


def _same_file(frame_file: str, record_file: str | None) -> bool:
    if not record_file:
        return False
    a = frame_file.replace("\\", "/").split("/")
    b = record_file.split("/")
    n = min(3, len(a), len(b))
    return a[-n:] == b[-n:]


def frame_hits(
    idx: Index, tb: normalize.Traceback, line: int | None, *, allowed: set[str] | None = None
) -> list[Hit]:
    """Records whose statement is the innermost frame's code line, in the same file.

    A generic first line (`raise ValueError(`) also needs the function name to agree; several
    records still left with nothing to tell them apart are dropped, not guessed between."""
    if not tb.code:
        return []
    spend()
    rows = idx.by_code_line(tb.code)
    generic = tb.code.endswith(("(", "\\")) or len(tb.code) < 16
    scored = []
    for rid, file, func, rline, cls in rows:
        if not _same_file(tb.file, file) or (allowed is not None and rid not in allowed):
            continue
        if tb.exc_class and cls and cls != tb.exc_class:
            continue
        same_func = func == tb.function.rsplit(".", 1)[-1]
        if generic and not same_func:
            continue
        scored.append((0.8 + 0.06 * same_func + 0.02 * (rline == tb.line), rid))
    if not scored:
        return []
    best = max(s for s, _ in scored)
    top = [rid for s, rid in scored if s == best]
    if len(top) > 1:
        return []
    return [Hit(idx.pos[top[0]], best, "traceback", line)]


# ---------------------------------------------------------------- truncated messages


def prefix_cover(sh: patterns.Shape, text: str, *, strict_end: bool = False) -> int | None:
    """Literal characters of `sh` that `text` (cut short) shows in order, or None if `text`
    contradicts the pattern before the cut. `strict_end`: no ellipsis marks the cut, so the text
    must end inside literal text, not inside a value (where anything would fit)."""
    if not sh.runs:
        return None
    pos = covered = 0
    for i, run in enumerate(sh.runs):
        gap = sh.gaps[i]
        if i == 0:
            j = text.find(run)
            if j < 0:  # cut inside the first run: the text must end with a prefix of it
                return _cut_inside(run, text)
            pos, covered = j + len(run), len(run)
            continue
        j = text.find(run, pos)
        if j >= 0 and _gap_ok(gap, text[pos:j]):
            pos, covered = j + len(run), covered + len(run)
            continue
        tail = text[pos:]
        if gap == "":
            return covered + len(tail) if run.startswith(tail) else None
        if gap == "ws":
            t = tail.lstrip()
            return covered + len(t) if run.startswith(t) else None
        # cut inside a value, or just after it inside this run
        k = patterns.shown_of_run(run, tail)
        last = i == len(sh.runs) - 1
        if strict_end and not patterns.ends_in_run(run, k, period_ok=last):
            return None
        return covered + k
    return covered


def _cut_inside(run: str, text: str) -> int | None:
    # Only the last len(run) characters can be a prefix of `run`: searching the whole text for
    # the seed, slicing the rest at every hit, was quadratic in a paste that repeats it.
    seed = run[: min(len(run), 4)]
    j = text.find(seed, max(0, len(text) - len(run)))
    while j >= 0:
        if run.startswith(text[j:]):
            return len(text) - j
        j = text.find(seed, j + 1)
    return None


def _gap_ok(gap: str, between: str) -> bool:
    if gap == "var":
        return len(between) <= 2000
    if gap == "ws":
        return between.strip() == ""
    return between == ""


SURE_CHARS = 120  # literal characters of a cut message, in order, that identify it
# A message of several lines cut after its first, where that line is its opening words and one
# value ("Capture cuda graph failed: CUDA out of memory..." before "Possible solutions:"): the
# opening words identify it when there are this many of them.
FIRST_LINE_CHARS = 24
_FIRST_LINE = re.compile(r"(?:[^\\()\[{.*+?|^$]|\\.)+\(\?P<v0>\.\{0,256\}\?\)\\s\+")


# A long message quoted up to the end of its first sentence ("User-specified context_length
# (65536) is greater than the derived context_length (32768)", of a message that goes on "This
# may lead to ..."): a sentence of this many literal characters identifies it.
SENTENCE_CHARS = 40


def first_sentence_whole(sh: patterns.Shape, covered: int) -> bool:
    """Whether a cut that shows `covered` literal characters of the message shows its first
    sentence whole (its period may be cut), where that sentence is not the whole message. The
    sentence must open and end with the message's own words: one that opens or ends with a
    value ("{what} is deprecated ...", "... does not support {what}.") reads as a whole other
    message as well as a cut of this one."""
    if not sh.runs or sh.gaps[0] != "":
        return False
    seen = 0
    for k, run in enumerate(sh.runs):
        end = run.find(". ")
        if end < 0 and run.endswith(".") and k + 1 < len(sh.runs) and sh.gaps[k + 1] == "ws":
            end = len(run) - 1
        if end >= 0:
            first = seen + end  # its literal characters, the period left out
            return end > 0 and SENTENCE_CHARS <= first <= covered
        seen += len(run)
    return False


def first_line_whole(pattern: str, run: str, text: str) -> bool:
    """Whether `text` shows the first line of a message of several lines whole and no more:
    its opening words `run`, then the value that ends that line, up to the text's end."""
    if len(run) < FIRST_LINE_CHARS or _FIRST_LINE.match(pattern) is None:
        return False
    j = text.rfind(run)
    rest = text[j + len(run) :] if j >= 0 else ""
    return 0 < len(rest.strip()) <= 256 and "\n" not in rest


def partial_hits(
    idx: Index,
    text: str,
    line: int | None,
    *,
    allowed: set[str] | None = None,
    implicit: bool = False,
    ranked: dict | None = None,
) -> list[Hit]:
    """Records whose message starts the way `text` does before its `...` cut. With `implicit`,
    a text without an ellipsis is read as cut at its end (a selection that stopped short).
    `ranked`: bm25's memo (see there)."""
    body = normalize.truncated(text)
    if body is None:
        if not implicit:
            return []
        body = text.rstrip()
    strict_end = implicit and body == text.rstrip()
    body = body[-PARTIAL_CHARS:]  # the cut message ends the text: bounded work on a long one
    # a prefix judged below shows its pattern's head (prefilter.head): text that shows none
    # needs no BM25 query (most lines of a paste that matched nothing)
    if not idx.prefilter.may_be_cut(body):
        return []
    spend()
    hits = []
    unseen: dict[int, int] = {}  # literal characters of the pattern past the cut
    whole: set[int] = set()  # patterns whose first line the text shows whole (first_line_whole)
    todo = [idx.pos[rid] for rid, _ in bm25(idx, body, limit=25, memo=ranked)]
    seen = set(todo)
    while todo:
        i = todo.pop(0)
        if allowed is not None and idx.ids[i] not in allowed or not idx.pattern[i]:
            continue
        sh = patterns.shape(idx.pattern[i])
        # HEAD_CHARS literal characters shown in order show the pattern's head whole
        # (prefilter.head): without it no cover can be enough, and most candidates lack it
        if idx.head(i) not in body:
            continue
        covered = prefix_cover(sh, body, strict_end=strict_end)
        if covered in (None, len(sh.runs[0])) and first_line_whole(
            idx.pattern[i], sh.runs[0], body
        ):
            covered = len(sh.runs[0])  # (a text that ends inside that value: still the cut)
            whole.add(i)
            # the check's other wordings that open alike (the releases before it moved): BM25
            # ranks them anywhere, as the opening words are all they share with the text
            more = [j for j in idx.opening(sh.runs[0]) if j not in seen]
            seen.update(more)
            todo += more
        if covered is not None and covered >= prefilter.HEAD_CHARS:
            if first_sentence_whole(sh, covered):
                whole.add(i)
            unseen[i] = sh.literal_chars - covered
            shown = 0.55 + 0.3 * covered / max(sh.literal_chars, 1)
            hits.append(Hit(i, shown, "partial", line, covered=covered))
    if not hits:
        return []
    best = max(h.covered for h in hits)
    top = [h for h in hits if h.covered == best]
    # a text that shows one message whole but its final period is that message, not a cut of a
    # longer one that starts the same way ("... --mem-fraction-static" and "... --mem-fraction-
    # static. Current value: ...", the two wordings of one raise)
    top = [h for h in top if unseen[h.index] <= 1] or top
    several = _several(idx, top, whole)
    if several and patterns.RAISED.search(body[:200]):
        # a raise and the warning that shares its words (a check that warns instead when an
        # environment variable allows the value): the exception the text names is the raise's
        top = [h for h in top if idx.severity[h.index] == "error"]
        several = _several(idx, top, whole)
    if not top or several:
        return []  # cut before the words that tell the records apart: no guessing
    # enough of the message must be seen to be sure (one message raised at several sites: all)
    top.sort(key=lambda h: -idx.last_ord[h.index])  # one check's wordings: the newest first
    # (a long message cut by an issue title or a chat client shows a small share of itself,
    # but SURE_CHARS of its literal text in order are as sure as a third of a short one; the
    # wordings of one check share what the cut shows, so one sure of them is all of them)
    sure = any(
        h.score >= 0.55 + 0.3 * 0.35 or h.covered >= SURE_CHARS or h.index in whole for h in top
    )
    score = max(h.score for h in top)  # one check: ranked as one, its newest wording first
    if not sure:
        return []
    # the values the cut left whole are the user's as much as a whole message's
    return [
        dataclasses.replace(h, score=score, values=patterns.cut_values(idx.pattern[h.index], body))
        for h in top
    ]


def _several(idx: Index, hits: list[Hit], whole: set[int] = frozenset()) -> bool:
    """Whether `hits` are more than one check (not one pattern, not one check's wordings).
    `whole`: hits whose first line the text shows whole (first_line_whole)."""
    if len({idx.pattern[h.index] for h in hits}) <= 1:
        return False
    # a first line shown whole that several releases open their message with, each release
    # one of them, is one check that moved (from the model runner to its own module)
    moved = all(h.index in whole for h in hits)
    return not _one_check(idx, hits, same_function=not moved)


def _one_check(idx: Index, hits: list[Hit], *, same_function: bool = True) -> bool:
    """Whether the records a cut leaves are one check in several releases' wordings (one
    project, one function, each release one of them): what tells them apart was cut, but not
    what to do."""
    ids = [idx.ids[h.index] for h in hits]
    if len({idx.project[h.index] for h in hits}) > 1:
        return False
    marks = ", ".join("?" * len(ids))
    rows = idx.con.execute(
        f"SELECT function, releases FROM records WHERE id IN ({marks})", ids
    ).fetchall()
    if same_function and (len({f for f, _ in rows}) != 1 or rows[0][0] is None):
        return False
    # two checks of one function that a release has side by side are two checks, not two
    # wordings of one (a cut before what tells them apart leaves nothing to go on)
    seen: set[str] = set()
    for _, releases in rows:
        mine = set(json.loads(releases or "[]"))
        if not mine or mine & seen:
            return False
        seen |= mine
    return True


# ---------------------------------------------------------------- fuzzy


# Values are quoted text, paths and anything with a digit: a quoted string, or a whole run of
# non-blank, non-quote characters holding a '/' or a digit. A `\S*/\S*` search restarts inside
# every long word (20 long words took 83 s); here the run's test is a lookahead taken only at a
# run's first character (the lookbehind), so each character is read at most twice. Two passes
# in C, no Python call per piece: the quoted strings first, then the runs (a quoted string
# never shares characters with a run, so the order changes nothing).
_QUOTED_RE = re.compile(r"'[^']{0,300}'|\"[^\"]{0,300}\"")
_VALUE_RUN_RE = re.compile(r"(?<![^\s'\"])(?=[^\s'\"]*[/\d])[^\s'\"]+")


def _without_values(text: str) -> str:
    """`text` with each value (quoted, a path, anything with a digit) replaced by a separator."""
    return _VALUE_RUN_RE.sub(" \x00 ", _QUOTED_RE.sub(" \x00 ", text))


def bm25(
    idx: Index, text: str, *, limit: int | None = 20, memo: dict | None = None
) -> list[tuple[str, float]]:
    """(id, normalised score) by BM25 over literal message terms, best first.

    The score is the harmonic mean of recall (share of the record's own BM25 mass the text
    hits) and precision (share of the text's term weight the record explains). A term the
    catalog has never seen weighs as much as an average known one (extra words make another
    message), but values (quoted, paths, numbers) weigh nothing. Postings are fetched by
    primary key, so the cost follows the query's terms, not the catalog size.

    `memo` (a dict the caller keeps for one input) remembers whole rankings by text up to the
    kind of its blanks, which no term sees: a paste's fallbacks rank each piece for a cut
    message and again for a fuzzy match, and its "\n" and " " joins read the same terms."""
    text = text[:8192]
    if memo is None:
        scored = _bm25(idx, text)
    else:
        key = text.rstrip().translate(_BLANKS_AS_SPACE)
        scored = memo.get(key)
        if scored is None:
            scored = memo[key] = _bm25(idx, text)
    return list(scored) if limit is None else scored[:limit]


_BLANKS_AS_SPACE = str.maketrans("\n\t\r\x0b\x0c", "     ")


def _bm25(idx: Index, text: str) -> list[tuple[str, float]]:
    """bm25's whole ranking of `text` (at most 8192 characters)."""
    q = sorted(set(patterns.terms(text)))
    if not q:
        return []
    if idx.terms is not None:  # in memory (warm), in the order the table keeps: by term
        rows = [idx.terms[t] for t in q if t in idx.terms]
    else:  # (filtering `stop` in SQL would cost DuckDB its primary-key lookup)
        rows = idx.con.execute(
            "SELECT term, idf, ids, recall, stop FROM terms WHERE term = ANY($1::VARCHAR[])", [q]
        ).fetchall()
    known = {r[0] for r in rows}
    hit = [r[1] for r in rows if not r[4]]
    if not hit:
        return []
    unknown = set(patterns.terms(_without_values(text))) - known
    total = sum(hit) * (1 + len(unknown) / len(hit))  # an unknown term weighs an average known one
    acc: dict[str, list[float]] = {}
    for _, idf, ids, recalls, stop in rows:
        if stop:
            continue
        for rid, share in zip(ids, recalls, strict=True):
            a = acc.get(rid)
            if a is None:
                acc[rid] = [share, idf]
            else:
                a[0] += share
                a[1] += idf
    # best first, ties by id: sorted as (-score, id) tuples, with no key function to call
    order = []
    for rid, (recall, hit_idf) in acc.items():
        prec = hit_idf / total
        order.append((-(2 * recall * prec / (recall + prec)), rid))
    order.sort()
    return [(rid, -neg) for neg, rid in order]


def _negations(idx: Index, rid: str) -> set[str]:
    """The negation words of a record's pattern (the index holds the records' `pattern`)."""
    i = idx.pos.get(rid)
    if i is None:
        return set()
    return NEGATIONS.intersection(patterns.tokens(patterns.shape(idx.pattern[i]).text()))


def fuzzy_hits(
    idx: Index,
    text: str,
    line: int | None,
    *,
    allowed: set[str] | None = None,
    ranked: dict | None = None,
) -> list[Hit]:
    """Records whose wording is close to `text` (an older or edited message). One word can flip
    the meaning ("is supported" / "is not supported"), so the negations must agree too.
    `ranked`: bm25's memo (see there)."""
    hits = []
    negs = NEGATIONS.intersection(patterns.tokens(text))
    for rid, norm in bm25(idx, text, limit=10, memo=ranked):
        if norm < FUZZY_MIN or (allowed is not None and rid not in allowed):
            continue
        if _negations(idx, rid) != negs:
            continue
        hits.append(Hit(idx.pos[rid], 0.5 * min(norm, 1.0), "fuzzy", line))
    return hits


# ---------------------------------------------------------------- whole inputs


def _paragraphs(numbered: list[tuple[int, str]]) -> list[list[tuple[int, str]]]:
    """Runs of lines between blank and fence lines (a fence frames a message, it is never part
    of one), at most PARAGRAPH_LINES each."""
    out, cur = [], []
    for no, text in numbered:
        part = bool(text.strip()) and not normalize.is_fence(text)
        if part and len(cur) < PARAGRAPH_LINES:
            cur.append((no, text))
            continue
        if cur:
            out.append(cur)
        cur = [(no, text)] if part else []
    if cur:
        out.append(cur)
    return out


def explain_text(
    idx: Index,
    text: str,
    *,
    allowed: set[str] | None = None,
    hints: dict[int, normalize.Hint] | None = None,
) -> list[Hit]:
    """All hits for a paste, merged per record, best first (callers cut to their limit); a
    paste past PASTE_LINES or PASTE_CHARS is a log (scan_lines). One path reads both
    (catalog/stream.py), so a line costs the same in either. `hints`: filled with what the
    projects' log forms said about each line (see `pick_project`)."""
    from kverr.catalog.stream import Scanner

    hints = {} if hints is None else hints
    scanner = Scanner(idx, allowed)
    scanner.feed(text.replace("\r\n", "\n").split("\n"))
    if scanner.is_paste():
        return scanner.paste_hits(hints)
    return scanner.log_hits(hints)


def log_order(idx: Index, hits: list[Hit]) -> list[Hit]:
    """The order a log is reported in: most severe first, then by line, then best score."""
    return sorted(
        hits, key=lambda h: (SEVERITY_RANK.get(idx.severity[h.index], 9), h.line or 0, -h.score)
    )


def uncut_fallbacks(idx: Index, numbered: list[tuple[int, str]], allowed) -> list[Hit]:
    """A paste with no exact match and no cut mark: a traceback cut after its innermost frame
    is that frame's statement; a message that stops mid-message without
    an ellipsis is still a prefix, and word order tells `--a requires --b` from `--b requires
    --a` where a bag of words cannot, so it is tried before fuzzy, which only guesses."""
    paragraphs = [[(no, fold_space(t)) for no, t in p] for p in _paragraphs(numbered)]
    # (text, its lines' numbers, where each line starts in it)
    pieces = [(t, (no,), (0,)) for no, t in numbered if t.strip() and not normalize.is_fence(t)]
    pieces += [
        (j, tuple(no for no, _ in p), offsets)
        for p in paragraphs
        if len(p) > 1
        for j, offsets in normalize.joins([t for _, t in p])
    ]
    tb = normalize.cut_traceback([t for _, t in numbered])
    if tb is not None:  # its frame's code line is the record's statement
        found = frame_hits(idx, tb, numbered[tb.exc_index][0], allowed=allowed)
        if found:
            return found
    tail = pieces[:60][-20:]
    ranked: dict = {}  # each piece is ranked once for both
    cut = []
    for t, nos, offsets in tail:
        for h in partial_hits(idx, t, nos[0], allowed=allowed, implicit=True, ranked=ranked):
            h.line = nos[line_of(offsets, cut_start(idx, h.index, t))]
            cut.append(h)
    return cut or [
        h for t, nos, _ in tail for h in fuzzy_hits(idx, t, nos[0], allowed=allowed, ranked=ranked)
    ]


def line_of(offsets: Sequence[int], at: int) -> int:
    """Which line of a joined reading (`offsets`: where each line starts) holds offset `at`."""
    return max(bisect.bisect_right(offsets, at) - 1, 0)


def cut_start(idx: Index, i: int, text: str) -> int:
    """Where record `i`'s message begins in `text`, which shows it cut short (partial_hits):
    at its first literal words, or where a cut inside them begins. A message that opens with
    a value begins at those words too: the value's start is not known, and the words are
    what the text shows of the message."""
    sh = patterns.shape_of(idx.pattern[i])
    if sh is None or not sh.runs:
        return 0
    run = sh.runs[0]
    body = normalize.truncated(text) or text.rstrip()
    j = body.find(run)
    if j < 0:  # cut inside its first words: the text ends with their beginning
        j = len(body) - (_cut_inside(run, body) or 0)
    return j


def match_start(idx: Index, h: Hit, offsets: Sequence[int]) -> int:
    """The line of a joined reading (`offsets`: where each line starts) where a pattern hit's
    message starts: the match's, except for a message that opens with a value
    (`{path} is not found.`), whose lazy wildcard starts at the leftmost place it can and so
    reads back over the lines before (a fence, a line of prose, the log line before): then
    the line of its first literal words, or the line before when those words open their line
    (the value ended the line before)."""
    first = line_of(offsets, h.span[1])
    sh = patterns.shape_of(idx.pattern[h.index])
    if sh is None or not sh.runs or sh.gaps[0] != "var":
        return first
    at = h.span[1] + max(h.text.find(sh.runs[0]), 0)
    words = line_of(offsets, at)
    if words > first and at == offsets[words]:
        words -= 1
    return max(first, words)


def merge(
    idx: Index,
    hits: list[Hit],
    hints: dict[int, normalize.Hint] | None = None,
    frames: dict[int, tuple[str, int]] | None = None,
) -> list[Hit]:
    """One hit per record: the best score, values from the pattern hit, the earliest line.
    Records that tie (one message raised at several sites) are told apart by the place the
    input names for the line: the logger's (`[arg_utils.py:123]`, `hints`) or the innermost
    frame of the traceback the line is in (`frames`: line -> (file, line))."""
    best: dict[int, Hit] = {}
    for h in hits:
        old = best.get(h.index)
        if old is None:
            best[h.index] = h
            continue
        top, other = (h, old) if h.score > old.score else (old, h)
        if {top.how, other.how} == {"pattern", "traceback"}:  # two independent agreements
            top.score = min(1.0, top.score + 0.02)
        top.values = top.values or other.values
        # the line of the hit that explains the text best: a joined reading that starts a line
        # early (a value read across a fence or a context line) is not where the message is
        if top.line is None or (
            other.line is not None and other.score == top.score and other.line < top.line
        ):
            top.line = other.line
        best[h.index] = top
    out = [h for h in best.values() if h.score >= MIN_SCORE]

    def key(h: Hit) -> tuple:
        return (-h.score, _distance(idx, h, hints, frames))

    # ties: the site the input names first; then a record some commit holds before one that
    # only a snapshot of files from disk has (a seed module laid over a release); then the
    # record still present in the newest revision (what a user most likely runs); last its id,
    # so that one catalog answers in one order however its index was read in
    keys = [key(h) for h in out]
    counts = Counter(keys)
    tied = [h.index for h, k in zip(out, keys, strict=True) if counts[k] > 1]
    real = idx.in_commits(tied) if tied else set()
    out.sort(
        key=lambda h: (
            *key(h),
            h.index not in real,
            -idx.last_ord[h.index],
            SEVERITY_RANK.get(idx.severity[h.index], 9),
            h.line or 0,
            idx.ids[h.index],
        )
    )
    return out


def one_per_line(idx: Index, hits: list[Hit]) -> list[Hit]:
    """A paste's answers, best first, with a second answer only from another line of the
    input: on a line a better hit explains, a hit of another message (a traceback frame naming
    another check of the same function, an older wording of the check a cut leaves, a weaker
    fuzzy reading) is no answer. Records sharing the message (one text raised at several
    sites) all stay, and so do two whole messages printed on one line. A frame hit's line is
    its whole traceback."""
    kept: list[Hit] = []
    for h in hits:
        lo, hi = (h.span[1], h.span[2]) if h.how == "traceback" and h.span else (h.line, h.line)
        if lo is not None and any(
            k.line is not None
            and lo <= k.line <= hi
            and idx.pattern[k.index] != idx.pattern[h.index]
            and not (k.how == h.how == "pattern")
            for k in kept
        ):
            continue
        kept.append(h)
    return kept


def _distance(
    idx: Index,
    h: Hit,
    hints: dict[int, normalize.Hint] | None,
    frames: dict[int, tuple[str, int]] | None = None,
) -> tuple[int, int]:
    """How far the record's site is from where the input says the message was raised: the
    file and line the logger printed, else the innermost frame of the line's traceback.
    (0, lines apart) in that file, (1, 0) elsewhere or when nothing names a place."""
    if h.line is None:
        return (1, 0)
    hint = hints.get(h.line) if hints else None
    file, line = idx.place(h.index) if hint is not None and hint.file else ("", 0)
    if hint is not None and hint.file and same_file(hint.file, file):
        return (0, abs((hint.line or 0) - line))
    frame = frames.get(h.line) if frames else None
    if frame is not None:
        file, line = idx.place(h.index)
        if _same_file(frame[0], file):
            return (0, abs(frame[1] - line))
    return (1, 0)


def same_file(logged: str, path: str) -> bool:
    """`arg_utils.py`, `engine/arg_utils.py` or `model_executor/.../quant.py` (a logger's
    shortened path) names `pkg/engine/arg_utils.py`: its known parts end the path."""
    tail = logged.rsplit("/.../", 1)[-1].lstrip("./")
    return bool(tail) and (path == tail or path.endswith("/" + tail))


def scan_lines(
    idx: Index,
    lines: Iterable[str],
    *,
    allowed: set[str] | None = None,
    hints: dict[int, normalize.Hint] | None = None,
) -> list[Hit]:
    """Every known error in a log, streaming (catalog/stream.py): memory is bounded by a
    window of lines and the hits kept, not the log. The same record with the same values is
    reported once, at its first line; most severe first. `hints` (bounded like the hits: only
    lines that hit keep theirs) as in explain_text."""
    from kverr.catalog.stream import Scanner

    scanner = Scanner(idx, allowed)
    scanner.feed(lines)
    return scanner.log_hits(hints)


def scan_blocks(
    idx: Index,
    blocks: Iterable[tuple[str | bytes, int]],
    *,
    allowed: set[str] | None = None,
    hints: dict[int, normalize.Hint] | None = None,
) -> list[Hit]:
    """`scan_lines` for a log read in blocks of lines ((text, n): reader.BoundedLines.blocks),
    the way a file is read: no Python step per line, only per line near a mark."""
    from kverr.catalog.stream import Scanner

    scanner = Scanner(idx, allowed)
    scanner.feed_blocks(blocks)
    return scanner.log_hits(hints)


# ---------------------------------------------------------------- which project


class Detection:
    """Which project each match is from, and what told: "--project" (asked for), "log form" (a
    prefix or suffix only that project's logger writes, on the match's line or, for a match
    without a line, on most lines of the paste), else "message" (only its records match)."""

    __slots__ = ("asked", "lines", "vote")

    def __init__(self, asked: str | None, lines: dict[int, str], vote: str | None) -> None:
        self.asked, self.lines, self.vote = asked, lines, vote

    def how(self, project: str, line: int | None) -> str:
        if self.asked is not None:
            return "--project"
        named = self.lines.get(line, self.vote) if line is not None else self.vote
        return "log form" if named == project else "message"


def pick_project(
    idx: Index, hits: list[Hit], hints: dict[int, normalize.Hint]
) -> tuple[list[Hit], Detection]:
    """In a catalog of several projects, the log form of a line decides between records of
    different projects matching that line (the same text in both); a message only one project
    has is kept whatever the line looks like: it is that project's."""
    lines = {no: h.project for no, h in hints.items()}
    votes = Counter(lines.values())
    vote = max(sorted(votes), key=votes.__getitem__) if votes else None
    found = Detection(None, lines, vote)
    if not idx.multi or not votes:
        return hits, found
    by_line: dict[int | None, set[str]] = {}
    for h in hits:
        by_line.setdefault(h.line, set()).add(idx.project[h.index])
    kept = []
    for h in hits:
        named = lines.get(h.line, vote) if h.line is not None else vote
        rivals = by_line[h.line]
        if len(rivals) > 1 and named in rivals and idx.project[h.index] != named:
            continue  # the same line matched another project's record too: its log form decides
        kept.append(h)
    return kept, found
