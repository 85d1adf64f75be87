"""A `messagePattern` searched in linear time, its literal runs and its anchor tokens.

Read through Python's own regex parser, so a pattern is understood exactly as `re` will run it.
Nothing here imports jsonschema or libcst: this is on the `kverr explain` path.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from kverr import regexsafe
from kverr.pattern import compiled, linear

try:  # Python 3.11+
    from re import _constants as _sre
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _sre  # type: ignore[no-redef]

# Tokens are what the prefilter and the fuzzy scorer compare; flags keep their dashes
# (`--ssl-keyfile` -> "ssl-keyfile") so flag names stay one distinctive token.
TOKEN_RE = re.compile(r"[a-z0-9_]+(?:-[a-z0-9_]+)*")

_REPEATS = {_sre.MAX_REPEAT, _sre.MIN_REPEAT}

# A pattern that opens with a lazy wildcard group, `(?P<v0>.{0,256}?) is not found`: `re`
# tries its up to 257 lengths at every position of the text (0.8 s per 100 KB for 18 shipped
# patterns). `Searcher` looks for the literal that follows instead and takes the group's text
# from just before it, which is the same match in linear time.
_LEADING_LAZY = re.compile(r"\(\?P<(?P<name>\w+)>\.\{(?P<lo>\d+),(?P<hi>\d+)\}\?\)")

# Steps of `re` backtracking past which a search runs in RE2 instead (see `backtracking`, a
# loose upper bound: a typical line is a few hundred, and 100,000 real steps are ~3 ms of CPU).
BACKTRACK_STEPS = 100_000
_TRIES = 257  # lengths a placeholder group may take (`.{0,256}`)


class Searcher:
    """A compiled messagePattern; `find` gives what `re.search` would, in time linear in the text.

    Python's `re` backtracks. Two or more placeholders with a literal between them that the
    text repeats (`like {a}. Did you mean {b}{c} instead?` against that sentence pasted 3,000
    times) multiply their 257 lengths, and one 8 KB search held the GIL for 0.3 s. So when the
    text holds the pattern's literals often enough for that (`backtracking`, a few `str.count`
    calls), the search runs in RE2, which is linear in the text and releases the GIL; the
    leftmost match and its groups are the same (no backreferences or lookaround, checked at
    load). Everything else stays in `re`, which is faster on a typical line.

    A pattern that opens with a lazy group is searched from the literal after it (`rest`) in
    either engine: the group's lengths are the whole of the backtracking in `re`, and in RE2
    they multiply the states of its DFA."""

    __slots__ = ("rx", "rest", "lead", "shape")

    def __init__(
        self,
        rx: re.Pattern[str],
        rest: re.Pattern[str] | None = None,
        lead: tuple[str, int, int] = ("", 0, 0),
        shape: Shape | None = None,
    ) -> None:
        self.rx = rx
        self.rest = rest  # the pattern after a leading lazy group
        self.lead = lead  # that group's name, fewest and most characters
        self.shape = shape

    def find(self, text: str) -> tuple[int, int, dict[str, str]] | None:
        """(start, end, {group: text}) of the leftmost match, as `rx.search(text)` finds it."""
        split = self.rest is not None and "\n" not in text  # (`.` stops at a line break)
        core = self.rest if split else self.rx
        sh = self.shape
        if sh is None or backtracking(sh, text, split=split) > BACKTRACK_STEPS:
            core = self.linear(split) or core
        name, lo, hi = self.lead
        m = core.search(text, lo if split else 0)
        if m is None:
            return None
        values = {k: v for k, v in m.groupdict().items() if v is not None}
        start = m.start()
        if split:
            # The lazy group is as short as it can be, so the leftmost match ends its group
            # where the rest first matches (at least `lo` characters in) and starts `hi` before.
            start = max(0, m.start() - hi)
            values = {name: text[start : m.start()], **values}
        if name in values:
            # a leading value starts after the exception named before the message
            # ("ValueError: torch.bfloat16 is not supported ...")
            raised = list(RAISED.finditer(values[name]))  # (a value is 256 characters at most)
            if raised:
                start += raised[-1].end()
                values[name] = values[name][raised[-1].end() :]
        return start, m.end(), values

    def linear(self, split: bool = False):
        """The pattern (or its `rest`) in RE2 (`linear`), None when RE2 cannot compile it."""
        return linear((self.rest if split else self.rx).pattern)


# An exception's name before the message: `ValueError: `, `pydantic_core.ValidationError: `
RAISED = re.compile(r"(?<![\w.])[A-Za-z_][\w.]{0,80}(?:Error|Exception): ")


def backtracking(sh: Shape, text: str, *, split: bool = False) -> int:
    """An upper bound (in steps, up to a constant) of the backtracking `re` may do to search
    `text` for a pattern of shape `sh`: the search starts at each occurrence of the first
    literal; a placeholder tries up to 257 lengths, and each length where the next literal
    follows (at most as often as the text holds it) tries the rest of the pattern again. A
    leading placeholder starts at every position, unless it is `split` off (`Searcher.lead`).
    Linear in the text (one `str.count` per literal run), and cheap next to the search it guards."""
    if not sh.runs:
        return 1 << 62  # nothing literal to start from
    leading = sh.gaps[0] == "var" and not split
    if not leading and "var" not in sh.gaps and sh.tail_gap != "var":
        return len(sh.runs)  # literal text (and blanks): nothing to backtrack over
    starts = text.count(sh.runs[0])
    if not starts and not leading:
        return 0  # `re` finds no start: one scan for the first literal
    rest = _TRIES if sh.tail_gap == "var" else 1
    for run, gap in zip(reversed(sh.runs[1:]), reversed(sh.gaps[1:]), strict=True):
        if gap == "var":
            rest = _TRIES + min(text.count(run), _TRIES) * rest
        else:
            rest += 1
    if leading:
        return len(text) * (_TRIES + min(starts, _TRIES) * rest)
    return starts * rest


def searcher(pattern: str) -> Searcher:
    """Compile a (checked) pattern, splitting off a leading lazy wildcard group when a literal
    follows it (see `Searcher`)."""
    rx = compiled(pattern)
    sh = shape_of(pattern)
    lead = _LEADING_LAZY.match(pattern)
    if lead is not None:
        rest = pattern[lead.end() :]
        try:
            first = regexsafe.parse(rest)[0] if rest else None
            rest_rx = compiled(rest)
        except (re.error, IndexError):
            first = None
        if (
            first is not None
            and first[0] is _sre.LITERAL
            and lead["name"] not in rest_rx.groupindex
        ):
            return Searcher(rx, rest_rx, (lead["name"], int(lead["lo"]), int(lead["hi"])), sh)
    return Searcher(rx, shape=sh)


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens of `text`, in order."""
    return TOKEN_RE.findall(text.lower())


