"""The one rule for a safe `messagePattern`, shared by the build (records/) and the catalog.

Safe means: it compiles in Python `re`, stays within RE2 syntax (no backreferences, lookaround,
atomic groups, possessive quantifiers, conditionals, or escapes RE2 reads differently), has no
nested quantifiers and no unbounded `.` repeat, so RE2 runs it in linear time on hostile text.
(Python's `re` can still backtrack over bounded placeholders between repeated literals; the
matcher hands such text to RE2: catalog/patterns.py.) Stdlib only: this is on the `kverr
explain` path.
"""

from __future__ import annotations

import re
from typing import Any

from kverr.pattern import compiled

try:  # Python 3.11+ keeps the parser here; 3.10 has the public (now deprecated) modules.
    from re import _constants as _sre_constants  # type: ignore[attr-defined]
    from re import _parser as _sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _sre_constants  # type: ignore[no-redef]
    import sre_parse as _sre_parse  # type: ignore[no-redef]

MAX_PATTERN_CHARS = 8000  # the longest SGLang pattern is under 1,000

_FORBIDDEN_TEXT = (
    (re.compile(r"\(\?P="), "a named backreference (?P=...)"),
    (re.compile(r"\(\?#"), "a comment group (?#...)"),
    (re.compile(r"\(\?\("), "a conditional group (?(...)"),
    (re.compile(r"\(\?<?[=!]"), "lookaround"),
    (re.compile(r"\(\?>"), "an atomic group"),
)
_REPEATS = {"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"}
_BANNED_OPS = {
    "GROUPREF": "a backreference",
    "GROUPREF_EXISTS": "a conditional group",
    "ASSERT": "lookaround",
    "ASSERT_NOT": "lookaround",
    "ATOMIC_GROUP": "an atomic group",
    "POSSESSIVE_REPEAT": "a possessive quantifier",
}


def parse(pattern: str) -> Any:
    """Python's own parse tree of `pattern` (raises re.error)."""
    return _sre_parse.parse(pattern)


def problem(pattern: str) -> str | None:
    """Why `pattern` is unsafe ("it nests quantifiers", ...), or None when it is safe."""
    if len(pattern) > MAX_PATTERN_CHARS:
        return f"it is longer than {MAX_PATTERN_CHARS} characters"
    why = _text_problem(pattern)
    if why:
        return why
    try:
        compiled(pattern)
        tree = parse(pattern)
    except (re.error, OverflowError, RecursionError) as exc:
        return f"it does not compile in Python re ({exc})"
    return _tree_problem(tree)


def _text_problem(pattern: str) -> str | None:
    for rx, what in _FORBIDDEN_TEXT:
        if rx.search(pattern):
            return f"it uses {what}"
    # Escapes RE2 lacks or reads differently (\Z, \g<..>, numeric backrefs, \N{...}).
    for m in re.finditer(r"\\(.)", pattern):
        if _escaped_is_literal_backslash(pattern, m.start()):
            continue
        c = m.group(1)
        if c in "123456789":
            return "it uses a numeric backreference"
        if c in "ZgN":
            return f"it uses \\{c}, which RE2 does not support"
    return None


def _escaped_is_literal_backslash(pattern: str, pos: int) -> bool:
    """True when the backslash at `pos` is itself escaped (an odd run of backslashes before it)."""
    n = 0
    while pos - 1 - n >= 0 and pattern[pos - 1 - n] == "\\":
        n += 1
    return n % 2 == 1


def _op_name(op: Any) -> str:
    return getattr(op, "name", str(op))


def _nodes(items: Any, repeated: bool = False, out: list | None = None) -> list:
    """Every node of a parse tree, parents first: (op name, its arguments, whether a repeat of
    more than once stands around it)."""
    out = [] if out is None else out
    for op, av in items:
        name = _op_name(op)
        out.append((name, av, repeated))
        if name in _REPEATS:
            _nodes(av[2], repeated or av[1] > 1, out)
        elif name == "SUBPATTERN":
            _nodes(av[-1], repeated, out)
        elif name == "BRANCH":
            for alt in av[1]:
                _nodes(alt, repeated, out)
    return out


def _tree_problem(tree: Any) -> str | None:
    for name, av, repeated in _nodes(tree):
        if name in _BANNED_OPS:
            return f"it uses {_BANNED_OPS[name]}"
        if name in _REPEATS:
            lo, hi, body = av
            # `x?` is harmless around anything; any other repeat inside a repeat is a nest.
            if hi > 1 and repeated:
                return "it nests quantifiers"
            if hi == _sre_constants.MAXREPEAT and any(_op_name(o) == "ANY" for o, _ in body):
                return "it repeats `.` without a bound (write .{0,256} instead)"
    return None


# ---------------------------------------------------------------- log-line forms (profiles)

LINE_FORM_GROUPS = {"file", "line"}  # what a log prefix may capture: where it was logged
MAX_FORM_REPEAT = 8192


def line_form_problem(pattern: str, *, suffix: bool = False) -> str | None:
    """Why a profile's log-prefix (or suffix) regex cannot run on pasted text, or None.

    Beyond `problem`: every repeat is bounded, so one match attempt costs a constant however
    long the line (a prefix is tried at the start of every line of a log); named groups are
    only `file` and `line`; a suffix starts with literal text (found with `str.rfind`, then
    matched from there)."""
    why = problem(pattern)
    if why:
        return why
    tree = parse(pattern)
    if _unbounded(tree):
        return f"it repeats without a bound (write {{0,{MAX_FORM_REPEAT}}} or less)"
    names = set(compiled(pattern).groupindex)
    if names - LINE_FORM_GROUPS:
        return f"it names groups other than {sorted(LINE_FORM_GROUPS)}: {sorted(names)}"
    if suffix and len(leading_literal(pattern)) < 2:
        return "a suffix must start with at least two literal characters"
    rx = compiled(pattern)
    if rx.match(""):
        return "it matches the empty string"
    # An empty match depends on the first character alone (a `\B`, a `\b`): none may read
    # an empty prefix at the start of a line, where the scan's prefilter counts on a timestamped
    # line opening a record (prefilter.log_cuts).
    if any((m := rx.match(c)) is not None and not m.end() for c in ("[", "a", "0", " ", "\n")):
        return "it can match an empty prefix at the start of a line"
    return None


def leading_literal(pattern: str) -> str:
    """The literal text every match of `pattern` starts with ("" when none)."""
    out = []
    for op, av in parse(pattern):
        if _op_name(op) != "LITERAL":
            break
        out.append(chr(av))
    return "".join(out)


def _unbounded(tree: Any) -> bool:
    return any(
        name in _REPEATS and (av[1] == _sre_constants.MAXREPEAT or av[1] > MAX_FORM_REPEAT)
        for name, av, _ in _nodes(tree)
    )
