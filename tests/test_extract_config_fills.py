"""Which flag a config class's check reads when the flag class's defaults do not name the config
fields (the older engine-arguments layout): the keywords the flag class passes to each config's
constructor, a field's own name, or the JSON option of the config that holds it; for a check
that reads none, the flags its message names, else the option whose declared type is its
class; in modules we wrote. And a guard's test text keeps no backslash line continuation."""

from __future__ import annotations

from textwrap import dedent

import pytest
from kverr.extractor import extract_files
from kverr.extractor.templates import normalise

from kverr.ftypes import SourceFile
from kverr.profile import load_profile

RULES = load_profile("vllm").extract

ARGS = """
from dataclasses import dataclass

from pkg.config import BatchConfig, MemoryConfig, QueueConfig, WeightsConfig


@dataclass
class EngineArgs:
    weights: str = "w"
    pool_dtype: str = "auto"
    batch_limit: int = 8
    draft_config: dict | None = None
    tune_config: dict | None = None
    strict_mode: bool = False
    merge_inputs: bool = False
    queue_depth: int = 4
    scan_backend: ScanBackend = ScanBackend.FAST
    layout_config: dict | LayoutSpec | None = None

    def create_engine_config(self):
        weights_config = WeightsConfig(weights=self.weights, merge_inputs=self.merge_inputs)
        memory_config = MemoryConfig(dtype=self.pool_dtype, device=current_device())
        batch_config = BatchConfig(batch_limit=self.batch_limit, spare=2)
        queue_config = QueueConfig(self.queue_depth)
        return weights_config, memory_config, batch_config, queue_config
"""

CONFIG = r"""
import logging

logger = logging.getLogger(__name__)


class WeightsConfig:
    weights: str = ""
    merge_inputs: bool = False

    def __post_init__(self):
        if self.merge_inputs and \
                not self.weights.endswith(".mm"):
            raise ValueError("input merging needs a multimodal checkpoint")


class MemoryConfig:
    dtype: str = "auto"
    device: str = "cpu"

    def __post_init__(self):
        if self.dtype == "fp4":
            raise ValueError("the pool cannot hold fp4")
        if self.device == "tpu":
            raise ValueError("no pool on this device")


class BatchConfig:
    batch_limit: int = 8
    spare: int = 1

    def __post_init__(self):
        if self.spare > self.batch_limit:
            raise ValueError("more spare slots than the batch holds")


class DraftConfig:
    weights: str = ""
    depth: int = 1

    def __post_init__(self):
        if not self.weights and self.depth > 1:
            raise ValueError("a deep draft needs weights of its own")


class LooseConfig:
    strict_mode: bool = False

    def check(self):
        if self.strict_mode:
            raise ValueError("strict mode is not available here")


class StepConfig:
    unroll: bool = False

    def __post_init__(self):
        if self.unroll:
            logger.warning("unrolling is experimental")


class TuneConfig:
    step_config: StepConfig = None


class QueueConfig:
    def __init__(self, queue_depth: int):
        self.queue_depth = queue_depth
        self.slots = queue_depth * 2
        self._verify()

    def _verify(self):
        if self.queue_depth < 1:
            raise ValueError("the queue needs a slot")
        if self.slots > 64:
            raise ValueError("too many queue slots")

    def verify_with(self, batch_config, limits):
        if self.queue_depth > batch_config.batch_limit:
            raise ValueError("the queue outgrows the batch")
        if limits.batch_limit > 2:
            raise ValueError("limits are not configs")


class _ScanMeta(EnumMeta):
    def __getitem__(cls, name):
        try:
            return super().__getitem__(name)
        except KeyError:
            raise ValueError(f"No member {name} here") from None


class ScanBackend(Enum, metaclass=_ScanMeta):
    FAST = "fast"


def _coerce_layout(v):
    if not isinstance(v, str):
        raise ValueError(f"a layout is a name, not {type(v).__name__}")


class LayoutSpec:
    rows: str | None = None

    @field_validator("rows", mode="before")
    @classmethod
    def _rows(cls, v):
        if v == "":
            raise ValueError("an empty layout")
        return _coerce_layout(v)


def _unused_helper(v):
    if v is None:
        raise ValueError("nothing to help with")


def check_architecture(arch):
    if arch == "Enc":
        raise ValueError("This model does not support `--strict-mode`.")
    if arch == "Dec":
        logger.warning("`batch_limit` is deprecated for this model; see `queue_depth`.")
    if arch == "Odd":
        raise ValueError("the model is odd")
"""


@pytest.fixture(scope="module")
def sites() -> dict:
    files = [
        SourceFile("pkg/engine/arg_utils.py", dedent(ARGS), "a" * 40),
        SourceFile("pkg/config.py", dedent(CONFIG), "b" * 40),
    ]
    _, config = extract_files(files, rules=RULES)
    return {s.template.display(): s for s in config.sites}


