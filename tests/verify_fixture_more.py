"""A second project of our own for the verify tests: checks that need the search's further
means (an environment variable's value, list items, a try body that raises, a kept earlier
check, JSON values, an argparse Action's words, other model and platform profiles, a check
no command line reaches). Written for these tests (no upstream code), laid out like
verify_fixture.py and committed into a real git repo."""

from __future__ import annotations

from pathlib import Path

from kverr.verify.spec import VerifySpec
from test_sources import Git

ARGS = "python/fakesrv/srt/server_args.py"

SERVER_ARGS = """\
from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
from typing import List, Optional

from fakesrv.srt.configs import ModelConfig, is_sparse_model
from fakesrv.srt.utils import is_flashinfer_available

logger = logging.getLogger(__name__)

CHUNK = 64
MODULES = ["q_proj", "k_proj", "v_proj", "all"]


@dataclasses.dataclass
class ServerArgs:
    model_path: str
    quantization: Optional[str] = None
    moe_backend: str = "none"
    gc_threshold: Optional[List[int]] = None
    target_modules: Optional[List[str]] = None
    buckets: Optional[List[str]] = None
    page_size: Optional[int] = None
    track_interval: int = 256
    attention_backend: Optional[str] = None
    enable_sparse: bool = False
    disable_cache: bool = False
    prefill_backend: Optional[str] = None
    decode_backend: Optional[str] = None
    encoder_only: bool = False
    language_only: bool = False
    mm_limits: Optional[dict] = None
    adapters: Optional[list] = None
    ib_device: Optional[str] = None
    mamba_backend: str = "triton"
    cache_mode: str = "lru"

    def __post_init__(self):
        self._handle_moe()
        self._handle_lists()
        self._handle_buckets(self.buckets)
        self._handle_page()
        self._handle_window_model()
        self._handle_sparse()
        self._handle_encoder()
        self._handle_mm()
        self._handle_ib()
        self._handle_mamba()
        self._handle_cache_mode()

    def _handle_moe(self):
        if self.moe_backend == "fused":
            mode = os.environ.get("FAKE_FUSE_MODE", None)
            if mode not in ["1", "2"]:
                raise ValueError(f"Wrong value of {mode=}, fused MoE needs 1 or 2.")
            elif mode == "2":
                assert self.quantization == "slim", "Fuse mode 2 supports only slim quantization."

    def _handle_lists(self):
        if self.gc_threshold:
            if not (1 <= len(self.gc_threshold) <= 3):
                raise ValueError("gc_threshold must contain 1 to 3 integers.")
            if len(set(self.gc_threshold)) != len(self.gc_threshold):
                raise ValueError("gc_threshold must not repeat a generation.")
        if self.target_modules:
            if "all" in self.target_modules:
                assert len(self.target_modules) == 1, "If 'all' is in --target-modules, it must be alone."

    def _handle_buckets(self, rule):
        if not rule:
            return
        if rule[0] == "custom":
            assert len(rule) >= 2, "a custom rule needs a value"
            try:
                values = [float(x) for x in rule[1:]]
            except ValueError:
                assert False, "custom bucket values must be numeric"

    def _handle_page(self):
        if self.page_size is not None:
            assert self.track_interval % self.page_size == 0, "track_interval must be a multiple of page_size"
            assert max(CHUNK, self.page_size) % min(CHUNK, self.page_size) == 0, (
                f"CHUNK or page_size must divide the other, got {self.page_size}"
            )

    def _handle_window_model(self):
        hf_config = ModelConfig.from_server_args(self).hf_config
        model_arch = hf_config.architectures[0]
        if model_arch == "WindowForCausalLM":
            if hf_config.window_pattern is not None:
                assert self.attention_backend in ["fa3", "triton"], f"fa3 or triton is required for {model_arch}"

    def _handle_sparse(self):
        if self.enable_sparse:
            hf_config = ModelConfig.from_server_args(self).hf_config
            assert is_sparse_model(hf_config), "--enable-sparse is only supported for sparse models."
            assert self.disable_cache, "Sparse attention requires --disable-cache."
            for attr, label in [("prefill_backend", "prefill"), ("decode_backend", "decode")]:
                backend = getattr(self, attr)
                if backend is not None and backend != "sparse_mla":
                    raise ValueError(f"Sparse attention needs the sparse_mla {label} backend, got {backend}")

    def _handle_encoder(self):
        if self.encoder_only and self.language_only:
            raise ValueError("--encoder-only and --language-only are the two halves of a split: pick one")
        arch = ModelConfig.from_server_args(self).hf_config.architectures[0]
        if (self.encoder_only or self.language_only) and arch not in ["VisionForConditionalGeneration"]:
            raise ValueError(f"Encoder disaggregation supports vision models only, not {arch}")

    def _handle_mm(self):
        if self.mm_limits:
            for modality in self.mm_limits.keys():
                if modality not in {"image", "video"}:
                    raise ValueError(f"Invalid modality '{modality}'. Allowed: {sorted(['image', 'video'])}")

    def _handle_ib(self):
        if self.ib_device is not None:
            if not os.path.isdir("/sys/class/infiniband"):
                raise RuntimeError("InfiniBand sysfs not found")
            devices = os.listdir("/sys/class/infiniband")
            if len(devices) == 0:
                raise RuntimeError("No IB devices found in /sys/class/infiniband")

    def _handle_mamba(self):
        # the flashinfer backend needs flashinfer's mamba kernels, a module of their own
        if self.mamba_backend != "flashinfer" or not is_flashinfer_available():
            return
        try:
            import flashinfer.mamba  # noqa: F401
        except ImportError:
            raise ValueError("FlashInfer mamba module not available")

    def _handle_cache_mode(self):
        if self.cache_mode not in ("lru", "fifo"):
            raise ValueError(f"Invalid cache_mode={self.cache_mode!r}")
        if os.environ.get("FAKE_TURBO") == "1":
            logger.warning("Turbo mode is on; outputs are not deterministic.")

    @staticmethod
    def add_cli_args(parser: argparse.ArgumentParser):
        parser.add_argument("--model-path", type=str, required=True)
        parser.add_argument("--quantization", type=str, choices=["awq", "slim"])
        parser.add_argument("--moe-backend", type=str, default="none", choices=["none", "fused"])
        parser.add_argument("--gc-threshold", type=int, nargs="+")
        parser.add_argument("--target-modules", type=str, nargs="+", choices=MODULES)
        parser.add_argument("--buckets", type=str, nargs="+")
        parser.add_argument("--page-size", type=int)
        parser.add_argument("--track-interval", type=int, default=256)
        parser.add_argument("--attention-backend", type=str, choices=["fa3", "triton", "torch_native"])
        parser.add_argument("--enable-sparse", action="store_true")
        parser.add_argument("--disable-cache", action="store_true")
        parser.add_argument("--prefill-backend", type=str, choices=["sparse_mla", "dense_mla"])
        parser.add_argument("--decode-backend", type=str, choices=["sparse_mla", "dense_mla"])
        parser.add_argument("--encoder-only", action="store_true")
        parser.add_argument("--language-only", action="store_true")
        parser.add_argument("--mm-limits", type=json.loads, help="e.g. '{\\"image\\": 1}'")
        parser.add_argument("--adapters", type=str, nargs="*", action=AdapterAction)
        parser.add_argument("--ib-device", type=str)
        parser.add_argument("--mamba-backend", type=str, default="triton", choices=["triton", "flashinfer"])
        parser.add_argument("--cache-mode", type=str, default="lru", choices=["lru", "fifo"])

    @classmethod
    def from_cli_args(cls, args: argparse.Namespace):
        # every field is parsed under its own name
        return cls(**{f.name: getattr(args, f.name) for f in dataclasses.fields(cls)})


class AdapterAction(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        out = []
        for item in values:
            item = item.strip()
            if item.startswith("{") and item.endswith("}"):
                obj = json.loads(item)
                assert "name" in obj and "path" in obj, f"{item!r} looks like JSON but lacks 'name' and 'path' keys."
                out.append(obj)
            else:
                out.append(item)
        setattr(namespace, self.dest, out)
"""

