"""Shared fixtures. Tests that read ../shared/seeds/ skip cleanly when it is absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SEEDS = ROOT.parent / "shared" / "seeds"
GOLDEN = Path(__file__).resolve().parent / "golden"

# Tolerant for users, strict in tests: the extractor turns an unknown message shape into a
# "dynamic" placeholder; under KVERR_STRICT=1 it raises instead, so gaps in our fixtures show.
os.environ.setdefault("KVERR_STRICT", "1")


@pytest.fixture
def seeds() -> Path:
    if not (SEEDS / "kv_cache_hook.py").is_file():
        pytest.skip("../shared/seeds/ is not present")
    return SEEDS


@pytest.fixture
def seed_module(seeds: Path) -> str:
    return (seeds / "kv_cache_hook.py").read_text(encoding="utf-8")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests that run a revision's code need the OS sandbox (verify/confine.py): where
    bubblewrap cannot confine, they skip and say why rather than run the code unconfined."""
    from kverr.verify import confine

    why = confine.unavailable()
    if why is None:
        return
    skip = pytest.mark.skip(reason=f"no sandbox for --verify here: {why}")
    for item in items:
        if item.get_closest_marker("sandbox"):
            item.add_marker(skip)
