"""`kverr serve`: a read-only JSON API over a Catalog, for support bots and docs sites.

    GET  /                   a short index of the endpoints
    POST /explain            body: the pasted text (or JSON {"text", "version", "limit", "offset",
                             "project"}); ?project= answers from one project (sglang, vllm)
                             ?format=markdown answers with Markdown a bot can post as it is
    POST /explain/batch      JSON {"texts": [...]} (at most MAX_BATCH), one result per text
    GET  /errors/{id}        id (16 hex) or slug; ETag, and immutable with ?dataset=<version>
    GET  /search?q=&version=&limit=&offset=&project=
    GET  /flags/{flag}       --flag-name or flag-name; ?project= picks one project's flag; with
                             `history`: its declaration (choices, type, default) per release
    GET  /versions           the releases (and revisions) the catalog holds; ?project=
    GET  /healthz
    GET  /openapi.json
    GET  /docs               the same document as a reference page (HTML, no script, no CDN)

Lists are pages: `limit` (default 5 for explain, 20 for search) matches from `offset`, with
`total`. Cross-origin calls (a docs-site widget) are refused unless `kverr serve
--cors-origin ORIGIN` allows that origin.

Hostile input is expected: every parameter is checked against a tight shape before it reaches the
catalog (which only runs parameterised SQL), bodies are capped while they stream in, and every
failure is a JSON `{"error", "status"}` with a 4xx code; a damaged catalog answers 503 (and
/healthz says so), never 500. Running it (uvicorn, deadlines, workers) is feeds/server.py.

Where a request runs: the tension between "no thread-pool hop" and "one request never stalls
the others". A paste of a line or a traceback (the bench's realistic ones are 150-714 chars)
runs on the event loop: no hop, and no lock, since each thread has its own DuckDB cursor
(catalog/connection.py). A longer paste runs in a lane (`Lane`): one thread per lane, so the
loop keeps answering while it is matched. Measured on the 2-core development machine with
bench/bench_api.py (its "beside logs" row, and the same with INLINE_CHARS changed):
- through a thread, a typical paste's p50 was 0.57 ms against 0.50 ms on the loop (a hop costs
  ~35 us bare, more under load);
- everything on the loop, /healthz's p99 beside one client posting 30-line launch logs was
  110-145 ms (each log costs the matcher tens of ms today); with INLINE_CHARS = 1024, 2-4 ms.
Two lanes, by size: a launch log of a few KB never waits behind 250 KB pastes (60 of those
once queued a minute of work in one unbounded pool, and the 2 KB log was dropped at the 30 s
deadline). Each lane admits a few pastes at once, a few per client, and answers a JSON 503
with Retry-After past that; a paste still unanswered at the lane's deadline, or whose client
has gone, is dropped before it starts or stopped at the matcher's next check
(catalog.matcher.stop_when). Threads only let the loop take turns (a serving process hands the
GIL over every millisecond: feeds/server.py `settle`), so each lane's CPU budget per paste still
matters; `--workers N` keeps the other cores answering. Nor is there a hop on the way in or out:
the body's deadline is set on the request's own task (asyncio.timeout, not wait_for's task),
and a record's JSON is written once per process.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import resources
from typing import Any

from kverr.catalog import matcher
from kverr.feeds import apidocs
from kverr.feeds.server import Slots, client_of
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from kverr import __version__
from kverr.errors import CatalogError, KverrError, NotFound, QueryError, TooExpensive

MAX_BODY = 1 << 20  # whole request body, bytes
MAX_EXPLAIN = 256 * 1024  # text handed to the matcher, characters: bounds the work per request
MAX_CHECK = 64 * 1024  # POST /check: a command line, or a paste around one, characters
MAX_QUERY = 500  # /search q, characters
MAX_LIMIT = 50
MAX_OFFSET = 10_000
MAX_BATCH = 20  # texts per POST /explain/batch; together at most MAX_EXPLAIN characters
BODY_TIMEOUT = 10.0  # seconds to receive a whole body
RECORD_JSON = 4096  # records' JSON texts an Api keeps (about 4 KB each)
INLINE_CHARS = 1024  # longer pastes are explained in a lane (module doc)
HEALTH_EVERY = 1.0  # seconds between /healthz's catalog queries (cheap, yet not per request)
DAMAGED = "The catalog behind this server is damaged; the operator must rebuild it (the server log names the file)."

_ID = re.compile(r"[0-9a-fA-F]{16}")
_DIGITS = re.compile(r"[0-9]{1,18}")
_SLUG = re.compile(r"[a-z0-9][a-z0-9-]{0,159}")
_FLAG = re.compile(r"-{0,2}([A-Za-z0-9][A-Za-z0-9_-]{0,99})")
_VERSION = re.compile(r"≈?[A-Za-z0-9][A-Za-z0-9._+-]{0,99}")  # ≈: a release named by date
_PROJECT = re.compile(r"[a-z][a-z0-9_-]{0,39}")
_HEADERS = {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"}
_ORIGIN = re.compile(r"\*|https?://[A-Za-z0-9.-]{1,253}(?::[0-9]{1,5})?")
# A record changes only with the dataset: a client may keep it a while and revalidate by ETag;
# at its versioned URL (?dataset=<version>) it never changes at all.
ERROR_CACHE = "public, max-age=300"
ERROR_CACHE_VERSIONED = "public, max-age=31536000, immutable"
log = logging.getLogger("uvicorn.error")  # uvicorn configures its handler and level


class ApiError(HTTPException):
    """A request we refuse: status + one sentence saying what was wrong and what to send instead."""


def _json(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(data, status_code=status, headers={**_HEADERS, **(headers or {})})


def _dumps(data: Any) -> str:
    """JSON text as JSONResponse writes it."""
    return json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def _json_text(text: str) -> Response:
    """A 200 answer whose JSON is written already (see Api._page)."""
    return Response(text.encode("utf-8"), media_type="application/json", headers=_HEADERS)


# ---------------------------------------------------------------- input checks


async def read_body(
    request: Request, limit: int = MAX_BODY, timeout: float = BODY_TIMEOUT
) -> bytes:
    """The body, refused with 413 as soon as it passes `limit` (Content-Length or streamed),
    and with 408 when it trickles in slower than `timeout` (uvicorn has no body deadline)."""
    try:
        if _timeout is None:  # Python 3.10: wait_for runs the read as a task of its own
            return await asyncio.wait_for(_read_capped(request, limit), timeout)
        async with _timeout(timeout):  # a deadline on this task: no task hop per request
            return await _read_capped(request, limit)
    except asyncio.TimeoutError:
        raise ApiError(
            408, f"The body did not arrive within {timeout:g} s; send it in one go."
        ) from None


_timeout = getattr(asyncio, "timeout", None)  # 3.11+


async def _read_capped(request: Request, limit: int) -> bytes:
    too_large = ApiError(
        413, f"The body is larger than {limit} bytes; send only the lines around the error."
    )
    declared = request.headers.get("content-length")
    if declared is not None:
        if not _DIGITS.fullmatch(declared):
            raise ApiError(400, "Content-Length is not a number; send a plain byte count.")
        if int(declared) > limit:
            raise too_large
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise too_large
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


_OPTIONS = ("version", "limit", "offset", "format", "project")


def explain_input(raw: bytes, content_type: str) -> tuple[str, dict[str, str]]:
    """(text, options) from a text/plain body or a JSON object {"text", "version", "limit",
    "offset", "format"}."""
    text = decode_text(raw)
    opts: dict[str, str] = {}
    if content_type.split(";")[0].strip().lower() == "application/json":
        doc = _json_object(text, '{"text": "<pasted log>"}')
        if not isinstance(doc.get("text"), str):
            raise ApiError(
                400, 'The JSON body needs a string "text" field: {"text": "<pasted log>"}.'
            )
        text = check_text(doc["text"])
        opts = {k: str(doc[k]) for k in _OPTIONS if doc.get(k) is not None}
    if not text.strip():
        raise ApiError(400, "The body is empty; POST the error message or log lines as the body.")
    if len(text) > MAX_EXPLAIN:
        raise ApiError(
            413,
            f"The text is longer than {MAX_EXPLAIN} characters; send only the lines around the error.",
        )
    return text, opts


def check_input(raw: bytes, content_type: str) -> tuple[str, dict[str, str]]:
    """(launch text, options) for POST /check: a text/plain command line (or a paste that
    holds one), or a JSON object {"command", "release"}."""
    text = decode_text(raw)
    opts: dict[str, str] = {}
    if content_type.split(";")[0].strip().lower() == "application/json":
        doc = _json_object(text, '{"command": "python -m sglang.launch_server ..."}')
        if not isinstance(doc.get("command"), str):
            raise ApiError(400, 'The JSON body needs a string "command" field.')
        text = doc["command"]
        opts = {"release": str(doc["release"])} if doc.get("release") is not None else {}
    if not text.strip():
        raise ApiError(400, "The body is empty; POST the launch command as the body.")
    if len(text) > MAX_CHECK:
        raise ApiError(413, f"A launch is at most {MAX_CHECK} characters; send the command alone.")
    return text, opts


def _json_object(text: str, shape: str) -> dict:
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: "[[[[..." nested past the stack
        raise ApiError(400, f"The JSON body does not parse; send {shape}.") from None
    if not isinstance(doc, dict):
        raise ApiError(400, f"The JSON body must be an object: {shape}.")
    return doc


def check_text(text: str) -> str:
    """A text from a JSON body, refused when no log line could hold it."""
    if "\x00" in text:
        raise ApiError(400, "The text contains NUL characters; paste the log as text.")
    try:  # JSON may spell lone surrogates ("\\ud800"), which no UTF-8 reply can echo back
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ApiError(
            400, "The text contains unpaired \\ud800-style escapes; send valid Unicode."
        ) from None
    return text


def batch_input(raw: bytes) -> tuple[list[str], dict[str, str]]:
    """(texts, options) from a JSON object {"texts": [...], "version", "limit"}: at most
    MAX_BATCH texts, MAX_EXPLAIN characters in all."""
    shape = '{"texts": ["<pasted log>", ...]}'
    doc = _json_object(decode_text(raw), shape)
    texts = doc.get("texts")
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        raise ApiError(400, f'The JSON body needs a non-empty list of strings "texts": {shape}.')
    if len(texts) > MAX_BATCH:
        raise ApiError(
            413, f"At most {MAX_BATCH} texts per batch; split the {len(texts)} into batches."
        )
    if sum(len(t) for t in texts) > MAX_EXPLAIN:
        raise ApiError(
            413,
            f"The texts are longer than {MAX_EXPLAIN} characters together; send fewer per batch.",
        )
    for i, t in enumerate(texts):
        if not check_text(t).strip():
            raise ApiError(400, f"Text {i} is empty; send the error message or log lines.")
    return texts, {
        k: str(doc[k]) for k in ("version", "limit", "project") if doc.get(k) is not None
    }


# Each option of a request: (whether a value is well formed, what to send instead)
_PARAMS = {
    "version": (_VERSION.fullmatch,
                "version must be a release tag or a commit sha such as v0.5.0 or 0132848."),
    "project": (_PROJECT.fullmatch, "project must be a project name such as sglang or vllm."),
    "format": (lambda v: v in ("json", "markdown"), "format must be json (the default) or markdown."),
    # str.isdigit() accepts "²", which int() rejects: match ASCII digits only.
    "limit": (lambda v: _DIGITS.fullmatch(v) and 1 <= int(v) <= MAX_LIMIT,
              f"limit must be a whole number from 1 to {MAX_LIMIT}."),
    "offset": (lambda v: _DIGITS.fullmatch(v) and int(v) <= MAX_OFFSET,
               f"offset must be a whole number from 0 to {MAX_OFFSET}."),
}  # fmt: skip


def check_param(name: str, value: str | None, default: Any = None) -> Any:
    """A request's option `name` (None or "": `default`), refused with 400 when malformed;
    limit and offset as numbers."""
    if value in (None, ""):
        return default
    ok, error = _PARAMS[name]
    if not ok(value):
        raise ApiError(400, error)
    return int(value) if name in ("limit", "offset") else value


def page_options(params: Mapping[str, str], limit: int) -> tuple[str | None, int, int, str | None]:
    """(version, limit, offset, project) of a request that answers with a page."""
    return (check_param("version", params.get("version")),
            check_param("limit", params.get("limit"), limit),
            check_param("offset", params.get("offset"), 0),
            check_param("project", params.get("project")))  # fmt: skip


def check_origins(origins: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """`--cors-origin` values: `*`, or a scheme and host such as https://docs.example.com."""
    for o in origins:
        if not _ORIGIN.fullmatch(o):
            raise QueryError(
                f"--cors-origin {o!r} is not an origin; pass a scheme and host such as"
                " https://docs.example.com (no path), or * for any site."
            )
    return tuple(origins)