CONFIGS = """\
import torch


class ModelConfig:
    @classmethod
    def from_server_args(cls, server_args):
        raise RuntimeError("loads the checkpoint")


def is_sparse_model(hf_config):
    return hf_config.architectures[0] == "SparseForCausalLM"
"""

UTILS = """\
import torch


def is_flashinfer_available():
    return torch.cuda.is_available() and __import__("flashinfer") is not None
"""

FILES = {
    ARGS: SERVER_ARGS,
    "python/fakesrv/srt/configs.py": CONFIGS,
    "python/fakesrv/srt/utils.py": UTILS,
    "python/fakesrv/__init__.py": "import torch  # never run by the sandbox\n",
}


def _model(arch: str, **hf: object) -> dict:
    return {
        "description": f"a {arch} model",
        "inherits": "plain",
        "hf_config": {"architectures": [arch], **hf},
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
        "model_factory": "fakesrv.srt.configs.ModelConfig",
        "default_platform": "sm90",
        "default_model": "plain",
    },
    "platform": {
        "sm90": {
            "description": "one SM90 GPU with flashinfer and InfiniBand",
            "probes": {"is_flashinfer_available()": True},
            "paths": {"/sys/class/infiniband": ["mlx5_0"]},
        },
        "ib-empty": {
            "description": "the same, its InfiniBand directory empty",
            "inherits": "sm90",
            "paths": {"/sys/class/infiniband": []},
        },
        "no-mamba": {
            "description": "the same, flashinfer without its mamba module",
            "inherits": "sm90",
            "absent_packages": ["flashinfer.mamba"],
        },
    },
    "model": {
        "plain": {
            "description": "a plain decoder",
            "config": {"model_path": "MODEL_PATH"},
            "hf_config": {"architectures": ["PlainForCausalLM"]},
        },
        "window": _model("WindowForCausalLM", window_pattern="LLG"),
        "sparse": _model("SparseForCausalLM"),
        "vision": _model("VisionForConditionalGeneration"),
    },
}


def more_spec() -> VerifySpec:
    return VerifySpec.from_table(TABLE, where="tests/verify_fixture_more.py")


def more_repo(root: Path) -> tuple[Git, str]:
    g = Git(root)
    return g, g.commit("fixture project, more checks", dict(FILES))
