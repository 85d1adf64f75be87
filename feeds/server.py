"""Running the JSON API (feeds/api.py) for the open internet: uvicorn, guarded, in N processes.

Stock uvicorn fell to a few probes; three additions close them:
- `GuardedH11Protocol`, uvicorn's h11 protocol with deadlines and a connection cap. uvicorn
  starts its keep-alive timer only after a first response, so a client that connects and
  sends nothing, or trickles a header, kept its slot for good, and 128 of them made every
  request a 503. Here a connection sends a whole request head within `head_timeout` of
  opening (or of its previous response) or is closed, an answer is written within
  `request_timeout` or the connection is closed, and when connections pass `max_connections`
  the one that has waited longest without a request in flight is closed to make room: idle
  sockets cannot lock clients out, however many an attacker opens. A head past MAX_HEAD is a
  431 however it arrives (h11 measures only a head still incomplete, so one sent whole in a
  single write went through). A connection answered before its body arrived (408, 413, 503),
  or refused for its head, reads what still comes and drops it for LINGER seconds, then closes.
- `guard`, an ASGI wrapper that admits requests. A request still receiving its body takes a
  receiving slot (`max_receiving`, `max_receiving_per_client`), and only once the body is in
  an answering slot (`max_in_flight`, `max_in_flight_per_client`): 70 sockets that announce a
  body and stall used to take all 64 answering slots, and /healthz answered 503 to the load
  balancer. /healthz, answered from memory, is never counted nor refused. Past a cap, a JSON
  503 with Retry-After; peers are told apart by address (uvicorn takes it from
  X-Forwarded-For when the peer is a trusted proxy: docs/serving.md). Also a JSON 400 that
  closes the connection for a request framed by both Content-Length and Transfer-Encoding
  (RFC 9112 §6.3: a smuggling attempt), and a JSON 500 for anything that escaped the app.
  With the protocol's own 400/408/431, every error the server sends is `{"error", "status"}`.
- `--workers N`: N processes, each with its own read-only catalog connection and its own
  listening socket on one port (SO_REUSEPORT: the kernel spreads new connections over them,
  so keep-alive clients land on every worker, not on whichever accepted first). A small
  supervisor starts them, replaces one that dies, and stops them all on SIGINT/SIGTERM.
"""

from __future__ import annotations

import asyncio
import collections
import gc
import json
import logging
import multiprocessing
import multiprocessing.connection
import os
import re
import resource
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass, replace
from http import HTTPStatus
from pathlib import Path

import h11
import uvicorn
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect
from uvicorn.protocols.http.h11_impl import H11Protocol

from kverr.errors import KverrError, QueryError

MAX_HEAD = 64 * 1024  # request line + headers, bytes; past it a 431
HEAD_TOO_LONG = "The request line and headers pass 64 KiB; send a shorter request."
_HEAD_END = re.compile(rb"\n\r?\n")  # the blank line that ends a head, as h11 finds it
# Seconds a connection we stop serving (a 431, or an answer before its body arrived) goes on
# reading and dropping what the client sends before it closes (GuardedH11Protocol._linger).
LINGER = 2.0
GC_THRESHOLD = 50_000  # allocations between young collections in a serving process (settle)
SWITCH_INTERVAL = 0.001  # seconds a thread holds the GIL when another waits (settle)
log = logging.getLogger("uvicorn.error")  # uvicorn configures its handler and level


@dataclass(frozen=True)
class Limits:
    """How long and how many: every bound the server enforces besides body and text size."""

    head_timeout: float = 10.0  # seconds to send a request head, from connect or last answer
    keep_alive: int = 5  # seconds an idle keep-alive connection stays open (uvicorn's timer)
    request_timeout: float = 30.0  # seconds from request head to the end of its answer
    body_timeout: float = 10.0  # seconds from the head to the whole body (feeds/api.py: 408)
    max_connections: int = 1000  # open connections per worker; the longest idle one makes room
    max_receiving: int = 256  # requests still receiving their body, per worker; past it a 503
    max_receiving_per_client: int = 8  # the same, from one client address
    max_in_flight: int = 64  # requests being answered (body in) per worker; past it a 503
    max_in_flight_per_client: int = 8  # the same, from one client address
    graceful: int = 10  # seconds in-flight requests get to finish on shutdown


def error_bytes(status: int, text: str) -> bytes:
    """A whole HTTP response carrying the JSON error envelope; the connection closes after it."""
    body = json.dumps({"error": text, "status": status}, separators=(",", ":")).encode()
    head = (
        f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\nx-content-type-options: nosniff\r\n"
        "cache-control: no-store\r\n\r\n"
    )
    return head.encode() + body


