"""The exported site in a real headless Chromium (Debian: `apt-get install -y chromium`),
driven over the DevTools protocol (tests/cdp.py) with real device emulation: a 390 px phone is
a 390 px layout viewport at device scale 3, not a 390 px window (which headless Chromium lays
out at 485 px, so overflow at 390 px went unseen).

Opens the index, searches by pasting a log line through `index.html?q=...` (the page's script
reads it), opens error pages, asserts on the rendered DOM and layout (nothing wider than the
phone, the fix the first thing under the title), and saves screenshots under tests/artifacts/
for a human to look at.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from urllib.parse import quote

import pytest
from cdp import DESKTOP, OVERFLOW_JS, PHONE, Browser
from kverr.feeds.site import export_site, page_of
from test_feeds_data import BY_KEY, RECORDS

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
BROWSER = next(
    (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)),
    None,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        BROWSER is None,
        reason="no chromium on PATH, so the site's browser tests cannot run; install it with"
        " `apt-get install -y chromium` (as root)",
    ),
]


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    with Browser(BROWSER, tmp_path_factory.mktemp("chromium")) as b:
        yield b


def dom(browser: Browser, url: str, device: dict = DESKTOP) -> str:
    """The page's DOM once its scripts have run."""
    browser.open(url, device)
    return browser.eval("document.documentElement.outerHTML")


