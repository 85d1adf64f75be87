"""A check that reads a helper's parameter names the flag its callers pass, or the flag the
parameter's own name spells: the engine-arguments layout of a vLLM-style project (a flag
class, config classes whose fields the flags fill, helpers beside them), in modules we wrote."""

from __future__ import annotations

from textwrap import dedent

from kverr.extractor import extract_files

from kverr.ftypes import SourceFile
from kverr.profile import load_profile

RULES = load_profile("vllm").extract

ARGS = """
from dataclasses import dataclass

from pkg.config import CacheConfig, ModelConfig, RunConfig


@dataclass
class EngineArgs:
    max_model_len: int | None = ModelConfig.max_model_len
    dtype: str = ModelConfig.dtype
    block_cache_dtype: str = CacheConfig.cache_dtype
    ignore_patterns: list[str] = ModelConfig.ignore_patterns
    tensor_parallel_size: int = 1
    run_config: dict | None = None
    speculative_config: dict | None = None
    fast_ops: list[str] = ModelConfig.fast_ops

    def draft_for(self, model_config: ModelConfig) -> RunConfig | None:
        for stage in ("a", "b"):
            model_config = model_config or stage
        if self.run_config is None:
            return None
        return RunConfig()

    def create_engine_config(self):
        model_config = ModelConfig(max_model_len=self.max_model_len)
        draft = self.draft_for(model_config)
        if draft is not None and self.tensor_parallel_size > 8:
            raise ValueError("A draft cannot run that wide")
"""

CONFIG = """
import logging

from pydantic import field_validator

logger = logging.getLogger(__name__)


class RunConfig:
    stage_config: "StageConfig" = None
    depth: int = 1

    @property
    def deep(self) -> bool:
        return self.depth > 4


class StageConfig:
    fuse: bool = False


class CacheConfig:
    cache_dtype: str = "auto"

    @field_validator("cache_dtype", mode="after")
    @classmethod
    def _check(cls, value: str) -> str:
        if value.startswith("fp8"):
            logger.warning("Using %s to store the cache", value)
        return value


class ModelConfig:
    max_model_len: int = None
    dtype: str = "auto"
    ignore_patterns: list[str] = None
    fast_ops: list[str] = None

    def __post_init__(self):
        self.max_model_len = self.verify_len(self.max_model_len)
        _check_dtype(self.kind, self.dtype)
        self._pair(self.max_model_len, self.dtype)
        ModelConfig._bound(self.max_model_len)
        for op in self.fast_ops:
            if op[0] not in "+-":
                raise ValueError(f"Write {op!r} as +op or -op")
        assert not self.ops_listed(), "no fast op may be listed yet"
        self._either()
        if self.fast_ops:
            _unsupported(feature="Fast ops")

    @staticmethod
    def _bound(length: int):
        if length > 1 << 20:
            raise ValueError(f"A length of {length} is past the bound")

    def ops_listed(self) -> bool:
        "Whether any fast op is listed."
        return bool(self.fast_ops)

    def verify_with(self, run_config: "RunConfig"):
        if run_config.depth > 1:
            self._verify_depth()
            self._either()

    def _verify_depth(self):
        if not self._deep:
            raise ValueError("The model holds too few layers for the depth")

    def _either(self):
        if not self._fits:
            raise ValueError("The model does not fit either way")

    @staticmethod
    def _pair(length: int, kind: str):
        if kind == "int4":
            raise ValueError(f"No int4 pairing for {kind}")

    def verify_len(self, max_model_len: int):
        return _derive_len(self.limit, max_model_len=max_model_len)

    @field_validator("ignore_patterns", mode="after")
    @classmethod
    def _patterns(cls, patterns: list[str]) -> list[str]:
        if patterns:
            logger.info("Ignoring %s", patterns)
        return patterns


def _unsupported(feature: str):
    raise NotImplementedError(f"{feature} is not supported here")


def _derive_len(limit: int, max_model_len: int | None) -> int:
    if max_model_len > limit:
        raise ValueError(f"User-specified max_model_len ({max_model_len}) is over {limit}")
    return max_model_len


def _check_dtype(kind: str, dtype: str):
    torch_dtype = _TABLE[dtype]
    _refuse_half(kind, torch_dtype)


def _refuse_half(kind: str, wanted):
    if wanted == "float16":
        raise ValueError(f"The model kind {kind} does not support float16")


def split_sizes(parts: int, tensor_parallel_size: int):
    if parts % tensor_parallel_size:
        raise ValueError(f"{parts} parts cannot be split {tensor_parallel_size} ways")


def apply(config, overrides: dict):
    for key in overrides:
        if not hasattr(config, key):
            raise AttributeError(f"{type(config)} has no field {key}")


class Runner(RunConfig):
    pass


def staged(run_config: "RunConfig"):
    assert run_config.stage_config.fuse, "fusion needs the fuse stage"


class SpeculativeConfig:
    max_model_len: int = None
    target_model_config: ModelConfig = None  # the engine's own, handed over by the code

    def __post_init__(self):
        if self.max_model_len > self.target_model_config.max_model_len:
            raise ValueError("The draft cannot run longer than its target")
        if "llama" not in self.target_model_config.hf_config.model_type:
            raise ValueError("The draft needs a llama target")


class WholeConfig:
    model_config: ModelConfig = None
    run_config: RunConfig = None

    def _unready(self) -> list[str]:
        "The features the new runner lacks."
        missing: list[str] = []
        model_config = self.model_config
        if model_config is not None and model_config.fast_ops:
            missing.append("fast ops")
        for stage in ("a", "b"):
            if self.run_config.depth > 2:
                missing.append(f"deep runs at {stage}")
        return missing

    def __post_init__(self):
        if self.run_config.deep and self.run_config.depth % 2:
            raise ValueError("A deep run takes an even depth")
        missing = self._unready()
        if missing:
            raise ValueError(f"The new runner does not yet support: {', '.join(missing)}")
"""


