"""Fixes (records/knowledge/fixes.py): solutions, exampleFix."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from test_records_knowledge import PROBES, _by_message, _fix_lines, _records, _run_check


def test_a_required_value_flag_gets_a_value_in_the_fix():
    src = """
class ServerArgs:
    backup_target: str = None

    def f(self):
        if self.enable_offload and not self.backup_target:
            raise ValueError("--enable-offload requires --backup-target.")


def add_cli_args(parser):
    parser.add_argument("--backup-target", type=str, choices=["host", "disk"])
    parser.add_argument("--enable-offload", action="store_true")
"""
    (rec,) = _records(src)
    assert _fix_lines(rec["exampleFix"]) == (
        "--enable-offload",
        "--enable-offload --backup-target=host",
    )


def test_a_missing_file_fix_points_at_an_existing_file(tmp_path):
    rec = _by_message(_records(PROBES), "Key file not found")
    before, after = _fix_lines(rec["exampleFix"])
    assert (before, after) == ("--key-file=/no/such/file", "--key-file=/path/to/existing/file")
    code = rec["validationCode"]
    assert code.startswith("import os\n")
    key = tmp_path / "key.pem"
    key.write_text("k", encoding="utf-8")
    assert _run_check(code, argparse.Namespace(key_file=str(tmp_path / "missing.pem")))
    assert not _run_check(code, argparse.Namespace(key_file=str(key)))
    assert not _run_check(code, argparse.Namespace(key_file=None))


WORDS = Path(__file__).resolve().parent / "golden" / "records" / "words.py"


@pytest.mark.parametrize(
    ("message", "fix"),
    [
        ("tiled prefill kernel", "Needs an SM100 (Blackwell) GPU"),
        ("fastlib mamba module", "Install fastlib"),
    ],
)
def test_a_probe_says_what_the_launch_needs(message, fix):
    rec = _by_message(_records(WORDS.read_text(encoding="utf-8")), message)
    assert fix in rec["solutions"]


def test_a_working_package_is_never_to_be_uninstalled():
    src = """
class ServerArgs:
    def f(self):
        if self.kernel == "fastlib":
            if is_fastlib_available():
                try:
                    import fastlib.mamba
                except ImportError:
                    raise ValueError("fastlib mamba module not available, please check fastlib installation.")
        if envs.SGLANG_STAGING.get() and self.transfer != "mooncake":
            raise ValueError("SGLANG_STAGING requires --transfer mooncake.")
"""
    recs = _records(src)
    for rec in recs:
        assert not any("not installed" in s for s in rec["solutions"]), rec["solutions"]
    assert "Unset SGLANG_STAGING" in _by_message(recs, "SGLANG_STAGING")["solutions"]


def test_a_condition_the_default_meets_adds_no_flag():
    recs = _records(WORDS.read_text(encoding="utf-8"))
    labels = _by_message(recs, "Please set --labels-header")
    assert _fix_lines(labels["exampleFix"]) == (
        "--labels-header='' --allowed-labels=ALLOWED_LABELS",
        "--allowed-labels=ALLOWED_LABELS",
    )
    assert _fix_lines(_by_message(recs, "priority scheduling")["exampleFix"]) == (
        "--enable-priority --schedule=random",
        "--enable-priority --schedule=fifo",
    )


def test_a_default_of_none_is_no_promise():
    """`quantization=None` means "not given": the code may pick one before the check, so a
    `not in` fact on it is spelled out rather than left to the default."""
    src = """
class ServerArgs:
    quantization: str = None

    def f(self):
        if self.quantization not in ("fp8", "mxfp8"):
            raise ValueError("cutlass MoE is only supported with fp8/mxfp8 quantization")

def add_cli_args(parser):
    parser.add_argument("--quantization", type=str, choices=["awq", "fp8", "mxfp8"])
