"""A serving project of our own laid out as SGLang (package `sglang`), for judging `kverr check`
on launches it has never been tuned on: a `ServerArgs` dataclass whose `__post_init__` steps
and `check_server_args` validate what such servers validate (parallel sizes against each
other and the model's heads, memory and batch limits, chunked prefill against pages, context
length against the model, quantization against dtype, kernels against the GPU, speculative
decoding and LoRA settings, ports), and warnings where the server changes a value itself.
Written for these tests (no upstream code); the shipped spec profiles/sglang.toml drives it.

Then twelve deployments a user would run (one per model of verify/models.toml) that pass every
check, and held-out mistakes: one base with ONE realistic slip, given as argv or pasted as a
GitHub issue (the command in a fence split with backslashes, then the traceback)."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kverr.verify.yours import Checked, NoFix, YourFix
from test_sources import Git

from kverr.ftypes import Launch

ARGS = "python/sglang/srt/server_args.py"
RELEASE = "v0.9.1"  # the fixture's release tag
PROGRAM = "python -m sglang.launch_server"

SERVER_ARGS = '''\
"""Launch arguments of the server and their validation."""

from __future__ import annotations

import argparse
import dataclasses
import logging
from typing import Dict, Optional

from sglang.srt.configs.model_config import ModelConfig
from sglang.srt.environ import envs
from sglang.srt.utils import (
    get_device_memory_capacity,
    get_device_sm,
    is_flashinfer_available,
    is_port_available,
    is_sm100_supported,
    nullable_str,
)

logger = logging.getLogger(__name__)

ATTENTION_BACKENDS = ["fa3", "flashinfer", "triton", "torch_native", "trtllm_mha", "cutlass_mla"]
BLACKWELL_ONLY = ("trtllm_mha", "cutlass_mla")
QUANTIZATIONS = ["awq", "gptq", "marlin", "fp8", "mxfp4", "w8a8_int8", "bitsandbytes"]
FP16_ONLY_QUANT = ("awq", "gptq", "marlin")
DTYPES = ["auto", "half", "float16", "bfloat16", "float", "float32"]
KV_CACHE_DTYPES = ["auto", "fp8_e4m3", "fp8_e5m2", "bf16"]
SPECULATIVE = ["EAGLE", "EAGLE3", "NGRAM"]
NEEDS_DRAFT_MODEL = ("EAGLE", "EAGLE3")


@dataclasses.dataclass
class ServerArgs:
    model_path: str
    tokenizer_path: Optional[str] = None
    trust_remote_code: bool = False
    served_model_name: Optional[str] = None
    host: str = "127.0.0.1"
    port: int = 30000
    dtype: str = "auto"
    quantization: Optional[str] = None
    kv_cache_dtype: str = "auto"
    context_length: Optional[int] = None
    mem_fraction_static: Optional[float] = None
    max_running_requests: Optional[int] = None
    chunked_prefill_size: Optional[int] = None
    page_size: int = 1
    tp_size: int = 1
    dp_size: int = 1
    pp_size: int = 1
    ep_size: int = 1
    nnodes: int = 1
    node_rank: int = 0
    dist_init_addr: Optional[str] = None
    enable_dp_attention: bool = False
    attention_backend: Optional[str] = None
    speculative_algorithm: Optional[str] = None
    speculative_draft_model_path: Optional[str] = None
    speculative_num_steps: Optional[int] = None
    speculative_eagle_topk: Optional[int] = None
    speculative_num_draft_tokens: Optional[int] = None
    enable_lora: bool = False
    lora_paths: Optional[Dict[str, str]] = None
    max_loras_per_batch: int = 8
    enable_metrics: bool = False

    def __post_init__(self):
        # Each step reads what the steps before it settled.
        self._handle_memory()
        self._handle_attention_backend()
        self._handle_parallelism()
        self._handle_model_shape()
        self._handle_chunked_prefill()
        self._handle_quantization()
        self._handle_speculative_decoding()
        self._handle_lora()
        self._handle_network()

    def _handle_memory(self):
        if self.mem_fraction_static is None:
            self.mem_fraction_static = 0.88 if self.tp_size < 4 else 0.85
        elif not 0.0 < self.mem_fraction_static < 1.0:
            raise ValueError(
                f"--mem-fraction-static is a fraction of GPU memory in (0, 1), "
                f"got {self.mem_fraction_static}."
            )
        if self.max_running_requests is not None and self.max_running_requests < 1:
            raise ValueError(
                f"--max-running-requests must be a positive number, got {self.max_running_requests}."
            )
        if self.chunked_prefill_size is None:
            big_gpu = get_device_memory_capacity() > 60 * 1024
            self.chunked_prefill_size = 8192 if big_gpu else 4096

    def _handle_attention_backend(self):
        if self.attention_backend is None:
            if is_sm100_supported():
                self.attention_backend = "trtllm_mha"
            elif get_device_sm() >= 90:
                self.attention_backend = "fa3"
            else:
                self.attention_backend = "triton"
        if self.attention_backend in BLACKWELL_ONLY and not is_sm100_supported():
            raise ValueError(
                f"The {self.attention_backend} attention backend runs on SM100 (Blackwell) GPUs "
                f"only; this GPU is SM{get_device_sm()}. Use fa3, flashinfer or triton."
            )
        if self.attention_backend == "flashinfer" and not is_flashinfer_available():
            raise ImportError("The flashinfer attention backend needs the flashinfer package.")
        if self.attention_backend == "torch_native" and self.page_size != 1:
            raise ValueError(
                f"The torch_native attention backend supports page_size 1 only, got {self.page_size}."
            )

    def _handle_parallelism(self):
        if self.enable_dp_attention:
            if self.dp_size < 2:
                raise ValueError("--enable-dp-attention needs a --dp-size greater than 1.")
            assert self.tp_size % self.dp_size == 0, (
                f"With DP attention, tp_size ({self.tp_size}) must be a multiple of "
                f"dp_size ({self.dp_size})."
            )
            if self.chunked_prefill_size > 0:
                self.chunked_prefill_size //= self.dp_size
                logger.warning(
                    f"DP attention is on: the chunked prefill size is adjusted to "
                    f"{self.chunked_prefill_size} tokens per data-parallel rank."
                )
        if self.ep_size > 1 and self.tp_size % self.ep_size != 0:
            raise ValueError(
                f"tp_size ({self.tp_size}) must be divisible by ep_size ({self.ep_size})."
            )
        if self.nnodes > 1:
            if self.dist_init_addr is None:
                raise ValueError("A multi-node launch (--nnodes > 1) needs --dist-init-addr HOST:PORT.")
            host, _, port = self.dist_init_addr.rpartition(":")
            if not host or not port.isdigit():
                raise ValueError(
                    f"--dist-init-addr must be HOST:PORT, got {self.dist_init_addr!r}."
                )
        if not 0 <= self.node_rank < self.nnodes:
            raise ValueError(
                f"--node-rank {self.node_rank} is out of range for --nnodes {self.nnodes}."
            )

    def _handle_model_shape(self):
        model_config = ModelConfig.from_server_args(self)
        heads = model_config.num_attention_heads
        if heads % self.tp_size != 0:
            raise ValueError(
                f"The model has {heads} attention heads, which tp_size {self.tp_size} "
                f"does not divide."
            )
        if self.context_length is not None:
            longest = model_config.context_len
            if self.context_length > longest and not envs.SGLANG_ALLOW_LONGER_CONTEXT.get():
                raise ValueError(
                    f"--context-length {self.context_length} is longer than the {longest} "
                    f"tokens the model supports. Lower it, or set "
                    f"SGLANG_ALLOW_LONGER_CONTEXT=1 if its rope scaling allows more."
                )

    def _handle_chunked_prefill(self):
        if self.page_size & (self.page_size - 1) != 0:
            raise ValueError(f"--page-size must be a power of two, got {self.page_size}.")
        if self.chunked_prefill_size > 0:
            if self.chunked_prefill_size % self.page_size != 0:
                raise ValueError(
                    f"chunked_prefill_size ({self.chunked_prefill_size}) must be a multiple "
                    f"of page_size ({self.page_size})."
                )
            if self.context_length is not None and self.chunked_prefill_size > self.context_length:
                self.chunked_prefill_size = self.context_length
                logger.warning(
                    f"The chunked prefill size is reduced to the context length, "
                    f"{self.context_length}."
                )

    def _handle_quantization(self):
        if self.quantization in FP16_ONLY_QUANT and self.dtype in ("bfloat16", "float", "float32"):
            raise ValueError(
                f"{self.quantization} kernels compute in float16; launch with --dtype float16 "
                f"(or auto), not {self.dtype}."
            )
        if self.quantization == "fp8" and self.dtype in ("float", "float32"):
            raise ValueError("fp8 quantization cannot run with --dtype float32.")
        if self.kv_cache_dtype == "fp8_e5m2" and self.attention_backend == "fa3":
            raise ValueError("The fa3 attention backend has no fp8_e5m2 KV cache; use fp8_e4m3.")

    def _handle_speculative_decoding(self):
        if self.speculative_algorithm is None:
            return
        needs_draft = self.speculative_algorithm in NEEDS_DRAFT_MODEL
        if needs_draft and self.speculative_draft_model_path is None:
            raise ValueError(
                f"--speculative-algorithm {self.speculative_algorithm} needs a draft model: "
                f"pass --speculative-draft-model-path."
            )
        if self.speculative_num_steps is None:
            raise ValueError(
                f"--speculative-num-steps is required with --speculative-algorithm "
                f"{self.speculative_algorithm}."
            )
        if self.speculative_eagle_topk == 1:
            wanted = self.speculative_num_steps + 1
            if self.speculative_num_draft_tokens != wanted:
                self.speculative_num_draft_tokens = wanted
                logger.warning(
                    f"With --speculative-eagle-topk 1, speculative_num_draft_tokens is "
                    f"adjusted to {wanted}."
                )
        if self.max_running_requests is None:
            self.max_running_requests = 48
            logger.warning("Speculative decoding: max_running_requests is set to 48.")

    def _handle_lora(self):
        if self.lora_paths and not self.enable_lora:
            self.enable_lora = True
            logger.warning("--lora-paths given without --enable-lora: LoRA is turned on.")
        if not self.enable_lora:
            return
        if not self.lora_paths:
            raise ValueError("--enable-lora needs at least one adapter in --lora-paths NAME=PATH.")
        if self.max_loras_per_batch < 1:
            raise ValueError(
                f"--max-loras-per-batch must be at least 1, got {self.max_loras_per_batch}."
            )

    def _handle_network(self):
        if not 1 <= self.port <= 65535:
            raise ValueError(f"--port {self.port} is not a TCP port (1-65535).")
        if not is_port_available(self.port):
            logger.warning(f"Port {self.port} is busy; the server will fall back to {self.port + 1}.")

    def check_server_args(self):
        gpus = self.tp_size * self.pp_size
        assert gpus % self.nnodes == 0, (
            f"tp_size * pp_size ({gpus}) must be divisible by nnodes ({self.nnodes}) so every "
            f"node runs the same number of GPUs."
        )
        if self.pp_size > 1 and self.chunked_prefill_size <= 0:
            raise ValueError("Pipeline parallelism needs chunked prefill; drop --chunked-prefill-size -1.")

    @staticmethod
    def add_cli_args(parser: argparse.ArgumentParser):
        parser.add_argument("--model-path", "--model", type=str, required=True)
        parser.add_argument("--tokenizer-path", type=str, default=ServerArgs.tokenizer_path)
        parser.add_argument("--trust-remote-code", action="store_true")
        parser.add_argument("--served-model-name", type=str)
        parser.add_argument("--host", type=str, default=ServerArgs.host)
        parser.add_argument("--port", type=int, default=ServerArgs.port)
        parser.add_argument("--dtype", type=str, default=ServerArgs.dtype, choices=DTYPES)
        parser.add_argument("--quantization", type=nullable_str, choices=QUANTIZATIONS)
        parser.add_argument("--kv-cache-dtype", type=str, default="auto", choices=KV_CACHE_DTYPES)
        parser.add_argument("--context-length", type=int)
        parser.add_argument("--mem-fraction-static", type=float)
        parser.add_argument("--max-running-requests", type=int)
        parser.add_argument("--chunked-prefill-size", type=int)
        parser.add_argument("--page-size", type=int, default=ServerArgs.page_size)
        parser.add_argument("--tensor-parallel-size", "--tp-size", type=int, default=1)
        parser.add_argument("--data-parallel-size", "--dp-size", type=int, default=1)
        parser.add_argument("--pipeline-parallel-size", "--pp-size", type=int, default=1)
        parser.add_argument("--expert-parallel-size", "--ep-size", type=int, default=1)
        parser.add_argument("--nnodes", type=int, default=ServerArgs.nnodes)
        parser.add_argument("--node-rank", type=int, default=ServerArgs.node_rank)
        parser.add_argument("--dist-init-addr", type=str)
        parser.add_argument("--enable-dp-attention", action="store_true")
        parser.add_argument("--attention-backend", type=str, choices=ATTENTION_BACKENDS)
        parser.add_argument("--speculative-algorithm", type=str, choices=SPECULATIVE)
        parser.add_argument("--speculative-draft-model-path", type=str)
        parser.add_argument("--speculative-num-steps", type=int)
        parser.add_argument("--speculative-eagle-topk", type=int)
        parser.add_argument("--speculative-num-draft-tokens", type=int)
        parser.add_argument("--enable-lora", action="store_true")
        parser.add_argument("--lora-paths", type=str, nargs="*", action=LoRAPathAction)
        parser.add_argument("--max-loras-per-batch", type=int, default=8)
        parser.add_argument("--enable-metrics", action="store_true")

    @classmethod
    def from_cli_args(cls, args: argparse.Namespace):
        # the parallel sizes are parsed under their long names and kept under short ones
        for kind in ("tensor", "data", "pipeline", "expert"):
            setattr(args, f"{kind[0]}p_size", getattr(args, f"{kind}_parallel_size"))
        return cls(**{field.name: getattr(args, field.name) for field in dataclasses.fields(cls)})


def prepare_server_args(argv):
    parser = argparse.ArgumentParser(description="Launch the server.")
    ServerArgs.add_cli_args(parser)
    parsed = parser.parse_args(argv)
    return ServerArgs.from_cli_args(parsed)


class LoRAPathAction(argparse.Action):
    """Adapters as NAME=PATH words; the name is what a request asks for."""

    def __call__(self, parser, namespace, values, option_string=None):
        adapters = {}
        for word in values:
            name, sep, path = word.partition("=")
            if not sep or not name or not path:
                raise ValueError(f"LoRA adapter {word!r} must be given as NAME=PATH.")
            adapters[name] = path
        setattr(namespace, self.dest, adapters)
'''

ENVIRON = '''\
"""Environment switches, read when a check asks for them."""

import os


class _Flag:
    def __init__(self, default: bool):
        self.default = default
        self.name = ""

    def __set_name__(self, owner, name):
        self.name = name

    def get(self) -> bool:
        raw = os.environ.get(self.name)
        if raw is None:
            return self.default
        return raw.strip().lower() in ("1", "true", "yes", "on")


class _Environment:
    SGLANG_ALLOW_LONGER_CONTEXT = _Flag(False)
    SGLANG_DISABLE_TELEMETRY = _Flag(True)


envs = _Environment()
'''

UTILS = '''\
"""Device probes: what the GPU is and what is installed."""

import socket

import torch


def get_device_sm() -> int:
    major, minor = torch.cuda.get_device_capability()
    return major * 10 + minor


def is_sm100_supported() -> bool:
    return torch.cuda.is_available() and get_device_sm() >= 100


def is_flashinfer_available() -> bool:
    try:
        import flashinfer  # noqa: F401
    except ImportError:
        return False
    return torch.cuda.is_available()


def get_device_memory_capacity() -> int:
    return torch.cuda.get_device_properties(0).total_memory // (1 << 20)


def is_port_available(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("", port))
        except OSError:
            return False
    return True


def nullable_str(value: str):
    return None if value in ("", "None", "none") else value
'''

MODEL_CONFIG = '''\
"""The model's configuration, read from its config.json (loads the checkpoint's metadata)."""

from transformers import AutoConfig


class ModelConfig:
    def __init__(self, model_path: str, context_length=None):
        self.hf_config = AutoConfig.from_pretrained(model_path)
        self.num_attention_heads = self.hf_config.num_attention_heads
        self.context_len = context_length or self.hf_config.max_position_embeddings

    @classmethod
    def from_server_args(cls, server_args):
        return cls(server_args.model_path, server_args.context_length)
'''

LAUNCH_SERVER = """\
import sys

