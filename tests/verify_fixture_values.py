"""A third project of our own for the verify tests: checks whose fix needs a value for an
option without declared choices (a device, a list of devices written as one word, an
algorithm's name), in functions that compare other options with other strings, and resets
that fill in an option the user did not give. Written for these tests (no upstream code),
laid out like verify_fixture.py and committed into a real git repo."""

from __future__ import annotations

from pathlib import Path

from kverr.verify.spec import VerifySpec
from test_sources import Git

ARGS = "python/fakesrv/srt/server_args.py"

SERVER_ARGS = """\
from __future__ import annotations

import argparse
import dataclasses
import logging
import os
from typing import Literal, Optional

from fakesrv.srt.utils import RETIRED_LOADERS, get_device, is_cuda

logger = logging.getLogger(__name__)

ALGORITHMS = ["EAGLE", "NEXTN", "NGRAM"]
BACKENDS = ["triton", "flashinfer", "fa3"]


@dataclasses.dataclass
class ServerArgs:
    model_path: str
    device: Optional[str] = None
    model_kind: str = "plain"
    speculative_algorithm: Optional[str] = None
    attention_backend: Optional[str] = None
    linear_backend: str = "triton"
    mamba_strategy: str = "auto"
    page_size: int = 1
    dp_size: int = 1
    enable_dp_attention: bool = False
    enable_dp_lm_head: bool = False
    ib_devices: Optional[str] = None
    dllm_algorithm: Optional[str] = None
    load_mode: Optional[Literal["static", "dynamic"]] = None
    chunk_size: Optional[int] = 16
    loader: Optional[str] = None

    def __post_init__(self):
        self._handle_defaults()
        self._handle_model()
        self._handle_speculative()
        self._handle_dp()
        self._handle_ib()
        self._handle_dllm()
        self._handle_chunk()
        self._handle_loader()

    def _handle_defaults(self):
        if self.device is None:
            self.device = get_device()

    def _handle_model(self):
        if self.model_kind == "llama" and self.device != "cpu":
            self.attention_backend = "fa3"
        elif self.model_kind == "hybrid":
            self._handle_hybrid(default_backend="flashinfer")

    def _handle_hybrid(self, default_backend: Optional[str] = None):
        if self.attention_backend is None and default_backend is not None:
            self.attention_backend = default_backend
        if self.linear_backend == "flashinfer" and self.mamba_strategy == "no_buffer":
            raise ValueError("flashinfer linear attention needs --mamba-strategy extra_buffer")
        if self.enable_extra_buffer():
            assert is_cuda(), "Mamba extra_buffer is only supported on CUDA devices"
            if self.page_size > 64:
                raise ValueError(f"page_size {self.page_size} must be at most 64 with extra_buffer")

    def _handle_speculative(self):
        if self.speculative_algorithm == "NEXTN":
            self.speculative_algorithm = "EAGLE"
        if self.speculative_algorithm == "NGRAM":
            if not self.device.startswith("cuda"):
                raise ValueError("Ngram speculative decoding only supports CUDA device.")

    def _handle_dp(self):
        if self.dp_size < 2:  # one data-parallel rank: nothing to split or gather
            self.enable_dp_attention = self.enable_dp_lm_head = False
        if self.enable_dp_lm_head:
            assert self.enable_dp_attention, "Please enable dp attention when setting enable_dp_lm_head."

    def _handle_ib(self):
        if self.ib_devices is None:
            return
        named = list(filter(None, map(str.strip, self.ib_devices.split(","))))
        if not named:
            raise ValueError("--ib-devices names no device")
        devices = sorted(set(named), key=named.index)  # each once, in the order given
        if len(devices) < len(named):
            logger.warning("Duplicate IB devices specified: %s", self.ib_devices)
        available = set(os.listdir("/sys/class/infiniband"))
        invalid = [d for d in devices if d not in available]
        if invalid:
            raise ValueError(
                f"Invalid IB devices specified: {invalid}. Available devices: {sorted(available)}"
            )

    def _handle_dllm(self):
        if self.dllm_algorithm is not None and self.page_size != 1:
            raise ValueError("Diffusion LLM inference needs --page-size 1")
        if self.load_mode == "dynamic" and self.device == "npu":
            raise ValueError("Dynamic loading is not supported on NPU")

    def _handle_chunk(self):
        if self.chunk_size is not None:
            if self.chunk_size not in (16, 32, 64, 128):
                raise ValueError("--chunk-size must be a power of 2 between 16 and 128")

    def _handle_loader(self):
        if self.loader in RETIRED_LOADERS:
            raise ValueError("The weight loader was retired; pick another --loader")

    def enable_extra_buffer(self) -> bool:
        return self.mamba_strategy == "extra_buffer"

    @staticmethod
    def add_cli_args(parser: argparse.ArgumentParser):
        parser.add_argument("--model-path", type=str, required=True)
        parser.add_argument(
            "--device",
            type=str,
            help="The device to use ('cuda', 'xpu', 'npu', 'cpu'). Defaults to auto-detection.",
        )
        parser.add_argument("--model-kind", type=str, choices=["plain", "llama", "hybrid"],
                            default="plain")
        parser.add_argument("--speculative-algorithm", type=str, choices=ALGORITHMS)
        parser.add_argument("--attention-backend", type=str, choices=BACKENDS)
        parser.add_argument("--linear-backend", type=str, choices=["triton", "flashinfer"],
                            default="triton")
        parser.add_argument("--mamba-strategy", type=str,
                            choices=["auto", "no_buffer", "extra_buffer"], default="auto")
        parser.add_argument("--page-size", type=int, default=1)
        parser.add_argument("--dp-size", type=int, default=1)
        parser.add_argument("--enable-dp-attention", action="store_true")
        parser.add_argument("--enable-dp-lm-head", action="store_true")
        parser.add_argument(
            "--ib-devices",
            type=str,
            help="Comma-separated InfiniBand devices (e.g., --ib-devices mlx5_0,mlx5_1).",
        )
        parser.add_argument(
            "--dllm-algorithm", type=str, help="The diffusion LLM algorithm, such as LowConfidence."
        )
        parser.add_argument("--load-mode", type=str, help="How weights are loaded.")
        parser.add_argument("--chunk-size", type=int, choices=[16, 32, 64, 128], default=16)
        parser.add_argument("--loader", type=str, help="The weight loader.")

    @classmethod
    def from_cli_args(cls, args: argparse.Namespace):
        # every field is parsed under its own name
        return cls(**{f.name: getattr(args, f.name) for f in dataclasses.fields(cls)})
"""

