"""scripts/verify_trace.py: every run the fix search makes for a record, on the fixture
project laid out as SGLang (so the shipped spec drives it) in a real git repo."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from kverr.extractor import extract_files, sources
from kverr.records import build_records
from test_sources import Git
from verify_fixture import sglang_files

from kverr.profile import default_profile

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location(
        "verify_trace", ROOT / "scripts" / "verify_trace.py"
    )
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_the_trace_shows_each_run_and_the_verdict(tmp_path, capsys) -> None:
    g = Git(tmp_path / "repo")
    sha = g.commit("fixture", sglang_files())
    rev, files = sources.read_git(g.root, sha, default_profile().files)
    (rec,) = [
        r
        for r in build_records(extract_files(files), rev)
        if r["errorMessage"].startswith("tp_size must be divisible")
    ]
    assert _script().main([str(g.root), sha, rec["id"]]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{rec['id']} line {rec['lineNumber']}: tp_size must be divisible")
    assert "  run [cuda-sm90]" in out and "--moe-dp-size 2" in out
    assert "  => verified" in out and "# after" in out
    assert _script().step.runner_for.__name__ == "runner_for"  # the trace is put back


def test_an_id_the_revision_lacks_is_one_line_on_stderr(tmp_path, capsys) -> None:
    g = Git(tmp_path / "repo")
    sha = g.commit("fixture", sglang_files())
    assert _script().main([str(g.root), sha, "0" * 16]) == 1
    assert capsys.readouterr().err.strip() == f"none of ['{'0' * 16}'] is a record of {sha}"
    assert _script().main([]) == 2
