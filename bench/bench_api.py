"""Load test of `kverr serve` on loopback: requests/s and p50/p99 latency.

Starts the real server (`python -m kverr serve --port 0`) in a subprocess, so client and server
do not share a GIL, then sends a bounded number of requests with a small asyncio + httpx client:

    /healthz  at 1 and 16 clients   baseline: the server stack with no catalog work
    /explain  at 1 and 16 clients   realistic pastes built from the catalog's own records
                                    (log prefixes, tracebacks, noisy surrounding lines)

Usage:  python bench/bench_api.py --catalog CATALOG.duckdb [--requests 2000]
(without --catalog: $KVERR_CATALOG, else the packaged SGLang catalog)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

NOISE = [
    "[2026-04-24 10:00:00] INFO:     Started server process [4242]",
    "[2026-04-24 10:00:00] server_args=ServerArgs(model_path='/models/llama', tp_size=2, ...)",
    "[2026-04-24 10:00:01] Load weight begin. avail mem=78.12 GB",
    "/usr/lib/python3/dist-packages/torch/cuda/__init__.py:61: FutureWarning: pynvml is deprecated",
]


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


def start_server(catalog: Path | None) -> tuple[subprocess.Popen, str]:
    cmd = [sys.executable, "-m", "kverr", "serve", "--port", "0"]
    if catalog:
        cmd += ["--catalog", str(catalog)]
    proc = subprocess.Popen(
        cmd, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"}
    )
    line = proc.stderr.readline()
    m = re.search(r"http://[\d.]+:\d+", line)
    if not m:
        proc.kill()
        sys.exit(f"bench: server did not start: {line.strip() or proc.stderr.read()[-500:]}")
    url = m.group(0)
    for _ in range(200):
        try:
            httpx.get(url + "/healthz", timeout=2)
            return proc, url
        except httpx.TransportError:
            time.sleep(0.05)
    proc.kill()
    sys.exit("bench: server did not answer /healthz within 10 s")


async def run(url: str, path: str, bodies: list[str] | None, total: int, clients: int) -> dict:
    """`total` requests from `clients` concurrent keep-alive connections; latency per request."""
    latencies: list[float] = []
    errors = 0
    counter = iter(range(total))
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async def worker(client: httpx.AsyncClient) -> None:
        nonlocal errors
        for i in counter:
            t0 = time.perf_counter()
            if bodies is None:
                r = await client.get(path)
            else:
                r = await client.post(path, content=bodies[i % len(bodies)].encode())
            latencies.append(time.perf_counter() - t0)
            errors += r.status_code != 200

    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=60) as client:
        await client.get("/healthz")  # warm the connection pool and the server
        start = time.perf_counter()
        await asyncio.gather(*(worker(client) for _ in range(clients)))
        wall = time.perf_counter() - start
    latencies.sort()
    return {
        "rps": total / wall,
        "p50": statistics.median(latencies) * 1000,
        "p99": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
        "errors": errors,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--catalog", type=Path, default=os.environ.get("KVERR_CATALOG"), help="DuckDB catalog file"
    )
    ap.add_argument("--requests", type=int, default=2000, help="requests per scenario (bounded)")
    args = ap.parse_args()
    bodies = pastes(args.catalog)
    proc, url = start_server(args.catalog)
    try:
        # Warm the matcher's lazily built index, and check the pastes are realistic: they should
        # find their error (a benchmark of misses would measure the wrong path).
        found = sum(
            bool(httpx.post(url + "/explain", content=b.encode(), timeout=60).json()["matches"])
            for b in bodies
        )
        rows = []
        for path, payload in (("/healthz", None), ("/explain", bodies)):
            for clients in (1, 16):
                res = asyncio.run(run(url, path, payload, args.requests, clients))
                rows.append((path, clients, res))
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    print(
        f"kverr serve on loopback, {args.requests} requests per row, {len(bodies)} distinct pastes"
        f" ({found} of them matched a record)"
    )
    print(f"{'endpoint':<10} {'clients':>7} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'errors':>6}")
    for path, clients, r in rows:
        print(
            f"{path:<10} {clients:>7} {r['rps']:>9.0f} {r['p50']:>8.2f} {r['p99']:>8.2f} {r['errors']:>6}"
        )
    base = {c: r["rps"] for p, c, r in rows if p == "/healthz"}
    for p, c, r in rows:
        if p == "/explain":
            print(
                f"ratio /explain ÷ /healthz throughput at {c} client(s): {r['rps'] / base[c]:.2f}"
            )


if __name__ == "__main__":
    main()
