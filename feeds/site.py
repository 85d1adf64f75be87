"""`kverr export site OUT/`: a static, offline error reference built from a Catalog.

Layout (all links relative, so file:// works):
    index.html                 every error + the offline search box (reads ?q=)
    errors/<slug>.html         one page per error; the slug makes the URL stable across builds
    flags/index.html, flags/<flag>.html
    tags/index.html, tags/<tag>.html
    releases/index.html, releases/<tag>.html
    assets/style.css, assets/search.js, assets/search-index.js, assets/copy.js
    sitemap.xml, robots.txt    with --base-url (a sitemap needs absolute URLs), which also gives
                               every page its canonical URL
The search index is a .js file loaded by <script src>: browsers block fetch() of file:// URLs.
A release page lists what `kverr diff PREVIOUS RELEASE` lists (catalog.history.diff), so the
two always agree: new, changed, removed, moved, and what was carried over unchanged.
"""

from __future__ import annotations

import collections
import hashlib
import json
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from kverr.feeds.output import replace_dir
from kverr.present import answer as a
from kverr.present import display
from kverr.present import html as h

from kverr import progress, template
from kverr.answers import Revision
from kverr.errors import QueryError
from kverr.pattern import js_source


@dataclass
class SiteData:
    """Everything the pages need, read from the catalog once."""

    records: list[dict]
    flags: dict[tuple[str, str], dict]  # (project, flag name) -> declaration: two projects
    # may declare one name differently (SGLang's --kv-cache-dtype is not vLLM's)
    revisions: list[Revision]
    releases_of: dict[str, list[Revision]]  # record id -> the revisions containing it, oldest first
    meta: dict[str, Any]
    by_flag: dict[str, list[dict]] = field(default_factory=dict)
    by_tag: dict[str, list[dict]] = field(default_factory=dict)
    by_release: dict[str, list[dict]] = field(default_factory=dict)  # release name -> records
    # release name -> (its revision, its tag). Two projects may both tag a v0.2.0: on a site of
    # both, a tag they share is named with the product ("v0.2.0 (vLLM)"), a page for each
    release_revs: dict[str, tuple[Revision, str]] = field(default_factory=dict)
    # (project, flag) -> its declaration per run of revisions (Catalog.flag_history)
    histories: dict[tuple[str, str], list[dict]] = field(default_factory=dict)
    # release name -> catalog.history.Diff from the release before it (None: the first one)
    release_diffs: dict[str, Any] = field(default_factory=dict)
    products: dict[str, str] = field(default_factory=dict)  # project name -> product
    orders: dict[str, list[str]] = field(default_factory=dict)  # display.Orders
    # record id -> the other records printing the same message (one text raised at several
    # sites): their pages and rows say what tells them apart
    twins: dict[str, list[dict]] = field(default_factory=dict)
    _names: dict[tuple[str, str], str] = field(default_factory=dict)  # (project, tag) -> name

    def product_of(self, rec: dict) -> str | None:
        """The product a record is from, when the site holds several (a badge says so)."""
        if len(self.products) < 2:
            return None
        return self.products.get(rec.get("project") or "")

    def tags_of(self, rec: dict) -> list[str]:
        return [t for r in self.releases_of.get(rec["id"], []) for t in r.tags]

    def release_name(self, project: str | None, tag: str) -> str:
        return self._names.get((project or "", tag), tag)

    def name_releases(self) -> None:
        projects: dict[str, set[str]] = {}
        for r in self.revisions:
            for tag in r.tags:
                projects.setdefault(tag, set()).add(r.project or "")
        self._names = {
            (r.project or "", tag): f"{tag} ({self.products.get(r.project or '', r.project)})"
            if len(projects[tag]) > 1 else tag
            for r in self.revisions for tag in r.tags
        }  # fmt: skip
        self.release_revs = {
            self.release_name(r.project, t): (r, t) for r in self.revisions for t in r.tags
        }

    def order(self, rec: dict) -> list[str]:
        return self.orders.get(rec.get("project") or "", [])

    def where(self, rec: dict) -> str:
        """What tells a record from another printing the same message: its file and line, its
        function and its releases (`model.py:412 · _check_len() · v0.4.0 … v0.6.0 · 9 releases`)."""
        parts = [f"{(rec.get('filePath') or '').rsplit('/', 1)[-1]}:{rec.get('lineNumber')}"]
        if rec.get("function"):
            parts.append(f"{rec['function']}()")
        parts.append(display.release_span(self.tags_of(rec), self.order(rec)) or self._seen(rec))
        return " · ".join(parts)

    def _seen(self, rec: dict) -> str:
        """When a record in no tagged release existed: the dates of its first and last commit."""
        dates = [r.date[:10] for r in self.releases_of.get(rec["id"], []) if r.date]
        if not dates:
            return "unreleased"
        return f"seen {dates[0]}" + (f" … {dates[-1]}" if dates[-1] != dates[0] else "")

    def twin_note(self, rec: dict) -> str | None:
        """`where` for a row whose message other rows share, else None (a row needs no more)."""
        return self.where(rec) if rec["id"] in self.twins else None


