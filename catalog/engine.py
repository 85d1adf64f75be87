"""DuckDB for the catalog modules: its compiled engine, without the Python package around it.

The `duckdb` package re-exports the engine `_duckdb` (connect, the connection class, the
exception classes: all the catalog uses) and, on import, also builds its relational and
expression API, reads its own version from the installed metadata and more: 100 ms of a
one-shot `kverr explain`, where importing the engine takes 20. The names and classes are the
same objects either way, so an error raised here is a `duckdb.Error` to any caller. Where a
DuckDB release ships no `_duckdb` module, the package is used as before.
"""

from __future__ import annotations

try:
    import _duckdb as duckdb
except ImportError:  # pragma: no cover - a DuckDB that no longer ships the engine apart
    import duckdb  # type: ignore[no-redef]


def quiet(con):
    """`con` without DuckDB's progress bar, which it draws on stdout for a query running past
    2 s (a 100,000-record load's index query does): it would land inside `--json`. (A
    connection's own setting: DuckDB takes it in no `config`.)"""
    con.execute("SET enable_progress_bar = false")
    return con


__all__ = ["duckdb", "quiet"]
