"""Fixture for kverr's records goldens: a made-up launch-arguments dataclass in the shape of a
server-args module (dataclass fields, add_argument, __post_init__ handlers). Not real code."""

import argparse
import dataclasses
import logging
import warnings
from typing import List, Optional

logger = logging.getLogger(__name__)

CACHE_BACKENDS = ["paged", "slab", "none"]
SAMPLER_CHOICES = ("greedy", "topk", "nucleus")


@dataclasses.dataclass
class LaunchArgs:
    model_path: str = ""
    cache_backend: str = "paged"
    cache_ratio: float = 0.9
    shard_count: int = 1
    pipeline_count: int = 1
    enable_turbo_cache: bool = False
    disable_prefix_tree: bool = False
    enable_paged_offload: bool = False
    offload_target: Optional[str] = None
    sampler: str = "greedy"
    draft_steps: Optional[int] = None
    max_batch_tokens: int = 8192
    legacy_stream_mode: bool = False
    api_keys: List[str] = dataclasses.field(default_factory=list)

    def __post_init__(self):
        self._handle_cache()
        self._handle_sharding()
        self._handle_sampler()
        self._handle_legacy()

    def _handle_cache(self):
        """Check the cache options before the pool is sized."""
        if self.cache_backend not in CACHE_BACKENDS:
            raise ValueError(
                f"Unknown --cache-backend {self.cache_backend!r}; expected one of {CACHE_BACKENDS}."
            )
        if not (0.0 < self.cache_ratio <= 1.0):
            raise ValueError(f"--cache-ratio must be in (0, 1], got {self.cache_ratio:.2f}.")
        # The turbo cache keeps its own tree; the prefix tree would index slots it reuses.
        if self.enable_turbo_cache and self.disable_prefix_tree:
            raise ValueError(
                "--enable-turbo-cache and --disable-prefix-tree are mutually exclusive. "
                "Please use only one of them."
            )
        if self.enable_paged_offload:
            if self.offload_target is None:
                raise ValueError(
                    "--enable-paged-offload requires --offload-target to be set. "
                    "Pass --offload-target host or --offload-target disk."
                )
            elif self.cache_backend == "none":
                logger.warning(
                    "--enable-paged-offload has no effect with --cache-backend none; disabling it."
                )
                self.enable_paged_offload = False

    def _handle_sharding(self):
        if self.shard_count > 1 and self.pipeline_count > 1:
            logger.warning(
                "Sharding %d ways with %d pipeline stages is experimental.",
                self.shard_count,
                self.pipeline_count,
            )
        assert self.max_batch_tokens >= 256, (
            f"--max-batch-tokens must be at least 256, got {self.max_batch_tokens}"
        )
        assert self.shard_count > 0

    def _handle_sampler(self):
        if self.sampler != "nucleus":
            return
        if self.draft_steps is not None and self.draft_steps > 4:
            raise RuntimeError(
                f"--sampler nucleus supports at most 4 draft steps, got {self.draft_steps} "
                f"(model {self.model_path!r})."
            )

    def _handle_legacy(self):
        if self.legacy_stream_mode:
            warnings.warn(
                "--legacy-stream-mode is deprecated and will be removed; use the default streaming.",
                DeprecationWarning,
            )


def add_cli_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model-path", type=str, help="Path or hub id of the model weights.")
    parser.add_argument(
        "--cache-backend",
        type=str,
        default="paged",
        choices=CACHE_BACKENDS,
        help="Which KV cache backend to use. Paged is the default.",
    )
    parser.add_argument("--cache-ratio", type=float, default=0.9, help="Share of memory for the cache.")
    parser.add_argument(
        "--enable-turbo-cache", action="store_true", help="Reuse cache slots across requests."
    )
    parser.add_argument(
        "--disable-prefix-tree", action="store_true", help="Do not index shared prefixes."
    )
    parser.add_argument(
        "--enable-paged-offload", action="store_true", help="Move cold pages out of GPU memory."
    )
    parser.add_argument(
        "--offload-target", type=str, default=None, choices=["host", "disk"], help="Where cold pages go."
    )
    parser.add_argument("--sampler", type=str, default="greedy", choices=SAMPLER_CHOICES)
    parser.add_argument("--draft-steps", type=int, default=None)
    parser.add_argument("--max-batch-tokens", type=int, default=8192)
    parser.add_argument("--shard-count", type=int, default=1)
    parser.add_argument("--pipeline-count", type=int, default=1)
    parser.add_argument("--legacy-stream-mode", action="store_true")
