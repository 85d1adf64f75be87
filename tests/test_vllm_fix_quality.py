"""vLLM records that no verifier runs (the vllm profile has no [verify] table) show only fixes a
user can run as written, and conditions that name only the flags their guard reads.

The fixture is ours, written in vLLM's shape (an EngineArgs dataclass, config objects built
from its fields); no upstream code.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
from kverr.records.knowledge.facts import invented

from kverr import pipeline
from kverr.profile import load_profile

ENGINE = """\
import argparse
import logging
from dataclasses import dataclass

from vllm.config.profiler import TraceMode
from vllm.engine.arg_utils_kwargs import get_kwargs

logger = logging.getLogger(__name__)


@dataclass
class EngineArgs:
    model: str = "facebook/opt-125m"
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    stream_interval: int = 1
    scheduling_policy: str = "fcfs"
    speculative_config: dict | None = None
    kv_sharing_fast_prefill: bool = False
    kv_cache_dtype: str = "auto"
    enable_lora: bool = False
    max_loras: int = 1
    max_lora_rank: int = 16
    lora_dtype: str = "auto"
    quantization: str | None = None
    profiler_config: dict | None = None

    @staticmethod
    def add_cli_args(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
        kwargs = get_kwargs(EngineArgs)
        for name in (
            "model", "max_num_seqs", "max_num_batched_tokens", "stream_interval",
            "scheduling_policy", "speculative_config", "kv_sharing_fast_prefill",
            "kv_cache_dtype", "enable_lora", "max_loras", "max_lora_rank", "lora_dtype",
            "quantization", "profiler_config",
        ):
            parser.add_argument("--" + name.replace("_", "-"), **kwargs[name])
        return parser

    def create_engine_config(self):
        if self.kv_sharing_fast_prefill and self.speculative_config is not None:
            raise ValueError("Fast prefill for KV sharing cannot be used with speculation.")
        if self.kv_cache_dtype == "fp8" and self.enable_lora:
            raise ValueError("An fp8 KV cache cannot be combined with LoRA.")
        lora_config = (
            LoRAConfig(
                max_loras=self.max_loras,
                max_lora_rank=self.max_lora_rank,
                lora_dtype=self.lora_dtype,
            )
            if self.enable_lora
            else None
        )
        scheduler_config = SchedulerConfig(
            max_num_seqs=self.max_num_seqs,
            max_num_batched_tokens=self.max_num_batched_tokens,
            stream_interval=self.stream_interval,
            policy=self.scheduling_policy,
        )
        if (
            lora_config is not None
            and scheduler_config.max_num_batched_tokens < scheduler_config.max_num_seqs
        ):
            raise ValueError("LoRA needs a token budget of at least one token per sequence.")
        model_config = ModelConfig(self.model, self.kv_cache_dtype, self.max_loras)
        if model_config.get_sliding_window() is not None and self.enable_lora:
            raise ValueError("LoRA cannot run with a sliding window.")
        quant = pick_quantization(method=self.quantization, rank=self.max_lora_rank)
        if quant is not None:
            raise ValueError("The picked quantization cannot serve LoRA adapters.")
        profiler_config = self.profiler_config
        if self.max_num_seqs == 1 and profiler_config.trace_mode != TraceMode.NONE:
            logger.warning("Tracing one sequence at a time is turned off.")
            profiler_config.trace_mode = TraceMode.NONE
"""

PROFILER = '''\
from dataclasses import dataclass
from enum import Enum
from typing import Literal


class TraceMode(Enum):
    NONE = "none"
    FULL = "full"


@dataclass
class ProfilerConfig:
    profiler: Literal["torch", "cuda"] | None = None
    """Which profiler to run."""
    torch_profiler_dir: str = ""
    """Directory to write torch profiler traces to."""
    trace_mode: TraceMode = TraceMode.FULL
    """How much of each step to trace."""

    def __post_init__(self):
        if self.profiler == "torch" and not self.torch_profiler_dir:
            raise ValueError("torch_profiler_dir must be set when profiler is 'torch'.")
'''


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("vllm-fix-quality")
    path = root / "vllm" / "engine" / "arg_utils.py"
    path.parent.mkdir(parents=True)
    path.write_text(ENGINE, encoding="utf-8")
    (root / "vllm" / "config").mkdir()
    (root / "vllm" / "config" / "profiler.py").write_text(PROFILER, encoding="utf-8")
    return root


def _build(tree: Path, out: Path, profile) -> dict[str, dict]:
    res = pipeline.build(pipeline.BuildSpec(out=out, source=tree, profile=profile))
    recs = [json.loads(line)["record"] for line in (res.out / "records.jsonl").open()]
    return {r["errorMessage"]: r for r in recs}


@pytest.fixture(scope="module")
def records(tree: Path, tmp_path_factory) -> dict[str, dict]:
    # The project as one no verifier runs (vLLM's own profile carries a [verify] table now):
    # its unverified fixes are what a user reads as they are, so none may hold a made-up value.
    unverified = dataclasses.replace(load_profile("vllm"), verify=None)
    return _build(tree, tmp_path_factory.mktemp("out"), unverified)


@pytest.mark.parametrize(
    "arg, made_up",
    [
        ("--speculative-config=SPECULATIVE_CONFIG", True),
        ("--kv-transfer-config.kv_role=KV_ROLE", True),
        ("--kv-transfer-config.kv_role=kv_producer", False),
        ("--quantization=fp8", False),
        ("--enable-lora", False),  # a switch has no value to make up
        ("--seed NOT_A_INT", False),  # argparse's own wrong value, quoted back by the error
        ("--kv-role=KV_ROLE_X", False),  # a value of its own, not the metavar
    ],
)
def test_invented_values_are_the_metavar(arg: str, made_up: bool) -> None:
    assert invented(arg) is made_up


@pytest.mark.parametrize(
    "profile, verifiable",
    [
        (load_profile("sglang"), True),  # each carries its own [verify] tables
        (load_profile("vllm"), True),
        (dataclasses.replace(load_profile("vllm"), verify=None), False),
    ],
)
def test_which_profiles_have_a_verify_spec(profile, verifiable: bool) -> None:
    assert profile.verifiable() is verifiable


# message -> the exampleFix shown ("" when only words are known)
FIXES = {
    # `speculative_config is not None` can only be written with a made-up JSON value
    "Fast prefill for KV sharing cannot be used with speculation.": "",
    "An fp8 KV cache cannot be combined with LoRA.": (
        "# before\nvllm serve MODEL --kv-cache-dtype=fp8 --enable-lora\n"
        "# after\nvllm serve MODEL --kv-cache-dtype=fp8"
    ),
    # a config option's path field is named by the field, not by the whole option
    "torch_profiler_dir must be set when profiler is 'torch'.": (
        "# before\nvllm serve MODEL --profiler-config.profiler=torch\n"
        "# after\nvllm serve MODEL --profiler-config.profiler=torch"
        " --profiler-config.torch_profiler_dir=/path/to/torch_profiler_dir/"
    ),
}


@pytest.mark.parametrize("message", sorted(FIXES))
def test_unverified_fixes_are_runnable_as_written(records: dict, message: str) -> None:
    assert records[message]["exampleFix"] == FIXES[message]


def test_no_unverified_fix_carries_a_metavar(records: dict) -> None:
    fixes = "\n".join(r["exampleFix"] for r in records.values())
    assert not re.search(r"--[\w.-]+=[A-Z][A-Z0-9_]+\b", fixes.replace("=MODEL", ""))


def test_a_verifiable_profile_keeps_its_commands(tree: Path, tmp_path: Path) -> None:
    """With a verify spec the verify step replaces or drops a fix: the unverified build keeps
    the command it always showed (SGLang's records do not move)."""
    spec = dataclasses.replace(load_profile("vllm"), verify="{}")
    rec = _build(tree, tmp_path, spec)[
        "Fast prefill for KV sharing cannot be used with speculation."
    ]
    assert "--speculative-config=SPECULATIVE_CONFIG" in rec["exampleFix"]


LORA = "LoRA needs a token budget of at least one token per sequence."


def test_a_built_config_stands_for_the_arguments_read(records: dict) -> None:
    """`scheduler_config.max_num_batched_tokens` is the argument it was built with, and
    `lora_config is not None` is whether it was built (`if self.enable_lora`): the words name
    those flags, not every argument of the two constructor calls."""
    rec = records[LORA]
    text = " ".join([rec["triggerScenarios"], *rec["solutions"], rec["commonSituations"]])
    named = set(re.findall(r"--[a-z][\w-]*", text))
    assert named == {"--enable-lora", "--max-num-batched-tokens", "--max-num-seqs"}
    assert "LoRAConfig(" not in text and "SchedulerConfig(" not in text
    assert "Remove --enable-lora" in rec["solutions"]
    # found under the flags the check reads, not under every argument of the two configs
    assert sorted(rec["flags"]) == ["--enable-lora", "--max-num-batched-tokens", "--max-num-seqs"]


def test_a_function_result_is_not_read_as_a_built_config(records: dict) -> None:
    """`pick_quantization(...)` may return None: `quant is not None` stays a condition."""
    rec = records["The picked quantization cannot serve LoRA adapters."]
    assert "pick_quantization(" in rec["triggerScenarios"]


def test_a_config_built_from_positional_arguments_keeps_its_name(records: dict) -> None:
    """`model_config.get_sliding_window()` reads none of the arguments by name: the words say
    `model_config`, not the call with --model, --kv-cache-dtype and --max-loras in it; what
    it derives may depend on any of them, so the record is still found under each."""
    rec = records["LoRA cannot run with a sliding window."]
    assert "`model_config.get_sliding_window()` is set" in rec["triggerScenarios"]
    words = " ".join([rec["triggerScenarios"], *rec["solutions"]])
    assert "ModelConfig(" not in words and set(re.findall(r"--[a-z][\w-]*", words)) == {
        "--enable-lora"
    }
    assert sorted(rec["flags"]) == ["--enable-lora", "--kv-cache-dtype", "--max-loras", "--model"]


def test_a_one_value_wrapper_reads_as_what_it_wraps(tmp_path: Path) -> None:
    """`Path(self.x)` is no config built from many values: the words read what the call
    tests of the path the option names."""
    src = tmp_path / "vllm" / "engine" / "arg_utils.py"
    src.parent.mkdir(parents=True)
    src.write_text(
        ENGINE.replace(
            "        quant = pick_quantization(",
            "        scale = Path(self.lora_dtype)\n"
            "        if not scale.is_file():\n"
            '            raise ValueError("The scale file is missing.")\n'
            "        quant = pick_quantization(",
        ),
        encoding="utf-8",
    )
    rec = _build(tmp_path, tmp_path / "out", "vllm")["The scale file is missing."]
    assert "--lora-dtype does not name an existing file" in rec["triggerScenarios"]


def test_a_notice_says_what_the_code_set_through_a_config_it_holds(records) -> None:
    # `profiler_config.trace_mode = TraceMode.NONE`, on a local holding the JSON option's
    # config: that option's field, set to the member a launch writes
    rec = records["Tracing one sequence at a time is turned off."]
    assert rec["meaning"]["instead"] == (
        "vLLM sets --profiler-config.trace_mode to NONE for this launch."
    )
