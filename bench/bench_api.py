"""Load test of `kverr serve` on loopback: requests/s and p50/p99 latency, per worker count.

Starts the real server (`python -m kverr serve --port 0 [--workers N]`) in a subprocess, then
drives it from this process with a raw-socket keep-alive client: one non-blocking socket per
client, requests prebuilt as bytes, responses framed by Content-Length. It costs a few tens of
microseconds of CPU per request (printed as "client CPU"), a small share of the server's, so
the figures are the server's, not the client's (an httpx client topped out near the server's
own rate). For each worker count:

    /healthz  at 1 and 16 clients   the floor: the server stack with no catalog work
    /explain  at 1 and 16 clients   realistic pastes built from the catalog's own records
                                    (log prefixes, tracebacks, noisy surrounding lines)
    /explain  at 1 client, one INFO line with no error in it: what a POST with a body and a
              small answer costs beside /healthz's GET when the matcher has next to nothing
              to do (the HTTP floor of an explain; its ratio is the most /explain can reach)
    /explain  at 1 client, the pastes that are one log line (a third of them): what the mix
              would reach if every paste cost what reading one line costs (a traceback or a
              log excerpt is read per line, per unit and in up to three joined readings)
    /explain  at 16 clients with 130 idle connections held open (reopened when the server
              closes one): the p99 must not move, and no request may get a 503
    /healthz  at 1 client beside one client posting 30-line launch logs back to back: what
              one expensive request does to the others (their p99)

Usage:  python bench/bench_api.py --catalog CATALOG.duckdb [--requests 1000] [--rounds 3] [--workers 1 2]
        [--server-python OTHER/.venv/bin/python]   (the server from another checkout: before/after)
(without --catalog: $KVERR_CATALOG, else the packaged SGLang catalog)
"""

from __future__ import annotations

import argparse
import os
import random
import re
import resource
import selectors
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # tests/synth.py
NOISE = [
    "[2026-04-24 10:00:00] INFO:     Started server process [4242]",
    "[2026-04-24 10:00:00] server_args=ServerArgs(model_path='/models/llama', tp_size=2, ...)",
    "[2026-04-24 10:00:01] Load weight begin. avail mem=78.12 GB",
    "/usr/lib/python3/dist-packages/torch/cuda/__init__.py:61: FutureWarning: pynvml is deprecated",
]
IDLE = 130
LOG_LINES = 30


def pastes(catalog: Path | None, n: int = 200, seed: int = 7) -> list[str]:
    """Pastes shaped like real bug reports, made from the catalog's messages with values filled in."""
    from kverr.catalog import open_catalog

    with open_catalog(catalog) as cat:
        recs = [r for r in cat.records() if r.get("errorMessage")]
    if not recs:
        sys.exit(
            f"bench: {catalog} has no records with a message; build a catalog from real source first."
        )
    rnd = random.Random(seed)
    out = []
    for _ in range(n):
        rec = rnd.choice(recs)
        msg = re.sub(
            r"\{[^{}]*\}",
            lambda _: rnd.choice(["48", "'fp8_e5m2'", "None", "2", "'triton'"]),
            rec["errorMessage"],
        )
        cls = rec.get("errorClass") or "WARNING"
        shape = rnd.randrange(3)
        if shape == 0:
            out.append(f"[2026-04-24 10:00:02 TP0] {cls}: {msg}")
        elif shape == 1:
            out.append(
                "Traceback (most recent call last):\n"
                '  File "/opt/venv/lib/python3.11/site-packages/sglang/launch_server.py", line 14, in <module>\n'
                "    server_args = prepare_server_args(sys.argv[1:])\n"
                f'  File "/opt/venv/lib/python3.11/site-packages/{rec.get("filePath", "x.py")}", line {rec.get("lineNumber", 1)}, in __post_init__\n'
                f"{cls}: {msg}"
            )
        else:
            out.append("\n".join(rnd.sample(NOISE, 3) + [f"{cls}: {msg}"] + rnd.sample(NOISE, 2)))
    return out


def logs(n: int = 20) -> list[str]:
    """Launch-log excerpts of LOG_LINES lines (a few KB) with an error inside: the long pastes
    a support bot also gets, explained beside the short ones."""
    import synth

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "launch.log"
        error = "ValueError: --ssl-keyfile requires --ssl-certfile to be specified as well."
        synth.launch_log(path, n * LOG_LINES, [error], every=LOG_LINES)
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    return ["".join(lines[i : i + LOG_LINES]) for i in range(0, len(lines), LOG_LINES)]


