"""kverr's command line: thin commands over the library.

Each command parses its arguments, makes one library call and renders the result. Library
modules are imported inside the commands so `kverr explain` never pays for libcst or jsonschema.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, NoReturn, get_args, get_origin

import typer
import typer.core

from kverr.errors import KverrError, KverrWarning


class _PlainValues:
    """Converts plain values (bool, str, Path, int, lists of str) itself. Typer converts every
    value through a pydantic TypeAdapter it builds per parameter (fastapi/typer#1831) and has
    no public way to skip it: importing pydantic and building the adapters was more than half
    of `kverr explain`'s start-up. So each plain parameter gets this converter in the slot
    Typer fills lazily (`_runtime_param`); any other value, and any this converter does not
    take, goes back to Typer's own conversion, so every error message stays Typer's."""

    def get_params(self, ctx):
        params = super().get_params(ctx)
        for param in params:
            desc = getattr(param, "type_descriptor", None)
            if desc is not None:
                _name_type(param, desc.annotation)
            if desc is None or getattr(param, "_runtime_param", False) is not None:
                continue  # a Typer without this slot converts everything itself
            if desc.annotation in _PLAIN_KINDS and desc.parameter_info.parser is None:
                param._runtime_param = _PLAIN
        return params


_PLAIN_KINDS = (bool, str, Path, int, list[str])
_TYPE_NAMES = {str: "TEXT", int: "INTEGER", float: "FLOAT", Path: "PATH"}


def _name_type(param, annotation) -> None:
    """Help in Click's words: `--limit INTEGER`, `--rev TEXT` (Typer prints `<int>` and
    `<list[str]>`), and an argument by its metavar alone (`OUT`, not `OUT <path>`)."""
    if param.param_type_name == "argument":
        param.display_type_rich = _no_type  # (an instance's own: Typer calls it per row)
    elif param.metavar is None and not (param.is_flag or param.count):
        kind = get_args(annotation)[0] if get_origin(annotation) is list else annotation
        param.metavar = _TYPE_NAMES.get(kind, "VALUE")


def _no_type(ctx) -> None:
    return None


class _PlainValue:
    """What Typer's conversion gives for the values it takes (no Path here checks existence)."""

    __slots__ = ()

    def coerce(self, value, param, ctx):
        if value is None:
            return () if param.multiple or param.nargs == -1 else None
        kind, info = param.type_descriptor.annotation, param.type_descriptor.parameter_info
        if kind is bool and isinstance(value, bool) or kind is str and isinstance(value, str):
            return value
        if kind is Path and isinstance(value, (str, Path)):
            return Path(value)
        digits = isinstance(value, str) and value.isascii() and value.isdigit()
        if kind is int and not info.clamp and (type(value) is int or digits):
            n = int(value)
            if (info.min is None or n >= info.min) and (info.max is None or n <= info.max):
                return n
        if kind == list[str] and isinstance(value, (list, tuple)):
            if all(isinstance(v, str) for v in value):
                return list(value)
        param._runtime_param = None  # Typer's own, built now and kept for the run
        return param.get_runtime_param().coerce(value, param=param, ctx=ctx)


_PLAIN = _PlainValue()


# One table for every command: `kverr -h` and each command's `-h` end with it.
EXIT_STATUS = (
    ("0", "done: explain or search found something, check passed"),
    ("1", "nothing found (explain, search, show), or a check failed (check)"),
    ("2", "bad usage or input: an unknown option, an unreadable file or catalog"),
    ("130", "interrupted (Ctrl-C)"),
    ("141", "the reader of the output went away (kverr ... | head)"),
)


class _ExitStatus:
    def format_epilog(self, ctx, formatter) -> None:
        super().format_epilog(ctx, formatter)
        with formatter.section("Exit status"):
            formatter.write_dl(EXIT_STATUS)


