"""`kverr build --snapshot`: files from disk built as one revision after the git ones.

A temp repository (two tagged commits of our own server_args.py imitation) plus an arg-groups
module on disk that is in no commit: the snapshot revision has sha null and its label as tag,
records from the snapshot file have no sha and no link, and the catalog answers --version,
history and diff for it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kverr.catalog import open_catalog
from kverr.catalog.history import diff, history
from test_sources import Git
from typer.testing import CliRunner

from kverr import pipeline
from kverr.cli import app
from kverr.errors import SourceError

SA = "python/sglang/srt/server_args.py"
HOOK = "python/sglang/srt/arg_groups/hook.py"
DATE = "2024-06-01T12:00:00Z"

SERVER_ARGS = """from dataclasses import dataclass


@dataclass
class ServerArgs:
    page_size: int = 1
    enable_sparse: bool = False

    def _check_page(self):
        if self.page_size < 1:
            raise ValueError("--page-size must be at least 1")
"""
SERVER_ARGS_2 = SERVER_ARGS + (
    "        if self.page_size > 256:\n"
    '            raise ValueError("--page-size above 256 wastes the pool")\n'
)
HOOK_SRC = """from typing import Any


def handle_hook(server_args: Any) -> None:
    if server_args.enable_sparse and server_args.page_size > 1:
        raise ValueError("--enable-sparse needs --page-size 1: sparse pages are single tokens")
