"""The launch path (a profile's `launch_path`): modules a launch runs through after its
arguments parse. Only their checks that name a flag, an args field or a project variable, or
whose guard reads one, become records (`scope: "launch-path"`), and a fix a message asks for
is computed from the values it printed. The modules below are our own, laid out as SGLang's.
"""

from __future__ import annotations

import dataclasses
import hashlib

import pytest
from kverr.extractor import extract_files
from kverr.records import build_records

from kverr.advice import advise
from kverr.ftypes import Revision, SourceFile
from kverr.profile import load_profile

SA = "python/sglang/srt/server_args.py"
RUNNER = "python/sglang/srt/model_executor/model_runner.py"
ELSEWHERE = "python/sglang/srt/layers/sampler_helpers.py"

SERVER_ARGS = """\
from dataclasses import dataclass


@dataclass
class ServerArgs:
    mem_fraction_static: float = 0.88
    enable_sparse_heads: bool = False
    max_total_tokens: int = None
    kernel: str = None
    decode_kernel: str = None
"""

RUNNER_TEXT = """\
import logging
import os

logger = logging.getLogger(__name__)


class Runner:
    def size_pool(self, budget_tokens):
        if budget_tokens <= 0:
            raise RuntimeError(
                "Pool too small. Raise --mem-fraction-static. Now: "
                f"mem_fraction_static={self.server_args.mem_fraction_static}"
            )

    def load(self, heads):
        if self.server_args.enable_sparse_heads:
            if heads % 8 != 0:
                raise ValueError(f"sparse heads need a multiple of 8 heads, got {heads}")
            logger.info("Sparse heads ready.")
        assert heads > 0, "head count must be positive"
        if heads > 4096:  # the flag in words: max_total_tokens
            raise ValueError(f"Max total tokens cannot hold {heads} heads")
        if os.environ.get("SGLANG_PIN_POOL") and heads > 64:
            raise RuntimeError("SGLANG_PIN_POOL cannot pin more than 64 heads")
        logger.warning("Kernel tile %d is slow on this GPU", heads)

    def pick_kernels(self):
        self.decode_kernel_name = self.server_args.decode_kernel or self.server_args.kernel
        self.prefill_kernel_name = self.server_args.kernel
        if self.decode_kernel_name != self.prefill_kernel_name:
            raise ValueError("Two kernels need --kernel and --decode-kernel alike")
        if self.unknown_name:
            raise ValueError("Unknown --kernel")
"""


def _src(path: str, text: str) -> SourceFile:
    data = text.encode()
    return SourceFile(path, text, hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest())


@pytest.fixture(scope="module")
def profile():
    return load_profile("sglang")


def _sites(profile, path: str):
    fxs = extract_files([_src(SA, SERVER_ARGS), _src(path, RUNNER_TEXT)], rules=profile.extract)
    return fxs, [s for fx in fxs if fx.source.path == path for s in fx.sites]


def test_only_launch_argument_checks_are_kept_on_the_launch_path(profile):
    _, sites = _sites(profile, RUNNER)
    kept = {(s.template.display().split(".")[0][:30], s.flags) for s in sites}
    assert kept == {
        ("Pool too small", ("--mem-fraction-static",)),
        ("sparse heads need a multiple o", ("--enable-sparse-heads",)),  # its guard reads one
        ("SGLANG_PIN_POOL cannot pin mor", ()),  # names the project's variable
        ("Max total tokens cannot hold {", ("--max-total-tokens",)),  # names one in words
        # what the runner kept of the launch under names of its own, set before the test
        ("Two kernels need --kernel and ", ("--decode-kernel", "--kernel")),
        ("Unknown --kernel", ("--kernel",)),  # (a name nothing set: the message's flag)
    }


def test_elsewhere_every_site_stays(profile):
    _, sites = _sites(profile, ELSEWHERE)
    assert len(sites) == 9  # the INFO line, the plain assert and the kernel warning too


def test_records_say_launch_path_and_why_no_run_confirms_them(profile):
    fxs, _ = _sites(profile, RUNNER)
    rev = Revision(repo="sgl-project/sglang", sha="c" * 40, date="2026-01-01T00:00:00Z")
    recs = [r for r in build_records(fxs, rev, profile=profile) if r["filePath"] == RUNNER]
    assert len(recs) == 6 and all(r["scope"] == "launch-path" for r in recs)
    assert all("after start-up" in r["verification"]["reason"] for r in recs)
    pool = next(r for r in recs if r["errorMessage"].startswith("Pool too small"))
    values = {pool["placeholders"][0]: "0.8"}
    assert advise(pool, values) == [
        "Raise --mem-fraction-static from 0.8 to 0.85 (this check runs after start-up: kverr"
        " cannot confirm it before a launch)."
    ]