def decl_of(flags: dict[tuple[str, str], dict], rec: dict, name: str) -> dict:
    """The declaration of a flag of `rec`: its own project's (a record older than profiles
    names no project: any project's of that name)."""
    found = flags.get((rec.get("project") or "", name))
    if found is None and not rec.get("project"):
        found = next((f for (_, n), f in flags.items() if n == name), None)
    return found or {}


_TOKEN = re.compile(r"[a-z0-9][a-z0-9._-]{0,80}")


def file_token(name: str) -> str:
    """A name (flag, tag, release, slug) as a safe file name; odd names get a hash so two never collide."""
    low = name.lower().lstrip("-")
    if _TOKEN.fullmatch(low):
        return low
    clean = re.sub(r"[^a-z0-9._-]+", "-", low).strip("-.")[:60] or "x"
    return f"{clean}-{hashlib.sha256(name.encode()).hexdigest()[:6]}"


def page_of(rec: dict) -> str:
    return f"errors/{file_token(rec.get('slug') or rec['id'])}.html"


def records_of(cat, project: str | None = None) -> list[dict]:
    """The records in page order, each with its project: a record written before records
    carried `project` belongs to its dataset's (the catalog's column says which), and the
    pages need it to tell the projects apart."""
    rows = cat.con.execute("SELECT id, project, function FROM records", []).fetchall()
    owner = {rid: (proj, fn) for rid, proj, fn in rows}
    return sorted(
        ({**r, "project": r.get("project") or owner.get(r["id"], (None, None))[0],
          "function": r.get("function") or owner.get(r["id"], (None, None))[1]}
         for r in cat.records(project=project)),
        key=lambda r: (display.title_of(r).lower(), r["id"]),
    )  # fmt: skip


def gather(cat, meta: dict | None = None, project: str | None = None) -> SiteData:
    """Read records, flags and revisions through the Catalog API and index them for the pages
    (`project`: one project's site; default: every project the catalog holds)."""
    records = records_of(cat, project)
    releases_of = {}
    with progress.reporting("") as report:  # (under export_site's title)
        for n, r in enumerate(records, 1):
            report("releases", n, len(records))
            releases_of[r["id"]] = cat.revisions_of(r["id"])
    data = SiteData(
        records=records,
        flags={(f.get("project") or "", f["name"]): f for f in cat.flags(project=project)},
        revisions=cat.revisions(project=project),
        releases_of=releases_of,
        meta=dict(meta or {}),
        products={p["name"]: p.get("product", p["name"]) for p in cat.projects
                  if project in (None, p["name"])},
    )  # fmt: skip
    data.name_releases()
    same: dict[tuple[str, str], list[dict]] = {}  # (project, title) -> the records printing it
    for rec in records:
        for flag in rec.get("flags") or []:
            data.by_flag.setdefault(flag, []).append(rec)
        for tag in rec.get("tags") or []:
            data.by_tag.setdefault(tag, []).append(rec)
        for rev in data.releases_of[rec["id"]]:
            for tag in rev.tags:
                data.by_release.setdefault(data.release_name(rev.project, tag), []).append(rec)
        same.setdefault((rec.get("project") or "", display.title_of(rec)), []).append(rec)
    for r in data.revisions:
        data.orders.setdefault(r.project, []).extend(r.tags)
    data.twins = {
        r["id"]: [o for o in group if o is not r] for group in same.values() if len(group) > 1 for r in group
    }  # fmt: skip
    data.release_diffs = _release_diffs(cat, data)
    data.histories = {
        (p, name): cat.flag_history(name, project=p) if p else []
        for p, name in data.flags
        if name in data.by_flag
    }
    return data