from sglang.srt.server_args import ServerArgs, prepare_server_args

if __name__ == "__main__":
    server_args = prepare_server_args(sys.argv[1:])
"""


def sglang_files() -> dict[str, str]:
    return {
        ARGS: SERVER_ARGS,
        "python/sglang/srt/environ.py": ENVIRON,
        "python/sglang/srt/utils.py": UTILS,
        "python/sglang/srt/configs/model_config.py": MODEL_CONFIG,
        "python/sglang/srt/configs/__init__.py": "",
        "python/sglang/srt/__init__.py": "",
        "python/sglang/launch_server.py": LAUNCH_SERVER,
        "python/sglang/__init__.py": "import torch  # never run by the sandbox\n",
    }


def release_repo(root: Path) -> Path:
    """The project committed into a fresh git repo and tagged as a release."""
    g = Git(root)
    g.commit("the serving project", sglang_files())
    g.tag(RELEASE)
    return g.root


# ---------------------------------------------------------------- deployments

# One per model of verify/models.toml: command lines a user runs, each passing every check.
BASES: dict[str, str] = {
    "llama8b": "--model-path meta-llama/Llama-3.1-8B-Instruct --port 30000"
    " --mem-fraction-static 0.85 --max-running-requests 256",
    "llama70b": "--model-path meta-llama/Llama-3.1-70B-Instruct --tp 8 --context-length 65536"
    " --chunked-prefill-size 4096 --page-size 16 --attention-backend fa3",
    "qwen7b-lora": "--model-path Qwen/Qwen2.5-7B-Instruct --tp 2 --dtype bfloat16 --enable-lora"
    " --lora-paths sql=/adapters/qwen-sql chat=/adapters/qwen-chat --max-loras-per-batch 4",
    "qwen72b-awq": "--model-path Qwen/Qwen2.5-72B-Instruct --tp 4 --quantization awq"
    " --dtype float16 --mem-fraction-static 0.9",
    "qwen3-eagle": "--model-path Qwen/Qwen3-8B --speculative-algorithm EAGLE3"
    " --speculative-draft-model-path Tengyunw/qwen3_8b_eagle3 --speculative-num-steps 3"
    " --speculative-eagle-topk 1 --speculative-num-draft-tokens 4 --mem-fraction-static 0.75",
    "qwen3-moe": "--model-path Qwen/Qwen3-30B-A3B --tp 4 --ep 4 --enable-dp-attention --dp 2",
    "mistral": "--model-path mistralai/Mistral-7B-Instruct-v0.3 --host 0.0.0.0 --port 8000"
    " --served-model-name mistral --context-length 32768 --attention-backend triton",
    "deepseek-v3": "--model-path deepseek-ai/DeepSeek-V3 --tp 16 --nnodes 2 --node-rank 0"
    " --dist-init-addr 10.0.0.1:5000 --trust-remote-code",
    "deepseek-r1": "--model-path deepseek-ai/DeepSeek-R1 --tp 8 --quantization fp8"
    " --kv-cache-dtype fp8_e4m3 --enable-dp-attention --dp 8 --trust-remote-code",
    "gptoss120b": "--model-path openai/gpt-oss-120b --tp 4 --quantization mxfp4"
    " --attention-backend triton --page-size 64",
    "gptoss20b-ngram": "--model-path openai/gpt-oss-20b --speculative-algorithm NGRAM"
    " --speculative-num-steps 4 --max-running-requests 32",
    "qwen-vl": "--model-path Qwen/Qwen2.5-VL-7B-Instruct --tp 2 --pp-size 2"
    " --chunked-prefill-size 8192 --context-length 32768 --enable-metrics",
}


Changes = dict  # option (its first long name) or VARIABLE -> new value; None: dropped


@dataclass(frozen=True)
class Mistake:
    base: str
    set: tuple[tuple[str, str | None], ...] = ()  # (option as typed, value; None: a switch)
    drop: tuple[str, ...] = ()  # options as typed in the base
    says: str = ""  # a piece of the error the release raises
    pasted: bool = False  # given as a GitHub issue rather than as argv
    # What a maintainer would accept as the fix, over the changes a fix makes (not asserted:
    # the code is the judge; this says how often its fix is also the one a person would give)
    good: Callable[[Changes], bool] = lambda c: True

    def words(self) -> list[str]:
        """The base's words with this one slip."""
        words = shlex.split(BASES[self.base])
        out: list[str] = []
        given = dict(self.set)
        i = 0
        while i < len(words):
            n = 1
            while i + n < len(words) and not words[i + n].startswith("--"):
                n += 1  # the option's value(s)
            word = words[i]
            if word in given:
                value = given[word]
                out += [word] if value is None else [word, *value.split()]
            elif word not in self.drop:
                out += words[i : i + n]
            i += n
        for option, value in self.set:
            if option not in words:
                out += [option] if value is None else [option, *value.split()]
        return out

    def command(self) -> str:
        return f"{PROGRAM} {shlex.join(self.words())}"


