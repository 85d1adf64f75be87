"""A small serving project of our own laid out like vLLM, for the verify tests: package `vllm`,
`vllm/engine/arg_utils.py` with an EngineArgs dataclass whose parser is a
FlexibleArgumentParser of its own (underscores, `--x-config.key=v`), and `vllm/config/*.py`
with pydantic-dataclass configs whose __post_init__, validators and verify methods raise.
Written for these tests (no upstream code); the shipped vLLM spec (profiles/vllm.toml) and
its cuda-sm90 platform and dense model profiles drive it, committed into a real git repo."""

from __future__ import annotations

from pathlib import Path

from test_sources import Git

ARGS = "vllm/engine/arg_utils.py"
MODEL = "vllm/config/model.py"
PARALLEL = "vllm/config/parallel.py"
CACHE = "vllm/config/cache.py"
VLLM = "vllm/config/vllm.py"

FILES: dict[str, str] = {}

FILES["vllm/__init__.py"] = '"""The serving project of the verify tests."""\n'

FILES["vllm/envs.py"] = """\
import os

_READERS = {
    "VLLM_ALLOW_LONG_MAX_MODEL_LEN": lambda: os.environ.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "0")
    in ("1", "true"),
    "VLLM_PINNED_POOL": lambda: os.environ.get("VLLM_PINNED_POOL", "0") == "1",
    "VLLM_DP_SIZE": lambda: int(os.environ.get("VLLM_DP_SIZE", "1")),
}


def __getattr__(name):
    if name in _READERS:
        return _READERS[name]()
    raise AttributeError(name)
"""

FILES["vllm/utils/__init__.py"] = ""

# `vllm serve`'s entry point: a revision that has it launches with `vllm serve` (the profile's
# [launch] since_files)
FILES["vllm/entrypoints/__init__.py"] = ""
FILES["vllm/entrypoints/cli/__init__.py"] = ""
FILES["vllm/entrypoints/cli/main.py"] = "def main():\n    return 0\n"

FILES["vllm/utils/argparse_utils.py"] = '''\
import argparse
import json

import yaml  # only for config files, which these tests never pass


class FlexibleArgumentParser(argparse.ArgumentParser):
    """Takes --a_b as --a-b, and --x-config.a.b=v as --x-config '{"a": {"b": v}}'."""

    def parse_args(self, args=None, namespace=None):
        out, nested = [], {}
        words = list(args or [])
        i = 0
        while i < len(words):
            word = words[i]
            if word.startswith("--"):
                key, eq, value = word.partition("=")
                key = key.replace("_", "-") if "." not in key else key
                if "." in key:
                    if not eq:
                        i += 1
                        value = words[i]
                    option, *path = key.split(".")
                    try:
                        parsed = json.loads(value)
                    except ValueError:
                        parsed = value
                    inner = nested.setdefault(option, {})
                    for part in path[:-1]:
                        inner = inner.setdefault(part, {})
                    inner[path[-1]] = parsed
                    i += 1
                    continue
                word = key + eq + value
            out.append(word)
            i += 1
        for option, fields in nested.items():
            out += [option, json.dumps(fields)]
        return super().parse_args(out, namespace)
'''

FILES["vllm/platforms/__init__.py"] = """\
import torch


def _resolve():
    if torch.cuda.is_available():
        from vllm.platforms.cuda import CudaPlatform
        return CudaPlatform()
    raise RuntimeError("no platform")


def __getattr__(name):
    if name == "current_platform":
        return _resolve()
    raise AttributeError("this module defines current_platform only")
"""

FILES["vllm/transformers_utils/__init__.py"] = ""

FILES["vllm/transformers_utils/config.py"] = """\
import torch
from transformers import AutoConfig


def get_config(model, trust_remote_code=False):
    return AutoConfig.from_pretrained(model, trust_remote_code=trust_remote_code)
"""

FILES["vllm/config/__init__.py"] = """\
from vllm.config.cache import CacheConfig
from vllm.config.compilation import CompilationConfig
from vllm.config.model import ModelConfig
from vllm.config.observability import ObservabilityConfig
from vllm.config.parallel import ParallelConfig
from vllm.config.profiler import ProfilerConfig
from vllm.config.scheduler import SchedulerConfig
from vllm.config.speculative import SpeculativeConfig
from vllm.config.vllm import VllmConfig
"""

