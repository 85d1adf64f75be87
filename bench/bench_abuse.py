"""`kverr serve` under abuse: what /healthz and a normal paste cost with no attack, beside a wave
of stalled bodies, and beside 60 heavy pastes, in one run, each against the no-attack figure.

Starts the real server (`python -m kverr serve --port 0`) in a subprocess. The measuring client
is 127.0.0.1; attackers connect from loopback addresses of their own (127.0.0.2 and up: the
server tells clients apart by address). Loopback only; every loop ends with its phase.

    no attack      the baseline
    slow bodies    70 sockets (7 from each of 10 addresses) announce 100 KB of body, send one
                   byte and wait; each one the server answers or closes is reopened
    heavy pastes   60 sockets (6 from each of 10 addresses) post a 250 KB paste of the
                   catalog's own messages (seconds of matching each), and post it again once
                   answered

The attackers run in a process of their own (their threads would otherwise hold up the
measuring client's GIL), and each waits 0.1 s after an answer before its next try. Per phase:
p50/p99 of /healthz, of a one-line paste (matched on the event loop) and of a 30-line launch
log of ~2 KB (matched in the short lane), the answers that were not 200, what the attackers
got, the server's CPU seconds in the 3 s after the attackers hung up (work nobody waits for
any more) and the lines it logged.

Usage:  python bench/bench_abuse.py [--catalog C] [--seconds 10] [--workers 1]
        [--server-python OTHER/.venv/bin/python]   (the server from another checkout: before/after)
"""

from __future__ import annotations

import collections
import multiprocessing
import os
import random
import re
import socket
import threading
import time
from pathlib import Path

import bench_api
from bench_api import GET_HEALTHZ, _response_end, logs, pastes, post, start_server, stop

STALL = b"POST /explain HTTP/1.1\r\nHost: bench\r\nContent-Length: 100000\r\n\r\nV"
HEAVY_CHARS = 250_000
TIMEOUT = 30.0  # seconds a measured request may take before it counts as lost


def heavy_paste(catalog: Path | None) -> str:
    """250 KB of the catalog's own messages, one per line, each with values filled in: every
    line a match, so the matcher works for all of it."""
    from kverr.catalog import open_catalog

    with open_catalog(catalog) as cat:
        messages = [r["errorMessage"] for r in cat.records() if r.get("errorMessage")]
    rnd = random.Random(11)
    lines, size = [], 0
    while size < HEAVY_CHARS:
        msg = re.sub(r"\{[^{}]*\}", "48", rnd.choice(messages))
        lines.append(f"[2026-04-24 10:00:02 TP0] ValueError: {msg}")
        size += len(lines[-1]) + 1
    return "\n".join(lines)[:HEAVY_CHARS]


def connect(addr, source: str, timeout: float) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.settimeout(timeout)
    sock.bind((source, 0))
    sock.connect(addr)
    return sock


# ---------------------------------------------------------------- the measuring client


class Client:
    """One keep-alive connection from 127.0.0.1, reopened when the server closes it."""

    def __init__(self, addr) -> None:
        self.addr, self.sock = addr, None

    def ask(self, raw: bytes) -> tuple[int, float]:
        """(status, seconds); status 0 when the connection failed or the answer took too long."""
        start = time.perf_counter()
        try:
            if self.sock is None:
                self.sock = connect(self.addr, "127.0.0.1", TIMEOUT)
            self.sock.sendall(raw)
            buf = bytearray()
            while _response_end(buf) < 0:
                chunk = self.sock.recv(262144)
                if not chunk:
                    raise ConnectionError("closed")
                buf += chunk
            status = int(buf[9:12])
            if b"connection: close" in buf[: buf.find(b"\r\n\r\n")].lower():
                self.close()
        except OSError:
            self.close()
            status = 0
        return status, time.perf_counter() - start

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None


def measure(addr, seconds: float, requests: dict[str, list[bytes]]) -> dict:
    """Each kind of request in turn, one at a time, for `seconds`: latencies and statuses."""
    clients = {kind: Client(addr) for kind in requests}
    got = {kind: ([], collections.Counter()) for kind in requests}
    end, i = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        for kind, raws in requests.items():
            status, took = clients[kind].ask(raws[i % len(raws)])
            got[kind][0].append(took)
            got[kind][1][status] += 1
        i += 1
        time.sleep(0.02)
    for c in clients.values():
        c.close()
    return got


# ---------------------------------------------------------------- the attackers


def attacker(addr, source: str, payload: bytes, halt: threading.Event, seen: collections.Counter):
    """Send `payload`, wait for the answer (or the close), again, until `halt`."""
    while not halt.is_set():
        try:
            sock = connect(addr, source, TIMEOUT)
        except OSError:
            seen["connect failed"] += 1
            halt.wait(0.1)
            continue
        try:
            sock.settimeout(0.5)
            sent = 0
            while sent < len(payload) and not halt.is_set():
                try:
                    sent += sock.send(payload[sent : sent + 65536])
                except TimeoutError:
                    continue
            buf = bytearray()
            while not halt.is_set() and _response_end(buf) < 0:
                try:
                    chunk = sock.recv(65536)
                except TimeoutError:
                    continue
                if not chunk:
                    break
                buf += chunk
            if not halt.is_set():
                seen[int(buf[9:12]) if buf.startswith(b"HTTP/1.1 ") else "closed"] += 1
        except OSError:
            seen["reset"] += 1
        finally:
            sock.close()
        halt.wait(0.1)


