"""Release names for a fork without release tags: a real git repository made in a temp dir
(our own engine-arguments module, one commit each, fixed dates), built with a profile whose
[releases] table names the releases by a version-bump commit and by date, then loaded with a
second project into one catalog. No card, site page or API answer names a release by a bare
hash when a release name exists.

  c1  2024-01-01  engine args with the block-size check
  c2  2024-01-01  "Bump version to v0.1.0" (outside the file set)   -> c1 is v0.1.0
  c3              the batch check added
  c4              the batch message edited
  (v0.2.0 shipped between c3 and c4; v0.9.0 after c4: no revision holds it for sure)
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
from kverr.catalog import load_datasets, open_catalog
from kverr.feeds.api import create_app
from kverr.feeds.site import export_site
from kverr.present.text import card
from starlette.testclient import TestClient
from test_sources import Git
from typer.testing import CliRunner

from kverr import pipeline
from kverr.cli import app
from kverr.errors import NotFound
from kverr.profile import load_profile

ARGS = "vllm/engine/arg_utils.py"
SERVER = "python/sglang/srt/server_args.py"
BLOCK = "block_size must be a multiple of 16"


def engine_args(batch: str | None) -> str:
    check = (
        f'        if self.max_num_batched_tokens < 1:\n            raise ValueError("{batch}")\n'
    )
    return (
        "from dataclasses import dataclass\n\n\n"
        "@dataclass\n"
        "class EngineArgs:\n"
        "    block_size: int = 16\n"
        "    max_num_batched_tokens: int = 2048\n\n"
        "    def __post_init__(self):\n"
        "        if self.block_size % 16:\n"
        f'            raise ValueError("{BLOCK}")\n' + (check if batch else "")
    )


def _iso(hours: int) -> str:
    return f"2024-01-{1 + hours // 24:02d}T{hours % 24:02d}:30:00Z"


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("releases")
    g = Git(root / "fork-repo")
    c = {
        "c1": g.commit("engine args", {ARGS: engine_args(None)}),
        "c2": g.commit("Bump version to v0.1.0 (#1)", {"vllm/version.py": "V = 1\n"}),
        "c3": g.commit("batch check", {ARGS: engine_args("max_num_batched_tokens must be >= 1")}),
    }
    c["c4"] = g.commit("batch wording", {ARGS: engine_args("max_num_batched_tokens is too small")})
    profile = dataclasses.replace(
        load_profile("vllm"),
        release_dates=(("0.1.0", _iso(1)), ("0.2.0", _iso(3)), ("0.9.0", "2031-01-01T00:00:00Z")),
    )
    pipeline.build(
        pipeline.BuildSpec(
            out=root / "vllm",
            source=pipeline.GitSource(g.root, revs=["HEAD"], touching=True),
            profile=profile,
        )
    )
    s = Git(root / "sglang-repo")
    s.commit("server args", {SERVER: "class ServerArgs:\n    tp_size: int = 1\n"})
    s.tag("v0.5.0")
    s.tag("v0.1.0")  # a version number both projects have
    pipeline.build(
        pipeline.BuildSpec(
            out=root / "sglang", source=pipeline.GitSource(s.root, revs=["HEAD"], tags="v*")
        )
    )
    load_datasets([root / "sglang", root / "vllm"], root / "catalog.duckdb")
    cat = open_catalog(root / "catalog.duckdb")
    yield cat, c, root
    cat.close()


def _bare(text: str, cat) -> list[str]:
    """Short shas of named revisions that `text` shows without their release name just before."""
    out = []
    for r in cat.revisions(project="vllm"):
        short = r.sha[:10]
        for m in re.finditer(short, text) if r.tags else ():
            if not any(t in text[max(0, m.start() - 60) : m.start()] for t in r.tags):
                out.append(short)
    return out


def test_the_bump_commit_names_the_revision_with_its_files_and_a_date_names_one_nearly(catalog):
    cat, c, _ = catalog
    tags = {r.sha: list(r.tags) for r in cat.revisions(project="vllm")}
    assert tags[c["c1"]] == ["v0.1.0"]
    assert tags[c["c3"]] == ["≈v0.2.0"]
    assert tags[c["c4"]] == []  # v0.9.0 shipped after the newest revision built
    assert cat.resolve_version("0.2.0", project="vllm").sha == c["c3"]


def test_a_card_names_releases_and_marks_those_found_by_date(catalog):
    cat, c, _ = catalog
    (m,) = cat.explain(BLOCK, project="vllm")
    text = "\n".join(card(m, orders=cat.release_orders()))
    assert "v0.1.0, ≈v0.2.0, " in text and "≈: the commit nearest the release's date" in text
    assert _bare(text, cat) == []


def test_the_site_and_the_api_name_releases_not_hashes(catalog, tmp_path: Path):
    cat, c, _ = catalog
    export_site(cat, tmp_path / "site")
    (m,) = cat.explain(BLOCK, project="vllm")
    page = (tmp_path / "site" / "errors" / f"{m.record['slug']}.html").read_text(encoding="utf-8")
    assert "v0.1.0" in page and "unreleased" not in page
    client = TestClient(create_app(cat))
    versions = client.get("/versions", params={"project": "vllm"}).json()
    assert versions["releases"][:2] == ["v0.1.0", "≈v0.2.0"]
    answer = client.get(f"/errors/{m.record['id']}").json()
    for text in (json.dumps(answer), json.dumps(versions["releases"]), page):
        assert _bare(text, cat) == []


def test_another_project_s_release_names_that_project(catalog):
    cat, _, _ = catalog
    with pytest.raises(
        NotFound, match=r"0\.2\.0 is a version of vLLM, not of SGLang; try --project vllm"
    ):
        cat.resolve_version("0.2.0", project="sglang")


def test_a_version_both_projects_have_is_each_one_s_own(catalog):
    cat, c, _ = catalog
    (m,) = cat.explain(BLOCK, version="0.1.0")  # vLLM's v0.1.0, though SGLang has one too
    assert m.record["project"] == "vllm"
    with pytest.raises(NotFound, match=r"0\.1\.0 is a version of sglang and vllm; pass --project"):
        cat.resolve_version("0.1.0")


def test_a_version_only_another_project_has_says_so(catalog):
    _, _, root = catalog
    got = CliRunner().invoke(
        app, ["explain", "--catalog", str(root / "catalog.duckdb"), "--release", "0.5.0", BLOCK]
    )
    assert got.output.startswith(
        "0.5.0 is a version of SGLang, and this is vLLM's error: pass one of its versions to"
        " --release."
    ), got.output


def test_flag_history_names_the_first_release_that_holds_a_commit() -> None:
    """`from 62c516ac45 on` reads `from v0.1.0 on` when a release holds that commit."""
    from kverr.catalog.argparse_answers import History

    def rev(n: int, tags: list[str], sha: str | None = "") -> dict:
        return {"ord": n, "sha": sha if sha is None else str(n) * 40, "tags": tags}

    h = History([rev(0, []), rev(1, ["v0.1.0"]), rev(2, []), rev(3, ["≈v0.2.0"]), rev(4, [])])
    assert [h.at(n) for n in range(5)] == ["v0.1.0", "v0.1.0", "≈v0.2.0", "≈v0.2.0", "4" * 10]
    assert h.text({0, 1, 2}) == "v0.1.0"  # the run holds one release
    assert h.text({2, 3, 4}) == "≈v0.2.0 … " + "4" * 10
    assert History([rev(0, []), rev(1, ["seed"], sha=None)]).at(0) == "0" * 10
