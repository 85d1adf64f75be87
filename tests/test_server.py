"""The server stays up: idle and slow connections, the server's own errors as JSON,
conflicting framing, a damaged catalog found while serving, and `serve --workers N`.

A real uvicorn on 127.0.0.1 (in a thread, with small limits so deadlines pass in about a
second), raw sockets where httpx would not send the bytes, and real `kverr serve` processes."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import synth
from kverr.catalog import Catalog, load_dataset
from kverr.feeds.api import DAMAGED, INLINE_CHARS, LANES, create_app
from kverr.feeds.server import Limits
from serving import serving
from test_feeds_data import BY_KEY

PASTE = "[2026-04-24 10:00:01] ERROR: ValueError: --page-size must be a power of two, got 48."


@contextlib.contextmanager
def running(cat, lanes=LANES, **limits):
    """The API over `cat` on 127.0.0.1 with these Limits and lanes; yields (host, port)."""
    lim = Limits(**limits)
    app = create_app(cat, body_timeout=lim.body_timeout, lanes=lanes)
    with serving(app, lim, join=15) as address:
        yield address


def exchange(
    addr, raw: bytes, timeout: float = 10
) -> tuple[int | None, dict, bytes, socket.socket]:
    """Send raw bytes on a new connection; (status, headers, body, the still-open socket)."""
    sock = socket.create_connection(addr, timeout=timeout)
    sock.sendall(raw)
    return (*read_response(sock), sock)


def read_response(sock: socket.socket) -> tuple[int | None, dict, bytes]:
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            return None, {}, buf
        buf += chunk
    head, _, body = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    while len(body) < int(headers.get("content-length", 0)):
        body += sock.recv(65536)
    return int(lines[0].split()[1]), headers, body


def get(path: str) -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: t\r\n\r\n".encode()


def post(path: str, body: bytes) -> bytes:
    return f"POST {path} HTTP/1.1\r\nHost: t\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body


def closed_within(sock: socket.socket, seconds: float) -> bool:
    """True when the server closes the connection within `seconds` (data before EOF is read)."""
    sock.settimeout(seconds)
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            if sock.recv(65536) == b"":
                return True
    except TimeoutError:
        return False
    except OSError:
        return True
    return False


def envelope(status: int | None, headers: dict, body: bytes, expected: int) -> str:
    assert status == expected, body
    assert headers["content-type"] == "application/json"
    doc = json.loads(body)
    assert doc["status"] == expected and doc["error"].endswith(".")
    return doc["error"]


# ---------------------------------------------------------------- idle and slow connections


def test_130_idle_connections_do_not_lock_clients_out(feeds_catalog):
    """Stock uvicorn answered every request 503 while 128 connections sat idle."""
    with running(feeds_catalog) as addr:
        idle = [socket.create_connection(addr, timeout=5) for _ in range(130)]
        try:
            time.sleep(0.2)  # the server has accepted them all
            start = time.monotonic()
            status, _, body, sock = exchange(addr, post("/explain", PASTE.encode()))
            sock.close()
            assert status == 200 and json.loads(body)["matches"]
            assert time.monotonic() - start < 2
        finally:
            for s in idle:
                s.close()


def test_past_max_connections_the_longest_idle_one_makes_room(feeds_catalog):
    with running(feeds_catalog, max_connections=20) as addr:
        idle = []
        for _ in range(25):
            idle.append(socket.create_connection(addr, timeout=5))
            time.sleep(0.01)  # an order the server sees
        try:
            status, _, _, sock = exchange(addr, get("/healthz"))
            sock.close()
            assert status == 200
            # 25 idle + this client on a cap of 20: the six oldest were closed, newest first kept
            assert [closed_within(s, 2) for s in idle[:6]] == [True] * 6
            assert [closed_within(s, 0.05) for s in idle[6:]] == [False] * 19
        finally:
            for s in idle:
                s.close()


def test_a_silent_connection_is_closed_after_the_head_timeout(feeds_catalog):
    with running(feeds_catalog, head_timeout=1) as addr:
        sock = socket.create_connection(addr, timeout=5)
        start = time.monotonic()
        assert closed_within(sock, 4)
        assert 0.8 < time.monotonic() - start < 3
        sock.close()


def test_a_trickled_head_gets_408_however_steady_the_trickle(feeds_catalog):
    """Slowloris: a byte now and then used to reset uvicorn's timer; the head deadline holds."""
    with running(feeds_catalog, head_timeout=1) as addr:
        sock = socket.create_connection(addr, timeout=5)
        start = time.monotonic()
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHo")
        with contextlib.suppress(OSError):  # the server may hang up mid-trickle
            for ch in b"st: t\r\nX-Slow: 1":
                sock.sendall(bytes([ch]))
                time.sleep(0.1)
        status, headers, body = read_response(sock)
        assert time.monotonic() - start < 3
        assert "did not arrive within 1 s" in envelope(status, headers, body, 408)
        assert closed_within(sock, 1)
        sock.close()