def post(path: str, body: str) -> bytes:
    data = body.encode()
    head = f"POST {path} HTTP/1.1\r\nHost: bench\r\nContent-Type: text/plain\r\nContent-Length: {len(data)}\r\n\r\n"
    return head.encode() + data


GET_HEALTHZ = b"GET /healthz HTTP/1.1\r\nHost: bench\r\n\r\n"
NO_ERROR = "[2026-04-24 10:00:01] Load weight begin. avail mem=78.12 GB"  # (the floor row)


# ---------------------------------------------------------------- the server


def start_server(
    catalog: Path | None, workers: int, python: str = sys.executable
) -> tuple[subprocess.Popen, tuple[str, int]]:
    cmd = [python, "-m", "kverr", "serve", "--port", "0"]
    if workers > 1:
        cmd += ["--workers", str(workers)]
    if catalog:
        cmd += ["--catalog", str(Path(catalog).resolve())]
    # Not from this checkout's folder: `python -m kverr` would import ./kverr first, whichever
    # interpreter (and so whichever checkout) was asked for.
    proc = subprocess.Popen(
        cmd,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        cwd=tempfile.gettempdir(),
    )
    line = proc.stderr.readline()
    m = re.search(r"http://([\d.]+):(\d+)", line)
    if not m:
        proc.kill()
        sys.exit(f"bench: server did not start: {line.strip() or proc.stderr.read()[-500:]}")
    addr = (m.group(1), int(m.group(2)))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if one(addr, GET_HEALTHZ)[0] == 200:
                return proc, addr
        except OSError:
            time.sleep(0.05)
    proc.kill()
    sys.exit("bench: server did not answer /healthz within 30 s")


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


# ---------------------------------------------------------------- the client


def _response_end(buf: bytes | bytearray) -> int:
    """Index just past the first complete response in buf, or -1 (responses carry Content-Length)."""
    head_end = buf.find(b"\r\n\r\n")
    if head_end < 0:
        return -1
    i = buf.find(b"content-length:", 0, head_end)
    if i < 0:
        i = buf.find(b"Content-Length:", 0, head_end)
    length = int(buf[i + 15 : buf.find(b"\r\n", i)]) if i >= 0 else 0
    end = head_end + 4 + length
    return end if len(buf) >= end else -1


def one(addr, raw: bytes) -> tuple[int, bytes]:
    """One request on a new connection: (status, body)."""
    with socket.create_connection(addr, timeout=30) as sock:
        sock.sendall(raw)
        buf = b""
        while (end := _response_end(buf)) < 0:
            chunk = sock.recv(65536)
            if not chunk:
                raise OSError("connection closed before a whole response")
            buf += chunk
    return int(buf[9:12]), buf[buf.find(b"\r\n\r\n") + 4 : end]


def _connect(addr) -> socket.socket:
    sock = socket.create_connection(addr, timeout=30)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setblocking(False)
    return sock


