"""The build's one cache file: sqlite `kv(ns, key, value)`, stdlib only (duckdb stays in catalog/).

Namespaces: `unit` (the extractor's per-function cache: a function's sites), `blob` (per (path,
blob): its units' keys, the rest of its FileExtraction and its flag set), `flagset` (flag
declarations without their lines, by content), `tree` (a commit's matching files), `rev` /
`revbody` / `settled` (a file set's entries: their lines, and the rest by content), `fold` (the
folded history state), `record` (built records), `touching` / `commit` (the commits that touched
the file set up to a tip, and commits' messages, which introduce.py reads).
Keys carry a fingerprint of the code that produced the value (`code_fingerprint`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import sqlite3
import zlib
from collections.abc import Iterator, MutableMapping
from pathlib import Path

from kverr.errors import DatasetError

CACHE_NAME = ".kverr-cache.sqlite"
CACHE_FORMAT = "3"  # bump when what this module stores in the cache changes shape


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


def _guarded(method):
    """A damaged file can pass the open and fail at any later read or write (a write-ahead
    log left by a killed build beside a replaced file): the same one-line error then."""

    @functools.wraps(method)
    def call(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except sqlite3.DatabaseError as exc:
            raise self.unreadable(exc) from None

    return call


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
                # no fsync per commit (the workers of --jobs see each one): a cache lost to a
                # power cut is rebuilt, never wrong
                self.db.execute("PRAGMA synchronous=NORMAL")
                self.db.execute(
                    "CREATE TABLE IF NOT EXISTS kv (ns TEXT, key TEXT, value BLOB, PRIMARY KEY (ns, key))"
                )
                self.db.commit()
        except sqlite3.DatabaseError as exc:
            raise self.unreadable(exc) from None

    def unreadable(self, exc: sqlite3.DatabaseError) -> DatasetError:
        return DatasetError(f"cache {self.path} is unreadable ({exc}); delete it and build again.")

    @_guarded
    def has(self, ns: str, key: str) -> bool:
        found = self.db.execute("SELECT 1 FROM kv WHERE ns = ? AND key = ?", (ns, _sql_key(key)))
        return found.fetchone() is not None

    @_guarded
    def get(self, ns: str, key: str) -> str | None:
        row = self.db.execute(
            "SELECT value FROM kv WHERE ns = ? AND key = ?", (ns, _sql_key(key))
        ).fetchone()
        return _unpack(row[0]) if row else None

    @_guarded
    def put_many(self, ns: str, items: dict[str, str]) -> None:
        rows = [(ns, _sql_key(k), _pack(v)) for k, v in items.items()]
        self.db.executemany("INSERT OR REPLACE INTO kv VALUES (?, ?, ?)", rows)

    def put_new(self, ns: str, items: dict[str, str]) -> None:
        """put_many for values kept by content (their key is their hash): present ones stay."""
        new = {k: v for k, v in items.items() if not self.has(ns, k)}
        self.put_many(ns, new)

    @_guarded
    def commit(self) -> None:
        self.db.commit()

    @_guarded
    def close(self) -> None:
        self.db.commit()
        self.db.close()


def _pack(value: str) -> bytes:
    # surrogatepass: a value may carry a file name that was not UTF-8 (surrogate escapes)
    return zlib.compress(value.encode("utf-8", "surrogatepass"), 1)


def _unpack(data: bytes) -> str:
    return zlib.decompress(data).decode("utf-8", "surrogatepass")


def _sql_key(key: str) -> str:
    """sqlite takes UTF-8 text only: a key holding such a name is kept by its hash."""
    if key.isascii() or not _SURROGATES.search(key):
        return key
    return "~" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


_SURROGATES = re.compile("[\ud800-\udfff]")
CHUNKS = 16  # content-addressed pieces a long list is stored in (put_chunked)


def chunked(items: list[dict], group: str) -> tuple[dict, dict[str, str]]:
    """A list of JSON objects as CHUNKS pieces to keep once per content: the items of a piece
    share a hash of their `group` field, so one edited item of a thousand revisions' lists
    makes one new piece, not a new copy of the list. Returns (the reference get_chunked reads
    back: the pieces, and which piece each item comes from in order; the pieces by key)."""
    pieces: list[list[dict]] = [[] for _ in range(CHUNKS)]
    order = []
    for item in items:
        i = hashlib.sha256(str(item[group]).encode("utf-8", "surrogatepass")).digest()[0] % CHUNKS
        pieces[i].append(item)
        order.append("0123456789abcdef"[i])
    refs, out = [], {}
    for piece in pieces:
        text = json.dumps(piece, sort_keys=True, ensure_ascii=False)
        ref = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        refs.append(ref)
        out[ref] = text
    return {"pieces": refs, "order": "".join(order)}, out


def get_chunked(cache: Cache, ns: str, ref: dict, memo: dict | None = None) -> list[dict] | None:
    """The list put_chunked stored (None when a piece is missing); `memo`: pieces read before."""
    memo = {} if memo is None else memo
    pieces = []
    for key in ref["pieces"]:
        if key not in memo:
            raw = cache.get(ns, key)
            if raw is None:
                return None
            memo[key] = json.loads(raw)
        pieces.append(iter(memo[key]))
    return [next(pieces[int(c, 16)]) for c in ref["order"]]


def unit_ns() -> str:
    """The unit cache's namespace: the extractor's code is part of it, so an edit that changes
    what a function extracts to never reads an entry an older extractor wrote."""
    return "unit:" + code_fingerprint("extractor")


class SharedUnits:
    """The functions the workers of --jobs parsed in this build, in a side file they all write
    at once: neighbouring blobs go to different workers, and until the parent commits a
    result, the others could not see a function one of them had just parsed (a backfill of
    1,005 commits parsed 943 functions with 2 workers, 618 with one). Each statement is its
    own transaction (autocommit, every row fetched), so a writer only ever waits for another
    writer's one INSERT. The parent's cache file keeps a single writer; it persists the same
    functions from the results, and deletes this file after the build."""

    def __init__(self, path: Path) -> None:
        self.db = sqlite3.connect(path, timeout=30, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=OFF")  # a side file of one build: never reread
        self.db.execute("CREATE TABLE IF NOT EXISTS units (key TEXT PRIMARY KEY, value BLOB)")

    def get(self, key: str) -> str | None:
        rows = self.db.execute("SELECT value FROM units WHERE key = ?", (key,)).fetchall()
        return _unpack(rows[0][0]) if rows else None

    def put(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR IGNORE INTO units VALUES (?, ?)", (key, _pack(value)))

    def close(self) -> None:
        self.db.close()


class UnitCache(MutableMapping[str, str]):
    """The extractor's per-unit cache: reads through to sqlite, collects new entries in memory
    so the parent process can persist them (workers never write the cache file; they share
    what they parse through `shared`)."""

    def __init__(self, cache: Cache | None, shared: SharedUnits | None = None) -> None:
        self.cache = cache
        self.shared = shared
        self.local: dict[str, str] = {}
        self.new: dict[str, str] = {}

    def __getitem__(self, key: str) -> str:
        if key in self.local:
            return self.local[key]
        value = self.cache.get(unit_ns(), key) if self.cache else None
        if value is None and self.shared is not None:
            value = self.shared.get(key)
            if value is not None:  # another worker's, whose result may reach the parent
                self.new[key] = value  # later than this one's: this result carries it too
        if value is None:
            raise KeyError(key)
        self.local[key] = value
        return value

    def __setitem__(self, key: str, value: str) -> None:
        self.local[key] = value
        self.new[key] = value
        if self.shared is not None:
            self.shared.put(key, value)

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