def _release_diffs(cat, data: SiteData) -> dict[str, Any]:
    """Each release's diff from the release before it, in revision order (a snapshot label
    counts as a release: `kverr diff v0.5.10rc0 seed` is what its page shows)."""
    from kverr.catalog.history import diff

    out: dict[str, Any] = {}
    by_project: dict[str, list[str]] = {}  # each project's releases: no diff crosses two
    for r in data.revisions:
        by_project.setdefault(r.project or "", []).extend(
            t for t in r.tags if data.release_name(r.project, t) in data.by_release
        )
    pairs = [
        (project, prev, tag)
        for project, tags in by_project.items()
        for prev, tag in zip([None, *tags], tags, strict=False)
    ]
    with progress.reporting("") as report:
        for n, (project, prev, tag) in enumerate(pairs, 1):
            report("release diffs", n, len(pairs))
            name = data.release_name(project, tag)
            out[name] = diff(cat, prev, tag, project=project or None) if prev else None
    return out


_BASE_URL = re.compile(
    r"https?://[A-Za-z0-9.-]+(?::[0-9]{1,5})?(?:/[A-Za-z0-9._~%!$&'()*+,;=:@/-]*)?"
)


def base_url(value: str | None) -> str | None:
    """A --base-url as the prefix of every page's URL (ending in /), or None."""
    if value is None:
        return None
    if not _BASE_URL.fullmatch(value):
        raise QueryError(
            f"--base-url {value!r} is not an http(s) URL; pass where the site will be served,"
            " e.g. https://example.com/sglang-errors/."
        )
    return value if value.endswith("/") else value + "/"


def export_site(cat, out_dir: Path, *, meta: dict | None = None, project: str | None = None) -> int:
    """Write the whole site to `out_dir` (replaced atomically); return the number of HTML pages.
    With meta["baseUrl"], every page names its canonical URL and sitemap.xml lists them.
    `project`: one project's site (default: every project the catalog holds)."""
    with progress.reporting(f"kverr: writing the site to {out_dir}") as report:
        data = gather(cat, meta, project)
        with replace_dir(Path(out_dir)) as tmp:
            pages = render_all(data, report)
            for n, (rel, text) in enumerate(pages.items(), 1):
                report("writing pages", n, len(pages))
                path = tmp / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
            _write_assets(tmp / "assets", data)
            if data.meta.get("baseUrl"):
                (tmp / "sitemap.xml").write_text(sitemap(data, pages), encoding="utf-8")
                robots = f"User-agent: *\nAllow: /\nSitemap: {data.meta['baseUrl']}sitemap.xml\n"
                (tmp / "robots.txt").write_text(robots, encoding="utf-8")
    return len(pages)


def sitemap(data: SiteData, pages: dict[str, str]) -> str:
    """sitemap.xml (sitemaps.org 0.9): every page at its canonical URL, dated by the dataset."""
    base = data.meta["baseUrl"]
    when = str(data.meta.get("datasetVersion") or "")[:10]
    lastmod = f"<lastmod>{h.esc(when)}</lastmod>" if re.fullmatch(r"\d{4}-\d\d-\d\d", when) else ""
    urls = "".join(f"<url><loc>{h.esc(base + rel)}</loc>{lastmod}</url>\n" for rel in sorted(pages))
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        f"{urls}</urlset>\n"
    )


def render_all(data: SiteData, report: progress.Report = progress.quiet) -> dict[str, str]:
    """Relative path -> HTML for every page of the site."""
    pages = {"index.html": index_page(data)}
    for n, rec in enumerate(data.records, 1):
        report("error pages", n, len(data.records))
        pages[page_of(rec)] = error_page(data, rec)
    pages.update(_group_pages(data, "flags", "Flags", data.by_flag, _flag_intro))
    pages.update(_group_pages(data, "tags", "Tags", data.by_tag, None))
    pages.update(_group_pages(data, "releases", "Releases", data.by_release, _release_intro))
    return pages


