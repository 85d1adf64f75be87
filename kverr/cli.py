"""kverr's command line: thin commands over the library.

Each command parses its arguments, makes one library call and renders the result. Library
modules are imported inside the commands so `kverr explain` never pays for libcst or jsonschema.
"""

from __future__ import annotations

import functools
import warnings
from pathlib import Path
from typing import Annotated

import typer

from kverr.errors import KverrError, KverrWarning

app = typer.Typer(
    name="kverr",
    help="Explain LLM servers' launch-argument errors (SGLang, vLLM): extract them from the source, look them up from a log line.",
    no_args_is_help=True,
    # Log text can carry secrets (tokens, paths): never print locals in a traceback.
    pretty_exceptions_show_locals=False,
    add_completion=False,
)

CatalogOpt = Annotated[
    Path | None,
    typer.Option(
        "--catalog",
        envvar="KVERR_CATALOG",
        help="DuckDB catalog file (default: the packaged catalog of every shipped project).",
    ),
]
ProjectOpt = Annotated[
    str | None,
    typer.Option(
        "--project",
        help="Only this project's errors (sglang, vllm); default: the paste's log format or message decides.",
    ),
]


@app.callback()
def _root() -> None:
    """Explain LLM servers' launch-argument errors (SGLang, vLLM): extract them from the source, look them up from a log line."""


def command(fn=None, **settings):
    """Register a command behind the error boundary: a KverrError becomes one stderr line
    (the message names the input and the next step) and its exit code, never a traceback.
    Wrapping each command, not main(), keeps CliRunner tests on the same path as real runs.
    `@command(context_settings=...)` passes settings through to Typer."""
    if fn is None:
        return lambda f: command(f, **settings)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            with warnings.catch_warnings():
                # What the library worked around (a rebuilt cache, ...): one line, every time.
                warnings.simplefilter("always", KverrWarning)
                warnings.showwarning = _show_warning
                return fn(*args, **kwargs)
        except KverrError as exc:
            typer.echo(f"kverr: {exc}", err=True)
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            typer.echo("kverr: interrupted; run the same command again to resume.", err=True)
            raise typer.Exit(130) from None

    return app.command(**settings)(wrapper)


_python_showwarning = warnings.showwarning


def _show_warning(message, category, *args, **kwargs) -> None:
    if issubclass(category, KverrWarning):
        typer.echo(f"kverr: warning: {message}", err=True)
    else:
        _python_showwarning(message, category, *args, **kwargs)


# ---------------------------------------------------------------- commands
# (each area adds its command below; keep each about ten lines)


@command
def version() -> None:
    """Print kverr's version and the schema version of the records it writes.

    Example: kverr version
    """
    from kverr import __version__

    typer.echo(f"kverr {__version__} (records: schema v2)")


@command
def export(
    fmt: Annotated[str, typer.Argument(metavar="FORMAT", help="site | jsonl | parquet | markdown")],
    out: Annotated[
        Path,
        typer.Argument(metavar="OUT", help="Directory for site/markdown, file for jsonl/parquet."),
    ],
    catalog: CatalogOpt = None,
    project: ProjectOpt = None,
) -> None:
    """Export the catalog: a static offline error site, JSONL, Parquet, or Markdown for MkDocs/Docusaurus.

    Example: kverr export site ./sglang-errors  (then open ./sglang-errors/index.html)
    Example: kverr export site ./vllm-errors --project vllm  (one project's site)
    """
    from kverr.feeds.exports import export as run_export

    typer.echo(run_export(fmt, out, catalog, project))


@command
def serve(
    host: Annotated[
        str, typer.Option(help="Interface to listen on; keep 127.0.0.1 unless a proxy fronts it.")
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(help="TCP port; 0 picks a free one (the URL is printed).")
    ] = 8000,
    workers: Annotated[
        int,
        typer.Option(
            "--workers", min=1, help="Processes answering on the port; one per core uses them all."
        ),
    ] = 1,
    catalog: CatalogOpt = None,
) -> None:
    """Serve the read-only JSON API: POST /explain, GET /errors/{id}, /search, /flags/{flag}, /healthz, /openapi.json.

    Example: kverr serve --port 8765 --workers 2  (then: curl --data-binary @server.log http://127.0.0.1:8765/explain)
    """
    from kverr.feeds.server import serve as run_server

    run_server(catalog, host, port, workers)


