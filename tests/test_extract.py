"""The extractor through its one-line harness: `extract(src)` -> sites."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import libcst as cst
import pytest
from kverr.extractor import (
    TemplateContext,
    TemplateError,
    extract,
    extract_file,
    extract_files,
    render,
    template_for,
    template_for_or_raise,
)
from kverr.extractor.run import extract_raw
from sampling import sweep

from kverr.ftypes import (
    Binding,
    FileExtraction,
    Guard,
    Part,
    SourceFile,
    Template,
    from_json,
    to_json,
)
from kverr.profile import load_profile


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def one(text: str):
    sites = extract(src(text))
    assert len(sites) == 1, sites
    return sites[0]


def sf(text: str, path: str = "t.py") -> SourceFile:
    return SourceFile(path=path, text=src(text), blob="0" * 40)


# ---------------------------------------------------------------- kinds

KINDS = [
    ("raise ValueError('x')", "raise", "ValueError", "error", None),
    ("raise errors.Bad('x')", "raise", "errors.Bad", "error", None),
    ("raise KeyError", "raise", "KeyError", "error", None),
    ("assert ok, 'x'", "assert", "AssertionError", "error", None),
    ("logger.warning('x')", "log", None, "warning", "logger.warning"),
    ("logger.warn('x')", "log", None, "warning", "logger.warn"),
    ("logger.error('x')", "log", None, "error", "logger.error"),
    ("logger.exception('x')", "log", None, "error", "logger.exception"),
    ("logger.critical('x')", "log", None, "critical", "logger.critical"),
    ("logger.fatal('x')", "log", None, "critical", "logger.fatal"),
    ("logger.info('x')", "log", None, "info", "logger.info"),
    ("logger.log(logging.ERROR, 'x')", "log", None, "error", "logger.log"),
    ("logging.warning('x')", "log", None, "warning", "logging.warning"),
    ("warnings.warn('x')", "warn", "UserWarning", "warning", "warnings.warn"),
    ("warnings.warn('x', FutureWarning)", "warn", "FutureWarning", "warning", "warnings.warn"),
    ("sys.exit('x')", "exit", "SystemExit", "error", "sys.exit"),
    ("raise SystemExit('x')", "exit", "SystemExit", "error", None),
]


@pytest.mark.parametrize(("stmt", "kind", "error_class", "severity", "call"), KINDS)
def test_site_kinds(stmt, kind, error_class, severity, call):
    header = "import logging, sys, warnings\nlogger = logging.getLogger(__name__)\n"
    site = one(header + "def f(ok):\n    " + stmt + "\n")
    assert (site.kind, site.error_class, site.severity, site.logger_call) == (
        kind,
        error_class,
        severity,
        call,
    )
    if stmt != "raise KeyError":
        assert site.template.display() == "x"


NOT_SITES = [
    "def f():\n    try:\n        pass\n    except ValueError:\n        raise\n",  # bare re-raise
    "import sys\nsys.exit(1)\n",  # exit code only: prints nothing
    "import sys\nsys.exit()\n",
    "import logging\nlogger = logging.getLogger()\nlogger.debug('x')\n",
    "logger.warning('x')\n",  # `logger` never bound: not a logger
    "import logging\nwarner = object()\nwarner.warning('x')\n",
]


@pytest.mark.parametrize("text", NOT_SITES)
def test_not_sites(text):
    assert extract(text) == ()


def test_logger_recognised_by_binding_not_spelling():
    sites = extract(
        src(
            """
            import logging as lg
            from logging import getLogger
            from mypkg.log_utils import init_logger
            from mypkg.common import logger as shared
            a = lg.getLogger(__name__)
            b = getLogger("b")
            c = init_logger("c")
            def f():
                d = lg.getLogger("d")
                a.warning("1"); b.error("2"); c.info("3"); d.critical("4")
                lg.warning("5")
                lg.getLogger("x").error("6")
                shared.info("7")
            """
        )
    )
    assert [s.template.display() for s in sites] == ["1", "2", "3", "4", "5", "6", "7"]


# ---------------------------------------------------------------- templates

TEMPLATES = [
    ("'plain'", "plain", ()),
    ("('a ' 'b' \"c\")", "a bc", ()),
    (
        "f'v={v!r:>5} {w=} {u = }'",
        "v={v} w={w} u = {u}",
        (("v", "r", ">5"), ("w", "r", None), ("u", "r", None)),
    ),
    ("f\"{'x' if v else 'y'}\"", None, ()),  # two variants, checked below
    (
        "'%s and %r, %05.1f%%' % (v, w, u)",
        "{v} and {w}, {u}%",
        (("v", "s", None), ("w", "r", None), ("u", None, "%05.1f")),
    ),
    ("'only %s' % v", "only {v}", (("v", "s", None),)),
    ("'%(a)s-%(b)d' % {'a': v, 'b': w}", "{v}-{w}", (("v", "s", None), ("w", None, "%d"))),
    ("'%(a)s' % mapping", "{mapping['a']}", (("mapping['a']", "s", None),)),
    ("'{} {}'.format(v, w)", "{v} {w}", (("v", None, None), ("w", None, None))),
    ("'{1}{0!r}'.format(v, w)", "{w}{v}", (("w", None, None), ("v", "r", None))),
    (
        "'{k:>3} {v.attr}'.format(k=v, v=w)",
        "{v} {w.attr}",
        (("v", None, ">3"), ("w.attr", None, None)),
    ),
    ("'n=' + str(v) + '!'", "n={v}!", (("v", "s", None),)),
    ("'CHOICES=' + str(CHOICES)", "CHOICES=['a', 'b']", ()),
    ("f'{CHOICES} {NAME!r} {TUP} {MAPPING}'", "['a', 'b'] 'n' (1, 2) {'k': 1}", ()),
    ("f'{sorted(SETC)} {\", \".join(CHOICES)} {len(CHOICES)}'", "['p', 'q'] a, b 2", ()),
    ("f'{SETC}'", "{SETC}", (("SETC", None, None),)),  # str(set) order is per process
    ("'%s=%d' % pair", "{pair[0]}={pair[1]}", (("pair[0]", "s", None), ("pair[1]", None, "%d"))),
    ("' '.join(['a', f'{v}', NAME])", "a {v} n", (("v", None, None),)),
    ("f'{list(SETC)}'", "{list(SETC)}", (("list(SETC)", None, None),)),
    ("', '.join(SETC)", None, ()),  # not resolvable at all: dynamic (strict: error)
]


@pytest.mark.parametrize(("expr", "display", "placeholders"), TEMPLATES)
def test_templates(expr, display, placeholders):
    text = (
        "CHOICES = ['a', 'b']\nNAME = 'n'\nTUP = (1, 2)\nMAPPING = {'k': 1}\nSETC = {'q', 'p'}\n"
        f"def f(v, w, u, mapping, pair):\n    raise ValueError({expr})\n"
    )
    if display is None and "join" in expr:
        with pytest.raises(TemplateError):
            extract(text)
        return
    sites = extract(text)
    if display is None:
        assert [s.template.display() for s in sites] == ["x", "y"]
        assert [s.variant for s in sites] == [1, 2]
        return
    (site,) = sites
    assert site.template.display() == display
    got = tuple((p.expr, p.conversion, p.format_spec) for p in site.template.placeholders)
    assert got == placeholders


def test_local_message_variants_and_appends():
    sites = extract(
        src(
            """
            def f(cfg, n):
                if cfg.a:
                    msg = "A"
                elif cfg.b:
                    msg = f"B{n}"
                else:
                    raise ValueError("early")
                msg += " tail"
                if cfg.c:
                    msg = msg + "!"
                raise ValueError(msg)
            """
        )
    )
    last = [s for s in sites if s.line == 11]
    assert [(s.variant, s.template.display()) for s in last] == [
        (1, "A tail!"),
        (2, "B{n} tail!"),
        (3, "A tail"),
        (4, "B{n} tail"),
    ]


def test_ansi_wrapper_is_inlined():
    site = one(
        """
        import logging
        logger = logging.getLogger()
        def yellow(text):
            return f"\\033[1;33m{text}\\033[0m"
        def f(opt):
            logger.warning(yellow(f"{opt} is deprecated"))
        """
    )
    assert site.template.parts == (
        Part(text="\x1b[1;33m"),
        Part(expr="opt"),
        Part(text=" is deprecated\x1b[0m"),
    )


def test_shadowed_and_mutated_constants_stay_placeholders():
    sites = extract(
        src(
            """
            LIMIT = [1]
            GROW = [1]
            def add(x):
                GROW.append(x)
            def f(LIMIT):
                raise ValueError(f"{LIMIT} {GROW}")
            """
        )
    )
    assert sites[0].template.display() == "{LIMIT} {GROW}"


def test_unresolvable_message_is_dynamic_when_tolerant(monkeypatch):
    monkeypatch.setenv("KVERR_STRICT", "0")
    site = one("def f(build):\n    raise ValueError(build('x'))\n")
    assert site.template.parts == (Part(expr="build('x')", dynamic=True),)


def test_unresolvable_message_raises_when_strict():
    with pytest.raises(TemplateError, match=r"^t.py:2: .*build\('x'\)"):
        extract("def f(build):\n    raise ValueError(build('x'))\n")


def test_render_placeholder_kinds():
    template = Template(
        (
            Part(text="a="),
            Part(expr="a", conversion="r"),
            Part(text=" b="),
            Part(expr="b", format_spec=".2f"),
            Part(text=" c="),
            Part(expr="c", format_spec="%05d"),
        )
    )
    assert render(template, {"a": "x", "b": 1.234, "c": 7}) == "a='x' b=1.23 c=00007"


# ---------------------------------------------------------------- context

SERVER_ARGS = """
import dataclasses
import logging
from dataclasses import field

