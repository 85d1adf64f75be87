"""vLLM's checks run by the shipped spec (profiles/vllm.toml): a project of our own laid out
like vLLM (tests/verify_fixture_vllm.py), parsed by its own FlexibleArgumentParser, EngineArgs
built from the Namespace, create_engine_config as the phase; pydantic for real, the check's
own error reported from inside pydantic's ValidationError. The slow test runs the real vLLM
history when its mirror is on the machine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kverr.verify.harness import Harness, Target
from kverr.verify.judge import Expect, fires, passes
from kverr.verify.spec import spec_for
from verify_fixture_vllm import ARGS, CACHE, MODEL, VLLM, line_of, vllm_repo

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


def test_a_build_verifies_fixes_in_vllms_words(project, tmp_path: Path) -> None:
    from kverr.pipeline import build

    repo, sha = project
    res = build(out=tmp_path / "ds", git_repo=repo, profile="vllm", revs=["HEAD"],
                repo_name="o/v", verify=True)  # fmt: skip
    recs = [json.loads(line)["record"] for line in (tmp_path / "ds" / "records.jsonl").open()]
    by_msg = {r["errorMessage"][:20]: r for r in recs if r["kind"] in ("raise", "assert")}
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
