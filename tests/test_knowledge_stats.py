"""scripts/knowledge_stats.py: the quality figures and the per-step comparison."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from test_records_knowledge import _records

ROOT = Path(__file__).resolve().parents[1]
WORDS = ROOT / "tests" / "golden" / "records" / "words.py"


def _script():
    spec = importlib.util.spec_from_file_location(
        "knowledge_stats", ROOT / "scripts" / "knowledge_stats.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _write(path: Path, records: list[dict]) -> Path:
    path.mkdir()
    lines = "".join(json.dumps({"record": r}) + "\n" for r in records)
    (path / "records.jsonl").write_text(lines, encoding="utf-8")
    return path


FIX = "# before\n{head} {before}\n# after\n{head} {after}"
HEAD = "python -m sglang.launch_server --model-path MODEL_PATH"


@pytest.mark.parametrize(
    ("before", "after", "deletes"),
    [
        ("--enable-x --tp-size=2", "--tp-size=2", True),
        ("--enable-x", "--enable-x --mem=48", False),
        ("--backend=a", "--backend=b", False),
    ],
)
def test_a_fix_that_only_deletes_flags(before, after, deletes):
    fix = FIX.format(head=HEAD, before=before, after=after)
    assert _script().deletes_only(fix) is deletes


def test_steps_count_the_records_each_change_touched(tmp_path):
    ks = _script()
    recs = _records(WORDS.read_text(encoding="utf-8"))
    edited = [dict(r) for r in recs]
    edited[0]["documentation"] = ""
    edited[1]["solutions"] = ["Remove --speculative-mode"]
    a, b = _write(tmp_path / "a", recs), _write(tmp_path / "b", edited)
    rows = ks.steps([("a", ks.load(a)), ("b", ks.load(b))])
    assert [r["changed"] for r in rows] == [None, 2]
    assert rows[1]["fields"] == {"documentation": 1, "solutions": 1}
    assert rows[1]["no 'What it means'"] == rows[0]["no 'What it means'"] + 1
    table = ks.show_steps(rows)
    assert table.splitlines()[0].startswith("| step | records | changed |")
    assert "b: documentation 1, solutions 1" in table


def test_verification_figures_count_statuses_and_fixes_shown_unverified():
    ks = _script()
    recs = _records(WORDS.read_text(encoding="utf-8"))
    errors = [r for r in recs if r["kind"] in ("raise", "assert")]
    assert len(errors) >= 2
    done = {"status": "verified", "platform": "cuda-sm90", "revision": "x", "reason": ""}
    marked = [dict(r) for r in recs]
    for r in marked:
        if r["id"] == errors[0]["id"]:
            r["verification"] = done
    v = ks.verification(marked)
    assert v["verified"] == 1 and v["unverified"] == len(recs) - 1
    assert v["errorsNewest"] == len(errors) and v["verifiedErrorsNewest"] == 1
    shown = sum(bool(r["exampleFix"]) for r in marked if r["verification"] != done)
    assert v["fixShownUnverified"] == shown
    assert "verification: 1 verified" in ks.show(ks.stats(marked))


def test_a_review_sample_draws_the_same_records_for_the_same_seed(tmp_path, capsys):
    ks = _script()
    recs = _records(WORDS.read_text(encoding="utf-8"))
    data = _write(tmp_path / "d", recs)
    first = [r["id"] for r in ks.sample(ks.load(data), 5, 7)]
    assert first == [r["id"] for r in ks.sample(ks.load(data), 5, 7)]
    assert len(set(first)) == 5 and all(r["kind"] != "argparse" for r in ks.sample(recs, 5, 7))
    assert ks.main([str(data), "--sample", "3", "--seed", "7"]) == 0
    out = capsys.readouterr().out
    shown = [r["id"] for r in ks.sample(ks.load(data), 3, 7)]
    assert all(rid in out for rid in shown)
    for field in ("message:", "source:", *(f + ":" for f in ks.SHEET_FIELDS)):
        assert out.count(field) >= 3, field