# A JSON option the parser keeps as a plain mapping: the engine builds its class only when the
# launch gives the option, so its checks run only then.
FILES["vllm/config/observability.py"] = """\
from pydantic import model_validator

from vllm.config.utils import config


@config
class ObservabilityConfig:
    otlp_traces_endpoint: str | None = None
    collect_model_traces: bool = False

    @model_validator(mode="after")
    def _check_endpoint(self):
        if self.otlp_traces_endpoint is None:
            raise ValueError("An observability config needs otlp_traces_endpoint.")
        return self
"""

FILES["vllm/config/utils.py"] = """\
from pydantic import ConfigDict
from pydantic.dataclasses import dataclass


def config(cls):
    return dataclass(cls, config=ConfigDict(extra="forbid", arbitrary_types_allowed=True))
"""

FILES[CACHE] = """\
import torch
from pydantic import field_validator

from vllm import envs
from vllm.config.utils import config


@config
class CacheConfig:
    gpu_memory_utilization: float = 0.9
    cache_dtype: str | torch.dtype = "auto"

    @property
    def uses_pinned_pool(self) -> bool:
        # a switch of the environment, read where the property is
        return envs.VLLM_PINNED_POOL

    @field_validator("gpu_memory_utilization")
    @classmethod
    def _check_utilization(cls, value: float) -> float:
        if not 0 < value <= 1:
            raise ValueError(
                f"gpu_memory_utilization must be in (0, 1], got {value}"
            )
        return value
"""

FILES[PARALLEL] = """\
from pydantic import field_validator

from vllm import envs
from vllm.config.utils import config
from vllm.platforms import current_platform


@config
class ParallelConfig:
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    data_parallel_size: int = 1
    numa_bind_nodes: list[int] | None = None
    cpu_affinity: str | None = None
    cpu_mask: str | None = None
    enable_eplb: bool = False
    eplb_step: int = 1

    @field_validator("numa_bind_nodes")
    @classmethod
    def _check_nodes(cls, value: list[int] | None) -> list[int] | None:
        if value is not None and any(node < 0 for node in value):
            raise ValueError("numa_bind_nodes must contain non-negative integers.")
        return value

    @property
    def world_size_across_dp(self) -> int:
        # every GPU of the deployment, data parallel replicas included
        return self.world_size * self.data_parallel_size

    def __post_init__(self):
        self.world_size = self.tensor_parallel_size * self.pipeline_parallel_size
        if self.cpu_affinity and current_platform.numa_topology():  # no probe answers it
            raise ValueError("cpu_affinity needs a NUMA topology the platform reports.")
        if self.cpu_mask:  # a TypeError of the stand-in, raised by no check
            self.cpu_mask = round(current_platform.numa_distance())
        if self.world_size > current_platform.device_count():
            raise ValueError(
                f"World size ({self.world_size}) is larger than the number of GPUs"
                f" ({current_platform.device_count()}) in this node."
            )
        if self.enable_eplb:
            # the fix of the first needs what the second asks for
            if self.pipeline_parallel_size > 1:
                raise ValueError("EPLB does not run with pipeline parallelism.")
            if self.tensor_parallel_size * self.data_parallel_size <= 1:
                raise ValueError("EPLB balances experts over more than one GPU.")
            if 64 % self.eplb_step:
                raise ValueError(f"eplb_step must divide the window of 64, got {self.eplb_step}.")
            if self.eplb_step > 32 and self.data_parallel_size < 4:
                raise ValueError("A long EPLB step needs four data parallel ranks.")
        if self.data_parallel_size > 1:
            self.data_parallel_rank = 0
        else:
            # the offline (SPMD) case takes its size from the environment
            self.data_parallel_size = envs.VLLM_DP_SIZE
            if self.data_parallel_size > 1 and self.pipeline_parallel_size == 1:
                raise ValueError("Offline data parallel mode needs pipeline parallelism here.")
"""

