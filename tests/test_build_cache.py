"""The unit cache is keyed by the extractor's code, not only by EXTRACTOR_VERSION."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path

import pytest
from kverr.pipeline.cache import Cache, SharedUnits, UnitCache, unit_ns

from kverr.errors import DatasetError


def test_an_older_extractors_units_are_not_read(tmp_path):
    cache = Cache(tmp_path / "c.sqlite")
    cache.put_many("unit", {"k": "written by an older extractor"})
    cache.put_many(unit_ns(), {"j": "written by this one"})
    units = UnitCache(cache)
    with pytest.raises(KeyError):
        units["k"]
    assert units["j"] == "written by this one"
    assert unit_ns().startswith("unit:") and len(unit_ns()) > len("unit:")
    cache.close()


def _share_units(path: str, me: int, n: int) -> int:
    """A worker of the test below: puts n functions, then reads the other worker's."""
    units = UnitCache(None, SharedUnits(Path(path)))
    for i in range(n):
        units[f"{me}:{i}"] = f"sites of {me}:{i}"
    other, seen = 1 - me, 0
    for _ in range(2000):  # until the other worker has written all of its own
        seen = sum(f"{other}:{i}" in units for i in range(n))
        if seen == n:
            break
        time.sleep(0.01)
    return seen


def test_workers_share_the_functions_they_parse(tmp_path: Path) -> None:
    # --jobs 2: a function one worker parsed is read, not parsed again, by the other, which
    # also reports it as new (its result may reach the parent first, and the parent's
    # loader must find it in the cache); two real processes writing at once never lock
    path = tmp_path / "units.sqlite"
    SharedUnits(path).close()
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        seen = pool.starmap(_share_units, [(str(path), 0, 300), (str(path), 1, 300)])
    assert seen == [300, 300]
    reader = UnitCache(None, SharedUnits(path))
    assert reader["0:7"] == "sites of 0:7"
    assert reader.take_new() == {"0:7": "sites of 0:7"}
    with pytest.raises(KeyError):
        reader["2:0"]


def test_a_cache_damaged_past_its_first_page_fails_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    cache = Cache(path)
    cache.put_many("unit", {f"k{i}": "x" * 2000 + str(i) for i in range(200)})
    cache.close()
    data = bytearray(path.read_bytes())
    data[8192:16384] = b"\xff" * 8192  # pages of the table, not the header the open reads
    path.write_bytes(bytes(data))
    cache = Cache(path)
    with pytest.raises(DatasetError, match=r"^cache .* is unreadable \(.*\); delete it and build"):
        for i in range(200):
            cache.get("unit", f"k{i}")
