"""DuckDB for the catalog modules: its compiled engine, without the Python package around it.

`import duckdb` also builds the relational and expression API and reads its own version from
the installed metadata (`importlib.metadata`): 0.5 s of a one-shot `kverr explain` on a loaded
machine, where the engine `_duckdb` alone takes 0.06 s. DuckDB offers no lighter public
import; its lazy imports (duckdb/duckdb#6181) stop short of the version lookup. The names
are the same objects either way (an error raised here is a `duckdb.Error` to any caller), and
where a release ships no `_duckdb` the package is used.
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