FILES[MODEL] = """\
from vllm import envs
from vllm.config.utils import config
from vllm.transformers_utils.config import get_config


@config
class ModelConfig:
    model: str = "org/model"
    max_model_len: int | None = None
    mm_tensor_ipc: str = "direct_rpc"
    quantization: str | None = None

    def __post_init__(self):
        self.hf_config = get_config(self.model)
        derived = self.hf_config.max_position_embeddings
        if self.max_model_len is None:
            self.max_model_len = derived
        elif self.max_model_len > derived:
            if not envs.VLLM_ALLOW_LONG_MAX_MODEL_LEN:
                raise ValueError(
                    f"User-specified max_model_len ({self.max_model_len}) is greater than"
                    f" the derived max_model_len ({derived}). To allow it anyway, set"
                    " VLLM_ALLOW_LONG_MAX_MODEL_LEN=1."
                )
        # a quantized checkpoint says its method in its config
        quant_cfg = getattr(self.hf_config, "quantization_config", None)
        if quant_cfg is not None:
            if self.quantization is None:
                self.quantization = quant_cfg["quant_method"]
            elif self.quantization != quant_cfg["quant_method"]:
                raise ValueError(
                    f"The checkpoint is quantized with {quant_cfg['quant_method']},"
                    f" not {self.quantization}."
                )

    def verify_with_parallel_config(self, parallel_config) -> None:
        heads = self.hf_config.num_attention_heads
        if heads % parallel_config.tensor_parallel_size != 0:
            raise ValueError(
                f"Total number of attention heads ({heads}) must be divisible by tensor"
                f" parallel size ({parallel_config.tensor_parallel_size})."
            )
        if self.mm_tensor_ipc == "torch_shm" and parallel_config.world_size_across_dp > 1:
            raise ValueError("mm_tensor_ipc='torch_shm' is not supported on more than one GPU.")
        if parallel_config.pipeline_parallel_size > 1 and self.hf_config.model_type == "bert":
            raise ValueError("Pipeline parallelism is not supported for encoder-only models.")
"""

# A draft model's config, built over transformers' PretrainedConfig (stubbed in the sandbox),
# and a method that only tests a field (`use_eagle()`), which another config's check calls.
FILES["vllm/config/speculative.py"] = """\
from pydantic import model_validator
from transformers import PretrainedConfig

from vllm.config.utils import config


class DraftConfig(PretrainedConfig):
    def __init__(self, method=None, **kwargs):
        self.method = method
        super().__init__(**kwargs)


@config
class SpeculativeConfig:
    method: str | None = None
    num_speculative_tokens: int | None = None

    @model_validator(mode="after")
    def _check_tokens(self):
        if self.method == "ngram" and self.num_speculative_tokens is None:
            raise ValueError("num_speculative_tokens must be set for the ngram method.")
        if method := self.method:
            if self.num_speculative_tokens == 0:
                raise ValueError(f"A draft method needs num_speculative_tokens above 0 ({method}).")
        if self.use_eagle():
            self.draft = DraftConfig(self.method, model_type="eagle")
        return self

    def use_eagle(self) -> bool:
        return self.method in ("eagle", "eagle3")
"""

# A JSON option whose class holds another config (`--compilation-config.pass_config.x`).
FILES["vllm/config/compilation.py"] = """\
from pydantic import Field, field_validator

from vllm.config.utils import config


@config
class PassConfig:
    enable_sp: bool = False


MODES = {"NONE": 0, "COMPILE": 1}
# (built, not written out: only the running code knows its members)
ATTENTION_OPS = tuple("vllm::" + op for op in ("attention", "mla_attention"))


@config
class CompilationConfig:
    mode: int = 0
    pass_config: PassConfig = Field(default_factory=PassConfig)
    capture_sizes: list[int] | None = None
    splitting_ops: list[str] | None = None

    def __post_init__(self):
        if self.capture_sizes is not None and len(self.capture_sizes) == 0:
            raise ValueError("capture_sizes should contain at least one size.")
        if self.pass_config.enable_sp and self._splits_attention():
            raise ValueError("attention ops should not be split when enable_sp is on.")

    def _splits_attention(self) -> bool:
        return self.splitting_ops is not None and all(op in self.splitting_ops for op in ATTENTION_OPS)

    @field_validator("mode", mode="before")
    @classmethod
    def _mode_by_name(cls, value):
        if isinstance(value, str):
            name = value.upper()
            if name not in MODES:
                raise ValueError(f"Invalid compilation mode: {value}. Valid modes are: {', '.join(MODES)}")
            return MODES[name]
        return value
"""

