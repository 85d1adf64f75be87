# A fixture in vLLM's shape, written for kverr's tests (not vLLM code).
from dataclasses import dataclass

from vllm.logger import init_logger
from vllm.platforms import current_platform

logger = init_logger(__name__)


@dataclass
class CacheConfig:
    cache_dtype: str = "auto"
    block_size: int = 16

    def _verify_cache_dtype(self):
        if self.cache_dtype == "fp8_e5m2" and current_platform.is_rocm():
            raise ValueError("fp8_e5m2 kv-cache is not supported on ROCm.")
        if self.block_size > 64:
            logger.warning("Batch budget is smaller than the number of sequences.")
