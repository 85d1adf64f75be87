"""What the fix search may offer for a notice (verify/search/notice.py): a table of changes to a
before line, each either a choice made explicit, a correction, or the feature given up."""

from __future__ import annotations

import pytest
from kverr.extractor import extract_file
from kverr.records import flag_map
from kverr.records.knowledge import facts_for
from kverr.verify.search import notice
from kverr.verify.search.changes import _moves, rank

from kverr.ftypes import FixChange, Launch, SourceFile

TEXT = """
import argparse, dataclasses, logging
logger = logging.getLogger(__name__)
@dataclasses.dataclass
class ServerArgs:
    attention_backend: str = None
    pp_size: int = 1
    page_size: int = 1
    ib_device: str = None
    disable_cuda_graph: bool = False
    disable_graph_capture: bool = False
    seed_ip: str = None

    @staticmethod
    def add_cli_args(parser):
        parser.add_argument("--attention-backend", choices=["flex", "triton", "fa3"])
        parser.add_argument("--pp-size", type=int, default=1)
        parser.add_argument("--page-size", type=int, default=1)
        parser.add_argument("--ib-device", type=str)
        parser.add_argument("--disable-cuda-graph", action="store_true")
        parser.add_argument("--disable-graph-capture", action="store_true")
        parser.add_argument("--seed-ip", type=str)

    def check(self):
        if self.attention_backend == "flex" or self.pp_size > 1 or self.page_size != 64:
            logger.warning("Cuda graph is disabled for this launch")
            self.disable_cuda_graph = True
"""

FLEX = (("--attention-backend", "flex"), ("--pp-size", "2"), ("--page-size", "3"),
        ("--ib-device", "mlx5_0,mlx5_0"))  # fmt: skip

CASES = [
    # edits, source, gives up
    ((("set", "--attention-backend", "triton"),), "allowed", True),  # another choice
    ((("set", "--attention-backend", "triton"),), "advice", False),  # ... the message says so
    ((("drop", "--pp-size", None),), "allowed", True),
    ((("set", "--pp-size", "1"),), "solve", True),  # back to the default
    ((("set", "--pp-size", "0"),), "solve", True),  # a size down to none
    ((("set", "--page-size", "64"),), "solve", False),  # a correction
    ((("set", "--ib-device", "mlx5_0"),), "solve", False),  # a correction
    ((("set", "--disable-cuda-graph", None),), "allowed", False),  # what the code does anyway
    ((("set", "--disable-graph-capture", None),), "allowed", True),  # a feature switched off
    ((("set", "--seed-ip", "192.168.0.2"),), "solve", False),  # completes the launch
]


@pytest.fixture(scope="module")
def site_facts():
    fx = extract_file(SourceFile("python/sglang/srt/server_args.py", TEXT, "0" * 40))
    (site,) = [s for s in fx.sites if s.kind == "log"]
    decls = flag_map([fx.flags])
    return facts_for(site, decls), decls


@pytest.mark.parametrize(("edits", "source", "want"), CASES)
def test_gives_up(site_facts, edits, source, want) -> None:
    f, decls = site_facts
    assert notice.gives_up(FixChange(edits, source), f, Launch(FLEX), decls) is want


def test_changes_that_keep_the_users_options_come_first() -> None:
    before = Launch((("--load-format", "remote"),))
    back = FixChange((("set", "--load-format", "auto"),), "advice")
    complete = FixChange((("set", "--seed-ip", "192.168.0.2"), ("set", "--seed-port", "30000")),
                         "solve")  # fmt: skip
    assert notice.ordered([back, complete], before) == [complete, back]


def test_a_value_moved_to_the_option_the_message_names_gives_nothing_up() -> None:
    before = Launch((("--attention-backend", "fa4"),))
    moved = FixChange((("drop", "--attention-backend", None),
                       ("set", "--prefill-attention-backend", "fa4")), "advice")  # fmt: skip
    other = FixChange((("set", "--attention-backend", "triton"),), "allowed")
    assert _moves(moved, before) and not _moves(other, before)
    assert rank([other, moved], before) == [moved, other]


def test_a_list_options_words_read_as_a_command_line_has_them() -> None:
    from kverr.verify.search.changes import describe
    from kverr.verify.verdict import solution_text

    change = FixChange((("set", "--buckets", ("custom", "1")), ("drop", "--x", None)), "solve")
    assert solution_text(change) == "Launch with --buckets custom 1, without --x"
    assert describe(change) == "--buckets custom 1 and removing --x"


def test_a_real_value_ranks_before_the_options_name_in_capitals() -> None:
    before = Launch((("--labels-header", ""),))
    metavar = FixChange((("set", "--labels-header", "LABELS_HEADER"),), "solve")
    real = FixChange((("set", "--labels-header", "x-labels"),), "solve")
    assert rank([metavar, real], before) == [real, metavar]