"""
    (rec,) = _records(src)
    assert _fix_lines(rec["exampleFix"]) == ("--quantization=awq", "--quantization=fp8")


def test_a_notice_says_what_the_code_chose_and_how_to_choose_it_yourself():
    recs = _records(WORDS.read_text(encoding="utf-8"))
    reset = _by_message(recs, "Max requests is reset to 48")
    assert reset["meaning"] == {
        "what": "--speculative-mode: speculative decoding.",
        "instead": "SGLang sets --max-requests to 48 for this launch.",
    }
    assert reset["solutions"] == [
        "Override this by explicitly setting --max-requests",
        "Pass --max-requests yourself to choose its value (SGLang uses 48 otherwise)",
    ]
    # the launch keeps speculative decoding; choosing the value silences the notice
    assert _fix_lines(reset["exampleFix"]) == (
        "--speculative-mode=draft",
        "--speculative-mode=draft --max-requests=48",
    )
    off = _by_message(recs, "Cache logging is disabled")
    assert off["meaning"]["instead"] == "SGLang turns --enable-cache-log off for this launch."
    assert _fix_lines(off["exampleFix"]) == (
        "--enable-cache-log --speculative-mode=draft",
        "--speculative-mode=draft",
    )


def test_no_notice_is_fixed_by_giving_up_a_feature(seed_module):
    from test_records_knowledge import _all_fixture_records

    for rec in _all_fixture_records(seed_module):
        if (
            rec["severity"] not in ("warning", "info")
            or rec["backgroundTag"] == "deprecated-option"
        ):
            continue
        for s in rec["solutions"]:
            assert not s.startswith(("Remove ", "Use a ", "Leave --")), (rec["errorMessage"], s)
            assert "value other than" not in s, (rec["errorMessage"], s)


def test_a_notice_never_gives_a_switch_a_value():
    """The code turned a switch off: `--enable-overlap=False` is no command line (argparse
    refuses a value for a store_true flag), so the fix says it in words only."""
    src = """
import logging

logger = logging.getLogger(__name__)


class ServerArgs:
    enable_overlap: bool = None
    backend: str = "mp"

    def f(self):
        if self.enable_overlap is None:
            if self.backend != "mp":
                logger.warning("Overlap scheduling will be disabled for this backend.")
                self.enable_overlap = False


def add_cli_args(parser):
    parser.add_argument("--enable-overlap", action="store_true", default=None)
    parser.add_argument("--backend", type=str, default="mp", choices=["mp", "ray"])
"""
    rec = _by_message(_records(src), "Overlap scheduling will be disabled")
    assert "=False" not in rec["exampleFix"] and "=False" not in " ".join(rec["solutions"])


def test_what_it_means_is_about_the_option_the_message_names():
    """An error that names an option is about it, not about the switch its guard reads; a
    dest that is a plain word in the message ("kernel") names nothing."""
    src = """
class ServerArgs:
    enable_lora: bool = False
    lora_paths: list = None
    kernel: str = None

    def f(self):
        if self.enable_lora:
            if not isinstance(self.lora_paths, list):
                raise ValueError(f"Invalid type for --lora-paths: {type(self.lora_paths)}.")
            if self.kernel == "tiled":
                raise ValueError("LoRA adapters cannot run on the tiled kernel yet.")

def add_cli_args(parser):
    parser.add_argument("--enable-lora", action="store_true", help="Enable LoRA adapters.")
    parser.add_argument("--lora-paths", nargs="*", help="The LoRA adapters to load.")
    parser.add_argument("--kernel", type=str, help="The attention kernels.")
"""
    recs = _records(src)
    # a combination is about both features: the flag named first, then the guard's switch
    assert _by_message(recs, "Invalid type")["meaning"]["what"] == (
        "--lora-paths: the LoRA adapters to load. --enable-lora: enable LoRA adapters."
    )
    # (a message that names no flag: the guard's switch is the subject, said once)
    assert _by_message(recs, "tiled kernel")["meaning"]["what"] == (
        "--enable-lora: enable LoRA adapters."
    )


def test_an_option_the_code_overwrites_before_the_check_is_not_what_it_is_about():
    src = """
class ServerArgs:
    algorithm: str = None
    eagle_topk: int = 1
    breadth: int = 1
    page_size: int = 1

    def f(self):
        if self.algorithm == "NGRAM":
            self.eagle_topk = self.breadth
            if self.eagle_topk > 1 and self.page_size > 1:
                raise ValueError("eagle_topk > 1 with page_size > 1 is unstable.")

def add_cli_args(parser):
    parser.add_argument("--algorithm", type=str, help="The speculative algorithm.")
    parser.add_argument("--eagle-topk", type=int, default=1, help="Draft tokens per step.")
    parser.add_argument("--breadth", type=int, default=1, help="The n-gram search breadth.")
    parser.add_argument("--page-size", type=int, default=1, help="Tokens per page.")
"""
    (rec,) = _records(src)
    assert "--breadth > 1" in rec["triggerScenarios"]
    # the message names eagle_topk, but the launch's --eagle-topk never reaches the check
    assert rec["meaning"]["what"] == "--breadth: the n-gram search breadth."
    assert rec["flags"] == ["--algorithm", "--breadth", "--page-size"]


KEPT_WHEN_THE_LAUNCH_DECIDES = [
    # a guard read the option first: a launch that sets it never reaches the check
    (
        """
class ServerArgs:
    backend: str = None
    ep_size: int = 1

    def f(self):
        if self.backend is None:
            self.backend = "deepep"
            if self.ep_size == 1:
                raise ValueError("The deepep backend needs --ep-size > 1.")

