"""Shared fixtures. Tests that read ../shared/seeds/ skip cleanly when it is absent."""

from __future__ import annotations

import contextlib
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


@pytest.fixture(scope="session")
def feeds_catalog_path(tmp_path_factory) -> Path:
    """A real DuckDB catalog built from the hand-made dataset (test_feeds_data.py) by the
    catalog's own loader."""
    from kverr.catalog import load_dataset
    from test_feeds_data import write_feeds_dataset

    root = tmp_path_factory.mktemp("feeds")
    path = root / "catalog.duckdb"
    load_dataset(write_feeds_dataset(root / "dataset"), path)
    return path


@pytest.fixture(scope="session")
def feeds_catalog(feeds_catalog_path):
    from kverr.catalog import open_catalog

    with open_catalog(feeds_catalog_path) as cat:
        yield cat


@pytest.fixture(scope="session")
def shared_release(tmp_path_factory) -> Path:
    """A catalog of two projects that both tag releases v0.2.0 and v0.3.0: SGLang's
    v0.1.0-v0.3.0 and vLLM's v0.2.0, v0.2.5, v0.3.0, one record each in all of them."""
    import json

    import synth
    from kverr.catalog import load_datasets

    from kverr.profile import as_tables, load_profile

    root = tmp_path_factory.mktemp("shared-release")
    sets = []
    for name, tags, rid, message in (
        (
            "sglang",
            ["v0.1.0", "v0.2.0", "v0.3.0"],
            "5a00000000000001",
            "Our check failed at v0.2.0.",
        ),
        ("vllm", ["v0.2.0", "v0.2.5", "v0.3.0"], "5b00000000000002", "Their check failed."),
    ):
        revs = [
            {"ord": i, "sha": f"{rid[:2]}{i}".ljust(40, "0"), "date": f"2026-0{i + 1}-01T00:00:00Z",
             "tags": [t], "subject": f"Bump version to {t}"}
            for i, t in enumerate(tags)
        ]  # fmt: skip
        ds = synth.write_files(root / name, [synth.make_record(rid, message)], revisions=revs)
        manifest = json.loads((ds / "manifest.json").read_text())
        manifest["profile"] = as_tables(load_profile(name))
        (ds / "manifest.json").write_text(json.dumps(manifest))
        sets.append(ds)
    load_datasets(sets, root / "c.duckdb")
    return root / "c.duckdb"


@pytest.fixture(scope="session")
def serve():
    """`with serve(app) as url:` the app answering on 127.0.0.1 (uvicorn in a thread)."""
    return _serving


@contextlib.contextmanager
def _serving(app):
    from serving import serving

    with serving(app) as (_, port):
        yield f"http://127.0.0.1:{port}"


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