def client_of(scope) -> str:
    """The client's address: the peer's, or the one a trusted proxy names (uvicorn's
    ProxyHeadersMiddleware sets it from X-Forwarded-For)."""
    client = scope.get("client")
    return client[0] if client else ""


class Slots:
    """A count of requests at once, overall and per client address."""

    def __init__(self, total: int, per_client: int) -> None:
        self.total, self.per_client = total, per_client
        self.used = 0
        self.by_client: collections.Counter[str] = collections.Counter()

    def refusal(self, client: str) -> str | None:
        """Which cap refuses one more request of `client` now: "server", "client" (one client
        may not take every slot) or None."""
        if self.used >= self.total:
            return "server"
        if self.by_client[client] >= self.per_client:
            return "client"
        return None

    def take(self, client: str) -> str | None:
        """Count one more request of `client`, or say which cap refused it (`refusal`)."""
        refused = self.refusal(client)
        if refused is None:
            self.used += 1
            self.by_client[client] += 1
        return refused

    def give(self, client: str) -> None:
        self.used -= 1
        self.by_client[client] -= 1
        if not self.by_client[client]:
            del self.by_client[client]


# ---------------------------------------------------------------- the connection


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with deadlines, a connection cap and JSON errors (module doc).
    `server_for` makes a subclass carrying the server's `limits`."""

    limits = Limits()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.waiting_since = self.loop.time()  # waiting for a request head since
        self.request_since = 0.0
        self.seen_cycle = None
        self.head_seen, self.head_tail = 0, b""  # the incomplete head h11 holds: size, end
        self.draining = False  # answered; the rest of the body is read and dropped (LINGER)
        self.deadline: asyncio.TimerHandle | None = None
        self._arm(self.limits.head_timeout)
        if len(self.connections) > self.limits.max_connections:
            self._make_room()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.deadline is not None:
            self.deadline.cancel()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.draining or self.conn.their_state is h11.IDLE and not self._head_fits(data):
            return
        super().data_received(data)

    def _head_fits(self, data: bytes) -> bool:
        """Whether the request head that `data` begins or continues stays within MAX_HEAD;
        when not, the answer is a 431 and the connection closes."""
        seen = self.head_tail + data
        end = _HEAD_END.search(seen)
        size = self.head_seen - len(self.head_tail) + (end.end() if end else len(seen))
        if size > MAX_HEAD:
            self.transport.write(error_bytes(431, HEAD_TOO_LONG))
            self._linger()
            return False
        self.head_seen, self.head_tail = (0, b"") if end else (size, seen[-3:])
        return True

    def handle_events(self) -> None:
        super().handle_events()
        if self.cycle is not self.seen_cycle:  # a request head arrived (a new cycle began)
            self.seen_cycle = self.cycle
            self.request_since = self.loop.time()

    def on_response_complete(self) -> None:
        self.waiting_since = self.loop.time()
        if not self.transport.is_closing():
            if self.conn.their_state is h11.SEND_BODY:  # answered before its body arrived
                self._linger()
                return
            # A pipelined request already read: h11 parses its head below in one piece.
            pending = self.conn.trailing_data[0]
            self.head_seen, self.head_tail = 0, b""
            if pending and not self._head_fits(pending):
                return
        super().on_response_complete()

    def _linger(self) -> None:
        """Serve no more: read and drop what the client still sends for LINGER seconds, then
        close. Closing with its bytes unread resets the connection, and a client still sending
        (a body, the rest of a long head) could lose the answer already written."""
        self.draining = True
        try:
            self.transport.write_eof()  # once what is written has gone out
        except OSError:  # the client has gone already
            self.transport.close()
            return
        if self.deadline is not None:
            self.deadline.cancel()
        self.waiting_since = self.loop.time()
        self._arm(LINGER)

    def in_flight(self) -> bool:
        return self.cycle is not None and not self.cycle.response_complete

    def _arm(self, delay: float) -> None:
        self.deadline = self.loop.call_later(max(delay, 0.05), self._check)

    def _check(self) -> None:
        self.deadline = None
        if self.transport.is_closing():
            return
        now, t = self.loop.time(), self.limits.head_timeout
        if self.draining:
            left = self.waiting_since + LINGER - now
        elif self.in_flight():  # (a client that never reads its answer: its slot is freed)
            left = self.request_since + self.limits.request_timeout - now
        else:
            left = self.waiting_since + t - now
            if left <= 0 and self.conn.trailing_data[0]:  # half a request head: say why
                said = f"The request head did not arrive within {t:g} s; send it in one go."
                self.transport.write(error_bytes(408, said))
        if left > 0:
            self._arm(left)
        else:
            self.transport.close()

    def _make_room(self) -> None:
        idle = [
            c
            for c in self.connections
            if c is not self
            and isinstance(c, GuardedH11Protocol)
            and not c.in_flight()
            and not c.transport.is_closing()
        ]
        if idle:
            min(idle, key=lambda c: c.waiting_since).transport.close()
        else:  # every slot is answering a request: this one waits for nothing
            self.transport.write(
                error_bytes(503, "The server has too many open connections; retry in a moment.")
            )
            self.transport.close()

    def send_400_response(self, msg: str) -> None:
        # h11 refused the request; uvicorn would answer in plain text.
        text = "The request is not valid HTTP/1.1; check its request line and headers."
        self.transport.write(error_bytes(400, text))
        self.transport.close()


