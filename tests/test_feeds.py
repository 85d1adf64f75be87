"""Exports from a real DuckDB catalog: the static site, JSONL, Parquet and Markdown."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from kverr.feeds.exports import export_jsonl, export_markdown, export_parquet_path
from kverr.feeds.output import MARKER, OutputError
from kverr.feeds.site import export_site, file_token, page_of
from test_feeds_data import BY_KEY, RECORDS, XSS
from test_search_rank import KEYS, catalog_path  # noqa: F401
from typer.testing import CliRunner

from kverr import pattern
from kverr.cli import app

GOLDEN = Path(__file__).resolve().parent / "golden" / "feeds"
META = {
    "siteTitle": "SGLang server-args errors",
    "repository": "sgl-project/sglang",
    "toolVersion": "test",
}


@pytest.fixture(scope="module")
def site(feeds_catalog, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site") / "out"
    export_site(feeds_catalog, out, meta=META)
    return out


def _pages(site: Path) -> dict[str, str]:
    return {str(p.relative_to(site)): p.read_text(encoding="utf-8") for p in site.rglob("*.html")}


# ---------------------------------------------------------------- site


def test_site_has_one_page_per_error_at_its_slug(site):
    for rec in RECORDS:
        assert (site / "errors" / f"{rec['slug']}.html").is_file(), rec["slug"]
    assert len(list((site / "errors").glob("*.html"))) == len(RECORDS)


@pytest.mark.parametrize(
    "page",
    ["index.html", "flags/index.html", "flags/page-size.html", "flags/kv-cache-dtype.html", "tags/index.html",
     "tags/kv-cache.html", "releases/index.html", "releases/v0.5.0.html", "releases/v0.4.0.html",
     "assets/style.css", "assets/search.js", "assets/search-index.js"],
)  # fmt: skip
def test_site_index_pages_and_assets_exist(site, page):
    assert (site / page).is_file()


def test_release_pages_list_the_records_of_that_release(site):
    v04 = (site / "releases" / "v0.4.0.html").read_text(encoding="utf-8")
    v05 = (site / "releases" / "v0.5.0.html").read_text(encoding="utf-8")
    assert BY_KEY["page-size-old"]["slug"] in v04 and BY_KEY["page-size-power"]["slug"] not in v04
    assert "2 errors in the first release built" in v04
    assert BY_KEY["page-size-power"]["slug"] in v05
    assert BY_KEY["kv-dtype-backend"]["slug"] not in v05
    sections = dict(re.findall(r'<section id="(\w+)"><h2>[^<]*</h2>(.*?)</section>', v05))
    assert list(sections) == ["new", "changed", "carried"]
    assert "2 errors new in v0.5.0" in v05 and BY_KEY["assert-tp-pp"]["slug"] in sections["new"]
    # the edited message is one change, as kverr diff says, not one new and one removed error
    assert "1 error changed" in v05 and BY_KEY["page-size-power"]["slug"] in sections["changed"]
    assert "changed: message" in sections["changed"]
    assert (
        "1 error carried over unchanged" in v05
        and BY_KEY["radix-offload"]["slug"] in sections["carried"]
    )


def test_release_pages_agree_with_kverr_diff(feeds_catalog, site):
    from kverr.catalog.history import diff

    d = diff(feeds_catalog, "v0.4.0", "v0.5.0")
    v05 = (site / "releases" / "v0.5.0.html").read_text(encoding="utf-8")
    summary = re.search(r'<p class="diff-summary">(.*?)</p>', v05).group(1)
    counts = [int(n) for n in re.findall(r"<b>(\d+)</b>", summary)]
    assert counts == [len(d.added), len(d.removed), len(d.changed), len(d.moved)]
    assert "kverr diff v0.4.0 v0.5.0" in summary and 'href="v0.4.0.html"' in summary


def test_site_is_self_contained(site):
    """No CDN, no remote script or stylesheet: only relative links plus source links to GitHub."""
    for name, text in _pages(site).items():
        for attr, url in re.findall(r'\b(src|href)="([^"]*)"', text):
            if "://" in url:
                assert attr == "href" and url.startswith("https://github.com/"), (name, url)
        assert "fetch(" not in text


def test_every_record_string_is_escaped(site):
    pages = _pages(site)
    page = pages[page_of(BY_KEY["chat-template-missing"])]
    assert XSS not in page and "<img" not in page
    assert "&lt;script&gt;alert(&quot;xss&quot;)&lt;/script&gt;" in page
    assert "Invalid --chat-template &lt;path&gt;" in page
    for name, text in pages.items():
        assert "<script>alert" not in text, name
    assert "tags/" + file_token("<b>bold&tag</b>") + ".html" in page


def test_error_page_shows_fix_flags_source_and_releases(site):
    text = (site / page_of(BY_KEY["page-size-power"])).read_text(encoding="utf-8")
    for needle in ["Before", '<span class="a">--page-size</span> <del class="a chg">48</del>', "After", '<span class="a">--page-size</span> <ins class="a chg">64</ins>',
                   "Tokens per KV cache page.", 'class="copy" hidden', "../assets/copy.js",
                   'href="https://github.com/sgl-project/sglang/blob/' + "c3" * 20, 'class="hl" data-n="412"',
                   "../releases/v0.5.0.html", "Earlier wording", BY_KEY["page-size-old"]["slug"]]:  # fmt: skip
        assert needle in text, needle


def test_related_errors_share_a_flag(site):
    text = (site / page_of(BY_KEY["page-size-power"])).read_text(encoding="utf-8")
    related = text.split('id="related"', 1)[1]
    assert page_of(BY_KEY["page-size-old"]) in related
    assert page_of(BY_KEY["assert-tp-pp"]) not in related


def test_message_less_assert_is_named_by_its_condition(site):
    text = (site / page_of(BY_KEY["assert-tp-pp"])).read_text(encoding="utf-8")
    assert "assert self.tp_size % self.pp_size == 0" in text
    assert "prints no message" in text


def test_search_index_is_a_script_with_no_raw_angle_brackets(site):
    text = (site / "assets" / "search-index.js").read_text(encoding="utf-8")
    assert text.startswith("window.KVERR_INDEX = ") and "<" not in text
    errors, pages = text.splitlines()
    rows = json.loads(errors[len("window.KVERR_INDEX = ") :].rstrip(";"))
    assert {r["id"] for r in rows} == {r["id"] for r in RECORDS}
    assert all((site / r["u"]).is_file() for r in rows)
    groups = json.loads(pages[len("window.KVERR_PAGES = ") :].rstrip(";"))
    assert {(g["k"], g["n"]) for g in groups} >= {("flag", "--page-size"), ("release", "v0.5.0")}
    assert all((site / g["u"]).is_file() for g in groups)


def test_site_search_folds_whitespace_by_the_matchers_table(site):
    """search.js folds a pasted line's whitespace with Python's own set (its line made from
    kverr.pattern.BLANKS: JavaScript's `\\s` is another set), and tries each record's pattern
    as the matcher runs it."""
    js = (site / "assets" / "search.js").read_text(encoding="utf-8")
    assert f"  var BLANKS = {pattern.JS_BLANKS};" in js.splitlines()
    text = (site / "assets" / "search-index.js").read_text(encoding="utf-8")
    rows = json.loads(text.splitlines()[0][len("window.KVERR_INDEX = ") :].rstrip(";"))
    shown = {r["id"]: r["p"] for r in rows if r["p"]}
    assert shown and all("(?P<" not in p for p in shown.values())
    assert shown == {
        r["id"]: pattern.js_source(r["messagePattern"]) for r in RECORDS if r["id"] in shown
    }


def test_site_export_is_deterministic(feeds_catalog, site, tmp_path):
    again = tmp_path / "again"
    export_site(feeds_catalog, again, meta=META)
    assert _pages(again) == _pages(site)


# ---------------------------------------------------------------- output safety


def test_export_replaces_its_own_earlier_output(feeds_catalog, tmp_path):
    out = tmp_path / "site"
    export_site(feeds_catalog, out, meta=META)
    (out / "errors" / "stale.html").write_text("old", encoding="utf-8")
    export_site(feeds_catalog, out, meta=META)
    assert (out / MARKER).is_file() and not (out / "errors" / "stale.html").exists()


@pytest.mark.parametrize("kind", ["foreign-dir", "file"])
def test_export_never_clobbers_foreign_files(feeds_catalog, tmp_path, kind):
    out = tmp_path / "docs"
    if kind == "file":
        out.write_text("keep me", encoding="utf-8")
    else:
        out.mkdir()
        (out / "mine.txt").write_text("keep me", encoding="utf-8")
    with pytest.raises(OutputError, match="docs"):
        export_site(feeds_catalog, out, meta=META)
    kept = out if kind == "file" else out / "mine.txt"
    assert kept.read_text(encoding="utf-8") == "keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs"]  # no temp dir left behind


# ---------------------------------------------------------------- jsonl / parquet / markdown


def test_jsonl_has_every_record_with_its_releases(feeds_catalog, tmp_path):
    out = tmp_path / "errors.jsonl"
    assert export_jsonl(feeds_catalog, out) == len(RECORDS)
    lines = out.read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    assert [r["record"]["id"] for r in rows] == sorted(r["id"] for r in RECORDS)
    assert lines[0] == json.dumps(rows[0], sort_keys=True, ensure_ascii=False)
    releases = {r["record"]["id"]: r["releases"] for r in rows}
    assert releases[BY_KEY["page-size-power"]["id"]] == ["v0.5.0", "c3c3c3c3c3"]
    # only in the newest commit, which no tag names: its short sha, as explain and the API say
    assert releases[BY_KEY["kv-dtype-backend"]["id"]] == ["c3c3c3c3c3"]
    assert {r["record"]["id"]: r["record"] for r in rows}[BY_KEY["radix-offload"]["id"]] == BY_KEY[
        "radix-offload"
    ]


def test_parquet_round_trips_through_duckdb(feeds_catalog_path, tmp_path):
    import duckdb  # only to read the export back; the package itself imports duckdb in catalog/ alone

    out = tmp_path / "out" / "errors.parquet"
    assert export_parquet_path(feeds_catalog_path, out) == len(RECORDS)
    rows = duckdb.sql(f"SELECT id, slug, record FROM read_parquet('{out}') ORDER BY id").fetchall()
    assert [r[0] for r in rows] == sorted(r["id"] for r in RECORDS)
    assert json.loads(rows[0][2])["id"] == rows[0][0]
    assert [p.name for p in out.parent.iterdir()] == ["errors.parquet"]


def _front_matter(text: str) -> dict:
    head = text.split("---\n")[1]
    return {k: json.loads(v) for k, v in (line.split(": ", 1) for line in head.splitlines())}


def test_markdown_has_front_matter_and_an_index(feeds_catalog, tmp_path):
    out = tmp_path / "md"
    assert export_markdown(feeds_catalog, out) == len(RECORDS)
    index = (out / "index.md").read_text(encoding="utf-8")
    assert json.loads((out / "errors" / "_category_.json").read_text(encoding="utf-8"))["label"]
    for rec in RECORDS:
        page = out / "errors" / f"{rec['slug']}.md"
        fm = _front_matter(page.read_text(encoding="utf-8"))
        assert fm["kverr_id"] == rec["id"] and fm["id"] == rec["slug"]
        assert f"(errors/{rec['slug']}.md)" in index


def test_markdown_prose_is_safe_for_mdx(feeds_catalog, tmp_path):
    out = tmp_path / "md"
    export_markdown(feeds_catalog, out)
    text = (out / "errors" / f"{BY_KEY['chat-template-missing']['slug']}.md").read_text(
        encoding="utf-8"
    )
    prose = re.sub(r"```.*?```", "", text.split("---\n", 2)[2], flags=re.S)
    assert re.search(r"(?<!\\)[<{]", prose) is None


def test_markdown_page_matches_golden(feeds_catalog, tmp_path):
    """Regenerate with: KVERR_REGEN=1 pytest -q tests/test_feeds.py"""
    out = tmp_path / "md"
    export_markdown(feeds_catalog, out)
    for key in ("page-size-power", "chat-template-missing"):
        got = (out / "errors" / f"{BY_KEY[key]['slug']}.md").read_text(encoding="utf-8")
        golden = GOLDEN / f"{key}.md"
        if os.environ.get("KVERR_REGEN"):
            golden.parent.mkdir(parents=True, exist_ok=True)
            golden.write_text(got, encoding="utf-8")
        assert got == golden.read_text(encoding="utf-8"), (
            f"{golden} differs; review, then KVERR_REGEN=1"
        )


# ---------------------------------------------------------------- CLI


@pytest.mark.parametrize(
    ("fmt", "target", "expect"),
    [("site", "site", "pages to"), ("jsonl", "e.jsonl", "6 records"), ("parquet", "e.parquet", "6 records"),
     ("markdown", "md", "6 error pages")],
)  # fmt: skip
def test_cli_export(feeds_catalog_path, tmp_path, fmt, target, expect):
    result = CliRunner().invoke(
        app, ["export", fmt, str(tmp_path / target), "--catalog", str(feeds_catalog_path)]
    )
    assert result.exit_code == 0, result.output
    assert expect in result.output and (tmp_path / target).exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [(["export", "pdf", "x"], "unknown export format 'pdf'; choose one of site, jsonl, parquet, markdown."),
     (["export", "site", "{tmp}"], "is not empty and was not written by kverr; pick an empty or new directory."),
     (["export", "jsonl", "{tmp}"], "is a directory; pass a file path such as")],
)  # fmt: skip
def test_cli_export_bad_input_is_one_sentence(feeds_catalog_path, tmp_path, args, message):
    (tmp_path / "keep.txt").write_text("x", encoding="utf-8")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in args] + [
        "--catalog",
        str(feeds_catalog_path),
    ]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_error_page_puts_the_fix_first(site):
    text = (site / page_of(BY_KEY["page-size-power"])).read_text(encoding="utf-8")
    ids = re.findall(r'<section id="([\w-]+)">', text)
    assert ids[:5] == ["fix", "meaning", "why", "flags", "releases"], ids
    # nothing but the title, its badges and where it is comes before the fix
    head = text.split('<main class="wrap">', 1)[1].split('<section id="fix">', 1)[0]
    assert re.sub(r"<(nav|h1|div|p)\b.*?</\1>", "", head, flags=re.S).strip() == ""
    fix = text.split('<section id="fix">', 1)[1].split("</section>", 1)[0]
    assert fix.index('<div class="fix">') < fix.index("<ul>")  # the commands, then the advice
    assert '<p class="where">server_args.py:412 · v0.5.0 · 1 release</p>' in text


def test_duplicate_messages_say_what_tells_them_apart(catalog_path, tmp_path):  # noqa: F811
    from kverr.catalog import open_catalog

    with open_catalog(catalog_path) as cat:
        export_site(cat, tmp_path / "site", meta=META)
        new, old = (cat.get(KEYS[k]) for k in ("ctx-over", "ctx-over-old"))
    page = (tmp_path / "site" / page_of(new)).read_text(encoding="utf-8")
    assert '<p class="where">server_args.py:100 · v0.0, v1.0 · 2 releases</p>' in page
    twins = page.split('<section id="twins">', 1)[1].split("</section>", 1)[0]
    assert "2 checks print this message" in twins and page_of(old) in twins
    assert '<span class="where">server_args.py:101 · v0.0 · 1 release</span>' in twins
    index = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert index.count('class="where"') == 2  # the two rows that look alike, no other
