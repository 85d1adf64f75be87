"""Errors of a running server that are no launch-argument error get no answer: CUDA out of
memory while decoding, NCCL watchdogs, missing modules, unsupported architectures, HTTP and
ASGI errors, tokenizer and chat-template errors, Ray workers (tests/fixtures/runtime_noise.json,
written for these tests). The launch-path records (the model runner's, the workers') sit
closest to them, so the newest revision of each mirror is built with them too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kverr.catalog import load_datasets, open_catalog, store

from kverr import pipeline
from kverr.profile import load_profile

PASTES = json.loads((Path(__file__).parent / "fixtures" / "runtime_noise.json").read_text())[
    "pastes"
]
# beside the checkout, or beside the folder of worktrees it is one of
MIRRORS = next(
    (d / ".mirror" for d in Path(__file__).resolve().parents[2:4] if (d / ".mirror").is_dir()),
    Path(__file__).resolve().parents[2] / ".mirror",
)
SOURCES = {
    "sglang": MIRRORS / "Clarit-AI+Engram" / "repo",
    "vllm": MIRRORS / "local-inference-lab+vllm" / "repo",
}


def _answers(cat, text: str) -> list[tuple[str, str]]:
    found = [*cat.explain(text), *cat.scan(text.splitlines())]
    return sorted({(m.record["id"], m.record["errorMessage"][:80]) for m in found})


def test_the_corpus_covers_each_kind_of_runtime_error():
    kinds = {p["kind"] for p in PASTES}
    assert {
        "cuda-oom-decode",
        "nccl",
        "import",
        "architecture",
        "http",
        "tokenizer",
        "ray",
    } <= kinds


@pytest.fixture(scope="module")
def shipped():
    if not store.packaged_datasets():
        pytest.skip("no packaged dataset")
    with open_catalog(store.default_catalog_path()) as c:  # what `kverr explain` reads
        yield c


@pytest.mark.parametrize("paste", PASTES, ids=lambda p: p["kind"])
def test_shipped_catalog_stays_silent(shipped, paste):
    assert _answers(shipped, paste["text"]) == []


@pytest.mark.slow  # builds each mirror's newest revision with its launch path (about a minute)
def test_launch_path_records_stay_silent(tmp_path, monkeypatch):
    monkeypatch.setenv("KVERR_STRICT", "0")  # upstream code: a message kverr cannot resolve is data
    missing = [name for name, repo in SOURCES.items() if not (repo / "objects").is_dir()]
    if missing:
        pytest.skip(f"no mirror for {', '.join(missing)} under {MIRRORS}")
    outs = []
    for name, repo in SOURCES.items():
        out = tmp_path / name
        pipeline.build(
            pipeline.BuildSpec(out=out, source=pipeline.GitSource(repo, revs=["HEAD"]), profile=load_profile(name), cache=tmp_path / "cache.sqlite", command=["kverr", "build"]))  # fmt: skip
        records = [json.loads(line)["record"] for line in (out / "records.jsonl").open()]
        assert any(r.get("scope") == "launch-path" for r in records), name
        outs.append(out)
    load_datasets(outs, tmp_path / "both.duckdb")
    with open_catalog(tmp_path / "both.duckdb") as cat:
        loud = {p["text"][:60]: _answers(cat, p["text"]) for p in PASTES}
    assert {text: found for text, found in loud.items() if found} == {}
