"""Machine feeds: `kverr export jsonl|parquet|markdown OUT`.

jsonl     one line per record, keys sorted, ordered by id: {"record", "releases"}
parquet   DuckDB COPY of the records table (the SQL lives in catalog/export.py)
markdown  one file per error with YAML front matter + index.md, for MkDocs or Docusaurus:
          the answer as present/markdown.py writes every Markdown kverr gives (the bots' too).
"""

from __future__ import annotations

import json
from pathlib import Path

from kverr.feeds import site
from kverr.feeds.output import replace_dir, replace_file
from kverr.feeds.site import decl_of, file_token, records_of
from kverr.present import answer as a
from kverr.present import display
from kverr.present import markdown as md

from kverr import __version__, progress
from kverr.errors import QueryError
from kverr.term import escape_json, escape_terminal


def export_jsonl(cat, out: Path, project: str | None = None) -> int:
    """Every record with the release tags that contain it; returns the number of lines."""
    with (
        replace_file(Path(out), ".jsonl") as tmp,
        open(tmp, "w", encoding="utf-8", newline="\n") as fh,
        progress.reporting(f"kverr: writing {out}") as report,
    ):
        recs = sorted(cat.records(project=project), key=lambda r: r["id"])
        for n, rec in enumerate(recs, 1):
            report("records written", n, len(recs))
            doc = {"record": rec, "releases": cat.releases_of(rec["id"])}
            fh.write(escape_json(json.dumps(doc, sort_keys=True, ensure_ascii=False)) + "\n")
    return len(recs)


# ---------------------------------------------------------------- markdown


def error_markdown(rec: dict, releases: list[str], flags: dict[tuple[str, str], dict]) -> str:
    title = display.title_of(rec)
    meta = {
        "id": file_token(rec.get("slug") or rec["id"]),
        "title": title[:120],
        "sidebar_label": title[:60],
        "description": (rec.get("documentation") or title)[:200],
        "tags": rec.get("tags") or [],
        "kverr_id": rec["id"],
        "severity": rec.get("severity"),
    }
    decls = {name: decl_of(flags, rec, name) for name in rec.get("flags") or []}
    return md.page(a.of_record(rec, releases, declarations=decls), meta)


def export_markdown(cat, out_dir: Path, project: str | None = None) -> int:
    """errors/<slug>.md per record plus index.md; returns the number of error pages."""
    # (project, name): two projects may declare one flag name differently
    flags = {(f.get("project") or "", f["name"]): f for f in cat.flags(project=project)}
    recs = records_of(cat, project)
    with (
        replace_dir(Path(out_dir)) as tmp,
        progress.reporting(f"kverr: writing {out_dir}") as report,
    ):
        (tmp / "errors").mkdir()
        # Docusaurus names the sidebar folder from this; MkDocs ignores it.
        category = {"label": "Error reference", "position": 1, "collapsed": True}
        (tmp / "errors" / "_category_.json").write_text(
            json.dumps(category, indent=2) + "\n", encoding="utf-8"
        )
        rows = []
        for n, rec in enumerate(recs, 1):
            report("error pages", n, len(recs))
            name = file_token(rec.get("slug") or rec["id"])
            text = error_markdown(rec, cat.releases_of(rec["id"]), flags)
            (tmp / "errors" / f"{name}.md").write_text(text, encoding="utf-8")
            rows.append(
                f"| [{md.escape(display.title_of(rec)[:100])}](errors/{name}.md) | {md.escape(rec.get('severity'))} |\n"
            )
        index = (md.front_matter({"title": "Error reference", "sidebar_position": 1})
                 + "# Error reference\n\n| Error | Severity |\n|---|---|\n" + "".join(rows))  # fmt: skip
        (tmp / "index.md").write_text(index, encoding="utf-8")
    return len(recs)


# ---------------------------------------------------------------- the CLI's one call

FORMATS = ("site", "jsonl", "parquet", "markdown")


def site_meta(cat, project: str | None = None) -> dict:
    """Header/footer facts for the site, from the projects the catalog holds (their manifests)."""
    projects = [p for p in cat.projects if project in (None, p["name"])]
    first = projects[0] if projects else {}
    return {
        "siteTitle": f"{' and '.join(p['product'] for p in projects) or 'kverr'} launch errors",
        "repository": first.get("repository") or "",
        "toolVersion": __version__,
        "datasetVersion": first.get("datasetVersion", ""),
    }


def export(
    fmt: str,
    out: Path,
    catalog_path: Path | None,
    base_url: str | None = None,
    project: str | None = None,
) -> str:
    """Run one export from the catalog at `catalog_path`; return a one-line summary for the user.
    `base_url` (site only): where the site will be served, for canonical URLs and a sitemap.
    `project`: one project's pages or records (site, jsonl, markdown)."""
    from kverr.catalog import open_catalog

    if fmt not in FORMATS:
        raise QueryError(f"unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}.")
    if base_url is not None and fmt != "site":
        raise QueryError(f"--base-url is for `kverr export site`, not {fmt}; drop it.")
    base = site.base_url(base_url)  # a bad URL fails before the catalog is read
    cat = open_catalog(catalog_path)
    try:
        if project is not None:
            cat.project(project)  # NotFound names the projects held
            if fmt == "parquet":
                raise QueryError(
                    "--project applies to site, jsonl and markdown; parquet holds every project (filter on its project column)."
                )
        if fmt == "site":
            meta = {**site_meta(cat, project), **({"baseUrl": base} if base else {})}
            n = site.export_site(cat, out, meta=meta, project=project)
            extra = (
                f"; sitemap {Path(out) / 'sitemap.xml'}"
                if base
                else " (pass --base-url for canonical URLs and a sitemap)"
            )
            done = f"wrote {n} pages to {out}{extra}; open {Path(out) / 'index.html'} in a browser."
        elif fmt == "markdown":
            done = f"wrote {export_markdown(cat, out, project)} error pages and index.md to {out}."
        elif fmt == "jsonl":
            done = f"wrote {export_jsonl(cat, out, project)} records to {out}."
        path = cat.path
    finally:
        cat.close()
    if fmt == "parquet":  # its own read-only connection, after ours is closed
        done = f"wrote {export_parquet_path(path, out)} records to {out}."
    return escape_terminal(done)  # (a file name may hold anything)


def export_parquet_path(catalog_path: Path, out: Path) -> int:
    from kverr.catalog.export import export_parquet as copy_parquet

    with replace_file(Path(out).resolve(), ".parquet") as tmp:
        return copy_parquet(catalog_path, tmp)