def inspect(pattern: str) -> tuple[str | None, Shape | None]:
    """(why it is unsafe, None) or (None, its shape). The safety rule is kverr.regexsafe's,
    the same one the build applies, so a hand-edited dataset is held to it too."""
    why = regexsafe.problem(pattern)
    return (why, None) if why else (None, _shape(regexsafe.parse(pattern)))


@dataclass(frozen=True)
class Shape:
    """A pattern seen as literal runs separated by gaps (placeholders or whitespace)."""

    runs: tuple[str, ...]  # literal text, in order
    gaps: tuple[str, ...]  # gaps[i] sits before runs[i]: "" (none), "ws" (\s+) or "var"
    tail_gap: str  # what follows the last run
    # whether a "var" gap may put a token character against the run after / before it:
    # glue_after[i] is gap i's last character, glue_before[i] the first character of the gap
    # after runs[i] (the tail gap for the last run). True when not known (`_may_glue`).
    glue_after: tuple[bool, ...] = ()
    glue_before: tuple[bool, ...] = ()

    @property
    def literal_chars(self) -> int:
        return sum(len(r) for r in self.runs)

    def text(self) -> str:
        """Literal text with whitespace gaps as spaces and placeholders as a separator."""
        out = []
        for gap, run in zip(self.gaps, self.runs, strict=True):
            out.append({"": "", "ws": " ", "var": "\x00"}[gap])
            out.append(run)
        return "".join(out)


@functools.lru_cache(maxsize=8192)
def shape(pattern: str) -> Shape:
    """Split a (checked) pattern into its top-level literal runs and the gaps between them.
    Cached: partial matching asks for the same candidates' shapes on every paste, and parsing a
    pattern costs more than the rest of the match."""
    return _shape(regexsafe.parse(pattern))


def shape_of(pattern: str) -> Shape | None:
    """`shape`, or None for a pattern Python's parser refuses (a hand-edited catalog's)."""
    try:
        return shape(pattern)
    except (re.error, RecursionError, OverflowError):
        return None


