"""What `kverr check` keeps between runs (verify/memo.py) and its sandbox started early: a
check on a warm cache answers exactly as a cold one, without libcst; a damaged or unwritable
cache is no error; a release read from a folder is keyed by every module of its package; a
sandbox started early and never asked ends at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kverr.verify import preflight
from kverr.verify.harness import Harness
from kverr.verify.memo import NAME
from kverr.verify.release import find_release
from kverr.verify.spec import spec_for
from yours_fixture import MISTAKES, RELEASE, release_repo, sglang_files

from kverr.profile import load_profile

pytestmark = pytest.mark.sandbox  # runs a revision's code (tests/conftest.py)
PROFILE = load_profile("sglang")
SLIP = next(m for m in MISTAKES if m.base == "qwen3-moe").command()  # --dp 3: raises, is fixed
OTHER = next(m for m in MISTAKES if m.base == "llama70b").command()

CHECK = """\
import json, sys
from kverr.verify.preflight import check_text
_, data = check_text(sys.argv[1], release=sys.argv[2], source=sys.argv[3])
print(json.dumps({"data": data, "libcst": "libcst" in sys.modules}))
"""


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return release_repo(tmp_path_factory.mktemp("check-cache") / "repo")


def check(repo: Path, cache: Path, launch: str) -> dict:
    """A check in a process of its own, as the command line runs it, with this cache folder."""
    done = subprocess.run(
        [sys.executable, "-c", CHECK, launch, RELEASE, str(repo)],
        env={**os.environ, "XDG_CACHE_HOME": str(cache)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.slow  # four checks in sandboxes, cold and warm answers compared (equivalence)
def test_a_warm_check_answers_as_a_cold_one_without_libcst(repo: Path, tmp_path: Path) -> None:
    cold = check(repo, tmp_path / "cold", OTHER)
    warm = tmp_path / "warm"
    first = check(repo, warm, SLIP)
    assert first["libcst"] and (warm / "kverr" / NAME).is_file()
    again = check(repo, warm, SLIP)  # every answer known
    other = check(repo, warm, OTHER)  # the release known, this launch not
    assert not again["libcst"] and not other["libcst"]
    assert again["data"] == first["data"] and first["data"]["errors"][0]["yourFix"]
    assert other["data"] == cold["data"]


@pytest.mark.parametrize("damage", ["garbage", "a file where the folder goes"])
def test_a_damaged_or_unwritable_cache_is_no_error(repo: Path, tmp_path: Path, damage) -> None:
    cache = tmp_path / "cache"
    if damage == "garbage":
        (cache / "kverr").mkdir(parents=True)
        (cache / "kverr" / NAME).write_bytes(b"not a cache " * 100)
    else:
        cache.write_text("a file, not a folder")
    got = check(repo, cache, SLIP)
    assert got["data"]["errors"][0]["yourFix"]["after"].endswith("--dp 4")
    if damage == "garbage":  # made anew: the next check is warm
        assert not check(repo, cache, SLIP)["libcst"]


def test_a_folder_release_is_keyed_by_every_module_of_its_package(tmp_path: Path) -> None:
    for path, text in sglang_files().items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    spec = spec_for(PROFILE)

    def key() -> str:
        rel = find_release(spec, tuple(PROFILE.files), release=None, source=str(tmp_path))
        return preflight.release_key(rel, spec)

    before = key()
    assert key() == before
    utils = tmp_path / "python/sglang/srt/utils.py"  # read lazily, not in the profile's files
    utils.write_text(utils.read_text() + "\nGPUS_PER_NODE = 8\n")
    assert key() != before


def test_a_sandbox_started_early_and_never_asked_ends_at_once(repo: Path, tmp_path: Path) -> None:
    spec = spec_for(PROFILE)
    rel = find_release(spec, tuple(PROFILE.files), release=RELEASE, source=str(repo))
    h = Harness(spec, repo=rel.repo, sha=rel.revision.sha, workdir=tmp_path)
    h.start_soon()
    proc = h._proc
    assert proc is not None
    started = time.monotonic()
    h.close()
    assert time.monotonic() - started < 2 and proc.poll() is not None
    h.start_soon()  # and one that is asked answers as a child started the usual way
    assert h.start() and "--tp-size" in h.info["options"]
    h.close()