FILES["vllm/config/scheduler.py"] = """\
from vllm.config.utils import config


@config
class SchedulerConfig:
    max_num_batched_tokens: int = 2048
    enable_chunked_prefill: bool = True
    use_fast_path: bool = False

    def verify_max_model_len(self, max_model_len: int) -> None:
        if self.max_num_batched_tokens < max_model_len and not self.enable_chunked_prefill:
            raise ValueError(
                f"max_num_batched_tokens ({self.max_num_batched_tokens}) is smaller than"
                f" max_model_len ({max_model_len})."
            )
"""

# Built only by the parser, from `--profiler-config` (EngineArgs finds the class in its own
# annotations at run time, as vLLM's get_kwargs does): its validator runs while parsing.
FILES["vllm/config/profiler.py"] = """\
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from vllm.config.utils import config


@config
class ProfilerConfig:
    profiler: Literal["torch", "cuda"] | None = None
    record_shapes: bool = False
    trace_steps: int | None = None
    activities: list[str] = Field(default_factory=list)
    sample_rates: list[float] | None = None
    sample_count: int = 1
    trace_save_path: str | None = None

    @model_validator(mode="after")
    def _check_profiler(self):
        if self.profiler is not None and self.profiler not in ("torch", "cuda"):
            raise ValueError(f"Unknown profiler {self.profiler!r}.")
        if self.record_shapes and self.profiler != "torch":
            raise ValueError("record_shapes is only applicable when profiler is 'torch'.")
        # an item of a list field: the conditions name no value a launch could give first
        for activity in self.activities:
            if activity.upper() != activity:
                raise ValueError(f"Profiler activity '{activity}' must be written in capitals.")
        if self.sample_rates is not None:
            ProfilerConfig._check_rates(self.sample_count, self.sample_rates)
        if self.trace_save_path is not None:
            save_parent = Path(self.trace_save_path).parent
            if not save_parent.is_dir():
                raise FileNotFoundError(f"Trace save directory not found: {save_parent}")
        return self

    @staticmethod
    def _check_rates(n: int, rates: list[float]) -> None:
        if len(rates) != n:
            raise ValueError(f"sample_rates must have length {n}, got {rates}.")
        if not all(0.0 <= r <= 1.0 for r in rates):
            raise ValueError(f"sample_rates entries must be in [0, 1], got {rates}.")
        if any(rates[i] > rates[i - 1] for i in range(1, n)):
            raise ValueError(f"sample_rates must be non-increasing, got {rates}.")

    def trace_dir(self) -> str:
        if self.profiler is None:
            raise ValueError("Profiling is not enabled; set --profiler-config first.")
        return "traces"
"""

# A worker's check as the server starts (the launch path): no run before a launch reaches
# it, and its example's before line needs what an argument check requires (the profiler).
FILES["vllm/v1/worker/gpu_worker.py"] = """\
def start_profiler(vllm_config):
    if vllm_config.profiler_config.record_shapes:
        raise RuntimeError("Recording shapes needs the profiler's memory at start-up.")


def pin_cpus(vllm_config):
    if vllm_config.parallel_config.cpu_affinity:
        raise RuntimeError("Pinning CPUs needs the workers' affinity at start-up.")


def mask_cpus(vllm_config):
    if vllm_config.parallel_config.cpu_mask:
        raise RuntimeError("Masking CPUs needs the workers' affinity at start-up.")
"""

# What the engine runs once it starts, after the arguments were checked.
FILES["vllm/v1/engine/profiling.py"] = """\
def start(vllm_config):
    return vllm_config.profiler_config.trace_dir()
"""