def _shape(parsed) -> Shape:
    runs: list[str] = []
    gaps: list[str] = []
    cur: list[str] = []
    gap = ""
    ops: list = []  # the current gap's items
    gap_ops: list[list] = []  # gap_ops[i]: the items of gaps[i]
    for op, av in [*parsed, (None, None)]:  # (None: the end, which closes a run too)
        if op is _sre.LITERAL:
            cur.append(chr(av))
            continue
        if op is _sre.AT:  # ^ $ \b: zero-width, no text
            continue
        if cur:
            runs.append("".join(cur))
            gaps.append(gap)
            gap_ops.append(ops)
            cur, gap, ops = [], "", []
        if op is None:
            break
        kind = "ws" if _is_whitespace_repeat(op, av) else "var"
        gap = "var" if "var" in (gap, kind) else kind
        ops.append((op, av))
    # what a run's neighbours may put against it: the gap's edge character, or, where the gap
    # may be empty, the next run's (the text's end past the last run, its start before the first)
    after = []
    for i, g in enumerate(gap_ops):
        word, empty = _may_glue(g, last=True)
        after.append(word or (empty and i > 0 and _is_token_char(runs[i - 1][-1])))
    before = []
    for i in range(len(runs)):
        g = gap_ops[i + 1] if i + 1 < len(runs) else ops
        word, empty = _may_glue(g, last=False)
        nxt = runs[i + 1][0] if i + 1 < len(runs) else ""
        before.append(word or (empty and nxt != "" and _is_token_char(nxt)))
    return Shape(tuple(runs), tuple(gaps), gap, tuple(after), tuple(before))


def _is_token_char(c: str) -> bool:
    """Whether `c` may be part of a token of lowercased text (TOKEN_RE): ASCII word characters
    and '-', and any non-ASCII character, since a few lowercase to ASCII (the Kelvin sign)."""
    return c == "-" or not c.isascii() or bool(TOKEN_RE.fullmatch(c.lower()))


_NO_TEXT = {_sre.AT, _sre.ASSERT, _sre.ASSERT_NOT}  # zero-width items


def _may_glue(items, *, last: bool) -> tuple[bool, bool]:
    """(whether the first, or with `last` the last, character the items match may be a token
    character, whether they may match nothing). Unknown items count as a token character, so
    an anchor is only ever kept when it is certain."""
    for op, av in reversed(items) if last else items:
        word, empty = _item_glue(op, av, last)
        if word:
            return True, False
        if not empty:
            return False, False
    return False, True


def _item_glue(op, av, last: bool) -> tuple[bool, bool]:
    if op is _sre.LITERAL:
        return _is_token_char(chr(av)), False
    if op in _NO_TEXT:
        return False, True
    if op is _sre.IN:  # safe only when every member is a non-token literal or whitespace
        word = not all(
            (o is _sre.LITERAL and not _is_token_char(chr(a)))
            or (o is _sre.CATEGORY and a is _sre.CATEGORY_SPACE)
            for o, a in av
        )
        return word, False
    if op in _REPEATS or op is getattr(_sre, "POSSESSIVE_REPEAT", None):
        lo, _, body = av
        word, empty = _may_glue(list(body), last=last)
        return word, empty or lo == 0
    if op is _sre.SUBPATTERN:
        return _may_glue(list(av[-1]), last=last)
    if op is getattr(_sre, "ATOMIC_GROUP", None):
        return _may_glue(list(av), last=last)
    if op is _sre.BRANCH:
        found = [_may_glue(list(b), last=last) for b in av[1]]
        return any(w for w, _ in found), any(e for _, e in found)
    return True, False  # ANY, NOT_LITERAL, CATEGORY, GROUPREF...: may be anything


def _is_whitespace_repeat(op, av) -> bool:
    if op in _REPEATS:
        body = list(av[2])
        return len(body) == 1 and _is_whitespace_repeat(*body[0])
    if op is _sre.IN:
        return all(o is _sre.CATEGORY and a is _sre.CATEGORY_SPACE for o, a in av)
    return op is _sre.LITERAL and chr(av) in " \t\n"