def _write_assets(assets: Path, data: SiteData) -> None:
    assets.mkdir(parents=True, exist_ok=True)
    static = resources.files("kverr.feeds") / "static"
    for name in ("style.css", "search.js", "copy.js"):
        (assets / name).write_text(
            static.joinpath(name).read_text(encoding="utf-8"), encoding="utf-8"
        )
    (assets / "search-index.js").write_text(search_index_js(data), encoding="utf-8")


MIN_LITERAL = 12  # a pattern like "(?P<v0>.+)" ({self.help}) matches any paste: not evidence


def _literal_chars(rec: dict) -> int:
    """How much fixed text the message has: placeholders ({expr}) and colour codes removed."""
    return len(template.fold(display.plain(rec.get("errorMessage") or ""), lambda _: "").strip())


def search_index_js(data: SiteData) -> str:
    """The offline search index as a script: JSON with `<` escaped so no record can close a tag."""
    rows = [
        {
            "id": r["id"],
            "u": page_of(r),
            "m": display.title_of(r),
            "p": js_source(r.get("messagePattern") or "")
            if _literal_chars(r) >= MIN_LITERAL
            else "",
            "l": _literal_chars(r),
            "f": r.get("flags") or [],
            "t": r.get("tags") or [],
            "s": r.get("severity") or "",
        }
        for r in data.records
    ]
    # Flag and release pages, so a search for `--page-size` or `0.5.9` offers the page itself.
    groups = [
        {"k": "flag", "n": name, "u": f"flags/{file_token(name)}.html", "c": len(recs)}
        for name, recs in sorted(data.by_flag.items())
    ] + [
        {"k": "release", "n": tag, "u": f"releases/{file_token(tag)}.html", "c": len(recs)}
        for tag, recs in data.by_release.items()
    ]
    body = json.dumps(rows, ensure_ascii=True, sort_keys=True, separators=(",", ":"))
    pages = json.dumps(groups, ensure_ascii=True, sort_keys=True, separators=(",", ":"))
    return (
        "window.KVERR_INDEX = " + body.replace("<", "\\u003c") + ";\n"
        "window.KVERR_PAGES = " + pages.replace("<", "\\u003c") + ";\n"
    )


# ---------------------------------------------------------------- pages


def index_page(data: SiteData) -> str:
    counts = collections.Counter(r.get("severity") or "?" for r in data.records)
    plural = {"error": "errors", "warning": "warnings"}
    stats = "".join(
        f'<div class="stat"><b>{n}</b><span>{h.esc(label)}</span></div>'
        for label, n in [("checks", len(data.records)),
                         *((plural.get(k, k), v) for k, v in sorted(counts.items())),
                         ("flags", len(data.by_flag)), ("releases", len(data.by_release))]
    )  # fmt: skip
    rows = "".join(
        h.error_row(r, page_of(r), rank_data=True, project=data.product_of(r), where=data.twin_note(r))
        for r in data.records
    )  # fmt: skip
    body = f"""
<section class="hero">
  <h1>{h.esc(data.meta.get("siteTitle", "Error reference"))}</h1>
  <p class="lead">Every error, assertion and warning the server's argument checks can print —
  what it means, what triggers it and how to fix it. Paste a log line to find yours.</p>
  <form class="search" action="index.html" method="get" role="search" onsubmit="return false">
    <textarea id="q" name="q" rows="2" placeholder="Paste an error message or a log line, or type words like page-size" aria-label="Search errors"></textarea>
  </form>
  <p id="search-status" class="status" aria-live="polite"></p>
  <ul id="page-hits" class="page-hits" hidden></ul>
  <div class="stats">{stats}</div>
</section>
<ol id="errors" class="err-list">{rows}</ol>
"""
    return h.layout("Errors", body, depth=0, active="Errors", meta=data.meta, path="index.html",
                    scripts=("assets/search-index.js", "assets/search.js"))  # fmt: skip


