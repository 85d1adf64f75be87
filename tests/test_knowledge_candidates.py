"""Candidate launches for the fix search (verify/search/candidates.py): table tests over
small server_args-like snippets of our own. Nothing here is verified; verify/ runs them."""

from __future__ import annotations

import pytest
from kverr.extractor import extract_file
from kverr.records import flag_map
from kverr.records.conditions import Atom, atoms_of, flag_attrs, phrase
from kverr.records.knowledge import facts_for
from kverr.records.pattern import pattern_for
from kverr.verify.search import candidates
from kverr.verify.search.changes import breaks

from kverr.ftypes import FixChange, FlagDecl, Launch, SourceFile

HEAD = """
import argparse, dataclasses
@dataclasses.dataclass
class ServerArgs:
    attention_backend: str = None
    kv_cache_dtype: str = "auto"
    tp_size: int = 1
    enable_x: bool = False
    mamba_scheduler_strategy: str = "auto"
    disable_radix_cache: bool = False

    @staticmethod
    def add_cli_args(parser):
        parser.add_argument("--attention-backend", choices=["fa3", "fa4", "triton"])
        parser.add_argument("--kv-cache-dtype", default="auto", choices=["auto", "fp8_e4m3", "bf16"])
        parser.add_argument("--tp-size", type=int, default=1)
        parser.add_argument("--enable-x", action="store_true")
        parser.add_argument("--mamba-scheduler-strategy", default="auto",
                            choices=["auto", "no_buffer", "extra_buffer"])
        parser.add_argument("--disable-radix-cache", action="store_true")

    def check(self):
"""


def facts(body: str, words: str):
    text = HEAD + "\n".join("        " + line for line in body.strip().splitlines()) + "\n"
    fx = extract_file(SourceFile("python/sglang/srt/server_args.py", text, "0" * 40))
    decls = flag_map([fx.flags])
    (site,) = [s for s in fx.sites if words in s.template.display()]
    siblings = [s for s in fx.sites if s.function == site.function]
    return facts_for(site, decls, pattern_for(site.template), siblings), decls


def before_launch(f, decls) -> Launch:
    """The launch under which every fact on the path to the site holds: the flag facts of the
    enclosing and direct guards and of the earlier checks it passed."""
    return candidates.before((*f.passed, *f.context, *f.direct), decls, f.docs)


def test_the_before_makes_every_fact_on_the_path_hold() -> None:
    f, decls = facts(
        """
if self.enable_x and self.tp_size > 2:
    if self.kv_cache_dtype not in ("auto", "bf16"):
        raise ValueError("X with a big tp needs an auto or bf16 kv cache")
""",
        "X with a big tp",
    )
    launch = before_launch(f, decls)
    assert launch.argv() == ["--enable-x", "--tp-size", "3", "--kv-cache-dtype", "fp8_e4m3"]


CHANGES = [
    # the message's own advice: an option and a value it accepts
    ("if self.mamba_scheduler_strategy == 'no_buffer' and self.disable_radix_cache:\n"
     "    raise ValueError('not supported. Please use --mamba-scheduler-strategy extra_buffer')",
     "not supported", ("set", "--mamba-scheduler-strategy", "extra_buffer"), "advice"),
    # values the message lists for the flag the check is about: "(fa3/fa4)"
    ("if self.enable_x and self.attention_backend not in ('fa3', 'fa4'):\n"
     "    raise ValueError('--enable-x currently requires the FA backend (fa3/fa4).')",
     "currently requires", ("set", "--attention-backend", "fa3"), "advice"),
    # "requires --x": add it
    ("if self.enable_x and not self.disable_radix_cache:\n"
     "    raise ValueError('--enable-x requires --disable-radix-cache')",
     "requires --disable", ("set", "--disable-radix-cache", None), "advice"),
    # a membership guard: a value it allows
    ("if self.kv_cache_dtype not in ('auto', 'bf16'):\n    raise ValueError('bad kv cache dtype')",
     "bad kv cache", ("set", "--kv-cache-dtype", "auto"), "allowed"),
]  # fmt: skip


