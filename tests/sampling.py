"""Long sweeps run whole under `pytest -m slow` and as a sample in the default run."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

import pytest


def sweep(every: int) -> pytest.MarkDecorator:
    """Parametrize a test with `every`: each `every`-th case by default, every case (1) under
    the slow marker, so the default run still covers each kind of case in a few seconds."""
    return pytest.mark.parametrize(
        "every",
        [pytest.param(every, id="sample"), pytest.param(1, id="whole", marks=pytest.mark.slow)],
    )


def sample(cases: Iterable[Any], keep: Collection[Any]) -> list[Any]:
    """`cases` as parameters: those in `keep` run by default, the others under the slow
    marker only (a sweep over kinds of input whose default run keeps a few kinds)."""
    assert set(keep) <= set(cases), "a kept case is not among the cases"
    return [c if c in keep else pytest.param(c, marks=pytest.mark.slow) for c in cases]
