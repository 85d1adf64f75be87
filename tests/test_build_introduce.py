"""The commit that introduced a check (pipeline/introduce.py), over a real git repository."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kverr.catalog import open_catalog
from kverr.catalog.history import history
from test_sources import Git

from kverr import pipeline

SA = "python/sglang/srt/server_args.py"
TP_OLD, TP_NEW = "--tp-size must be positive", "--tp-size must be a positive integer"
KV = "--kv-dtype fp4 requires --enable-kv4"
PP = "--pp-size must be positive"


def server_args(tp: str, *, kv: bool) -> str:
    return (
        "from dataclasses import dataclass\n\n\n"
        "@dataclass\n"
        "class ServerArgs:\n"
        "    tp_size: int = 1\n"
        "    pp_size: int = 1\n"
        '    kv_dtype: str = "auto"\n'
        "    enable_kv4: bool = False\n\n"
        "    def check(self):\n"
        "        if self.tp_size < 1:\n"
        f'            raise ValueError("{tp}")\n'
        "        # A pipeline needs at least one stage to place layers on.\n"
        "        if self.pp_size < 1:\n"
        f'            raise ValueError("{PP}")\n'
        + (
            '        if self.kv_dtype == "fp4" and not self.enable_kv4:\n'
            f'            raise ValueError("{KV}")\n'
            if kv
            else ""
        )
    )


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> dict:
    g = Git(tmp_path_factory.mktemp("intro") / "repo")
    sha = {"c1": g.commit("Initial server args (#1)", {SA: server_args(TP_OLD, kv=False)})}
    g.commit("Unrelated readme", {"README.md": "hi\n"})
    sha["c2"] = g.commit(
        "Add the kv4 check (#12)\n\n"
        "FP4 caches need the kv4 kernels, so a launch asking for fp4 must enable them.\n\n"
        "Co-authored-by: someone <s@example.com>",
        {SA: server_args(TP_OLD, kv=True)},
    )
    sha["c3"] = g.commit("Reword the tp check (#13)", {SA: server_args(TP_NEW, kv=True)})
    g.tag("v0.2.0")
    return {"git": g, "sha": sha, "tmp": tmp_path_factory.mktemp("out")}


def _build(story: dict, name: str, **git) -> Path:
    tmp: Path = story["tmp"]
    pipeline.build(
        pipeline.BuildSpec(
            out=tmp / name,
            source=pipeline.GitSource(story["git"].root, **git),
            catalog=tmp / f"{name}.duckdb",
            cache=tmp / "cache.sqlite",
            repo_name="acme/engine",
        )
    )
    return tmp / name


def _docs(out: Path) -> dict[str, str]:
    lines = (out / "records.jsonl").read_text(encoding="utf-8").splitlines()
    recs = [json.loads(x)["record"] for x in lines]
    return {r["errorMessage"]: r["documentation"] for r in recs}


def test_a_build_over_the_history_names_the_introducing_commit(story: dict) -> None:
    out = _build(story, "touching", touching=True)
    docs = _docs(out)
    # the body speaks to the check (fp4, kv4, enable): it is the why, the PR named
    assert docs[KV] == (
        "The change that added this check (#12) explains: FP4 caches need the kv4 kernels, so a "
        "launch asking for fp4 must enable them."
    )
    # a subject alone ("Initial server args") says nothing about the check
    assert "Initial server args" not in docs[TP_NEW]
    # the code's own comment stays the meaning
    assert docs[PP] == "A pipeline needs at least one stage to place layers on."
    with open_catalog(out.parent / "touching.duckdb") as cat:
        (rid,) = [r["id"] for r in cat.records() if r["errorMessage"] == KV]
        assert history(cat, rid).introduced["sha"] == story["sha"]["c2"]


def test_a_release_only_build_does_not_guess(story: dict) -> None:
    docs = _docs(_build(story, "tags", tags="v*"))
    assert not any("The change that added" in d for d in docs.values())
