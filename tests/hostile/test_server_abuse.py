"""`kverr serve` under abuse: bodies that stall, a request head past 64 KiB in one write, a
queue of heavy pastes, work its client abandoned, one client trying to take every slot.

A real uvicorn on 127.0.0.1 (tests/test_server.py's `running`, its limits scaled down so each
attack ends within seconds) and raw sockets. Attackers connect from loopback addresses of their
own (127.0.0.2 and up: the server tells clients apart by address); the client that must still
be served is 127.0.0.1. All through each attack /healthz must answer 200: a load balancer that
sees a 503 takes the server out, which is what the attacker wanted."""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import json
import re
import select
import signal
import socket
import tempfile
import threading
import time
from pathlib import Path

import pytest
import synth
from kverr.catalog import load_dataset, open_catalog
from kverr.feeds.api import LANES, Lane
from kverr.feeds.server import MAX_HEAD
from test_server import PASTE, Serve, closed_within, envelope, get, post, read_response, running

# A body announced and never sent: one byte, then nothing.
STALL = b"POST /explain HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\nV"
HEAVY_CHARS = 250_000


def connect(addr, source: str = "127.0.0.1") -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.settimeout(10)
    sock.bind((source, 0))
    sock.connect(addr)
    return sock


def ask(addr, raw: bytes, source: str = "127.0.0.1") -> tuple[int | None, dict, bytes]:
    with contextlib.closing(connect(addr, source)) as sock:
        sock.sendall(raw)
        return read_response(sock)


def stall(addr, source: str) -> socket.socket:
    sock = connect(addr, source)
    sock.sendall(STALL)
    return sock


def answered_within(socks: list[socket.socket], wait: float) -> list[socket.socket]:
    """The sockets the server has answered (or closed) within `wait` seconds, in order."""
    time.sleep(wait)
    ready = select.select(socks, [], [], 0)[0]
    return [s for s in socks if s in ready]


def trickle(sock: socket.socket, stop: threading.Event) -> None:
    """A byte of body every 0.2 s: never idle long, never done."""
    with contextlib.suppress(OSError):
        while not stop.wait(0.2):
            sock.sendall(b"v")


@contextlib.contextmanager
def healthz_probe(addr, every: float = 0.05):
    """/healthz asked from 127.0.0.1 every `every` seconds in a thread; yields what it got."""
    seen: list = []
    stop = threading.Event()

    def probe() -> None:
        while True:  # once at least, however short the attack
            try:
                seen.append(ask(addr, get("/healthz"))[0])
            except OSError as exc:
                seen.append(repr(exc))
            if stop.wait(every):
                return

    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        stop.set()
        thread.join(timeout=15)


def healthy(seen: list, at_least: int = 5) -> bool:
    return len(seen) >= at_least and set(seen) == {200}


def close_all(socks: list[socket.socket]) -> None:
    for s in socks:
        s.close()


@pytest.fixture(scope="module")
def heavy():
    """A catalog of 600 synthetic records, a 250 KB paste of their messages that costs the
    matcher about a second, and a 30-line launch log (2 KB) with one of them in it."""
    with tempfile.TemporaryDirectory() as tmp:
        recs = synth.synthetic_records(600)
        load_dataset(synth.write_files(Path(tmp) / "ds", recs), Path(tmp) / "c.duckdb")
        messages = [f"ValueError: {r['errorMessage'].replace('{v}', '7')}" for r in recs]
        paste = "\n".join(messages * 8)[:HEAVY_CHARS].encode()
        synth.launch_log(Path(tmp) / "launch.log", 30, messages[7:8], every=15)
        log = (Path(tmp) / "launch.log").read_bytes()
        cat = open_catalog(Path(tmp) / "c.duckdb")
        try:
            yield cat, paste, log
        finally:
            cat.close()


def busy_seconds(seconds: float) -> float:
    """CPU this process (the server's threads with it) spends over the next `seconds`."""
    start = time.process_time()
    time.sleep(seconds)
    return time.process_time() - start


# ---------------------------------------------------------------- bodies that stall


def test_a_wave_of_stalled_bodies_leaves_healthz_and_pastes_answered(feeds_catalog):
    """70 sockets that announce 100 KB and send one byte used to take all 64 answering slots
    for the whole body deadline: /healthz answered 503 in 49 of 50 samples. Here 4 answering
    slots are plenty, since a body still on its way never takes one."""
    with running(feeds_catalog, body_timeout=2, max_in_flight=4) as addr:
        with healthz_probe(addr) as health:
            start = time.monotonic()
            wave = [stall(addr, f"127.0.0.{2 + i % 10}") for i in range(69)]
            wave.append(stall(addr, "127.0.0.12"))
            stop = threading.Event()
            threading.Thread(target=trickle, args=(wave[-1], stop), daemon=True).start()
            try:
                time.sleep(0.3)  # every head is in
                for _ in range(5):
                    status, _, body = ask(addr, post("/explain", PASTE.encode()))
                    assert status == 200 and json.loads(body)["matches"]
                # the whole body within 2 s of its head, the trickled one too
                replies = [read_response(s)[0] for s in wave]
                assert replies == [408] * 70
                assert time.monotonic() - start < 5
                assert all(closed_within(s, 2) for s in wave)
            finally:
                stop.set()
                close_all(wave)
        assert healthy(health, at_least=20), health


