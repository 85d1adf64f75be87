"""A small project of our own for the verify tests: a `ServerArgs` dataclass with a parser,
`__post_init__` steps, a later check method, platform probes, an environment module and a
constant imported from a heavy module. Written for these tests (no upstream code), laid out
like the real thing so the same spec shape drives it, and committed into a real git repo."""

from __future__ import annotations

from pathlib import Path

from kverr.verify.spec import VerifySpec
from test_sources import Git

ARGS = "python/fakesrv/srt/server_args.py"

SERVER_ARGS = '''\
from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import socket
from typing import Optional

import torch

from fakesrv.srt.environ import envs
from fakesrv.srt.layers.chunk import CHUNK_SIZE as FLA_CHUNK_SIZE
from fakesrv.srt.utils import get_device_sm, is_flashinfer_available, nullable_str

logger = logging.getLogger(__name__)

BACKENDS = ["fa3", "fa4", "triton", "flashinfer"]


@dataclasses.dataclass
class ServerArgs:
    model_path: str
    tp_size: int = 1
    moe_dp_size: int = 1
    page_size: int = 1
    attention_backend: Optional[str] = None
    prefill_only: bool = False
    enable_foo: bool = False
    ssl_keyfile: Optional[str] = None
    ssl_certfile: Optional[str] = None
    hang: bool = False
    probe_torch: bool = False
    swallow: bool = False
    phone_home: bool = False
    write_outside: bool = False
    lora_paths: Optional[list] = None
    ib_device: Optional[str] = None
    slow_mode: bool = False

    def __post_init__(self):
        """Runs every step in order."""
        self._handle_ssl()
        if self.model_path == "dummy":
            return
        self._handle_backend()
        self._handle_parallel()
        self._handle_page_size()
        self._handle_misc()

    def _handle_ssl(self):
        if not self.ssl_certfile and self.ssl_keyfile:  # a key is served with its certificate
            raise ValueError("--ssl-keyfile requires --ssl-certfile: TLS serves the two together.")
        if self.ssl_keyfile and not os.path.isfile(self.ssl_keyfile):
            raise ValueError(f"SSL key file not found at {self.ssl_keyfile}; pass a readable one.")

    def _handle_backend(self):
        if self.attention_backend is None:
            self.attention_backend = "fa3" if get_device_sm() >= 90 else "triton"
            logger.warning(f"Attention backend not set; using {self.attention_backend}.")
        if self.attention_backend == "fa4" and get_device_sm() < 100:
            raise RuntimeError("The fa4 attention backend requires an SM100 GPU.")
        if self.attention_backend == "flashinfer" and not is_flashinfer_available():
            raise ImportError("flashinfer is not installed; please install flashinfer.")
        if self.prefill_only and self.attention_backend not in ("fa3", "fa4"):
            raise ValueError("--prefill-only currently requires the FA backend (fa3/fa4).")

    def _handle_parallel(self):
        assert self.tp_size % self.moe_dp_size == 0, "tp_size must be divisible by moe_dp_size"

    def _handle_page_size(self):
        if FLA_CHUNK_SIZE % self.page_size != 0:
            raise ValueError(f"page_size must divide {FLA_CHUNK_SIZE}, got {self.page_size}")

    def _handle_misc(self):
        if self.probe_torch and torch.cuda.mem_get_info()[0] > 10:
            raise RuntimeError("not enough free memory")
        if self.swallow:
            try:
                if torch.cuda.device_count() > 1:
                    self.tp_size = 2
            except BaseException:
                pass
        if self.hang:
            while True:
                pass
        if self.phone_home:  # the harness's test listens on this port of the host's loopback
            socket.create_connection(("127.0.0.1", int(os.environ["FAKE_PORT"])), timeout=2)
        if self.write_outside:
            open("/tmp/kverr-verify-must-not-exist", "w")
        if self.enable_foo and not envs.FAKE_ALLOW_FOO.get():
            raise ValueError("--enable-foo needs FAKE_ALLOW_FOO=1.")
        self._check_ib(self.ib_device)
        if self.slow_mode:
            logger.warning("Slow mode is on; requests are served one at a time.")

    def _check_ib(self, device):
        if device is None:
            return
        if not os.path.isdir("/sys/class/infiniband"):
            raise RuntimeError("InfiniBand sysfs path not found: /sys/class/infiniband")
        available = sorted(os.listdir("/sys/class/infiniband"))
        if device not in available:
            raise ValueError(f"Invalid IB device '{device}'. Available devices: {available}")

    def check_server_args(self):
        assert self.tp_size <= 8, "tp_size must be at most 8"

    @staticmethod
    def add_cli_args(parser: argparse.ArgumentParser):
        parser.add_argument("--model-path", type=str, required=True)
        parser.add_argument("--tensor-parallel-size", "--tp-size", type=int, default=1)
        parser.add_argument("--moe-data-parallel-size", "--moe-dp-size", type=int, default=1)
        parser.add_argument("--page-size", type=int, default=ServerArgs.page_size)
        parser.add_argument("--attention-backend", type=nullable_str, choices=BACKENDS)
        parser.add_argument("--prefill-only", action="store_true")
        parser.add_argument("--enable-foo", action="store_true")
        parser.add_argument("--ssl-keyfile", type=str)
        parser.add_argument("--ssl-certfile", type=str)
        parser.add_argument("--hang", action="store_true")
        parser.add_argument("--probe-torch", action="store_true")
        parser.add_argument("--swallow", action="store_true")
        parser.add_argument("--phone-home", action="store_true")
        parser.add_argument("--write-outside", action="store_true")
        parser.add_argument("--lora-paths", nargs="*", action=LoRAPathAction)
        parser.add_argument("--ib-device", type=str)
        parser.add_argument("--slow-mode", action="store_true")

    @classmethod
    def from_cli_args(cls, args: argparse.Namespace):
        # two sizes are parsed under their long names and kept under short ones
        for short, long in (("tp_size", "tensor_parallel_size"), ("moe_dp_size", "moe_data_parallel_size")):
            setattr(args, short, getattr(args, long))
        return cls(**{f.name: getattr(args, f.name) for f in dataclasses.fields(cls)})


class LoRAPathAction(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        for value in values:
            assert "=" in value, f"LoRA path {value!r} must be NAME=PATH"
        setattr(namespace, self.dest, list(values))


class PortArgs:
    def init_new(self):
        raise ValueError("ports are chosen at launch")
'''

