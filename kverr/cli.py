"""kverr's command line: thin commands over the library.

Each command parses its arguments, makes one library call and renders the result. Library
modules are imported inside the commands so `kverr explain` never pays for libcst or jsonschema.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Annotated, Optional

import typer

from kverr.errors import KverrError

app = typer.Typer(
    name="kverr",
    help="Explain SGLang server-args errors: extract them from the source, look them up from a log line.",
    no_args_is_help=True,
    # Log text can carry secrets (tokens, paths): never print locals in a traceback.
    pretty_exceptions_show_locals=False,
    add_completion=False,
)

CatalogOpt = Annotated[
    Optional[Path],
    typer.Option("--catalog", envvar="KVERR_CATALOG", help="DuckDB catalog file (default: the packaged SGLang catalog)."),
]


@app.callback()
def _root() -> None:
    """Explain SGLang server-args errors: extract them from the source, look them up from a log line."""


def command(fn):
    """Register a command behind the error boundary: a KverrError becomes one stderr line
    (the message names the input and the next step) and its exit code, never a traceback.
    Wrapping each command, not main(), keeps CliRunner tests on the same path as real runs."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except KverrError as exc:
            typer.echo(f"kverr: {exc}", err=True)
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            typer.echo("kverr: interrupted; run the same command again to resume.", err=True)
            raise typer.Exit(130) from None

    return app.command()(wrapper)


# ---------------------------------------------------------------- commands
# (each area adds its command below; keep each about ten lines)


@command
def version() -> None:
    """Print kverr's version and the schema version of the records it writes.

    Example: kverr version
    """
    from kverr import __version__

    typer.echo(f"kverr {__version__} (records: schema v2)")


def main() -> None:
    app()