class _Command(_ExitStatus, _PlainValues, typer.core.TyperCommand):
    def get_short_help_str(self, limit: int = 45) -> str:
        """The docstring's first paragraph whole: Click cuts it at 45 characters with "..."."""
        return " ".join((self.help or "").split("\n\n", 1)[0].split())

    def parse_args(self, ctx, args):
        if ctx.ignore_unknown_options:
            self._refuse_mistyped(ctx, args)
        try:
            return super().parse_args(ctx, args)
        except Exception as exc:
            # Click's NoSuchOption, by its documented attributes: Typer exports no name for it
            if not hasattr(exc, "possibilities"):
                raise
            _no_such_option(ctx, exc.option_name, exc.possibilities or [])

    def _refuse_mistyped(self, ctx, args) -> None:
        """A command that takes pasted text (explain, history) or a launch (check) keeps
        unknown options as text; one that is a near miss of its own options (`--jsn`) is a
        typo, not a paste. What follows `--` is text whatever it says, and so is a launch's
        every word after the first (`kverr check python -m ... --tp 4`)."""
        params = self.get_params(ctx)
        opts = {o: p for p in params for o in (*p.opts, *p.secondary_opts) if o.startswith("-")}
        valued = {o for o, p in opts.items() if not (p.is_flag or p.count)}
        launch = any(p.param_type_name == "argument" and p.nargs == -1 for p in params)
        words = iter(args)
        for word in words:
            if word == "--" or (launch and not word.startswith("-")):
                return
            name = word.split("=", 1)[0]
            if name in opts:
                if name in valued and "=" not in word:
                    next(words, None)  # its value, whatever it looks like
                continue
            if word.startswith("--") and not any(c.isspace() for c in word):
                import difflib  # (only when a word looks like an option this command lacks)

                near = difflib.get_close_matches(name, [o for o in opts if o[:2] == "--"], 1, 0.75)
                if near:
                    _no_such_option(ctx, name, near)


def _no_such_option(ctx, name: str, near: list[str]) -> NoReturn:
    """A usage error (exit 2) naming the option and the nearest ones this command has."""
    from kverr.term import escape_terminal

    said = f"no such option {escape_terminal(name)}"
    if near:
        said += f"; did you mean {' or '.join(sorted(near)[:3])}?"
    if ctx.ignore_unknown_options:
        said += f" (put text that starts with {escape_terminal(name)} after --)"
    ctx.fail(said)


class _Commands(_ExitStatus, _PlainValues, typer.core.TyperGroup):
    """`kverr -h` lists the everyday commands first, the maintainers' after."""

    FIRST = ("explain", "show", "search", "history", "diff", "export", "serve")

    def list_commands(self, ctx):
        names = super().list_commands(ctx)
        rank = {n: i for i, n in enumerate(self.FIRST)}
        return sorted(names, key=lambda n: (rank.get(n, len(rank)), names.index(n)))


app = typer.Typer(
    name="kverr",
    cls=_Commands,
    help="Explain LLM servers' launch-argument errors (SGLang, vLLM): extract them from the source, look them up from a log line.",
    no_args_is_help=True,
    # Log text can carry secrets (tokens, paths): never print locals in a traceback.
    pretty_exceptions_show_locals=False,
    # `kverr --install-completion` / `--show-completion` (bash, zsh, fish, PowerShell)
    add_completion=True,
    # Plain Click help: options as `--json` (not `--json <bool>`), no boxes to copy around.
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _completes(kind: str):
    """A Tab completion of `kind` values (catalog/query.py completions) from the catalog the
    command line names so far (--catalog, $KVERR_CATALOG, or the packaged one)."""

    def complete(ctx: typer.Context, incomplete: str) -> list[tuple[str, str]]:
        from kverr.catalog import open_catalog
        from kverr.catalog.query import completions

        where = ctx.params.get("catalog") or os.environ.get("KVERR_CATALOG") or None
        try:
            with open_catalog(where) as cat:
                return completions(cat, kind, incomplete, project=ctx.params.get("project"))
        except (KverrError, OSError):  # a shell's Tab offers nothing rather than a traceback
            return []

    return complete


def Opt(kind: Any, *names: str, **info: Any) -> Any:
    """A command's option as one annotation: its type and what Typer's Option takes."""
    return Annotated[kind, typer.Option(*names, **info)]


def Arg(kind: Any, **info: Any) -> Any:
    """A command's argument as one annotation: its type and what Typer's Argument takes."""
    return Annotated[kind, typer.Argument(**info)]


CatalogOpt = Opt(
    Path | None,
    "--catalog",
    envvar="KVERR_CATALOG",
    metavar="FILE",
    help="DuckDB catalog file (default: the packaged catalog of every shipped project).",
)


def _project(default: str) -> Any:
    return Opt(
        str | None,
        "--project",
        metavar="NAME",
        help=f"Only this project's errors (sglang, vllm); default: {default}.",
        autocompletion=_completes("project"),
    )


ProjectOpt = _project("every project")
ExplainProjectOpt = _project("the paste's log format or message decides")


def _revision(metavar: str, help: str) -> Any:
    return Arg(str, metavar=metavar, help=help, autocompletion=_completes("release"))


PlainOpt = Opt(
    bool,
    "--plain",
    help="Plain text: no colour, links or wrapping (the default when piped or NO_COLOR is set).",
)
NoPagerOpt = Opt(
    bool,
    "--no-pager",
    help="Never page long output (default on a terminal: $KVERR_PAGER, $PAGER or less).",
)


def _print_version(value: bool) -> None:
    if value:
        from kverr import __version__

        typer.echo(f"kverr {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Opt(
        bool,
        "--version",
        "-V",
        callback=_print_version,
        is_eager=True,
        help="Print kverr's own version and exit.",
    ) = False,
) -> None:
    """Explain LLM servers' launch-argument errors (SGLang, vLLM): extract them from the source, look them up from a log line."""


