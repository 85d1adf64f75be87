"""Code over parsed args (records/knowledge/validation.py): validationCode."""

from __future__ import annotations

import argparse
import ast
import dataclasses
import logging
from pathlib import Path
from typing import Optional

from test_records_knowledge import PROBES, _by_message, _fix_lines, _records, _run_check


def test_validation_code_covers_arithmetic_and_chained_comparisons():
    rec = _by_message(_records(PROBES), "divisible by nodes")
    code = rec["validationCode"]
    ok = argparse.Namespace(tp_size=4, nodes=2, ratio=0.5)
    assert not _run_check(code, ok)
    assert _run_check(code, argparse.Namespace(tp_size=3, nodes=2, ratio=0.5))
    assert _run_check(code, argparse.Namespace(tp_size=4, nodes=2, ratio=1.5))


WORDS = Path(__file__).resolve().parent / "golden" / "records" / "words.py"


def real_parser(text: str) -> argparse.ArgumentParser:
    """The fixture's own argparse parser: its classes, constants and add_cli_args, run for real
    (its imports name modules that do not exist, and nothing here needs them)."""
    tree = ast.parse(text)
    keep = [
        n
        for n in tree.body
        if isinstance(n, (ast.ClassDef, ast.Assign))
        or (isinstance(n, ast.FunctionDef) and n.name == "add_cli_args")
    ]
    ns = {
        "argparse": argparse,
        "dataclasses": dataclasses,
        "logging": logging,
        "List": list,
        "Optional": Optional,
    }
    exec(compile(ast.Module(keep, []), str(WORDS), "exec"), ns)
    parser = argparse.ArgumentParser()
    ns["add_cli_args"](parser)
    return parser


def _words_records() -> list[dict]:
    return _records(WORDS.read_text(encoding="utf-8"), "python/sglang/srt/server_args.py")


def test_validation_code_reads_the_namespace_the_real_parser_returns():
    """--expert-shards is an alias of --expert-data-parallel-size: argparse stores it as
    expert_data_parallel_size, and the check must read that name."""
    parser = real_parser(WORDS.read_text(encoding="utf-8"))
    rec = _by_message(_words_records(), "divisible by expert_shards")
    assert "args.expert_data_parallel_size" in rec["validationCode"]
    before, after = _fix_lines(rec["exampleFix"])
    assert _run_check(rec["validationCode"], parser.parse_args(before.split()))
    assert not _run_check(rec["validationCode"], parser.parse_args(after.split()))


def test_every_validation_code_runs_on_the_real_namespace():
    parser = real_parser(WORDS.read_text(encoding="utf-8"))
    checks = [r["validationCode"] for r in _words_records() if r["validationCode"]]
    assert checks
    for code in checks:
        _run_check(code, parser.parse_args([]))  # no AttributeError: every name exists