def test_file_set_records_have_no_scope(profile):
    fxs, _ = _sites(profile, RUNNER)
    rev = Revision(repo="sgl-project/sglang", sha="c" * 40, date="2026-01-01T00:00:00Z")
    assert all(
        "scope" not in r for r in build_records(fxs, rev, profile=profile) if r["filePath"] == SA
    )


KV_MESSAGE = (
    "Too little KV cache for the max seq len ({max_model_len}); the estimated maximum model "
    "length is {estimated_max_len}. Try increasing `gpu_memory_utilization` or decreasing "
    "`max_model_len`."
)

# (case, record fields, values the message printed, advice)
ADVICE = [
    ("a count down to the limit the message printed",
     {"errorMessage": KV_MESSAGE, "flags": ["--gpu-memory-utilization", "--max-model-len"]},
     {"max_model_len": "32768", "estimated_max_len": "15120"},
     ["Lower --max-model-len from 32768 to 15120."]),
    ("a fraction up one step, capped",
     {"errorMessage": "Not enough memory; increase --gpu-memory-utilization (now {util}).",
      "flags": ["--gpu-memory-utilization"]},
     {"self.gpu_memory_utilization": "0.93", "util": "0.93"},
     ["Raise --gpu-memory-utilization from 0.93 to 0.95."]),
    ("no value printed for the option: nothing to compute",
     {"errorMessage": KV_MESSAGE, "flags": ["--max-model-len"]}, {"estimated_max_len": "15120"}, []),
    ("the direction after the option, the value from the pasted command",
     {"errorMessage": "Capture failed: {e}\nPossible solutions:\n1. set --graph-bs to a smaller value",
      "flags": ["--graph-bs"]},
     {"e": "out of memory"}, ["Lower --graph-bs from 256 to 128."]),
    ("no direction in the message",
     {"errorMessage": "max_model_len is {max_model_len}", "flags": ["--max-model-len"]},
     {"max_model_len": "4096"}, []),
]  # fmt: skip


@pytest.mark.parametrize("case", [c[0] for c in ADVICE])
def test_advice_from_the_direction_a_message_gives(case):
    _, record, values, expected = next(c for c in ADVICE if c[0] == case)
    assert (
        advise(record, values, text="serve --graph-bs 256\nCapture failed: out of memory")
        == expected
    )


SERVING_TEXT = """\
class Serving:
    def check_length(self, token_num, max_tokens):
        if token_num + max_tokens > self.max_model_len:
            raise ValueError(
                f"The model holds {self.max_model_len} tokens, you asked for "
                f"{token_num + max_tokens}."
            )
        if token_num > self.max_batch_len:
            raise ValueError(f"{token_num} tokens are over the batch limit.")
"""


def test_an_attribute_the_profile_names_a_copy_of_a_flag_reads_that_flag():
    """`launch_copies`: objects on the launch path keep the model length as their own
    `self.max_model_len`; any other attribute of theirs is no flag."""
    rules = dataclasses.replace(
        load_profile("sglang").extract,
        launch_copies=("max_model_len",),
        launch_path=(RUNNER,),
    )
    args = "class ServerArgs:\n    max_model_len: int = None\n    max_batch_len: int = None\n"
    fxs = extract_files([_src(SA, args), _src(RUNNER, SERVING_TEXT)], rules=rules)
    sites = [s for fx in fxs if fx.source.path == RUNNER for s in fx.sites]
    assert [(s.template.display()[:14], s.flags) for s in sites] == [
        ("The model hold", ("--max-model-len",))
    ]


def test_a_check_each_request_runs_says_so():
    """The profile's `request_checks`: a served request's check is no launch's."""
    profile = dataclasses.replace(
        load_profile("sglang"), request_checks=((RUNNER, ("check_length",)),)
    )
    rules = dataclasses.replace(
        profile.extract, launch_copies=("max_model_len",), launch_path=(RUNNER,)
    )
    profile = dataclasses.replace(profile, extract=rules)
    args = "class ServerArgs:\n    max_model_len: int = None\n"
    fxs = extract_files([_src(SA, args), _src(RUNNER, SERVING_TEXT)], rules=rules)
    rev = Revision(repo="sgl-project/sglang", sha="c" * 40, date="2026-01-01T00:00:00Z")
    (rec,) = [r for r in build_records(fxs, rev, profile=profile) if r["filePath"] == RUNNER]
    assert rec["triggerScenarios"] == (
        "Serving a request when `token_num + max_tokens > --max-model-len` is true."
    )