ENVIRON = """\
import os


class EnvBool:
    def __init__(self, default):
        self.default = default

    def __set_name__(self, owner, name):
        self.name = name

    def get(self):
        value = os.getenv(self.name)
        if value is None:
            return self.default
        return value.lower() in ("1", "true", "yes")


class Envs:
    FAKE_ALLOW_FOO = EnvBool(False)


envs = Envs()
"""

UTILS = """\
import torch


def get_device_sm():
    major, minor = torch.cuda.get_device_capability()
    return major * 10 + minor


def is_flashinfer_available():
    return torch.cuda.is_available() and __import__("flashinfer") is not None


def nullable_str(val):
    if not val or val == "None":
        return None
    return val
"""

CHUNK = """\
import torch
import triton

CHUNK_SIZE = 64


@triton.jit
def kernel(x):
    return torch.zeros(x)
"""

FILES = {
    ARGS: SERVER_ARGS,
    "python/fakesrv/srt/environ.py": ENVIRON,
    "python/fakesrv/srt/utils.py": UTILS,
    "python/fakesrv/srt/layers/chunk.py": CHUNK,
    "python/fakesrv/__init__.py": "import torch  # never run by the sandbox\n",
}

TABLE = {
    "verify": {
        "project": "fakesrv",
        "source_root": "python",
        "package": "fakesrv",
        "main_module": "fakesrv.srt.server_args",
        "modules": ["fakesrv.srt.environ", "fakesrv.srt.server_args"],
        "args_class": "ServerArgs",
        "add_args": "add_cli_args",
        "from_args": "from_cli_args",
        "phases": ["__post_init__", "check_server_args"],
        "launch": "python -m fakesrv.launch",
        "base_args": ["--model-path", "MODEL_PATH"],
        "env_prefix": "FAKE_",
        "model_factory": "",
        "default_platform": "sm90",
        "default_model": "plain",
    },
    "platform": {
        "sm90": {
            "description": "one SM90 GPU with flashinfer",
            "probes": {"get_device_sm()": 90, "is_flashinfer_available()": True},
            "paths": {"/sys/class/infiniband": ["mlx5_0", "mlx5_1"]},
        },
        "noib": {
            "description": "one SM90 GPU, no InfiniBand",
            "inherits": "sm90",
            "paths": {"/sys/class/infiniband": False},
        },
        "sm100": {
            "description": "one SM100 GPU with flashinfer",
            "inherits": "sm90",
            "probes": {"get_device_sm()": 100},
        },
        "bare": {"description": "probes left to the code (all stubbed)", "probes": {}},
    },
    "model": {"plain": {"description": "no model facts"}},
}


def fake_spec() -> VerifySpec:
    return VerifySpec.from_table(TABLE, where="tests/verify_fixture.py")


def fake_repo(root: Path, **changes: str) -> tuple[Git, str]:
    """The fixture project committed into a fresh git repo; `changes` replace file texts."""
    g = Git(root)
    files = dict(FILES)
    files.update({path.replace("__", "/"): text for path, text in changes.items()})
    sha = g.commit("fixture project", files)
    return g, sha


def line_of(needle: str, source: str = SERVER_ARGS) -> int:
    """1-based line of the first line containing `needle` (a statement's first line)."""
    for i, line in enumerate(source.splitlines(), 1):
        if needle in line:
            return i
    raise AssertionError(f"{needle!r} is not in the fixture")


def sglang_files() -> dict[str, str]:
    """The same project laid out as SGLang (package `sglang`), so the shipped spec
    (profiles/sglang.toml) and its cuda-sm90 profile drive it in a build."""
    return {
        path.replace("fakesrv", "sglang"): text.replace("fakesrv", "sglang")
        for path, text in FILES.items()
    }
