"""Fixes (records/knowledge/fixes.py): solutions, exampleFix."""

from __future__ import annotations

import argparse

from test_records_knowledge import PROBES, _by_message, _fix_lines, _records, _run_check


def test_a_required_value_flag_gets_a_value_in_the_fix():
    src = """
class ServerArgs:
    backup_target: str = None

    def f(self):
        if self.enable_offload and not self.backup_target:
            raise ValueError("--enable-offload requires --backup-target.")


def add_cli_args(parser):
    parser.add_argument("--backup-target", type=str, choices=["host", "disk"])
    parser.add_argument("--enable-offload", action="store_true")
"""
    (rec,) = _records(src)
    assert _fix_lines(rec["exampleFix"]) == (
        "--enable-offload",
        "--enable-offload --backup-target=host",
    )


def test_a_missing_file_fix_points_at_an_existing_file(tmp_path):
    rec = _by_message(_records(PROBES), "Key file not found")
    before, after = _fix_lines(rec["exampleFix"])
    assert (before, after) == ("--key-file=/no/such/file", "--key-file=/path/to/existing/file")
    code = rec["validationCode"]
    assert code.startswith("import os\n")
    key = tmp_path / "key.pem"
    key.write_text("k", encoding="utf-8")
    assert _run_check(code, argparse.Namespace(key_file=str(tmp_path / "missing.pem")))
    assert not _run_check(code, argparse.Namespace(key_file=str(key)))
    assert not _run_check(code, argparse.Namespace(key_file=None))