def _number(value: object) -> float | None:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def one(dest: str, *values: str) -> Callable[[Changes], bool]:
    """Only `dest` changes, to one of `values`."""
    return lambda c: set(c) == {dest} and c[dest] in values


def within(dest: str, low: float, high: float) -> Callable[[Changes], bool]:
    """Only `dest` changes, to a number in [low, high]."""

    def ok(c: Changes) -> bool:
        v = _number(c.get(dest))
        return set(c) == {dest} and v is not None and low <= v <= high

    return ok


def multiple(dest: str, of: int, low: int, high: int) -> Callable[[Changes], bool]:
    """Only `dest` changes, to a multiple of `of` in [low, high]."""

    def ok(c: Changes) -> bool:
        v = _number(c.get(dest))
        return set(c) == {dest} and v is not None and v % of == 0 and low <= v <= high

    return ok


def dropped(dest: str) -> Callable[[Changes], bool]:
    return lambda c: c == {dest: None}


def added(dest: str, like: str = "") -> Callable[[Changes], bool]:
    """`dest` given a value (containing `like`), nothing else changed."""
    return lambda c: set(c) == {dest} and c[dest] is not None and like in str(c[dest])


def either(*tests: Callable[[Changes], bool]) -> Callable[[Changes], bool]:
    return lambda c: any(t(c) for t in tests)


