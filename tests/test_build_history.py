"""The build pipeline and history over a real git repository made in a temp dir.

The story (one commit each, fixed dates, our own fixture code imitating the server-args shape):

  c1  initial server_args.py (tag v0.1.0)
  c2  the --tp-size message is edited               -> new id, lineage to the old one
  c3  the --kv-dtype check moves to arg_groups/      -> same id, "moved" (tag v0.2.0, annotated)
  c4  _check_sched renamed to _handle_scheduling     -> same id, "moved" (function)
  c5  (branch side) arg_groups/extra.py added
  c6  (main) lines shift in server_args.py           -> same ids
  c7  merge side
  c8  arg_groups/extra.py deleted                    -> its record disappears (tag v0.3.0)
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from kverr.catalog import open_catalog
from kverr.catalog.history import diff, history
from kverr.records import build_records
from test_sources import Git

from kverr import pipeline
from kverr.profile import load_profile

SGLANG_FILES = load_profile("sglang").files

SA = "python/sglang/srt/server_args.py"
KV = "python/sglang/srt/arg_groups/kv.py"
EXTRA = "python/sglang/srt/arg_groups/extra.py"

TP_OLD = "--tp-size must be positive"
TP_NEW = "--tp-size must be a positive integer"
KV_MSG = "--kv-dtype fp4 requires --enable-kv4"


def server_args(
    *, tp_msg: str = TP_OLD, kv_inline: bool = True, sched_name: str = "_check_sched", pad: int = 0
) -> str:
    kv = (
        '\n        if self.kv_dtype == "fp4" and not self.enable_kv4:\n'
        f'            raise ValueError("{KV_MSG}")\n'
        if kv_inline
        else "\n"
    )
    return (
        "import logging\n"
        "from dataclasses import dataclass\n"
        + "# padding\n"
        * pad
        + "\nlogger = logging.getLogger(__name__)\n\n\n"
        "@dataclass\n"
        "class ServerArgs:\n"
        "    tp_size: int = 1\n"
        '    kv_dtype: str = "auto"\n'
        "    enable_kv4: bool = False\n"
        '    schedule_policy: str = "fcfs"\n\n'
        "    def _check_tp(self):\n"
        "        if self.tp_size < 1:\n"
        f'            raise ValueError("{tp_msg}")\n' + kv + f"\n    def {sched_name}(self):\n"
        '        if self.schedule_policy == "lpm":\n'
        '            logger.warning("--schedule-policy lpm is slow with a small cache")\n'
    )


KV_GROUP = (
    "from typing import Any\n\n\n"
    "def handle_kv(server_args: Any) -> None:\n"
    '    if server_args.kv_dtype == "fp4" and not server_args.enable_kv4:\n'
    f'        raise ValueError("{KV_MSG}")\n'
)
EXTRA_GROUP = (
    "from typing import Any\n\n\n"
    "def handle_extra(server_args: Any) -> None:\n"
    '    assert server_args.tp_size <= 8, "--tp-size above 8 is not supported"\n'
)


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> dict:
    g = Git(tmp_path_factory.mktemp("story") / "repo")
    c = {}
    c["c1"] = g.commit("initial", {SA: server_args()})
    g.tag("v0.1.0")
    c["c2"] = g.commit("edit tp message", {SA: server_args(tp_msg=TP_NEW)})
    c["c3"] = g.commit(
        "move kv check", {SA: server_args(tp_msg=TP_NEW, kv_inline=False), KV: KV_GROUP}
    )
    g.tag("v0.2.0", annotated=True)
    c["c4"] = g.commit(
        "rename sched",
        {SA: server_args(tp_msg=TP_NEW, kv_inline=False, sched_name="_handle_scheduling")},
    )
    g.run("checkout", "-q", "-b", "side")
    c["c5"] = g.commit("add extra", {EXTRA: EXTRA_GROUP})
    g.run("checkout", "-q", "main")
    c["c6"] = g.commit(
        "shift lines",
        {SA: server_args(tp_msg=TP_NEW, kv_inline=False, sched_name="_handle_scheduling", pad=3)},
    )
    g.n += 1
    g.run("merge", "-q", "--no-ff", "-m", "merge side", "side")
    c["c7"] = g.run("rev-parse", "HEAD")
    g.rm(EXTRA)
    c["c8"] = g.commit("delete extra")
    g.tag("v0.3.0")
    return {"git": g, "sha": c, "tmp": tmp_path_factory.mktemp("out")}


def _build(story: dict, name: str, repo: Path | None = None) -> pipeline.BuildResult:
    tmp: Path = story["tmp"]
    git = pipeline.GitSource(repo or story["git"].root, touching=True)
    return pipeline.build(
        pipeline.BuildSpec(
            out=tmp / name, source=git, catalog=tmp / f"{name}.duckdb", repo_name="acme/engine",
            cache=tmp / f"{name}.sqlite",
        )
    )  # fmt: skip


@pytest.fixture(scope="module")
def built(story: dict) -> pipeline.BuildResult:
    return _build(story, "all")


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def _id_of(built: pipeline.BuildResult, message: str) -> str:
    (rid,) = [
        ln["record"]["id"]
        for ln in _lines(built.out / "records.jsonl")
        if ln["record"]["errorMessage"] == message
    ]
    return rid


def test_revisions_are_every_touching_commit_oldest_first(
    story: dict, built: pipeline.BuildResult
) -> None:
    revs = _lines(built.out / "revisions.jsonl")
    sha = story["sha"]
    assert [r["sha"] for r in revs] == [
        sha[k] for k in ("c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8")
    ]
    assert [r["ord"] for r in revs] == list(range(8))
    assert revs[2]["tags"] == ["v0.2.0"] and revs[2]["date"] == "2024-01-01T03:00:00.000Z"


def test_ids_survive_line_shift_move_and_rename(story: dict, built: pipeline.BuildResult) -> None:
    occ = _lines(built.out / "occurrences.jsonl")
    sha = story["sha"]
    kv, sched = (
        _id_of(built, KV_MSG),
        _id_of(built, "--schedule-policy lpm is slow with a small cache"),
    )
    ord_ = {k: i for i, k in enumerate(("c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8"))}
    # spans: one line per run of revisions where the record sits at one place
    where = {
        (o["id"], o["from"] + i): (o["file"], o["function"], line)
        for o in occ
        for i, line in enumerate(o["lines"])
    }
    assert sha and where[(kv, ord_["c2"])][:2] == (SA, "ServerArgs._check_tp")
    assert where[(kv, ord_["c3"])][:2] == (KV, "handle_kv")
    assert where[(sched, ord_["c3"])][:2] == (SA, "ServerArgs._check_sched")
    assert where[(sched, ord_["c4"])][:2] == (SA, "ServerArgs._handle_scheduling")
    lines = {n: where[(sched, n)][2] for n in range(8)}
    assert lines[ord_["c6"]] == lines[ord_["c4"]] + 3  # same id, other line
    # a span is one place (file, function, guard) over consecutive revisions, whatever the
    # line: the rename at c4 starts a new one, the line shift at c6 does not
    spans = [(o["from"], o["to"], o["lines"]) for o in occ if o["id"] == sched]
    assert [(a, b) for a, b, _ in spans] == [(0, 2), (3, 7)]
    assert all(len(lines) == b - a + 1 for a, b, lines in spans)


def test_edited_message_links_to_its_predecessor(story: dict, built: pipeline.BuildResult) -> None:
    old, new = _id_of(built, TP_OLD), _id_of(built, TP_NEW)
    assert old != new
    assert _lines(built.out / "lineage.jsonl") == [
        {"id": new, "previousId": old, "sha": story["sha"]["c2"]}
    ]
    recs = {ln["record"]["id"]: ln["record"] for ln in _lines(built.out / "records.jsonl")}
    assert recs[new]["previousId"] == old and recs[old]["previousId"] is None
    # the newest form of a vanished record is the one from the last revision that had it
    assert recs[old]["analyzedSha"] == story["sha"]["c1"]
    assert recs[new]["analyzedSha"] == story["sha"]["c8"]


def test_diff_between_releases(built: pipeline.BuildResult) -> None:
    with open_catalog(built.catalog) as cat:
        d = diff(cat, "v0.1.0", "v0.2.0")
    assert (d.added, d.removed) == ([], [])
    assert [(c["old"]["message"], c["new"]["message"], c["what"]) for c in d.changed] == [
        (TP_OLD, TP_NEW, ["message"])
    ]
    assert [
        (m["record"]["message"], m["from"]["file"], m["to"]["file"], m["to"]["function"])
        for m in d.moved
    ] == [(KV_MSG, SA, KV, "handle_kv")]


def test_diff_rename_and_delete(story: dict, built: pipeline.BuildResult) -> None:
    sha = story["sha"]
    with open_catalog(built.catalog) as cat:
        renamed = diff(cat, sha["c3"][:8], sha["c4"][:8])
        deleted = diff(cat, sha["c7"][:8], "v0.3.0")
    assert [(m["from"]["function"], m["to"]["function"]) for m in renamed.moved] == [
        ("ServerArgs._check_sched", "ServerArgs._handle_scheduling")
    ]
    assert [r["message"] for r in deleted.removed] == ["--tp-size above 8 is not supported"]
    assert (deleted.added, deleted.changed, deleted.moved) == ([], [], [])


def test_history_of_a_deleted_error(story: dict, built: pipeline.BuildResult) -> None:
    sha = story["sha"]
    with open_catalog(built.catalog) as cat:
        h = history(cat, _id_of(built, "--tp-size above 8 is not supported"))
    assert [r.sha for r in h.revisions] == [sha["c5"], sha["c7"]]
    assert h.introduced == {
        "sha": sha["c5"],
        "date": "2024-01-01T05:00:00.000Z",
        "subject": "add extra",
        "release": None,
    }
    assert h.disappeared["sha"] == sha["c8"] and h.disappeared["release"] == "v0.3.0"


def test_history_of_an_edited_message_from_a_log_line(
    story: dict, built: pipeline.BuildResult
) -> None:
    with open_catalog(built.catalog) as cat:
        h = history(cat, f"ValueError: {TP_OLD}")
    assert h.record["message"] == TP_OLD
    assert h.introduced["release"] == "v0.1.0"
    assert (h.disappeared["sha"], h.disappeared["release"]) == (story["sha"]["c2"], "v0.2.0")
    assert h.successor == _id_of(built, TP_NEW)


# ---------------------------------------------------------------- caches and determinism


def test_rebuild_is_a_noop_and_byte_identical(story: dict, built: pipeline.BuildResult) -> None:
    before = {p.name: p.read_bytes() for p in built.out.iterdir()}
    again = _build(story, "all")
    assert again.stats["blobs_parsed"] == 0
    assert again.stats["blob_cache_hits"] == again.stats["blobs"] == built.stats["blobs"]
    assert again.stats["revisions_built"] == 0
    after = {p.name: p.read_bytes() for p in again.out.iterdir()}
    assert sorted(after) == sorted(before)
    assert {k: v for k, v in after.items() if k != "manifest.json"} == {
        k: v for k, v in before.items() if k != "manifest.json"
    }
    m1, m2 = json.loads(before["manifest.json"]), json.loads(after["manifest.json"])
    assert {k: v for k, v in m1.items() if k != "build"} == {
        k: v for k, v in m2.items() if k != "build"
    }
    # the newest declarations came from each revision's linked flags in the cache
    with sqlite3.connect(again.cache) as db:
        (kept,) = db.execute("SELECT count(*) FROM kv WHERE ns = 'revflags'").fetchone()
    assert kept >= 1


def test_new_commit_reuses_unchanged_functions(story: dict, tmp_path: Path) -> None:
    clone = story["git"].clone(tmp_path / "clone")
    first = _build(story, "grow", repo=clone.root)
    clone.commit(
        "new check",
        {
            SA: server_args(tp_msg=TP_NEW, kv_inline=False, sched_name="_handle_scheduling", pad=3)
            + "\n    def _check_new(self):\n        if self.tp_size > 64:\n"
            '            raise ValueError("--tp-size above 64 is not supported")\n'
        },
    )
    second = _build(story, "grow", repo=clone.root)
    assert second.stats["revisions"] == first.stats["revisions"] + 1
    assert second.stats["blobs_parsed"] == 1  # only the changed server_args.py
    assert second.stats["unit_cache_hits"] >= 2  # its unchanged functions came from the unit cache
    assert second.stats["units_parsed"] <= 2
    assert second.counts["records"] == first.counts["records"] + 1
    # the history before the new commit was restored folded, not walked again
    assert second.stats["revisions_restored"] == first.stats["revisions"]
    # a message edited in the next commit links across that boundary
    clone.commit(
        "edit the new check",
        {
            SA: server_args(tp_msg=TP_NEW, kv_inline=False, sched_name="_handle_scheduling", pad=3)
            + "\n    def _check_new(self):\n        if self.tp_size > 64:\n"
            '            raise ValueError("--tp-size above 64 is not supported yet")\n'
        },
    )
    third = _build(story, "grow", repo=clone.root)
    fresh = _build(story, "fresh", repo=clone.root)
    assert third.stats["revisions_restored"] == second.stats["revisions"]
    assert fresh.stats["revisions_restored"] == 0
    for name in ("records.jsonl", "occurrences.jsonl", "lineage.jsonl", "revisions.jsonl"):
        assert (third.out / name).read_bytes() == (fresh.out / name).read_bytes(), name
    edited = [
        x for x in _lines(third.out / "lineage.jsonl") if x["sha"] == clone.run("rev-parse", "HEAD")
    ]
    assert len(edited) == 1


def test_bare_clone_builds_the_same_records(
    story: dict, built: pipeline.BuildResult, tmp_path: Path
) -> None:
    bare = story["git"].bare_clone(tmp_path / "bare.git")
    res = pipeline.build(
        pipeline.BuildSpec(
            out=tmp_path / "b",
            source=pipeline.GitSource(bare, touching=True),
            repo_name="acme/engine",
            cache=tmp_path / "c.sqlite",
        )
    )
    assert (res.out / "records.jsonl").read_bytes() == (built.out / "records.jsonl").read_bytes()


def test_parallel_build_matches_single(
    story: dict, built: pipeline.BuildResult, tmp_path: Path
) -> None:
    res = pipeline.build(
        pipeline.BuildSpec(
            out=tmp_path / "p",
            source=pipeline.GitSource(story["git"].root, touching=True),
            repo_name="acme/engine",
            jobs=2,
            cache=tmp_path / "p.sqlite",
        )
    )
    assert res.stats["blobs_parsed"] == built.stats["blobs_parsed"]
    for name in (
        "records.jsonl",
        "occurrences.jsonl",
        "lineage.jsonl",
        "flags.jsonl",
        "revisions.jsonl",
    ):
        assert (res.out / name).read_bytes() == (built.out / name).read_bytes()


def test_build_records_subset_matches_build_records(story: dict) -> None:
    """pipeline builds only the newest forms it needs; they must equal build_records' output."""
    from kverr.extractor import sources
    from kverr.extractor.run import extract_raw
    from kverr.pipeline.extract import link_flags

    rev, files = sources.read_git(
        story["git"].root, story["sha"]["c7"], SGLANG_FILES, repo_name="acme/engine"
    )
    exts = link_flags([extract_raw(f) for f in files])
    full = build_records(exts, rev)
    some = {r["id"] for r in full[::2]}
    assert build_records(exts, rev, only=some) == [r for r in full if r["id"] in some]