def _config_sites() -> tuple:
    files = [
        SourceFile("pkg/engine/arg_utils.py", dedent(ARGS), "a" * 40),
        SourceFile("pkg/config.py", dedent(CONFIG), "b" * 40),
    ]
    _, config = extract_files(files, rules=RULES)
    return config.sites


def _sites() -> dict[str, tuple[str, ...]]:
    return {s.template.display(): s.flags for s in _config_sites()}


def _all_sites() -> tuple:
    files = [
        SourceFile("pkg/engine/arg_utils.py", dedent(ARGS), "a" * 40),
        SourceFile("pkg/config.py", dedent(CONFIG), "b" * 40),
    ]
    return tuple(s for fx in extract_files(files, rules=RULES) for s in fx.sites)


def _flags_of(words: str) -> tuple[str, ...]:
    (hit,) = [flags for display, flags in _sites().items() if words in display]
    return hit


def test_a_parameter_handed_down_two_calls_names_the_flag_its_first_caller_reads() -> None:
    assert _flags_of("User-specified max_model_len") == ("--max-model-len",)


def test_a_local_made_from_a_parameter_carries_that_parameter_s_flag() -> None:
    assert _flags_of("does not support float16") == ("--dtype",)


def test_a_field_validator_s_value_is_the_field_it_validates() -> None:
    assert _flags_of("to store the cache") == ("--block-cache-dtype",)
    assert _flags_of("Ignoring") == ("--ignore-patterns",)


def test_a_helper_no_caller_in_the_file_calls_is_read_by_its_parameter_names() -> None:
    assert _flags_of("ways") == ("--tensor-parallel-size",)


def test_a_one_word_parameter_names_no_flag() -> None:
    assert _flags_of("has no field") == ()


def test_a_config_held_by_a_config_is_set_through_the_outer_json_option() -> None:
    assert _flags_of("fusion needs") == ("--run-config.stage_config.fuse",)


def test_a_staticmethod_called_through_self_binds_its_first_parameter_too() -> None:
    assert _flags_of("No int4 pairing") == ("--dtype",)


def test_a_staticmethod_called_through_its_class_binds_its_parameters() -> None:
    assert _flags_of("past the bound") == ("--max-model-len",)


def test_a_loop_s_variable_is_an_item_of_the_flag_it_goes_over() -> None:
    assert _flags_of("as +op or -op") == ("--fast-ops",)
    (site,) = [s for s in _config_sites() if "as +op or -op" in s.template.display()]
    assert [(b.name, b.kind, b.flags) for b in site.bindings] == [("op", "item", ("--fast-ops",))]


def test_a_method_that_only_tests_fields_reads_those_fields() -> None:
    assert _flags_of("no fast op may be listed") == ("--fast-ops",)


def test_a_check_reached_only_under_a_test_of_a_flag_names_that_flag() -> None:
    assert _flags_of("too few layers") == ("--run-config.depth",)
    # called under that test and under none: any launch reaches it
    assert _flags_of("does not fit either way") == ()
    assert _flags_of("is not supported here") == ("--fast-ops",)  # a function of the module


def test_a_list_a_method_fills_under_tests_of_fields_reads_those_fields() -> None:
    # each item is there because of the tests around its append: a local config object's
    # field, and a field of a config the class holds, read whole
    assert _flags_of("does not yet support") == ("--fast-ops", "--run-config.depth")


def test_a_config_field_the_code_fills_reads_as_the_config_it_is_filled_with() -> None:
    # the profile's code_fills: SpeculativeConfig's target_model_config is the engine's
    assert _flags_of("cannot run longer") == (
        "--speculative-config.max_model_len",
        "--max-model-len",
    )


def test_a_config_the_code_fills_is_no_option_where_no_field_of_it_is_one() -> None:
    # the target model's own config (`hf_config.model_type`) is what the model is, not an
    # option: `--speculative-config.target_model_config` would be refused as a key
    assert _flags_of("needs a llama target") == ()


def test_a_property_of_a_config_is_no_key_of_its_json_option() -> None:
    # `run_config.deep` is computed from the depth: `--run-config.deep` would be refused
    assert _flags_of("even depth") == ("--run-config.depth",)


def test_a_method_that_returns_none_unless_a_field_is_set_reads_that_field() -> None:
    # `draft_for(model_config)` is None exactly when --run-config is unset, whatever it is passed
    (site,) = [s for s in _all_sites() if "A draft cannot" in s.template.display()]
    assert site.flags == ("--tensor-parallel-size", "--run-config")
