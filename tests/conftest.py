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


# The whole default run is ~200 CPU-seconds over 2,000 independent tests, a fifth of its time
# spent waiting (sandbox deadlines, servers, subprocesses): one process leaves a core idle.
WORKERS_MAX = 4  # past this the longest test file is the bound, and the timing tests crowd


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """`pytest -q` (every test file, the slow ones left out) runs on the machine's cores,
    one test file per worker (pytest-xdist --dist loadfile: a module's shared fixtures are
    built once and its tests keep their order). Named files, `-m slow` (stress and timing
    tests that want the machine to themselves), an explicit -n and a worker itself run as
    asked; without pytest-xdist installed everything runs in one process, as before."""
    opt = config.option
    if (
        not config.pluginmanager.has_plugin("xdist")
        or hasattr(config, "workerinput")
        or getattr(opt, "numprocesses", None) is not None
        or opt.markexpr != "not slow"
        or config.args_source != pytest.Config.ArgsSource.TESTPATHS
        or opt.collectonly
        or opt.usepdb
    ):
        return
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if (cores or 1) > 1:
        opt.numprocesses = min(cores, WORKERS_MAX)
        opt.dist = "loadfile"


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
