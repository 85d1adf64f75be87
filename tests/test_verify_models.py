"""Which model profile the fix search tries first when a check is about the model: the one
the run's message speaks of, by the profile's name or its config's attribute names."""

from __future__ import annotations

import pytest
from kverr.verify.search.core import Search

from kverr.ftypes import Launch

MODELS = {
    "hybrid": {"mamba_d_state": 16, "layers_block_type": ["mamba"]},
    "mla": {"kv_lora_rank": 512, "qk_rope_head_dim": 64},
    "moe": {"num_experts": 8, "num_experts_per_tok": 2},
}

ORDER = [
    ("Number of experts in the model must be greater than 0", "moe"),
    ("Non-MoE models do not support external data parallel mode", "moe"),
    ("kv_lora_rank is needed for this attention backend", "mla"),
    ("", "hybrid"),  # nothing said: the profiles' own order
]


@pytest.mark.parametrize("words,first", ORDER)
def test_the_model_a_message_speaks_of_is_tried_first(words: str, first: str) -> None:
    search = Search(lambda *a: None, {}, models=MODELS)
    changes = search.other_models(Launch(), words=words)
    assert changes[0].edits == (("model", "profile", first),)
    assert len(changes) == 3
