"""`kverr mcp`'s `explain` round trip, on stdio and on streamable HTTP, beside the same answer
in-process and beside the JSON API (`kverr serve`, POST /explain), all in one run.

Rows, per paste (realistic pastes from the catalog, bench_api.pastes):
    in-process explain   what the MCP tool computes, called directly: Catalog.explain, the
                         advice from the values (kverr.advice), the --json fields, the Markdown
    MCP stdio            the SDK's client calling `explain` on a `kverr mcp` child process
    MCP HTTP             the same on `kverr mcp --http 127.0.0.1:0` (one session, kept)
    API POST /explain    `kverr serve` on 127.0.0.1:0, one keep-alive httpx client (the API
                         gives no advice: its answer is the matches alone)

Each round calls every row once per paste, in turn, so load from other jobs hits them alike;
figures are medians (and p90) over every call, and ratios to "in-process explain". The clients'
session start-up (a process, the SDK's imports, the catalog) is timed once and printed apart.

    python bench/bench_mcp.py [--catalog FILE] [--rounds 5] [--pastes 40]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import httpx
from bench_api import pastes, start_server, stop
from kverr.catalog import open_catalog
from kverr.present import markdown
from mcp import Client, StdioServerParameters

from kverr.advice import personalize
from kverr.answers import explain_json


def mcp_http(catalog: Path | None) -> tuple[subprocess.Popen, str]:
    cmd = [sys.executable, "-m", "kverr", "mcp", "--http", "127.0.0.1:0"]
    if catalog:
        cmd += ["--catalog", str(Path(catalog).resolve())]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, cwd=tempfile.gettempdir())
    line = proc.stderr.readline()
    if " at http://" not in line:
        proc.kill()
        sys.exit(f"bench: kverr mcp --http did not start: {line or proc.stderr.read()[-500:]}")
    return proc, line.split(" at ", 1)[1].strip()


def stdio(catalog: Path | None) -> StdioServerParameters:
    args = ["-m", "kverr", "mcp"] + (["--catalog", str(Path(catalog).resolve())] if catalog else [])
    return StdioServerParameters(
        command=sys.executable, args=args, env=dict(os.environ), cwd=tempfile.gettempdir()
    )


async def bench(catalog: Path | None, texts: list[str], rounds: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {}
    cat = open_catalog(catalog)
    orders = cat.release_orders()
    api_proc, addr = start_server(catalog, 1)
    http_proc, url = mcp_http(catalog)
    try:
        t0 = time.perf_counter()
        async with Client(stdio(catalog), read_timeout_seconds=60) as over_stdio:
            times["session start: stdio (spawn + initialize)"] = [time.perf_counter() - t0]
            t0 = time.perf_counter()
            async with Client(url, read_timeout_seconds=60) as over_http:
                times["session start: HTTP (initialize)"] = [time.perf_counter() - t0]
                with httpx.Client(base_url=f"http://{addr[0]}:{addr[1]}", timeout=60) as api:

                    def tool(text: str) -> None:
                        matches = personalize(text, cat.explain(text))
                        json.loads(explain_json(text, matches))
                        markdown.answers(matches, orders)

                    def post(text: str) -> None:
                        r = api.post("/explain", content=text.encode())
                        assert r.status_code == 200, r.text[:200]

                    for text in texts[:3]:  # warm every path once, outside the timing
                        tool(text), post(text)
                        await over_stdio.call_tool("explain", {"text": text})
                        await over_http.call_tool("explain", {"text": text})
                    for _ in range(rounds):
                        for text in texts:
                            for name, fn in (
                                ("in-process explain", tool),
                                ("API POST /explain", post),
                            ):
                                t = time.perf_counter()
                                fn(text)
                                times.setdefault(name, []).append(time.perf_counter() - t)
                            for name, client in (
                                ("MCP stdio", over_stdio),
                                ("MCP HTTP", over_http),
                            ):
                                t = time.perf_counter()
                                got = await client.call_tool("explain", {"text": text})
                                times.setdefault(name, []).append(time.perf_counter() - t)
                                assert not got.is_error, got.content[0].text
    finally:
        stop(api_proc)
        stop(http_proc)
        cat.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--catalog", type=Path, default=None)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--pastes", type=int, default=40)
    args = parser.parse_args()
    texts = pastes(args.catalog, n=args.pastes)
    times = anyio.run(bench, args.catalog, texts, args.rounds)
    base = statistics.median(times["in-process explain"])
    calls = args.rounds * len(texts)
    print(f"kverr mcp explain round trip: {len(texts)} pastes x {args.rounds} rounds"
          f" ({calls} calls per row), {os.cpu_count()} CPUs")  # fmt: skip
    print(f"{'row':44} {'median ms':>10} {'p90 ms':>9} {'x in-process':>13}")
    for name, ts in times.items():
        med = statistics.median(ts)
        p90 = sorted(ts)[int(0.9 * (len(ts) - 1))]
        ratio = f"{med / base:.1f}x" if len(ts) > 1 else ""
        print(f"{name:44} {med * 1000:10.2f} {p90 * 1000:9.2f} {ratio:>13}")


if __name__ == "__main__":
    main()