@command
def build(
    targets: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="PATH|REV|A..B",
            help="A directory or .py file; with --git: revisions and ranges.",
        ),
    ] = None,
    git: Annotated[
        Path | None,
        typer.Option("--git", help="Build from this git repository (bare is fine); no checkout."),
    ] = None,
    rev: Annotated[
        list[str] | None, typer.Option("--rev", help="Revision or OLD..NEW range; repeatable.")
    ] = None,
    tags: Annotated[
        str | None,
        typer.Option("--tags", help="Also build every tag matching this glob, e.g. 'v0.5.*'."),
    ] = None,
    touching: Annotated[
        bool,
        typer.Option(
            "--touching",
            help="Every commit that changed the file set (within ranges, or the history of the revs).",
        ),
    ] = False,
    files: Annotated[
        list[str] | None,
        typer.Option(
            "--files",
            help="File glob relative to the root; repeatable (default: the profile's file set).",
        ),
    ] = None,
    out: Annotated[Path, typer.Option("--out", help="Dataset directory to write.")] = Path(
        "kverr-dataset"
    ),
    catalog: Annotated[
        Path | None,
        typer.Option("--catalog", help="Also load the dataset into this DuckDB catalog."),
    ] = None,
    jobs: Annotated[int, typer.Option("--jobs", min=1, help="Extract with N processes.")] = 1,
    repo_name: Annotated[
        str | None,
        typer.Option(
            "--repo-name",
            help="GitHub owner/name for githubUrl links (default: the origin remote, else the profile's repository for its file set).",
        ),
    ] = None,
    overlay: Annotated[
        Path | None,
        typer.Option("--overlay", help="Curated knowledge overlay, e.g. data/curated.json."),
    ] = None,
    cache: Annotated[
        Path | None,
        typer.Option(
            "--cache", help="Extraction cache file (default: .kverr-cache.sqlite beside --out)."
        ),
    ] = None,
    progress: Annotated[
        bool,
        typer.Option("--progress", help="Show a progress bar even when stderr is not a terminal."),
    ] = False,
    snapshot: Annotated[
        list[str] | None,
        typer.Option(
            "--snapshot",
            metavar="PATH=REPO_PATH",
            help="With --git: a file or directory on disk placed at REPO_PATH over the newest revision, built as one more revision (no commit); repeatable.",
        ),
    ] = None,
    snapshot_label: Annotated[
        str,
        typer.Option(
            "--snapshot-label", help="Tag of the snapshot revision (for --version, diff, history)."
        ),
    ] = "snapshot",
    snapshot_date: Annotated[
        str | None,
        typer.Option(
            "--snapshot-date",
            metavar="ISO",
            help="Date of the snapshot revision, e.g. 2026-08-28T05:10:05Z (required with --snapshot).",
        ),
    ] = None,
    profile: Annotated[
        str | None,
        typer.Option(
            "--profile",
            metavar="NAME|FILE",
            help="Project profile: a shipped one (sglang, vllm) or a TOML file; sets the file set, repository, launch command and wording (default: sglang).",
        ),
    ] = None,
) -> None:
    """Extract every error from a directory or git revisions into a dataset directory (and a catalog).

    Example: kverr build --git ~/sglang --tags 'v0.5.*' --rev HEAD --out dist/sglang --catalog sglang.duckdb
    Example: kverr build --profile vllm --git ~/vllm --rev HEAD --out dist/vllm
    """
    import sys

    from kverr import pipeline, render

    source, git_repo, revs = pipeline.split_targets(targets or [], git, rev or [])
    with render.build_progress(progress or sys.stderr.isatty()) as on_progress:
        result = pipeline.build(
            out=out,
            source=source,
            git_repo=git_repo,
            revs=revs,
            tags_glob=tags,
            touching=touching,
            globs=files,
            catalog=catalog,
            jobs=jobs,
            repo_name=repo_name,
            overlay=overlay,
            cache_path=cache,
            snapshots=snapshot or [],
            snapshot_label=snapshot_label,
            snapshot_date=snapshot_date,
            command=["kverr", *sys.argv[1:]],
            on_progress=on_progress,
            profile=profile,
        )
    typer.echo(render.build_summary(result))


@command
def diff(
    rev_a: Annotated[
        str, typer.Argument(metavar="REV_A", help="Older revision: release tag or sha prefix.")
    ],
    rev_b: Annotated[
        str, typer.Argument(metavar="REV_B", help="Newer revision: release tag or sha prefix.")
    ],
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")] = False,
    catalog: CatalogOpt = None,
    project: ProjectOpt = None,
) -> None:
    """Errors added, removed, changed (message, class, guard) and moved between two revisions.

    Example: kverr diff v0.4.6 v0.5.0 --catalog sglang.duckdb
    """
    import json

    from kverr import render
    from kverr.catalog import open_catalog
    from kverr.catalog.history import diff as run_diff

    with open_catalog(catalog) as cat:
        d = run_diff(cat, rev_a, rev_b, project=project)
    typer.echo(
        json.dumps(d.to_dict(), indent=2, sort_keys=True) if json_out else render.diff_text(d)
    )


