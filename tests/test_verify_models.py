"""Which model profile the fix search tries first when a check is about the model: the one
the run's message speaks of, by the profile's name or its config's attribute names; and a
check that its option's declared bound shadows, which no command line reaches."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from kverr.records.conditions import Atom
from kverr.verify.harness import Outcome
from kverr.verify.search.core import Search, declared_bound, disjoint

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


BOUNDS = [
    # (the check fires when, the field is declared, no value does both)
    (("<=", 0.0), (">", 0.0), True),
    (("<", 1.0), (">=", 1.0), True),
    (("<=", 1.0), (">=", 1.0), False),  # 1 does both
    (("<", 5.0), (">", 0.0), False),
    ((">", 10.0), ("<=", 10.0), True),
    ((">", 1.0), (">", 0.0), False),  # bounds on one side leave values
]


@pytest.mark.parametrize("check,declared,apart", BOUNDS)
def test_a_declared_bound_shadows_a_check_on_the_other_side(check, declared, apart) -> None:
    assert disjoint(*check, *declared) is apart


def test_pydantics_own_words_name_the_bound_that_shadows_the_check() -> None:
    facts = SimpleNamespace(direct=(Atom("--spec-config.num_tokens", "<=", 0),))
    said = (
        "1 validation error for SpecConfig\nnum_tokens\n  Input should be greater than 0"
        " [type=greater_than, input_value=0, input_type=int]"
    )
    why = declared_bound(facts, Outcome("raised", message=said))
    assert why.startswith("no command line reaches it: --spec-config.num_tokens is declared > 0")
    other = declared_bound(facts, Outcome("raised", message=said.replace("than 0", "than -5")))
    assert other == ""  # -4 passes the bound and fires the check