def test_words_the_source_spells_keep_the_messages_order_printed_values_are_sorted() -> None:
    from kverr.verify.search.told import quoted_words

    pattern = r"supports only: 'fp8', 'awq' or 'int4', got (?P<v0>.{1,64})"
    assert quoted_words("supports only: 'fp8', 'awq' or 'int4', got 'x'", pattern) == [
        "fp8", "awq", "int4", "x"
    ]  # fmt: skip
    pattern = r"Invalid modality '(?P<v0>.{1,64})'\. Allowed: (?P<v1>.{1,256})"
    message = "Invalid modality 'x'. Allowed: ['video', 'image', 'audio']"
    assert quoted_words(message, pattern) == ["audio", "image", "video", "x"]


@pytest.mark.parametrize(
    ("message", "args", "offered"),
    [
        # the value printed back as a word, then the list the message calls valid
        ("Invalid compilation mode: other. Valid modes are: NONE, COMPILE",
         (("--cc.mode", "other"),), ["NONE", "COMPILE"]),
        ("Unknown backend x; supported backends: [flash, triton]",
         (("--backend", "x"),), ["flash", "triton"]),
        # a value the message lists as valid is not the refused one
        ("Valid modes are: NONE, COMPILE", (("--cc.mode", "NONE"),), []),
        # the launch's value is not in the message: nothing to replace
        ("Valid modes are: NONE, COMPILE", (("--cc.mode", "other"),), []),
        # no list after the words
        ("Invalid mode: other. Valid modes are documented.", (("--cc.mode", "other"),), []),
    ],
)  # fmt: skip
def test_the_values_a_message_lists_as_valid_replace_the_refused_one(
    message: str, args: tuple, offered: list[str]
) -> None:
    from kverr.verify.search.told import told_listed

    found = told_listed(message, Launch(args))
    assert [c.edits[0][2] for c in found] == offered
    assert all(c.edits[0][1] == args[0][0] for c in found)


@pytest.mark.parametrize(
    ("ok", "solutions", "tips"),
    [
        # NEXTN is rewritten into EAGLE: only NGRAM passes in the refused value's place
        (("NGRAM",), ["Set --algo to NGRAM", "Launch with --steps 1"],
         ["Set --algo to NGRAM when --topk > 1"]),
        (("NGRAM", "MEDUSA"), ["Set --algo to NGRAM or MEDUSA", "Launch with --steps 1"],
         ["Set --algo to NGRAM or MEDUSA when --topk > 1"]),
        # none passes: the words that offered them go
        ((), ["Launch with --steps 1"], []),
    ],
)  # fmt: skip
def test_the_choices_that_passed_replace_a_value_other_than_the_refused_ones(
    ok: tuple, solutions: list, tips: list
) -> None:
    from kverr.verify.verdict import Verdict

    record = {
        "severity": "error",
        "solutions": [
            "Set --algo to a value other than EAGLE (declared choices: EAGLE, NEXTN, NGRAM)",
            "Launch with --steps 1",
        ],
        "preventionTips": ["Keep --algo other than EAGLE when --topk > 1"],
    }
    out = Verdict("unverified", "x", choices=(("--algo", ok),)).apply(record)
    assert out["solutions"] == solutions and out["preventionTips"] == tips


def test_words_to_leave_an_option_out_that_a_run_refuted_go() -> None:
    from kverr.verify.verdict import Verdict

    record = {
        "severity": "error",
        "solutions": [
            "Leave --backend unset",
            "Remove --fast when using --backend=x",
            "Remove --fast-path",  # another option that starts the same
            "Set --backend=y",
        ],
    }
    refuted = ("Leave --backend unset", "Remove --fast")
    out = Verdict("verified", refuted=refuted).apply(record)
    assert out["solutions"] == ["Remove --fast-path", "Set --backend=y"]


def test_a_reason_quotes_a_run_without_the_address_it_printed() -> None:
    from kverr.verify.harness import Outcome
    from kverr.verify.verdict import what_happened

    said = "argument --x: Value X cannot be converted to <function loads at 0x7f6efa6be8e0>."
    out = Outcome("parse-error", reason=said)
    assert what_happened(out) == (
        "was rejected by the argument parser (argument --x: Value X cannot be converted to"
        " <function loads>.)"
    )


def test_the_option_whose_value_the_check_printed_is_the_one_changed() -> None:
    # "Invalid backend for piecewise compilation: other": another backend, not another mode
    before = Launch((("--mode", "VLLM_COMPILE"), ("--backend", "other")))
    mode = FixChange((("set", "--mode", "0"),), "solve")
    backend = FixChange((("set", "--backend", "eager"),), "solve")
    message = "Invalid backend for piecewise compilation: other"
    assert rank([mode, backend], before, message) == [backend, mode]
    # a value too short to tell ("1" is in many a message) blames no option
    before = Launch((("--mode", "1"), ("--backend", "x")))
    assert rank([mode, backend], before, "tp_size=1 is too small: x") == [mode, backend]
