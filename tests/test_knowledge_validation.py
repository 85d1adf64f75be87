"""Code over parsed args (records/knowledge/validation.py): validationCode."""

from __future__ import annotations

import argparse

from test_records_knowledge import PROBES, _by_message, _records, _run_check


def test_validation_code_covers_arithmetic_and_chained_comparisons():
    rec = _by_message(_records(PROBES), "divisible by nodes")
    code = rec["validationCode"]
    ok = argparse.Namespace(tp_size=4, nodes=2, ratio=0.5)
    assert not _run_check(code, ok)
    assert _run_check(code, argparse.Namespace(tp_size=3, nodes=2, ratio=0.5))
    assert _run_check(code, argparse.Namespace(tp_size=4, nodes=2, ratio=1.5))
