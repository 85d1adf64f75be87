# A fixture in vLLM's shape, written for kverr's tests (not vLLM code): an EngineArgs dataclass
# whose fields name the config fields they fill, flags added from those fields, and checks.
import argparse
from dataclasses import dataclass

from vllm.config.cache import CacheConfig
from vllm.config.model import ModelConfig
from vllm.config.scheduler import SchedulerConfig
from vllm.engine.arg_utils_kwargs import get_kwargs
from vllm.logger import init_logger

logger = init_logger(__name__)


@dataclass
class EngineArgs:
    model: str = ModelConfig.model
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = SchedulerConfig.max_num_batched_tokens
    enable_chunked_prefill: bool | None = None
    enable_prefix_caching: bool | None = None
    kv_cache_dtype: str = CacheConfig.cache_dtype
    speculative_config: dict | None = None
    enable_lora: bool = False
    tensor_parallel_size: int = 1

    @staticmethod
    def add_cli_args(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
        # as vLLM does: each flag's type, default and help come from the dataclass field
        kwargs = get_kwargs(EngineArgs)
        parser.add_argument("--model", **kwargs["model"])
        parser.add_argument("--max-num-seqs", **kwargs["max_num_seqs"])
        parser.add_argument("--max-num-batched-tokens", **kwargs["max_num_batched_tokens"])
        parser.add_argument("--enable-chunked-prefill", **kwargs["enable_chunked_prefill"])
        parser.add_argument("--enable-prefix-caching", **kwargs["enable_prefix_caching"])
        parser.add_argument("--kv-cache-dtype", **kwargs["kv_cache_dtype"])
        parser.add_argument("--speculative-config", **kwargs["speculative_config"])
        parser.add_argument("--enable-lora", **kwargs["enable_lora"])
        parser.add_argument("--tensor-parallel-size", **kwargs["tensor_parallel_size"])
        return parser

    def create_engine_config(self):
        if self.max_num_batched_tokens is None:
            raise ValueError("max_num_batched_tokens must be known here.")
        if not self.enable_lora and self.max_num_seqs is None:
            raise ValueError("LoRA needs max_num_seqs; pass --max-num-seqs.")
        if self.enable_prefix_caching and self.tensor_parallel_size > 8:
            raise ValueError(
                f"Prefix caching cannot be used with tensor_parallel_size={self.tensor_parallel_size}."
            )
        if self.kv_cache_dtype == "fp8" and self.enable_lora:
            raise ValueError("An fp8 KV cache cannot be combined with LoRA.")
        if self.max_num_seqs is not None and self.max_num_seqs > 4096:
            logger.warning_once("max_num_seqs is very large; memory may run out.")
        if self.enable_chunked_prefill is False:
            logger.info_once("Chunked prefill is off.")
