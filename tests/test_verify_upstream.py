"""The harness on the real SGLang history (slow; skipped when the mirror is absent): the
issue's own examples at the newest upstream commit, each judged by that revision's check."""

from __future__ import annotations

from pathlib import Path

import pytest
from kverr.extractor import extract_files, sources
from kverr.records import build_records
from kverr.verify.spec import spec_for
from kverr.verify.step import Session, verify_revision

from kverr.profile import load_profile

MIRROR = Path("/work/.mirror/Clarit-AI+Engram/repo")
NEWEST = "3d3a32c0b9f50962ccdddadda02c52a59e45bbc8"

pytestmark = [pytest.mark.slow, pytest.mark.sandbox]


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[dict, object]]:
    if not (MIRROR / "objects").is_dir():
        pytest.skip(f"{MIRROR} is not present")
    rev, files = sources.read_git(MIRROR, NEWEST, load_profile().files)
    exts = extract_files(files)
    records = build_records(exts, rev)
    wanted = [r for r in records if r["kind"] in ("raise", "assert")]
    session = Session(spec_for(), str(MIRROR), tmp_path_factory.mktemp("up"), cache={})
    out = verify_revision(exts, wanted, session, rev, files=[(f.path, f.blob) for f in files])
    session.close()
    return {r["id"]: (r, out[r["id"]]) for r in wanted}


def find(verdicts, prefix: str):
    (hit,) = [v for r, v in verdicts.values() if r["errorMessage"].startswith(prefix)]
    return hit


@pytest.mark.parametrize(
    ("prefix", "after"),
    [
        # "gives up with --moe-dp-size=1. It should say --tp-size 2 --moe-dp-size 2."
        ("tp_size must be divisible by moe_dp_size", "--moe-dp-size 2 --tp-size 2"),
        # "The fix should add --ssl-certfile."
        ("--ssl-keyfile requires --ssl-certfile", "--ssl-certfile ssl-certfile.pem"),
        ("tp_size must be divisible by number of nodes", "--nnodes 2 --tp-size 2"),
        # An environment variable's value the check reads, solved where it reads it.
        ("When fuse_mode is set to 2", "--quantization modelslim"),
    ],
)
def test_the_issues_examples_are_verified(verdicts, prefix, after) -> None:
    v = find(verdicts, prefix)
    assert v.verification["status"] == "verified", v.verification
    assert v.verification["platform"] == "cuda-sm90"
    assert after in v.example_fix.split("# after\n")[1]


def test_most_raise_and_assert_records_are_verified_and_none_shows_a_rejected_command(
    verdicts,
) -> None:
    server_args = [v for (r, v) in verdicts.values() if r["filePath"].endswith("server_args.py")]
    verified = sum(v.verification["status"] == "verified" for v in server_args)
    assert verified / len(server_args) >= 0.9, (verified, len(server_args))
    for v in server_args:
        assert (v.example_fix is not None) == (v.verification["status"] == "verified")
        assert v.verification["status"] == "verified" or not v.keep_fix


def test_every_profile_verifies_a_check_of_its_own(verdicts) -> None:
    """Each further platform and model profile of profiles/sglang.toml is there for checks the
    default box and model cannot reach; each verifies at least one at the newest revision."""
    used_platforms = {v.verification["platform"] for _, v in verdicts.values()
                      if v.verification["status"] == "verified"}  # fmt: skip
    used_models = {v.verification.get("model") for _, v in verdicts.values()
                   if v.verification["status"] == "verified"}  # fmt: skip
    assert {"cuda-sm90-ib-empty", "cuda-sm90-flashinfer-no-mamba"} <= used_platforms
    assert {"qwen-1m", "exaone4", "deepseek-v32"} <= used_models


def test_what_no_command_line_reaches_is_not_applicable_and_says_why(verdicts) -> None:
    v = find(verdicts, "Invalid disaggregation_mode")
    assert v.verification["status"] == "not-applicable"
    assert v.verification["reason"].startswith(
        "no command line reaches it: every value --disaggregation-mode can hold"
    )


@pytest.mark.parametrize(
    ("prefix", "before", "after"),
    [
        ("Multiple config files specified", "--config config.yaml --config extra.yaml",
         "--config config.yaml"),
        ("No config file specified after --config", "MODEL_PATH --config\n",
         "> config.yaml && python"),
        ("Config file must be YAML format", "> config.json && python", "> config.yaml && python"),
        ("Config file not found", "--config /no/such/config.yaml", "--config config.yaml"),
        ("Config file must contain a dictionary", "echo '[{", "echo '{"),
        ("Unsupported config option", '"lora-paths": ["/path/to/lora-paths"]',
         "--lora-paths /path/to/lora-paths"),
    ],
)  # fmt: skip
def test_the_config_mergers_checks_are_verified_at_argv_time(verdicts, prefix, before, after):
    """prepare_server_args hands `--config FILE` to ConfigArgumentMerger before parsing: its
    checks run there, each with the config file its launch writes."""
    v = find(verdicts, prefix)
    assert v.verification["status"] == "verified", v.verification
    shown_before, shown_after = v.example_fix.split("# after\n")
    assert before in shown_before + "\n" and after in shown_after
