"""Fixture for the "words a user understands" goldens: flags reached through
locals, parameters and an argparse Action; constants shown by value; defaults; a package and a
GPU probe; notices that say what the code chose; messages that carry the value they got.
Made up in the shape of a server-args module. Not real code."""

import argparse
import dataclasses
import logging
from typing import List, Optional

import torch

from launcher.kernels import CHUNK_WIDTH as KERNEL_CHUNK
from launcher.kernels import kernels_of, resolved_view
from launcher.platform import is_fastlib_available, is_sm100_supported

logger = logging.getLogger(__name__)

TILE = 64
PRIORITY_SCHEDULES = ["fifo", "lof"]


@dataclasses.dataclass
class ServeArgs:
    kernel: Optional[str] = None
    prefill_kernel: Optional[str] = None
    page_width: int = 16
    shard_size: int = 1
    expert_shards: int = 1
    rdma_device: Optional[str] = None
    backup_device: Optional[str] = None
    speculative_mode: Optional[str] = None
    max_requests: Optional[int] = None
    enable_cache_log: bool = False
    pipeline_size: int = 1
    enable_priority: bool = False
    schedule: str = "fifo"
    labels_header: str = "x-labels"
    allowed_labels: Optional[List[str]] = None
    mamba_kernel: str = "triton"
    adapter_paths: Optional[List[str]] = None
    draft_width: int = 1
    lookahead_width: int = 1
    window: int = 4
    enable_wide: bool = False
    dtype: str = "auto"

    def __post_init__(self):
        self._handle_parallel()
        self._handle_kernels()
        self._handle_devices()
        self._handle_speculative()
        self._handle_scheduling()
        self._handle_mamba()
        self._handle_dtype()

    def _handle_parallel(self):
        if self.expert_shards > 1:
            assert (
                self.shard_size % self.expert_shards == 0
            ), "shard_size must be divisible by expert_shards"

    def _handle_kernels(self):
        prefill = self.prefill_kernel if self.prefill_kernel is not None else self.kernel
        if prefill == "tiled" and not is_sm100_supported():
            raise ValueError(
                "The tiled prefill kernel is only supported on SM100 GPUs. "
                "Please use a different prefill kernel."
            )
        if prefill == "paged" and TILE % self.page_width != 0:
            raise ValueError(
                f"The paged prefill kernel needs --page-width to divide {TILE}, "
                f"got {self.page_width}."
            )

    def _handle_chunk(self):
        # an imported constant: a build over git reads its value (pipeline/imports.py)
        if KERNEL_CHUNK % self.page_width != 0:
            raise ValueError(f"--page-width must divide the kernel chunk width {KERNEL_CHUNK}.")

    def _handle_devices(self):
        self.rdma_device = self._check_devices(self.rdma_device)
        self.backup_device = self._check_devices(self.backup_device)

    def _check_devices(self, device_str):
        if device_str is None:
            logger.warning("No devices given, falling back to auto discovery.")
            return None
        if " " in device_str:
            raise ValueError(f"Device list {device_str!r} must not contain spaces.")
        return device_str

    def _handle_speculative(self):
        if self.speculative_mode in ("draft", "tree"):
            if self.max_requests is None:
                self.max_requests = 48
                logger.warning(
                    "Max requests is reset to 48 for speculative decoding. "
                    "You can override this by explicitly setting --max-requests."
                )
        if self.enable_cache_log and self.speculative_mode is not None:
            logger.warning("Cache logging is disabled because of speculative decoding.")
            self.enable_cache_log = False

    def _handle_draft(self):
        if self.speculative_mode == "lookahead":
            # reassigned before the check: the check reads --lookahead-width, not --draft-width
            self.draft_width = self.lookahead_width
            if self.draft_width > 1 and self.page_width > 1:
                raise ValueError("A draft wider than 1 needs --page-width 1.")
        self.window = 8
        if self.enable_wide:
            self.window = 16  # maybe reassigned: the value 8 is no longer certain below
        if self.window > self.page_width:
            raise ValueError("The window must fit in a page.")

    def _handle_scheduling(self):
        if self.pipeline_size != 1:
            raise ValueError("Pipeline stages are not supported by the scheduler yet.")
        if self.enable_priority and self.schedule not in PRIORITY_SCHEDULES:
            raise ValueError(
                "To use priority scheduling, --schedule must be 'fifo' or 'lof'. "
                f"'{self.schedule}' is not supported."
            )
        if not self.labels_header and self.allowed_labels:
            raise ValueError("Please set --labels-header when setting --allowed-labels.")

    def _handle_mamba(self):
        if self.mamba_kernel == "fastlib" and not is_fastlib_available():
            raise ValueError(
                "fastlib mamba module not available, please check fastlib installation."
            )

    def _handle_dtype(self):
        if self.enable_wide:
            assert isinstance(self.dtype, torch.dtype), "wide kernels need a resolved dtype"