BACKENDS_HERE = either(
    one("--attention-backend", "fa3", "flashinfer", "triton"), dropped("--attention-backend")
)


def _m(base: str, *pairs: str | None, drop=(), says: str, pasted=False, good=None) -> Mistake:
    it = iter(pairs)
    return Mistake(
        base, tuple(zip(it, it, strict=True)), drop, says, pasted, good or (lambda c: True)
    )


MISTAKES: list[Mistake] = [
    _m("llama8b", "--mem-fraction-static", "85", says="is a fraction of GPU memory",
       good=one("--mem-fraction-static", "0.85")),
    _m("llama8b", "--max-running-requests", "0", says="must be a positive number", pasted=True,
       good=dropped("--max-running-requests")),
    _m("llama8b", "--context-length", "262144", says="longer than the 131072 tokens",
       good=either(within("--context-length", 4096, 131072), dropped("--context-length"))),
    _m("llama8b", "--attention-backend", "trtllm_mha", says="runs on SM100", pasted=True,
       good=BACKENDS_HERE),
    _m("llama70b", "--tp", "6", says="64 attention heads, which tp_size 6",
       good=one("--tensor-parallel-size", "4", "8")),
    _m("llama70b", "--page-size", "24", says="must be a power of two", pasted=True,
       good=one("--page-size", "16", "32")),
    _m("llama70b", "--chunked-prefill-size", "5000", says="must be a multiple of page_size",
       good=either(multiple("--chunked-prefill-size", 16, 2048, 16384),
                   dropped("--chunked-prefill-size"))),
    _m("llama70b", "--attention-backend", "torch_native", says="supports page_size 1 only",
       good=either(BACKENDS_HERE, one("--page-size", "1"))),
    _m("qwen7b-lora", "--lora-paths", "/adapters/qwen-sql", says="must be given as NAME=PATH",
       good=added("--lora-paths", "=/adapters/qwen-sql")),
    _m("qwen7b-lora", drop=("--lora-paths",), says="needs at least one adapter", pasted=True,
       good=added("--lora-paths", "=")),
    _m("qwen7b-lora", "--tp", "8", says="28 attention heads, which tp_size 8",
       good=one("--tensor-parallel-size", "2", "4")),
    _m("qwen7b-lora", "--max-loras-per-batch", "0", says="must be at least 1",
       good=either(within("--max-loras-per-batch", 1, 64), dropped("--max-loras-per-batch"))),
    _m("qwen72b-awq", "--dtype", "bfloat16", says="awq kernels compute in float16", pasted=True,
       good=either(one("--dtype", "float16", "half", "auto"), dropped("--dtype"))),
    _m("qwen72b-awq", "--mem-fraction-static", "1.1", says="is a fraction of GPU memory",
       good=within("--mem-fraction-static", 0.8, 0.95)),
    _m("qwen72b-awq", "--tp", "3", says="64 attention heads, which tp_size 3",
       good=one("--tensor-parallel-size", "2", "4")),
    _m("qwen72b-awq", "--port", "70000", says="is not a TCP port",
       good=within("--port", 1024, 65535)),
    _m("qwen3-eagle", drop=("--speculative-draft-model-path",), says="needs a draft model",
       good=added("--speculative-draft-model-path")),
    _m("qwen3-eagle", drop=("--speculative-num-steps",), says="is required", pasted=True,
       good=added("--speculative-num-steps")),
    _m("qwen3-eagle", "--mem-fraction-static", "0", says="is a fraction of GPU memory",
       good=either(within("--mem-fraction-static", 0.5, 0.95), dropped("--mem-fraction-static"))),
    _m("qwen3-eagle", "--attention-backend", "cutlass_mla", says="runs on SM100",
       good=BACKENDS_HERE),
    _m("qwen3-moe", "--dp", "3", says="must be a multiple of dp_size (3)", pasted=True,
       good=one("--data-parallel-size", "2", "4")),
    _m("qwen3-moe", "--ep", "3", says="must be divisible by ep_size (3)",
       good=one("--expert-parallel-size", "2", "4")),
    _m("qwen3-moe", drop=("--dp",), says="needs a --dp-size greater than 1",
       good=either(one("--data-parallel-size", "2", "4"), dropped("--enable-dp-attention"))),
    _m("qwen3-moe", "--ep", "8", says="must be divisible by ep_size (8)", pasted=True,
       good=one("--expert-parallel-size", "2", "4")),
    _m("mistral", "--port", "80800", says="is not a TCP port",
       good=within("--port", 1024, 65535)),
    _m("mistral", "--context-length", "65536", says="longer than the 32768 tokens", pasted=True,
       good=either(within("--context-length", 4096, 32768), dropped("--context-length"))),
    _m("mistral", "--attention-backend", "cutlass_mla", says="runs on SM100",
       good=BACKENDS_HERE),
    _m("mistral", "--tp", "3", says="32 attention heads, which tp_size 3",
       good=either(one("--tensor-parallel-size", "1", "2", "4"), dropped("--tensor-parallel-size"))),
    _m("deepseek-v3", drop=("--dist-init-addr",), says="needs --dist-init-addr", pasted=True,
       good=added("--dist-init-addr", ":")),
    _m("deepseek-v3", "--dist-init-addr", "10.0.0.1", says="must be HOST:PORT",
       good=added("--dist-init-addr", "10.0.0.1:")),
    _m("deepseek-v3", "--node-rank", "2", says="is out of range for --nnodes 2",
       good=one("--node-rank", "0", "1")),
    _m("deepseek-v3", "--tp", "12", says="128 attention heads, which tp_size 12", pasted=True,
       good=one("--tensor-parallel-size", "8", "16")),
    _m("deepseek-r1", "--dp", "3", says="must be a multiple of dp_size (3)",
       good=one("--data-parallel-size", "2", "4", "8")),
    _m("deepseek-r1", "--dtype", "float32", says="cannot run with --dtype float32", pasted=True,
       good=either(one("--dtype", "bfloat16", "float16", "half", "auto"), dropped("--dtype"))),
    _m("deepseek-r1", "--ep", "16", says="must be divisible by ep_size (16)",
       good=either(one("--expert-parallel-size", "2", "4", "8"), dropped("--expert-parallel-size"))),
    _m("deepseek-r1", "--max-running-requests", "-1", says="must be a positive number",
       good=dropped("--max-running-requests")),
    _m("gptoss120b", "--page-size", "48", says="must be a power of two",
       good=one("--page-size", "32", "64")),
    _m("gptoss120b", "--tp", "5", says="64 attention heads, which tp_size 5", pasted=True,
       good=one("--tensor-parallel-size", "4", "8")),
    _m("gptoss120b", "--attention-backend", "trtllm_mha", says="runs on SM100",
       good=BACKENDS_HERE),
    _m("gptoss120b", "--chunked-prefill-size", "1000", says="must be a multiple of page_size",
       good=either(multiple("--chunked-prefill-size", 64, 512, 8192),
                   dropped("--chunked-prefill-size"))),
    _m("gptoss20b-ngram", "--speculative-algorithm", "EAGLE", says="needs a draft model",
       good=either(one("--speculative-algorithm", "NGRAM"), added("--speculative-draft-model-path"))),
    _m("gptoss20b-ngram", drop=("--speculative-num-steps",), says="is required", pasted=True,
       good=added("--speculative-num-steps")),
    _m("gptoss20b-ngram", "--max-running-requests", "0", says="must be a positive number",
       good=dropped("--max-running-requests")),
    _m("qwen-vl", "--chunked-prefill-size", "-1", says="needs chunked prefill", pasted=True,
       good=either(within("--chunked-prefill-size", 1024, 16384),
                   dropped("--chunked-prefill-size"))),
    _m("qwen-vl", "--context-length", "200000", says="longer than the 128000 tokens",
       good=either(within("--context-length", 4096, 128000), dropped("--context-length"))),
    _m("qwen-vl", "--tp", "3", says="28 attention heads, which tp_size 3",
       good=one("--tensor-parallel-size", "2", "4")),
    # the parser's own refusals: a value its choices do not hold
    _m("deepseek-r1", "--kv-cache-dtype", "fp8", says="invalid choice: 'fp8'",
       good=one("--kv-cache-dtype", "fp8_e4m3")),
    _m("gptoss120b", "--quantization", "fp4", says="invalid choice: 'fp4'", pasted=True,
       good=one("--quantization", "mxfp4")),
]  # fmt: skip