@pytest.mark.parametrize(("body", "words", "edit", "source"), CHANGES, ids=[c[1] for c in CHANGES])
def test_the_first_change_is_the_most_trusted(body, words, edit, source) -> None:
    f, decls = facts(body, words)
    before = before_launch(f, decls)
    found = candidates.changes(f, decls, before)
    assert found, "no candidate"
    assert found[0].edits[0] == edit and found[0].source == source, found[:3]


def test_removing_a_feature_flag_comes_last() -> None:
    f, decls = facts(
        "if self.enable_x and self.kv_cache_dtype == 'fp8_e4m3':\n    raise ValueError('X and fp8 clash')",
        "X and fp8",
    )
    before = before_launch(f, decls)
    found = candidates.changes(f, decls, before)
    sources = [c.source for c in found]
    assert sources[0] != "remove" and "remove" in sources
    assert sources == sorted(sources, key=lambda s: s == "remove")  # removals only at the end
    assert FixChange((("drop", "--enable-x", None),), "remove", "--enable-x off") in found


def test_words_after_a_flag_are_a_value_only_when_the_flag_takes_that_value() -> None:
    decls = {"--ssl-certfile": FlagDecl("--ssl-certfile", "ssl_certfile", type="str")}
    f, _ = facts("if self.enable_x:\n    raise ValueError('x')", "x")
    message_facts = type(f)(
        f.site, "--ssl-keyfile requires --ssl-certfile is set", f.literal, f.readings, decls
    )
    found = candidates.advice(message_facts, decls, Launch())
    assert found == [
        FixChange((("set", "--ssl-certfile", "/path/to/ssl-certfile"),), "advice",
                  "--ssl-keyfile requires --ssl-certfile is set")
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "holds", "arch"),
    [
        ("model_arch in ['DeepseekV3ForCausalLM', 'KimiK25ForConditionalGeneration']", True,
         "DeepseekV3ForCausalLM"),
        ("'Llama4' in model_arch", True, "Llama4ForCausalLM"),
        ("model_arch == 'Gemma4ForConditionalGeneration'", True, "Gemma4ForConditionalGeneration"),
        ("model_arch in ['GptOssForCausalLM']", False, None),
    ],
)  # fmt: skip
def test_a_model_test_picks_an_architecture(text, holds, arch) -> None:
    assert candidates._architecture(text, holds) == arch


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("envs.SGLANG_ENABLE_SPEC_V2.get()", "SGLANG_ENABLE_SPEC_V2"),
        ("get_bool_env_var('SGLANG_CUTLASS_MOE')", "SGLANG_CUTLASS_MOE"),
        ("self.enable_x", None),
    ],
)
def test_environment_variables_read_by_a_check(text, name) -> None:
    assert candidates.env_name(text) == name


def test_setting_an_option_replaces_its_aliases() -> None:
    decls = {
        "--tp-size": FlagDecl("--tp-size", "tp_size"),
        "--tensor-parallel-size": FlagDecl("--tensor-parallel-size", "tp_size"),
    }
    launch = Launch((("--tensor-parallel-size", "4"), ("--enable-x", None)))
    out = candidates.set_option(launch, "--tp-size", "2", decls)
    assert out.argv() == ["--tp-size", "2", "--enable-x"]  # in place, the alias replaced


def test_a_default_that_already_holds_adds_nothing_to_the_before() -> None:
    f, decls = facts(
        """
if self.tp_size == 1 and self.kv_cache_dtype == "auto" and self.enable_x:
    raise ValueError("X on one GPU with the auto kv cache")
""",
        "X on one GPU",
    )
    assert before_launch(f, decls).argv() == ["--enable-x"]
    # ... but an option the launch sets already is set to what the fact wants
    launch = candidates.make_hold(Launch((("--tp-size", "2"),)), f.direct[0], decls)
    assert launch.argv() == ["--tp-size", "1"]