def _emit(view: Callable[..., str], plain: bool, no_pager: bool) -> None:
    """Print a view for a person, `view(term=...)`: styled on a terminal, paged when long
    (kverr.term)."""
    from kverr import term

    shown = term.detect(plain=plain)
    term.emit(view(term=shown), shown, pager=not no_pager)


def _answer(
    json_out: bool, data: Any, view: Callable[..., str], plain: bool, no_pager: bool, **dumps: Any
) -> None:
    """`data` as JSON (json.dumps' `dumps`; not ASCII, with the controls JSON leaves raw
    escaped: kverr.term.escape_json) with --json, else the view for a person (_emit)."""
    if json_out:
        import json

        from kverr.term import escape_json

        text = json.dumps(data, indent=2, **dumps)
        typer.echo(text if dumps.get("ensure_ascii", True) else escape_json(text))
    else:
        _emit(view, plain, no_pager)


def command(fn=None, **settings):
    """Register a command behind the error boundary: a KverrError becomes one stderr line
    (the message names the input and the next step) and its exit code, never a traceback.
    Wrapping each command, not main(), keeps CliRunner tests on the same path as real runs.
    `@command(context_settings=...)` passes settings through to Typer."""
    if fn is None:
        return lambda f: command(f, **settings)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from kverr import progress

        try:
            # Long work (a first use building the catalog, an export) draws bars on a
            # terminal's stderr, never on stdout nor into a pipe.
            bars = _progress_bars if sys.stderr.isatty() else None
            with warnings.catch_warnings(), progress.shown_by(bars):
                # What the library worked around (a rebuilt cache, ...): one line, every time.
                warnings.simplefilter("always", KverrWarning)
                warnings.showwarning = _show_warning
                return fn(*args, **kwargs)
        except KverrError as exc:
            from kverr.term import escape_terminal  # (the message may quote a paste or a path)

            typer.echo(f"kverr: {escape_terminal(str(exc))}", err=True)
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            typer.echo("kverr: interrupted; run the same command again to resume.", err=True)
            raise typer.Exit(130) from None
        except BrokenPipeError:
            # The reader went away (`kverr diff ... | head`): stop quietly, as git does, and
            # keep Python's exit-time flush from failing on the closed pipe again.
            with contextlib.suppress(OSError, ValueError, AttributeError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise typer.Exit(141) from None

    return app.command(cls=_Command, **settings)(wrapper)


def _progress_bars(title: str):
    from kverr import render

    return render.progress_bars(title)


_python_showwarning = warnings.showwarning


def _show_warning(message, category, *args, **kwargs) -> None:
    if issubclass(category, KverrWarning):
        from kverr.term import escape_terminal

        typer.echo(f"kverr: warning: {escape_terminal(str(message))}", err=True)
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
    fmt: Arg(str, metavar="FORMAT", help="site | jsonl | parquet | markdown"),
    out: Arg(Path, metavar="OUT", help="Directory for site/markdown, file for jsonl/parquet."),
    base_url: Opt(
        str | None,
        metavar="URL",
        help="Site only: the URL it will be served at, for canonical links and sitemap.xml.",
    ) = None,
    catalog: CatalogOpt = None,
    project: ProjectOpt = None,
) -> None:
    """Export the catalog: a static offline error site, JSONL, Parquet, or Markdown for MkDocs/Docusaurus.

    \b
    Example: kverr export site ./sglang-errors  (then open ./sglang-errors/index.html)
    Example: kverr export site ./public --base-url https://example.com/sglang-errors/
    Example: kverr export site ./vllm-errors --project vllm  (one project's site)
    """
    from kverr.feeds.exports import export as run_export

    typer.echo(run_export(fmt, out, catalog, base_url, project))


