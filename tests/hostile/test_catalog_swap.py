"""A catalog replaced while it is being opened: `kverr load` swaps a new file in with
os.replace, and a reader that opened the old one must judge the old one, never a mix of the
file it opened and the size of the file now at the path.

Two real catalogs of different sizes take turns at one path, swapped in by another process
as fast as it can; this process opens the path over and over."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import synth
from kverr.catalog import load_dataset, open_catalog

from kverr.errors import CatalogError

OPENS = 400  # ~330 of 1,500 failed before the reader pinned the file it opened
SECONDS = 40  # whichever comes first

SWAPPER = textwrap.dedent(
    """
    import os, shutil, sys, time
    small, large, path, stop = sys.argv[1:5]
    tmp = path + ".swap"
    end = time.monotonic() + 120  # never outlives a test that died
    n = 0
    while not os.path.exists(stop) and time.monotonic() < end:
        shutil.copyfile(large if n % 2 else small, tmp)
        os.replace(tmp, path)
        n += 1
    print(n)
    """
)


@pytest.fixture(scope="module")
def catalogs(tmp_path_factory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("swap")
    out = []
    for name, n in (("small", 5), ("large", 600)):
        ds = synth.write_files(tmp / name, synth.synthetic_records(n))
        load_dataset(ds, tmp / f"{name}.duckdb")
        out.append(tmp / f"{name}.duckdb")
    small, large = out
    assert large.stat().st_size > small.stat().st_size  # a mix would read as truncated
    return small, large


@pytest.mark.slow  # up to 40 s of opens racing a swapping process
def test_an_open_during_a_swap_never_sees_damage(catalogs, tmp_path):
    small, large = catalogs
    path, stop = tmp_path / "c.duckdb", tmp_path / "stop"
    shutil.copyfile(small, path)
    swapper = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, str(small), str(large), str(path), str(stop)],
        stdout=subprocess.PIPE,
        text=True,
    )
    damaged, opened = [], 0
    try:
        end = time.monotonic() + SECONDS
        while opened < OPENS and time.monotonic() < end:
            try:
                with open_catalog(path) as cat:
                    assert cat.ping() in (5, 600)
            except CatalogError as exc:
                damaged.append(str(exc))
            opened += 1
    finally:
        stop.touch()
        swaps = int(swapper.communicate(timeout=30)[0] or 0)
    assert swaps > opened // 4, f"the swapper ran {swaps} times: no race was tested"
    assert not damaged, f"{len(damaged)} of {opened} opens failed, e.g. {damaged[0]}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.duckdb", "stop"]  # no link left
