# A fixture in vLLM's shape, written for kverr's tests (not vLLM code).
from dataclasses import dataclass

from vllm.config.model import ModelConfig


@dataclass
class SpeculativeConfig:
    method: str | None = None
    """The speculative method: ngram, eagle or mtp."""
    num_speculative_tokens: int | None = None
    """How many tokens to propose per step."""
    model: str | None = None
    """The draft model."""
    disable_padding: bool = False
    """Run the drafter without padded batches."""

    def __post_init__(self):
        if self.method == "ngram" and self.num_speculative_tokens is None:
            raise ValueError("ngram speculation needs num_speculative_tokens.")
        if self.model is not None and self.method is None:
            raise ValueError("A draft model needs a speculative method.")
        if self.disable_padding and self.method == "eagle":
            raise ValueError("eagle drafting needs padded batches.")


@dataclass
class VllmConfig:
    speculative_config: SpeculativeConfig | None = None
    model_config: ModelConfig | None = None

    def __post_init__(self):
        if self.speculative_config is not None and self.speculative_config.num_speculative_tokens > 8:
            raise ValueError("Too many speculative tokens for this model.")