UTILS = """\
import torch


def get_device():
    return "cuda" if torch.cuda.is_available() else "cpu"


def is_cuda():
    return torch.version.cuda is not None


# (built, not written out: only the running code knows its members)
RETIRED_LOADERS = tuple(name + "_v0" for name in ("sharded", "tensorizer"))
"""

FILES = {
    ARGS: SERVER_ARGS,
    "python/fakesrv/srt/utils.py": UTILS,
    "python/fakesrv/__init__.py": "import torch  # never run by the sandbox\n",
}

TABLE = {
    "verify": {
        "project": "fakesrv",
        "source_root": "python",
        "package": "fakesrv",
        "main_module": "fakesrv.srt.server_args",
        "modules": ["fakesrv.srt.server_args"],
        "args_class": "ServerArgs",
        "add_args": "add_cli_args",
        "from_args": "from_cli_args",
        "phases": ["__post_init__"],
        "launch": "python -m fakesrv.launch",
        "base_args": ["--model-path", "MODEL_PATH"],
        "env_prefix": "FAKE_",
        "model_factory": "",
        "default_platform": "cuda",
        "default_model": "plain",
    },
    "platform": {
        "cuda": {
            "description": "one CUDA GPU with InfiniBand",
            "probes": {"get_device()": "cuda", "is_cuda()": True},
            "paths": {"/sys/class/infiniband": ["mlx5_0", "mlx5_1"]},
        },
        "rocm": {
            "description": "one ROCm GPU",
            "inherits": "cuda",
            "probes": {"is_cuda()": False},
        },
    },
    "model": {"plain": {"description": "no model facts"}},
}


def values_spec() -> VerifySpec:
    return VerifySpec.from_table(TABLE, where="tests/verify_fixture_values.py")


def values_repo(root: Path) -> tuple[Git, str]:
    g = Git(root)
    return g, g.commit("fixture project, free-text values", dict(FILES))
