"""scripts/coverage.py: per glob of a profile's file set and launch path, the records a dataset
holds and how many name a flag (the table docs/maintainers.md shows)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from kverr.profile import load_profile

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location("coverage", ROOT / "scripts" / "coverage.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _rec(path: str, flags: list[str], scope: str | None = None) -> dict:
    return {
        "project": "sglang",
        "filePath": path,
        "flags": flags,
        **({"scope": scope} if scope else {}),
    }


def test_records_counted_per_glob_and_set(tmp_path, capsys):
    ds = tmp_path / "sglang"
    ds.mkdir()
    records = [
        _rec("python/sglang/srt/server_args.py", ["--tp-size"]),
        _rec("python/sglang/srt/server_args.py", []),
        _rec("python/sglang/srt/arg_groups/spec/eagle.py", ["--speculative-algorithm"]),
        _rec("python/sglang/srt/managers/scheduler.py", ["--max-running-requests"], "launch-path"),
        _rec("python/sglang/srt/managers/scheduler.py", [], "launch-path"),
    ]
    lines = "".join(json.dumps({"record": r}) + "\n" for r in records)
    (ds / "records.jsonl").write_text(lines, encoding="utf-8")
    assert _script().main([str(ds)]) == 0
    rows = {
        line.rsplit(maxsplit=2)[0].strip(): line.split()[-2:]
        for line in capsys.readouterr().out.splitlines()[2:]
    }
    assert rows["python/sglang/srt/server_args.py"] == ["2", "1"]
    assert rows["python/sglang/srt/arg_groups/**/*.py"] == ["1", "1"]
    assert rows["server-args files: 3 globs"] == ["3", "2"]
    assert rows["python/sglang/srt/managers/scheduler.py"] == ["2", "1"]
    assert rows["python/sglang/srt/model_executor/model_runner.py"] == ["0", "0"]
    globs = len(load_profile("sglang").launch_path)
    assert rows[f"launch path: {globs} globs"] == ["2", "1"]


def test_the_manifest_gives_the_builds_counts(tmp_path, capsys):
    ds = tmp_path / "sglang"
    ds.mkdir()
    (ds / "records.jsonl").write_text(json.dumps({"record": _rec("a.py", [])}) + "\n")
    verification = {"counts": {"verified": 12}, "platform": "cuda-sm90", "newest": "abc123",
                    "verifiedNewest": 9, "errorsNewest": 10, "beforeStartNewest": 8,
                    "beforeStartVerifiedNewest": 7, "beforeStartNotApplicableNewest": 1}  # fmt: skip
    counts = {"revisions": 1234, "flags": 56, "verification": verification}
    (ds / "manifest.json").write_text(json.dumps({"counts": counts}), encoding="utf-8")
    assert _script().main([str(ds)]) == 0
    assert capsys.readouterr().out.splitlines()[1:4] == [
        "  1,234 revisions built, 56 flags",
        "  12 records with a fix verified on cuda-sm90; at abc123, 9 of 10 raise/assert records",
        "    of them checked before start-up: 7 of 8 (1 not applicable)",
    ]


def test_a_folder_without_records_is_one_line_and_exit_2(tmp_path, capsys):
    assert _script().main([str(tmp_path)]) == 2
    assert (
        capsys.readouterr().err.strip()
        == f"{tmp_path}: no records.jsonl; pass a dataset directory."
    )