def test_use_instead_moves_the_value_to_the_option_the_message_names() -> None:
    f, decls = facts(
        """
if self.attention_backend == "fa4":
    raise ValueError("FA4 is only for prefill. Please use `--kv-cache-dtype fp8_e4m3` instead.")
""",
        "FA4 is only for prefill",
    )
    before = Launch((("--attention-backend", "fa4"),))
    found = candidates.advice(f, decls, before)
    assert FixChange((("set", "--kv-cache-dtype", "fp8_e4m3"),), "advice", found[0].note) in found
    # no option of the launch holds fp8_e4m3, so nothing moves
    assert not [c for c in found if len(c.edits) == 2]
    before = Launch((("--kv-cache-dtype", "auto"), ("--tp-size", "fp8_e4m3")))
    moved = [c for c in candidates.advice(f, decls, before) if len(c.edits) == 2]
    assert [c.edits for c in moved] == [
        (("drop", "--tp-size", None), ("set", "--kv-cache-dtype", "fp8_e4m3"))
    ]


def test_a_notices_own_choice_made_explicit_is_its_first_fix() -> None:
    text = """
import argparse, dataclasses, logging
logger = logging.getLogger(__name__)
@dataclasses.dataclass
class ServerArgs:
    enable_x: bool = False
    dispatch: str = None

    @staticmethod
    def add_cli_args(parser):
        parser.add_argument("--enable-x", action="store_true")
        parser.add_argument("--dispatch", type=str)

    def check(self):
        if self.enable_x and self.dispatch is None:
            self.dispatch = "static"
            logger.info("X is enabled. The dispatch algorithm is configured.")
"""
    fx = extract_file(SourceFile("python/sglang/srt/server_args.py", text, "0" * 40))
    (site,) = [s for s in fx.sites if s.kind == "log"]
    decls = flag_map([fx.flags])
    f = facts_for(site, decls)
    before = before_launch(f, decls)
    assert before.argv() == ["--enable-x"]
    first = candidates.changes(f, decls, before)[0]
    assert first.edits == (("set", "--dispatch", "static"),) and first.source == "advice"


def test_an_earlier_check_that_allows_leaving_a_feature_out_never_turns_it_on() -> None:
    # `attention_backend in ("fa3", None)` passed: the before leaves the option out, it does
    # not pick fa3 (a feature the error does not need)
    f, decls = facts(
        """
if self.attention_backend not in ("fa3", None):
    raise ValueError("only fa3 or none")
if self.enable_x and self.tp_size > 2:
    raise ValueError("X needs a small tp")
""",
        "X needs a small tp",
    )
    assert before_launch(f, decls).argv() == ["--enable-x", "--tp-size", "3"]


def test_a_bound_is_fixed_by_the_default_before_the_smallest_value_that_passes() -> None:
    f, decls = facts(
        """
if self.tp_size < 1:
    raise ValueError("tp must be positive")
""",
        "tp must be positive",
    )
    before = before_launch(f, decls)
    assert before.argv() == ["--tp-size", "0"]
    (first, *_) = candidates.changes(f, decls, before)
    # back to its default (1) gives nothing up: it is not tried last as a removal
    assert first == FixChange((("drop", "--tp-size", None),), "allowed", first.note)


COMPOUND_BEFORES = [
    # a disjunction that holds: its first side is enough
    ("if self.enable_x or self.tp_size > 2:\n    raise ValueError('either one')",
     "either one", ["--enable-x"]),
    # a chained range that fails: the upper bound crossed
    ("if not 1 <= self.tp_size <= 4:\n    raise ValueError('a tp out of range')",
     "out of range", ["--tp-size", "5"]),
    # a conjunction that fails: its first side failing
    ("if not (self.enable_x and self.tp_size > 2):\n    raise ValueError('both needed')",
     "both needed", []),  # leaving --enable-x out already makes it fail
    # a value compared after case folding: the choice the option declares (as a launch writes it)
    ("if isinstance(self.attention_backend, str) and self.attention_backend.upper() == 'FA4':\n"
     "    raise ValueError('FA4 was removed')",
     "was removed", ["--attention-backend", "fa4"]),
]  # fmt: skip


@pytest.mark.parametrize("body,words,argv", COMPOUND_BEFORES)
def test_a_compound_condition_holds_through_one_of_its_parts(body, words, argv) -> None:
    f, decls = facts(body, words)
    assert before_launch(f, decls).argv() == argv