def run(
    addr,
    requests: list[bytes],
    total: int,
    clients: int,
    idle: int = 0,
    beside: list[bytes] | None = None,
) -> dict:
    """`total` requests over `clients` keep-alive connections (one request in flight on each),
    while `idle` more connections stay open sending nothing (reopened if the server closes one),
    and, with `beside`, one more client posts those requests back to back (not measured)."""
    sel = selectors.DefaultSelector()
    idle_socks = [_connect(addr) for _ in range(idle)]
    for sock in idle_socks:
        sel.register(sock, selectors.EVENT_READ, None)
    time.sleep(0.2 if idle else 0)  # let the server accept them before the clock starts
    busy = [0, bytearray()]  # requests sent, response buffer
    if beside:
        other = _connect(addr)
        sel.register(other, selectors.EVENT_READ, "beside")
        other.setblocking(True)
        other.sendall(beside[0])
        other.setblocking(False)
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    sent = reopened = 0
    state = {}

    def send_next(sock: socket.socket) -> bool:
        nonlocal sent
        if sent >= total:
            return False
        raw = requests[sent % len(requests)]
        sent += 1
        state[sock] = [bytearray(), time.perf_counter()]
        sock.setblocking(True)  # requests are small: one blocking send, then back to select
        sock.sendall(raw)
        sock.setblocking(False)
        return True

    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    active = 0
    for _ in range(clients):
        sock = _connect(addr)
        sel.register(sock, selectors.EVENT_READ, "client")
        active += send_next(sock)
    while active:
        events = sel.select(timeout=60)
        if not events:
            sys.exit(f"bench: {active} requests got no answer within 60 s")
        for key, _ in events:
            sock = key.fileobj
            try:
                chunk = sock.recv(262144)
            except (BlockingIOError, InterruptedError):
                continue
            except ConnectionError:
                chunk = b""
            if key.data is None:  # an idle connection: the server closed it, open another
                sel.unregister(sock)
                sock.close()
                reopened += 1
                sel.register(_connect(addr), selectors.EVENT_READ, None)
                continue
            if key.data == "beside":
                busy[1] += chunk
                if (end := _response_end(busy[1])) >= 0:
                    del busy[1][:end]
                    busy[0] += 1
                    sock.setblocking(True)
                    sock.sendall(beside[busy[0] % len(beside)])
                    sock.setblocking(False)
                continue
            buf, t0 = state[sock]
            buf += chunk
            if chunk == b"":
                statuses[0] = statuses.get(0, 0) + 1  # dropped mid-request
                sel.unregister(sock)
                sock.close()
                active -= 1
                continue
            if _response_end(buf) < 0:
                continue
            latencies.append(time.perf_counter() - t0)
            status = int(buf[9:12])
            statuses[status] = statuses.get(status, 0) + 1
            if b"connection: close" in buf[: buf.find(b"\r\n\r\n")].lower() or not send_next(sock):
                sel.unregister(sock)
                sock.close()
                active -= 1
    wall = time.perf_counter() - start
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    for key in list(sel.get_map().values()):
        key.fileobj.close()
    sel.close()
    cpu = (cpu1.ru_utime + cpu1.ru_stime) - (cpu0.ru_utime + cpu0.ru_stime)
    return {
        "latencies": latencies,
        "wall": wall,
        "statuses": statuses,
        "cpu": cpu,
        "reopened": reopened,
    }


def percentile(latencies: list[float], q: float) -> float:
    """The `q` quantile of latencies in seconds, in ms."""
    ordered = sorted(latencies)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] * 1000


def summarise(runs: list[dict]) -> dict:
    """Rounds of one row: the median round's throughput, p50/p99 over every request."""
    latencies = [x for r in runs for x in r["latencies"]]
    statuses: dict[int, int] = {}
    for r in runs:
        for status, n in r["statuses"].items():
            statuses[status] = statuses.get(status, 0) + n
    return {
        "rps": statistics.median(len(r["latencies"]) / r["wall"] for r in runs),
        "p50": statistics.median(latencies) * 1000 if latencies else float("nan"),
        "p99": percentile(latencies, 0.99) if latencies else float("nan"),
        "errors": sum(n for s, n in statuses.items() if s != 200),
        "statuses": statuses,
        "client_us": sum(r["cpu"] for r in runs) / max(len(latencies), 1) * 1e6,
        "reopened": sum(r["reopened"] for r in runs),
    }


# ---------------------------------------------------------------- main