def error_page(data: SiteData, rec: dict) -> str:
    """One error: the fix first (before and after, to copy), then what it means, why it
    happens, its flags and releases; the message as printed, the source and the rest below.
    A reader arrives from a pasted error and wants the fix; whoever wants more scrolls on."""
    up = "../"
    title = display.label_of(rec)
    badges = (h.badge(data.product_of(rec), "project")
              + h.badge(rec.get("severity"), rec.get("severity") or "") + h.badge(rec.get("errorClass"), "cls")
              + h.badge(rec.get("kind"), "kind") + h.badge(rec.get("errorType"), "type"))  # fmt: skip
    message = (
        f'<pre class="code message"><code>{h.message_html(rec)}</code></pre>'
        if rec.get("errorMessage")
        else (
            '<p class="muted">This check prints no message: it shows up as a bare '
            f"<code>{h.esc(rec.get('errorClass') or 'AssertionError')}</code> with this line in the traceback:</p>"
            + h.code(display.source_line(rec), "message")
        )
    )
    pattern = ""
    if rec.get("messagePattern"):
        pattern = f"<details><summary>Pattern that matches it in logs</summary>{h.code(rec['messagePattern'])}</details>"
    per_release = ""
    if rec.get("kind") == "argparse":
        flag = (rec.get("flags") or [""])[0]
        per_release = _history_table(data, rec.get("project") or "", flag)
    prevent = h.bullets(rec.get("preventionTips")) + (
        h.code(rec["validationCode"]) if rec.get("validationCode") else ""
    )
    tags = h.chips((t, f"{up}tags/{file_token(t)}.html") for t in rec.get("tags") or [])
    ans = a.of_record(rec, data.tags_of(rec), data.order(rec),
                      {name: decl_of(data.flags, rec, name) for name in rec.get("flags") or []})  # fmt: skip
    sec = h.sections(ans, flag_href=lambda name: f"{up}flags/{file_token(name)}.html",
                   release_href=lambda tag: f"{up}releases/{file_token(data.release_name(rec.get('project'), tag))}.html",
                   more={"releases": _release_notes(data, rec, up)})  # fmt: skip
    parts = [
        f'<nav class="crumbs"><a href="{up}index.html">Errors</a> / <span>{h.esc(rec["id"])}</span></nav>',
        f'<h1 class="err-title">{h.message_html(rec)}</h1><div class="badges">{badges}</div>',
        f'<p class="where">{h.esc(data.where(rec))}</p>',
        sec["fix"], sec["meaning"], sec["why"], sec["flags"],
        h.section("In each release", per_release, "per-release"),
        sec["releases"],
        h.section("Same message elsewhere", _twins(data, rec), "twins"),
        h.section("Message", message + pattern, "message"),
        h.section("Prevent it", prevent, "prevent"),
        sec["source"],
        h.section("Tags", tags, "tags"),
        h.section("Related errors", _related(data, rec), "related"),
    ]  # fmt: skip
    # Search engines show the description: the meaning says more than the message repeated.
    return h.layout(title[:80], "\n".join(p for p in parts if p), depth=1, active="Errors",
                    meta=data.meta, description=rec.get("documentation") or title,
                    path=page_of(rec), scripts=("assets/copy.js",))  # fmt: skip


def _twins(data: SiteData, rec: dict) -> str:
    """The other checks printing this message, each with where it is and when it exists."""
    twins = data.twins.get(rec["id"]) or []
    if not twins:
        return ""
    intro = (
        f'<p class="muted">{len(twins) + 1} checks print this message; this one is at '
        f"<code>{h.esc(data.where(rec))}</code>.</p>"
    )
    return intro + _rows(data, twins, cls="err-list compact")


def _related(data: SiteData, rec: dict, limit: int = 6) -> str:
    """Other checks on the same flags, most shared flags first: the next thing a reader hits."""
    shared: dict[str, list[dict]] = {}  # id -> the record, once per flag it shares
    for flag in rec.get("flags") or []:
        for other in data.by_flag.get(flag, []):
            # another project's check on a flag of the same name is not related
            if other["id"] != rec["id"] and other.get("project") == rec.get("project"):
                shared.setdefault(other["id"], []).append(other)
    best = sorted(shared.values(), key=lambda rs: (-len(rs), display.title_of(rs[0]).lower()))
    return _rows(data, [rs[0] for rs in best[:limit]], cls="err-list compact") if best else ""


