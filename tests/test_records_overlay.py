"""Curated overlay: applied after derivation, validated, warns when stale, rejects bad files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kverr.extractor import extract_file
from kverr.records import build_records
from kverr.records.overlay import load_overlay, overlay_warnings

from kverr.errors import DatasetError, SchemaError
from kverr.ftypes import Revision, SourceFile

SRC = 'class ServerArgs:\n    def f(self):\n        if self.enable_a:\n            raise ValueError("--enable-a is not supported yet.")\n'


def _build(overlay=None) -> list[dict]:
    fx = extract_file(SourceFile(path="python/sglang/srt/server_args.py", text=SRC, blob="0" * 40))
    return build_records([fx], Revision(), overlay=overlay)


def _write(tmp_path, data) -> object:
    path = tmp_path / "curated.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return load_overlay(path)


def test_overlay_wins_and_survives_regeneration(tmp_path):
    (plain,) = _build()
    entry = {
        "documentation": "Feature A lands in the next release.",
        "solutions": ["Drop --enable-a"],
        "sourceMessage": plain["errorMessage"],
    }
    overlay = _write(tmp_path, {plain["id"]: entry})
    for _ in range(2):  # regenerate twice: the curated text stays
        (rec,) = _build(overlay)
        assert (
            rec["documentation"] == entry["documentation"]
            and rec["solutions"] == entry["solutions"]
        )
        assert "sourceMessage" not in rec
        assert (
            rec["triggerScenarios"] == plain["triggerScenarios"]
        )  # untouched fields keep the derivation
    assert overlay_warnings([rec], overlay) == []


def test_stale_entries_warn(tmp_path):
    (plain,) = _build()
    overlay = _write(
        tmp_path,
        {
            plain["id"]: {"documentation": "x", "sourceMessage": "an older wording"},
            "f" * 16: {"tags": ["gone"]},
        },
    )
    warnings = overlay_warnings(_build(overlay), overlay)
    assert len(warnings) == 2
    assert f"message of {plain['id']} changed" in warnings[0]
    assert f"id {'f' * 16} is not in this build" in warnings[1]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("{nope", "not valid JSON at line 1"),
        (json.dumps([1]), "must be a JSON object"),
        (json.dumps({"abc": {}}), "not a 16-hex record id"),
        (json.dumps({"a" * 16: "text"}), "must be an object"),
        (json.dumps({"a" * 16: {"errorMessage": "x"}}), "errorMessage, which cannot be curated"),
    ],
)
def test_bad_overlay_files(tmp_path, data, message):
    path = tmp_path / "curated.json"
    path.write_text(data, encoding="utf-8")
    with pytest.raises(DatasetError, match=message):
        load_overlay(path)
    with pytest.raises(DatasetError, match="does not exist"):
        load_overlay(tmp_path / "missing.json")


def test_overlay_values_are_validated(tmp_path):
    (plain,) = _build()
    overlay = _write(tmp_path, {plain["id"]: {"backgroundTag": "made-up"}})
    with pytest.raises(
        SchemaError, match=f"record {plain['id']} fails schema v2 at field backgroundTag"
    ):
        _build(overlay)


def test_packaged_overlay_loads():
    assert (
        load_overlay(Path(__file__).resolve().parents[1] / "data" / "curated.json").entries
        is not None
    )


def test_repin_matches_a_fresh_build():
    from kverr.records import repin

    fx = extract_file(SourceFile(path="python/sglang/srt/server_args.py", text=SRC, blob="0" * 40))
    other = Revision(repo="sgl-project/sglang", sha="9" * 40, date="2026-03-03T00:00:00Z")
    (fresh,) = build_records([fx], other)
    (plain,) = _build()
    assert repin(plain, other) == fresh