# Unknown options are text here too: a message may start with "--flag ...".
@command(context_settings={"ignore_unknown_options": True})
def history(
    query: Annotated[
        str | None,
        typer.Argument(
            metavar='[ID|"LOG LINE"]',
            help="A record id, or a pasted log line; without it, the revisions the catalog holds.",
        ),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")] = False,
    catalog: CatalogOpt = None,
) -> None:
    """Where an error exists across the revisions built: introduced (commit, date, first release) and gone.

    Without an argument, list the revisions (releases, commits, snapshots) the catalog holds.

    Example: kverr history "ValueError: --prefill-only-disable-kv-cache is incompatible with --enable-hisparse"
    """
    import json

    from kverr import render
    from kverr.catalog import open_catalog
    from kverr.catalog.history import history as run_history

    with open_catalog(catalog) as cat:
        if query is None:
            revs = cat.revisions()
            out = {"revisions": revs}
            typer.echo(json.dumps(out, indent=2) if json_out else render.revisions_text(revs))
            return
        h = run_history(cat, query)
    typer.echo(
        json.dumps(h.to_dict(), indent=2, sort_keys=True) if json_out else render.history_text(h)
    )


@command
def load(
    dataset_dirs: Annotated[
        list[Path],
        typer.Argument(
            metavar="DATASET_DIR...",
            help="Dataset directories written by `kverr build`, one per project.",
        ),
    ],
    catalog: Annotated[
        Path,
        typer.Option("--catalog", envvar="KVERR_CATALOG", help="DuckDB catalog file to (re)write."),
    ],
) -> None:
    """Load dataset directories (one per project) into a DuckDB catalog file (temp file + rename: never half-written).

    Example: kverr load dist/sglang --catalog sglang.duckdb
    Example: kverr load data/sglang data/vllm --catalog all.duckdb
    """
    from kverr import render
    from kverr.catalog import load_datasets

    report = load_datasets(dataset_dirs, catalog)
    for warning in report.warnings:
        typer.echo(f"kverr: warning: {warning}", err=True)
    typer.echo(render.load_summary(catalog, report))


# A pasted line often starts with "--flag ...": take it as the text, not as an unknown option.
@command(context_settings={"ignore_unknown_options": True})
def explain(
    text: Annotated[
        str | None,
        typer.Argument(metavar='"LOG LINE"', help="Pasted text; '-' or nothing reads stdin."),
    ] = None,
    file: Annotated[
        Path | None,
        typer.Option("--file", help="Read a paste or a whole log from this file ('-': stdin)."),
    ] = None,
    version: Annotated[
        str | None, typer.Option("--version", help="Only errors this release tag or sha can raise.")
    ] = None,
    json_out: Annotated[
        bool, typer.Option("--json", help='Print {"query": ..., "matches": [...]} instead.')
    ] = False,
    catalog: CatalogOpt = None,
    project: ProjectOpt = None,
) -> None:
    """Explain a launch error from a log line, a traceback or a whole log: meaning, cause, fix,
    and which project (SGLang, vLLM) it comes from.

    Exit status: 0 when a known error matched, 1 when none did, 2 on bad usage.
    Example: kverr explain "ValueError: --ssl-keyfile requires --ssl-certfile to be specified as well."
    Example: kverr explain "(APIServer pid=1) ValueError: Chunked prefill must be enabled to set max_num_partial_prefills > 1."
    """
    from kverr import render
    from kverr.catalog import open_catalog
    from kverr.catalog.query import explain_query

    with open_catalog(catalog) as cat:
        query, matches, cut = explain_query(cat, text, file, version=version, project=project)
        # Nothing in that release: say whether the error is known elsewhere (added later, or
        # removed) rather than only "unknown" - that is what the user must act on.
        elsewhere = (
            cat.explain(query, project=project)
            if version and not matches and text not in (None, "-")
            else []
        )
        products = [p["product"] for p in cat.projects if project in (None, p["name"])]
    if json_out:
        for chunk in render.explain_json_chunks(query, matches, cut):
            typer.echo(chunk, nl=False)
        typer.echo()
    else:
        if cut:
            typer.echo(f"kverr: note: {render.cut_note(cut)}", err=True)
        render.explain_view(matches, version=version, elsewhere=elsewhere, products=products)
    raise typer.Exit(0 if matches else 1)


def main() -> None:
    app()
