"""messagePattern: exact literals, bounded placeholder groups, RE2-safe, matching what Python prints."""

from __future__ import annotations

import re

import pytest
from kverr.extractor import extract, render
from kverr.records.pattern import check_pattern, pattern_for, sample_value

from kverr.errors import SchemaError
from kverr.ftypes import Part, Template


def T(*parts: str | tuple) -> Template:
    """Literal strings and (expr, conversion, spec) tuples."""
    out = []
    for p in parts:
        if isinstance(p, str):
            out.append(Part(text=p))
        else:
            expr, conv, spec = (tuple(p) + (None, None))[:3]
            out.append(Part(expr=expr, conversion=conv, format_spec=spec))
    return Template(tuple(out))


@pytest.mark.parametrize(
    ("template", "pattern"),
    [
        (T("--a is incompatible with --b."), r"--a is incompatible with --b\."),
        (T("needs {None, 1} (x) [y] a|b ^$*+?"), r"needs \{None, 1\} \(x\) \[y\] a\|b \^\$\*\+\?"),
        (T("two  spaces\nand newline"), r"two\s+spaces\s+and newline"),
        (T("but got ", ("x", "r"), "."), r"but got (?P<v0>.{1,256})\."),
        (T("got ", ("x",), " for --y."), r"got (?P<v0>.{0,256}?) for --y\."),
        (
            T("ratio ", ("r", None, ".2f"), " too big"),
            r"ratio (?P<v0>[-+]?(?:[0-9][0-9_,]{0,30}(?:\.[0-9]{0,20})?(?:[eE][-+]?[0-9]{1,4})?|inf|nan)%?) too big",
        ),
        (T("size n=", ("n", None, "%d"), " ok"), r"size n=(?P<v0>[-+]?[0-9][0-9_,]{0,30}) ok"),
        (T(("a", "r"), " and also ", ("b", "s")), r"(?P<v0>.{1,256}?) and also (?P<v1>.{0,256})"),
        (T(), ""),
        (T(("msg",)), ""),  # matches any line: found through tracebacks only
        (T(("a",), ": ", ("b",)), ""),
    ],
)
def test_pattern_for(template, pattern):
    assert pattern_for(template) == pattern
    check_pattern(pattern)


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        (r"(a+)+b", "nests quantifiers"),
        (r"(?:a{1,5}){2,3}", "nests quantifiers"),
        (r"(?:x.{0,9}?)*", "nests quantifiers"),
        (r"a(?=b)", "lookaround"),
        (r"(?<!a)b", "lookaround"),
        (r"(a)\1", "backreference"),
        (r"(?P<a>x)(?P=a)", "backreference"),
        (r"a\Z", "RE2 does not support"),
        (r"a.*b", "without a bound"),
        (r"(?#note)a", "comment"),
        (r"(x", "does not compile"),
        (r"a++", "possessive"),
        (r"(?>a)", "atomic"),
    ],
)
def test_check_pattern_rejects_unsafe(pattern, why):
    # Python 3.10 has no possessive/atomic syntax: there such a pattern simply does not compile.
    with pytest.raises(SchemaError, match=re.escape(why) + "|does not compile"):
        check_pattern(pattern, who="record 0123456789abcdef")


@pytest.mark.parametrize("pattern", ["", r"a\s+b", r"a.{0,9}b", r"\\1 literal", r"x(?:ab)?y{1,3}"])
def test_check_pattern_accepts_safe(pattern):
    check_pattern(pattern)


# What Python prints for values of every common type, placed in typical message shapes.
VALUES = [
    "triton",
    "it's",
    'say "hi"',
    None,
    True,
    False,
    -1,
    0.875,
    -3.5e-07,
    1e20,
    ["fa3", "triton"],
    ("a", 1),
    {"k": [1, 2]},
    {"only"},
    "/models/Llama-3.1-8B-Instruct",
    "",
]
SHAPES = [
    'raise ValueError(f"--x must be one of a, b, got {cfg.x!r}.")',
    'raise ValueError(f"--x={cfg.x} is not supported with --y={cfg.y}; pick another.")',
    'raise ValueError("Unknown backend %s for %r" % (cfg.x, cfg.y))',
    'raise ValueError("bad {} and {!r} here".format(cfg.x, cfg.y))',
    'logger.warning("Using %s with %s. Results may vary.", cfg.x, cfg.y)',
    'assert cfg.x, f"got {cfg.x} (from {cfg.y!r})"',
]


def _module(stmt: str) -> str:
    return f"import logging\nlogger = logging.getLogger(__name__)\ndef f(cfg):\n    {stmt}\n"


@pytest.mark.parametrize("stmt", SHAPES)
@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_pattern_matches_what_python_prints(stmt, value):
    (site,) = extract(_module(stmt))
    t = site.template
    pattern = pattern_for(t)
    check_pattern(pattern)
    exprs = [p.expr for p in t.placeholders]
    values = {e: value if i == 0 else "fa3" for i, e in enumerate(dict.fromkeys(exprs))}
    message = render(t, values)
    m = re.search(pattern, message)
    assert m, (pattern, message)
    first = next(p for p in t.placeholders)
    printed = render(Template((first,)), values)
    if printed:  # an empty value leaves nothing to capture
        assert m.group("v0") == printed


def test_sample_values_render_and_capture_for_the_seed(seed_module):
    sites = extract(seed_module, "python/sglang/srt/arg_groups/kv_cache_hook.py")
    assert sites
    for site in sites:
        pattern = pattern_for(site.template)
        if not pattern:
            continue
        values = {p.expr or "": sample_value(p) for p in site.template.placeholders}
        message = render(site.template, values)
        m = re.search(pattern, message)
        assert m, (pattern, message)
        for i, part in enumerate(site.template.placeholders):
            assert m.group(f"v{i}") == render(Template((part,)), values)


def test_patterns_are_re2_compatible(seed_module):
    re2 = pytest.importorskip("re2")
    patterns = [pattern_for(s.template) for s in extract(seed_module)]
    patterns += [
        pattern_for(T("got ", ("x", "r"), " and ", ("y", None, ".2f"), " (", ("z",), ")."))
    ]
    for p in filter(None, patterns):
        assert re2.compile(p) is not None


def test_pattern_module_stays_light():
    """The catalog's explain path may import kverr.records.pattern: no libcst, jsonschema, duckdb."""
    import subprocess
    import sys

    code = (
        "import sys, kverr.records.pattern, kverr.records.dataset, kverr.schema\n"
        "heavy = {'libcst', 'jsonschema', 'duckdb'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# (message as the source writes it, what a paste shows, whether it matches)
QUOTES = [
    (
        "Raise `kv_budget` before starting the engine.",
        "Raise kv_budget before starting the engine.",
        True,
    ),
    (
        "Raise `kv_budget` before starting the engine.",
        "Raise `kv_budget` before starting the engine.",
        True,
    ),
    (
        "Raise `kv_budget` before starting the engine.",
        "Raise 'kv_budget' before starting the engine.",
        False,
    ),
    ("Use ``--fast`` with `mode` set", "Use --fast with mode set", True),
    ("Bad value `x` in [`a`, `b`]", "Bad value x in [a, b]", True),
]


@pytest.mark.parametrize(("message", "pasted", "found"), QUOTES)
def test_code_quotes_markdown_renders_away_are_optional(message, pasted, found):
    from kverr.pattern import matchable

    pat = matchable(pattern_for(T(message)))
    assert bool(re.search(pat, pasted)) is found
