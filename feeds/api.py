"""`kverr serve`: a read-only JSON API over a Catalog, for support bots and docs sites.

    POST /explain            body: the pasted text (or JSON {"text", "version", "limit", "project"})
    GET  /errors/{id}        id (16 hex) or slug
    GET  /search?q=&version=&limit=&project=
    GET  /flags/{flag}       --flag-name or flag-name; ?project= picks one project's flag
    GET  /healthz
    GET  /openapi.json

Hostile input is expected: every parameter is checked against a tight shape before it reaches the
catalog (which only runs parameterised SQL), bodies are capped while they stream in, and every
failure is a JSON `{"error", "status"}` with a 4xx code; a damaged catalog answers 503 (and
/healthz says so), never 500. Running it (uvicorn, deadlines, workers) is feeds/server.py.

Where a request runs: the tension between "no thread-pool hop" and "one request never stalls
the others". A paste of a line or a traceback (the bench's realistic ones are 150-714 chars)
runs on the event loop: no hop, and no lock, since each thread has its own DuckDB cursor
(catalog/connection.py). A longer paste runs in a small thread pool, so the loop keeps
answering while it is matched. Measured on the 2-core development machine with
bench/bench_api.py (its "beside logs" row, and the same with INLINE_CHARS changed):
- through the pool, a typical paste's p50 was 0.57 ms against 0.50 ms on the loop (a hop costs
  ~35 us bare, more under load);
- everything on the loop, /healthz's p99 beside one client posting 30-line launch logs was
  110-145 ms (each log costs the matcher tens of ms today); with INLINE_CHARS = 1024, 2-4 ms.
The pool only lets the loop take turns (the GIL is released every 5 ms), so the matcher's own
bound on the work per request still matters; `--workers N` keeps the other cores answering.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import re
import time
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from kverr.errors import CatalogError, KverrError, NotFound, TooExpensive

MAX_BODY = 1 << 20  # whole request body, bytes
MAX_EXPLAIN = 256 * 1024  # text handed to the matcher, characters: bounds the work per request
MAX_QUERY = 500  # /search q, characters
MAX_LIMIT = 50
BODY_TIMEOUT = 10.0  # seconds to receive a whole body
INLINE_CHARS = 1024  # longer pastes are explained in the thread pool (module doc)
EXPLAIN_THREADS = 2  # the pool's size: long pastes at once per worker process
HEALTH_EVERY = 1.0  # seconds between /healthz's catalog queries (cheap, yet not per request)
DAMAGED = "The catalog behind this server is damaged; the operator must rebuild it (the server log names the file)."

_ID = re.compile(r"[0-9a-fA-F]{16}")
_DIGITS = re.compile(r"[0-9]{1,18}")
_SLUG = re.compile(r"[a-z0-9][a-z0-9-]{0,159}")
_FLAG = re.compile(r"-{0,2}([A-Za-z0-9][A-Za-z0-9_-]{0,99})")
_VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,99}")
_PROJECT = re.compile(r"[a-z][a-z0-9_-]{0,39}")
_HEADERS = {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"}
log = logging.getLogger("uvicorn.error")  # uvicorn configures its handler and level


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
    """Handlers bound to one catalog (module doc: which run on the loop, which in the pool)."""

    def __init__(self, cat, body_timeout: float = BODY_TIMEOUT) -> None:
        self.cat = cat
        self.body_timeout = body_timeout
        self.count = cat.ping()
        self.index = cat.index  # the matcher's index: built now, not by the first request
        self.pool = ThreadPoolExecutor(EXPLAIN_THREADS, thread_name_prefix="kverr-explain")
        self.checked = time.monotonic()
        self.damaged: str | None = None  # the CatalogError that showed the catalog is damaged

    async def explain(self, request: Request) -> JSONResponse:
        raw = await read_body(request, timeout=self.body_timeout)
        text, opts = explain_input(raw, request.headers.get("content-type", "text/plain"))
        version = check_version(opts.get("version", request.query_params.get("version")))
        limit = check_limit(opts.get("limit", request.query_params.get("limit")), 5)
        project = check_project(opts.get("project", request.query_params.get("project")))
        kw = {"version": version, "limit": limit, "project": project}
        if len(text) <= INLINE_CHARS:
            matches = self.cat.explain(text, **kw)
        else:
            run = functools.partial(self.cat.explain, text, **kw)
            matches = await asyncio.get_running_loop().run_in_executor(self.pool, run)
        return _json({"query": text, "matches": [m.to_dict() for m in matches]})

    async def error(self, request: Request) -> JSONResponse:
        key = request.path_params["record_id"]
        if _ID.fullmatch(key) or _SLUG.fullmatch(key):
            rid = self.cat.find_id(key)
        else:
            raise ApiError(
                400, "An error id is 16 hex characters (or the page slug); see /search to find one."
            )
        rec = self.cat.get(rid) if rid else None
        if rec is None:
            raise ApiError(
                404, f"No error with id {key!r} in this catalog; use /search?q= to find one."
            )
        revs = self.cat.revisions_of(rec["id"])
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
        matches = self.cat.search(q, version=version, limit=limit, project=project)
        return _json({"query": q, "matches": [m.to_dict() for m in matches]})

    async def flag(self, request: Request) -> JSONResponse:
        m = _FLAG.fullmatch(request.path_params["flag"])
        if not m:
            raise ApiError(
                400, "A flag name looks like --page-size (letters, digits, '-' and '_')."
            )
        name = "--" + m.group(1)
        project = check_project(request.query_params.get("project"))
        decl = self.cat.flag(name, project=project)
        if decl is None:
            raise ApiError(
                404, f"No flag {name} in this catalog; GET /search?q={m.group(1)} to look around."
            )
        return _json(decl)

    async def healthz(self, request: Request) -> JSONResponse:
        """ok while the catalog answers a query (asked at most every HEALTH_EVERY seconds, so
        a load balancer's probes cost nothing), 503 once any request found it damaged."""
        if self.damaged is None and time.monotonic() - self.checked > HEALTH_EVERY:
            try:
                self.count = self.cat.ping()
                self.checked = time.monotonic()
            except CatalogError as exc:
                self.note_damage(exc)
        if self.damaged is not None:
            return _json({"error": DAMAGED, "status": 503}, 503)
        return _json({"status": "ok", "records": self.count})

    def note_damage(self, exc: CatalogError) -> None:
        if self.damaged is None:
            log.error("kverr: %s", exc)  # the operator's copy, with the file and the fix
        self.damaged = str(exc)

    async def catalog_error(self, request: Request, exc: Exception) -> JSONResponse:
        # A damaged file, found by this request's query: 503 for it, and /healthz from now on.
        self.note_damage(exc)
        return _json({"error": DAMAGED, "status": 503}, 503)

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
    # NotFound: an unknown version/id; CatalogError: our file, not the client's fault;
    # TooExpensive: well-formed text past the CPU budget (422: resending it will not help); the
    # rest (QueryError, ...) is input the catalog could not use.
    status = 404 if isinstance(exc, NotFound) else 503 if isinstance(exc, CatalogError) else 400
    status = 422 if isinstance(exc, TooExpensive) else status
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
    handlers = {
        HTTPException: _http_error,
        CatalogError: api.catalog_error,
        KverrError: _kverr_error,
        Exception: _crash,
    }
    app = Starlette(routes=routes, exception_handlers=handlers)
    # A trailing slash gets a JSON 404 rather than a 307 to elsewhere: one answer shape for bots.
    app.router.redirect_slashes = False
    return app


# ---------------------------------------------------------------- running it


def __getattr__(name: str):
    # Running the app moved to feeds/server.py; these names stay importable from here.
    if name in ("bind", "server_for", "serve"):
        from kverr.feeds import server

        return getattr(server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