def test_a_keep_alive_connection_still_serves_many_requests(feeds_catalog):
    """The deadlines count from each answer: a busy keep-alive client is never cut off."""
    with running(feeds_catalog, head_timeout=1) as addr:
        sock = socket.create_connection(addr, timeout=5)
        for _ in range(6):
            sock.sendall(get("/healthz"))
            assert read_response(sock)[0] == 200
            time.sleep(0.3)  # 1.8 s in all, past one head timeout
        sock.close()


# ---------------------------------------------------------------- the server's own answers


@pytest.mark.parametrize(
    ("raw", "status", "fragment"),
    [
        (b"GET / HTTP/1.1\r\nHost: x\r\nbad header\r\n\r\n", 400, "not valid HTTP/1.1"),
        (b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 70_000, 431, "pass 64 KiB"),  # no end
        (
            b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 64 + b"\r\n\r\n",
            400,
            "not valid",
        ),
        (
            b"POST /explain HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
            400,
            "both Content-Length and Transfer-Encoding",
        ),
    ],
    ids=["malformed-header", "huge-head", "tls-hello", "cl-and-te"],
)
def test_the_servers_own_errors_are_json_and_close(feeds_catalog, raw, status, fragment):
    with running(feeds_catalog) as addr:
        got, headers, body, sock = exchange(addr, raw)
        assert fragment in envelope(got, headers, body, status)
        assert headers["connection"] == "close"
        assert closed_within(sock, 2)  # RFC 9112 §6.3: never reuse a conflicting-framing connection
        sock.close()


def test_a_stalled_body_does_not_take_the_answering_slot(feeds_catalog):
    """Half a body once held one of the `max_in_flight` slots; now it waits in a receiving slot
    (tests/hostile/test_server_abuse.py runs the whole wave)."""
    with running(feeds_catalog, max_in_flight=1, body_timeout=1) as addr:
        slow = socket.create_connection(addr, timeout=5)
        slow.sendall(b"POST /explain HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\nten bytes.")
        time.sleep(0.2)
        for raw in (get("/healthz"), post("/explain", PASTE.encode())):
            status, _, _, sock = exchange(addr, raw)
            assert status == 200
            sock.close()
        assert envelope(*read_response(slow), 408)  # the body deadline
        assert closed_within(slow, 2)  # nothing more to read from it
        slow.close()


def test_an_uppercase_hex_id_is_the_same_record(feeds_catalog):
    rec = BY_KEY["page-size-power"]
    with running(feeds_catalog) as addr:
        status, _, body, sock = exchange(addr, get(f"/errors/{rec['id'].upper()}"))
        sock.close()
    assert status == 200 and json.loads(body)["record"] == rec


def test_a_long_paste_is_explained_off_the_event_loop_alike(feeds_catalog):
    """Past INLINE_CHARS the explain runs in the pool, on its own DuckDB cursor: same answer."""
    noise = "[2026-04-24 10:00:00] INFO: Load weight begin. avail mem=78.12 GB\n"
    text = noise * (INLINE_CHARS // len(noise) + 1) + PASTE
    assert len(text) > INLINE_CHARS
    with running(feeds_catalog) as addr:
        status, _, body, sock = exchange(addr, post("/explain", text.encode()))
        sock.close()
    assert status == 200
    assert json.loads(body)["matches"] == [m.to_dict() for m in feeds_catalog.explain(text)]


# ---------------------------------------------------------------- a catalog damaged while serving


@pytest.fixture
def big_catalog(tmp_path) -> Path:
    """600 records: enough that each table has data blocks of its own to damage."""
    recs = synth.synthetic_records(600)
    load_dataset(synth.write_files(tmp_path / "ds", recs), tmp_path / "c.duckdb")
    return tmp_path / "c.duckdb"


@pytest.mark.slow  # a large catalog damaged under a running server (stress)
def test_damage_found_while_serving_is_503_and_healthz_says_so(big_catalog):
    """A record's text is first read by the match that shows it: damage there surfaces
    mid-service (the term table and the traceback lookup are in memory).
    Every request answers in the envelope, never 500, and /healthz turns 503 for good."""
    cat = Catalog(big_catalog)
    try:
        with running(cat) as addr:
            assert exchange(addr, get("/healthz"))[0] == 200
            synth.damage(big_catalog, "blocks", "records")  # the file under the running server
            status, headers, body, sock = exchange(addr, get("/search?q=attention+backend+model"))
            sock.close()
            assert envelope(status, headers, body, 503) == DAMAGED  # no path leaks to clients
            message = synth.synthetic_records(600)[7]["errorMessage"].replace("{v}", "7")
            for raw in (get("/healthz"), post("/explain", f"ValueError: {message}".encode())):
                status, headers, body, sock = exchange(addr, raw)
                sock.close()
                assert envelope(status, headers, body, 503) == DAMAGED
    finally:
        cat.close()


# ---------------------------------------------------------------- several workers


class Serve:
    """`kverr serve --workers N` in a subprocess: its URL, worker pids and stderr lines."""

    def __init__(self, catalog: Path, workers: int, cwd: Path):
        cmd = [sys.executable, "-m", "kverr", "serve", "--port", "0", "--workers", str(workers)]
        self.proc = subprocess.Popen(
            [*cmd, "--catalog", str(catalog)],
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            cwd=cwd,
        )
        first = self.proc.stderr.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+) with (\d+) workers \(pids ([\d, ]+)\)", first)
        assert m, first
        self.addr = ("127.0.0.1", int(m.group(1)))
        self.pids = [int(p) for p in m.group(3).split(", ")]

    def healthz(self, tries: int = 50) -> int:
        for _ in range(tries):  # a connection queued at a worker that just died is reset
            try:
                status, _, _, sock = exchange(self.addr, get("/healthz"), timeout=5)
                sock.close()
                return status
            except OSError:
                time.sleep(0.1)
        raise AssertionError("no answer")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()  # the supervisor stops its workers
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()  # its workers then exit on their own (orphan watch)
                self.proc.wait()
        self.proc.stderr.close()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # an orphan's zombie stays until whoever adopted it reaps it: it serves nothing
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


