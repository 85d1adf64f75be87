"""POST /check on a real `kverr serve` process: the launch through the release its --source
holds (the fixture project laid out as SGLang, tagged v9.9.9), the same JSON as
`kverr check --json`."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from test_sources import Git
from verify_fixture import sglang_files

pytestmark = pytest.mark.sandbox  # runs a revision's code (tests/conftest.py)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("api-check")
    g = Git(root / "repo")
    g.commit("fixture", sglang_files())
    g.tag("v9.9.9")
    cmd = [sys.executable, "-m", "kverr", "serve", "--port", "0", "--source", str(g.root)]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        url = None
        while url is None and time.monotonic() < deadline:
            line = proc.stderr.readline()
            m = re.search(r"on (http://\S+)", line)
            url = m.group(1) if m else None
        assert url, "kverr serve did not print its URL"
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_a_launch_with_a_mistake_gets_the_fix_of_that_command(server) -> None:
    body = {"command": "python -m sglang.launch_server --model-path org/m --tp 16"}
    got = httpx.post(f"{server}/check", json={**body, "release": "9.9.9"}, timeout=120)
    assert got.status_code == 200, got.text
    report = got.json()
    assert report["release"] == "v9.9.9" and not report["passed"]
    (err,) = report["errors"]
    assert err["yourFix"]["after"].endswith("--tp 8")
    assert err["yourFix"]["verification"]["status"] == "verified"


def test_a_plain_text_body_and_the_release_in_the_query(server) -> None:
    got = httpx.post(
        f"{server}/check?release=9.9.9",
        content="python -m sglang.launch_server --model-path org/m --tp-size 2",
        timeout=120,
    )
    assert got.status_code == 200 and got.json()["passed"] is True


@pytest.mark.parametrize(
    ("body", "status", "said"),
    [
        ({"command": ""}, 400, "The body is empty"),
        ({"text": "x"}, 400, '"command"'),
        ({"command": "x" * 70_000}, 413, "at most 65536"),
        ({"command": "echo hello"}, 400, "no launch command"),
    ],
)
def test_bad_input_is_one_json_error(server, body, status, said) -> None:
    got = httpx.post(f"{server}/check", json=body, timeout=60)
    assert got.status_code == status and said in got.json()["error"]


def test_openapi_lists_check(server) -> None:
    assert "/check" in httpx.get(f"{server}/openapi.json", timeout=30).json()["paths"]


def test_healthz_and_explain_answer_while_a_check_runs(server) -> None:
    body = {"command": "python -m sglang.launch_server --model-path org/m --tp 12 --moe-dp-size 8"}
    with ThreadPoolExecutor(1) as pool:
        check = pool.submit(httpx.post, f"{server}/check", json=body, timeout=120)
        time.sleep(0.2)  # the check is under way in its own lane
        started = time.monotonic()
        assert httpx.get(f"{server}/healthz", timeout=30).status_code == 200
        said = httpx.post(f"{server}/explain", content="tp_size must be at most 8", timeout=30)
        assert said.status_code == 200 and time.monotonic() - started < 5
        assert check.result().status_code == 200