def _release_notes(data: SiteData, rec: dict, up: str) -> str:
    """Below a record's releases: when it was first and last seen, and its earlier wording."""
    revs = data.releases_of.get(rec["id"], [])
    out = ""
    if revs and revs[0].sha:
        out += f'<p class="muted">First seen {_when(revs[0])}, last seen {_when(revs[-1])}.</p>'
    if rec.get("previousId"):
        prev = next((r for r in data.records if r["id"] == rec["previousId"]), None)
        target = (
            f'<a href="{up}{page_of(prev)}">{h.esc(display.label_of(prev))}</a>'
            if prev
            else h.esc(rec["previousId"])
        )
        out += f'<p class="muted">Earlier wording: {target}</p>'
    return out


def _when(rev: Revision) -> str:
    """A revision as users know it: its release name first when it has one, then the commit."""
    sha, date = h.esc((rev.sha or "")[:10]), h.esc((rev.date or "")[:10])
    if rev.tags:
        return f"in {h.esc(rev.tags[0])} (<code>{sha}</code>, {date})"
    return f"<code>{sha}</code> ({date})"


def _flag_intro(data: SiteData, name: str) -> str:
    """The flag's declaration; in a site of several projects, each project's that has one."""
    decls = [(p, f) for (p, n), f in sorted(data.flags.items()) if n == name]
    if not decls:
        return '<p class="muted">No declaration found for this flag in the analysed source.</p>'
    if len(data.products) < 2:
        return _decl_table(decls[0][1]) + _history_section(data, decls[0][0], name)
    return "".join(
        f"<h2>{h.esc(data.products.get(p, p))}</h2>"
        + _decl_table(f)
        + _history_section(data, p, name)
        for p, f in decls
    )


def _decl_table(f: dict) -> str:
    rows = [("Help", h.esc(f.get("help") or "")), ("Default", f"<code>{h.esc(f.get('default') or '')}</code>"),
            ("Type", h.esc(f.get("type") or f.get("action") or "")),
            ("Choices", " ".join(f"<code>{h.esc(c)}</code>" for c in f.get("choices") or [])),
            ("Declared", f"<code>{h.esc(f.get('file'))}:{h.esc(f.get('line'))}</code>")]  # fmt: skip
    body = "".join(
        f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows if v and v != "<code></code>"
    )
    return f'<div class="table-wrap"><table class="kv">{body}</table></div>'


def _history_section(data: SiteData, project: str, name: str) -> str:
    history = _history_table(data, project, name)
    return f"<h3>Choices and types in each release</h3>{history}" if history else ""


def _history_table(data: SiteData, project: str, name: str) -> str:
    """The flag's declaration in each run of releases, newest first: its choices (what
    `invalid choice` answers list), type, default and option strings."""
    rows = []
    for sp in reversed(data.histories.get((project, name)) or []):
        choices = " ".join(f"<code>{h.esc(c)}</code>" for c in sp.get("choices") or [])
        opts = " ".join(f"<code>{h.esc(o)}</code>" for o in sp.get("options") or [])
        kind = sp.get("type") or sp.get("action") or ""
        rows.append([h.esc(sp.get("range") or ""), choices or "—", h.esc(kind),
                     f"<code>{h.esc(sp.get('default') or '')}</code>", opts])  # fmt: skip
    return h.table(["Releases", "Choices", "Type", "Default", "Options"], rows, "history")


def _release_intro(data: SiteData, name: str) -> str:
    rev, _ = data.release_revs.get(name) or (None, "")
    if not rev:
        return ""
    return (f'<p class="muted">Commit <code>{h.esc((rev.sha or "")[:10])}</code>, {h.esc((rev.date or "")[:10])}'
            f" — {h.esc(rev.subject)}</p>")  # fmt: skip


def _group_pages(
    data: SiteData, folder: str, label: str, groups: dict[str, list[dict]], intro
) -> dict[str, str]:
    """An index of groups plus one page per group listing its errors."""
    pages = {}
    if folder == "releases":  # newest first, in commit order: v0.5.8.post1 comes after v0.5.8
        names = sorted(groups, key=lambda n: (-data.release_revs[n][0].ord, n))
    else:
        names = sorted(groups, key=str.lower)
    items = "".join(
        f'<li><a href="{file_token(n)}.html"><code>{h.esc(n)}</code><span class="count">{len(groups[n])}</span></a></li>'
        for n in names
    )
    pages[f"{folder}/index.html"] = h.layout(
        label,
        f'<h1>{h.esc(label)}</h1><ul class="groups">{items}</ul>',
        depth=1,
        active=label,
        meta=data.meta,
        path=f"{folder}/index.html",
    )
    for n in names:
        head = (f'<nav class="crumbs"><a href="index.html">{h.esc(label)}</a></nav><h1><code>{h.esc(n)}</code></h1>'
                + (intro(data, n) if intro else ""))  # fmt: skip
        if folder == "releases":
            body = _release_body(data, n, groups[n])
        else:
            body = f"<h2>{_count(len(groups[n]))}</h2>" + _rows(data, groups[n])
        path = f"{folder}/{file_token(n)}.html"
        pages[path] = h.layout(n, head + body, depth=1, active=label, meta=data.meta, path=path)
    return pages