def server_options(doc: str) -> argparse.ArgumentParser:
    """The options of a benchmark that starts a server: the catalog and the interpreter."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument(
        "--catalog", type=Path, default=os.environ.get("KVERR_CATALOG"), help="DuckDB catalog file"
    )
    ap.add_argument(
        "--server-python",
        default=sys.executable,
        help="interpreter that runs the server, e.g. another checkout's venv: before/after runs",
    )
    return ap


def main() -> None:
    ap = server_options(__doc__)
    ap.add_argument("--requests", type=int, default=1000, help="requests per row and round")
    ap.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="rows run A B C A B C...: load from other processes hits every row alike",
    )
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="worker counts to run")
    args = ap.parse_args()
    bodies = pastes(args.catalog)
    explains = [post("/explain", b) for b in bodies]
    one_line = [post("/explain", b) for b in bodies if "\n" not in b]
    long_logs = [post("/explain", text) for text in logs()]
    rows = []
    found = 0
    for workers in args.workers:
        proc, addr = start_server(args.catalog, workers, args.server_python)
        try:
            # Warm every worker's lazily built index, and check the pastes are realistic: they
            # should find their error (a benchmark of misses would measure the wrong path).
            found = sum(b'"matches":[]' not in one(addr, raw)[1] for raw in explains)
            run(addr, explains, 200 * workers, 8)
            # (label, path, requests, clients, idle connections, requests of one client beside)
            scenarios = [
                ("", "/healthz", [GET_HEALTHZ], 1, 0, None),
                ("", "/healthz", [GET_HEALTHZ], 16, 0, None),
                ("", "/explain", explains, 1, 0, None),
                ("no error", "/explain", [post("/explain", NO_ERROR)], 1, 0, None),
                ("one line", "/explain", one_line, 1, 0, None),
                ("", "/explain", explains, 16, 0, None),
                (f"{IDLE} idle", "/explain", explains, 16, IDLE, None),
                ("beside logs", "/healthz", [GET_HEALTHZ], 1, 0, long_logs),
            ]
            runs: dict[int, list[dict]] = {i: [] for i in range(len(scenarios))}
            for _ in range(args.rounds):
                for i, (_, _, reqs, clients, idle, beside) in enumerate(scenarios):
                    n = args.requests // 4 if beside else args.requests
                    runs[i].append(run(addr, reqs, n, clients, idle, beside))
            for i, (label, path, _, clients, _, _) in enumerate(scenarios):
                rows.append((workers, path, clients, label, summarise(runs[i])))
        finally:
            stop(proc)
    print(
        f"kverr serve on loopback ({os.cpu_count()} CPUs), {args.rounds} rounds of"
        f" {args.requests} requests per row (req/s: median round; p50/p99: all requests),"
        f" {len(bodies)} distinct pastes ({found} of them matched a record)"
    )
    print(
        f"{'workers':>7} {'endpoint':<10} {'clients':>7} {'with':<12} {'req/s':>8} {'p50 ms':>8}"
        f" {'p99 ms':>8} {'errors':>6} {'client CPU':>11}"
    )
    for workers, path, clients, label, r in rows:
        print(
            f"{workers:>7} {path:<10} {clients:>7} {label:<12} {r['rps']:>8.0f} {r['p50']:>8.2f}"
            f" {r['p99']:>8.2f} {r['errors']:>6} {r['client_us']:>8.0f} µs"
            + (f"  statuses {r['statuses']}" if r["errors"] else "")
            + (f"  ({r['reopened']} idle reopened)" if r["reopened"] else "")
        )
    rps = {(w, p, c, lb): r["rps"] for w, p, c, lb, r in rows}
    p99 = {(w, p, c, lb): r["p99"] for w, p, c, lb, r in rows}
    for w in args.workers:
        for c in (1, 16):
            ratio = rps[(w, "/explain", c, "")] / rps[(w, "/healthz", c, "")]
            print(f"{w} worker(s): /explain ÷ /healthz throughput at {c:>2} client(s): {ratio:.2f}")
        floor = rps[(w, "/explain", 1, "no error")] / rps[(w, "/healthz", 1, "")]
        print(
            f"{w} worker(s): /explain of a line with no error ÷ /healthz at  1 client(s):"
            f" {floor:.2f} (the HTTP floor of a POST: a paste with an error in it costs more)"
        )
        line = rps[(w, "/explain", 1, "one line")] / rps[(w, "/healthz", 1, "")]
        print(
            f"{w} worker(s): /explain of the one-line pastes alone ÷ /healthz at  1 client(s):"
            f" {line:.2f} (the mix's ratio if a traceback or log excerpt cost what one line does)"
        )
        base, idle = p99[(w, "/explain", 16, "")], p99[(w, "/explain", 16, f"{IDLE} idle")]
        print(
            f"{w} worker(s): /explain p99 with {IDLE} idle connections open ÷ without: {idle / base:.2f}"
        )
        base, busy = p99[(w, "/healthz", 1, "")], p99[(w, "/healthz", 1, "beside logs")]
        print(
            f"{w} worker(s): /healthz p99 beside a client posting {LOG_LINES}-line logs:"
            f" {busy:.1f} ms (alone: {base:.1f} ms)"
        )
    if 1 in args.workers:
        for w in args.workers:
            if w != 1:
                ratio = rps[(w, "/explain", 16, "")] / rps[(1, "/explain", 16, "")]
                print(f"/explain throughput at 16 clients, {w} workers ÷ 1: {ratio:.2f}")


if __name__ == "__main__":
    main()