def add_cli_args(parser):
    parser.add_argument("--backend", type=str, help="The all-to-all backend.")
    parser.add_argument("--ep-size", type=int, default=1, help="Expert parallel ranks.")
""",
        ["--backend", "--ep-size"],
    ),
    # a local kept the launch's value before the option was emptied
    (
        """
class ServerArgs:
    paths: list = None

    def f(self):
        if isinstance(self.paths, list):
            paths = self.paths
            self.paths = []
            for p in paths:
                if not isinstance(p, str):
                    raise ValueError(f"Invalid item in --paths: {p}.")

def add_cli_args(parser):
    parser.add_argument("--paths", nargs="*", help="Paths to load.")
""",
        ["--paths"],
    ),
]


@pytest.mark.parametrize(("src", "flags"), KEPT_WHEN_THE_LAUNCH_DECIDES)
def test_an_option_overwritten_where_the_launch_still_decides_is_kept(src, flags):
    (rec,) = [r for r in _records(src) if r["kind"] == "raise"]
    assert rec["flags"] == flags


def test_the_else_of_a_chain_over_one_option_is_every_other_value():
    src = """
class ServerArgs:
    log_level: int = 0

    def f(self):
        if self.log_level == 0:
            width = 80
        elif self.log_level == 1:
            width = 120
        else:
            raise ValueError(f"Invalid --log-level: {self.log_level}")

def add_cli_args(parser):
    parser.add_argument("--log-level", type=int, default=0, help="How much to log.")
"""
    (rec,) = _records(src)
    assert rec["triggerScenarios"] == "Launching with --log-level not 0 or 1."
    assert rec["solutions"] == ["Set --log-level to one of 0, 1"]


def test_a_help_that_gives_only_type_and_default_describes_nothing():
    src = """
class ServerArgs:
    enable_sparse: bool = False
    page_size: int = 1

    def f(self):
        if self.enable_sparse and self.page_size != 64:
            raise ValueError("--enable-sparse needs --page-size 64.")

def add_cli_args(parser):
    parser.add_argument("--enable-sparse", action="store_true", help="Flag; default: disabled.")
    parser.add_argument("--page-size", type=int, default=1, help="The number of tokens in a page.")
"""
    (rec,) = _records(src)
    assert rec["meaning"]["what"] == "--page-size: the number of tokens in a page."


def test_each_item_of_a_numbered_list_of_solutions_is_one_solution():
    src = """
class ServerArgs:
    pool_fraction: float = 0.8
    max_graph_batch: int = 64

    def f(self):
        if self.pool_fraction > 0.9:
            raise RuntimeError(
                "Graph capture failed.\\n"
                "Possible solutions:\\n"
                "1. set --pool-fraction to a smaller value\\n"
                "2. set --max-graph-batch to a smaller value (e.g., 16)\\n"
            )


def add_cli_args(parser):
    parser.add_argument("--pool-fraction", type=float)
    parser.add_argument("--max-graph-batch", type=int)
"""
    (rec,) = _records(src)
    said = [s for s in rec["solutions"] if "smaller value" in s]
    assert said == [
        "Set --pool-fraction to a smaller value",
        "Set --max-graph-batch to a smaller value (e.g., 16)",
    ]


REQUEST_AND_PROMISE = """
class Engine:
    def generate(self, prompt, rank=None):
        if self.server_args.enable_dp_attention:
            if rank is not None and rank < 0:
                raise ValueError("rank must be non-negative")
        return self.run(prompt, rank)


class ServerArgs:
    def check(self):
        assert self.pooling is not None, "Should be resolved by the model config"

    def validate_pages(self):
        if self.page_size is None:
            raise RuntimeError("validate_pages called before page_size was set")
"""


def test_a_request_check_is_not_fixed_by_giving_up_the_launch_feature():
    recs = _records(REQUEST_AND_PROMISE, "python/sglang/srt/entrypoints/engine.py")
    rec = _by_message(recs, "rank must be non-negative")
    assert rec["triggerScenarios"].startswith("Serving a request after launching with")
    assert not any("--enable-dp-attention" in s for s in rec["solutions"])
    assert rec["exampleFix"] == ""


@pytest.mark.parametrize(
    "words",
    [
        "Should be resolved",
        # the order of the code's own calls: the engine sets the value before this runs
        "called before page_size was set",
    ],
)
def test_a_check_the_code_promises_never_to_reach_gets_no_launch_advice(words):
    rec = _by_message(_records(REQUEST_AND_PROMISE), words)
    assert rec["backgroundTag"] == "internal-invariant"
    assert (rec["triggerScenarios"], rec["exampleFix"], rec["preventionTips"]) == ("", "", [])
    assert rec["solutions"] == [
        "Report it to the SGLang project with the full launch command: the message says the code"
        " settles this before the check, so no launch option is known to cause it"
    ]


HANDLED = """
import logging

