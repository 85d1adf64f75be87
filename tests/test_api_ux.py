"""The API's points over real HTTP (uvicorn on 127.0.0.1): CORS on request, pages with a
total, /versions, the Record schema generated from the record schema, a Markdown answer, batch
explain, ETag and immutable caching, one name for the releases list, and GET /."""

from __future__ import annotations

import html
import json
import re
from importlib import resources

import httpx
import jsonschema
import pytest
from kverr.feeds.api import MAX_BATCH, create_app
from test_feeds_data import BY_KEY, DATASET_VERSION, RECORDS
from typer.testing import CliRunner

from kverr.cli import app as cli_app

PASTE = "[2026-04-24 10:00:01] ERROR: ValueError: --page-size must be a power of two, got 48."
DTYPE = (
    "ValueError: --kv-cache-dtype 'fp8_e5m2' is not supported with --attention-backend 'triton'."
)
RADIX = "WARNING: Disabling radix cache because --enable-streaming-offload is set."
LOG = "\n".join(["starting", PASTE, "loading weights", DTYPE, RADIX, "ready"])
DOCS = "https://docs.example.com"


@pytest.fixture(scope="module")
def client(feeds_catalog, serve):
    with serve(create_app(feeds_catalog)) as url, httpx.Client(base_url=url, timeout=15) as c:
        yield c


@pytest.fixture(scope="module")
def cors_client(feeds_catalog, serve):
    app = create_app(feeds_catalog, cors_origins=(DOCS,))
    with serve(app) as url, httpx.Client(base_url=url, timeout=15) as c:
        yield c


# ---------------------------------------------------------------- CORS, opt-in


def test_no_cors_unless_asked(client):
    r = client.post("/explain", content=PASTE, headers={"Origin": DOCS})
    assert r.status_code == 200 and "access-control-allow-origin" not in r.headers
    pre = client.options(
        "/explain", headers={"Origin": DOCS, "Access-Control-Request-Method": "POST"}
    )
    assert "access-control-allow-origin" not in pre.headers