def _site(sites: dict, words: str):
    (hit,) = [s for display, s in sites.items() if words in display]
    return hit


@pytest.mark.parametrize(
    ("words", "flags"),
    [
        # the constructor keyword that takes the flag class's field of the same name ...
        ("input merging", ("--merge-inputs", "--weights")),
        # ... or of another name (dtype=self.pool_dtype)
        ("cannot hold fp4", ("--pool-dtype",)),
        # a keyword given no flag's value is no flag: the platform's device
        ("no pool on this device", ()),
        ("more spare slots", ("--batch-limit",)),
        # `weights` fills WeightsConfig: a draft's own weights are its JSON option's field
        ("a deep draft", ("--draft-config.weights", "--draft-config.depth")),
        # a config no constructor call or option names: the flag of the field's own name
        ("strict mode", ("--strict-mode",)),
        # a config held by a config with a JSON option: that option's dotted path
        ("unrolling", ("--tune-config.step_config.unroll",)),
        # a plain class, given its values by position: the fields its __init__ keeps as given
        ("needs a slot", ("--queue-depth",)),
        ("too many queue slots", ()),  # (computed from one)
        # an unannotated parameter named as a config view, in a config class, is that config
        ("outgrows the batch", ("--queue-depth", "--batch-limit")),
        ("limits are not configs", ()),
        # a check that reads no flag names those its message names: the way the user meets it
        ("does not support", ("--strict-mode",)),
        ("is deprecated for this model", ("--batch-limit", "--queue-depth")),
        ("the model is odd", ()),
        # a class an option's declared type names is that option's: an enum's lookup (through
        # the metaclass that makes it), a validator of its fields, a helper it calls
        ("No member", ("--scan-backend",)),
        ("an empty layout", ("--layout-config",)),
        ("a layout is a name", ("--layout-config",)),
        ("nothing to help with", ()),  # (a helper no such class calls)
    ],
)
def test_a_config_field_is_the_flag_the_flag_class_fills_it_from(sites, words, flags) -> None:
    assert _site(sites, words).flags == flags


def test_a_guard_keeps_no_backslash_continuation(sites) -> None:
    (guard,) = _site(sites, "input merging").guards
    assert "\\" not in guard.test
    assert " ".join(guard.test.split()) == guard.test


@pytest.mark.parametrize(
    ("source", "one_line"),
    [
        ("a and \\\n    b", "a and b"),
        ("a \\\n  and b \\\n  and c", "a and b and c"),
        ("x == '\\\\'\n  and y", "x == '\\\\' and y"),  # an escaped backslash stays
        ("f(a,  # why\n  b)", "f(a, b)"),
    ],
)
def test_normalise_joins_continued_lines(source, one_line) -> None:
    assert normalise(source) == one_line


HELD_ARGS = """
from dataclasses import dataclass

from pkg.config import OffloadConfig, UVAOffloadConfig


@dataclass
class EngineArgs:
    cpu_offload_gb: float = UVAOffloadConfig.cpu_offload_gb
    offload_mode: str = OffloadConfig.offload_mode
"""

HELD_CONFIG = """
class UVAOffloadConfig:
    cpu_offload_gb: float = 0


class OffloadConfig:
    offload_mode: str = "auto"
    uva: UVAOffloadConfig = None

    def __post_init__(self):
        if self.offload_mode == "none" and self.uva.cpu_offload_gb > 0:
            raise ValueError("offloading is off but a size is set")
"""

HELD_RUNNER = """
class Runner:
    def reload(self):
        if self.offload_config.uva.cpu_offload_gb > 0:
            raise ValueError("cannot reload weights offloaded to the host")
"""


def test_a_config_held_in_a_field_of_its_own_reads_as_the_flags_of_its_fields() -> None:
    """OffloadConfig.uva holds a UVAOffloadConfig (the profile's code_fills), whose field a flag
    class's default names: reads through it, in the config and in a model runner, are that
    flag."""
    files = [
        SourceFile("pkg/engine/arg_utils.py", dedent(HELD_ARGS), "a" * 40),
        SourceFile("pkg/config.py", dedent(HELD_CONFIG), "b" * 40),
        # (a file on the launch path: a model runner, which holds the configs as it likes)
        SourceFile("vllm/v1/worker/runner.py", dedent(HELD_RUNNER), "c" * 40),
    ]
    _, config, runner = extract_files(files, rules=RULES)
    flags = {s.template.display(): s.flags for s in (*config.sites, *runner.sites)}
    assert flags["offloading is off but a size is set"] == ("--offload-mode", "--cpu-offload-gb")
    assert flags["cannot reload weights offloaded to the host"] == ("--cpu-offload-gb",)
