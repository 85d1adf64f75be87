"""The verify spec and profiles are data: SGLang's TOML loads, inheritance works, a bad table
gets a one-line error; the step planner finds the step that reaches a function."""

from __future__ import annotations

import pytest
from kverr.verify.sandbox.steps import plan_steps
from kverr.verify.spec import VerifySpec, spec_for
from verify_fixture import ARGS, SERVER_ARGS, TABLE, fake_spec, line_of

from kverr.errors import SourceError


def test_sglang_spec_loads_with_its_platforms() -> None:
    spec = spec_for()
    assert spec.main_path == "python/sglang/srt/server_args.py"
    assert spec.platform().name == "cuda-sm90"
    assert {"cuda-sm90", "cuda-sm100", "rocm-mi300"} <= set(spec.platforms)
    sm100 = spec.platform("cuda-sm100")
    assert sm100.probes["get_device_sm()"] == 100
    assert sm100.probes["is_flashinfer_available()"] is True  # inherited from cuda-sm90
    assert sm100.probes["is_in_ci()"] is False  # inherited from base, two levels up
    assert "aiter" in sm100.absent_packages
    assert spec.model().objects["hf_config"]["architectures"] == ["LlamaForCausalLM"]


def test_unknown_platform_and_broken_tables_are_one_line_errors() -> None:
    with pytest.raises(SourceError, match="unknown platform profile 'tpu'.*cuda-sm100"):
        spec_for().platform("tpu")
    broken = {**TABLE, "verify": {k: v for k, v in TABLE["verify"].items() if k != "phases"}}
    with pytest.raises(SourceError, match="no validation phases; add \\[extract\\] phases"):
        VerifySpec.from_table(broken)


@pytest.mark.parametrize(
    ("function", "needle", "step"),
    [
        ("ServerArgs._handle_ssl", "", "self._handle_ssl()"),
        ("ServerArgs._handle_parallel", "", "self._handle_parallel()"),
        (
            "ServerArgs.check_server_args",
            "assert self.tp_size <= 8",
            'assert self.tp_size <= 8, "tp_size must be at most 8"',
        ),
        # A statement of the phase method itself stops at that statement.
        (
            "ServerArgs.__post_init__",
            'if self.model_path == "dummy"',
            'if self.model_path == "dummy":',
        ),
        ("PortArgs.init_new", "", None),
    ],
)
def test_the_first_step_reaching_a_function(function: str, needle: str, step: str | None) -> None:
    spec = fake_spec()
    plan = plan_steps({ARGS: SERVER_ARGS}, ARGS, spec.args_class, spec.phases)
    assert plan.phases == ("__post_init__", "check_server_args")
    found = plan.stop_for((ARGS, function), line_of(needle) if needle else 0)
    assert (found.text if found else None) == step
