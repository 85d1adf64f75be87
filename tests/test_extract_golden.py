"""Golden files: tests/golden/extract/<case>.py beside <case>.json (the extracted sites).

Regenerate after a reviewed change with: KVERR_REGEN=1 pytest tests/test_extract_golden.py
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from kverr.extractor import extract

from kverr.ftypes import to_json

GOLDEN = Path(__file__).resolve().parent / "golden" / "extract"
SEED_PATH = "python/sglang/srt/arg_groups/kv_cache_hook.py"


def _check(text: str, path: str, expected: Path) -> None:
    got = to_json(extract(text, path), indent=2) + "\n"
    if os.environ.get("KVERR_REGEN") == "1":
        expected.write_text(got, encoding="utf-8")
    assert expected.is_file(), f"missing {expected.name}: run KVERR_REGEN=1 pytest {__file__}"
    assert got == expected.read_text(encoding="utf-8")


@pytest.mark.parametrize("case", sorted(p.stem for p in GOLDEN.glob("*.py")))
def test_golden(case):
    source = GOLDEN / f"{case}.py"
    _check(source.read_text(encoding="utf-8"), f"{case}.py", GOLDEN / f"{case}.json")


def test_golden_seed(seed_module):
    _check(seed_module, SEED_PATH, GOLDEN / "seed_kv_cache_hook.json")