def _attackers(addr, payload: bytes, sockets: int, addresses: int, halt, out) -> None:
    """The attacker threads of one process, until `halt`; what they got goes to `out`."""
    stop, seen = threading.Event(), collections.Counter()
    threads = [
        threading.Thread(
            target=attacker,
            args=(addr, f"127.0.0.{2 + i % addresses}", payload, stop, seen),
            daemon=True,
        )
        for i in range(sockets)
    ]
    for t in threads:
        t.start()
    halt.wait()
    stop.set()
    for t in threads:
        t.join(timeout=TIMEOUT + 5)
    cpu = os.times()
    seen["attackers' CPU s"] = round(cpu.user + cpu.system, 1)
    out.put(dict(seen))


class Attack:
    """`sockets` attackers in a process of their own, so that their threads do not take the
    measuring client's GIL: its latencies are the server's."""

    def __init__(self, addr, payload: bytes | None, sockets: int, addresses: int = 10) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.halt, self.out, self.proc = ctx.Event(), ctx.Queue(), None
        if payload:
            args = (addr, payload, sockets, addresses, self.halt, self.out)
            self.proc = ctx.Process(target=_attackers, args=args, daemon=True)
            self.proc.start()

    def stop(self) -> dict:
        if self.proc is None:
            return {}
        self.halt.set()
        seen = self.out.get(timeout=TIMEOUT + 30)
        self.proc.join(timeout=10)
        return seen


def cpu_seconds(pid: int) -> float:
    """User + system CPU of the server process and its workers, from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(stat.parent.name) == pid or int(fields[1]) == pid:  # fields[1]: the parent
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


# ---------------------------------------------------------------- main


def main() -> None:
    ap = bench_api.server_options(__doc__)
    ap.add_argument("--seconds", type=float, default=10.0, help="length of each phase")
    ap.add_argument("--workers", type=int, default=1)
    args = ap.parse_args()
    one_line = [post("/explain", b) for b in pastes(args.catalog) if "\n" not in b]
    requests = {
        "/healthz": [GET_HEALTHZ],
        "paste": one_line,
        "2 KB log": [post("/explain", text) for text in logs()],
    }
    heavy = post("/explain", heavy_paste(args.catalog))
    phases = [("no attack", None, 0), ("slow bodies", STALL, 70), ("heavy pastes", heavy, 60)]
    proc, addr = start_server(args.catalog, args.workers, args.server_python)
    logged = [0]  # the server's stderr lines: read as they come, or a full pipe stalls it

    def read_log() -> None:
        for _ in proc.stderr:
            logged[0] += 1

    threading.Thread(target=read_log, daemon=True).start()
    rows = []
    try:
        measure(addr, 1.0, requests)  # warm the index and the lanes
        for name, payload, sockets in phases:
            lines = logged[0]
            attack = Attack(addr, payload, sockets)
            time.sleep(2.0 if payload else 0)  # the attack under way before the clock starts
            got = measure(addr, args.seconds, requests)
            seen = attack.stop()
            before = cpu_seconds(proc.pid)
            time.sleep(3)
            rows.append((name, got, seen, cpu_seconds(proc.pid) - before, logged[0] - lines))
    finally:
        stop(proc)

    print(
        f"kverr serve under abuse on loopback ({os.cpu_count()} CPUs, {args.workers} worker(s)),"
        f" {args.seconds:g} s per phase; p50/p99 in ms, (x) = p99 / the no-attack p99"
    )
    base = {kind: bench_api.percentile(rows[0][1][kind][0], 0.99) for kind in requests}
    head = f"{'phase':<13}" + "".join(f" {kind + ' p50/p99':>26}" for kind in requests)
    print(head + f" {'not 200':>10} {'CPU after':>9} {'log':>6}  attackers got")
    for name, got, seen, after, lines in rows:
        cells = ""
        for kind in requests:
            lat = got[kind][0]
            ratio = bench_api.percentile(lat, 0.99) / base[kind]
            cells += f" {bench_api.percentile(lat, 0.5):>9.1f} /{bench_api.percentile(lat, 0.99):>8.1f} ({ratio:>4.1f}x)"
        bad = "/".join(str(sum(n for s, n in got[k][1].items() if s != 200)) for k in requests)
        shown = ", ".join(f"{k}: {v}" for k, v in sorted(seen.items(), key=str)) or "-"
        print(f"{name:<13}{cells} {bad:>10} {after:>8.2f}s {lines:>6}  {shown}")
    print(
        "(not 200: /healthz / paste / log answers that were not 200, timeouts included;"
        " log: lines the server wrote to stderr)"
    )


if __name__ == "__main__":
    main()