def handle_prefill_only(server_args) -> None:
    cfg = resolved_view(server_args)
    if not cfg.prefill_only:
        return
    prefill_kernel, _ = kernels_of(cfg)
    if prefill_kernel not in ("fa3", "fa4"):
        raise ValueError(
            "--prefill-only currently requires the FA prefill kernel (fa3/fa4), "
            f"but got prefill kernel {prefill_kernel!r}."
        )


class PathListAction(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        for path in values:
            if path.startswith("{") and not path.endswith("}"):
                raise ValueError(f"{path!r} looks like a JSON object but is not closed.")
        setattr(namespace, self.dest, values)


def add_cli_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kernel", type=str, help="The kernels for attention layers.")
    parser.add_argument(
        "--prefill-kernel",
        type=str,
        choices=["triton", "tiled", "paged", "fa3", "fa4"],
        help="The kernels for prefill attention (has priority over --kernel).",
    )
    parser.add_argument("--page-width", type=int, default=16, help="The number of tokens in a page.")
    parser.add_argument("--dtype", type=str, default="auto", help="Data type of the weights.")
    parser.add_argument("--shard-size", type=int, default=1, help="The tensor shard count.")
    parser.add_argument(
        "--expert-data-parallel-size",
        "--expert-shards",
        type=int,
        default=ServeArgs.expert_shards,
        help="The expert data parallelism size.",
    )
    parser.add_argument("--rdma-device", type=str, help="The RDMA devices for transfers.")
    parser.add_argument("--backup-device", type=str, help="The RDMA devices for backups.")
    parser.add_argument(
        "--speculative-mode", type=str, choices=["draft", "tree", "lookahead"], help="Speculative decoding."
    )
    parser.add_argument("--max-requests", type=int, help="The maximum number of running requests.")
    parser.add_argument("--enable-cache-log", action="store_true", help="Log cache hits.")
    parser.add_argument("--pipeline-size", type=int, default=1, help="The pipeline parallelism size.")
    parser.add_argument("--enable-priority", action="store_true", help="Enable priority scheduling.")
    parser.add_argument(
        "--schedule", type=str, default="fifo", choices=["fifo", "lof", "random", "dfs-weight"]
    )
    parser.add_argument("--labels-header", type=str, default="x-labels", help="The labels header.")
    parser.add_argument("--allowed-labels", type=str, nargs="+", help="The labels to accept.")
    parser.add_argument(
        "--mamba-kernel", type=str, default="triton", choices=["triton", "fastlib"], help="Mamba kernels."
    )
    parser.add_argument("--prefill-only", action="store_true", help="Serve prefill only.")
    parser.add_argument("--draft-width", type=int, default=1, help="The draft tree width.")
    parser.add_argument("--lookahead-width", type=int, default=1, help="The lookahead width.")
    parser.add_argument("--window", type=int, default=4, help="The attention window.")
    parser.add_argument("--enable-wide", action="store_true", help="Use a wide window.")
    parser.add_argument(
        "--adapter-paths", type=str, nargs="*", action=PathListAction, help="The adapters to load."
    )
