"""The static site: no dead link or anchor anywhere (a link checker over every page,
on the hand-made dataset and on the shipped one), placeholders and code in prose, release pages
that agree with `kverr diff`, and --base-url for canonical URLs and a sitemap."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from kverr.feeds.exports import site_meta
from kverr.feeds.site import export_site, page_of
from linkcheck import check_site
from test_feeds_data import BY_KEY
from typer.testing import CliRunner

from kverr.cli import app

BASE = "https://example.com/sglang-errors/"


@pytest.fixture(scope="module")
def site(feeds_catalog, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("links") / "site"
    export_site(feeds_catalog, out, meta={**site_meta(feeds_catalog), "baseUrl": BASE})
    return out


@pytest.fixture(scope="module")
def shipped_site(tmp_path_factory) -> Path:
    """The site of the dataset kverr ships (data/sglang), as `kverr export site` writes it."""
    out = tmp_path_factory.mktemp("shipped") / "site"
    res = CliRunner().invoke(app, ["export", "site", str(out)], env={"KVERR_CATALOG": ""})
    assert res.exit_code == 0, res.output
    return out


def test_no_dead_links_or_anchors(site):
    checked, broken = check_site(site)
    assert checked > 100 and broken == [], "\n".join(map(str, broken))


@pytest.mark.slow  # a crawl of the shipped dataset's whole site
def test_no_dead_links_or_anchors_in_the_shipped_site(shipped_site):
    checked, broken = check_site(shipped_site)
    assert checked > 10_000 and broken == [], "\n".join(map(str, broken[:20]))


def test_the_checker_finds_a_dead_anchor(tmp_path):
    (tmp_path / "a.html").write_text('<a href="b.html#x">b</a><a href="#here">me</a><p id="here">')
    (tmp_path / "b.html").write_text(
        '<a href="missing.html">m</a><a href="javascript:alert(1)">j</a>'
    )
    _, broken = check_site(tmp_path)
    assert sorted(b.why for b in broken) == [
        "no element has that id",
        "no such file",
        "scheme 'javascript' has no place here",
    ]


@pytest.mark.slow  # the shipped dataset's whole site
def test_shipped_records_without_flags_have_no_flags_link(shipped_site):
    pages = [p.read_text(encoding="utf-8") for p in (shipped_site / "errors").glob("*.html")]
    flagless = [t for t in pages if 'id="flags"' not in t]
    assert len(flagless) >= 50  # (about 52 records name no flag: the site must still render them)
    assert not any('href="#flags"' in t and 'id="flags"' not in t for t in pages)


# ---------------------------------------------------------------- prose and placeholders


def test_placeholders_are_labels_and_backticks_are_code(site):
    page = (site / page_of(BY_KEY["page-size-power"])).read_text(encoding="utf-8")
    title = re.search(r'<h1 class="err-title">(.*?)</h1>', page).group(1)
    assert title == ('--page-size must be a power of two, got <var class="ph" title="{self.page_size}">'
                     "‹page_size›</var>.")  # fmt: skip
    assert "<title>--page-size must be a power of two, got ‹page_size›. · " in page
    message = page.split('<section id="message">', 1)[1].split("</pre>", 1)[0]
    assert "‹page_size›" in message and "{self.page_size}" not in message.replace(
        'title="{self.page_size}"', ""
    )
    # bare flags and `code` in prose are code
    assert "<li>Use <code>--page-size</code> 32 or 64</li>" in page


def test_backticks_in_prose_render_as_code(feeds_catalog, tmp_path):
    from kverr.present import html as h

    assert h.prose("when `a % b == 0` is false") == "when <code>a % b == 0</code> is false"
    assert h.prose("an odd ` stays") == "an odd ` stays"
    assert h.prose("`<b>`") == "<code>&lt;b&gt;</code>"
    assert h.prose("set {self.page_size} to 64") == "set ‹page_size› to 64"


def test_before_and_after_are_stacked_with_changes_marked(site):
    page = (site / page_of(BY_KEY["kv-dtype-backend"])).read_text(encoding="utf-8")
    fix = page.split('<div class="fix">', 1)[1].split("</section>", 1)[0]
    assert fix.index("Before") < fix.index("After")
    assert '<span class="a">--attention-backend</span> <del class="a chg">triton</del>' in fix
    assert '<span class="a">--attention-backend</span> <ins class="a chg">flashinfer</ins>' in fix
    assert fix.count('<button type="button" class="copy" hidden') == 2
    css = (site / "assets" / "style.css").read_text(encoding="utf-8")
    assert ".fix { display: grid; grid-template-columns: 1fr;" in css
    assert "pre.cmd { white-space: pre-wrap;" in css


# ---------------------------------------------------------------- releases agree with kverr diff


@pytest.mark.slow  # the shipped dataset's whole site
@pytest.mark.parametrize(("prev", "tag"), [("v0.5.8.post1", "v0.5.9"), ("v0.5.9", "v0.5.10rc0")])
def test_shipped_release_pages_agree_with_kverr_diff(shipped_site, prev, tag):
    res = CliRunner().invoke(app, ["diff", prev, tag], env={"KVERR_CATALOG": ""})
    head = res.stdout.splitlines()[0]
    said = dict((k, int(n)) for n, k in re.findall(r"(\d+) (added|removed|changed|moved)", head))
    page = (shipped_site / "releases" / f"{tag}.html").read_text(encoding="utf-8")
    summary = re.search(r'<p class="diff-summary">(.*?)</p>', page).group(1)
    shown = [int(n) for n in re.findall(r"<b>(\d+)</b>", summary)]
    assert shown == [said["added"], said["removed"], said["changed"], said["moved"]]
    sections = dict(
        (k, int(n)) for n, k in re.findall(r"<h2>(\d+) errors? (new|changed|removed|moved)", page)
    )
    assert sections.get("new", 0) == said["added"] and sections.get("removed", 0) == said["removed"]
    assert sections.get("changed", 0) == said["changed"]


# ---------------------------------------------------------------- --base-url, sitemap


def test_canonical_urls_and_sitemap(site):
    page = (site / page_of(BY_KEY["page-size-power"])).read_text(encoding="utf-8")
    assert f'<link rel="canonical" href="{BASE}{page_of(BY_KEY["page-size-power"])}">' in page
    index = (site / "index.html").read_text(encoding="utf-8")
    assert f'<link rel="canonical" href="{BASE}index.html">' in index
    tree = ET.parse(site / "sitemap.xml")
    ns = {"s": "http://www.sitemaps.org/schemas/sitemap/0.9"}
    locs = [e.text for e in tree.getroot().findall("s:url/s:loc", ns)]
    html = sorted(str(p.relative_to(site)) for p in site.rglob("*.html"))
    assert locs == [BASE + rel for rel in html]
    assert {e.text for e in tree.getroot().findall("s:url/s:lastmod", ns)} == {"2026-04-24"}
    assert (
        site / "robots.txt"
    ).read_text() == f"User-agent: *\nAllow: /\nSitemap: {BASE}sitemap.xml\n"


def test_without_base_url_no_canonical_and_no_sitemap(feeds_catalog, tmp_path):
    export_site(feeds_catalog, tmp_path / "s", meta=site_meta(feeds_catalog))
    assert not (tmp_path / "s" / "sitemap.xml").exists()
    assert 'rel="canonical"' not in (tmp_path / "s" / "index.html").read_text(encoding="utf-8")


def test_cli_base_url(feeds_catalog_path, tmp_path):
    out = tmp_path / "site"
    res = CliRunner().invoke(app, ["export", "site", str(out), "--base-url", "https://example.com/e",
                                   "--catalog", str(feeds_catalog_path)])  # fmt: skip
    assert res.exit_code == 0 and f"sitemap {out / 'sitemap.xml'}" in res.stdout
    assert "<loc>https://example.com/e/index.html</loc>" in (out / "sitemap.xml").read_text()


@pytest.mark.parametrize(
    ("args", "message"),
    [(["site", "OUT", "--base-url", "example.com"], "kverr: --base-url 'example.com' is not an http(s) URL; pass where the site will be served, e.g. https://example.com/sglang-errors/.\n"),
     (["site", "OUT", "--base-url", "javascript:alert(1)"], "kverr: --base-url 'javascript:alert(1)' is not an http(s) URL; pass where the site will be served, e.g. https://example.com/sglang-errors/.\n"),
     (["jsonl", "OUT", "--base-url", "https://example.com/"], "kverr: --base-url is for `kverr export site`, not jsonl; drop it.\n")],
    ids=["no-scheme", "javascript", "not-a-site"],
)  # fmt: skip
def test_cli_bad_base_url_is_one_line(feeds_catalog_path, tmp_path, args, message):
    args = [str(tmp_path / "out") if a == "OUT" else a for a in args]
    res = CliRunner().invoke(app, ["export", *args, "--catalog", str(feeds_catalog_path)])
    assert (res.exit_code, res.stderr) == (2, message)
    assert not (tmp_path / "out").exists()


@pytest.mark.slow  # the shipped dataset's whole site
def test_shipped_search_offers_flag_and_release_pages(shipped_site):
    text = (shipped_site / "assets" / "search-index.js").read_text(encoding="utf-8")
    assert '"k":"flag","n":"--page-size","u":"flags/page-size.html"' in text
    assert '"k":"release","n":"v0.5.9","u":"releases/v0.5.9.html"' in text
