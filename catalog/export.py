"""Parquet export of the catalog via DuckDB's COPY (duckdb is imported only inside catalog/)."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from kverr.catalog.store import connect_read_only

from kverr import leftovers
from kverr.errors import KverrError

# One row per record: the flat columns for filtering plus the whole schema-v2 record as JSON.
_SELECT = """
SELECT id, project, slug, kind, severity, error_class, message, pattern, file, line,
       CAST(record AS VARCHAR) AS record
FROM records ORDER BY id
"""


def export_parquet(catalog_path: Path, out: Path) -> int:
    """Write the catalog's records to `out` as Parquet (temp file + rename); return the row count."""
    out = Path(out).resolve()
    if out.is_dir():
        raise KverrError(
            f"{out} is a directory; pass a file path such as {out / 'errors.parquet'}."
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    leftovers.sweep(out)  # temp files of exports killed before their cleanup
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    con = connect_read_only(Path(catalog_path))
    try:
        # COPY takes no bound parameter for its target; the path comes from the local CLI user,
        # and doubling quotes keeps any name a single SQL string literal.
        target = str(tmp).replace("'", "''")
        con.execute(f"COPY ({_SELECT}) TO '{target}' (FORMAT parquet, COMPRESSION zstd)")
        count = con.execute("SELECT count(*) FROM records").fetchone()[0]
        os.replace(tmp, out)
    finally:
        con.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    return int(count)


def manifest_of(cat) -> dict:
    """The dataset manifest stored in the catalog's meta table ({} when absent or unreadable)."""
    row = cat.con.execute("SELECT value FROM meta WHERE key = 'manifest'").fetchone()
    try:
        value = json.loads(row[0]) if row and row[0] else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
