"""The build's one cache file: sqlite `kv(ns, key, value)`, stdlib only (duckdb stays in catalog/).

Namespaces: `blob` (a serialised FileExtraction per (path, blob)), `unit` (the extractor's
per-function cache), `tree` (a commit's matching files), `rev` / `revflags` / `settled` (a file
set's entries and flag declarations), `fold` (the folded history state), `record` (built records).
Keys carry a fingerprint of the code that produced the value (`code_fingerprint`).
"""

from __future__ import annotations

import functools
import hashlib
import sqlite3
import zlib
from collections.abc import Iterator, MutableMapping
from pathlib import Path

from kverr.errors import DatasetError

CACHE_NAME = ".kverr-cache.sqlite"
CACHE_FORMAT = "2"  # bump when what this module stores in the cache changes shape


@functools.cache
def code_fingerprint(*folders: str) -> str:
    """Hash of the code that produced a cached value: editing the extractor (or records) must
    invalidate what it produced, without anyone remembering to bump a version. Computed once per
    process, which is when that code was imported."""
    import kverr

    h = hashlib.sha256(f"{kverr.__version__}:{CACHE_FORMAT}".encode())
    root = Path(kverr.__file__).resolve().parents[1]
    h.update((root / "kverr" / "ftypes.py").read_bytes())  # the serialised shapes
    for folder in folders:
        for path in sorted((root / folder).rglob("*")):
            if path.suffix in (".py", ".json") and path.name != "sources.py" and path.is_file():
                h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


class Cache:
    """One sqlite file: `kv(ns, key, value)` with zlib-compressed JSON values. Single writer
    (the parent process); workers open it read-only."""

    def __init__(self, path: Path, *, readonly: bool = False) -> None:
        self.path = path
        try:
            if readonly:
                self.db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                self.db = sqlite3.connect(path, timeout=30)
                self.db.execute("PRAGMA journal_mode=WAL")
                self.db.execute(
                    "CREATE TABLE IF NOT EXISTS kv (ns TEXT, key TEXT, value BLOB, PRIMARY KEY (ns, key))"
                )
                self.db.commit()
        except sqlite3.DatabaseError as exc:
            raise DatasetError(
                f"cache {path} is unreadable ({exc}); delete it and build again."
            ) from None

    def has(self, ns: str, key: str) -> bool:
        return (
            self.db.execute("SELECT 1 FROM kv WHERE ns = ? AND key = ?", (ns, key)).fetchone()
            is not None
        )

    def get(self, ns: str, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM kv WHERE ns = ? AND key = ?", (ns, key)).fetchone()
        return zlib.decompress(row[0]).decode() if row else None

    def put_many(self, ns: str, items: dict[str, str]) -> None:
        rows = [(ns, k, zlib.compress(v.encode(), 1)) for k, v in items.items()]
        self.db.executemany("INSERT OR REPLACE INTO kv VALUES (?, ?, ?)", rows)

    def commit(self) -> None:
        self.db.commit()

    def close(self) -> None:
        self.db.commit()
        self.db.close()


def unit_ns() -> str:
    """The unit cache's namespace: the extractor's code is part of it, so an edit that changes
    what a function extracts to never reads an entry an older extractor wrote."""
    return "unit:" + code_fingerprint("extractor")


class UnitCache(MutableMapping[str, str]):
    """The extractor's per-unit cache: reads through to sqlite, collects new entries in memory
    so the parent process can persist them (workers never write the sqlite file)."""

    def __init__(self, cache: Cache | None) -> None:
        self.cache = cache
        self.local: dict[str, str] = {}
        self.new: dict[str, str] = {}

    def __getitem__(self, key: str) -> str:
        if key in self.local:
            return self.local[key]
        value = self.cache.get(unit_ns(), key) if self.cache else None
        if value is None:
            raise KeyError(key)
        self.local[key] = value
        return value

    def __setitem__(self, key: str, value: str) -> None:
        self.local[key] = value
        self.new[key] = value

    def __delitem__(self, key: str) -> None:
        self.local.pop(key, None)
        self.new.pop(key, None)

    def __iter__(self) -> Iterator[str]:
        return iter(self.local)

    def __len__(self) -> int:
        return len(self.local)

    def take_new(self) -> dict[str, str]:
        new, self.new = self.new, {}
        return new