@command
def serve(
    host: Opt(
        str, help="Interface to listen on; keep 127.0.0.1 unless a proxy fronts it."
    ) = "127.0.0.1",
    port: Opt(int, help="TCP port; 0 picks a free one (the URL is printed).") = 8000,
    workers: Opt(
        int, min=1, help="Processes answering on the port; one per core uses them all."
    ) = 1,
    cors_origin: Opt(
        list[str] | None,
        metavar="ORIGIN",
        help="A site whose pages may call the API from the browser, e.g. https://docs.example.com (* for any); repeatable. Default: none.",
    ) = None,
    catalog: CatalogOpt = None,
    source: SourceOpt = None,
) -> None:
    """Serve the read-only JSON API: POST /explain (and /explain/batch), POST /check, GET /errors/{id}, /search, /flags/{flag}, /versions, /healthz, /openapi.json; GET / lists them.

    \b
    Example: kverr serve --port 8765 --workers 2  (then: curl --data-binary @server.log http://127.0.0.1:8765/explain)
    Example: kverr serve --cors-origin https://docs.example.com
    """
    from kverr.feeds.server import serve as run_server

    run_server(catalog, host, port, workers, cors_origins=tuple(cors_origin or ()), source=source)


@command
def build(
    ctx: typer.Context,
    targets: Arg(
        list[str] | None,
        metavar="PATH|REV|A..B",
        help="A directory or .py file; with --git: revisions and ranges.",
    ) = None,
    git: Opt(
        Path | None, help="Build from this git repository (bare is fine); no checkout."
    ) = None,
    revs: Opt(list[str] | None, "--rev", help="Revision or OLD..NEW range; repeatable.") = None,
    tags: Opt(str | None, help="Also build every tag matching this glob, e.g. 'v0.5.*'.") = None,
    touching: Opt(
        bool,
        "--touching",
        help="Every commit that changed the file set (within ranges, or the history of the revs).",
    ) = False,
    globs: Opt(
        list[str] | None,
        "--files",
        help="File glob relative to the root; repeatable (default: the profile's file set).",
    ) = None,
    out: Opt(Path, help="Dataset directory to write.") = Path("kverr-dataset"),
    catalog: Opt(Path | None, help="Also load the dataset into this DuckDB catalog.") = None,
    jobs: Opt(int, min=1, help="Extract with N processes.") = 1,
    repo_name: Opt(
        str | None,
        help="GitHub owner/name for githubUrl links (default: the origin remote, else the profile's repository for its file set).",
    ) = None,
    overlay: Opt(Path | None, help="Curated knowledge overlay, e.g. data/curated.json.") = None,
    cache: Opt(
        Path | None,
        help="Extraction cache file (default: .kverr-cache.sqlite beside --out).",
    ) = None,
    progress: Opt(
        bool, "--progress", help="Show a progress bar even when stderr is not a terminal."
    ) = False,
    snapshots: Opt(
        list[str] | None,
        "--snapshot",
        metavar="PATH=REPO_PATH",
        help="With --git: a file or directory on disk placed at REPO_PATH over the newest revision, built as one more revision (no commit); repeatable.",
    ) = None,
    snapshot_label: Opt(
        str, help="Tag of the snapshot revision (for --release, diff, history)."
    ) = "snapshot",
    snapshot_date: Opt(
        str | None,
        metavar="ISO",
        help="Date of the snapshot revision, e.g. 2026-08-28T05:10:05Z (required with --snapshot).",
    ) = None,
    verify: Opt(
        bool,
        "--verify",
        help="With --git: run each record's fix through its revision's own check, confined by bubblewrap (no network, read-only view, rlimits), and keep only fixes that pass.",
    ) = False,
    trust_repo: Opt(
        bool,
        "--trust-repo",
        help="With --verify on a machine bubblewrap cannot confine: run the repository's code unconfined, as you would run its tests.",
    ) = False,
    platform: Opt(
        str | None,
        help="Platform profile --verify starts from: cuda-sm90 (default), cuda-sm100, rocm-mi300; a check it cannot reach is tried on the others (the project profile's platform tables).",
    ) = None,
    profile: Opt(
        str | None,
        metavar="NAME|FILE",
        help="Project profile: a shipped one (sglang, vllm) or a TOML file; sets the file set, repository, launch command and wording (default: sglang).",
    ) = None,
) -> None:
    """Extract every error from a directory or git revisions into a dataset directory (and a catalog).

    Example: kverr build --git ~/sglang --tags 'v0.5.*' --rev HEAD --out dist/sglang --catalog sglang.duckdb
    Example: kverr build --profile vllm --git ~/vllm --rev HEAD --out dist/vllm
    """
    from kverr import pipeline, render

    # The command's parameters are the spec's fields, named alike.
    spec = pipeline.BuildSpec.from_targets(
        **{k: v for k, v in ctx.params.items() if k != "progress"},
        command=["kverr", *sys.argv[1:]],
    )
    # Rich bars with ETA on stderr from the start, or no callback at all
    shown = progress or sys.stderr.isatty()
    bars = render.progress_bars(delay=0) if shown else contextlib.nullcontext(None)
    with bars as on_progress:
        result = pipeline.build(spec, on_progress=on_progress)
    typer.echo(render.build_summary(result))