logger = logging.getLogger(__name__)


class ServerArgs:
    def check(self):
        if self.enable_dp_attention:
            try:
                wait_port_available(self.port)
            except ValueError:
                logger.exception("Port is already in use. Please use a different --port.")
                raise


def add_cli_args(parser):
    parser.add_argument("--enable-dp-attention", action="store_true")
    parser.add_argument("--port", type=int, default=30000)
"""


def test_a_failure_an_except_clause_catches_is_not_fixed_by_giving_up_the_launch_feature():
    rec = _by_message(_records(HANDLED), "Port is already in use")
    assert rec["triggerScenarios"] == (
        "Launching with --enable-dp-attention: the code in its try block raises ValueError."
    )
    # the message's own advice stays; the launch's way there is no fix, nor a tip
    assert rec["solutions"] == ["Use a different --port"]
    assert (rec["exampleFix"], rec["preventionTips"], rec["commonSituations"]) == ("", [], "")


NOTICES = """
import logging

logger = logging.getLogger(__name__)


class ServerArgs:
    def _handle_notices(self):
        free = probe_free_memory()
        if self.tp_size > 1 and free < total_memory() * 0.9:
            if not envs.APP_STRICT_BALANCE.get():
                logger.warning("Free memory differs between the devices, free=" + str(free))
        if self.enable_pool:
            logger.warning("Pooling is on. Some devices may be held by other programs.")
        if self.enable_symm and not envs.APP_PREALLOC_SIZE.is_set():
            logger.warning("Symmetric buffers take their default size")
        if self.enable_fusion and not is_hip():
            logger.warning("Fusion is left off on this platform")
        if self.enable_mux and torch_release() >= (2, 7):
            logger.warning("Multiplexing is slow on this torch. Please manually install torch 2.6.")


def add_cli_args(parser):
    parser.add_argument("--tp-size", type=int, default=1)
    parser.add_argument("--enable-pool", action="store_true")
    parser.add_argument("--enable-symm", action="store_true")
    parser.add_argument("--enable-fusion", action="store_true")
    parser.add_argument("--enable-mux", action="store_true")
"""


@pytest.mark.parametrize(
    ("message", "solutions"),
    [
        # free memory against a share of it: the machine's state, not the launch, decides
        ("Free memory differs", []),
        # the message's own guess at the cause is something to look at
        ("Pooling is on", []),
        # a variable's state is a clause, never "launches with APP_X is not set"
        (
            "Symmetric buffers",
            [
                "Nothing to change: SGLang reports this for launches with --enable-symm, "
                "when APP_PREALLOC_SIZE is not set, and goes on"
            ],
        ),
        # the platform before the options, never "with --x and not on ROCm"
        (
            "Fusion is left off",
            [
                "Nothing to change: SGLang reports this for launches not on ROCm with "
                "--enable-fusion and goes on"
            ],
        ),  # fmt: skip
        # an adverb after "please" is still the message's advice
        ("Multiplexing is slow", ["Manually install torch 2.6"]),
    ],
)
def test_a_notice_that_points_outside_the_launch_is_not_nothing_to_change(message, solutions):
    rec = _by_message(_records(NOTICES), message)
    assert rec["solutions"] == solutions


BACKENDS = """
class ModelRunner:
    def _backend_from_str(self, backend_str):
        if backend_str == "classic":
            return Classic()
        elif self.server_args.attention_backend == "wave":
            return Wave()
        elif backend_str == "fa3":
            assert probe_sm() == 9, "FA3 needs SM90. Please use `--attention-backend classic`."
        elif backend_str in ("fa4", "wave"):
            assert probe_sm() == 10, "FA4 needs SM100."
        if self.server_args.attention_backend != "wave" and self.server_args.page_size > 1:
            raise ValueError("Paged attention needs --page-size 1 here")


def add_cli_args(parser):
    parser.add_argument("--attention-backend", choices=["classic", "wave", "fa3", "fa4"])
    parser.add_argument("--page-size", type=int, default=1)
"""


@pytest.mark.parametrize(
    ("message", "shipped"),
    [
        # `backend_str == "fa3"` on the path: a line giving the option another value misses it
        ("FA3 needs SM90", False),
        ("FA4 needs SM100", False),
        # no code condition names a value of the option: the line reaches the check
        ("Paged attention needs", True),
    ],
)
def test_an_example_whose_before_line_misses_the_check_is_not_shipped(message, shipped):
    rec = _by_message(_records(BACKENDS, path="python/sglang/srt/model_runner.py"), message)
    assert bool(rec["exampleFix"]) is shipped