TRACEBACK = """\
Traceback (most recent call last):
  File "<frozen runpy>", line 198, in _run_module_as_main
  File "/opt/venv/lib/python3.12/site-packages/sglang/launch_server.py", line 11, in <module>
    server_args = prepare_server_args(sys.argv[1:])
  File "/opt/venv/lib/python3.12/site-packages/sglang/srt/server_args.py", line 412, in prepare_server_args
    return ServerArgs.from_cli_args(parsed)
  File "<string>", line 38, in __init__
  File "/opt/venv/lib/python3.12/site-packages/sglang/srt/server_args.py", line 93, in __post_init__
{error}"""


def issue(mistake: Mistake, *, with_command: bool = True) -> str:
    """A GitHub issue body as users write them: the command in a fence, split with
    backslashes, then the traceback that ends in the error."""
    words = mistake.words()
    lines, i = [], 0
    while i < len(words):  # one option (and its values) per line
        j = i + 1
        while j < len(words) and not words[j].startswith("--"):
            j += 1
        lines.append(shlex.join(words[i:j]))
        i = j
    command = f"{PROGRAM} \\\n  " + " \\\n  ".join(lines)
    error = f"ValueError: {mistake.says} (see above)"
    reproduction = f"```bash\n{command}\n```\n\n" if with_command else ""
    return (
        "### Checklist\n\n- [x] I searched related issues but found no solution.\n\n"
        "### Describe the bug\n\nThe server exits during start-up with the error below.\n\n"
        f"### Reproduction\n\n{reproduction}"
        f"```\n{TRACEBACK.format(error=error)}\n```\n\n"
        "### Environment\n\nPython: 3.12.3\nCUDA available: True\nGPU 0-7: NVIDIA H100 80GB HBM3\n"
    )


