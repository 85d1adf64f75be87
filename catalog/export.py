"""Parquet export of the catalog via DuckDB's COPY (duckdb is imported only inside catalog/)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

from kverr.catalog.store import connect_read_only, verify

from kverr.errors import CatalogError

# One row per record: the flat columns for filtering plus the whole schema-v2 record as JSON.
_SELECT = """
SELECT id, project, slug, kind, severity, error_class, message, pattern, file, line,
       CAST(record AS VARCHAR) AS record
FROM records ORDER BY id
"""


def export_parquet(catalog_path: Path, out: Path) -> int:
    """Write the catalog's records to the file `out` as Parquet; return the row count.
    OSError: `out` could not be written (the catalog itself reads whole)."""
    con = connect_read_only(Path(catalog_path))
    try:
        # COPY takes no bound parameter for its target; the path comes from the local CLI user,
        # and doubling quotes keeps any name a single SQL string literal.
        target = str(out).replace("'", "''")
        try:
            con.execute(f"COPY ({_SELECT}) TO '{target}' (FORMAT parquet, COMPRESSION zstd)")
        except CatalogError as exc:
            # COPY reads the catalog and writes `out`: when every block of the catalog reads
            # (verify raises otherwise), it was the write that failed - a full disk, not damage.
            verify(con)
            # (the DuckDB error it replaced: the reason is cut before the strerror of a long path)
            raise _write_error(str(exc.__context__ or exc.reason), out) from None
        return int(con.execute("SELECT count(*) FROM records").fetchone()[0])
    finally:
        con.close()


def _write_error(message: str, out: Path) -> OSError:
    """DuckDB's failed write as the OSError it quotes (its message carries the strerror)."""
    named = [n for n in errno.errorcode if os.strerror(n) in message]
    code = max(named, key=lambda n: len(os.strerror(n)), default=None)
    if code is None:
        return OSError(errno.EIO, message, str(out))
    return OSError(code, os.strerror(code), str(out))