@command
def diff(
    rev_a: _revision("REV_A", "A revision: release tag (v0.5.9 or 0.5.9) or sha prefix."),
    rev_b: _revision("REV_B", "The revision to compare it with (usually the newer one)."),
    json_out: Opt(bool, "--json", help="Print JSON instead of text.") = False,
    plain: PlainOpt = False,
    no_pager: NoPagerOpt = False,
    catalog: CatalogOpt = None,
    project: ProjectOpt = None,
) -> None:
    """Errors added, removed, changed (message, class, guard old -> new) and moved between two
    revisions, in file and line order. B A is A B with added and removed swapped.

    Example: kverr diff v0.5.9 v0.5.10rc0
    """
    from kverr import render
    from kverr.catalog import open_catalog
    from kverr.catalog.history import diff as run_diff

    with open_catalog(catalog) as cat:
        d = run_diff(cat, rev_a, rev_b, project=project)
    view = functools.partial(render.diff_text, d)
    _answer(json_out, d.to_dict(), view, plain, no_pager, sort_keys=True)


# Unknown options are text here too: a message may start with "--flag ...".
@command(context_settings={"ignore_unknown_options": True})
def history(
    query: Arg(
        str | None,
        metavar='[ID|"LOG LINE"]',
        help="A record id, or a pasted log line; without it, the revisions the catalog holds.",
    ) = None,
    json_out: Opt(bool, "--json", help="Print JSON instead of text.") = False,
    plain: PlainOpt = False,
    no_pager: NoPagerOpt = False,
    catalog: CatalogOpt = None,
) -> None:
    """Where an error exists across the revisions built: introduced (commit, date, first release) and gone.

    Without an argument, list the revisions (releases, commits, snapshots) the catalog holds.

    Example: kverr history "ValueError: --prefill-only-disable-kv-cache is incompatible with --enable-hisparse"
    """
    from kverr import render
    from kverr.catalog import open_catalog
    from kverr.catalog.history import history as run_history

    with open_catalog(catalog) as cat:
        if query is None:
            revs = cat.revisions()
            data = {"revisions": [r.to_dict() for r in revs]}
            view = lambda term: render.revisions_text(revs)  # noqa: E731 (not styled)
            return _answer(json_out, data, view, plain, no_pager)
        h = run_history(cat, query)
        orders = cat.release_orders()
    view = lambda term: render.history_text(h, orders)  # noqa: E731 (not styled)
    _answer(json_out, h.to_dict(), view, plain, no_pager, sort_keys=True)