def message_only(mistake: Mistake) -> str:
    """The same issue with the reproduction left out: the error alone."""
    return issue(mistake, with_command=False)


# ---------------------------------------------------------------- grading


@dataclass(frozen=True)
class Graded:
    """One held-out launch through `kverr check`, its fix judged again by the release."""

    mistake: Mistake
    error: str  # the first error as the release said it ("" when the launch passed)
    status: str  # the first stop's status: raised, parse-error, passed, ...
    fixed: bool  # the first error got a fix of this launch
    passes: bool  # that fix, run again in a child of its own, passes every check
    keeps: bool  # and keeps every other option, value and variable the user gave
    changed: Changes  # what the fix changes
    maintainer: bool  # what a maintainer would give (Mistake.good)
    why: str = ""  # why there is no fix

    @property
    def reproduced(self) -> bool:
        return self.mistake.says in self.error


def first_name(option: str, options: dict) -> str:
    """The option's first long name: `--tp` and `--tp-size` are `--tensor-parallel-size`."""
    names = options.get(option, {}).get("names", [option])
    return next((n for n in names if n.startswith("--")), option)


def changes(before: Launch, after: Launch, options: dict) -> Changes:
    """option -> new value for each option the fix sets, adds or drops (None), and each
    environment variable it sets; aliases (`--tp`, `--tensor-parallel-size`) are one."""

    def by_dest(launch: Launch) -> dict[str, object]:
        out: dict[str, object] = {}
        for name, value in launch.args:
            out[first_name(name, options)] = " ".join(value) if isinstance(value, tuple) else value
        return out

    a, b = by_dest(before), by_dest(after)
    out: Changes = {d: b.get(d) for d in {*a, *b} if a.get(d, "∅") != b.get(d, "∅")}
    env_a, env_b = dict(before.env), dict(after.env)
    out.update({k: env_b.get(k) for k in {*env_a, *env_b} if env_a.get(k) != env_b.get(k)})
    return out