@pytest.mark.slow  # two server processes beside 140 stalled bodies
def test_two_workers_keep_answering_beside_140_stalled_bodies(feeds_catalog_path, tmp_path):
    """`kverr serve --workers 2` with its default limits: 140 stalled bodies, ~70 per worker.
    Their clients then hang up mid-body, which must leave no traceback in the log: 140 of
    them once filled the server's stderr pipe, and its workers hung on the write."""
    server = Serve(feeds_catalog_path, 2, tmp_path)
    try:
        assert server.healthz() == 200
        with healthz_probe(server.addr) as health:
            wave = [stall(server.addr, f"127.0.0.{2 + i % 20}") for i in range(140)]
            try:
                time.sleep(2)
                status, _, _ = ask(server.addr, post("/explain", PASTE.encode()))
                assert status == 200
            finally:
                close_all(wave)
        assert healthy(health, at_least=20), health
        time.sleep(0.5)  # the hang-ups seen
        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.wait(timeout=10) == -signal.SIGTERM
        assert "Traceback" not in server.proc.stderr.read()
    finally:
        server.stop()


# ---------------------------------------------------------------- the head cap


def head_of(size: int, path: str = "/healthz") -> bytes:
    """A GET whose request line and headers are exactly `size` bytes."""
    start = f"GET {path} HTTP/1.1\r\nHost: t\r\nX-Pad: ".encode()
    return start + b"a" * (size - len(start) - 4) + b"\r\n\r\n"


def answers(sock: socket.socket, n: int) -> list[tuple[int, bytes]]:
    """The next `n` answers on `sock` as (status, body); fewer when it closes first."""
    buf, out = b"", []
    while len(out) < n:
        end = buf.find(b"\r\n\r\n")
        if end >= 0:
            length = int(re.search(rb"(?i)\r\ncontent-length: *(\d+)", buf[:end]).group(1))
            if len(buf) >= end + 4 + length:
                out.append((int(buf[9:12]), buf[end + 4 : end + 4 + length]))
                buf = buf[end + 4 + length :]
                continue
        chunk = sock.recv(65536)
        if not chunk:
            break
        buf += chunk
    return out


def statuses(addr, raw: bytes, n: int) -> list[int]:
    with contextlib.closing(connect(addr, "127.0.0.3")) as sock:
        sock.sendall(raw)
        return [status for status, _ in answers(sock, n)]


@pytest.mark.parametrize("how", ["one-write", "many-writes", "pipelined"])
def test_a_head_past_64_kib_is_431_however_it_arrives(feeds_catalog, how):
    """h11 measures only a head still incomplete: 100 KiB sent in one write was served."""
    big = head_of(100 * 1024)
    with running(feeds_catalog) as addr, healthz_probe(addr) as health:
        sock = connect(addr, "127.0.0.2")
        with contextlib.suppress(OSError):  # the server may hang up while the rest is sent
            if how == "one-write":
                sock.sendall(big)
            elif how == "pipelined":  # behind a request that is served first
                sock.sendall(get("/healthz") + big)
            else:
                for i in range(0, len(big), 8192):
                    sock.sendall(big[i : i + 8192])
                    time.sleep(0.01)
        got = answers(sock, 2 if how == "pipelined" else 1)
        assert [status for status, _ in got] == [200, 431] if how == "pipelined" else [431]
        assert b"pass 64 KiB" in got[-1][1]
        assert closed_within(sock, 2)
        sock.close()
        # the cap is 64 KiB exactly, in one write or behind another request
        assert statuses(addr, head_of(MAX_HEAD), 1) == [200]
        assert statuses(addr, head_of(MAX_HEAD + 1), 1) == [431]
        assert statuses(addr, get("/healthz") + head_of(MAX_HEAD), 2) == [200, 200]
        assert statuses(addr, get("/healthz") + head_of(MAX_HEAD + 1), 2) == [200, 431]
        assert healthy(health, at_least=1), health


# ---------------------------------------------------------------- heavy pastes