# The KV connectors, registered at import by name (a module the profile runs for real, so its
# registry is full when VllmConfig looks a name up).
FILES["vllm/distributed/__init__.py"] = ""
FILES["vllm/distributed/kv_transfer/__init__.py"] = ""
FILES["vllm/distributed/kv_transfer/kv_connector/__init__.py"] = ""
FILES["vllm/distributed/kv_transfer/kv_connector/factory.py"] = """\
import importlib


class KVConnectorFactory:
    _registry: dict = {}

    @classmethod
    def register_connector(cls, name, module_path, class_name):
        cls._registry[name] = lambda: (module_path, class_name)

    @classmethod
    def get_connector_class(cls, kv_connector, kv_connector_module_path=None):
        if kv_connector is None:
            raise ValueError("Connector name is not set")
        if kv_connector_module_path:
            found = getattr(importlib.import_module(kv_connector_module_path), kv_connector)
            if not isinstance(found, type):
                raise ValueError(f"{kv_connector} in {kv_connector_module_path} is no class")
            return found
        elif kv_connector in cls._registry:
            return cls._registry[kv_connector]()
        else:
            raise ValueError(f"Unsupported connector type: {kv_connector}")


KVConnectorFactory.register_connector("PinnedConnector", "vllm.connectors.pinned", "Pinned")
KVConnectorFactory.register_connector("SharedConnector", "vllm.connectors.shared", "Shared")
"""

FILES[VLLM] = """\
import os
from typing import Any

from vllm.config.cache import CacheConfig
from vllm.config.compilation import CompilationConfig
from vllm.config.model import ModelConfig
from vllm.config.parallel import ParallelConfig
from vllm.config.scheduler import SchedulerConfig
from vllm.config.speculative import SpeculativeConfig
from vllm.config.utils import config


@config
class VllmConfig:
    kv_connector: str | None = None
    kv_connector_module_path: str | None = None
    enable_sleep_mode: bool = False
    enable_return_routed_experts: bool = False
    model_config: Any = None
    cache_config: Any = None
    parallel_config: Any = None
    scheduler_config: Any = None
    speculative_config: Any = None
    profiler_config: Any = None
    compilation_config: CompilationConfig | None = None

    def __post_init__(self):
        self.model_config.verify_with_parallel_config(self.parallel_config)
        if self.compilation_config is not None:
            if (
                self.compilation_config.pass_config.enable_sp
                and self.parallel_config.tensor_parallel_size == 1
            ):
                raise ValueError("Sequence parallelism needs a tensor parallel size above 1.")
            if self.compilation_config.splitting_ops == []:
                raise ValueError("An empty splitting_ops list splits the graph nowhere.")
        if self.scheduler_config.use_fast_path and self.parallel_config.pipeline_parallel_size > 1:
            raise ValueError("The scheduler's fast path does not support pipeline parallelism.")
        if self.speculative_config is not None and self.speculative_config.use_eagle():
            if self.scheduler_config.use_fast_path:
                raise ValueError("EAGLE gets wrong logits from the scheduler's fast path.")
        self.scheduler_config.verify_max_model_len(self.model_config.max_model_len)
        if self.cache_config.uses_pinned_pool and self.cache_config.gpu_memory_utilization > 0.8:
            raise ValueError("A pinned host pool leaves no room for this gpu_memory_utilization.")
        if self.kv_connector is not None and self.enable_return_routed_experts:
            raise ValueError("--enable-return-routed-experts does not work with a KV connector.")
        self._check_connector()

    def _check_connector(self):
        if self.kv_connector is None:
            return
        from vllm.distributed.kv_transfer.kv_connector.factory import KVConnectorFactory

        KVConnectorFactory.get_connector_class(self.kv_connector, self.kv_connector_module_path)
        if "expandable_segments:True" not in os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""):
            return
        if self.enable_sleep_mode:
            return
        raise ValueError(f"KV connector {self.kv_connector} pins memory expandable segments remap.")
"""