@command
def load(
    dataset_dirs: Arg(
        list[Path],
        metavar="DATASET_DIR...",
        help="Dataset directories written by `kverr build`, one per project.",
    ),
    catalog: Opt(Path, envvar="KVERR_CATALOG", help="DuckDB catalog file to (re)write."),
) -> None:
    """Load dataset directories (one per project) into a DuckDB catalog file (temp file + rename: never half-written).

    Example: kverr load dist/sglang --catalog sglang.duckdb
    Example: kverr load data/sglang data/vllm --catalog all.duckdb
    """
    from kverr import render
    from kverr.catalog import load_datasets

    report = load_datasets(dataset_dirs, catalog)
    for warning in report.warnings:  # (one line each, as every warning: _show_warning)
        warnings.warn(warning, KverrWarning, stacklevel=1)
    typer.echo(render.load_summary(catalog, report))


SourceOpt = Opt(
    str | None,
    "--source",
    metavar="DIR|GIT",
    help="The project's source, to run a pasted launch through its release's checks: a git clone (the release is a tag) or a checkout; default $KVERR_SOURCE, then the installed package.",
)
ReleaseOpt = Opt(
    str | None,
    "--release",
    "-r",
    metavar="REV",
    help="Only errors this release can raise: v0.5.9 or 0.5.9 (what __version__ prints), a snapshot label or a commit sha.",
    autocompletion=_completes("release"),
)


# A pasted line often starts with "--flag ...": take it as the text, not as an unknown option.
@command(context_settings={"ignore_unknown_options": True})
def explain(
    text: Arg(
        str | None,
        metavar='"LOG LINE"|ID',
        help="Pasted text ('-' or nothing reads stdin), or a record id or slug to show it.",
    ) = None,
    file: Opt(
        Path | None,
        metavar="PATH",
        help="Read a paste or a whole log from this file ('-': stdin).",
    ) = None,
    release: ReleaseOpt = None,
    json_out: Opt(bool, "--json", help='Print {"query": ..., "matches": [...]} instead.') = False,
    plain: PlainOpt = False,
    no_pager: NoPagerOpt = False,
    catalog: CatalogOpt = None,
    project: ExplainProjectOpt = None,
    source: SourceOpt = None,
    verbose: Opt(
        bool,
        "--verbose",
        help="Say how each fix was verified as the verify step did: platform and model"
        " profiles, and the whole reason when it was not.",
    ) = False,
) -> None:
    """Explain a launch error from a log line, a traceback or a whole log: fix, meaning, cause,
    and which project (SGLang, vLLM) it comes from.

    \b
    Example: kverr explain "ValueError: --ssl-keyfile requires --ssl-certfile to be specified as well."
    Example: kverr explain --release 0.5.9 --file launch.log
    Example: kverr explain f7fd0f125c8c79be   (a record id: the same as kverr show)
    Example: kverr explain "(APIServer pid=1) ValueError: Chunked prefill must be enabled to set max_num_partial_prefills > 1."
    """
    from kverr.catalog import open_catalog
    from kverr.catalog.query import explain_query, looks_like_key
    from kverr.present.verdict import revision_names

    with open_catalog(catalog) as cat:
        shown = cat.record_match(text) if looks_like_key(text) and not file else None
        cut = None
        if shown is not None:  # the id a card prints, pasted back
            query, matches = text, [shown]
        else:
            query, matches, cut = explain_query(cat, text, file, version=release, project=project)
        # Nothing in that release: say whether the error is known elsewhere (added later, or
        # removed) rather than only "unknown" - that is what the user must act on.
        elsewhere = (
            cat.explain(query, project=project)
            if release and not matches and text not in (None, "-")
            else []
        )
        owners = cat.release_owners(release) if elsewhere else []
        orders = {} if json_out else cat.release_orders()
        names = {} if json_out else revision_names(cat.revisions())
        products = [p["product"] for p in cat.projects if project in (None, p["name"])]
    if shown is None and matches:  # the fix of the user's own launch, or advice from values
        from kverr.advice import personalize
        from kverr.launch import read_input

        # (stdin was read by the match already: a launch there is not looked for again)
        on_disk = file is not None and str(file) != "-"
        pasted = text if text not in (None, "-") else read_input(str(file)) if on_disk else ""
        matches = personalize(pasted, matches, release=release, source=source)
    if json_out:
        from kverr.answers import explain_json_chunks
        from kverr.term import escape_json

        for chunk in explain_json_chunks(query, matches, cut):
            typer.echo(escape_json(chunk), nl=False)
        typer.echo()
    else:
        from kverr import render  # (the card and the terminal: the human view's alone)

        if cut:
            typer.echo(f"kverr: note: {render.cut_note(cut)}", err=True)
        view = functools.partial(
            render.explain_text,
            matches,
            version=release,
            elsewhere=elsewhere,
            owners=owners,
            orders=orders,
            products=products,
            verbose=verbose,
            names=names,
        )
        _emit(view, plain, no_pager)
    raise typer.Exit(0 if matches else 1)


