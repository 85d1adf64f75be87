"""`kverr build --verify` end to end: a real git repo of our own fixture in SGLang's layout,
the shipped spec (profiles/sglang.toml), the verdict and run caches in the build cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kverr.pipeline import BuildSpec, GitSource, build
from test_sources import Git
from typer.testing import CliRunner
from verify_fixture import sglang_files

from kverr.cli import app
from kverr.errors import SourceError

pytestmark = pytest.mark.sandbox  # runs a revision's code (tests/conftest.py)

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
        source=GitSource(repo.root, revs=("HEAD",)), repo_name="o/r", cache=tmp_path / "c.sqlite"
    )
    plain = build(BuildSpec(out=tmp_path / "plain", **opts))
    assert plain.verify is None
    for rec in records(tmp_path / "plain").values():
        assert rec["verification"]["status"] == "unverified"
        assert "--verify" in rec["verification"]["reason"]
        if rec["kind"] == "argparse":  # read from the declarations, its parser not run
            assert "the build did not run the revision's parser" in rec["verification"]["reason"]

    first = build(BuildSpec(out=tmp_path / "a", verify=True, **opts))
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
    # "a value other than fa4" is the declared choices that passed in its place
    fa4 = next(r for m, r in recs.items() if m.startswith("The fa4 attention backend"))
    assert "Set --attention-backend to fa3, triton or flashinfer" in fa4["solutions"]
    assert not any("other than fa4" in s for s in fa4["solutions"]), fa4["solutions"]
    # argparse's own errors: the fix through the revision's own parser (test_verify_parsing.py)
    value = recs["argument --page-size: invalid {type} value: {value!r}"]
    assert value["verification"] == {**page["verification"], "reason": ""}
    assert value["exampleFix"].endswith("--page-size NOT_A_INT\n# after\n"
                                        "python -m sglang.launch_server --model-path MODEL_PATH"
                                        " --page-size 1")  # fmt: skip
    v = first.verify
    assert v.runs > 0 and v.verified_newest >= 6 and v.errors_newest >= 8
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert manifest["counts"]["verification"]["verifiedNewest"] == v.verified_newest

    again = build(BuildSpec(out=tmp_path / "b", verify=True, **opts))
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
    assert "verified by their revision's parser" in line


def test_verify_needs_git_and_a_known_platform(repo: Git, tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("x = 1\n")
    with pytest.raises(SourceError, match="--verify runs each revision's own code from git"):
        build(BuildSpec(out=tmp_path / "o", source=tmp_path / "src", verify=True))
    with pytest.raises(SourceError, match="unknown platform profile 'tpu'"):
        build(BuildSpec(out=tmp_path / "o", source=GitSource(repo.root, revs=["HEAD"]), repo_name="o/r", verify=True, platform="tpu"))  # fmt: skip


def test_another_project_is_not_verified_and_says_why(tmp_path: Path) -> None:
    g = Git(tmp_path / "other")
    g.commit(
        "x",
        {
            "pkg/config.py": "def check(x):\n    if x:\n        raise ValueError('x is not allowed here')\n"
        },
    )
    result = build(BuildSpec(out=tmp_path / "ds", source=GitSource(g.root, revs=["HEAD"]), globs=["pkg/*.py"], repo_name="o/r", verify=True))  # fmt: skip
    (rec,) = records(tmp_path / "ds").values()
    assert rec["verification"]["status"] == "unverified"
    assert rec["verification"]["reason"].startswith("kverr has no verify spec for this project")
    assert result.verify.runs == 0


# Wired the way newer upstream revisions wire arg-groups hooks: __post_init__ calls a
# dispatcher in arg_groups/pipeline.py, which imports each hook where it calls it.
PIPELINE = """\
def run_pipeline(server_args):
    from sglang.srt.arg_groups.cache_hook import handle_cache

    handle_cache(server_args)
"""

WIRED_HOOK = """\
def handle_cache(server_args):
    if server_args.prefill_only and server_args.page_size != 1:
        raise ValueError("--prefill-only needs --page-size 1 in this hook.")
"""

# A hook newer than the revision it is placed over: nothing there calls it, it imports a
# module the revision lacks and reads an option its parser does not have (the seed's case).
NEWER_HOOK = """\
from sglang.srt.arg_groups.overrides import resolving_view


def handle_new(server_args):
    cfg = resolving_view(server_args)
    if cfg.enable_new_cache and cfg.page_size > 1:
        raise ValueError("--enable-new-cache is incompatible with --page-size > 1.")
"""


def test_a_hook_is_verified_where_the_revision_calls_it_and_a_newer_one_says_why_not(
    tmp_path: Path,
) -> None:
    files = sglang_files()
    files[SA] = (
        files[SA]
        .replace(
            "from sglang.srt.environ import envs\n",
            "from sglang.srt.environ import envs\n"
            "from sglang.srt.arg_groups.pipeline import run_pipeline\n",
        )
        .replace(
            "        self._handle_misc()\n",
            "        self._handle_misc()\n        run_pipeline(self)\n",
        )
    )
    files["python/sglang/srt/arg_groups/pipeline.py"] = PIPELINE
    files["python/sglang/srt/arg_groups/__init__.py"] = ""
    files["python/sglang/srt/arg_groups/cache_hook.py"] = WIRED_HOOK
    g = Git(tmp_path / "repo")
    g.commit("fixture with a hook", files)
    (tmp_path / "new_hook.py").write_text(NEWER_HOOK, encoding="utf-8")
    build(
        BuildSpec(
            out=tmp_path / "ds",
            source=GitSource(
                g.root,
                revs=["HEAD"],
                snapshots=[f"{tmp_path / 'new_hook.py'}=python/sglang/srt/arg_groups/new_hook.py"],
                snapshot_label="seed",
                snapshot_date="2026-08-28T05:10:05Z",
            ),
            repo_name="o/r",
            cache=tmp_path / "c.sqlite",
            verify=True,
        )
    )
    recs = records(tmp_path / "ds")
    wired = recs["--prefill-only needs --page-size 1 in this hook."]
    assert wired["verification"]["status"] == "verified", wired["verification"]
    newer = recs["--enable-new-cache is incompatible with --page-size > 1."]
    assert newer["verification"] == {
        "status": "not-applicable",
        "platform": "cuda-sm90",
        "revision": "seed",
        "reason": "handle_new is not reached from ServerArgs.__post_init__ and "
        "ServerArgs.check_server_args: nothing calls it; its module imports "
        "sglang.srt.arg_groups.overrides, which this revision lacks; it reads options this "
        "revision's parser lacks (--enable-new-cache)",
    }