FILES[ARGS] = """\
import argparse
import copy
import dataclasses
import json
import typing
from dataclasses import dataclass

from pydantic import TypeAdapter, ValidationError

from vllm.config import (
    CacheConfig,
    CompilationConfig,
    ModelConfig,
    ObservabilityConfig,
    ParallelConfig,
    ProfilerConfig,
    SchedulerConfig,
    SpeculativeConfig,
    VllmConfig,
)
from vllm.utils.argparse_utils import FlexibleArgumentParser


def _speculative(text):
    try:
        return TypeAdapter(SpeculativeConfig).validate_json(text)
    except ValidationError as e:
        raise argparse.ArgumentTypeError(repr(e)) from e


def _parse_json(cls):
    def parse(text, cls=cls):
        try:
            return TypeAdapter(cls).validate_json(text)
        except ValidationError as e:
            raise argparse.ArgumentTypeError(repr(e)) from e

    return parse


def _config_in(hint):
    return next(a for a in typing.get_args(hint) if dataclasses.is_dataclass(a))


def _choices_of(hint):
    options = typing.get_args(hint)
    if not all(isinstance(o, type(options[0])) for o in options):
        raise ValueError(f"All options must be of the same type. Got {options}.")
    return list(options)


@dataclass
class EngineArgs:
    model: str = "org/model"
    max_model_len: int | None = None
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    gpu_memory_utilization: float = 0.9
    speculative_config: SpeculativeConfig | None = None
    max_num_seqs: int = 256
    data_parallel_size: int = 1
    mm_tensor_ipc: str = "direct_rpc"
    enable_chunked_prefill: bool | None = None
    max_num_batched_tokens: int | None = None
    data_parallel_hybrid_lb: bool = False
    profiler_config: ProfilerConfig | None = None
    compilation_config: CompilationConfig | None = None
    numa_bind_nodes: list[int] | None = None
    cpu_affinity: str | None = None
    cpu_mask: str | None = None
    load_format: str = "auto"
    trace_steps: int | None = None
    enable_eplb: bool = False
    eplb_step: int = 1
    observability_config: dict | None = None
    # the option takes its default from the config field it fills, under another name
    enable_scheduler_fast_path: bool = SchedulerConfig.use_fast_path
    kv_connector: str | None = None
    kv_connector_module_path: str | None = None
    enable_sleep_mode: bool = False
    enable_return_routed_experts: bool = False
    quantization: str | None = None

    def __post_init__(self):
        assert self.max_num_seqs > 0, "max_num_seqs must be positive"

    @staticmethod
    def add_cli_args(parser: FlexibleArgumentParser) -> FlexibleArgumentParser:
        parser.add_argument("--model", type=str, default="org/model")
        parser.add_argument("--max-model-len", type=int, default=None)
        parser.add_argument("--tensor-parallel-size", "-tp", type=int, default=1)
        parser.add_argument("--pipeline-parallel-size", "-pp", type=int, default=1)
        parser.add_argument("--gpu-memory-utilization", type=float, default=0.9)
        parser.add_argument("--speculative-config", type=_speculative, default=None)
        parser.add_argument("--max-num-seqs", type=int, default=256)
        parser.add_argument("--data-parallel-size", "-dp", type=int, default=1)
        parser.add_argument(
            "--mm-tensor-ipc", choices=["direct_rpc", "torch_shm"], default="direct_rpc"
        )
        parser.add_argument(
            "--enable-chunked-prefill", action=argparse.BooleanOptionalAction, default=None
        )
        parser.add_argument("--max-num-batched-tokens", type=int, default=None)
        parser.add_argument("--data-parallel-hybrid-lb", action="store_true")
        hints = typing.get_type_hints(EngineArgs)
        # a default built with the parser, as vLLM's get_kwargs does: its validator runs then
        profiler = _config_in(hints["profiler_config"])
        parser.add_argument("--profiler-config", type=_parse_json(profiler), default=profiler())
        parser.add_argument(
            "--compilation-config", type=_parse_json(_config_in(hints["compilation_config"]))
        )
        parser.add_argument("--numa-bind-nodes", type=int, nargs="+", default=None)
        parser.add_argument("--cpu-affinity", type=str, default=None)
        parser.add_argument("--cpu-mask", type=str, default=None)
        parser.add_argument("--enable-scheduler-fast-path", action="store_true")
        parser.add_argument("--trace-steps", type=int, default=None)
        parser.add_argument("--enable-eplb", action="store_true")
        parser.add_argument("--eplb-step", type=int, default=1)
        parser.add_argument("--observability-config", type=json.loads, default=None)
        load_formats = typing.Literal["auto", "safetensors"]
        parser.add_argument("--load-format", choices=_choices_of(load_formats), default="auto")
        parser.add_argument("--kv-connector", type=str, default=None)
        parser.add_argument("--kv-connector-module-path", type=str, default=None)
        parser.add_argument("--enable-sleep-mode", action="store_true")
        parser.add_argument("--enable-return-routed-experts", action="store_true")
        parser.add_argument("--quantization", "-q", choices=["fp8", "awq"], default=None)
        return parser

    @classmethod
    def from_cli_args(cls, args: argparse.Namespace):
        names = [f.name for f in dataclasses.fields(cls)]
        return cls(**{n: getattr(args, n) for n in names if hasattr(args, n)})

    def create_observability_config(self) -> ObservabilityConfig | None:
        if self.observability_config is None:
            return None
        return ObservabilityConfig(**self.observability_config)

    def create_engine_config(self, usage_context=None, headless: bool = False) -> VllmConfig:
        if headless and self.data_parallel_hybrid_lb:
            raise ValueError("data_parallel_hybrid_lb is not applicable in headless mode")
        model_config = ModelConfig(
            model=self.model,
            max_model_len=self.max_model_len,
            mm_tensor_ipc=self.mm_tensor_ipc,
            quantization=self.quantization,
        )
        cache_config = CacheConfig(gpu_memory_utilization=self.gpu_memory_utilization)
        parallel_config = ParallelConfig(
            tensor_parallel_size=self.tensor_parallel_size,
            pipeline_parallel_size=self.pipeline_parallel_size,
            data_parallel_size=self.data_parallel_size,
            numa_bind_nodes=self.numa_bind_nodes,
            cpu_affinity=self.cpu_affinity,
            cpu_mask=self.cpu_mask,
            enable_eplb=self.enable_eplb,
            eplb_step=self.eplb_step,
        )
        if self.trace_steps is not None:
            profiler = copy.deepcopy(self.profiler_config)
            if profiler.trace_steps is not None:
                raise ValueError("trace_steps and profiler_config.trace_steps are mutually exclusive")
        chunked = True if self.enable_chunked_prefill is None else self.enable_chunked_prefill
        if self.max_num_batched_tokens is None:
            self.max_num_batched_tokens = 2048 if chunked else model_config.max_model_len
        assert self.max_num_batched_tokens is not None, (
            "max_num_batched_tokens must be set by this point"
        )
        scheduler_config = SchedulerConfig(
            max_num_batched_tokens=self.max_num_batched_tokens, enable_chunked_prefill=chunked
        )
        if self.enable_scheduler_fast_path:
            scheduler_config.use_fast_path = True
        self.create_observability_config()
        return VllmConfig(
            model_config=model_config,
            cache_config=cache_config,
            parallel_config=parallel_config,
            scheduler_config=scheduler_config,
            speculative_config=self.speculative_config,
            profiler_config=self.profiler_config,
            compilation_config=self.compilation_config,
            kv_connector=self.kv_connector,
            kv_connector_module_path=self.kv_connector_module_path,
            enable_sleep_mode=self.enable_sleep_mode,
            enable_return_routed_experts=self.enable_return_routed_experts,
        )
"""


def vllm_repo(root: Path) -> tuple[Git, str]:
    """The fixture project committed into a fresh git repo."""
    g = Git(root)
    return g, g.commit("fixture project laid out as vLLM", dict(FILES))


def line_of(path: str, needle: str, after: str = "") -> int:
    """1-based line of the first line of `path` containing `needle` (after the first line
    containing `after`)."""
    lines = FILES[path].splitlines()
    start = next((i for i, line in enumerate(lines) if after in line), 0) if after else 0
    for i, line in enumerate(lines[start:], start + 1):
        if needle in line:
            return i
    raise AssertionError(f"{needle!r} is not in {path}")
