"""vLLM's checks run by the shipped spec (profiles/vllm.toml): a project of our own laid out
like vLLM (tests/verify_fixture_vllm.py), parsed by its own FlexibleArgumentParser, EngineArgs
built from the Namespace, create_engine_config as the phase; pydantic for real, the check's
own error reported from inside pydantic's ValidationError. The slow test runs the real vLLM
history when its mirror is on the machine."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from kverr.verify.harness import Harness, Target
from kverr.verify.spec import spec_for
from kverr.verify.verdict import REPORT, Expect, fires, passes
from verify_fixture_vllm import ARGS, CACHE, FILES, MODEL, VLLM, line_of, vllm_repo

from kverr.profile import load_profile

pytestmark = pytest.mark.sandbox  # runs a revision's code (tests/conftest.py)

MIRROR = Path(__file__).resolve().parents[2] / ".mirror" / "local-inference-lab+vllm" / "repo"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    g, sha = vllm_repo(tmp_path_factory.mktemp("vllm") / "repo")
    return g.root, sha


@pytest.fixture(scope="module")
def harness(project, tmp_path_factory):
    repo, sha = project
    spec = spec_for(load_profile("vllm"))
    work = tmp_path_factory.mktemp("work")
    with Harness(spec, repo=str(repo), sha=sha, workdir=work, timeout=10.0) as h:
        yield h


def at(path: str, function: str, needle: str) -> tuple[Target, Expect]:
    line = line_of(path, needle, after=f"def {function.rsplit('.', 1)[-1]}(")
    end = line + 3
    return Target(path, function, line, end), Expect("raise", "ValueError", "", path, line, end)


MAX_LEN = at(MODEL, "ModelConfig.__post_init__", "raise ValueError(")
HEADS = at(MODEL, "ModelConfig.verify_with_parallel_config", "raise ValueError(")
UTILIZATION = at(CACHE, "CacheConfig._check_utilization", "raise ValueError(")


def test_the_revision_parses_with_its_own_parser(harness: Harness) -> None:
    harness.run([], {}, MAX_LEN[0])
    assert harness.info["ready"] is True, harness.info
    assert harness.info["phases"] == ["__post_init__", "create_engine_config"]
    options = harness.info["options"]
    assert options["-tp"]["dest"] == "tensor_parallel_size"
    # the project's parser takes underscores, as `vllm serve` does
    out = harness.run(["--max_model_len", "65536"], {}, MAX_LEN[0])
    assert out.status == "raised" and fires(out, MAX_LEN[1]), out


def test_a_check_inside_pydantic_is_reported_as_its_own_error(harness: Harness) -> None:
    target, expect = MAX_LEN
    before = harness.run(["--max-model-len", "65536"], {}, target)
    # pydantic wraps the ValueError in a ValidationError; the run names the check's own
    assert before.exc_class == "ValueError" and before.line == target.line, before
    assert before.message.startswith("User-specified max_model_len (65536) is greater than")
    assert "32768" in before.message  # the dense model profile's max_position_embeddings
    assert fires(before, expect)
    after = harness.run(["--max-model-len", "32768"], {}, target)
    assert passes(after, expect), after
    # the environment variable the check reads is the real one of the run
    allowed = harness.run(
        ["--max-model-len", "65536"], {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"}, target
    )
    assert allowed.status == "passed"


def test_a_verify_method_called_by_another_config_is_reached(harness: Harness) -> None:
    target, expect = HEADS
    before = harness.run(["-tp", "3"], {}, target)
    assert fires(before, expect), before
    assert "(28) must be divisible by tensor parallel size (3)" in before.message
    assert passes(harness.run(["-tp", "4"], {}, target), expect)
    # the platform profile's eight GPUs: a larger world is another check's error
    out = harness.run(["-tp", "14"], {}, target)
    assert out.status == "raised" and "World size (14)" in out.message


def test_a_field_validator_and_a_json_option_checked_while_parsing(harness: Harness) -> None:
    target, expect = UTILIZATION
    assert fires(harness.run(["--gpu-memory-utilization", "1.5"], {}, target), expect)
    assert passes(harness.run(["--gpu-memory-utilization", "0.9"], {}, target), expect)
    # a config the parser builds from JSON: its validator's error, not argparse's wording
    line = line_of("vllm/config/speculative.py", "raise ValueError(")
    spec = Target("vllm/config/speculative.py", "SpeculativeConfig._check_tokens", line, line)
    out = harness.run(["--speculative-config.method=ngram"], {}, spec)
    assert out.status == "raised" and out.line == line, out
    assert out.message == "num_speculative_tokens must be set for the ngram method."
    ok = ["--speculative-config.method=ngram", "--speculative-config.num_speculative_tokens=3"]
    assert harness.run(ok, {}, spec).status == "passed"


@pytest.fixture(scope="module")
def built(project, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, dict, list]:
    """The fixture project built with --verify: the result, its raise/assert records by the
    first 20 characters of their message, and all of them."""
    from kverr.pipeline import BuildSpec, GitSource, build

    repo, sha = project
    out = tmp_path_factory.mktemp("built") / "ds"
    res = build(BuildSpec(out=out, source=GitSource(repo, revs=["HEAD"]), profile="vllm", repo_name="o/v", verify=True))  # fmt: skip
    recs = [json.loads(line)["record"] for line in (out / "records.jsonl").open()]
    checks = [r for r in recs if r["kind"] in ("raise", "assert")]
    return res, {r["errorMessage"][:20]: r for r in checks}, checks


def _fix(record: dict) -> tuple[str, str]:
    assert record["verification"]["status"] == "verified", record["verification"]
    before, after = record["exampleFix"].split("\n")[1::2]
    return before, after


def test_a_build_verifies_fixes_in_vllms_words(built) -> None:
    res, by_msg, _ = built
    world = by_msg["World size ({self.wo"]
    assert world["verification"]["status"] == "verified", world["verification"]
    before, after = world["exampleFix"].split("\n")[1::2]
    assert before == "vllm serve MODEL --tensor-parallel-size 16"
    assert after.startswith("vllm serve MODEL --tensor-parallel-size ")
    # a JSON option's field, in the dotted form this revision's own parser reads
    spec = by_msg["num_speculative_tokens"[:20]]
    assert spec["verification"]["status"] == "verified", spec["verification"]
    assert "--speculative-config.method ngram" in spec["exampleFix"]
    assert res.verify.verified_newest >= 3, res.verify.to_dict()
    assert VLLM and ARGS  # the files the records come from are the fixture's own


def test_a_config_method_that_tests_a_field_is_reached_through_that_field(built) -> None:
    # `speculative_config.use_eagle()` returns `self.method in ("eagle", "eagle3")`: the
    # launch sets the method, and the draft config built over a stubbed PretrainedConfig
    # takes its keyword arguments on the way
    before, after = _fix(_by(built, "EAGLE gets wrong logits"))
    assert (
        "--speculative-config.method eagle" in before and "--enable-scheduler-fast-path" in before
    )
    assert "--speculative-config.method eagle" in after
    assert "--enable-scheduler-fast-path" not in after


def test_a_value_the_message_lists_as_valid_replaces_the_refused_one(built) -> None:
    # `isinstance(value, str)` for a JSON option's field: a word its parser passes on as
    # text; then a mode the message names as valid
    before, after = _fix(_by(built, "Invalid compilation mode"))
    assert before == "vllm serve MODEL --compilation-config.mode other"
    assert after == "vllm serve MODEL --compilation-config.mode NONE"


def test_a_launch_path_example_carries_what_the_argument_checks_require(built) -> None:
    # the worker's check runs as the server starts: unverified, but its example's lines go
    # through every argument check, and the before gets the profiler record_shapes needs
    rec = _by(built, "Recording shapes needs")
    assert rec["scope"] == "launch-path" and rec["verification"]["status"] == "unverified"
    assert "carries what this release's argument checks require" in rec["verification"]["reason"]
    before, after = rec["exampleFix"].split("\n")[1::2]
    assert (
        "--profiler-config.record_shapes" in before and "--profiler-config.profiler torch" in before
    )
    assert "--profiler-config.record_shapes" not in after


@pytest.mark.parametrize(
    ("words", "option"),
    [
        # its before line reaches a platform question no probe answers
        ("Pinning CPUs needs", "--cpu-affinity"),
        # ... or a stand-in's TypeError that no check of the revision raises
        ("Masking CPUs needs", "--cpu-mask"),
    ],
)
def test_a_launch_path_example_the_argument_checks_cannot_judge_is_kept_as_it_is(
    built, words: str, option: str
) -> None:
    # neither is an error of the launch: the example stays, and the reason says no more
    # than a launch-path check's
    rec = _by(built, words)
    assert rec["exampleFix"] and option in rec["exampleFix"]
    assert rec["verification"]["reason"].endswith("so no run before a launch can confirm the fix")


def _by(built, words: str) -> dict:
    return next(r for r in built[2] if words in r["errorMessage"])


def test_a_limit_the_message_prints_beats_the_variable_that_lifts_it(built) -> None:
    """The check names VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 and warns against it: the fix is the
    derived length the message printed, not the environment variable."""
    before, after = _fix(built[1]["User-specified max_m"])
    assert before == "vllm serve MODEL --max-model-len 65536"
    assert after == "vllm serve MODEL --max-model-len 32768"
    assert built[1]["User-specified max_m"]["solutions"][0] == "Launch with --max-model-len 32768"


def test_a_value_derived_from_options_is_solved_by_those_options(built) -> None:
    """`parallel_config.world_size_across_dp` is a property over the parallel sizes: the
    search reads it as what it derives from, and reaches the check with one of them."""
    before, after = _fix(built[1]["mm_tensor_ipc='torch"])
    assert before.startswith("vllm serve MODEL --mm-tensor-ipc torch_shm --")
    assert re.search(r"--(data|tensor|pipeline)-parallel-size [2-8]\b", before), before
    assert "-1" not in after and " 0" not in after  # a size is never "fixed" to nothing


def test_an_environment_switch_read_inside_a_property_is_varied(built) -> None:
    """`cache_config.uses_pinned_pool` is a property that returns `envs.VLLM_PINNED_POOL`:
    the variable it reads is one the search sets, so the check is reached and fixed."""
    before, after = _fix(built[1]["A pinned host pool l"])
    assert before == "VLLM_PINNED_POOL=1 vllm serve MODEL", before
    assert after == before + " --gpu-memory-utilization 0.5", after


def test_a_guard_that_assigns_its_test_is_watched(built) -> None:
    """`if method := self.method:` is an expression only in parentheses: the search still
    watches it, and sets the method that reaches the check inside."""
    before, after = _fix(built[1]["A draft method needs"])
    assert "--speculative-config.num_speculative_tokens 0" in before, before
    assert "--speculative-config.method " in before, before
    assert after != before


def test_a_copied_json_options_field_is_that_options_field(built) -> None:
    """`copy.deepcopy(self.profiler_config).trace_steps` holds --profiler-config.trace_steps,
    not the top-level option of the same name the check compares it with."""
    before, after = _fix(built[1]["trace_steps and prof"])
    assert before == "vllm serve MODEL --trace-steps 1 --profiler-config.trace_steps 1", before
    assert after == "vllm serve MODEL --profiler-config.trace_steps 1", after


def test_a_switch_the_code_turns_on_by_default_is_turned_off_by_its_negative(built) -> None:
    """--enable-chunked-prefill defaults to None (the code picks on): off is
    --no-enable-chunked-prefill, which the fix keeps (turning it back on would undo the
    user's own choice)."""
    (smaller,) = [r for r in built[2] if "is smaller than" in r["errorMessage"]]
    before, after = _fix(smaller)
    assert "--no-enable-chunked-prefill" in before
    assert "--no-enable-chunked-prefill" in after and "--enable-chunked-prefill" not in after


def test_a_json_options_fields_get_values_of_their_kind(built) -> None:
    """ProfilerConfig is found in EngineArgs' annotations at run time and built while the
    command line is parsed: its validator is reached, its bool field takes `true`, and a check
    of a value the Literal rules out is reached by no command line."""
    before, after = _fix(built[1]["record_shapes is onl"])
    assert "--profiler-config.record_shapes true" in before
    assert "--profiler-config.profiler torch" in after
    unknown = built[1]["Unknown profiler {se"]["verification"]
    assert unknown["status"] == "not-applicable", unknown
    assert "the parser's choices torch, cuda" in unknown["reason"]


def test_a_check_of_a_json_option_built_while_parsing_is_reached_through_its_field(
    built,
) -> None:
    """ProfilerConfig's default is built with the parser, before any step is watched: a check
    over an item of its list field runs where the watch sees it only once the launch gives
    that field, and the watch then finds the item that fires it."""
    before, after = _fix(built[1]["Profiler activity '{"])
    assert before.startswith("vllm serve MODEL --profiler-config.activities '[")
    assert after.startswith("vllm serve MODEL --profiler-config.activities '[")
    assert before != after


def test_a_check_of_encoder_only_models_is_reached_on_that_model_profile(built) -> None:
    """No option makes `model_type == "bert"` hold: the search runs the launch on the model
    profiles in turn, and the encoder-only one (BertModel) reaches the check."""
    rec = built[1]["Pipeline parallelism"]
    before, after = _fix(rec)
    assert rec["verification"]["model"] == "encoder"
    assert before == "vllm serve MODEL --pipeline-parallel-size 2"
    assert after == "vllm serve MODEL --pipeline-parallel-size 1"


def test_a_value_the_code_takes_from_the_environment_is_solved_there(built) -> None:
    """`else: self.data_parallel_size = envs.VLLM_DP_SIZE`, then the check: the test reads
    the environment, not the option; and "set --data-parallel-size to 1 or less", which the
    before line already did, is refuted by that line's own run."""
    rec = built[1]["Offline data parallel mode"[:20]]
    before, after = _fix(rec)
    assert before.startswith("VLLM_DP_SIZE=2 ")
    assert "Set --data-parallel-size to 1 or less" not in rec["solutions"], rec["solutions"]


def test_a_static_helpers_parameter_is_the_field_its_caller_passes(built) -> None:
    """`ProfilerConfig._check_rates(self.sample_count, self.sample_rates)` (a static method
    called through its class): the helper's frame holds the fields as `n` and `rates`, a list
    of numbers, which the watch varies as --profiler-config.sample_rates."""
    before, after = _fix(built[1]["sample_rates entries"])
    assert before == "vllm serve MODEL --profiler-config.sample_rates '[2]'"
    assert after == "vllm serve MODEL --profiler-config.sample_rates '[1]'"
    # two fields at once, the path's earlier checks kept passing: a list as long as the
    # count, its items rising (the frame holds both under its parameters' names)
    before, after = _fix(built[1]["sample_rates must be"])
    assert "--profiler-config.sample_count 2" in before
    assert "--profiler-config.sample_count 2" in after and before != after


def test_a_path_to_write_to_is_fixed_by_one_in_an_existing_directory(built) -> None:
    # `Path(self.trace_save_path).parent.is_dir()`: the file is written later, its directory
    # must be there; the working directory is
    before, after = _fix(_by(built, "Trace save directory not found"))
    assert "--profiler-config.trace_save_path /no/such/" in before
    assert "--profiler-config.trace_save_path ./" in after


def test_a_fix_satisfies_the_next_check_which_the_before_carries_too(built) -> None:
    # `--pipeline-parallel-size 1` then fails the check after it, `tensor_parallel_size *
    # data_parallel_size <= 1`, which no candidate fix names and its own guard solves; the
    # before carries that too, so the two lines differ by the fix alone
    before, after = _fix(_by(built, "EPLB does not run with pipeline"))
    assert before == (
        "vllm serve MODEL --enable-eplb --pipeline-parallel-size 2 --tensor-parallel-size 2"
    )
    assert after == (
        "vllm serve MODEL --enable-eplb --pipeline-parallel-size 1 --tensor-parallel-size 2"
    )


def test_a_check_of_an_option_built_only_when_given_is_reached_by_giving_it_empty(built) -> None:
    # `--observability-config` stays a mapping until a helper of the engine builds
    # ObservabilityConfig from it, only when given: `{}` builds it with every field unset,
    # which the check needs; the fix sets the field
    before, after = _fix(_by(built, "needs otlp_traces_endpoint"))
    assert before == "vllm serve MODEL --observability-config '{}'"
    assert after.startswith("vllm serve MODEL --observability-config.otlp_traces_endpoint ")


def test_a_list_options_validator_is_solved_through_its_value(built) -> None:
    """A classmethod field validator holds the option as `value`, its items numbers."""
    before, after = _fix(built[1]["numa_bind_nodes must"])
    assert before == "vllm serve MODEL --numa-bind-nodes '-1'"
    assert after == "vllm serve MODEL --numa-bind-nodes 1"


def test_a_nested_json_field_read_off_another_config_is_an_option(built) -> None:
    """VllmConfig reads `self.compilation_config.pass_config.enable_sp`: a field of a config
    inside the JSON option, which the parser takes as `--compilation-config.pass_config.x`."""
    before, after = _fix(built[1]["Sequence parallelism"])
    assert before == "vllm serve MODEL --compilation-config.pass_config.enable_sp true"
    assert after == before + " --tensor-parallel-size 2"


def test_a_config_field_filled_from_an_option_of_another_name_is_that_option(built) -> None:
    """`scheduler_config.use_fast_path` is filled from --enable-scheduler-fast-path (whose
    default is that field): the check is reached and fixed through the option."""
    before, after = _fix(built[1]["The scheduler's fast"])
    assert "--enable-scheduler-fast-path" in before and "--pipeline-parallel-size" in before
    assert after != before


def test_a_check_of_an_option_the_code_always_fills_in_is_not_applicable(built) -> None:
    filled = [r for r in built[2] if r["errorMessage"].endswith("by this point")]
    (rec,) = filled
    assert rec["verification"]["status"] == "not-applicable", rec["verification"]
    assert "fills in --max-num-batched-tokens before this check" in rec["verification"]["reason"]
    assert "(it held 2048 here)" in rec["verification"]["reason"]
    # and the record no longer tells a user to pass the option: no launch fires it
    assert rec["triggerScenarios"].startswith("No command line fires this check (the code fills")
    assert rec["solutions"] == [REPORT] and rec["preventionTips"] == []


def test_a_check_building_the_parser_runs_is_not_applicable(built) -> None:
    """_choices_of runs while add_cli_args builds the parser, over a Literal of the code's
    own: no command line reaches it, and the record says so."""
    v = built[1]["All options must be "]["verification"]
    assert v["status"] == "not-applicable", v
    assert v["reason"].startswith("_choices_of runs while `vllm serve` builds its command-line")


def test_a_check_only_the_running_engine_reaches_says_who_calls_it(built) -> None:
    """Building ProfilerConfig from --profiler-config runs its validators, not its other
    methods: trace_dir is called by the engine once it starts, which the reason names."""
    v = built[1]["Profiling is not ena"]["verification"]
    assert v["status"] == "not-applicable", v
    assert "ProfilerConfig.trace_dir is not reached from" in v["reason"]
    assert (
        "vLLM calls it only outside the checks `vllm serve` runs on its arguments"
        " (from vllm/v1/engine/profiling.py)" in v["reason"]
    )


def test_a_check_on_an_argument_the_launch_command_passes_is_not_called_unreachable(
    built,
) -> None:
    """`headless` is create_engine_config's own argument, which `vllm serve --headless`
    passes: trying every value of the option proves nothing, the record says why."""
    v = built[1]["data_parallel_hybrid"]["verification"]
    assert v["status"] == "unverified", v
    assert "`headless`" in v["reason"] and "headless=False" in v["reason"]


@pytest.mark.slow
def test_the_real_history_runs_its_own_checks(tmp_path: Path) -> None:
    if not (MIRROR / "HEAD").exists() and not (MIRROR / ".git").exists():
        pytest.skip(f"the vLLM mirror is not at {MIRROR}")
    spec = spec_for(load_profile("vllm"))
    path = "vllm/config/model.py"
    target = Target(path, "_get_and_verify_max_len", 0, until="end")
    with Harness(spec, repo=str(MIRROR), sha="HEAD", workdir=tmp_path, timeout=30.0) as h:
        out = h.run(["--max-model-len", "65536"], {}, target)
        assert h.info["ready"] is True, h.info
        assert out.status == "raised" and out.exc_class == "ValueError", out
        assert out.file == path and "User-specified max_model_len (65536)" in out.message
        assert h.run(["--max-model-len", "32768"], {}, target).status == "passed"


def test_a_fix_that_passes_as_it_is_beats_one_that_needs_more(built) -> None:
    # 64, the number the message names, divides the window but then fails the long-step
    # check, which would have it refined; a step that passes as it is comes first
    before, after = _fix(_by(built, "eplb_step must divide"))
    assert before == "vllm serve MODEL --enable-eplb --data-parallel-size 2 --eplb-step 3"
    assert after == "vllm serve MODEL --enable-eplb --data-parallel-size 2 --eplb-step 1"


def test_a_json_options_list_field_is_emptied_as_json_and_given_the_items_its_check_wants(
    built,
) -> None:
    """An empty list is `[]` for a JSON option's field (leaving it out is its default, None);
    a list a check looks for every item of, in a method of the same config, is the collection
    the running code holds (`ATTENTION_OPS`, built from other words); another config reading
    the list field watches it as the list it holds."""
    before, after = _fix(_by(built, "capture_sizes should contain"))
    assert before == "vllm serve MODEL --compilation-config.capture_sizes '[]'", before
    before, after = _fix(_by(built, "attention ops should not be split"))
    assert "--compilation-config.pass_config.enable_sp true" in before, before
    assert "vllm::attention vllm::mla_attention" in before or "vllm::mla_attention" in before
    # ... and a list field another config reads is watched there as a list
    before, after = _fix(_by(built, "An empty splitting_ops list"))
    assert before == "vllm serve MODEL --compilation-config.splitting_ops '[]'", before


def test_a_name_looked_up_in_a_registry_filled_at_import_is_one_registered(built) -> None:
    # the registry module runs for real: its module-level registrations fill the lookup, so
    # "Unsupported connector type" is fixed by a registered name, and the check past it, with
    # its variable and its early exits, is reached and fixed by the message's own way out
    unsupported = _by(built, "Unsupported connector type")
    before, after = _fix(unsupported)
    assert "--kv-connector KV_CONNECTOR" in before
    assert "--kv-connector PinnedConnector" in after or "--kv-connector SharedConnector" in after
    pinned = _by(built, "pins memory expandable segments remap")
    before, after = _fix(pinned)
    assert before.startswith("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True vllm serve MODEL")
    assert after == before + " --enable-sleep-mode"


def test_a_registry_the_sandbox_cannot_run_is_read_like_any_module(tmp_path: Path) -> None:
    # a revision whose registry fails to load (built for another platform) still loads: the
    # registry is read lazily, as every module the spec does not run, and the checks run
    g, _ = vllm_repo(tmp_path / "repo")
    factory = "vllm/distributed/kv_transfer/kv_connector/factory.py"
    broken = 'raise ImportError("built for another platform")\n' + FILES[factory]
    sha = g.commit("a registry that does not load here", {factory: broken})
    target, expect = MAX_LEN
    (tmp_path / "w").mkdir()
    with Harness(spec_for(load_profile("vllm")), repo=str(g.root), sha=sha, workdir=tmp_path / "w", timeout=10.0) as h:  # fmt: skip
        out = h.run(["--max-model-len", "65536"], {}, target)
        assert h.info["ready"] is True, h.info
        assert fires(out, expect), out


def test_a_check_of_a_quantized_checkpoint_is_reached_on_one(built) -> None:
    # the model's own config names the method: --quantization must agree, or be left out
    record = _by(built, "The checkpoint is quantized with")
    before, after = _fix(record)
    assert before == "vllm serve MODEL --quantization awq"
    assert after in ("vllm serve MODEL", "vllm serve MODEL --quantization fp8")
    assert record["verification"]["model"] == "fp8"  # the model profile it ran on