def test_a_json_field_whose_every_declared_value_is_banned_gets_a_typo() -> None:
    # The parser does not check a JSON option's fields against their declared values, so a
    # value outside them reaches the check; a field left None may reach it as it is.
    decls = {
        "--x-config.fmt": FlagDecl("--x-config.fmt", "x_config.fmt", default="'a'",
                                   choices=("a", "b")),
        "--x-config.mode": FlagDecl("--x-config.mode", "x_config.mode", default="None",
                                    choices=("a", "b")),
    }  # fmt: skip
    fmt = Atom("--x-config.fmt", "not in", ("a", "b"))
    mode = Atom("--x-config.mode", "not in", ("a", "b"))
    assert candidates.make_hold(Launch(), fmt, decls).argv() == ["--x-config.fmt", "other"]
    assert candidates.make_hold(Launch(), mode, decls).argv() == []


BREAKS = [
    # (edits, broken): the record needs nnodes > 1 and the ray backend
    ((("set", "--nnodes", "1"),), True),
    ((("set", "--nnodes", "4"),), False),
    ((("set", "--tp-size", "2"),), False),
    ((("set", "--backend", "mp"),), True),
    ((("drop", "--nnodes", None),), False),  # dropping is undoing: changes.undoes says so
]


@pytest.mark.parametrize("edits,broken", BREAKS)
def test_a_change_that_turns_the_records_own_fact_false_breaks_it(edits, broken) -> None:
    own = (Atom("--nnodes", ">", 1), Atom("--backend", "==", "ray"))
    assert breaks(FixChange(edits, "allowed"), own) is broken


@pytest.mark.parametrize(
    ("test", "words", "fix"),
    [
        ("os.path.isfile(self.key)", "--key does not name an existing file",
         (("set", "--key", "key"), ("file", "key", None))),
        ("Path(self.key).is_file()", "--key does not name an existing file",
         (("set", "--key", "key"), ("file", "key", None))),
        ("Path(self.key).exists()", "--key does not name an existing path",
         (("set", "--key", "key"), ("file", "key", None))),
        # a path to write to: its directory must exist, the file need not
        ("Path(self.key).parent.is_dir()", "--key is not a path in an existing directory",
         (("set", "--key", "./key"),)),
        ("os.path.isdir(os.path.dirname(self.key))",
         "--key is not a path in an existing directory", (("set", "--key", "./key"),)),
    ],
)  # fmt: skip
def test_a_path_a_flag_names_is_probed_and_given_one_that_exists(test, words, fix) -> None:
    (atom,) = atoms_of(f"not {test}", True, flag_attrs(("--key",)))
    assert (atom.topic, phrase(atom)) == ("file", words)
    (change,) = candidates._holding_expr(atom.negated())
    assert change.edits == fix


def test_one_item_of_a_flags_list_reads_as_any_item_not_the_list() -> None:
    # `for op in self.custom_ops: if op[0] not in "+-" and op not in ("all", "none")`
    attrs = flag_attrs(("--ops",), {"op": "--ops"}, None, {"op"})
    (first,) = atoms_of("op[0] not in ('+', '-')", True, attrs)
    (whole,) = atoms_of("op not in ('all', 'none')", True, attrs)
    assert phrase(first) == "`--ops[i][0] not in ('+', '-')` is true"
    assert phrase(whole) == "`--ops[i] not in ('all', 'none')` is true"
    # no fact about the list itself: nothing sets --ops to "all" for it
    assert (first.flag, whole.flag, whole.flags) == (None, None, ("--ops",))


def test_a_test_of_one_item_is_met_by_a_list_holding_such_an_item() -> None:
    # `for x in self.endpoints: if x <= 0: raise`: the check wants an item <= 0, its fix one > 0
    attrs = flag_attrs(("--endpoints",), {"x": "--endpoints"}, None, {"x"})
    (fires,) = atoms_of("x <= 0", True, attrs)
    assert candidates._item_fact(fires) == Atom("--endpoints", "<=", 0)
    assert candidates._item_fact(fires.negated()) == Atom("--endpoints", ">", 0)
    decls = {"--endpoints": FlagDecl("--endpoints", "endpoints", type="int", nargs="+")}
    made = candidates._holding(fires, decls, Launch())
    assert made and all(c.edits[0][:2] == ("set", "--endpoints") for c in made)
    assert candidates._holding(fires.negated(), decls, Launch())[0].edits == (
        ("set", "--endpoints", "1"),
    )
