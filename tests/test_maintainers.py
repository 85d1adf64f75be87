"""Maintainers' output: `kverr diff` is symmetric, in file and line order, and shows
guard changes old -> new; `kverr build` names its extraction cache and reports each pattern
collision once per pair. A real git repository built by the real pipeline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_sources import Git
from typer.testing import CliRunner

from kverr.cli import app

SA = "python/sglang/srt/server_args.py"
GROUP = "python/sglang/srt/arg_groups/cache.py"

V1 = """import logging

logger = logging.getLogger(__name__)


class ServerArgs:
    def check_alpha(self):
        if self.alpha:
            raise ValueError(f"--alpha {self.alpha} is not supported with --beta")

    def check_beta(self):
        if self.beta and self.gamma:
            raise ValueError("--beta cannot be combined with --gamma")

    def check_old(self):
        if self.old:
            raise ValueError("--old-flag was removed; drop it from the launch command")

    def check_note(self):
        if self.note:
            logger.warning("--note is only a hint and changes nothing")
"""
V2 = """import logging

logger = logging.getLogger(__name__)


class ServerArgs:
    def check_alpha(self):
        if self.alpha:
            raise ValueError(f"--alpha {self.alpha} is no longer supported together with --beta")

    def check_beta(self):
        if self.beta and not self.gamma:
            raise ValueError("--beta cannot be combined with --gamma")

    def check_new(self):
        if self.fresh:
            raise ValueError("--fresh needs --cache-dir to be set")

    def check_notes(self):
        if self.note:
            logger.warning("--note is only a hint and changes nothing")
"""
GROUP_V2 = """class CacheArgs:
    def check(self):
        if self.cache_size < 0:
            raise ValueError("--cache-size must not be negative")
        if self.dup:
            raise ValueError("--dup is set twice in this launch")
        if self.dup2:
            raise ValueError("--dup is set twice in this launch")
"""


def run(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(app, list(args))
    return res.exit_code, res.stdout, res.stderr


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    tmp = tmp_path_factory.mktemp("maint")
    g = Git(tmp / "repo")
    g.commit("one", {SA: V1})
    g.tag("v1.0")
    g.commit("two", {SA: V2, GROUP: GROUP_V2})
    g.tag("v2.0")
    code, out, err = run("build", "--git", str(g.root), "--tags", "v*", "--out", str(tmp / "ds"),
                         "--catalog", str(tmp / "c.duckdb"), "--cache", str(tmp / "x.sqlite"))  # fmt: skip
    assert (code, err) == (0, ""), out
    return tmp, out


def canon(item: dict) -> str:
    return json.dumps(item, sort_keys=True)


def diff(built, a: str, b: str, *extra: str) -> tuple[int, str]:
    code, out, err = run("diff", a, b, "--catalog", str(built[0] / "c.duckdb"), *extra)
    assert err == ""
    return code, out


def test_diff_is_symmetric(built):
    _, fwd = diff(built, "v1.0", "v2.0", "--json")
    _, back = diff(built, "v2.0", "v1.0", "--json")
    f, b = json.loads(fwd), json.loads(back)
    assert (len(f["added"]), len(f["removed"]), len(f["changed"]), len(f["moved"])) == (4, 1, 2, 1)
    assert (f["from"], f["to"]) == (b["to"], b["from"])
    assert f["added"] == b["removed"] and f["removed"] == b["added"]
    flipped = [{"old": c["new"], "new": c["old"], "what": c["what"],
                **({"guard": {"old": c["guard"]["new"], "new": c["guard"]["old"]}} if "guard" in c else {})}
               for c in b["changed"]]  # fmt: skip
    assert sorted(flipped, key=canon) == sorted(f["changed"], key=canon)
    assert [(m["from"], m["to"]) for m in f["moved"]] == [(m["to"], m["from"]) for m in b["moved"]]
    # the human summary says the same counts, swapped
    _, text_f = diff(built, "v1.0", "v2.0")
    _, text_b = diff(built, "v2.0", "v1.0")
    assert ": 4 added, 1 removed, 2 changed, 1 moved" in text_f.splitlines()[0]
    assert ": 1 added, 4 removed, 2 changed, 1 moved" in text_b.splitlines()[0]


def test_an_edited_message_is_one_change_both_ways(built):
    for a, b in (("v1.0", "v2.0"), ("v2.0", "v1.0")):
        doc = json.loads(diff(built, a, b, "--json")[1])
        edited = [c for c in doc["changed"] if "message" in c["what"]]
        assert len(edited) == 1 and "--alpha" in edited[0]["old"]["message"]
        assert edited[0]["old"]["id"] != edited[0]["new"]["id"]


def test_diff_is_in_file_and_line_order(built):
    doc = json.loads(diff(built, "v1.0", "v2.0", "--json")[1])
    places = [(r["file"], r["line"]) for r in doc["added"]]
    assert (
        places == sorted(places) and places[0][0] == GROUP
    )  # arg_groups/ sorts before server_args
    assert [r["file"] for r in doc["added"]] == [GROUP, GROUP, GROUP, SA]


def test_guard_change_shows_old_and_new_tests(built):
    doc = json.loads(diff(built, "v1.0", "v2.0", "--json")[1])
    (guard,) = [c for c in doc["changed"] if c["what"] == ["guard"]]
    assert guard["old"]["id"] == guard["new"]["id"]
    assert guard["guard"]["old"]["text"] == "(beta and gamma)"
    assert guard["guard"]["new"]["text"] == "(beta and not gamma)"
    assert len(guard["guard"]["old"]["hash"]) == 12
    text = diff(built, "v1.0", "v2.0")[1].splitlines()
    at = text.index("      changed: guard")
    assert text[at + 1 : at + 4] == [
        "      guard:",
        "        - (beta and gamma)",
        "        + (beta and not gamma)",
    ]
    back = diff(built, "v2.0", "v1.0")[1].splitlines()
    at = back.index("      changed: guard")
    assert back[at + 2 : at + 4] == [
        "        - (beta and not gamma)",
        "        + (beta and gamma)",
    ]


def test_build_names_its_cache_and_each_collision_once(built):
    tmp, out = built
    lines = out.splitlines()
    assert f"  extraction cache: {tmp / 'x.sqlite'} (reused by the next build)" in lines
    head = next(i for i, x in enumerate(lines) if "pattern collision" in x)
    assert lines[head] == ("2 pattern collision(s) in the newest revision, 1 pair(s)"
                           " (A -> B: A's pattern matches B's message):")  # fmt: skip
    pair = lines[head + 1 :]
    assert (
        len(pair) == 1
        and " <-> " in pair[0]
        and pair[0].endswith("--dup is set twice in this launch")
    )
    assert all(len(x) <= 100 for x in lines[head + 1 :])
