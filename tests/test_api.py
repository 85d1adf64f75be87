"""The JSON API over real HTTP: uvicorn on 127.0.0.1 (thread, and one `kverr serve` subprocess)."""

from __future__ import annotations

import os
import random
import re
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from kverr.feeds.api import MAX_BODY, MAX_EXPLAIN, create_app
from kverr.feeds.server import bind
from test_feeds_data import BY_KEY, DATASET_VERSION, RECORDS

PASTE = "[2026-04-24 10:00:01] ERROR: ValueError: --page-size must be a power of two, got 48."


@pytest.fixture(scope="module")
def base_url(feeds_catalog, serve):
    with serve(create_app(feeds_catalog, body_timeout=1.0)) as url:
        yield url


@pytest.fixture
def client(base_url):
    with httpx.Client(base_url=base_url, timeout=15) as c:
        yield c


# ---------------------------------------------------------------- the happy paths


def test_healthz(client):
    r = client.get("/healthz")
    assert r.status_code == 200 and r.json() == {"status": "ok", "records": len(RECORDS)}


@pytest.mark.parametrize(
    ("kwargs", "query"),
    [({"content": PASTE}, PASTE),
     ({"content": PASTE.encode(), "headers": {"content-type": "text/plain; charset=utf-8"}}, PASTE),
     ({"json": {"text": PASTE, "limit": 3}}, PASTE)],
    ids=["raw", "text-plain", "json"],
)  # fmt: skip
def test_explain_returns_the_cli_json(client, feeds_catalog, kwargs, query):
    r = client.post("/explain", **kwargs)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["query"] == query
    assert body["matches"][0]["record"]["id"] == BY_KEY["page-size-power"]["id"]
    assert "48" in body["matches"][0]["values"].values()
    limit = kwargs.get("json", {}).get("limit", 5)
    expected = [m.to_dict() for m in feeds_catalog.explain(query, limit=limit)]
    assert body["matches"] == expected  # the same JSON as `kverr explain --json`


@pytest.mark.parametrize("key", ["id", "slug"])
def test_error_by_id_or_slug(client, key):
    rec = BY_KEY["page-size-power"]
    r = client.get(f"/errors/{rec[key]}")
    assert r.status_code == 200
    assert r.json() == {
        "record": rec,
        "releases": ["v0.5.0", "c3c3c3c3c3"],
        "datasetVersion": DATASET_VERSION,
    }


@pytest.mark.parametrize("name", ["--kv-cache-dtype", "kv-cache-dtype"])
def test_flag(client, name):
    r = client.get(f"/flags/{name}")
    assert r.status_code == 200
    body = r.json()
    assert body["name"] == "--kv-cache-dtype" and body["choices"] == [
        "auto",
        "fp8_e5m2",
        "fp8_e4m3",
    ]
    assert BY_KEY["kv-dtype-backend"]["id"] in body["records"]


def test_search(client):
    r = client.get("/search", params={"q": "radix cache streaming offload"})
    assert r.status_code == 200
    assert r.json()["matches"][0]["record"]["id"] == BY_KEY["radix-offload"]["id"]


def test_openapi_lists_every_route(client):
    doc = client.get("/openapi.json").json()
    assert doc["openapi"].startswith("3.1")
    assert set(doc["paths"]) == {
        "/",
        "/explain",
        "/explain/batch",
        "/errors/{id}",
        "/search",
        "/flags/{flag}",
        "/versions",
        "/healthz",
        "/openapi.json",
        "/check",
        "/docs",
    }


@pytest.mark.slow  # 48 requests from 16 threads at once (stress)
def test_sixteen_clients_at_once(base_url):
    def one(_):
        with httpx.Client(base_url=base_url, timeout=30) as c:
            return c.post("/explain", content=PASTE).status_code

    with ThreadPoolExecutor(16) as pool:
        assert set(pool.map(one, range(48))) == {200}


# ---------------------------------------------------------------- hostile input

BIG = b"x" * (MAX_BODY + 1)


def _chunks():
    for _ in range(40):
        yield b"y" * 65536  # 2.5 MiB with no Content-Length: the cap must hold while streaming


