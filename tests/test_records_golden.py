"""Golden records: tests/golden/records/<case>.py -> <case>.jsonl (one record per line, sorted keys).

Regenerate after an intended change with:  KVERR_REGEN=1 pytest tests/test_records_golden.py
and review the diff.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import pytest
from kverr.extractor import extract_file, render
from kverr.records import build_records
from kverr.records.collisions import collisions, rendered_message

from kverr.ftypes import Revision, SourceFile

GOLDEN = Path(__file__).resolve().parent / "golden" / "records"
CASES = sorted(p.stem for p in GOLDEN.glob("*.py"))
REV = Revision(
    repo="sgl-project/sglang",
    sha="0132848349585cfe6aae51c4941cbae872505f8a",
    date="2026-04-24T08:00:00.000Z",
)


def _records(text: str, path: str) -> list[dict]:
    fx = extract_file(SourceFile(path=path, text=text, blob="0" * 40))
    assert not fx.failures
    return build_records([fx], REV)


def _check(records: list[dict], golden: Path) -> None:
    text = "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in records)
    if os.environ.get("KVERR_REGEN") == "1":
        golden.write_text(text, encoding="utf-8")
    assert golden.is_file(), f"run KVERR_REGEN=1 pytest {__file__} to create {golden.name}"
    assert text == golden.read_text(encoding="utf-8")


@pytest.mark.parametrize("case", CASES)
def test_golden_fixture(case):
    src = (GOLDEN / f"{case}.py").read_text(encoding="utf-8")
    _check(_records(src, f"python/sglang/srt/arg_groups/{case}.py"), GOLDEN / f"{case}.jsonl")


SUMMARY = (
    "id",
    "lineNumber",
    "kind",
    "severity",
    "backgroundTag",
    "errorType",
    "handlingStrategy",
    "flags",
    "tags",
)


def test_golden_seed_module(seed_module):
    """The seed is upstream code, which must not be copied into this repository, so its golden
    keeps only the classification fields plus a sha256 of the whole record: any change to any
    field fails, and the visible fields show what moved."""
    records = _records(seed_module, "python/sglang/srt/arg_groups/kv_cache_hook.py")
    summary = [
        {
            **{k: r[k] for k in SUMMARY},
            "sha256": hashlib.sha256(json.dumps(r, sort_keys=True).encode()).hexdigest(),
        }
        for r in records
    ]
    _check(summary, GOLDEN / "seed_kv_cache_hook.jsonl")


@pytest.mark.parametrize("case", CASES)
def test_every_pattern_matches_its_rendered_message(case):
    for rec in _records((GOLDEN / f"{case}.py").read_text(encoding="utf-8"), f"{case}.py"):
        if rec["messagePattern"]:
            assert re.search(rec["messagePattern"], rendered_message(rec)), rec["id"]


def test_collision_report_lists_identical_messages():
    records = _records((GOLDEN / "collisions.py").read_text(encoding="utf-8"), "c.py")
    same = {r["id"] for r in records if r["errorMessage"] == "Unsupported configuration."}
    assert len(same) == 4
    pairs = collisions(records)
    assert {(a, b) for a in same for b in same if a != b} == set(pairs)
    # A clean fixture has no pair: every message is told apart by its own pattern.
    assert (
        collisions(_records((GOLDEN / "group_hook.py").read_text(encoding="utf-8"), "g.py")) == []
    )


def test_render_helper_agrees_with_the_extractor():
    """rendered_message (used on records, which keep no format specs) matches extractor.render
    for plain placeholders."""
    src = 'def f(cfg):\n    raise ValueError(f"bad --mode {cfg.mode} for --size {cfg.size}.")\n'
    fx = extract_file(SourceFile(path="x.py", text=src, blob="0"))
    (rec,) = build_records([fx], REV)
    (site,) = fx.sites
    from kverr.records.pattern import sample_value

    values = {p.expr or "": sample_value(p) for p in site.template.placeholders}
    assert rendered_message(rec) == render(site.template, values)
