"""`kverr explain` with the user's own launch in the paste: the match carries the fix of that
launch, checked by the release the paste names (the fixture project laid out as SGLang, tagged
v9.9.9); without a launch, advice from the values the message printed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kverr.present.verdict import yours_status
from kverr.verify.preflight import personal_answers, stopped_first
from test_sources import Git
from typer.testing import CliRunner
from verify_fixture import sglang_files

from kverr.answers import Match
from kverr.argforms import abbreviated
from kverr.cli import app

MOE = "35f71508f59b40d3"  # "tp_size must be divisible by moe_dp_size", shipped and fixture alike
ISSUE = """\
I run sglang==9.9.9 with
```
python -m sglang.launch_server --model-path org/m \\
    --tp-size {tp} --moe-dp-size {moe}
```
and it stops with
AssertionError: tp_size must be divisible by moe_dp_size
"""


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    g = Git(tmp_path_factory.mktemp("explain-yours") / "repo")
    g.commit("fixture", sglang_files())
    g.tag("v9.9.9")
    return g.root


def explain(*args: str) -> dict:
    got = CliRunner().invoke(app, ["explain", "--json", *args])
    assert got.exit_code == 0, got.output
    return json.loads(got.stdout)


def match(report: dict, rid: str) -> dict:
    return next(m for m in report["matches"] if m["record"]["id"] == rid)


@pytest.mark.sandbox
def test_the_users_launch_gets_its_own_verified_fix(repo) -> None:
    got = match(explain(ISSUE.format(tp=6, moe=4), "--source", str(repo)), MOE)
    fix = got["yourFix"]
    assert fix["verification"] == {
        "status": "verified",
        "revision": "v9.9.9",
        "platform": "cuda-sm90",
        "model": "the default model (the model path is neither a local folder nor a known model)",
    }
    assert fix["changed"] == ["--moe-dp-size"]  # the GPUs (--tp-size 6) stay as they are
    assert fix["before"].endswith("--tp-size 6 --moe-dp-size 4")
    assert "--tp-size 6 --moe-dp-size " in fix["after"] and "advice" not in got


@pytest.mark.sandbox
def test_a_launch_that_does_not_raise_it_is_never_given_the_generic_fix(repo) -> None:
    got = match(explain(ISSUE.format(tp=8, moe=8), "--source", str(repo)), MOE)
    assert got["yourFix"]["status"] == "not-reproduced"
    assert "passes every check of v9.9.9" in got["yourFix"]["reason"]


@pytest.mark.sandbox
def test_a_paste_without_a_version_is_run_by_the_newest_release_that_raises_it(tmp_path) -> None:
    # v9.9.9 dropped the check: the launch passes there, so the answer is v9.9.8's own fix.
    g = Git(tmp_path / "repo")
    g.commit("with the check", sglang_files())
    g.tag("v9.9.8")
    dropped = {
        p: t.replace('assert self.tp_size % self.moe_dp_size == 0, "tp_size must be divisible by'
                     ' moe_dp_size"', "pass")
        for p, t in sglang_files().items()
    }  # fmt: skip
    assert dropped != sglang_files()
    g.commit("without it", dropped)
    g.tag("v9.9.9")
    paste = ISSUE.format(tp=6, moe=4).replace("I run sglang==9.9.9 with", "I run")
    fix = match(explain(paste, "--source", str(g.root)), MOE)["yourFix"]
    assert fix["verification"]["revision"] == "v9.9.8"
    assert fix["verification"]["chosenBy"] == "the newest release that raises it"
    assert fix["changed"] == ["--moe-dp-size"]


def test_without_a_source_it_says_so(monkeypatch) -> None:
    monkeypatch.delenv("KVERR_SOURCE", raising=False)
    got = match(explain(ISSUE.format(tp=12, moe=8)), MOE)
    assert got["yourFix"]["status"] == "not-checked"
    assert "pass --source" in got["yourFix"]["reason"]


def test_without_a_launch_the_message_values_give_advice() -> None:
    report = explain("ValueError: mamba_track_interval 100 must be divisible by page_size 64")
    (got,) = report["matches"]
    assert "yourFix" not in got
    assert got["advice"] == [
        "With --page-size 64, use --mamba-track-interval 128, 64 or 192 (not 100).",
        "With --mamba-track-interval 100, use --page-size 50, 100 or 25 (not 64).",
    ]


@pytest.mark.sandbox
def test_a_launch_typed_for_another_machine_is_checked_on_it(repo) -> None:
    # fa4 needs an SM100 GPU: on the default H100 the launch stops there, so it was typed for
    # a Blackwell machine, and there it reaches the pasted error and gets its fix
    paste = ISSUE.format(tp=6, moe="4 --attention-backend fa4")
    fix = match(explain(paste, "--source", str(repo)), MOE)["yourFix"]
    assert fix["verification"]["platform"] == "cuda-sm100"
    assert fix["changed"] == ["--moe-dp-size"]


def _launch_path_match(example: str) -> Match:
    record = {
        "id": "launchpath0000001",
        "scope": "launch-path",
        "filePath": "python/sglang/srt/model_executor/model_runner.py",
        "exampleFix": example,
    }
    return Match(record, 1.0, "pattern", project={"name": "sglang"})


LAUNCHED = (
    "I run sglang==9.9.9:\npython -m sglang.launch_server --model-path org/m --page-size {page}\n"
)
EXAMPLE = (
    "# before\npython -m sglang.launch_server --model-path MODEL_PATH --page-size=16\n"
    "# after\npython -m sglang.launch_server --model-path MODEL_PATH --page-size 1"
)


@pytest.mark.sandbox
def test_a_check_that_runs_as_the_server_starts_fixes_the_users_launch_as_its_record_does(
    repo,
) -> None:
    (got,) = personal_answers(
        LAUNCHED.format(page=16), [_launch_path_match(EXAMPLE)], source=str(repo)
    )
    assert got.yours == {
        "status": "beyond-arguments",
        "release": "v9.9.9",
        "platform": "cuda-sm90",
        "file": "python/sglang/srt/model_executor/model_runner.py",
        "before": "python -m sglang.launch_server --model-path org/m --page-size 16",
        "after": "python -m sglang.launch_server --model-path org/m --page-size 1",
    }
    said = yours_status(got.yours)
    assert said.startswith("Your launch with this fix's change passes v9.9.9's argument checks")
    assert "cannot run before launch" in said


@pytest.mark.sandbox
def test_a_record_fix_from_another_value_is_not_applied_to_the_users_launch(repo) -> None:
    # the example moves --page-size 16 to 1; this launch has 4: the example is not its launch
    (got,) = personal_answers(
        LAUNCHED.format(page=4), [_launch_path_match(EXAMPLE)], source=str(repo)
    )
    assert got.yours["status"] == "beyond-arguments"
    assert "after" not in got.yours
    assert yours_status(got.yours).startswith("Your launch passes v9.9.9's argument checks")


@pytest.mark.parametrize(
    ("first", "stopped", "expected"),
    [
        (
            {"status": "error", "errorClass": "ValueError", "message": "heads (28) by tp (8)"},
            None,
            {
                "status": "not-reproduced",
                "reason": "your launch stops at another check of v9.9.9 first (ValueError:"
                " heads (28) by tp (8))",
                "stoppedBy": "ValueError: heads (28) by tp (8)",
                "release": "v9.9.9",
                "platform": "cuda-sm90",
            },
        ),
        (  # a run the sandbox could not decide stopped at no check of the release
            {"status": "undecidable", "errorClass": "", "message": ""},
            {"status": "undecidable", "reason": "len() of `AutoTokenizer.from_pretrained()`"},
            {
                "status": "not-checked",
                "reason": "v9.9.9's checks of your launch read len() of"
                " `AutoTokenizer.from_pretrained()`, which kverr cannot know",
            },
        ),
    ],
)
def test_a_run_stopped_before_the_pasted_check(first, stopped, expected) -> None:
    data = {"release": "v9.9.9", "platform": "cuda-sm90", "errors": [first], "stopped": stopped}
    assert stopped_first(data, "cuda-sm90") == expected


FRONT_END = '''\
from dataclasses import dataclass


@dataclass
class FrontendArgs:
    host: str | None = None
    """Host name."""
    port: int = 8000
    """Port number."""
'''


def test_the_server_front_ends_options_are_its_own(tmp_path) -> None:
    """vLLM's serve takes the fields of its FrontendArgs besides EngineArgs' (`--port`): read
    from the release's own files, they are no unknown option of the checks' parser."""
    from kverr.verify.memo import Memo
    from kverr.verify.preflight import front_end_options
    from kverr.verify.release import find_release
    from kverr.verify.spec import spec_for

    from kverr.profile import load_profile

    g = Git(tmp_path / "repo")
    g.commit("front end", {"vllm/entrypoints/openai/cli_args.py": FRONT_END, "vllm/a.py": ""})
    profile = load_profile("vllm")
    spec = spec_for(profile)
    rel = find_release(spec, ("vllm/*.py",), release=None, source=str(g.root), profile=profile)
    served = front_end_options(rel, spec, "k", Memo(None), profile)
    assert {"--host", "--port"} <= set(served)
    assert abbreviated("--port", served) == "--port" and abbreviated("--bogus", served) is None
