"""The exported site in a real headless Chromium (Debian: `apt-get install -y chromium`).

Opens the index, searches by pasting a log line through `index.html?q=...` (the page's script
reads it), opens an error page, asserts on the rendered DOM, and saves screenshots under
tests/artifacts/ for a human to look at.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from urllib.parse import quote

import pytest
from kverr.feeds.site import export_site, page_of
from test_feeds_data import BY_KEY, RECORDS, feeds_catalog, feeds_catalog_path  # noqa: F401

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
BROWSER = next(
    (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)),
    None,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        BROWSER is None, reason="no chromium on PATH; install it with `apt-get install -y chromium`"
    ),
]


def chromium(url: str, *args: str, profile: Path) -> str:
    cmd = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
           f"--user-data-dir={profile}", "--virtual-time-budget=5000", *args, url]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.fixture(scope="module")
def site(feeds_catalog, tmp_path_factory) -> Path:  # noqa: F811
    out = tmp_path_factory.mktemp("browser") / "site"
    export_site(
        feeds_catalog, out, meta={"siteTitle": "SGLang server-args errors", "toolVersion": "test"}
    )
    return out


@pytest.fixture
def profile(tmp_path) -> Path:
    return tmp_path / "profile"


def _rows(dom: str) -> list[tuple[str, bool, str]]:
    """(record id, hidden?, class) for each row of the index list, in DOM order."""
    return [
        (m.group("id"), " hidden" in m.group(0), m.group("cls"))
        for m in re.finditer(r'<li class="(?P<cls>[^"]*)" data-id="(?P<id>[0-9a-f]+)"[^>]*>', dom)
    ]


def test_index_lists_every_error(site, profile):
    dom = chromium((site / "index.html").as_uri(), "--dump-dom", profile=profile)
    rows = _rows(dom)
    assert sorted(r[0] for r in rows) == sorted(r["id"] for r in RECORDS)
    assert not any(hidden for _, hidden, _ in rows)


@pytest.mark.parametrize(
    ("query", "best"),
    [("[2026-04-24 10:00:01] ERROR: ValueError: --page-size must be a power of two, got 48.", "page-size-power"),
     ("ValueError: --kv-cache-dtype 'fp8_e5m2' is not supported with --attention-backend 'triton'.", "kv-dtype-backend"),
     ("radix offload", "radix-offload")],
    ids=["paste", "paste-two-values", "words"],
)  # fmt: skip
def test_search_from_the_url_finds_the_error(site, profile, query, best):
    url = (site / "index.html").as_uri() + "?q=" + quote(query)
    dom = chromium(url, "--dump-dom", profile=profile)
    visible = [rid for rid, hidden, _ in _rows(dom) if not hidden]
    assert visible and visible[0] == BY_KEY[best]["id"], visible
    assert re.search(r'id="search-status"[^>]*>\d+ matching error', dom)


def test_search_with_no_match_says_so(site, profile):
    dom = chromium(
        (site / "index.html").as_uri() + "?q=" + quote("completely unrelated words zebra"),
        "--dump-dom",
        profile=profile,
    )
    assert all(hidden for _, hidden, _ in _rows(dom))
    assert "No error matches" in dom


def test_error_page_renders_escaped_text(site, profile):
    dom = chromium(
        (site / page_of(BY_KEY["chat-template-missing"])).as_uri(), "--dump-dom", profile=profile
    )
    assert "<img" not in dom and "<script>alert" not in dom  # hostile record text stayed text
    assert '&lt;script&gt;alert("xss")&lt;/script&gt;' in dom
    assert "Invalid --chat-template &lt;path&gt;" in dom


@pytest.mark.parametrize(
    ("query", "link"),
    [("--page-size", "flags/page-size.html"), ("page size", "flags/page-size.html"),
     ("0.5.0", "releases/v0.5.0.html"),
     ("ValueError: --kv-cache-dtype 'fp8_e5m2' is not supported with --attention-backend 'triton'.", "flags/kv-cache-dtype.html")],
    ids=["flag", "flag-words", "release", "flag-in-a-paste"],
)  # fmt: skip
def test_search_offers_flag_and_release_pages(site, profile, query, link):
    dom = chromium(
        (site / "index.html").as_uri() + "?q=" + quote(query), "--dump-dom", profile=profile
    )
    hits = re.search(r'<ul id="page-hits" class="page-hits"( hidden="")?>(.*?)</ul>', dom, re.S)
    assert hits and hits.group(1) is None, "the page suggestions stayed hidden"
    assert f'href="{link}"' in hits.group(2)


def test_copy_buttons_appear_with_script(site, profile):
    dom = chromium(
        (site / page_of(BY_KEY["kv-dtype-backend"])).as_uri(), "--dump-dom", profile=profile
    )
    buttons = re.findall(r"<button[^>]*class=\"copy\"[^>]*>", dom)
    assert len(buttons) == 2 and not any("hidden" in b for b in buttons)


@pytest.fixture(scope="module")
def shipped_site(tmp_path_factory) -> Path:
    """The site of the dataset kverr ships, for screenshots of real pages."""
    from kverr.catalog import open_catalog
    from kverr.feeds.exports import site_meta

    out = tmp_path_factory.mktemp("shipped") / "site"
    with open_catalog(None) as cat:  # the packaged catalog
        export_site(cat, out, meta=site_meta(cat))
    return out


PAGES = [
    ("index", "index.html", None, 1000),
    ("search", "index.html", "ValueError: --page-size must be a power of two, got 48.", 900),
    ("search-flag", "index.html", "--page-size", 700),
    ("error-page", "errors/{page-size-power}", None, 1900),
    ("error-page-hostile", "errors/{chat-template-missing}", None, 1700),
    ("flags", "flags/index.html", None, 700),
    ("release", "releases/v0.5.0.html", None, 1000),
    ("error-page-dark", "errors/{kv-dtype-backend}", None, 1700),
]


@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize(("name", "page", "query", "height"), PAGES, ids=[p[0] for p in PAGES])
def test_screenshots(site, profile, name, page, query, height, width):
    m = re.search(r"\{(.+)\}", page)
    if m:
        page = page_of(BY_KEY[m.group(1)])
    _shoot(
        site / page,
        query,
        f"site-{name}-{width}",
        width,
        height,
        dark=name.endswith("dark"),
        profile=profile,
    )


SHIPPED = [
    (
        "shipped-error",
        "errors/chunked-prefill-size-must-be-divisible-by-page-s-38cd82.html",
        None,
        2200,
    ),
    (
        "shipped-error-hook",
        "errors/prefill-only-disable-kv-cache-is-incompatible-wi-90546f.html",
        None,
        2200,
    ),
    ("shipped-release", "releases/v0.5.10rc0.html", None, 1400),
    ("shipped-search-flag", "index.html", "--page-size", 900),
]


@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize(("name", "page", "query", "height"), SHIPPED, ids=[p[0] for p in SHIPPED])
def test_screenshots_of_the_shipped_site(shipped_site, profile, name, page, query, height, width):
    assert (shipped_site / page).is_file(), page
    _shoot(
        shipped_site / page,
        query,
        f"site-{name}-{width}",
        width,
        height,
        dark=False,
        profile=profile,
    )


def _shoot(
    path: Path, query: str | None, stem: str, width: int, height: int, *, dark: bool, profile: Path
) -> None:
    url = path.as_uri() + ("?q=" + quote(query) if query else "")
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / f"{stem}.png"
    shot.unlink(missing_ok=True)
    # Blink's preferredColorScheme 0 is dark: the page follows prefers-color-scheme.
    scheme = "--blink-settings=preferredColorScheme=" + ("0" if dark else "1")
    chromium(
        url, f"--screenshot={shot}", f"--window-size={width},{height}", scheme, profile=profile
    )
    assert (
        shot.is_file()
        and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        and shot.stat().st_size > 10_000
    )