@pytest.fixture(scope="module")
def site(feeds_catalog, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("browser") / "site"
    export_site(
        feeds_catalog, out, meta={"siteTitle": "SGLang server-args errors", "toolVersion": "test"}
    )
    return out


def _rows(dom: str) -> list[tuple[str, bool, str]]:
    """(record id, hidden?, class) for each row of the index list, in DOM order."""
    return [
        (m.group("id"), " hidden" in m.group(0), m.group("cls"))
        for m in re.finditer(r'<li class="(?P<cls>[^"]*)" data-id="(?P<id>[0-9a-f]+)"[^>]*>', dom)
    ]


def test_index_lists_every_error(site, browser):
    rows = _rows(dom(browser, (site / "index.html").as_uri()))
    assert sorted(r[0] for r in rows) == sorted(r["id"] for r in RECORDS)
    assert not any(hidden for _, hidden, _ in rows)


@pytest.mark.parametrize(
    ("query", "best"),
    [("[2026-04-24 10:00:01] ERROR: ValueError: --page-size must be a power of two, got 48.", "page-size-power"),
     ("ValueError: --kv-cache-dtype 'fp8_e5m2' is not supported with --attention-backend 'triton'.", "kv-dtype-backend"),
     ("radix offload", "radix-offload")],
    ids=["paste", "paste-two-values", "words"],
)  # fmt: skip
def test_search_from_the_url_finds_the_error(site, browser, query, best):
    page = dom(browser, (site / "index.html").as_uri() + "?q=" + quote(query))
    visible = [rid for rid, hidden, _ in _rows(page) if not hidden]
    assert visible and visible[0] == BY_KEY[best]["id"], visible
    assert re.search(r'id="search-status"[^>]*>\d+ matching error', page)


def test_a_wrapped_paste_is_an_exact_match_as_in_the_matcher(site, browser):
    """A terminal-wrapped line, a tab and a no-break space fold to single spaces, as the
    matcher folds them (kverr.pattern.BLANKS), so the record's pattern still matches."""
    query = "ValueError: --page-size must be a\n    power of two,\tgot\u00a048."
    page = dom(browser, (site / "index.html").as_uri() + "?q=" + quote(query))
    visible = [rid for rid, hidden, _ in _rows(page) if not hidden]
    assert visible[0] == BY_KEY["page-size-power"]["id"]
    assert re.search(r'id="search-status"[^>]*>\d+ matching errors? \(1 exact match\)', page)


def test_search_with_no_match_says_so(site, browser):
    url = (site / "index.html").as_uri() + "?q=" + quote("completely unrelated words zebra")
    page = dom(browser, url)
    assert all(hidden for _, hidden, _ in _rows(page))
    assert "No error matches" in page


def test_error_page_renders_escaped_text(site, browser):
    page = dom(browser, (site / page_of(BY_KEY["chat-template-missing"])).as_uri())
    assert "<img" not in page and "<script>alert" not in page  # hostile record text stayed text
    assert '&lt;script&gt;alert("xss")&lt;/script&gt;' in page
    assert "Invalid --chat-template &lt;path&gt;" in page


@pytest.mark.parametrize(
    ("query", "link"),
    [("--page-size", "flags/page-size.html"), ("page size", "flags/page-size.html"),
     ("0.5.0", "releases/v0.5.0.html"),
     ("ValueError: --kv-cache-dtype 'fp8_e5m2' is not supported with --attention-backend 'triton'.", "flags/kv-cache-dtype.html")],
    ids=["flag", "flag-words", "release", "flag-in-a-paste"],
)  # fmt: skip
def test_search_offers_flag_and_release_pages(site, browser, query, link):
    page = dom(browser, (site / "index.html").as_uri() + "?q=" + quote(query))
    hits = re.search(r'<ul id="page-hits" class="page-hits"( hidden="")?>(.*?)</ul>', page, re.S)
    assert hits and hits.group(1) is None, "the page suggestions stayed hidden"
    assert f'href="{link}"' in hits.group(2)


def test_copy_buttons_appear_with_script(site, browser):
    page = dom(browser, (site / page_of(BY_KEY["kv-dtype-backend"])).as_uri())
    buttons = re.findall(r"<button[^>]*class=\"copy\"[^>]*>", page)
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


DEVICES = {1280: DESKTOP, 390: PHONE}


@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize(("name", "page", "query", "height"), PAGES, ids=[p[0] for p in PAGES])
def test_screenshots(site, browser, name, page, query, height, width):
    m = re.search(r"\{(.+)\}", page)
    if m:
        page = page_of(BY_KEY[m.group(1)])
    _shoot(browser, site / page, query, f"site-{name}-{width}", DEVICES[width], height,
           dark=name.endswith("dark"))  # fmt: skip


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
def test_screenshots_of_the_shipped_site(shipped_site, browser, name, page, query, height, width):
    assert (shipped_site / page).is_file(), page
    _shoot(browser, shipped_site / page, query, f"site-{name}-{width}", DEVICES[width], height,
           dark=False)  # fmt: skip


def _shoot(
    browser: Browser,
    path: Path,
    query: str | None,
    stem: str,
    device: dict,
    height: int,
    *,
    dark: bool,
) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / f"{stem}.png"
    shot.unlink(missing_ok=True)
    browser.open(path.as_uri() + ("?q=" + quote(query) if query else ""), device, dark=dark)
    browser.screenshot(shot, height)
    assert (
        shot.is_file()
        and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        and shot.stat().st_size > 10_000
    )


# ---------------------------------------------------------------- a phone, for real

PHONE_PAGES = ["index.html", "flags/index.html", "flags/kv-cache-dtype.html", "tags/index.html",
               "releases/index.html", "releases/v0.5.0.html",
               *(page_of(r) for r in RECORDS)]  # fmt: skip
SHIPPED_PHONE_PAGES = ["index.html", "flags/index.html", "releases/v0.5.10rc0.html",
                       "flags/page-size.html", SHIPPED[0][1], SHIPPED[1][1]]  # fmt: skip


def _overflow(browser: Browser, url: str) -> dict:
    browser.open(url, PHONE)
    got = browser.eval(OVERFLOW_JS)
    # the emulation took: the layout viewport is the phone's, not headless Chromium's 485 px
    assert got["viewport"] == PHONE["width"], got
    return got


@pytest.mark.parametrize("page", PHONE_PAGES)
def test_nothing_is_wider_than_a_phone(site, browser, page):
    got = _overflow(browser, (site / page).as_uri())
    assert got["page"] == PHONE["width"] and got["overflow"] == [], got


@pytest.mark.parametrize(
    "query", ["--page-size", "ValueError: --kv-cache-dtype 'fp8_e5m2' is not supported"]
)
def test_search_results_fit_a_phone(site, browser, query):
    got = _overflow(browser, (site / "index.html").as_uri() + "?q=" + quote(query))
    assert got["page"] == PHONE["width"] and got["overflow"] == [], got


@pytest.mark.parametrize("page", SHIPPED_PHONE_PAGES)
def test_nothing_in_the_shipped_site_is_wider_than_a_phone(shipped_site, browser, page):
    # its index had rows 448 px wide, cut off: a long flag name stretched the list's one column
    got = _overflow(browser, (shipped_site / page).as_uri())
    assert got["page"] == PHONE["width"] and got["overflow"] == [], got


FIX_JS = """
(() => {
  const ids = [...document.querySelectorAll("main > section")].map((s) => s.id);
  const fix = document.querySelector("#fix");
  const title = document.querySelector("h1");
  return {ids, fix: fix && Math.round(fix.getBoundingClientRect().top + scrollY),
          title: Math.round(title.getBoundingClientRect().bottom + scrollY), screen: innerHeight};
})()
"""
ORDER = ["fix", "meaning", "why", "flags", "releases"]


@pytest.mark.parametrize("width", [390, 1280])
@pytest.mark.parametrize("key", ["page-size-power", "kv-dtype-backend", "chat-template-missing"])
def test_the_fix_is_the_first_thing_under_the_title(site, browser, key, width):
    browser.open((site / page_of(BY_KEY[key])).as_uri(), DEVICES[width])
    got = browser.eval(FIX_JS)
    assert got["ids"][0] == "fix", got
    assert [i for i in got["ids"] if i in ORDER] == [i for i in ORDER if i in got["ids"]], got
    # the fix starts in the upper half of the first screen, right below the title's line
    assert got["fix"] - got["title"] < 160 and got["fix"] < got["screen"] / 2, got
    ARTIFACTS.mkdir(exist_ok=True)
    figure = {"page": key, "width": width, "fixTop": got["fix"], "titleBottom": got["title"]}
    (ARTIFACTS / f"site-fix-y-{key}-{width}.json").write_text(json.dumps(figure) + "\n")


def test_the_shipped_fix_is_the_first_thing_under_the_title(shipped_site, browser):
    browser.open((shipped_site / SHIPPED[0][1]).as_uri(), PHONE)
    got = browser.eval(FIX_JS)
    assert got["ids"][:2] == ["fix", "meaning"] and got["fix"] < got["screen"] / 2, got