logger = logging.getLogger(__name__)
MODES = ["a", "b"]


@dataclasses.dataclass
class ServerArgs:
    tp_size: int = 1
    mode: str = field(default="a", metadata={"help": "The mode."})
    enable_x: bool = False

    def _handle_mode(self):
        \"\"\"Check the mode.\"\"\"
        cfg = self._resolved()
        if not cfg.enable_x:
            return
        # Modes other than 'a' need
        # tensor parallelism.
        if self.mode != "a":  # b is slow
            if self.tp_size < 2:
                raise ValueError(f"--mode {self.mode} needs --tp-size >= 2")
        else:
            logger.info("mode a")

    @staticmethod
    def add_cli_args(parser):
        parser.add_argument("--tp-size", "--tensor-parallel-size", type=int, default=ServerArgs.tp_size, help="TP.")
        parser.add_argument("--mode", choices=MODES, default=ServerArgs.mode)
        parser.add_argument("--enable-x", action="store_true")


def check(server_args):
    view = resolving_view(server_args)
    assert view.tp_size > 0 and server_args.unknown_attr, "bad"
"""


@pytest.fixture(scope="module")
def server_args_sites():
    return extract(src(SERVER_ARGS), "python/sglang/srt/server_args.py")


def test_context_of_a_method_site(server_args_sites):
    site = server_args_sites[0]
    assert (site.function, site.line, site.end_line, site.col) == (
        "ServerArgs._handle_mode",
        24,
        24,
        16,
    )
    assert site.snippet == 'raise ValueError(f"--mode {self.mode} needs --tp-size >= 2")'
    assert site.docstring == "Check the mode."
    assert site.comment == "Modes other than 'a' need\ntensor parallelism.\nb is slow"
    assert site.guards == (
        Guard("not cfg.enable_x", False, "early-exit", 18, ("--enable-x",)),
        Guard('self.mode != "a"', True, "if", 22, ("--mode",)),
        Guard("self.tp_size < 2", True, "if", 23, ("--tp-size",)),
    )
    assert site.flags == ("--enable-x", "--mode", "--tp-size")


def test_else_branch_guard(server_args_sites):
    site = server_args_sites[1]
    assert site.template.display() == "mode a"
    assert site.guards[-1] == Guard('self.mode != "a"', False, "else", 22, ("--mode",))


def test_assert_condition_and_view_alias(server_args_sites):
    site = server_args_sites[2]
    assert site.function == "check"
    assert site.condition == "view.tp_size > 0 and server_args.unknown_attr"
    assert site.guards == (Guard(site.condition, False, "assert", 37, ("--tp-size",)),)
    assert site.flags == ("--tp-size",)  # unknown_attr is not a declared flag


def test_flag_declarations_merge_field_and_add_argument():
    (fx,) = extract_files([sf(SERVER_ARGS)])
    decls = {d.dest: d for d in fx.flags}
    assert decls["tp_size"].name == "--tp-size"
    assert (decls["tp_size"].type, decls["tp_size"].default, decls["tp_size"].help) == (
        "int",
        "1",
        "TP.",
    )
    assert decls["mode"].choices == ("a", "b")
    assert decls["mode"].help == "The mode."
    assert decls["mode"].default == "'a'"
    assert decls["enable_x"].action == "store_true"


def test_flags_keep_every_attribute_when_nothing_is_declared():
    site = one("def check(server_args):\n    assert server_args.some_thing, 'x'\n")
    assert site.flags == ("--some-thing",)


def test_global_server_args_accessor_reads_flags():
    site = one(
        "def check():\n    if get_global_server_args().tp_size > 1:\n        raise ValueError('x')\n"
    )
    assert site.flags == ("--tp-size",)


@pytest.mark.parametrize(
    ("exit_test", "flags"),
    [
        # a part the code decides (`tokens`) lets any launch through: the flag the
        # other part reads, here through a local built from it, is none of the check's
        ("not tokens and embeds is None", ("--b",)),
        ("len(tokens) > 1 and server_args.a", ("--b",)),
        # every part a flag: passing the exit says something of each
        ("server_args.a and embeds", ("--a", "--b")),
        ("server_args.a", ("--a", "--b")),
    ],
)
def test_an_early_exit_any_launch_may_pass_names_none_of_its_flags(exit_test, flags):
    site = one(
        "def step(server_args, tokens):\n"
        "    embeds = convert(tokens, dtype=server_args.a)\n"
        f"    if {exit_test}:\n"
        "        return\n"
        "    assert server_args.b is not None\n"
    )
    assert site.flags == flags


def test_extract_files_checks_flags_against_the_whole_file_set():
    decl = sf("import argparse\np = argparse.ArgumentParser()\np.add_argument('--a-b')\n", "d.py")
    use = sf("def check(args):\n    assert args.a_b and args.c_d, 'x'\n", "u.py")
    _, used = extract_files([decl, use])
    assert used.sites[0].flags == ("--a-b",)
    assert extract_file(use).sites[0].flags == ("--a-b", "--c-d")  # alone: no declarations


def test_nested_functions_and_match_guards():
    sites = extract(
        src(
            """
            class Outer:
                def method(self, x):
                    def inner(y):
                        match y:
                            case 1 if x:
                                raise ValueError("one")
                    while x:
                        try:
                            inner(x)
                        except (KeyError, IndexError):
                            assert False, "caught"
            """
        )
    )
    assert [(s.function, [(g.kind, g.test) for g in s.guards]) for s in sites] == [
        ("Outer.method.inner", [("match", "y matches 1 if x")]),
        (
            "Outer.method",
            [("while", "x"), ("try", "except (KeyError, IndexError)"), ("assert", "False")],
        ),
    ]


# ---------------------------------------------------------------- failures and syntax

FAILURES = [
    ("def f(:\n    pass\n", 1, "t.py:1:"),
    ("x = 1\nif x\n    raise ValueError('x')\n", 2, "t.py:2:"),
]


@pytest.mark.parametrize(("text", "line", "head"), FAILURES)
def test_parse_failure_is_data(text, line, head):
    fx = extract_file(SourceFile("t.py", text, "b"))
    assert fx.sites == ()
    (failure,) = fx.failures
    assert failure.line == line
    shown = str(failure)
    assert shown.startswith(head)
    assert shown.splitlines()[-1].strip() == "^"


def test_other_files_still_go_through():
    good = sf("raise ValueError('fine')\n", "good.py")
    bad = SourceFile("bad.py", "def (:\n", "b")
    binary = SourceFile("bin.py", "\x00\x01", "b")
    flagged = SourceFile("latin.py", "", "b", error="3:7:not UTF-8 (byte 0xe9)")
    out = extract_files([bad, binary, good, flagged])
    assert [len(fx.failures) for fx in out] == [1, 1, 0, 1]
    assert out[2].sites[0].template.display() == "fine"
    assert str(out[3].failures[0]) == "latin.py:3:7: not UTF-8 (byte 0xe9)"
    assert "binary" in out[1].failures[0].message
    (escaped,) = extract_file(SourceFile("e.py", "x = 1\ny = '\udce9'\n", "b")).failures
    assert (escaped.line, escaped.col) == (2, 6)


MODERN = [
    "def f(x):\n    if (n := len(x)) > 3:\n        raise ValueError(f'{n} items')\n",
    "def f(x):\n    match x:\n        case {'k': v}:\n            raise ValueError(f'{v} items')\n",
    "def f[T](x: T) -> T:\n    raise ValueError(f'{x} items')\n",
    "type Alias = list[int]\ndef f(x):\n    raise ValueError(f'{x} items')\n",
    'def f(x):\n    raise ValueError(f"{x + "!"} items")\n',  # PEP 701 quote reuse (3.12+)
]


@pytest.mark.parametrize("text", MODERN)
def test_modern_syntax(text):
    (site,) = extract(text)
    assert site.template.display().endswith(" items")
    assert site.line == text.count("\n")  # the raise is always the last line


def test_newer_syntax_than_the_running_python_uses_the_libcst_path():
    text = "def f[T](x: T) -> T:\n    raise ValueError(f'{x} items')\n"
    fx = extract_file(SourceFile("t.py", text, "b"))
    (site,) = fx.sites
    assert (site.line, site.col, site.end_col) == (2, 4, 34)
    assert fx.stats["units_parsed"] == 1
    if sys.version_info < (3, 12):
        assert fx.stats["units"] == 1  # whole-file fallback


# ---------------------------------------------------------------- cache


def test_cache_gives_identical_output_and_counts(server_args_sites):
    cache: dict[str, str] = {}
    source = sf(SERVER_ARGS, "python/sglang/srt/server_args.py")
    cold = extract_file(source, cache)
    warm = extract_file(source, cache)
    assert warm == cold == extract_file(source)
    assert cold.stats["cache_hits"] == 0 and cold.stats["units_parsed"] >= 2
    assert warm.stats["cache_hits"] == cold.stats["units_parsed"]
    assert warm.stats["units_parsed"] == 0


def test_cache_survives_moved_units_and_sees_constant_changes():
    cache: dict[str, str] = {}
    base = "MODES = ['a']\ndef f(x):\n    raise ValueError(f'{MODES} {x}')\n"
    extract_file(sf(base), cache)
    moved = extract_file(sf("# a\n# b\n# moved\n" + base), cache)
    assert moved.stats["cache_hits"] == 1
    assert moved.sites[0].line == 6
    changed = extract_file(sf(base.replace("['a']", "['b']")), cache)
    assert changed.stats["cache_hits"] == 0
    assert changed.sites[0].template.display() == "['b'] {x}"


def test_default_profile_names_the_sglang_file_set():
    files = load_profile().files
    assert "python/sglang/srt/server_args.py" in files
    assert any(g.endswith("arg_groups/**/*.py") for g in files)


def test_file_extraction_type():
    assert isinstance(extract_file(sf("x = 1\n")), FileExtraction)


@pytest.mark.slow  # interpreters under several hash seeds, their outputs compared (equivalence)
def test_output_does_not_depend_on_the_hash_seed(tmp_path):
    """Set constants print in per-process order; the extractor must never bake that in."""
    fixture = tmp_path / "sets.py"
    fixture.write_text(
        "S = {'alpha', 'beta', 'gamma', 'delta'}\n"
        "def f(x):\n"
        "    raise ValueError(f'{sorted(S)} {list(S)} {x}')\n",
        encoding="utf-8",
    )
    code = (
        "import sys; from kverr.extractor import extract; from kverr.ftypes import to_json; "
        "print(to_json(extract(open(sys.argv[1]).read())))"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code, str(fixture)],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": str(seed), "KVERR_STRICT": "0"},
        ).stdout
        for seed in (1, 2, 3)
    }
    assert len(outputs) == 1
    (site,) = from_json(outputs.pop())
    assert site.template.display() == "['alpha', 'beta', 'delta', 'gamma'] {list(S)} {x}"


def test_flag_alias_joins_field_and_mutable_choices_keep_first_value():
    text = """
    import dataclasses
    BACKENDS = ["a", "b"]
    def register(name):
        BACKENDS.append(name)
    @dataclasses.dataclass
    class ServerArgs:
        pp_size: int = 1
        backend: str = "a"
        def add_cli_args(parser):
            parser.add_argument("--pipeline-parallel-size", "--pp-size", type=int, help="PP.")
            parser.add_argument("--backend", choices=BACKENDS)
        def check(self):
            assert self.pp_size > 0, f"bad {self.backend} not in {BACKENDS}"
    """
    (fx,) = extract_files([sf(text)])
    decls = {d.dest: d for d in fx.flags}
    assert sorted(decls) == ["backend", "pp_size"]
    assert (decls["pp_size"].name, decls["pp_size"].help) == ("--pp-size", "PP.")
    # argparse stores --pp-size under the first long option's name, not the field's
    assert decls["pp_size"].arg_dest == "pipeline_parallel_size"
    assert decls["backend"].arg_dest is None and decls["backend"].choices == ("a", "b")
    (site,) = fx.sites
    assert site.flags == ("--pp-size", "--backend")
    assert site.template.display() == "bad {self.backend} not in {BACKENDS}"  # mutable: not baked


HELPERS = [
    ("'a' + str(x)", "a{x}"),
    ("f'{x!r}' 'b'", "{x}b"),
    ("make(x)", None),  # unknown call: None, never a guess
    ("'a' if x else 'b'", None),  # two variants: not a single template
]


@pytest.mark.parametrize(("expr", "display"), HELPERS)
def test_template_for_helpers(expr, display):
    node = cst.parse_expression(expr)
    got = template_for(node, TemplateContext())
    assert (got.display() if got else None) == display
    if display is None:
        with pytest.raises(TemplateError, match="cannot resolve"):
            template_for_or_raise(node, TemplateContext())
    else:
        assert template_for_or_raise(node, TemplateContext()) == got


def test_too_many_variants_fall_back_instead_of_being_cut(monkeypatch):
    monkeypatch.setenv("KVERR_STRICT", "0")
    arms = " ".join(f"'{i}' if x == {i} else" for i in range(20))
    (site,) = extract(f"def f(x):\n    raise ValueError({arms} 'none')\n")
    assert site.template.parts[0].dynamic and site.variant == 0


def test_raw_extraction_round_trips_through_the_cache_format():
    """extract_raw output (what the pipeline caches) must survive to_json/from_json unchanged."""
    raw = extract_raw(sf(SERVER_ARGS))
    assert from_json(to_json(raw.sites)) == list(raw.sites)


def test_newer_syntax_path_keeps_flag_lines():
    text = src(
        """
        import argparse

        # a comment before the parser
        parser = argparse.ArgumentParser()
        parser.add_argument("--tp-size", type=int)
        type Pair = tuple[int, int]
        """
    )
    (decl,) = extract_file(SourceFile("t.py", text, "b")).flags
    assert (decl.name, decl.line) == ("--tp-size", 5)


def test_flags_named_in_a_newer_modules_messages_are_kept():
    # An arg-groups module newer than the server_args.py it is read with: `cfg.new_mode` is
    # declared nowhere, but the message names --new-mode, so it is a flag; `cfg.pool` is not.
    args = sf(
        """
        import argparse
        def add_cli_args(parser):
            parser.add_argument("--is-embedding", action="store_true", help="Embedding mode.")
        """,
        path="server_args.py",
    )
    group = sf(
        """
        def check(server_args):
            cfg = resolving_view(server_args)
            if not cfg.new_mode:
                return
            if not cfg.is_embedding and cfg.pool:
                raise ValueError("--new-mode requires --is-embedding.")
        """,
        path="arg_groups/new_mode.py",
    )
    _, fx = extract_files([args, group])
    (site,) = fx.sites
    assert site.flags == ("--new-mode", "--is-embedding")
    assert [g.flags for g in site.guards] == [("--new-mode",), ("--is-embedding",)]


BINDINGS = """
import argparse
import dataclasses
import logging
from launcher.kernels import kernels_of