def test_cors_for_the_named_origin(cors_client):
    pre = cors_client.options(
        "/explain",
        headers={"Origin": DOCS, "Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "content-type"},
    )  # fmt: skip
    assert pre.status_code == 200
    assert pre.headers["access-control-allow-origin"] == DOCS
    assert "POST" in pre.headers["access-control-allow-methods"]
    r = cors_client.post("/explain", json={"text": PASTE}, headers={"Origin": DOCS})
    assert r.status_code == 200 and r.headers["access-control-allow-origin"] == DOCS
    got = cors_client.get(f"/errors/{BY_KEY['page-size-power']['id']}", headers={"Origin": DOCS})
    assert "ETag" in got.headers["access-control-expose-headers"]
    # an error answer carries the header too, so the widget can read the sentence
    bad = cors_client.get("/errors/%00", headers={"Origin": DOCS})
    assert bad.status_code == 400 and bad.headers["access-control-allow-origin"] == DOCS


def test_cors_refuses_other_origins(cors_client):
    other = "https://evil.example.net"
    pre = cors_client.options(
        "/explain", headers={"Origin": other, "Access-Control-Request-Method": "POST"}
    )
    assert pre.status_code == 400 and "access-control-allow-origin" not in pre.headers
    # in the API's error shape, like every other refusal
    assert pre.headers["content-type"] == "application/json"
    assert pre.json() == {
        "error": "This server does not allow that cross-origin request (origin); the operator"
        " names allowed sites with kverr serve --cors-origin.",
        "status": 400,
    }
    r = cors_client.post("/explain", content=PASTE, headers={"Origin": other})
    assert "access-control-allow-origin" not in r.headers


@pytest.mark.parametrize("origin", ["docs.example.com", "https://docs.example.com/path", "ftp://x"])
def test_serve_refuses_a_malformed_origin_in_one_line(feeds_catalog_path, origin):
    res = CliRunner().invoke(
        cli_app,
        ["serve", "--port", "0", "--cors-origin", origin, "--catalog", str(feeds_catalog_path)],
    )
    assert res.exit_code == 2
    assert res.stderr.startswith(f"kverr: --cors-origin {origin!r} is not an origin;")
    assert res.stderr.count("\n") == 1


# ---------------------------------------------------------------- pages with a total


def test_explain_of_a_log_is_paged_with_a_total(client):
    whole = client.post("/explain", content=LOG).json()
    assert whole["total"] == 3 and len(whole["matches"]) == 3  # today's default limit is 5
    ids = [m["record"]["id"] for m in whole["matches"]]
    first = client.post("/explain?limit=1", content=LOG).json()
    second = client.post("/explain", json={"text": LOG, "limit": 1, "offset": 1}).json()
    assert (first["total"], first["offset"], first["limit"]) == (3, 0, 1)
    assert [m["record"]["id"] for m in first["matches"] + second["matches"]] == ids[:2]
    past = client.post("/explain?offset=10", content=LOG).json()
    assert past["total"] == 3 and past["matches"] == []


def test_search_is_paged_with_a_total(client):
    r = client.get("/search", params={"q": "page-size", "limit": 1}).json()
    assert r["total"] >= 2 and len(r["matches"]) == 1 and r["offset"] == 0
    nxt = client.get("/search", params={"q": "page-size", "limit": 1, "offset": 1}).json()
    assert nxt["total"] == r["total"]
    assert nxt["matches"][0]["record"]["id"] != r["matches"][0]["record"]["id"]


@pytest.mark.parametrize(
    "url", ["/search?q=x&offset=-1", "/search?q=x&offset=99999", "/search?q=x&offset=1e3"]
)
def test_bad_offset_is_a_400(client, url):
    r = client.get(url)
    assert r.status_code == 400 and "offset must be" in r.json()["error"]


# ---------------------------------------------------------------- /versions, GET /


def test_versions(client, feeds_catalog):
    r = client.get("/versions").json()
    assert r["datasetVersion"] == DATASET_VERSION
    assert r["releases"] == ["v0.4.0", "v0.5.0", "c3c3c3c3c3"]
    assert [v["tags"] for v in r["revisions"]] == [["v0.4.0"], ["v0.5.0"], []]
    # every name it lists is accepted as version=, with or without the v
    for name in ("v0.5.0", "0.5.0", "c3c3c3c3c3"):
        assert client.post(f"/explain?version={name}", content=PASTE).status_code == 200


def test_index_lists_every_endpoint(client):
    r = client.get("/").json()
    paths = client.get("/openapi.json").json()["paths"]
    assert {(e["method"], e["path"]) for e in r["endpoints"]} == {
        (m.upper(), p) for p, ops in paths.items() for m in ops
    }
    assert r["records"] == len(RECORDS) and r["openapi"] == "/openapi.json"


# ---------------------------------------------------------------- the Record schema


def test_openapi_record_is_the_record_schema(client):
    served = client.get("/openapi.json").json()["components"]["schemas"]["Record"]
    schema = json.loads(resources.files("kverr.schema").joinpath("record.schema.json").read_text())
    assert served == {k: v for k, v in schema.items() if k not in ("$schema", "$id")}
    assert served["properties"]["errorMessage"] and served["required"]
    shipped = resources.files("kverr.data").joinpath("sglang", "records.jsonl")
    with shipped.open(encoding="utf-8") as fh:
        records = [json.loads(line)["record"] for line in fh]
    for record in records[:50]:  # real records validate against the served schema
        jsonschema.Draft202012Validator(served).validate(record)
    broken = {**record, "severity": 7}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(served).validate(broken)


# ---------------------------------------------------------------- Markdown and batch


def test_explain_as_markdown_a_bot_can_post(client):
    r = client.post("/explain?format=markdown", content=PASTE)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/markdown")
    md = r.text
    assert md.startswith("**ValueError**: `--page-size must be a power of two, got 48.`")
    assert "**How to fix**\n- Use `--page-size` 32 or 64" in md
    assert "Before:\n```bash\n--page-size 48\n```\nAfter:\n```bash\n--page-size 64\n```" in md
    assert "Fix not verified" in md and f"kverr id `{BY_KEY['page-size-power']['id']}`" in md
    assert "[python/sglang/srt/server\\_args.py:412](https://github.com/" in md
    same = client.post("/explain", json={"text": PASTE, "format": "markdown"})
    assert same.text == md
    none = client.post("/explain?format=markdown", content="all good here")
    assert none.text == "No known launch-argument error matches this text.\n"


def test_markdown_escapes_hostile_record_text(client):
    rec = BY_KEY["chat-template-missing"]
    md = client.post(
        "/explain?format=markdown",
        content="Invalid --chat-template <path> /x.jinja: file not found & not a builtin name.",
    ).text
    assert rec["id"] in md
    # prose is escaped; inside a fenced block the text is code, which no renderer runs
    prose = "".join(md.split("```")[0::2])
    assert "<script>" not in prose and "\\<script\\>" in prose


def test_bad_format_is_a_400(client):
    r = client.post("/explain?format=html", content=PASTE)
    assert r.status_code == 400 and "format must be" in r.json()["error"]


def test_batch_explain(client, feeds_catalog):
    r = client.post("/explain/batch", json={"texts": [PASTE, "all good", DTYPE], "limit": 2})
    assert r.status_code == 200
    results = r.json()["results"]
    assert [x["query"] for x in results] == [PASTE, "all good", DTYPE]
    assert [x["total"] for x in results] == [1, 0, 1]
    single = client.post("/explain?limit=2", content=DTYPE).json()
    assert results[2] == single  # each result is what /explain answers for that text


@pytest.mark.parametrize(
    ("body", "status", "fragment"),
    [({"texts": [PASTE] * (MAX_BATCH + 1)}, 413, f"At most {MAX_BATCH} texts"),
     ({"texts": []}, 400, "non-empty list"),
     ({"texts": "x"}, 400, "non-empty list"),
     ({"texts": [PASTE, 3]}, 400, "non-empty list"),
     ({"texts": [PASTE, "  "]}, 400, "Text 1 is empty"),
     ({"texts": ["a" * 200_000, "b" * 100_000]}, 413, "longer than"),
     ([PASTE], 400, "must be an object")],
    ids=["too-many", "empty", "not-a-list", "not-strings", "blank-text", "too-long", "array-body"],
)  # fmt: skip
def test_batch_is_bounded(client, body, status, fragment):
    r = client.post("/explain/batch", json=body)
    assert r.status_code == status and fragment in r.json()["error"]


# ---------------------------------------------------------------- caching /errors/{id}


def test_error_has_an_etag_and_revalidates(client):
    rid = BY_KEY["page-size-power"]["id"]
    r = client.get(f"/errors/{rid}")
    etag = r.headers["etag"]
    assert r.headers["cache-control"] == "public, max-age=300" and etag.startswith('"')
    again = client.get(f"/errors/{rid}", headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == etag
    weak = client.get(f"/errors/{rid}", headers={"If-None-Match": f'"x", W/{etag}'})
    assert weak.status_code == 304
    other = client.get(f"/errors/{BY_KEY['radix-offload']['id']}", headers={"If-None-Match": etag})
    assert other.status_code == 200 and other.headers["etag"] != etag


def test_error_at_its_dataset_version_is_immutable(client):
    rid = BY_KEY["page-size-power"]["id"]
    r = client.get(f"/errors/{rid}", params={"dataset": DATASET_VERSION})
    assert r.status_code == 200
    assert r.headers["cache-control"] == "public, max-age=31536000, immutable"
    assert r.json()["datasetVersion"] == DATASET_VERSION
    stale = client.get(f"/errors/{rid}", params={"dataset": "2020-01-01T00:00:00Z"})
    assert stale.status_code == 404 and DATASET_VERSION in stale.json()["error"]
    # other answers still say no-store: they depend on the text posted
    assert client.post("/explain", content=PASTE).headers["cache-control"] == "no-store"


# ---------------------------------------------------------------- one name for the releases


def test_releases_is_one_name_everywhere(client):
    match = client.post("/explain", content=PASTE).json()["matches"][0]
    record = client.get(f"/errors/{match['record']['id']}").json()
    found = client.get("/search", params={"q": "power of two"}).json()["matches"][0]
    assert "revisions" not in match and "revisions" not in found
    assert match["releases"] == record["releases"] == found["releases"] == ["v0.5.0", "c3c3c3c3c3"]
    schema = client.get("/openapi.json").json()["components"]["schemas"]
    assert schema["Match"]["properties"]["releases"] == {"$ref": "#/components/schemas/Releases"}


# ---------------------------------------------------------------- /docs and 405


def test_docs_is_the_openapi_document_as_a_page(client):
    r = client.get("/docs")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    # nothing from elsewhere, nothing to run: the page is its own inline style
    assert r.headers["content-security-policy"] == "default-src 'none'; style-src 'unsafe-inline'"
    page = r.text
    assert "<script" not in page and not re.search(r'\b(src|href)="(https?:)?//', page)
    doc = client.get("/openapi.json").json()
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            anchor = method + "-" + re.sub(r"[^A-Za-z0-9]", "-", path).strip("-")
            assert f'<section id="{anchor}">' in page and f'href="#{anchor}"' in page, path
            assert html.escape(op["summary"], quote=True) in page
    for name in doc["components"]["schemas"]:
        assert f'id="schema-{name}"' in page
    # parameters with their bounds, references as links
    assert "<code>limit</code>" in page and "integer 1..50" in page
    assert '<a href="#schema-Page">Page</a>' in page
    assert client.get("/").json()["docs"] == "/docs"


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [("POST", "/search", "GET, HEAD"), ("GET", "/explain", "POST"), ("DELETE", "/docs", "GET, HEAD"),
     ("PUT", "/errors/" + "a" * 16, "GET, HEAD")],
)  # fmt: skip
def test_wrong_method_names_the_allowed_ones(client, method, path, allow):
    r = client.request(method, path)
    assert r.status_code == 405 and r.headers["allow"] == allow
    assert r.json()["error"] == f"{method} is not allowed on {path!r}; use {allow} (see /docs)."
