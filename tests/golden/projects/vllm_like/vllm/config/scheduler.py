# A fixture in vLLM's shape, written for kverr's tests (not vLLM code).
from dataclasses import dataclass

from vllm.logger import init_logger

logger = init_logger(__name__)


@dataclass
class SchedulerConfig:
    max_num_batched_tokens: int = 2048
    max_num_seqs: int = 128
    max_num_partial_prefills: int = 1
    enable_chunked_prefill: bool = True

    def __post_init__(self):
        if self.max_num_partial_prefills > 1 and not self.enable_chunked_prefill:
            raise ValueError(
                "Chunked prefill must be enabled to set max_num_partial_prefills > 1."
            )
        if self.max_num_batched_tokens < self.max_num_seqs:
            logger.warning("Batch budget is smaller than the number of sequences.")