# ---------------------------------------------------------------- the lanes


@dataclass(frozen=True)
class Lane:
    """Where pastes of up to `chars` characters are matched, one at a time per worker process:
    `queue` admitted at once (the one matched and those waiting), `per_client` of them from one
    client; each has `timeout` seconds from admission to answer and `budget` CPU seconds
    (never more than the catalog's own budget)."""

    name: str
    chars: int
    queue: int
    per_client: int
    timeout: float
    budget: float
    retry_after: int  # seconds a refused client is told to wait


LANES = (
    Lane("short", 16 * 1024, queue=8, per_client=4, timeout=10.0, budget=1.0, retry_after=1),
    Lane("long", MAX_EXPLAIN, queue=4, per_client=2, timeout=20.0, budget=5.0, retry_after=5),
)
# POST /check runs a release's own code in a sandboxed child (about a second a launch): a lane
# of its own, so a queue of checks never delays an explain. Its budget is the child's deadline.
CHECK_LANE = Lane(
    "check", MAX_CHECK, queue=2, per_client=1, timeout=60.0, budget=30.0, retry_after=10
)


class Lanes:
    """Each Lane's thread and admitted pastes."""

    def __init__(self, lanes: tuple[Lane, ...]) -> None:
        self.lanes = lanes
        self.slots = {lane: Slots(lane.queue, lane.per_client) for lane in lanes}
        self.pools = {
            lane: ThreadPoolExecutor(1, thread_name_prefix=f"kverr-explain-{lane.name}")
            for lane in lanes
        }

    def lane(self, size: int) -> Lane:
        return next((lane for lane in self.lanes if size <= lane.chars), self.lanes[-1])

    def refuse_early(self, request: Request) -> None:
        """Before a body is read: the 503 `run` would answer, when every lane a text of its
        Content-Length could need is full, so that a refused 250 KB paste is not read first.
        A character takes 1 to 12 bytes (in JSON, an escaped surrogate pair: "\\ud83d\\ude00")."""
        declared = request.headers.get("content-length", "")
        if not _DIGITS.fullmatch(declared) or int(declared) // 12 <= INLINE_CHARS:
            return
        least, most = self.lane(int(declared) // 12), self.lane(int(declared))
        client = client_of(request.scope)
        lanes = self.lanes[self.lanes.index(least) : self.lanes.index(most) + 1]
        refusals = [self.slots[lane].refusal(client) for lane in lanes]
        if all(refusals):
            raise _busy(most, refusals[-1])

    async def run(self, lane: Lane, work, request: Request):
        """`work(budget)`'s result, run in `lane`'s thread; ApiError 503 when the lane is full or
        the answer is not ready in time. Work nobody waits for any more (the client left, the
        deadline passed) is dropped if it has not started, else stopped at its next check."""
        client = client_of(request.scope)
        slots = self.slots[lane]
        refused = slots.take(client)
        if refused:
            raise _busy(lane, refused)
        loop = asyncio.get_running_loop()
        stop = threading.Event()

        def job():
            with matcher.stop_when(stop):
                return work(lane.budget)

        def release(_) -> None:  # when the work ends or is dropped: the slot is free only then
            try:
                loop.call_soon_threadsafe(slots.give, client)
            except RuntimeError:  # the loop has closed (shutdown): nothing left to count
                pass

        future = self.pools[lane].submit(job)
        future.add_done_callback(release)
        answer = asyncio.wrap_future(future)
        gone = loop.create_task(_disconnected(request))
        try:
            await asyncio.wait(
                (answer, gone), timeout=lane.timeout, return_when=asyncio.FIRST_COMPLETED
            )
            if answer.done():
                return answer.result()
            raise ApiError(
                503,
                f"The paste was not matched within {lane.timeout:g} s (the server is busy);"
                f" retry in {lane.retry_after} s, or send only the lines around the error.",
                {"Retry-After": str(lane.retry_after)},
            )
        finally:
            stop.set()
            answer.cancel()  # cancels the work too when it has not started
            gone.cancel()


def _busy(lane: Lane, refused: str) -> ApiError:
    """The 503 of a full lane: `refused` says whose share is taken (Slots.refusal)."""
    retry = {"Retry-After": str(lane.retry_after)}
    if refused == "server":
        return ApiError(
            503,
            f"The server is matching as many pastes of this size as it can; retry in"
            f" {lane.retry_after} s, or send only the lines around the error.",
            retry,
        )
    return ApiError(
        503,
        f"This client has {lane.per_client} pastes of this size being matched already;"
        " wait for their answers before sending more.",
        retry,
    )


async def _disconnected(request: Request) -> None:
    """Returns when the client hangs up (its body has been read: nothing else can arrive)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


# ---------------------------------------------------------------- the app


class Api:
    """Handlers bound to one catalog (module doc: which run on the loop, which in a lane)."""

    def __init__(
        self,
        cat,
        body_timeout: float = BODY_TIMEOUT,
        lanes: tuple[Lane, ...] = LANES,
    ) -> None:
        self.cat = cat
        self.body_timeout = body_timeout
        self.count = cat.ping()
        self.index = cat.index  # the matcher's index: read now, not by the first request
        self.index.warm()  # terms and traceback lookups in memory: no query per request
        self.lanes = Lanes((*lanes, CHECK_LANE))
        self.checked = time.monotonic()
        self.damaged: str | None = None  # the CatalogError that showed the catalog is damaged
        self.dataset_version = cat.dataset_version()
        # each project's own dataset version: a record is immutable within its project's
        # dataset, and one project's data can be rebuilt while the other's stays as it was
        self.versions_of = {p["name"]: p.get("datasetVersion") or "" for p in cat.projects}
        self.releases = cat.release_order()  # what /versions lists and `version=` accepts
        self.release_orders = cat.release_orders()  # Markdown shows releases as ranges
        # each record's JSON text, written once per process: a record is 3-4 KB of JSON, and
        # serialising it again was most of the cost of rendering an answer
        self.record_json: dict[str, str] = {}

    async def explain(self, request: Request) -> Response:
        self.lanes.refuse_early(request)
        raw = await read_body(request, timeout=self.body_timeout)
        text, opts = explain_input(raw, request.headers.get("content-type", "text/plain"))
        params = {**request.query_params, **opts}
        version, limit, offset, project = page_options(params, 5)
        fmt = check_param("format", params.get("format"), "json")
        matches = await self._explain(request, text, version, project)
        if fmt == "markdown":  # the whole answer, as a bot posts it
            from kverr.present import markdown

            body = markdown.answers(matches[offset:], self.release_orders, limit)
            return Response(body, media_type="text/markdown; charset=utf-8", headers=_HEADERS)
        return _json_text(self._page(text, matches, limit, offset))

    async def check(self, request: Request) -> Response:
        """A launch through its release's own checks, as `kverr check --json` reports it."""
        raw = await read_body(request, limit=MAX_CHECK * 4, timeout=self.body_timeout)
        text, opts = check_input(raw, request.headers.get("content-type", "text/plain"))
        release = check_param("version", opts.get("release", request.query_params.get("release")))

        def run(_budget: float | None) -> dict:
            from kverr.verify.preflight import check_text

            return check_text(text, release=release)[1]  # (the source: $KVERR_SOURCE, installed)

        report = await self.lanes.run(CHECK_LANE, run, request)
        return _json_text(_dumps(report))

    async def explain_batch(self, request: Request) -> JSONResponse:
        self.lanes.refuse_early(request)
        raw = await read_body(request, timeout=self.body_timeout)
        texts, opts = batch_input(raw)
        version, limit, _, project = page_options(opts, 5)
        found = await self._explain(request, texts, version, project)
        results = [
            self._page(text, matches, limit, 0) for text, matches in zip(texts, found, strict=True)
        ]
        return _json_text('{"results":[' + ",".join(results) + "]}")

    def _page(self, query: str, matches: list, limit: int, offset: int) -> str:
        """One page of all the `matches` found, as `_listing` writes it."""
        return self._listing(query, len(matches), offset, limit, matches[offset : offset + limit])

    def _listing(self, query: str, total: int, offset: int, limit: int, shown: list) -> str:
        """{"query", "total", "offset", "limit", "matches"} as JSON text, each of the `shown`
        matches as Match.to_dict() has it."""
        head = _dumps({"query": query, "total": total, "offset": offset, "limit": limit})
        body = ",".join(self._match_json(m) for m in shown)
        return f'{head[:-1]},"matches":[{body}]}}'

    def _match_json(self, match) -> str:
        """match.to_dict() as JSON text, its record's part written once per process."""
        doc = match.to_dict()
        rec = doc.pop("record")
        rid = rec.get("id")
        text = self.record_json.get(rid) if isinstance(rid, str) else None
        if text is None:
            text = _dumps(rec)
            if isinstance(rid, str) and len(self.record_json) < RECORD_JSON:
                self.record_json[rid] = text  # (records of a read-only catalog never change)
        return '{"record":' + text + "," + _dumps(doc)[1:]

    async def _explain(
        self,
        request: Request,
        texts: str | list[str],
        version: str | None,
        project: str | None = None,
    ) -> list:
        """Every match of a text, or for a batch a list per text (the page is cut by the
        caller), under one CPU budget for the whole request: 20 texts of a batch once got
        20 budgets. Short input on the loop, longer input in a lane by its size (module doc):
        a batch counts by its texts together."""
        batch = not isinstance(texts, str)
        if not batch:
            texts = [texts]

        def run(lane_budget: float | None) -> list:
            budgets = [b for b in (self.cat.budget, lane_budget) if b is not None]
            with matcher.budget(min(budgets, default=None)):
                return [
                    self.cat.explain(t, version=version, limit=MAX_OFFSET, project=project)
                    for t in texts
                ]

        size = sum(len(t) for t in texts)
        if size <= INLINE_CHARS:
            found = run(None)
        else:
            found = await self.lanes.run(self.lanes.lane(size), run, request)
        return found if batch else found[0]

    async def error(self, request: Request) -> Response:
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
        version = self.versions_of.get(rec.get("project") or "", self.dataset_version)
        pinned = request.query_params.get("dataset")
        if pinned is not None and pinned != version:
            raise ApiError(
                404,
                f"This server holds dataset {version!r} for this record, not {pinned[:40]!r};"
                f" GET /errors/{rec['id']} for the current record.",
            )
        releases = self.cat.releases_of(rec["id"])
        doc = {"record": rec, "releases": releases, "datasetVersion": version}
        body = json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
        cache = ERROR_CACHE_VERSIONED if pinned else ERROR_CACHE
        headers = {**_HEADERS, "Cache-Control": cache, "ETag": etag}
        if etag in _etags(request.headers.get("if-none-match", "")):
            return Response(status_code=304, headers=headers)
        return Response(body, media_type="application/json", headers=headers)

    async def search(self, request: Request) -> JSONResponse:
        q = request.query_params.get("q", "")
        if not q.strip():
            raise ApiError(400, "Pass the words to look for as ?q=, e.g. /search?q=page-size.")
        if len(q) > MAX_QUERY or "\x00" in q:
            raise ApiError(
                400,
                f"q must be text of at most {MAX_QUERY} characters; POST long pastes to /explain.",
            )
        version, limit, offset, project = page_options(request.query_params, 20)
        matches, total = self.cat.search_page(
            q, version=version, limit=limit, offset=offset, project=project
        )
        return _json_text(self._listing(q, total, offset, limit, matches))

    async def versions(self, request: Request) -> JSONResponse:
        """The releases `version=` accepts, oldest first, and every revision built, each with
        its project (?project=: that project's alone)."""
        project = check_param("project", request.query_params.get("project"))
        if project is not None:
            self.cat.project(project)  # NotFound (404) names the projects held
        rows = [r.to_dict() for r in self.cat.revisions(project=project)]
        revisions = [{k: v for k, v in r.items() if k != "ord"} for r in rows]
        releases = self.cat.release_order(project=project) if project else self.releases
        version = self.versions_of.get(project, "") if project else self.dataset_version
        return _json(
            {
                "datasetVersion": version,
                "projects": self._projects(project),
                "releases": releases,
                "revisions": revisions,
            }
        )

    def _projects(self, project: str | None = None) -> list[dict]:
        """Each project served: its name, product and dataset version."""
        return [
            {"name": p["name"], "product": p.get("product", p["name"]),
             "datasetVersion": p.get("datasetVersion") or ""}
            for p in self.cat.projects
            if project in (None, p["name"])
        ]  # fmt: skip

    async def home(self, request: Request) -> JSONResponse:
        return _json(
            {
                "name": "kverr error API",
                "kverr": __version__,
                "datasetVersion": self.dataset_version,
                "projects": self._projects(),
                "records": self.count,
                "endpoints": ENDPOINTS,
                "openapi": "/openapi.json",
                "docs": "/docs",
            }
        )

    async def flag(self, request: Request) -> JSONResponse:
        m = _FLAG.fullmatch(request.path_params["flag"])
        if not m:
            raise ApiError(
                400, "A flag name looks like --page-size (letters, digits, '-' and '_')."
            )
        name = "--" + m.group(1)
        project = check_param("project", request.query_params.get("project"))
        decl = self.cat.flag(name, project=project)
        if decl is None:
            raise ApiError(
                404, f"No flag {name} in this catalog; GET /search?q={m.group(1)} to look around."
            )
        # its declaration in each release (choices, type, default), what argparse answers read
        history = self.cat.flag_history(name, project=decl["project"])
        return _json({**decl, "history": history})

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

    def guarded(self, handler):
        """`handler`, answering 503 once any request found the catalog damaged: a damaged file
        can still answer a paste from memory (the prefilter needs no query), but an answer
        read from it may be wrong, and /healthz already tells the balancer to look elsewhere."""

        async def guard(request: Request) -> Response:
            if self.damaged is not None:
                return _json({"error": DAMAGED, "status": 503}, 503)
            return await handler(request)

        return guard

    async def catalog_error(self, request: Request, exc: Exception) -> JSONResponse:
        # A damaged file, found by this request's query: 503 for it, and /healthz from now on.
        self.note_damage(exc)
        return _json({"error": DAMAGED, "status": 503}, 503)

    async def openapi(self, request: Request) -> Response:
        return Response(OPENAPI, media_type="application/json", headers=_HEADERS)

    async def docs(self, request: Request) -> Response:
        return Response(DOCS_HTML, media_type="text/html", headers=DOCS_HEADERS)


def _etags(header: str) -> set[str]:
    """The entity tags of an If-None-Match header (weak ones compare equal, RFC 9110 §13.1.2)."""
    if header.strip() == "*":
        return {"*"}
    return {t.strip().removeprefix("W/") for t in header.split(",") if t.strip()}


def openapi_document() -> dict:
    """feeds/static/openapi.json with its Record schema generated from the record schema
    (schema/record.schema.json), so the API's contract never drifts from the records'."""
    doc = json.loads(
        resources.files("kverr.feeds").joinpath("static", "openapi.json").read_text("utf-8")
    )
    record = json.loads(
        resources.files("kverr.schema").joinpath("record.schema.json").read_text("utf-8")
    )
    doc["components"]["schemas"]["Record"] = {
        k: v for k, v in record.items() if k not in ("$schema", "$id")
    }
    return doc


OPENAPI = json.dumps(openapi_document(), indent=1, ensure_ascii=False)
DOCS_HTML = apidocs.render(json.loads(OPENAPI))
# the page needs nothing but its own inline style: a policy that allows nothing else
DOCS_HEADERS = {
    **_HEADERS,
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'",
}
# GET /: each endpoint and its summary, from the OpenAPI document (one source for both).
ENDPOINTS = [
    {"method": method.upper(), "path": path, "summary": op.get("summary", "")}
    for path, ops in json.loads(OPENAPI)["paths"].items()
    for method, op in ops.items()
]


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    status = getattr(exc, "status_code", 400)
    detail = getattr(exc, "detail", "")
    headers = dict(getattr(exc, "headers", None) or {})
    if "Allow" in headers:  # (Starlette lists a route's methods in set order: one order here)
        headers["Allow"] = ", ".join(sorted(headers["Allow"].split(", ")))
    if not isinstance(exc, ApiError):
        # Starlette's own 404/405 carry bare phrases; say what exists instead.
        detail = {
            404: f"No such endpoint {request.url.path!r}; see /docs (or /openapi.json) for the API.",
            405: f"{request.method} is not allowed on {request.url.path!r}; use "
            f"{headers.get('Allow', 'another method')} (see /docs).",
        }.get(status, detail)
    return _json({"error": detail, "status": status}, status, headers)


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


class _Cors(CORSMiddleware):
    """Starlette's CORS, with a refused preflight answered in the API's error shape (it says
    "Disallowed CORS origin" as plain text)."""

    def preflight_response(self, request_headers) -> Response:
        answer = super().preflight_response(request_headers)
        if answer.status_code != 400:
            return answer
        what = answer.body.decode("utf-8", "replace").removeprefix("Disallowed CORS ")
        headers = {
            k: v
            for k, v in answer.headers.items()
            if k.lower() not in ("content-length", "content-type")
        }
        return JSONResponse(
            {"error": f"This server does not allow that cross-origin request ({what}); the operator"
                      " names allowed sites with kverr serve --cors-origin.", "status": 400},
            status_code=400, headers={**headers, **_HEADERS},
        )  # fmt: skip


def create_app(
    cat,
    *,
    body_timeout: float = BODY_TIMEOUT,
    cors_origins: tuple[str, ...] = (),
    lanes: tuple[Lane, ...] = LANES,
) -> Starlette:
    """The Starlette app over an open Catalog (read-only use; the caller owns and closes it).
    `cors_origins`: sites whose pages may call the API from a browser (`*`: any); none by
    default, so a page elsewhere cannot make its visitors' browsers use this server.
    `lanes`: where pastes longer than INLINE_CHARS are matched, by size (module doc)."""
    api = Api(cat, body_timeout, lanes)
    routes = [
        Route("/", api.home, methods=["GET"]),
        Route("/explain", api.guarded(api.explain), methods=["POST"]),
        Route("/explain/batch", api.guarded(api.explain_batch), methods=["POST"]),
        Route("/check", api.guarded(api.check), methods=["POST"]),
        Route("/errors/{record_id}", api.guarded(api.error), methods=["GET"]),
        Route("/search", api.guarded(api.search), methods=["GET"]),
        Route("/flags/{flag}", api.guarded(api.flag), methods=["GET"]),
        Route("/versions", api.guarded(api.versions), methods=["GET"]),
        Route("/healthz", api.healthz, methods=["GET"]),
        Route("/openapi.json", api.openapi, methods=["GET"]),
        Route("/docs", api.docs, methods=["GET"]),
    ]
    handlers = {
        HTTPException: _http_error,
        CatalogError: api.catalog_error,
        KverrError: _kverr_error,
        Exception: _crash,
    }
    middleware = []
    if cors_origins:
        middleware.append(
            Middleware(
                _Cors,
                allow_origins=list(check_origins(cors_origins)),
                allow_methods=["GET", "POST"],
                allow_headers=["Content-Type", "If-None-Match"],
                expose_headers=["ETag"],
                max_age=600,
            )
        )
    app = Starlette(routes=routes, exception_handlers=handlers, middleware=middleware)
    # A trailing slash gets a JSON 404 rather than a 307 to elsewhere: one answer shape for bots.
    app.router.redirect_slashes = False
    return app
