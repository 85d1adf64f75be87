"""What `kverr check` keeps between runs, per user: one sqlite file in the user's cache folder
holding the release's extraction (by its files' blobs and the extractor's code) and the
session's run cache (the parser's option table and each run's outcome, under the keys of
verify/step.py's runner_for, which already name the file set, the harness code, the spec and
the platform). A second check of the same release then parses nothing with libcst and starts
no sandbox for a run it has seen.

    memo = Memo.open()                  # never raises: a cache that cannot be used is memory
    session = Session(..., cache=memo)  # reads from the file, writes kept until flush()
    memo.flush()                        # one transaction per check

Values are zlib-compressed text. The file is bounded (MAX_ROWS, oldest written first out).
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import zlib
from collections.abc import Iterator, MutableMapping
from pathlib import Path

from kverr.places import cache_dir

NAME = "check.sqlite"
FORMAT = "1"  # bump when what is stored changes shape
MAX_ROWS = 20_000  # runs are ~1 KB compressed, an extraction ~200 KB


class Memo(MutableMapping[str, str]):
    """A run cache on disk (module doc); `db` None: memory only."""

    def __init__(self, db: sqlite3.Connection | None) -> None:
        self.db = db
        self.fresh: dict[str, str] = {}  # written during this check, not yet in the file

    @classmethod
    def open(cls, path: Path | None = None) -> Memo:
        path = path or cache_dir() / NAME
        for _ in range(2):
            db = None
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                db = sqlite3.connect(path, timeout=5, isolation_level=None)
                db.execute("CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value BLOB)")
                return cls(db)
            except (OSError, sqlite3.OperationalError):
                break  # read-only, full or locked: this check runs from memory
            except sqlite3.DatabaseError:  # not a database (damaged): made anew, once
                if db is not None:
                    db.close()
                try:
                    path.unlink()
                except OSError:
                    break
        return cls(None)

    def __getitem__(self, key: str) -> str:
        hit = self.fresh[key] if key in self.fresh else self._stored(key)
        if hit is None:
            raise KeyError(key)
        return hit

    def _stored(self, key: str) -> str | None:
        if self.db is not None:
            try:
                row = self.db.execute("SELECT value FROM kv WHERE key = ?", (_key(key),)).fetchone()
                if row is not None:
                    return zlib.decompress(row[0]).decode("utf-8")
            except (sqlite3.Error, zlib.error, UnicodeDecodeError):
                self.db = None  # damaged under us: the rest of this check from memory
        return None

    def __setitem__(self, key: str, value: str) -> None:
        self.fresh[key] = value

    def __delitem__(self, key: str) -> None:
        self.fresh.pop(key, None)

    def __iter__(self) -> Iterator[str]:
        return iter(self.fresh)

    def __len__(self) -> int:
        return len(self.fresh)

    def flush(self) -> None:
        """Write what this check learnt, in one transaction, and keep the file bounded."""
        if self.db is None or not self.fresh:
            return
        rows = [(_key(k), zlib.compress(v.encode("utf-8"), 1)) for k, v in self.fresh.items()]
        try:
            self.db.execute("BEGIN IMMEDIATE")
            self.db.executemany("INSERT OR REPLACE INTO kv (key, value) VALUES (?, ?)", rows)
            self.db.execute(
                "DELETE FROM kv WHERE rowid <= (SELECT MAX(rowid) FROM kv) - ?", (MAX_ROWS,)
            )
            self.db.execute("COMMIT")
        except sqlite3.Error:
            return  # busy or full: the next check learns it again
        self.fresh.clear()

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None


def _key(key: str) -> str:
    """Keys as stored: runner keys are hex already; longer ones (an options key) hashed."""
    return key if len(key) <= 64 else hashlib.sha256(key.encode()).hexdigest()


def code_stamp(*paths: Path) -> str:
    """16 hex over the Python files at `paths` (a folder: its .py files): a value computed by
    that code is stale once it changes."""
    h = hashlib.sha256(FORMAT.encode())
    for path in paths:
        for file in sorted(path.glob("*.py")) if path.is_dir() else [path]:
            h.update(file.name.encode() + b"\0" + file.read_bytes())
    return h.hexdigest()[:16]


def folder_stamp(root: Path) -> str:
    """16 hex over the size and modification time of each .py file under `root`: a release
    read from a folder has no commit to name the modules the sandbox reads lazily."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            if name.endswith(".py"):
                path = os.path.join(dirpath, name)
                st = os.stat(path)
                rel = os.path.relpath(path, root)
                h.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]
