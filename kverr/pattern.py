"""A `messagePattern` at run time: the one place it is compiled (`re`, or RE2 where `re` could
backtrack: catalog/patterns.py), the pattern the matchers run, and the one whitespace rule: a
pattern spells a whitespace run as one space or `\\s+` (records/pattern.py), and a text is
searched with its runs folded to one space (`fold_space`; the site's search.js by `JS_BLANKS`,
which a test keeps equal). Stdlib only: this is on the `kverr explain` path.
"""

from __future__ import annotations

import collections
import re
import threading

# Python's whitespace (what `\s`, str.isspace() and str.split() take), spelled out so `rstrip`
# can take it in one call together with other characters; tests check it against isspace().
BLANKS = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005"
    "\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
# BLANKS as a JavaScript regex, whose own `\s` is another set
JS_BLANKS = "/[" + "".join(f"\\u{ord(c):04x}" for c in BLANKS) + "]+/g"


def fold_space(text: str) -> str:
    """`text` as a pattern is searched in: each whitespace run one space, the ends stripped."""
    return " ".join(text.split())


def compiled(pattern: str) -> re.Pattern[str]:
    """A messagePattern (or a part of one) compiled by Python's `re` (raises re.error)."""
    return re.compile(pattern)


# A colour code the source prints around its message, as a pattern spells it (ESC then `\[`).
PATTERN_ANSI_RE = re.compile(r"(?:\x1b|\\x1b|\\033|\\u001b)\\\[[0-9;]*m")
EDGE_SPACE_RE = re.compile(r"^(?:\\s[+*]| )+|(?:\\s[+*]| )+$")


def matchable(pattern: str) -> str:
    """The pattern the matchers run: colour codes removed, because input is cleaned of them,
    and whitespace at either end removed, because input is stripped (`fold_space`). A message's code
    quotes (`gpu_memory_utilization`) may be missing, because Markdown (an issue, a chat)
    renders them away."""
    if "\x1b" in pattern or "\\" in pattern:
        pattern = PATTERN_ANSI_RE.sub("", pattern)
    pattern = EDGE_SPACE_RE.sub("", pattern)
    return _optional_backticks(pattern) if "`" in pattern else pattern


def _optional_backticks(pattern: str) -> str:
    """Each literal backtick outside a character class made optional (`` ` `` -> `` `? ``)."""
    out, in_class, escaped = [], False, False
    for i, c in enumerate(pattern):
        out.append(c)
        if escaped:
            escaped = False
        elif c == "\\":
            escaped = True
        elif in_class:
            in_class = c != "]" or pattern[i - 1] == "["
        elif c == "[":
            in_class = True
        elif c == "`" and pattern[i + 1 : i + 2] not in ("?", "*", "+", "{"):
            out.append("?")
    return "".join(out)


def js_source(pattern: str) -> str:
    """The matchable pattern as JavaScript's RegExp reads it: named groups are `(?<name>...)`
    there; the rest of a safe pattern (kverr.regexsafe) is shared syntax."""
    return matchable(pattern).replace("(?P<", "(?<")


# RE2 objects kept (least recently used dropped). Each holds its program and a DFA cache that
# hostile text can grow to RE2's `max_mem`, 8 MB (the placeholder shapes need about 4 MB; with
# less, RE2 falls back to its NFA: still linear, 40x slower), so this bounds their memory.
LINEAR_KEPT = 32
_LINEAR: collections.OrderedDict[str, object] = collections.OrderedDict()
_LINEAR_LOCK = threading.Lock()  # the event loop and the API's pool threads share it


def linear(pattern: str):
    """`pattern` compiled by RE2 (kept while among the LINEAR_KEPT most recently used), or
    None when RE2 cannot compile it (a hand-edited catalog's pattern): `re` then runs it."""
    with _LINEAR_LOCK:
        if pattern in _LINEAR:
            _LINEAR.move_to_end(pattern)
            return _LINEAR[pattern]
    import re2  # ~7 ms: imported only when a text needs it

    options = re2.Options()
    options.log_errors = False  # RE2 would print "DFA out of memory" to stderr
    # re2.compile keeps the last 128 patterns in a cache of its own, which would outlive
    # LINEAR_KEPT; its class, where it has one, compiles without that cache.
    make = getattr(re2, "_Regexp", None) or re2.compile
    try:
        compiled = make(pattern, options)
    except re2.error:
        compiled = None
    with _LINEAR_LOCK:
        _LINEAR[pattern] = compiled
        while len(_LINEAR) > LINEAR_KEPT:
            _LINEAR.popitem(last=False)
    return compiled