def grade(mistake: Mistake, checked: Checked, judge: Callable[[Launch], bool], options: dict):
    """`checked` (yours.check of the mistake's launch) graded: its first error, the fix of that
    launch, and `judge`'s own run of the fixed launch."""
    launch = checked.launch
    first = checked.steps[0]
    out = first.ran.outcome
    error = out.message if out.status == "raised" else out.reason
    fix = first.fix
    if not isinstance(fix, YourFix) or checked.final is None:
        why = fix.reason if isinstance(fix, NoFix) else f"the check stopped: {out.status}"
        return Graded(mistake, error, out.status, False, False, False, {}, False, why)
    after = checked.final
    changed = changes(launch, after, options)
    # What the fixes say they change: nothing else of the user's launch may differ.
    said = {first_name(n, options) for s in checked.errors for n in s.fix.changed}
    keeps = set(changed) <= said and after.model == launch.model
    return Graded(
        mistake, error, out.status, True, judge(after), keeps, changed, mistake.good(changed)
    )


def summary(graded: list[Graded]) -> dict[str, float]:
    """The figures the held-out set is judged by."""
    fixes = [g for g in graded if g.fixed]
    good = [g for g in fixes if g.passes and g.keeps]
    return {
        "launches": len(graded),
        "reproduced": sum(g.reproduced for g in graded),
        "fixes": len(fixes),
        "pass_and_keep": len(good) / len(fixes) if fixes else 0.0,
        "mean_changed": sum(len(g.changed) for g in fixes) / len(fixes) if fixes else 0.0,
        "maintainer": sum(g.maintainer for g in fixes) / len(fixes) if fixes else 0.0,
    }