HOSTILE = [
    # (name, method, url, request kwargs, status, message fragment)
    ("huge-body", "POST", "/explain", {"content": BIG}, 413, "larger than 1048576 bytes"),
    ("huge-chunked", "POST", "/explain", {"content": _chunks}, 413, "larger than 1048576 bytes"),
    ("long-text", "POST", "/explain", {"content": b"z " * (MAX_EXPLAIN // 2 + 1)}, 413, "longer than"),
    ("binary", "POST", "/explain", {"content": b"\x89PNG\r\n\x1a\n\xff\xfe"}, 400, "not UTF-8"),
    ("nul", "POST", "/explain", {"content": b"abc\x00def"}, 400, "NUL"),
    ("empty", "POST", "/explain", {"content": b"  \n"}, 400, "empty"),
    ("bad-json", "POST", "/explain", {"content": b"{", "headers": {"content-type": "application/json"}}, 400, "does not parse"),
    ("json-no-text", "POST", "/explain", {"json": {"txt": 1}}, 400, '"text"'),
    ("json-list", "POST", "/explain", {"json": ["a"]}, 400, '"text"'),
    ("json-deep", "POST", "/explain", {"content": b"[" * 100_000, "headers": {"content-type": "application/json"}}, 400, "does not parse"),
    ("json-surrogate", "POST", "/explain", {"content": b'{"text": "\\ud800 ValueError"}', "headers": {"content-type": "application/json"}}, 400, "unpaired"),
    ("bad-version", "POST", "/explain?version=../../etc", {"content": PASTE}, 400, "version must be"),
    ("unknown-version", "POST", "/explain?version=v9.9.9", {"content": PASTE}, 404, None),
    ("limit-zero", "POST", "/explain?limit=0", {"content": PASTE}, 400, "limit must be"),
    ("limit-huge", "GET", "/search?q=page&limit=100000", {}, 400, "limit must be"),
    ("limit-text", "GET", "/search?q=page&limit=1e9", {}, 400, "limit must be"),
    ("limit-superscript", "GET", "/search?q=page&limit=%C2%B2", {}, 400, "limit must be"),
    ("json-limit-bool", "POST", "/explain", {"json": {"text": PASTE, "limit": True}}, 400, "limit must be"),
    ("json-version-list", "POST", "/explain", {"json": {"text": PASTE, "version": ["v1"]}}, 400, "version must be"),
    ("traversal", "GET", "/errors/..%2F..%2Fetc%2Fpasswd", {}, 404, None),
    ("nul-id", "GET", "/errors/%00", {}, 400, "16 hex"),
    ("sql-id", "GET", "/errors/x'%20OR%201=1%20--", {}, 400, "16 hex"),
    ("unknown-id", "GET", "/errors/0000000000000000", {}, 404, "No error with id"),
    ("unknown-slug", "GET", "/errors/no-such-slug", {}, 404, "No error with id"),
    ("script-flag", "GET", "/flags/%3Cscript%3E", {}, 400, "flag name"),
    ("unknown-flag", "GET", "/flags/--no-such-flag", {}, 404, "No flag --no-such-flag"),
    ("no-q", "GET", "/search", {}, 400, "?q="),
    ("long-q", "GET", "/search?q=" + "a" * 600, {}, 400, "at most 500"),
    ("nul-q", "GET", "/search?q=a%00b", {}, 400, "at most 500"),
    ("no-route", "GET", "/admin", {}, 404, "/openapi.json"),
    ("wrong-method", "DELETE", "/healthz", {}, 405, "not allowed"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "method", "url", "kwargs", "status", "fragment"), HOSTILE, ids=[h[0] for h in HOSTILE]
)
def test_hostile_input_gets_a_clear_4xx(client, name, method, url, kwargs, status, fragment):
    kwargs = dict(kwargs)
    if callable(kwargs.get("content")):
        kwargs["content"] = kwargs["content"]()
    try:
        r = client.request(method, url, **kwargs)
    except httpx.RemoteProtocolError:
        pytest.fail(f"{name}: the server dropped the connection instead of answering")
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/json"  # the server's own answers too
    body = r.json()
    assert body["status"] == status and body["error"].endswith(".")
    if fragment:
        assert fragment in body["error"]


@pytest.mark.parametrize(
    "raw",
    [b"POST /explain HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\nabc",
     b"POST /explain HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\nabc",
     b"GET /errors/" + b"a" * 70_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
     b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 64],
    ids=["negative-length", "giant-length", "huge-request-line", "tls-hello"],
)  # fmt: skip
def test_malformed_http_gets_4xx_or_close(base_url, raw):
    """Framing that httpx refuses to send: the server must answer 4xx (or just close), never 5xx or hang."""
    host, port = base_url.rsplit("/", 1)[1].split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(raw)
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
            if b"\r\n\r\n" in reply:
                break
    status = int(reply.split(b" ", 2)[1]) if reply.startswith(b"HTTP/1.1 ") else None
    assert status is None or 400 <= status < 500, reply[:200]
    assert status is None or b"\r\ncontent-type: application/json\r\n" in reply.lower()


def test_slow_body_gets_408(base_url):
    """A client that announces a body and then trickles it must not hold a worker forever."""
    host, port = base_url.rsplit("/", 1)[1].split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(b"POST /explain HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nonly ten b")
        reply = b""
        while b'"status"' not in reply and (chunk := sock.recv(65536)):
            reply += chunk
    assert reply.startswith(b"HTTP/1.1 408 ")
    assert b"did not arrive within 1 s" in reply


REGEX_BOMBS = [
    "a" * 100_000 + "!",
    "(" * 5000 + "a*" * 5000 + ")" * 5000,
    "--page-size must be a power of two, got " + "9" * 200_000,
    "ValueError: " + " ".join(["--kv-cache-dtype"] * 20_000),
    "\n".join(["Traceback (most recent call last):"] * 20_000),
]


@pytest.mark.parametrize(
    "text", REGEX_BOMBS, ids=["run", "parens", "long-value", "flag-flood", "traceback-flood"]
)
def test_pathological_pastes_finish_quickly(client, text):
    start = time.monotonic()
    r = client.post("/explain", content=text.encode())
    assert r.status_code in (200, 413), r.text
    assert time.monotonic() - start < 10


def _fuzz_requests(seed: int, n: int):
    """Seeded random requests: odd bytes in bodies, paths, query strings and content types."""
    rnd = random.Random(seed)
    alphabet = [
        "%00",
        "%2e%2e%2f",
        "%ff",
        "'",
        '"',
        "<",
        ">",
        "{",
        "}",
        "\\",
        "(",
        "*",
        "+",
        "?",
        "a",
        "-",
        "%ED%A0%80",
        "..",
        "/",
    ]
    for _ in range(n):
        junk = "".join(rnd.choice(alphabet) for _ in range(rnd.randrange(1, 40)))
        body = bytes(rnd.randrange(256) for _ in range(rnd.randrange(0, 300)))
        ctype = rnd.choice(
            ["text/plain", "application/json", "application/octet-stream", "multipart/form-data"]
        )
        yield rnd.choice([
            ("POST", "/explain?version=" + junk, {"content": body, "headers": {"content-type": ctype}}),
            ("POST", "/explain", {"content": body.decode("latin-1").encode(), "headers": {"content-type": ctype}}),
            ("GET", "/errors/" + junk, {}),
            ("GET", "/flags/" + junk, {}),
            ("GET", "/search?q=" + junk + "&limit=" + junk[:3], {}),
            ("GET", "/" + junk, {}),
        ])  # fmt: skip


@pytest.mark.parametrize(
    "seed", [1234, *(pytest.param(s, marks=pytest.mark.slow) for s in (5678, 91011))]
)  # one seed by default, all three under -m slow
def test_fuzz_never_5xx(client, seed):
    for method, url, kwargs in _fuzz_requests(seed=seed, n=400):
        r = client.request(method, url, **kwargs)
        assert r.status_code < 500, (method, url, r.status_code, r.text[:200])
        assert r.headers.get("content-type", "").startswith("application/json"), (
            method,
            url,
            r.status_code,
            r.text[:100],
        )


def test_sql_in_search_is_only_text(client, feeds_catalog_path):
    before = feeds_catalog_path.stat().st_mtime_ns
    for q in ["'; DROP TABLE records; --", '" OR 1=1 --', "%' UNION SELECT * FROM meta --"]:
        assert client.get("/search", params={"q": q}).status_code == 200
    assert client.get("/healthz").json()["records"] == len(RECORDS)
    assert feeds_catalog_path.stat().st_mtime_ns == before


# ---------------------------------------------------------------- the real command


def test_kverr_serve_subprocess(feeds_catalog_path):
    cmd = [
        sys.executable,
        "-m",
        "kverr",
        "serve",
        "--port",
        "0",
        "--catalog",
        str(feeds_catalog_path),
    ]
    proc = subprocess.Popen(
        cmd, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"}
    )
    try:
        line = proc.stderr.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        assert m, f"serve printed no URL: {line!r}"
        url = m.group(0)
        for _ in range(200):
            try:
                r = httpx.get(url + "/healthz", timeout=5)
                break
            except httpx.ConnectError:
                time.sleep(0.05)
        assert r.json()["records"] == len(RECORDS)
        assert httpx.post(url + "/explain", content=PASTE, timeout=5).json()["matches"]
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_kverr_serve_port_in_use_is_one_sentence(feeds_catalog_path):
    sock = bind("127.0.0.1", 0)
    sock.listen()
    port = str(sock.getsockname()[1])
    try:
        cmd = [
            sys.executable,
            "-m",
            "kverr",
            "serve",
            "--port",
            port,
            "--catalog",
            str(feeds_catalog_path),
        ]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    finally:
        sock.close()
    assert done.returncode == 2
    assert f"Cannot listen on 127.0.0.1:{port}" in done.stderr and "Traceback" not in done.stderr
