"""Long sweeps run whole under `pytest -m slow` and as a sample in the default run."""

from __future__ import annotations

import pytest


def sweep(every: int) -> pytest.MarkDecorator:
    """Parametrize a test with `every`: each `every`-th case by default, every case (1) under
    the slow marker, so the default run still covers each kind of case in a few seconds."""
    return pytest.mark.parametrize(
        "every",
        [pytest.param(every, id="sample"), pytest.param(1, id="whole", marks=pytest.mark.slow)],
    )