logger = logging.getLogger(__name__)

TILE = 64

@dataclasses.dataclass
class ServerArgs:
    kernel: str = None
    prefill_kernel: str = None
    page_width: int = 16
    rdma_device: str = None
    backup_device: str = None
    max_requests: int = None

    def check(self):
        prefill = self.prefill_kernel or self.kernel
        if prefill == "tiled" and TILE % self.page_width:
            raise ValueError("tiled")
        prefill_kernel, _ = kernels_of(self)
        if prefill_kernel == "paged":
            raise ValueError("paged")
        if self.max_requests is None:
            self.max_requests = 48
            logger.warning("reset to 48")
            self.page_width = 32

    def devices(self):
        self._check(self.rdma_device)
        self._check(self.backup_device)

    def _check(self, device):
        if device is None:
            raise ValueError("no device")

class PathsAction(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        raise ValueError("bad paths")

def add_cli_args(parser):
    parser.add_argument("--adapter-paths", nargs="*", action=PathsAction)
"""


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (
            "tiled",
            [
                Binding(
                    "prefill",
                    "local",
                    "self.prefill_kernel or self.kernel",
                    ("--prefill-kernel", "--kernel"),
                ),
                Binding("TILE", "constant", "64"),
            ],
        ),
        # unpacked from a helper over the launch arguments: the name's words pick the flags
        (
            "paged",
            [
                Binding(
                    "prefill_kernel",
                    "local",
                    "kernels_of(self)[0]",
                    ("--prefill-kernel", "--kernel"),
                )
            ],
        ),
        (
            "reset to 48",
            [
                Binding("max_requests", "assigned", "48", ("--max-requests",), 27),
                Binding("page_width", "sets", "32", ("--page-width",)),
            ],
        ),
        ("no device", [Binding("device", "param", None, ("--rdma-device", "--backup-device"))]),
        ("bad paths", [Binding("values", "action", None, ("--adapter-paths",))]),
    ],
)
def test_bindings_say_what_names_stand_for(message, expected):
    (fx,) = extract_files([sf(textwrap.dedent(BINDINGS))])
    (site,) = [s for s in fx.sites if s.template.display() == message]
    assert list(site.bindings) == expected
    assert {f for b in expected if b.kind in ("local", "param", "action") for f in b.flags} <= set(
        site.flags
    )


ASSIGNED_BEFORE = """
import argparse
from dataclasses import dataclass


@dataclass
class ServerArgs:
    page_size: int = 1
    tp_size: int = 1

    def _handle(self):
        self.page_size = 64
        if self.page_size > self.tp_size:
            raise ValueError("page_size must not exceed tp_size")
"""


def test_a_cached_function_moved_down_keeps_its_assignment_lines_in_step():
    # A function cached at one position and read back at another: every line moves, the
    # line of an assignment before the check too (records compare it with the guard's), so
    # the sites are the same as a fresh extraction's, whichever revision parsed it first.
    cache: dict[str, str] = {}
    extract_raw(sf(ASSIGNED_BEFORE, "server_args.py"), cache)
    moved = sf("# one\n# two\n# three\n" + src(ASSIGNED_BEFORE), "server_args.py")
    warm = extract_raw(moved, cache)
    assert warm.stats["cache_hits"] >= 1
    cold = extract_raw(moved, {})
    assert warm.sites == cold.sites
    lines = [b.line for s in cold.sites for b in s.bindings if b.kind == "assigned"]
    assert lines and all(line > 3 for line in lines)


OWNERS = """
import argparse
KINDS = ["a", "b"]

def deco(*a, **k):
    return lambda f: f

class Args:
    @deco(choices=KINDS)
    def add(parser, x=deco(1)):
        LOCAL = ["c", "d"]; parser.add_argument("--one", choices=LOCAL)
        def inner(p):
            INNER = ["e"]
            p.add_argument("--two", choices=INNER)
            return [p.add_argument(n) for n in INNER]
        try:
            pass
        except ValueError:
            def handler(p): p.add_argument("--three", choices=LOCAL)
        finally:
            pass
        match x:
            case 1:
                def case_one(p):
                    p.add_argument("--four")
        class Nested:
            def method(self, p):
                p.add_argument("--five", choices=[
                    "multi", "line"])
        parser.add_argument("--six", choices=LOCAL)

    async def other(self, p): p.add_argument("--seven")

parser = argparse.ArgumentParser()
parser.add_argument("--eight", choices=KINDS)
"""


@sweep(4)
def test_a_call_s_function_is_found_by_lines_as_by_walking_its_subtree(every):
    """flags._LocalLiterals finds each add_argument call's innermost function by the lines of
    the module's defs; the reference walks every function's subtree (the innermost wins): the
    same answer for every call, in decorators, defaults, nested defs, except and match
    clauses, class bodies inside functions and calls spanning lines, and in kverr's own
    extractor modules."""
    import ast
    from pathlib import Path

    from kverr.extractor import context, flags

    mine = sorted(Path(flags.__file__).parent.glob("*.py"))[::every]
    texts = [OWNERS] + [p.read_text() for p in mine]
    for text in texts:
        tree = ast.parse(text)
        owner = {}
        for fn in ast.walk(tree):  # outer functions first: the innermost wins
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for n in ast.walk(fn):
                    owner[id(n)] = fn
        local = flags._LocalLiterals(tree, context.module_context(tree, text, "m.py", None))
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
        assert calls
        for call in calls:
            assert local.owner(call.lineno) is owner.get(id(call)), ast.unparse(call)[:80]


BINDING_FORMS = """
import os.path, json as j
from x import (a, b as c)
A = 1; A += 1
(B := 2)
for i, (k, *rest) in []: pass
with open("f") as fh, open("g") as (g1, g2): pass
del A
try: pass
except ValueError as err: pass
[q for q in range(3) if (w := q)]
lam = lambda p, *ps, kw=1, **kws: p
def f(x: "T" = 1, *args, y=2, **kw) -> None:
    inner = 3
class C:
    attr = 4
match A:
    case [1, *others] | {"k": others}: pass
    case Point(x=px) as pt: pass
global G
t[0] = o.attr = 5
"""


def _counts_by_iter_child_nodes(stmts):
    """assigned_counts as it was, by ast.iter_child_nodes on every node (the reference)."""
    import ast

    counts: dict[str, int] = {}
    todo = list(stmts)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            counts[getattr(node, "name", "")] = counts.get(getattr(node, "name", ""), 0) + 1
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            counts[node.id] = counts.get(node.id, 0) + 1
        elif isinstance(node, ast.alias):
            name = (node.asname or node.name).split(".")[0]
            counts[name] = counts.get(name, 0) + 1
        elif isinstance(node, ast.arg):
            counts[node.arg] = counts.get(node.arg, 0) + 2
        todo.extend(ast.iter_child_nodes(node))
    return counts


def test_assigned_counts_reads_the_fields_as_iter_child_nodes_did():
    """context.assigned_counts walks fields itself, skipping the leaves that bind nothing:
    the same counts as the generic walk, for every scope of a module of binding forms and of
    kverr's own extractor modules."""
    import ast
    from pathlib import Path

    from kverr.extractor import context

    texts = [BINDING_FORMS] + [
        p.read_text() for p in sorted(Path(context.__file__).parent.glob("*.py"))
    ]
    scopes = 0
    for text in texts:
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                assert context.assigned_counts(node.body) == _counts_by_iter_child_nodes(node.body)
                scopes += 1
    assert scopes > 100
    got = context.assigned_counts(ast.parse(BINDING_FORMS).body)
    assert got["A"] == 3 and got["B"] == 1 and got["j"] == 1 and got["os"] == 1 and got["f"] == 1


# Revisions of one file, in order: each is read with the declarations the ones before it left
# in flags._SEEN, and must give what a reading without that memo gives.
_REVISIONS = {
    "lines move": [
        """
        def add_cli_args(parser):
            parser.add_argument("--tp-size", type=int, default=1, help="Tensor parallel size.")
        """,
        """
        import os

        def add_cli_args(parser):
            parser.add_argument("--tp-size", type=int, default=1, help="Tensor parallel size.")
        """,
    ],
    "a module constant changes under the same call": [
        """
        BACKENDS = ["triton", "flashinfer"]
        HELP = "Old help."

        def add_cli_args(parser):
            parser.add_argument("--backend", choices=BACKENDS, help=HELP)
        """,
        """
        BACKENDS = ["triton", "flashinfer", "fa3"]
        HELP = "New help."

        def add_cli_args(parser):
            parser.add_argument("--backend", choices=BACKENDS, help=HELP)
        """,
    ],
    "the function starts building the choices": [
        """
        from elsewhere import BACKENDS

        def add_cli_args(parser):
            parser.add_argument("--backend", choices=BACKENDS)
        """,
        """
        from elsewhere import BACKENDS

        def add_cli_args(parser):
            BACKENDS = ["triton", "fa3"]
            parser.add_argument("--backend", choices=BACKENDS)
        """,
        """
        from elsewhere import BACKENDS

        def add_cli_args(parser):
            x = 1; BACKENDS = ["triton"]
            parser.add_argument("--backend", choices=BACKENDS)
        """,
        """
        from elsewhere import BACKENDS

        def add_cli_args(parser):
            parser.add_argument("--backend", choices=BACKENDS)
        """,
    ],
    "a constant the function names, not the call, changes": [
        """
        OTHER = 1

        def add_cli_args(parser):
            n = OTHER
            BACKENDS = ["triton", "fa3"]
            parser.add_argument("--backend", choices=BACKENDS, default="fa3")
        """,
        """
        OTHER = 2

        def add_cli_args(parser):
            n = OTHER
            BACKENDS = ["triton", "fa3"]
            parser.add_argument("--backend", choices=BACKENDS, default="fa3")
        """,
    ],
    "the function's own choices change, then move with it": [
        """
        def add_cli_args(parser):
            BACKENDS = ["triton", "fa3"]
            parser.add_argument("--backend", choices=BACKENDS)
        """,
        """
        def add_cli_args(parser):
            BACKENDS = ["triton", "fa3", "flashinfer"]
            parser.add_argument("--backend", choices=BACKENDS)
        """,
        """
        import os

        def add_cli_args(parser):
            BACKENDS = ["triton", "fa3", "flashinfer"]
            parser.add_argument("--backend", choices=BACKENDS)
        """,
    ],
    "the same function text as a method": [
        """
        def add_cli_args(parser):
            parser.add_argument("--tp-size", type=int, default=1)
        """,
        """
        class ServerArgs:
            @staticmethod
            def add_cli_args(parser):
                parser.add_argument("--tp-size", type=int, default=1)
        """,
    ],
    "an inner function is unchanged while its outer one changes": [
        """
        def register(parser):
            def add(group):
                CHOICES = ["a", "b"]
                group.add_argument("--mode", choices=CHOICES)
            add(parser)
        """,
        """
        def register(parser):
            parser.set_defaults(x=1)
            def add(group):
                CHOICES = ["a", "b"]
                group.add_argument("--mode", choices=CHOICES)
            add(parser)
        """,
    ],
    "a field's default changes": [
        """
        import dataclasses

        @dataclasses.dataclass
        class ServerArgs:
            tp_size: int = 1
        """,
        """
        import dataclasses

        @dataclasses.dataclass
        class ServerArgs:
            # a comment moves the field
            tp_size: int = 2
        """,
    ],
}


@pytest.mark.parametrize("case", sorted(_REVISIONS))
def test_remembered_declarations_equal_a_fresh_reading(case):
    import ast

    from kverr.extractor import context, flags
    from kverr.extractor.context import split_lines as _lines

    flags._SEEN.clear()
    for text in map(src, _REVISIONS[case]):
        tree = ast.parse(text)
        ctx = context.module_context(tree, text, "m.py", None)
        fresh = flags.flag_decls(tree, ctx, "m.py")
        for _ in range(2):  # the first reading fills the memo, the second reads from it
            assert flags.flag_decls(tree, ctx, "m.py", None, _lines(text)) == fresh
    assert flags._SEEN  # (the memo was used)
    if "add_argument" in _REVISIONS[case][0]:  # by the function's key too
        assert any(key[0] == "af" for key in flags._SEEN)


@pytest.mark.parametrize(
    "text, binds",
    [
        ("X = [1]", True),
        ("  X: list = []", True),
        ("a = 1; X = 2", True),
        ("    X=3,", True),  # a keyword on its own line: a superset is safe
        ("if X == 2:", False),
        ("f(X)", False),
        ("foo(a, X=3)", False),
        ("YX = 1", False),
        ("a.X = 1", False),
        ("_X = 1", False),
        ("\u00e9X = 1", False),  # a longer name, its first letter not ASCII
        ("X1 = 1", False),
        ("YX = 1\nX = 2", True),  # a longer name's match does not hide the next line's
    ],
)
def test_a_line_that_may_bind_a_name(text, binds):
    from kverr.extractor.flags import _binds

    assert _binds(text, "X") is binds


_SCANNED = [
    "def f(x):\n    raise ValueError('x')\n\ndef g():\n    return 1\n",
    "x = 1  # see foo.\nlogger.info('a')\n",  # a match that starts in one unit, ends in the next
    "x = 1  # see foo.\ninfo('a')\n",  # only a spanning match: neither unit
    "myraise = 1\nreraise_it = 2\nraise_ = 3\n",  # raise inside longer names: no site
    "class A:\n    def f(self):\n        logging.\\\n  warning('x')\n    y = 1; assert y\n",
    "def g():\n    pass\n# raise in a comment between units\n\ndef h():\n    warn_user('x')\n",
    "import warnings\nwarnings.warn('x')\nfrom x import assert_ok\nassert_ok(1)\n",
]


@pytest.mark.parametrize("text", _SCANNED)
def test_one_scan_finds_the_units_a_search_of_each_finds(text):
    """run._with_sites scans the file once; it must pick the units that a search of each
    unit's own text picks, matches across a unit's end and between units included."""
    import ast

    from kverr.extractor import run
    from kverr.extractor.context import module_context, split_lines

    tree = ast.parse(text)
    lines = split_lines(text)
    ctx = module_context(tree, text, "m.py", None, lines)
    ctx.warn_funcs.add("warn_user")
    units = list(run._units(tree.body, lines, (), None, False, ctx))
    site_re = run._site_regex(ctx)
    each = [bool(site_re.search("\n".join(lines[u.start - 1 : u.end]))) for u in units]
    assert run._with_sites(units, lines, site_re) == each
    assert len(units) >= 2


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # the comment above the early exits that let the check through explains it
        (
            "def check(cfg):\n"
            "    if cfg.connector is None:\n"
            "        return\n"
            "\n"
            "    # Pinned registrations go stale when the allocator remaps pages, so the\n"
            "    # connector is refused with expandable segments.\n"
            "    if 'expandable' not in cfg.alloc:\n"
            "        return\n"
            "    if cfg.sleep:\n"
            "        return\n"
            "    raise ValueError('connector is incompatible with expandable segments')\n",
            "Pinned registrations go stale when the allocator remaps pages, so the\n"
            "connector is refused with expandable segments.",
        ),
        # a comment about the exit alone shares too little with the message
        (
            "def check(cfg):\n"
            "    # nothing to check without one\n"
            "    if cfg.connector is None:\n"
            "        return\n"
            "    raise ValueError('connector is incompatible with expandable segments')\n",
            None,
        ),
        # another statement between them: the comment is about that code
        (
            "def check(cfg):\n"
            "    # Pinned connector registrations go stale with expandable segments.\n"
            "    if cfg.connector is None:\n"
            "        return\n"
            "    size = cfg.size\n"
            "    raise ValueError('connector is incompatible with expandable segments')\n",
            None,
        ),
    ],
)
def test_the_comment_above_the_early_exits_before_a_check(source, expected) -> None:
    (site,) = extract(source, "pkg/check.py")
    assert site.comment == expected