@pytest.mark.slow  # a queue of heavy pastes (stress)
def test_a_queue_of_heavy_pastes_is_bounded_and_a_launch_log_still_answers(heavy):
    """24 pastes of 250 KB at once used to queue behind each other in an unbounded pool, and
    a 2 KB launch log waited behind them all. Now the long lane admits 4 (2 per client) and
    refuses the rest at once, and the log is matched in its own lane."""
    cat, paste, log = heavy
    with running(cat) as addr, healthz_probe(addr) as health:
        attack = []
        try:
            for i in range(24):
                attack.append(connect(addr, f"127.0.0.{2 + i % 6}"))
                attack[-1].sendall(post("/explain", paste))
            time.sleep(0.3)
            start = time.monotonic()
            status, _, body = ask(addr, post("/explain", log))
            assert status == 200 and json.loads(body)["matches"]
            assert time.monotonic() - start < 3  # (behind the 24 pastes: about 20 s)
            replies = [read_response(s) for s in attack]
        finally:
            close_all(attack)
        statuses = collections.Counter(status for status, _, _ in replies)
        assert set(statuses) <= {200, 503} and statuses[503] >= 12, statuses
        for status, headers, body in replies:
            if status == 503:
                assert "pastes of this size" in envelope(status, headers, body, 503)
                assert headers["retry-after"] == "5"
        assert healthy(health), health


def long_lane(**fields) -> tuple[Lane, ...]:
    """LANES with the long lane's fields changed."""
    *rest, long = LANES
    return (*rest, dataclasses.replace(long, **fields))


@pytest.mark.slow  # a queue of heavy pastes (stress)
def test_work_whose_client_left_is_dropped(heavy):
    """Pastes whose clients hang up are dropped before they start, and the one being matched
    stops at the matcher's next check: the server goes quiet at once. An unbounded pool once
    matched 60 abandoned pastes for a minute."""
    cat, paste, _ = heavy
    lanes = long_lane(queue=20, per_client=20, timeout=60.0)
    with running(cat, lanes=lanes) as addr, healthz_probe(addr) as health:
        attack = [connect(addr, f"127.0.0.{2 + i % 4}") for i in range(20)]  # ~20 s of matching
        for s in attack:
            s.sendall(post("/explain", paste))
        time.sleep(0.5)
        close_all(attack)
        time.sleep(1.0)  # the disconnects seen, the running paste at its next check
        assert busy_seconds(1.5) < 0.4
        assert ask(addr, post("/explain", paste))[0] == 200  # the lane is free
        assert healthy(health), health


@pytest.mark.slow  # a queue of heavy pastes (stress)
def test_work_past_the_lane_deadline_is_dropped_with_a_503(heavy):
    cat, paste, _ = heavy
    lanes = long_lane(queue=6, per_client=2, timeout=1.0)
    with running(cat, lanes=lanes) as addr, healthz_probe(addr) as health:
        attack = [connect(addr, f"127.0.0.{2 + i % 3}") for i in range(6)]
        try:
            for s in attack:
                s.sendall(post("/explain", paste))
            start = time.monotonic()
            replies = [read_response(s) for s in attack]
            assert time.monotonic() - start < 3  # one deadline, not six pastes' worth
        finally:
            close_all(attack)
        late = [r for r in replies if r[0] == 503]
        assert len(late) >= 4, [r[0] for r in replies]
        for status, headers, body in late:
            assert "not matched within 1 s" in envelope(status, headers, body, 503)
        assert busy_seconds(1.0) < 0.3  # nothing left running
        assert healthy(health), health


# ---------------------------------------------------------------- one client


@pytest.mark.slow  # every slot filled with heavy pastes (stress)
def test_one_client_cannot_take_every_slot(heavy):
    """Per client address: 8 bodies on their way at most, and (here) 2 requests being
    answered; past either a quick 503, while another client is served as usual."""
    cat, paste, log = heavy
    lanes = long_lane(queue=8, per_client=4)
    limits = {"body_timeout": 3, "max_in_flight_per_client": 2}
    with running(cat, lanes=lanes, **limits) as addr, healthz_probe(addr) as health:
        hog = []
        try:
            for _ in range(10):
                hog.append(stall(addr, "127.0.0.2"))
                time.sleep(0.02)  # an order the server sees
            refused = answered_within(hog, 0.5)
            assert refused == hog[8:]
            for s in refused:
                status, headers, body = read_response(s)
                assert "as many requests open as one client may" in envelope(
                    status, headers, body, 503
                )
                assert headers["retry-after"] == "1"
            assert ask(addr, post("/explain", log), "127.0.0.3")[0] == 200

            heavy_hog = []
            for _ in range(3):
                heavy_hog.append(connect(addr, "127.0.0.4"))
                heavy_hog[-1].sendall(post("/explain", paste))
                time.sleep(0.1)
            other = connect(addr, "127.0.0.5")
            other.sendall(post("/explain", paste))
            third = read_response(heavy_hog[2])
            assert "as many requests open" in envelope(*third, 503)
            assert read_response(other)[0] == 200
            assert [read_response(s)[0] for s in heavy_hog[:2]] == [200, 200]
            hog += heavy_hog + [other]
        finally:
            close_all(hog)
        assert healthy(health), health