def test_guard_change_keeps_the_id_and_is_reported(tmp_path: Path) -> None:
    g = Git(tmp_path / "repo")
    head = "class ServerArgs:\n    a: bool = False\n    b: bool = False\n\n    def check(self):\n"
    g.commit(
        "one",
        {SA: head + '        if self.a:\n            raise ValueError("--a is unsupported")\n'},
    )
    g.tag("v1")
    g.commit(
        "two",
        {
            SA: head
            + '        if self.a and not self.b:\n            raise ValueError("--a is unsupported")\n'
        },
    )
    g.tag("v2")
    res = pipeline.build(
        pipeline.BuildSpec(
            out=tmp_path / "ds",
            source=pipeline.GitSource(g.root, tags="v*"),
            catalog=tmp_path / "c.duckdb",
        )
    )
    with open_catalog(res.catalog) as cat:
        d = diff(cat, "v1", "v2")
    assert (d.added, d.removed, d.moved) == ([], [], [])
    assert [(c["old"]["id"] == c["new"]["id"], c["what"]) for c in d.changed] == [(True, ["guard"])]


def test_duplicate_message_keeps_the_old_id(tmp_path: Path) -> None:
    """c1: message M in f() of server_args.py; c2: M also appears in another file that sorts
    before it (arg_groups/). The old site keeps its id; only the newcomer gets a new one, and
    `kverr diff` reports exactly that one as added."""
    from typer.testing import CliRunner

    from kverr.cli import app

    msg = "--page-size must be a power of two"
    old = (
        "class ServerArgs:\n    page_size: int = 1\n\n    def f(self):\n"
        f'        if self.page_size & (self.page_size - 1):\n            raise ValueError("{msg}")\n'
    )
    new = (
        "def handle_page(cfg) -> None:\n"
        f'    if cfg.page_size % 2:\n        raise ValueError("{msg}")\n'
    )
    group = "python/sglang/srt/arg_groups/page.py"
    assert group < SA  # the newcomer is first in (file, line) order
    g = Git(tmp_path / "repo")
    g.commit("one", {SA: old})
    g.tag("v1")
    g.commit("two", {group: new})
    g.tag("v2")
    res = pipeline.build(
        pipeline.BuildSpec(
            out=tmp_path / "ds",
            source=pipeline.GitSource(g.root, tags="v*"),
            catalog=tmp_path / "c.duckdb",
        )
    )
    spans = {
        (o["id"], o["file"], o["from"], o["to"]) for o in _lines(res.out / "occurrences.jsonl")
    }
    (old_id,) = [rid for rid, file, start, _ in spans if file == SA]
    assert (old_id, SA, 0, 1) in spans  # one unbroken span: the id survived revision two
    (new_id,) = [rid for rid, file, _, _ in spans if file == group]
    assert new_id != old_id and (new_id, group, 1, 1) in spans
    with open_catalog(res.catalog) as cat:
        d = diff(cat, "v1", "v2")
    assert [a["id"] for a in d.added] == [new_id]
    assert (d.removed, d.changed, d.moved) == ([], [], [])
    out = CliRunner().invoke(app, ["diff", "v1", "v2", "--catalog", str(res.catalog)]).output
    assert out.splitlines()[0].endswith(": 1 added, 0 removed, 0 changed, 0 moved")
    # Adding a commit folds in only it (history restored from the cache) and keeps both ids.
    g.commit("three", {SA: "# a comment\n" + old})
    g.tag("v3")
    again = pipeline.build(
        pipeline.BuildSpec(
            out=tmp_path / "ds",
            source=pipeline.GitSource(g.root, tags="v*"),
            catalog=tmp_path / "c.duckdb",
        )
    )
    assert again.stats["revisions_restored"] == 2
    fresh = pipeline.build(
        pipeline.BuildSpec(
            out=tmp_path / "fresh",
            source=pipeline.GitSource(g.root, tags="v*"),
            cache=tmp_path / "f.sqlite",
        )
    )
    for name in ("records.jsonl", "occurrences.jsonl"):
        assert (again.out / name).read_bytes() == (fresh.out / name).read_bytes()
    spans = {
        (o["id"], o["file"], o["from"], o["to"]) for o in _lines(again.out / "occurrences.jsonl")
    }
    assert spans == {(old_id, SA, 0, 2), (new_id, group, 1, 2)}
    # A one-revision build of c2 (no history) picks the first site in (file, line) order.
    alone = pipeline.build(
        pipeline.BuildSpec(out=tmp_path / "ds2", source=pipeline.GitSource(g.root, revs=["v2"]))
    )
    ids = {o["file"]: o["id"] for o in _lines(alone.out / "occurrences.jsonl")}
    assert ids[SA] != old_id and ids[group] == old_id