@command(context_settings={"ignore_unknown_options": True})
def check(
    launch: Arg(
        list[str] | None,
        metavar="-- COMMAND...",
        help="The launch command, after --: python -m sglang.launch_server --model-path M ...",
    ) = None,
    file: Opt(
        Path | None,
        metavar="PATH",
        help="Read the launch from a file: a script, a log or an issue that holds it ('-': stdin).",
    ) = None,
    release: ReleaseOpt = None,
    source: SourceOpt = None,
    platform: Opt(
        str | None,
        help="Platform profile: cuda-sm90 (default), cuda-sm100, rocm-mi300.",
    ) = None,
    trust_repo: Opt(
        bool,
        "--trust-repo",
        help="Run the source's code unconfined where bubblewrap cannot confine it.",
    ) = False,
    json_out: Opt(bool, "--json", help="Print the report as JSON.") = False,
    plain: PlainOpt = False,
) -> None:
    """Check a launch before it runs: every error its release's own checks raise, each with the
    fix of this command, and the values the release would change silently.

    \b
    Example: kverr check -- python -m sglang.launch_server --model-path Qwen/Qwen2.5-7B-Instruct --tp 4 --dp 3 --enable-dp-attention
    Example: kverr check --release 0.5.9 --source ~/sglang --file launch.sh
    """
    import shlex

    from kverr.launch import read_input
    from kverr.present.answer import of_report
    from kverr.present.text import check as card
    from kverr.verify.preflight import check_text

    text = read_input(str(file)) if file is not None else shlex.join(launch or [])
    _report, data = check_text(
        text, release=release, source=source, platform=platform, trust_repo=trust_repo
    )
    _answer(json_out, data, lambda term: card(of_report(data), term), plain, True)
    raise typer.Exit(0 if data["passed"] else 1)


@command
def show(
    key: Arg(
        str,
        metavar="ID|SLUG|PREFIX",
        help="A record id, its slug, or an id prefix (6+ hex).",
        autocompletion=_completes("key"),
    ),
    json_out: Opt(bool, "--json", help='Print {"record": ..., "releases": [...]} instead.') = False,
    markdown: Opt(bool, "--markdown", help="Print a Markdown answer to post as it is.") = False,
    plain: PlainOpt = False,
    no_pager: NoPagerOpt = False,
    catalog: CatalogOpt = None,
) -> None:
    """Print one record: the card `kverr explain` shows, its JSON, or a Markdown answer.

    \b
    Example: kverr show f7fd0f125c8c79be
    Example: kverr show ssl-keyfile-requires-ssl-certfile-to-be-specifie-f7fd0f --markdown
    """
    from kverr import render
    from kverr.catalog import open_catalog
    from kverr.catalog.query import record_match_or_raise
    from kverr.present import markdown as md

    with open_catalog(catalog) as cat:
        m = record_match_or_raise(cat, key)
        orders = cat.release_orders()
    if markdown and not json_out:
        return typer.echo(md.match(m, orders))
    data = {"record": m.record, "releases": list(m.revisions)}
    view = functools.partial(render.show_text, m, orders=orders)
    _answer(json_out, data, view, plain, no_pager, ensure_ascii=False)