@pytest.mark.slow  # several server processes
def test_workers_share_the_port_and_a_dead_one_is_replaced(feeds_catalog_path, tmp_path):
    server = Serve(feeds_catalog_path, 2, tmp_path)
    try:
        assert len(set(server.pids)) == 2 and all(map(alive, server.pids))
        assert [server.healthz() for _ in range(20)] == [200] * 20
        os.kill(server.pids[0], signal.SIGKILL)
        line = server.proc.stderr.readline()
        m = re.fullmatch(
            rf"kverr: worker {server.pids[0]} was killed by SIGKILL; worker (\d+) replaces it\.\n",
            line,
        )
        assert m, line
        assert alive(int(m.group(1)))
        assert [server.healthz() for _ in range(20)] == [200] * 20
        workers = [server.pids[1], int(m.group(1))]
        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.wait(timeout=30) == -signal.SIGTERM  # exits the way the signal asks
        assert not any(map(alive, workers))
    finally:
        server.stop()


@pytest.mark.slow  # several server processes
def test_sigint_stops_every_worker(feeds_catalog_path, tmp_path):
    server = Serve(feeds_catalog_path, 2, tmp_path)
    try:
        assert server.healthz() == 200
        server.proc.send_signal(signal.SIGINT)
        assert server.proc.wait(timeout=30) == 130
        assert (
            server.proc.stderr.read()
            .strip()
            .endswith("kverr: interrupted; run the same command again to resume.")
        )
        assert not any(map(alive, server.pids))
    finally:
        server.stop()


@pytest.mark.slow  # several server processes
def test_two_servers_cannot_share_one_port(feeds_catalog_path, tmp_path):
    """SO_REUSEPORT would let a second `serve` join the first one's port: it must not."""
    server = Serve(feeds_catalog_path, 2, tmp_path)
    try:
        cmd = [
            sys.executable,
            "-m",
            "kverr",
            "serve",
            "--port",
            str(server.addr[1]),
            "--workers",
            "2",
        ]
        done = subprocess.run(
            [*cmd, "--catalog", str(feeds_catalog_path)],
            capture_output=True,
            text=True,
            timeout=30,
            cwd=tmp_path,
        )
        assert done.returncode == 2
        assert (
            done.stderr
            == f"kverr: Cannot listen on 127.0.0.1:{server.addr[1]} (Address already in use); pick another --port.\n"
        )
    finally:
        server.stop()


@pytest.mark.slow  # several server processes
def test_a_worker_that_cannot_start_stops_the_server_with_one_line(feeds_catalog_path, tmp_path):
    """The catalog vanishes between the supervisor's check and a worker's start (here: replaced
    by junk while the first workers start): one line, exit 2, no worker left behind."""
    path = Path(shutil.copy(feeds_catalog_path, tmp_path / "c.duckdb"))
    server = Serve(path, 2, tmp_path)
    try:
        (tmp_path / "junk").write_bytes(b"junk" * 100)
        os.replace(tmp_path / "junk", path)  # a replacement worker will find this
        os.kill(server.pids[0], signal.SIGKILL)
        assert server.proc.wait(timeout=60) == 2
        err = server.proc.stderr.read()
        assert err.strip().endswith(
            f"kverr: {path} is not a kverr catalog (not a DuckDB file); pass --catalog a file written by `kverr load` or `kverr build --catalog`."
        )
        assert "Traceback" not in err
        assert not any(map(alive, server.pids))
    finally:
        server.stop()


@pytest.mark.slow  # several server processes
def test_workers_of_a_killed_supervisor_exit_on_their_own(feeds_catalog_path, tmp_path):
    server = Serve(feeds_catalog_path, 2, tmp_path)
    try:
        assert server.healthz() == 200
        server.proc.kill()  # SIGKILL: the supervisor cannot stop anyone
        server.proc.wait()
        deadline = time.monotonic() + 15
        while any(map(alive, server.pids)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(map(alive, server.pids))
    finally:
        server.stop()