"""
HOOK_MSG = "--enable-sparse needs --page-size 1: sparse pages are single tokens"


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> dict:
    g = Git(tmp_path_factory.mktemp("snap") / "repo")
    g.commit("one", {SA: SERVER_ARGS})
    g.tag("v1.0")
    g.commit("two", {SA: SERVER_ARGS_2})
    g.tag("v2.0")
    disk = tmp_path_factory.mktemp("disk")
    (disk / "hook.py").write_text(HOOK_SRC, encoding="utf-8")
    (disk / "pkg").mkdir()
    (disk / "pkg" / "hook.py").write_text(HOOK_SRC, encoding="utf-8")
    (disk / "pkg" / "notes.txt").write_text("not python", encoding="utf-8")
    return {"git": g, "disk": disk, "tmp": tmp_path_factory.mktemp("out")}


def _build(story: dict, name: str, **kw) -> pipeline.BuildResult:
    tmp: Path = story["tmp"]
    kw.setdefault("snapshots", [f"{story['disk'] / 'hook.py'}={HOOK}"])
    kw.setdefault("snapshot_label", "seed")
    kw.setdefault("snapshot_date", DATE)
    git = pipeline.GitSource(story["git"].root, revs=("HEAD",), tags="v*", **kw)
    return pipeline.build(
        pipeline.BuildSpec(
            out=tmp / name,
            source=git,
            catalog=tmp / f"{name}.duckdb",
            repo_name="acme/engine",
            cache=tmp / f"{name}.sqlite",
        )
    )


@pytest.fixture(scope="module")
def built(story: dict) -> pipeline.BuildResult:
    return _build(story, "ds")


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def _record(built: pipeline.BuildResult, message: str) -> dict:
    (rec,) = [
        line["record"]
        for line in _lines(built.out / "records.jsonl")
        if line["record"]["errorMessage"] == message
    ]
    return rec


def test_snapshot_is_one_more_revision_without_a_sha(built: pipeline.BuildResult) -> None:
    revs = _lines(built.out / "revisions.jsonl")
    assert [r["tags"] for r in revs] == [["v1.0"], ["v2.0"], ["seed"]]
    snap = revs[-1]
    assert (snap["sha"], snap["date"], snap["ord"]) == (None, "2024-06-01T12:00:00.000Z", 2)
    assert HOOK in snap["subject"] and revs[1]["sha"][:12] in snap["subject"]
    assert "not a commit" in snap["subject"]


def test_snapshot_records_have_honest_provenance(story: dict, built: pipeline.BuildResult) -> None:
    hook = _record(built, HOOK_MSG)
    assert (hook["analyzedSha"], hook["githubUrl"], hook["analyzedAt"]) == (
        None,
        None,
        "2024-06-01T12:00:00.000Z",
    )
    assert hook["filePath"] == HOOK
    # server_args.py is the newest commit's code: its records keep that commit's sha and link
    head = story["git"].run("rev-parse", "HEAD")
    page = _record(built, "--page-size must be at least 1")
    assert page["analyzedSha"] == head and head in page["githubUrl"]
    manifest = json.loads((built.out / "manifest.json").read_text(encoding="utf-8"))
    (snap,) = manifest["provenance"]["snapshots"]
    assert snap == {
        "path": str(story["disk"] / "hook.py"),
        "repoPath": HOOK,
        "blob": snap["blob"],
        "label": "seed",
        "date": "2024-06-01T12:00:00.000Z",
    }
    assert len(snap["blob"]) == 40 and "snapshot 'seed'" in manifest["provenance"]["summary"]
    assert manifest["datasetVersion"] == "2024-06-01T12:00:00.000Z"
    readme = (built.out / "README.md").read_text(encoding="utf-8")
    assert "Snapshot revision `seed`" in readme and HOOK in readme and "sha null" in readme


def test_a_message_the_snapshot_duplicates_keeps_its_commit(story: dict, tmp_path: Path) -> None:
    # the snapshot raises server_args.py's message too: the old site keeps its id (records.identity)
    dup = tmp_path / "dup.py"
    dup.write_text(
        HOOK_SRC + "    if server_args.page_size < 1:\n"
        '        raise ValueError("--page-size must be at least 1")\n',
        encoding="utf-8",
    )
    res = _build(story, "dup", snapshots=[f"{dup}={HOOK}"])
    lines = _lines(res.out / "records.jsonl")
    head = story["git"].run("rev-parse", "HEAD")
    pins = sorted(
        (ln["record"]["filePath"], ln["record"]["analyzedSha"])
        for ln in lines
        if ln["record"]["errorMessage"] == "--page-size must be at least 1"
    )
    # the server_args.py site under its old id (still the commit's code), the snapshot's newcomer
    assert pins == [(HOOK, None), (SA, head)]


def test_occurrences_span_into_the_snapshot(built: pipeline.BuildResult) -> None:
    page = _record(built, "--page-size must be at least 1")["id"]
    hook = _record(built, HOOK_MSG)["id"]
    spans = {o["id"]: (o["from"], o["to"]) for o in _lines(built.out / "occurrences.jsonl")}
    assert spans[page] == (0, 2) and spans[hook] == (2, 2)


def test_catalog_answers_for_the_snapshot(built: pipeline.BuildResult) -> None:
    with open_catalog(built.catalog) as cat:
        assert cat.resolve_version("seed").sha is None
        assert cat.resolve_version("HEAD").tags == ("v2.0",)
        (m,) = cat.explain(f"ValueError: {HOOK_MSG}", version="seed")
        assert m.record["errorMessage"] == HOOK_MSG and m.revisions == ("seed",)
        assert cat.explain(f"ValueError: {HOOK_MSG}", version="v2.0") == []
        d = diff(cat, "HEAD", "seed")
        assert [a["message"] for a in d.added] == [HOOK_MSG]
        assert (d.removed, d.changed, d.moved) == ([], [], [])
        h = history(cat, f"ValueError: {HOOK_MSG}")
        assert [r.tags for r in h.revisions] == [("seed",)]
        assert h.introduced == {
            "sha": None,
            "date": "2024-06-01T12:00:00.000Z",
            "subject": h.revisions[0].subject,
            "release": "seed",
        }
        assert h.disappeared is None
        assert [r.tags for r in cat.revisions_of(m.record["id"])] == [("seed",)]


def test_cli_diff_history_and_explain_for_the_snapshot(built: pipeline.BuildResult) -> None:
    runner, cat = CliRunner(), str(built.catalog)
    res = runner.invoke(app, ["diff", "HEAD", "seed", "--catalog", cat])
    assert res.exit_code == 0, res.stderr
    assert res.stdout.splitlines()[0].endswith(
        "-> seed (snapshot, no commit): 1 added, 0 removed, 0 changed, 0 moved"
    )
    res = runner.invoke(app, ["history", f"ValueError: {HOOK_MSG}", "--catalog", cat])
    assert res.exit_code == 0, res.stderr
    assert "first seen: snapshot, no commit 2024-06-01T12:00:00.000Z" in res.stdout
    res = runner.invoke(app, ["explain", "--release", "seed", "--json", HOOK_MSG, "--catalog", cat])
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout)["matches"][0]["releases"] == ["seed"]


def test_snapshot_rebuild_is_byte_identical(story: dict, built: pipeline.BuildResult) -> None:
    again = _build(story, "ds")
    assert again.stats["blobs_parsed"] == 0
    first = {p.name: p.read_bytes() for p in built.out.iterdir() if p.name != "manifest.json"}
    other = _build(story, "ds2", snapshot_date="2024-06-01T14:00:00+02:00")  # the same instant
    assert {p.name: p.read_bytes() for p in other.out.iterdir() if p.name != "manifest.json"} == {
        k: v.replace(str(story["tmp"] / "ds").encode(), str(story["tmp"] / "ds2").encode())
        for k, v in first.items()
    }


def test_a_snapshot_directory_places_only_files_of_the_file_set(story: dict) -> None:
    res = _build(story, "dir", snapshots=[f"{story['disk'] / 'pkg'}=python/sglang/srt/arg_groups"])
    manifest = json.loads((res.out / "manifest.json").read_text(encoding="utf-8"))
    assert [s["repoPath"] for s in manifest["provenance"]["snapshots"]] == [HOOK]


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"snapshot_date": None}, "--snapshot needs --snapshot-date ISO"),
        ({"snapshot_date": "next tuesday"}, "is not an ISO 8601 date-time"),
        ({"snapshot_date": "2023-01-01T00:00:00Z"}, "is older than the newest revision built"),
        ({"snapshot_label": "v2.0"}, "already a tag of a revision built"),
        ({"snapshots": ["hook.py"]}, "is not PATH=REPO_PATH"),
        ({"snapshots": ["/nonexistent/hook.py=" + HOOK]}, "does not exist"),
        ({"snapshots": ["{disk}/hook.py=docs/hook.py"]}, "no files in --snapshot"),
    ],
)
def test_bad_snapshots_are_one_sentence(story: dict, kw: dict, message: str) -> None:
    kw = {
        k: [x.format(disk=story["disk"]) for x in v] if k == "snapshots" else v
        for k, v in kw.items()
    }
    with pytest.raises(SourceError, match=message) as err:
        _build(story, "bad", **kw)
    assert "\n" not in str(err.value) and str(err.value).endswith(".")
    assert not (story["tmp"] / "bad").exists()


def test_snapshot_needs_git(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text('raise ValueError("--x must be set somewhere")\n')
    with pytest.raises(SourceError, match="add --git REPO"):
        pipeline.BuildSpec.from_targets(
            [str(tmp_path / "a.py")],
            snapshots=["a.py=b.py"],
            snapshot_date=DATE,
            out=tmp_path / "o",
        )