def _count(n: int) -> str:
    return f"{n} error{'s' if n != 1 else ''}"


def _rows(data: SiteData, recs: list[dict], note=None, cls: str = "err-list") -> str:
    """The records as a list on a page one folder below the root (a twin's row says where it
    is: SiteData.twin_note)."""
    rows = "".join(
        h.error_row(r, f"../{page_of(r)}", note=note(r) if note else None,
                    project=data.product_of(r), where=data.twin_note(r))
        for r in recs
    )  # fmt: skip
    return f'<ol class="{cls}">{rows}</ol>'


def _release_body(data: SiteData, name: str, recs: list[dict]) -> str:
    """What `kverr diff PREVIOUS TAG` says, as sections with the same counts, then the errors
    carried over unchanged. The first release built has no previous one: all of it is listed."""
    d = data.release_diffs.get(name)
    if d is None:
        return f"<h2>{_count(len(recs))} in the first release built</h2>" + _rows(data, recs)
    by_id = {r["id"]: r for r in data.records}
    rev, tag = data.release_revs[name]
    prev_tag = (d.rev_a.tags or [d.rev_a.sha or ""])[0]
    prev = data.release_name(rev.project, prev_tag)
    command = f"kverr diff {prev_tag} {tag}" + (
        f" --project {rev.project}" if (prev, name) != (prev_tag, tag) else ""
    )
    summary = (
        f'<p class="diff-summary">Since <a href="{file_token(prev)}.html"><code>{h.esc(prev)}</code></a>: '
        f"<b>{len(d.added)}</b> new, <b>{len(d.removed)}</b> removed, <b>{len(d.changed)}</b> changed, "
        f"<b>{len(d.moved)}</b> moved — the same as <code>{h.esc(command)}</code>.</p>"
    )
    changed_ids = {c["new"]["id"] for c in d.changed}
    what = {c["new"]["id"]: ", ".join(c["what"]) for c in d.changed}
    touched = {r["id"] for r in d.added} | changed_ids | {m["record"]["id"] for m in d.moved}
    carried = [r for r in recs if r["id"] not in touched and r.get("kind") != "argparse"]
    # argparse's own errors carried over are a few per flag of the release: counted, not listed
    # (each flag's page lists them), or every release page would list hundreds
    parser = sum(1 for r in recs if r["id"] not in touched and r.get("kind") == "argparse")
    sections = [
        (f"{_count(len(d.added))} new in {tag}", "new", [by_id[r["id"]] for r in d.added], None),
        (f"{_count(len(d.changed))} changed", "changed",
         [by_id[c["new"]["id"]] for c in d.changed], lambda r: "changed: " + what[r["id"]]),
        (f"{_count(len(d.removed))} removed since {prev}", "removed",
         [by_id[r["id"]] for r in d.removed], None),
        (f"{_count(len(d.moved))} moved", "moved", [by_id[m["record"]["id"]] for m in d.moved], None),
        (f"{_count(len(carried))} carried over unchanged", "carried", carried, None),
    ]  # fmt: skip
    parser_note = (
        f'<p class="muted">And {parser} argparse error{"s" if parser != 1 else ""} (an invalid'
        " choice, value or missing value of a flag) carried over unchanged: each flag's page"
        " lists its own.</p>"
        if parser
        else ""
    )
    return (
        summary
        + "".join(
            f'<section id="{ident}"><h2>{h.esc(title)}</h2>{_rows(data, items, note)}</section>'
            for title, ident, items, note in sections
            if items
        )
        + parser_note
    )
