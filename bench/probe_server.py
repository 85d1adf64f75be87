"""Probes of damaged catalogs and of the server, one figure each (before/after evidence).

Each probe runs this checkout's `python -m kverr` in a temp dir (XDG_CACHE_HOME redirected, so
the user's cache is never touched) and prints what a user would see: exit code, the first
stderr line, whether a traceback was printed, HTTP status and content type. Loopback only and
bounded: the longest probe holds 130 idle connections for at most --idle-wait seconds.

Usage:  python bench/probe_server.py [--idle-wait 70] [--only NAME] [--python OTHER/.venv/bin/python]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_api import stop

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the synthetic datasets of tests/synth.py
DATASET = ROOT / "data" / "sglang"
LINE = "ValueError: --ssl-keyfile requires --ssl-certfile to be specified as well."
PYTHON = [sys.executable]  # --python: another checkout's interpreter, for its "before" figures


def kverr(*args: str, env: dict | None = None, timeout: float = 120) -> str:
    """Run `python -m kverr ARGS`; summarise exit code, first stderr line, traceback or not."""
    done = subprocess.run(
        [*PYTHON, "-m", "kverr", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        cwd=tempfile.gettempdir(),  # not this checkout: `-m kverr` would import ./kverr first
    )
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    tb = "traceback" if "Traceback" in done.stderr else "no traceback"
    first = lines[-1] if tb == "traceback" else (lines[0] if lines else "")
    return f"exit {done.returncode}, {len(lines)} stderr line(s), {tb}: {first[:150]}"


# ---------------------------------------------------------------- a server to probe


class Server:
    def __init__(self, *args: str):
        cmd = [*PYTHON, "-m", "kverr", "serve", "--port", "0", *args]
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(
            cmd, stderr=subprocess.PIPE, text=True, env=env, cwd=tempfile.gettempdir()
        )
        self.first = self.proc.stderr.readline()
        m = re.search(r"http://([\d.]+):(\d+)", self.first)
        self.addr = (m.group(1), int(m.group(2))) if m else None
        deadline = time.monotonic() + 20
        while self.addr and self.proc.poll() is None and time.monotonic() < deadline:
            try:  # the URL is printed before uvicorn listens: wait for the port to answer
                socket.create_connection(self.addr, timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        if self.proc.poll() is not None:
            self.addr = None

    def started(self) -> str:
        if self.addr:
            return "started"
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            return "did not listen within 20 s"
        rest = self.proc.stderr.read()
        tb = "traceback" if "Traceback" in self.first + rest else "no traceback"
        lines = [ln for ln in (self.first + rest).splitlines() if ln.strip()]
        return f"exit {self.proc.returncode}, {len(lines)} stderr line(s), {tb}: {lines[-1][:150] if lines else ''}"

    def close(self) -> None:
        if self.proc.poll() is None:
            stop(self.proc)


def request(addr, raw: bytes, timeout: float = 10) -> tuple[int | None, str, bytes, socket.socket]:
    """Send raw bytes on a new connection; (status, content type, body, open socket)."""
    sock = socket.create_connection(addr, timeout=timeout)
    sock.sendall(raw)
    reply = b""
    while b"\r\n\r\n" not in reply:
        chunk = sock.recv(65536)
        if not chunk:
            break
        reply += chunk
    head, _, body = reply.partition(b"\r\n\r\n")
    m = re.match(rb"HTTP/1\.1 (\d{3})", head)
    ctype = re.search(rb"(?im)^content-type: *([^\r;]+)", head)
    length = re.search(rb"(?im)^content-length: *(\d+)", head)
    if length:
        while len(body) < int(length.group(1)):
            chunk = sock.recv(65536)
            if not chunk:
                break
            body += chunk
    return (
        int(m.group(1)) if m else None,
        ctype.group(1).decode() if ctype else "-",
        body,
        sock,
    )


def get(addr, path: str) -> str:
    status, ctype, body, sock = request(addr, f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    sock.close()
    return f"{status} {ctype} {body[:110]!r}"


def explain_unknown(addr) -> str:
    """POST /explain of words no check holds (the fuzzy lookup reads the term table)."""
    body = b"ValueError: some words nobody ever wrote in a check"
    raw = b"POST /explain HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    status, ctype, text, sock = request(addr, raw)
    sock.close()
    return f"{status} {ctype} {text[:110]!r}"


def closed_within(sock: socket.socket, seconds: float) -> bool:
    sock.settimeout(seconds)
    try:
        return sock.recv(1) == b""
    except TimeoutError:
        return False
    except OSError:
        return True


# ---------------------------------------------------------------- the probes


def probe_damaged_catalogs(work: Path) -> list[tuple[str, str]]:
    import synth

    good = work / "good.duckdb"
    out = []
    for how in ("truncate", "blocks"):
        bad = synth.damage(shutil.copy(good, work / f"{how}.duckdb"), how)
        out.append((f"explain --catalog <{how}>", kverr("explain", LINE, "--catalog", str(bad))))
    return out


def probe_default_catalog(work: Path) -> list[tuple[str, str]]:
    import synth

    env = {"XDG_CACHE_HOME": str(work / "cache"), "KVERR_CATALOG": ""}
    out = [("default catalog, first run", kverr("explain", LINE, env=env))]
    cached = next((work / "cache" / "kverr").glob("packaged-*.duckdb"))
    synth.damage(cached, "truncate")
    out.append(("default catalog truncated, run 2", kverr("explain", LINE, env=env)))
    out.append(("default catalog truncated, run 3", kverr("explain", LINE, env=env)))
    return out


def probe_cache_paths(work: Path) -> list[tuple[str, str]]:
    out = []
    (work / "file").write_text("not a directory\n")
    env = {"XDG_CACHE_HOME": str(work / "file"), "KVERR_CATALOG": ""}
    out.append(("cache path under a file", kverr("explain", LINE, env=env)))
    ro = work / "ro"
    (ro / "kverr").mkdir(parents=True)
    os.chmod(ro / "kverr", 0o555)
    immutable = False
    if os.geteuid() == 0:  # root writes through 0555: make the directory immutable instead
        immutable = subprocess.run(["chattr", "+i", str(ro / "kverr")]).returncode == 0
    try:
        env = {"XDG_CACHE_HOME": str(ro), "KVERR_CATALOG": ""}
        label = "read-only cache dir" + (" (chattr +i)" if immutable else " (0555)")
        out.append((label, kverr("explain", LINE, env=env)))
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(ro / "kverr")])
        os.chmod(ro / "kverr", 0o755)
    return out


def probe_load(work: Path) -> list[tuple[str, str]]:
    ds = shutil.copytree(DATASET, work / "ds99")
    manifest = json.loads((ds / "manifest.json").read_text())
    manifest["schemaVersion"] = 99
    (ds / "manifest.json").write_text(json.dumps(manifest))
    (work / "adir").mkdir()
    jsonl = work / "errors.jsonl"
    jsonl.write_text('{"message": "my notes"}\n')
    return [
        ("load schemaVersion 99", kverr("load", str(ds), "--catalog", str(work / "c99.duckdb"))),
        (
            "load --catalog <a directory>",
            kverr("load", str(DATASET), "--catalog", str(work / "adir")),
        ),
        ("explain --catalog errors.jsonl", kverr("explain", LINE, "--catalog", str(jsonl))),
    ]


def probe_serve_damaged(work: Path) -> list[tuple[str, str]]:
    import synth

    out = []
    trunc = synth.damage(shutil.copy(work / "good.duckdb", work / "s-trunc.duckdb"), "truncate")
    s = Server("--catalog", str(trunc))
    try:
        out.append(("serve --catalog <truncated>", s.started()))
    finally:
        s.close()
    # The term table is read by the first fuzzy lookup, not at start-up.
    blocks = synth.damage(
        shutil.copy(work / "good.duckdb", work / "s-blocks.duckdb"), "blocks", "terms"
    )
    s = Server("--catalog", str(blocks))
    try:
        out.append(("serve --catalog <corrupt terms blocks>", s.started()))
        if s.addr:
            out.append(("  POST /explain", explain_unknown(s.addr)))
            out.append(("  GET /healthz after it", get(s.addr, "/healthz")))
    finally:
        s.close()
    # Damage that appears under a running server: the term table is read by fuzzy lookups only.
    live = shutil.copy(work / "good.duckdb", work / "s-live.duckdb")
    s = Server("--catalog", str(live))
    try:
        assert s.addr, s.started()
        out.append(("serve, then damage its file's terms blocks", get(s.addr, "/healthz")[:40]))
        synth.damage(live, "blocks", "terms")
        out.append(("  POST /explain", explain_unknown(s.addr)))
        out.append(("  GET /healthz after it", get(s.addr, "/healthz")[:130]))
    finally:
        s.close()
    return out


def probe_server(work: Path, idle_wait: float) -> list[tuple[str, str]]:
    out = []
    s = Server("--catalog", str(work / "good.duckdb"))
    try:
        assert s.addr, s.started()
        from kverr.catalog import open_catalog

        with open_catalog(work / "good.duckdb") as cat:
            rid = next(cat.records())["id"]
        out.append((f"GET /errors/{rid.upper()}", get(s.addr, f"/errors/{rid.upper()}")[:60]))
        status, ctype, body, sock = request(
            s.addr, b"GET / HTTP/1.1\r\nHost: x\r\nbad header\r\n\r\n"
        )
        sock.close()
        out.append(("malformed header (uvicorn's 400)", f"{status} {ctype} {body[:80]!r}"))
        raw = (
            b"POST /explain HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
        )
        status, ctype, body, sock = request(s.addr, raw)
        closed = closed_within(sock, 2)
        sock.close()
        out.append(
            (
                "Content-Length + Transfer-Encoding",
                f"{status} {ctype}, connection {'closed' if closed else 'kept open 2 s'}",
            )
        )
        # 130 idle connections: then a new client every second until one gets a 200.
        idle = [socket.create_connection(s.addr, timeout=5) for _ in range(130)]
        start, seen = time.monotonic(), []
        try:
            while True:
                status, ctype, _, sock = request(
                    s.addr, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
                )
                sock.close()
                waited = time.monotonic() - start
                if not seen or seen[-1][0] != (status, ctype):
                    seen.append(((status, ctype), waited))
                if status == 200 or waited > idle_wait:
                    break
                time.sleep(1)
        finally:
            for sock in idle:
                sock.close()
        story = ", then ".join(f"{st} {ct} at {t:.1f} s" for (st, ct), t in seen)
        verdict = "recovered" if seen[-1][0][0] == 200 else f"still failing after {idle_wait:g} s"
        out.append(("130 idle connections, new client each 1 s", f"{story} ({verdict})"))
    finally:
        s.close()
    help_text = subprocess.run(
        [*PYTHON, "-m", "kverr", "serve", "--help"],
        capture_output=True,
        text=True,
        cwd=tempfile.gettempdir(),
    ).stdout
    out.append(("serve --workers in --help", "yes" if "--workers" in help_text else "no"))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--idle-wait", type=float, default=70, help="cap on the idle-connection probe, s"
    )
    ap.add_argument("--only", help="run only the probes whose function name contains this")
    ap.add_argument("--python", help="interpreter of the kverr to probe (default: this one)")
    args = ap.parse_args()
    if args.python:
        PYTHON[:] = [args.python]
    probes = [
        probe_damaged_catalogs,
        probe_default_catalog,
        probe_cache_paths,
        probe_load,
        probe_serve_damaged,
        lambda work: probe_server(work, args.idle_wait),
    ]
    names = [
        "damaged_catalogs",
        "default_catalog",
        "cache_paths",
        "load",
        "serve_damaged",
        "server",
    ]
    with tempfile.TemporaryDirectory(prefix="kverr-probe-") as tmp:
        work = Path(tmp)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "kverr",
                "load",
                str(DATASET),
                "--catalog",
                str(work / "good.duckdb"),
            ],
            check=True,
            capture_output=True,
        )
        for name, probe in zip(names, probes, strict=True):
            if args.only and args.only not in name:
                continue
            for label, result in probe(work):
                print(f"{label:<44} {result}", flush=True)


if __name__ == "__main__":
    main()
