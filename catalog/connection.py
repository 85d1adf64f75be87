"""The one door to a catalog's DuckDB connection: every query of every caller goes through it.

Two things happen at this door:
- DuckDB's errors become `CatalogError`. Damage to a catalog file (a copy cut short, a bad
  block) often shows only when a query first reads the damaged block, long after the file
  opened; whichever query that is, the user gets one sentence naming the file and the fix,
  and the server a 503, never a traceback or a 500.
- Each thread gets its own cursor. A DuckDB connection runs one query at a time; the server
  answers long pastes in a worker thread (feeds/api.py), so without a cursor per thread it
  would need a lock around every query.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kverr.catalog.engine import duckdb

from kverr.errors import CatalogError

# Errors in the SQL itself: kverr's bug, whatever the file holds (the format row was checked
# at open), so they keep their traceback instead of blaming the catalog.
_BUGS = (duckdb.ParserException, duckdb.BinderException)


def first_line(exc: BaseException, limit: int = 200) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:limit]


class Connection:
    """A read-only catalog connection: `execute` as DuckDB's, with a cursor per thread and
    every DuckDB error raised as the CatalogError that `damaged` builds."""

    def __init__(
        self, con: duckdb.DuckDBPyConnection, path: Path, damaged: Callable[[str], CatalogError]
    ) -> None:
        self.path = path
        self._damaged = damaged
        self._root = con
        self._owner = threading.get_ident()
        self._local = threading.local()
        self._cursors: list[duckdb.DuckDBPyConnection] = []
        self._cursors_lock = threading.Lock()  # guards the list above, never a query
        self.meta: dict[str, str] = {}  # meta rows read at open (format, projects, index)

    def _con(self) -> duckdb.DuckDBPyConnection:
        if threading.get_ident() == self._owner:
            return self._root
        con = getattr(self._local, "con", None)
        if con is None:
            con = self.call(self._root.cursor)
            with self._cursors_lock:
                self._cursors.append(con)
            self._local.con = con
        return con

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return fn(*args)
        except _BUGS:
            raise
        except duckdb.Error as exc:
            raise self._damaged(first_line(exc)) from None

    def execute(self, sql: str, params: Any = None) -> Result:
        con = self._con()
        self.call(con.execute, sql, params)
        return Result(self, con)

    def close(self) -> None:
        with self._cursors_lock:
            cursors, self._cursors = self._cursors, []
        for con in [*cursors, self._root]:
            con.close()


class Result:
    """The rows of one `execute`: fetching may read more blocks, so it is guarded too."""

    def __init__(self, door: Connection, con: duckdb.DuckDBPyConnection) -> None:
        self._door, self._con = door, con

    def dicts(self) -> list[dict[str, Any]]:
        """The rows as dicts by column name."""
        names = [d[0] for d in self._con.description]
        return [dict(zip(names, row, strict=True)) for row in self.fetchall()]

    def fetchone(self) -> Any:
        return self._door.call(self._con.fetchone)

    def fetchall(self) -> list[Any]:
        return self._door.call(self._con.fetchall)

    def fetchmany(self, size: int) -> list[Any]:
        return self._door.call(self._con.fetchmany, size)