# ---------------------------------------------------------------- the requests


BUSY = {
    "server": "The server is answering as many requests as it can; retry in a moment.",
    "client": "This client has as many requests open as one client may; wait for their answers.",
}
RETRY_AFTER = "1"  # seconds, on every 503 of a full slot count


def guard(app, limits: Limits):
    """The ASGI app behind the last checks every request passes (module doc)."""
    receiving = Slots(limits.max_receiving, limits.max_receiving_per_client)
    answering = Slots(limits.max_in_flight, limits.max_in_flight_per_client)

    async def guarded(scope, receive, send) -> None:
        if scope["type"] != "http":
            return await app(scope, receive, send)
        headers = dict(scope["headers"])  # (names are unique enough for these two)
        if b"transfer-encoding" in headers and b"content-length" in headers:
            return await _send_error(
                send, 400, "The request has both Content-Length and Transfer-Encoding; send one."
            )
        if scope["path"] == "/healthz":  # answered from memory: a balancer's probe always is
            return await app(scope, receive, send)
        client = client_of(scope)
        body = b"transfer-encoding" in headers or headers.get(b"content-length", b"0") != b"0"
        held = receiving if body else answering
        refused = held.take(client)
        if refused:  # (an unread body is then read and dropped: LINGER)
            return await _send_error(send, 503, BUSY[refused], RETRY_AFTER, close=False)

        async def receive_counted():
            nonlocal held
            message = await receive()
            if held is receiving and not message.get("more_body"):  # the body is in (or gone)
                receiving.give(client)
                held = None
                if message["type"] == "http.request":
                    refused = answering.take(client)
                    if refused:  # the app answers it as any HTTPException: JSON
                        raise HTTPException(503, BUSY[refused], {"Retry-After": RETRY_AFTER})
                    held = answering
            return message

        started = False

        async def send_and_note(message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await app(scope, receive_counted if body else receive, send_and_note)
        except ClientDisconnect:
            pass  # gone mid-body: nobody to answer, and a traceback each would flood the log
        except Exception:
            # Starlette has answered with its JSON 500 and re-raises for the log; anything it
            # could not answer gets the envelope here. Never internals to the client.
            log.exception("request %s %s failed", scope.get("method"), scope.get("path"))
            if not started:
                await _send_error(send, 500, "Internal error; the server log has details.")
        finally:
            if held is not None:
                held.give(client)

    return guarded


async def _send_error(
    send, status: int, text: str, retry_after: str | None = None, close: bool = True
) -> None:
    body = json.dumps({"error": text, "status": status}, separators=(",", ":")).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"x-content-type-options", b"nosniff"),
        (b"cache-control", b"no-store"),
    ]
    if close:  # h11 then closes the connection after the answer
        headers.append((b"connection", b"close"))
    if retry_after is not None:
        headers.append((b"retry-after", retry_after.encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


# ---------------------------------------------------------------- one process


def bind(host: str, port: int, *, reuse_port: bool = False) -> socket.socket:
    """Bind before starting uvicorn so port 0 works and the real port can be reported."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto must be IPPROTO_TCP (not 0): asyncio only sets TCP_NODELAY on such sockets, and
    # without it every keep-alive response stalls ~40 ms on Nagle + delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise QueryError(
            f"Cannot listen on {host}:{port} ({exc.strerror}); pick another --port."
        ) from None
    return sock


def server_for(app, sock: socket.socket, *, limits: Limits = Limits()):
    """A uvicorn Server for `app` on `sock`, with the guards above."""
    # Each connection holds a file descriptor: stay under the process's limit.
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    cap = (
        limits.max_connections
        if soft == resource.RLIM_INFINITY
        else min(limits.max_connections, soft - 64)
    )
    capped = replace(limits, max_connections=max(cap, 16))
    protocol = type("KverrH11Protocol", (GuardedH11Protocol,), {"limits": capped})
    config = uvicorn.Config(
        guard(app, limits),
        http=protocol,  # never httptools, even if installed: the guards live in this class
        log_level="warning",
        access_log=False,  # request lines can carry pasted secrets
        server_header=False,
        ws="none",
        lifespan="off",
        limit_concurrency=None,  # its cap counted idle connections: the protocol and guard cap instead
        timeout_keep_alive=limits.keep_alive,
        timeout_graceful_shutdown=limits.graceful,
        h11_max_incomplete_event_size=MAX_HEAD,
    )
    return uvicorn.Server(config)


def settle() -> None:
    """Tune a serving process once its catalog index is in memory. A long paste is matched in a
    thread beside the event loop, and while the other thread holds the GIL the loop waits: for
    the switch interval (5 ms by default), and for a whole garbage collection, which walked the
    index each time (30-100 ms during a 250 KB paste, bench/bench_abuse.py). The index lives as
    long as the process, so it is frozen out of every collection, and collections run less often
    (the matcher's own objects are freed by reference counting)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])
    sys.setswitchinterval(SWITCH_INTERVAL)


def _announce(path: Path, host: str, port: int, detail: str = "") -> None:
    shown = f"[{host}]" if ":" in host else host
    print(f"kverr: serving {path} on http://{shown}:{port}{detail}", file=sys.stderr, flush=True)


def serve(
    catalog_path: Path | None,
    host: str,
    port: int,
    workers: int = 1,
    limits: Limits = Limits(),
    cors_origins: tuple[str, ...] = (),
    source: str | None = None,
) -> None:
    """Run the API until interrupted; prints the URL (with the real port when port is 0).
    The catalog is read whole first: a damaged one stops here with one line (exit 2).
    `cors_origins`: sites whose pages may call it (feeds/api.py create_app); `source`: where
    POST /check reads releases from, handed to every worker as KVERR_SOURCE."""
    from kverr.catalog import open_catalog
    from kverr.feeds.api import check_origins, create_app

    cors_origins = check_origins(cors_origins)  # a bad one fails before anything starts
    if source:
        os.environ["KVERR_SOURCE"] = source

    cat = open_catalog(catalog_path)
    try:
        cat.verify()
        if workers == 1:
            sock = bind(host, port)
            sock.listen(2048)  # before the URL is printed: a client may connect at once
            _announce(cat.path, host, sock.getsockname()[1])
            app = create_app(cat, body_timeout=limits.body_timeout, cors_origins=cors_origins)
            settle()
            server_for(app, sock, limits=limits).run(sockets=[sock])
            return
        path = cat.path
    finally:
        cat.close()
    Workers(path, host, port, workers, limits, cors_origins).run()


# ---------------------------------------------------------------- N processes


def _worker(
    path: str, host: str, port: int, limits: Limits, ready, cors_origins: tuple[str, ...] = ()
) -> None:
    """One worker process: its own catalog connection and listening socket, then uvicorn."""
    from kverr.catalog import Catalog
    from kverr.feeds.api import create_app

    try:
        cat = Catalog(Path(path))
        cat.verify()
        sock = bind(host, port, reuse_port=True)
        sock.listen(2048)
        app = create_app(cat, body_timeout=limits.body_timeout, cors_origins=cors_origins)
        settle()
        server = server_for(app, sock, limits=limits)
    except KverrError as exc:
        ready.send(("error", str(exc)))
        return
    ready.send(("ready", None))
    ready.close()
    threading.Thread(target=_orphan_watch, args=(server, os.getppid()), daemon=True).start()
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn re-raises the SIGINT it drained on: already stopped
        pass


def _orphan_watch(server, parent: int) -> None:
    """A supervisor killed outright (SIGKILL, OOM) cannot stop its workers: each one notices
    it was orphaned and drains and exits on its own, rather than serve on unsupervised."""
    while not server.should_exit:
        time.sleep(1.0)
        if os.getppid() != parent:
            server.should_exit = True


def describe(exitcode: int | None) -> str:
    if exitcode is None:
        return "is still running"
    if exitcode < 0:
        try:
            return f"was killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"was killed by signal {-exitcode}"
    return f"exited with code {exitcode}"


class Workers:
    """N worker processes on one port: started together, watched, replaced when one dies,
    stopped together on SIGINT/SIGTERM (each finishes its in-flight requests first)."""

    START_TIMEOUT = 60.0

    def __init__(
        self,
        path: Path,
        host: str,
        port: int,
        n: int,
        limits: Limits,
        cors_origins: tuple[str, ...] = (),
    ) -> None:
        if not hasattr(socket, "SO_REUSEPORT"):
            raise QueryError("--workers needs SO_REUSEPORT (Linux, BSD, macOS); run one worker.")
        self.path, self.host, self.limits, self.n = path, host, limits, n
        self.cors_origins = cors_origins
        self.ctx = multiprocessing.get_context("spawn")  # a fresh interpreter: no DuckDB state
        self.procs: list = []
        self.stopping: int | None = None  # the signal that asked us to stop
        self.deaths: collections.deque[float] = collections.deque(maxlen=5 * n)
        # The port is checked free with a plain bind (a second `kverr serve` on it must fail,
        # not share it), then held by a socket in the SO_REUSEPORT group that never listens.
        probe = bind(host, port)
        self.port = probe.getsockname()[1]
        probe.close()
        self.hold = bind(host, self.port, reuse_port=True)

    def _on_signal(self, sig: int, frame) -> None:
        self.stopping = sig

    def run(self) -> None:
        handled = (signal.SIGINT, signal.SIGTERM)
        previous = {sig: signal.signal(sig, self._on_signal) for sig in handled}
        try:
            self.procs = self._start(self.n)
            if self.stopping is None:
                pids = ", ".join(str(p.pid) for p in self.procs)
                _announce(self.path, self.host, self.port, f" with {self.n} workers (pids {pids})")
            while self.stopping is None:
                self._watch()
        finally:
            self._stop()
            self.hold.close()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        if self.stopping == signal.SIGINT:  # as one uvicorn does: exit the way the signal asks
            raise KeyboardInterrupt  # (raised, not re-sent: a background job ignores SIGINT)
        if self.stopping is not None:
            signal.signal(self.stopping, signal.SIG_DFL)
            signal.raise_signal(self.stopping)

    def _start(self, n: int) -> list:
        """Start n workers at once and wait until each listens; stop them all if one cannot."""
        started = []
        for _ in range(n):
            recv, send = self.ctx.Pipe(duplex=False)
            proc = self.ctx.Process(
                target=_worker,
                args=(str(self.path), self.host, self.port, self.limits, send, self.cors_origins),
                name="kverr-worker",
            )
            proc.start()
            send.close()
            started.append((proc, recv))
        deadline = time.monotonic() + self.START_TIMEOUT
        failure = None
        for proc, recv in started:
            while failure is None and self.stopping is None and not recv.poll(0.2):
                if time.monotonic() > deadline:
                    failure = f"a worker did not start within {self.START_TIMEOUT:g} s"
            if failure is None and self.stopping is None:
                try:
                    kind, detail = recv.recv()
                except EOFError:
                    proc.join(5)
                    kind, detail = "error", f"a worker {describe(proc.exitcode)} while starting"
                if kind != "ready":
                    failure = detail
            recv.close()
        procs = [proc for proc, _ in started]
        if failure is not None or self.stopping is not None:
            self.procs += procs
            self._stop()
            if failure is not None:
                raise KverrError(failure)
            return []
        return procs

    def _watch(self) -> None:
        """Wait up to a second for a worker to end; replace each one that did."""
        multiprocessing.connection.wait([p.sentinel for p in self.procs], timeout=1.0)
        for i, proc in enumerate(self.procs):
            if self.stopping is not None or proc.is_alive():
                continue
            proc.join()
            now = time.monotonic()
            self.deaths.append(now)
            if len(self.deaths) == self.deaths.maxlen and now - self.deaths[0] < 60:
                raise KverrError(
                    f"workers died {len(self.deaths)} times within a minute (the last {describe(proc.exitcode)});"
                    " see the log above."
                )
            (new,) = self._start(1)
            self.procs[i] = new
            print(
                f"kverr: worker {proc.pid} {describe(proc.exitcode)}; worker {new.pid} replaces it.",
                file=sys.stderr,
                flush=True,
            )

    def _stop(self) -> None:
        for proc in self.procs:
            if proc.is_alive():
                proc.terminate()  # SIGTERM: uvicorn drains in-flight requests, then exits
        deadline = time.monotonic() + self.limits.graceful + 5
        for proc in self.procs:
            proc.join(max(deadline - time.monotonic(), 0))
            if proc.is_alive():
                proc.kill()
                proc.join()
        self.procs = []
