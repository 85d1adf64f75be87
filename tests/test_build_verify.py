"""`kverr build --verify` end to end: a real git repo of our own fixture in SGLang's layout,
the shipped spec (verify/sglang.toml), the verdict and run caches in the build cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kverr.pipeline import build
from test_sources import Git
from typer.testing import CliRunner
from verify_fixture import sglang_files

from kverr.cli import app
from kverr.errors import SourceError

SA = "python/sglang/srt/server_args.py"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Git:
    g = Git(tmp_path_factory.mktemp("bv") / "repo")
    g.commit("fixture", sglang_files())
    return g


def records(out: Path) -> dict[str, dict]:
    lines = (out / "records.jsonl").read_text().splitlines()
    return {json.loads(x)["record"]["errorMessage"]: json.loads(x)["record"] for x in lines}


def test_build_verify_writes_verdicts_and_a_rebuild_runs_nothing(repo: Git, tmp_path: Path) -> None:
    opts = dict(
        git_repo=repo.root, revs=["HEAD"], repo_name="o/r", cache_path=tmp_path / "c.sqlite"
    )
    plain = build(out=tmp_path / "plain", **opts)
    assert plain.verify is None
    for rec in records(tmp_path / "plain").values():
        assert rec["verification"]["status"] == "unverified"
        assert "--verify" in rec["verification"]["reason"]

    first = build(out=tmp_path / "a", verify=True, **opts)
    recs = records(tmp_path / "a")
    page = next(r for m, r in recs.items() if m.startswith("page_size must divide"))
    assert page["verification"] == {
        "status": "verified",
        "platform": "cuda-sm90",
        "revision": repo.run("rev-parse", "HEAD")[:12],
        "reason": "",
    }
    assert page["exampleFix"].endswith("--model-path MODEL_PATH --page-size 64")
    assert page["solutions"][0] == "Launch with --page-size 64"
    v = first.verify
    assert v.runs > 0 and v.verified_newest >= 6 and v.errors_newest >= 8
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert manifest["counts"]["verification"]["verifiedNewest"] == v.verified_newest

    again = build(out=tmp_path / "b", verify=True, **opts)
    assert again.verify.runs == 0  # every verdict came from the build cache
    assert (tmp_path / "a" / "records.jsonl").read_bytes() == (
        tmp_path / "b" / "records.jsonl"
    ).read_bytes()


def test_the_cli_prints_the_verified_rate(repo: Git, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        ["build", "--git", str(repo.root), "--rev", "HEAD", "--repo-name", "o/r",
         "--out", str(tmp_path / "ds"), "--verify"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    line = next(x for x in result.output.splitlines() if "verified fixes" in x)
    assert "raise/assert records at" in line and "on cuda-sm90" in line and "%" in line


def test_verify_needs_git_and_a_known_platform(repo: Git, tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("x = 1\n")
    with pytest.raises(SourceError, match="--verify runs each revision's own code from git"):
        build(out=tmp_path / "o", source=tmp_path / "src", verify=True)
    with pytest.raises(SourceError, match="unknown platform profile 'tpu'"):
        build(out=tmp_path / "o", git_repo=repo.root, revs=["HEAD"], repo_name="o/r",
              verify=True, platform="tpu")  # fmt: skip


def test_another_project_is_not_verified_and_says_why(tmp_path: Path) -> None:
    g = Git(tmp_path / "other")
    g.commit(
        "x",
        {
            "pkg/config.py": "def check(x):\n    if x:\n        raise ValueError('x is not allowed here')\n"
        },
    )
    result = build(out=tmp_path / "ds", git_repo=g.root, revs=["HEAD"], globs=["pkg/*.py"],
                   repo_name="o/r", verify=True)  # fmt: skip
    (rec,) = records(tmp_path / "ds").values()
    assert rec["verification"]["status"] == "unverified"
    assert rec["verification"]["reason"].startswith("kverr has no verify spec for this project")
    assert result.verify.runs == 0