def anchor_tokens(sh: Shape) -> list[tuple[str, str]]:
    """(token, literal run) pairs a matching text is certain to tokenize identically.

    A token touching a placeholder could fuse with the placeholder's text (`{n}-way` ->
    "8-way"), so only tokens that survive padding the run with word characters qualify.
    """
    out: list[tuple[str, str]] = []
    last = len(sh.runs) - 1
    for i, run in enumerate(sh.runs):
        # a gap that cannot put a token character against the run pads it as a blank would
        # ("unrecognized arguments: --x" then `(?:[ =].*)?`: the flag is a token of its own)
        glue_left = sh.glue_after[i] if sh.glue_after else True
        glue_right = sh.glue_before[i] if sh.glue_before else True
        left = "a" if sh.gaps[i] == "var" and glue_left else " "
        after = sh.gaps[i + 1] if i < last else sh.tail_gap
        right = "a" if after == "var" and glue_right else " "
        safe = set(tokens(left + run + right))
        for tok in dict.fromkeys(tokens(run)):
            if tok in safe and len(tok) >= 3 and not tok.isdigit():
                out.append((tok, run))
    return out


def terms(text: str) -> list[str]:
    """Fuzzy-search terms: word tokens plus ordered bigrams (word order carries meaning:
    "--a requires --b" is not "--b requires --a"). `\\x00` separates unrelated pieces."""
    out: list[str] = []
    for piece in text.split("\x00"):
        toks = [t for t in tokens(piece) if not t.isdigit()]
        out.extend(toks)
        out.extend(f"{a} {b}" for a, b in zip(toks, toks[1:], strict=False))
    return out


MAX_CUT_VALUE = 256  # characters of a value read from a cut message (a pattern's groups' bound)


def shown_of_run(run: str, tail: str) -> int:
    """How many characters of literal `run` the text `tail`, cut inside it, ends with."""
    return max((k for k in range(len(run), 0, -1) if tail.endswith(run[:k])), default=0)


def ends_in_run(run: str, k: int, *, period_ok: bool) -> bool:
    """Whether a cut that shows `k` characters of `run` ends in literal text, not in the value
    before it (where anything would fit): four of them, with `period_ok` the whole run but
    its final period (a message pasted without it, "... size (8)"), or the run up to where a
    sentence of the message ends, its period shown or not ("... context_length (32768)" of
    "... context_length ({v}). This may lead to ...")."""
    if k >= min(4, len(run)) or (period_ok and k > 0 and run[k:] in (".", "!")):
        return True
    # (the message's own words before that period: a value then a period ends other messages)
    return k > 0 and (
        run[k:].startswith(". ") or (k > 1 and run[k - 1] == "." and run[k : k + 1] == " ")
    )


def cut_values(pattern: str, text: str) -> dict[str, str]:
    """The named groups of `pattern` that `text`, the message cut short, shows whole: a group
    between two literal runs the text holds in order, read as the pattern's lazy group would
    (up to the first place the next run appears). What follows the first item that is neither
    literal text, whitespace nor a named group is not read."""
    try:
        tree = regexsafe.parse(pattern)
    except (re.error, RecursionError, OverflowError):
        return {}
    names = {n: name for name, n in tree.state.groupdict.items()}
    values: dict[str, str] = {}
    run: list[str] = []
    pos, start, group = 0, None, None  # `group` began at `start`, awaiting the run after it

    def close() -> bool:
        nonlocal pos, start, group
        lit = "".join(run)
        run.clear()
        if not lit:
            return True
        j = text.find(lit, pos)
        if j < 0 and group is not None and start is not None:
            # the cut falls inside this run: the value ends where the text shows its beginning
            tail = text[start:]
            k = shown_of_run(lit, tail)
            if ends_in_run(lit, k, period_ok=True):
                keep(group, tail[: len(tail) - k])
            return False
        if j < 0 or (group is None and start is not None and j != pos):
            return False  # (or the text is not this message)
        if group is not None and start is not None:
            keep(group, text[start:j])
        pos, start, group = j + len(lit), j + len(lit), None
        return True

    def keep(name: str, value: str) -> None:
        if value and len(value) <= MAX_CUT_VALUE and "\n" not in value:
            values[name] = value

    for op, av in tree:
        if op is _sre.LITERAL:
            run.append(chr(av))
        elif _is_whitespace_repeat(op, av):
            run.append(" ")
        elif op is _sre.AT:
            continue
        elif op is _sre.SUBPATTERN and names.get(av[0]) and (run or group is None):
            if not close():
                return values
            group = names[av[0]]  # (a group that opens the message has no known start)
        else:
            break
    close()
    return values
