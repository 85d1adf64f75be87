"""The unit cache is keyed by the extractor's code, not only by EXTRACTOR_VERSION."""

from __future__ import annotations

import pytest
from kverr.pipeline.cache import Cache, UnitCache, unit_ns


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
