"""`kverr serve`: a read-only JSON API over a Catalog, for support bots and docs sites.

    POST /explain            body: the pasted text (or JSON {"text", "version", "limit", "project"})
    GET  /errors/{id}        id (16 hex) or slug
    GET  /search?q=&version=&limit=&project=
    GET  /flags/{flag}       --flag-name or flag-name; ?project= picks one project's flag
    GET  /healthz
    GET  /openapi.json

Hostile input is expected: every parameter is checked against a tight shape before it reaches the
catalog (which only runs parameterised SQL), bodies are capped while they stream in, and every
failure is a JSON `{"error", "status"}` with a 4xx code. The DuckDB connection is shared, so
catalog calls run one at a time in a worker thread; the event loop stays free for /healthz.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import sys
import threading
from importlib import resources
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from kverr.errors import CatalogError, KverrError, NotFound, QueryError

MAX_BODY = 1 << 20  # whole request body, bytes
MAX_EXPLAIN = 256 * 1024  # text handed to the matcher, characters: bounds the work per request
MAX_QUERY = 500  # /search q, characters
MAX_LIMIT = 50
BODY_TIMEOUT = 10.0  # seconds to receive a whole body

_ID = re.compile(r"[0-9a-f]{16}")
_DIGITS = re.compile(r"[0-9]{1,18}")
_SLUG = re.compile(r"[a-z0-9][a-z0-9-]{0,159}")
_FLAG = re.compile(r"-{0,2}([A-Za-z0-9][A-Za-z0-9_-]{0,99})")
_VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,99}")
_PROJECT = re.compile(r"[a-z][a-z0-9_-]{0,39}")
_HEADERS = {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"}


class ApiError(HTTPException):
    """A request we refuse: status + one sentence saying what was wrong and what to send instead."""


def _json(data: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(data, status_code=status, headers=_HEADERS)


# ---------------------------------------------------------------- input checks


async def read_body(
    request: Request, limit: int = MAX_BODY, timeout: float = BODY_TIMEOUT
) -> bytes:
    """The body, refused with 413 as soon as it passes `limit` (Content-Length or streamed),
    and with 408 when it trickles in slower than `timeout` (uvicorn has no body deadline)."""
    try:
        return await asyncio.wait_for(_read_capped(request, limit), timeout)
    except asyncio.TimeoutError:
        raise ApiError(
            408, f"The body did not arrive within {timeout:g} s; send it in one go."
        ) from None


async def _read_capped(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None:
        if not _DIGITS.fullmatch(declared):
            raise ApiError(400, "Content-Length is not a number; send a plain byte count.")
        if int(declared) > limit:
            raise ApiError(
                413, f"The body is larger than {limit} bytes; send only the lines around the error."
            )
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise ApiError(
                413, f"The body is larger than {limit} bytes; send only the lines around the error."
            )
        chunks.append(chunk)
    return b"".join(chunks)


def decode_text(raw: bytes) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ApiError(400, "The body is not UTF-8 text; paste the log as text.") from None
    if "\x00" in text:
        raise ApiError(
            400, "The body contains NUL bytes; paste the log as text, not a binary file."
        )
    return text


def explain_input(raw: bytes, content_type: str) -> tuple[str, dict[str, str]]:
    """(text, options) from a text/plain body or a JSON object {"text", "version", "limit"}."""
    text = decode_text(raw)
    opts: dict[str, str] = {}
    if content_type.split(";")[0].strip().lower() == "application/json":
        try:
            doc = json.loads(text)
        except (ValueError, RecursionError):  # RecursionError: "[[[[..." nested past the stack
            raise ApiError(
                400, 'The JSON body does not parse; send {"text": "<pasted log>"}.'
            ) from None
        if not isinstance(doc, dict) or not isinstance(doc.get("text"), str):
            raise ApiError(
                400, 'The JSON body needs a string "text" field: {"text": "<pasted log>"}.'
            )
        text = doc["text"]
        if "\x00" in text:
            raise ApiError(400, "The text contains NUL characters; paste the log as text.")
        try:  # JSON may spell lone surrogates ("\\ud800"), which no UTF-8 reply can echo back
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise ApiError(
                400, "The text contains unpaired \\ud800-style escapes; send valid Unicode."
            ) from None
        opts = {k: str(doc[k]) for k in ("version", "limit", "project") if doc.get(k) is not None}
    if not text.strip():
        raise ApiError(400, "The body is empty; POST the error message or log lines as the body.")
    if len(text) > MAX_EXPLAIN:
        raise ApiError(
            413,
            f"The text is longer than {MAX_EXPLAIN} characters; send only the lines around the error.",
        )
    return text, opts


def check_version(value: str | None) -> str | None:
    if value in (None, ""):
        return None
    if not _VERSION.fullmatch(value):
        raise ApiError(
            400, "version must be a release tag or a commit sha such as v0.5.0 or 0132848."
        )
    return value


def check_project(value: str | None) -> str | None:
    """A project name (sglang, vllm) or None: every project of the catalog."""
    if value in (None, ""):
        return None
    if not _PROJECT.fullmatch(value):
        raise ApiError(400, "project must be a project name such as sglang or vllm.")
    return value


def check_limit(value: str | None, default: int) -> int:
    if value in (None, ""):
        return default
    # str.isdigit() accepts "²", which int() rejects: match ASCII digits only.
    if not _DIGITS.fullmatch(value) or not 1 <= int(value) <= MAX_LIMIT:
        raise ApiError(400, f"limit must be a whole number from 1 to {MAX_LIMIT}.")
    return int(value)


# ---------------------------------------------------------------- the app


class Api:
    """Handlers bound to one catalog. The lock serialises use of its single DuckDB connection."""

    def __init__(self, cat, body_timeout: float = BODY_TIMEOUT) -> None:
        self.cat = cat
        self.body_timeout = body_timeout
        self.lock = threading.Lock()
        self.count = sum(1 for _ in cat.records())

    async def call(self, fn, *args, **kwargs):
        def locked():
            with self.lock:
                return fn(*args, **kwargs)

        return await run_in_threadpool(locked)

    async def explain(self, request: Request) -> JSONResponse:
        raw = await read_body(request, timeout=self.body_timeout)
        text, opts = explain_input(raw, request.headers.get("content-type", "text/plain"))
        version = check_version(opts.get("version", request.query_params.get("version")))
        limit = check_limit(opts.get("limit", request.query_params.get("limit")), 5)
        project = check_project(opts.get("project", request.query_params.get("project")))
        matches = await self.call(
            self.cat.explain, text, version=version, limit=limit, project=project
        )
        return _json({"query": text, "matches": [m.to_dict() for m in matches]})

    async def error(self, request: Request) -> JSONResponse:
        key = request.path_params["record_id"]
        if _ID.fullmatch(key) or _SLUG.fullmatch(key):
            rid = await self.call(self.cat.find_id, key)
        else:
            raise ApiError(
                400, "An error id is 16 hex characters (or the page slug); see /search to find one."
            )
        rec = await self.call(self.cat.get, rid) if rid else None
        if rec is None:
            raise ApiError(
                404, f"No error with id {key!r} in this catalog; use /search?q= to find one."
            )
        revs = await self.call(self.cat.revisions_of, rec["id"])
        releases = [t for r in revs for t in r.get("tags") or []]
        return _json({"record": rec, "releases": releases})

    async def search(self, request: Request) -> JSONResponse:
        q = request.query_params.get("q", "")
        if not q.strip():
            raise ApiError(400, "Pass the words to look for as ?q=, e.g. /search?q=page-size.")
        if len(q) > MAX_QUERY or "\x00" in q:
            raise ApiError(
                400,
                f"q must be text of at most {MAX_QUERY} characters; POST long pastes to /explain.",
            )
        version = check_version(request.query_params.get("version"))
        limit = check_limit(request.query_params.get("limit"), 20)
        project = check_project(request.query_params.get("project"))
        matches = await self.call(self.cat.search, q, version=version, limit=limit, project=project)
        return _json({"query": q, "matches": [m.to_dict() for m in matches]})

    async def flag(self, request: Request) -> JSONResponse:
        m = _FLAG.fullmatch(request.path_params["flag"])
        if not m:
            raise ApiError(
                400, "A flag name looks like --page-size (letters, digits, '-' and '_')."
            )
        name = "--" + m.group(1)
        project = check_project(request.query_params.get("project"))
        decl = await self.call(self.cat.flag, name, project=project)
        if decl is None:
            raise ApiError(
                404, f"No flag {name} in this catalog; GET /search?q={m.group(1)} to look around."
            )
        return _json(decl)

    async def healthz(self, request: Request) -> JSONResponse:
        return _json({"status": "ok", "records": self.count})

    async def openapi(self, request: Request) -> Response:
        return Response(OPENAPI, media_type="application/json", headers=_HEADERS)


OPENAPI = (
    resources.files("kverr.feeds").joinpath("static", "openapi.json").read_text(encoding="utf-8")
)


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    status = getattr(exc, "status_code", 400)
    detail = getattr(exc, "detail", "")
    if not isinstance(exc, ApiError):
        # Starlette's own 404/405 carry bare phrases; say what exists instead.
        detail = {
            404: f"No such endpoint {request.url.path!r}; see /openapi.json for the API.",
            405: f"{request.method} is not allowed on {request.url.path!r}; see /openapi.json.",
        }.get(status, detail)
    return _json({"error": detail, "status": status}, status)


async def _kverr_error(request: Request, exc: Exception) -> JSONResponse:
    # NotFound: an unknown version/id; CatalogError: our file, not the client's fault; the rest
    # (QueryError, ...) is input the catalog could not use.
    status = 404 if isinstance(exc, NotFound) else 503 if isinstance(exc, CatalogError) else 400
    return _json({"error": str(exc), "status": status}, status)


async def _crash(request: Request, exc: Exception) -> JSONResponse:
    # Never echo internals (paths, SQL, log text) to a client; the server log has the traceback.
    return _json({"error": "Internal error; the server log has details.", "status": 500}, 500)


def create_app(cat, *, body_timeout: float = BODY_TIMEOUT) -> Starlette:
    """The Starlette app over an open Catalog (read-only use; the caller owns and closes it)."""
    api = Api(cat, body_timeout)
    routes = [
        Route("/explain", api.explain, methods=["POST"]),
        Route("/errors/{record_id}", api.error, methods=["GET"]),
        Route("/search", api.search, methods=["GET"]),
        Route("/flags/{flag}", api.flag, methods=["GET"]),
        Route("/healthz", api.healthz, methods=["GET"]),
        Route("/openapi.json", api.openapi, methods=["GET"]),
    ]
    handlers = {HTTPException: _http_error, KverrError: _kverr_error, Exception: _crash}
    app = Starlette(routes=routes, exception_handlers=handlers)
    # A trailing slash gets a JSON 404 rather than a 307 to elsewhere: one answer shape for bots.
    app.router.redirect_slashes = False
    return app


# ---------------------------------------------------------------- running it


def bind(host: str, port: int) -> socket.socket:
    """Bind before starting uvicorn so port 0 works and the real port can be reported."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto must be IPPROTO_TCP (not 0): asyncio only sets TCP_NODELAY on such sockets, and
    # without it every keep-alive response stalls ~40 ms on Nagle + delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise QueryError(
            f"Cannot listen on {host}:{port} ({exc.strerror}); pick another --port."
        ) from None
    return sock


def server_for(app, sock: socket.socket, *, log_level: str = "warning"):
    import uvicorn

    config = uvicorn.Config(
        app,
        log_level=log_level,
        access_log=False,  # request lines can carry pasted secrets
        server_header=False,
        ws="none",
        lifespan="off",
        limit_concurrency=128,  # beyond this uvicorn answers 503 instead of queueing forever
        timeout_keep_alive=5,
        h11_max_incomplete_event_size=64 * 1024,  # caps request line + headers
    )
    return uvicorn.Server(config)


def serve(catalog_path: Path | None, host: str, port: int) -> None:
    """Run the API until interrupted; prints the URL (with the real port when port is 0)."""
    from kverr.catalog import open_catalog

    cat = open_catalog(catalog_path)
    try:
        sock = bind(host, port)
        shown = f"[{host}]" if ":" in host else host
        print(
            f"kverr: serving {cat.path} on http://{shown}:{sock.getsockname()[1]}",
            file=sys.stderr,
            flush=True,
        )
        server_for(create_app(cat), sock).run(sockets=[sock])
    finally:
        cat.close()
