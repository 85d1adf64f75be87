"""`kverr check`: the fixture project laid out as SGLang, tagged as a release, checked with
the shipped spec through the real command line (JSON and card, exit codes)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_sources import Git
from typer.testing import CliRunner
from verify_fixture import sglang_files

from kverr.cli import app

pytestmark = pytest.mark.sandbox  # runs a revision's code (tests/conftest.py)
LAUNCH = ["python", "-m", "sglang.launch_server", "--model-path", "org/m"]


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    g = Git(tmp_path_factory.mktemp("check") / "repo")
    g.commit("fixture", sglang_files())
    g.tag("v9.9.9")
    return g.root


def check(repo: Path, *words: str, release: str = "9.9.9"):
    args = ["check", "--json", "--source", str(repo), "--release", release, "--", *words]
    return CliRunner().invoke(app, args)


def test_a_mistake_gets_the_fix_of_this_command_in_its_own_spelling(repo) -> None:
    got = check(repo, *LAUNCH, "--tp", "16")
    assert got.exit_code == 1, got.output
    report = json.loads(got.stdout)
    assert report["release"] == "v9.9.9" and report["passed"] is False
    (err,) = report["errors"]
    assert err["message"] == "tp_size must be at most 8"
    fix = err["yourFix"]
    assert fix["changed"] == ["--tp-size"] and fix["verification"]["status"] == "verified"
    assert fix["after"] == "python -m sglang.launch_server --model-path org/m --tp 8"
    assert report["fixed"] == fix["after"]


def test_a_launch_that_passes_exits_0_and_lists_what_the_release_adjusts(repo) -> None:
    got = check(repo, *LAUNCH, "--tp-size", "2")
    assert got.exit_code == 0, got.output
    report = json.loads(got.stdout)
    assert report["passed"] and report["errors"] == []
    assert [n["message"] for n in report["notices"]] == ["Attention backend not set; using fa3."]


def test_an_unknown_option_is_named_with_close_ones(repo) -> None:
    report = json.loads(check(repo, *LAUNCH, "--tp-sise", "2").output)
    assert report["unknownOptions"] == [{"option": "--tp-sise", "didYouMean": ["--tp-size"]}]


@pytest.mark.parametrize(
    ("words", "release", "said"),
    [
        ([], "9.9.9", "no launch command in the input"),
        (LAUNCH, "1.2.3", "release 1.2.3 is neither a tag nor a commit of"),
        (LAUNCH, "deadbeef", "release deadbeef is neither a tag nor a commit of"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(repo, words, release, said) -> None:
    got = check(repo, *words, release=release)
    assert got.exit_code == 2
    assert said in got.output and len(got.output.strip().splitlines()) == 1


def test_the_card_in_a_real_process(repo) -> None:
    cmd = [sys.executable, "-m", "kverr", "check", "--source", str(repo), "--release", "9.9.9"]
    done = subprocess.run(
        [*cmd, "--", *LAUNCH, "--tp-size", "12", "--moe-dp-size", "8"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    assert "tp_size must be divisible by moe_dp_size" in done.stdout
    assert "--tp-size 8 --moe-dp-size 8" in done.stdout
    assert "kverr show 35f71508f59b40d3" in done.stdout