@command
def search(
    words: Arg(
        list[str] | None, metavar="[WORDS]...", help="Words of the message, e.g. radix cache."
    ) = None,
    flag: Opt(
        str | None,
        "--flag",
        "-f",
        help="List the records of this flag, most about it first: --max-model-len, max_model_len or a prefix (max-model).",
        autocompletion=_completes("flag"),
    ) = None,
    release: ReleaseOpt = None,
    limit: Opt(int, min=1, help="Records per page.") = 20,
    offset: Opt(int, min=0, help="Records to skip.") = 0,
    json_out: Opt(
        bool, "--json", help='Print {"total", "offset", "limit", "matches": [...]} instead.'
    ) = False,
    plain: PlainOpt = False,
    no_pager: NoPagerOpt = False,
    catalog: CatalogOpt = None,
    project: ProjectOpt = None,
) -> None:
    """List records by words of their message, flags and meaning (best first), or by a flag.

    \b
    Example: kverr search radix cache
    Example: kverr search --flag page-size --release v0.5.9
    """
    from kverr import render
    from kverr.answers import search_dict
    from kverr.catalog import open_catalog
    from kverr.catalog.query import search_query

    with open_catalog(catalog) as cat:
        query, matches, total = search_query(
            cat,
            " ".join(words or []),
            flag,
            version=release,
            limit=limit,
            offset=offset,
            project=project,
        )
        several = project is None and len(cat.projects) > 1
    what = f"involving {query['flag']}" if "flag" in query else f"for {query['query']!r}"
    view = functools.partial(
        render.search_text, matches, total, offset=offset, what=what, projects=several
    )
    data = search_dict(query, matches, total, offset, limit)
    _answer(json_out, data, view, plain, no_pager, ensure_ascii=False)
    raise typer.Exit(0 if total else 1)


@command
def mcp(
    http: Opt(
        str | None,
        metavar="HOST:PORT",
        help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio (port 0 picks one).",
    ) = None,
    source: SourceOpt = None,
    catalog: CatalogOpt = None,
) -> None:
    """Serve kverr to an assistant over MCP: tools explain, check, show, search, releases and
    kverr://<project>/<id> resources. Stdio by default (a desktop client starts it).

    \b
    Example: kverr mcp  (in the client's config: {"command": "kverr", "args": ["mcp"]})
    Example: kverr mcp --http 127.0.0.1:8766 --source ~/sglang
    """
    from kverr.feeds.mcp_server import run

    def listening(url: str) -> None:
        typer.echo(f"kverr: MCP over streamable HTTP at {url}", err=True)

    run(catalog, http=http, source=source, on_listen=listening)


@command
def respond(
    event: Opt(
        Path | None,
        envvar="GITHUB_EVENT_PATH",
        metavar="FILE",
        help="The issues or issue_comment event's JSON (default $GITHUB_EVENT_PATH).",
    ) = None,
    dry_run: Opt(bool, "--dry-run", help="Print the comment instead of posting it.") = False,
    release: ReleaseOpt = None,
    source: SourceOpt = None,
    api_url: Opt(
        str, envvar="GITHUB_API_URL", metavar="URL", help="GitHub's REST API."
    ) = "https://api.github.com",
    bot_login: Opt(
        str,
        metavar="LOGIN",
        help="Who posts: kverr edits only this login's comment.",
    ) = "github-actions[bot]",
    catalog: CatalogOpt = None,
) -> None:
    """Answer a GitHub issue: one comment with the fix of the user's launch and each pasted
    error's card, edited on later events, none when kverr knows nothing. Token: $GITHUB_TOKEN.

    \b
    Example: kverr respond --event issue.json --dry-run
    Example: kverr respond  (in a workflow: see docs/integrations.md)
    """
    from kverr.feeds.respond import respond as run_respond

    if event is None:
        raise typer.BadParameter("no event: pass --event FILE or set GITHUB_EVENT_PATH.")
    done = run_respond(
        event, catalog=catalog, source=source, release=release, dry_run=dry_run,
        token=os.environ.get("GITHUB_TOKEN"), api_url=api_url, bot_login=bot_login,
    )  # fmt: skip
    if dry_run and done.comment:
        typer.echo(done.comment, nl=False)
    from kverr.term import escape_terminal  # (the summary names the event's repository)

    typer.echo(f"kverr: {escape_terminal(done.summary)}", err=True)


def main() -> None:
    # Typer builds the parameters of every command before it runs one (15 ms of each `kverr
    # explain`): when the first argument names a command, only that one is registered for the
    # run. Shell completion and `kverr -h` still see them all.
    name = sys.argv[1] if len(sys.argv) > 1 else ""
    every = app.registered_commands
    chosen = [c for c in every if (c.name or c.callback.__name__.replace("_", "-")) == name]
    if not chosen or any(k.endswith("_COMPLETE") for k in os.environ):
        chosen = every
    app.registered_commands = chosen
    try:
        app()
    finally:
        app.registered_commands = every
