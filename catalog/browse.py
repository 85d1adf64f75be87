"""Browsing search (`kverr search`, GET /search, the MCP search tool): BM25F over each record's
message, flags and meaning, and flag lookups that take a prefix or the option's dest name.

The matcher's BM25 (matcher.bm25) answers "which record printed this paste" and scores a paste
against whole messages; a person searching types a few words instead (`max model len`), spelled
as they think of them. So this index splits identifiers into words (`max_model_len`,
`--max-model-len` and "max model len" all read `max`, `model`, `len`, plus the bigrams that keep
their order), and reads the flags and the meaning beside the message. Query-independent parts
of BM25F are computed once per open catalog; a query then costs its terms' postings.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import re
from array import array
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from kverr import places

# A term found in the message counts fully, in a flag name nearly so (a record involving
# `--max-model-len` is about max model len even when its message says "context length"), and
# in the meaning less: prose mentions words the error is not about.
FIELDS = (("message", 1.0), ("flags", 0.8), ("meaning", 0.4))
K1 = 1.2
B = 0.75
MAX_QUERY_TERMS = 64  # a pasted paragraph is not a search: its first words decide

_WORD = re.compile(r"[a-z0-9]+")
_NAME = re.compile(r"[a-z0-9_-]+")
_DEST = str.maketrans("-", "_")

SQL = """
SELECT r.id, coalesce(nullif(r.message, ''), r.code_line, ''),
       coalesce(json_extract_string(r.record, '$.documentation'), ''), r.last_ord,
       coalesce(list(f.flag ORDER BY f.flag) FILTER (WHERE f.flag IS NOT NULL), [])
FROM records r LEFT JOIN record_flags f ON f.id = r.id
GROUP BY r.id, r.message, r.code_line, r.record, r.last_ord
ORDER BY r.id
"""


def words(text: str) -> list[str]:
    """Lower-cased words, identifiers split at `_`, `-` and `.`: `--max-model-len` is
    max, model, len."""
    return _WORD.findall(text.lower())


def spelled(text: str) -> list[str]:
    """The options `text` spells, as dest names: "set --max-model-len" -> [max_model_len]
    (a name with `_` or `-` in it, or after `--`: `--dtype`, never the word "dtype")."""
    names = _NAME.findall(text.lower())
    return [t.strip("-").translate(_DEST) for t in names if "_" in t or "-" in t.lstrip("-")
            or t[:2] == "--"]  # fmt: skip


def terms(text: str, names: list[str] | None = None) -> list[str]:
    """Words, ordered bigrams ("model len" is nearer `max_model_len` than "len model") and
    each option the text spells, whole (`=max_model_len`: "max model len" finds the record
    about that option before one about `speculative_max_model_len`)."""
    ws = words(text)
    names = spelled(text) if names is None else names
    return [*ws, *map(" ".join, zip(ws, ws[1:])), *("=" + d for d in names)]  # noqa: B905


def query_terms(text: str) -> list[str]:
    """A query's terms: a run of its words may be an option typed as words (`max model len`)."""
    ws = words(text)
    runs = ["=" + "_".join(ws[i : i + n]) for n in (2, 3, 4) for i in range(len(ws) - n + 1)]
    return list(dict.fromkeys(terms(text) + runs))


def dest(flag: str) -> str:
    """`--max-model-len`, `max_model_len`, `Max-Model-Len` -> `max_model_len`."""
    return flag.strip().lstrip("-").translate(_DEST).lower()


def option(flag: str) -> str:
    """The option as argparse spells it: `max_model_len` -> `--max-model-len`."""
    return "--" + dest(flag).replace("_", "-")


@dataclass
class Index:
    """Postings of every record: term -> its run (start, end) of `docs` (record positions) and
    `weights` (BM25F term weights); per record its id, last revision, flags and the options
    its message spells."""

    ids: list[str]
    last_ord: list[int]
    flags: list[tuple[str, ...]]
    named: list[frozenset[str]]  # dest names the message spells (`max_model_len`)
    postings: dict[str, tuple[int, int]]
    docs: array  # "I"
    weights: array  # "d"

    def idf(self, n: int) -> float:
        total = len(self.ids)
        return math.log(1 + (total - n + 0.5) / (n + 0.5))


def build(rows) -> Index:
    """The index of (id, message, meaning, last ord, [flags]) rows."""
    ids: list[str] = []
    last: list[int] = []
    flags: list[tuple[str, ...]] = []
    named: list[frozenset[str]] = []
    counts: list[tuple[Counter, Counter, Counter]] = []
    for rid, message, meaning, last_ord, flag_list in rows:
        ids.append(rid)
        last.append(last_ord if last_ord is not None else -1)
        flags.append(tuple(flag_list))
        said = spelled(message)
        named.append(frozenset(said))
        # the meaning is prose and the longest field: its words alone (a bigram of prose
        # weighs little beside the message's, and they were most of the postings)
        counts.append(
            (
                Counter(terms(message, said)),
                Counter(terms(" ".join(flag_list))),
                Counter(words(meaning)),
            )
        )
    n = max(len(counts), 1)
    avg = [max(sum(c[i].total() for c in counts) / n, 1.0) for i in range(len(FIELDS))]
    runs: dict[str, tuple[list[int], list[float]]] = {}
    for doc, parts in enumerate(counts):
        weight: dict[str, float] = {}
        get = weight.get
        for part, (_, w), mean in zip(parts, FIELDS, avg, strict=True):
            norm = w / (1 - B + B * part.total() / mean)
            for t, c in part.items():
                weight[t] = get(t, 0.0) + c * norm
        for t, tf in weight.items():
            run = runs.get(t)
            if run is None:
                run = runs[t] = ([], [])
            run[0].append(doc)
            run[1].append(tf)
    docs, weights, postings = array("I"), array("d"), {}
    for t, (ds, ws) in runs.items():
        postings[t] = (len(docs), len(docs) + len(ds))
        docs.extend(ds)
        weights.extend(ws)
    return Index(ids, last, flags, named, postings, docs, weights)


def load(con, path: Path | None = None) -> Index:
    """The index of a catalog's records (Catalog keeps one per open catalog). With the
    catalog's `path`, a copy is kept in the user's cache: building it is most of a one-shot
    `kverr search` (a few hundred ms for the shipped catalog), reading it a few ms."""
    file = _cache_file(path) if path is not None else None
    if file is not None:
        try:
            return _read(file.read_bytes())
        except (OSError, ValueError, KeyError, TypeError):
            pass  # none yet, or not one we wrote: built again below
    idx = build(con.execute(SQL, []).fetchall())
    if file is not None:
        _write(file, idx)
    return idx


CACHED = 8  # index files kept, one per catalog file seen (the newest)


def _cache_file(path: Path) -> Path | None:
    """The cache file of the catalog at `path` as it is now (a catalog is replaced by a rename,
    so a new one is a new inode), and of this module's code."""
    try:
        st = Path(path).stat()
    except OSError:
        return None
    code = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()
    stamp = f"{Path(path).resolve()}|{st.st_dev}|{st.st_ino}|{st.st_size}|{st.st_mtime_ns}|{code}"
    return (
        places.cache_dir() / "search" / (hashlib.sha256(stamp.encode()).hexdigest()[:32] + ".idx")
    )


def _write(file: Path, idx: Index) -> None:
    """The index as a JSON head and the two arrays' bytes, written whole or not at all; a cache
    that cannot be written only costs the next search the build."""
    head = json.dumps({
        "ids": idx.ids, "last": idx.last_ord, "flags": idx.flags, "named": [sorted(n) for n in idx.named],
        "terms": list(idx.postings), "ends": [end for _, end in idx.postings.values()],
    }).encode()  # fmt: skip
    from kverr import io  # (a search that writes its cache pays for it, not every explain)

    with contextlib.suppress(OSError):
        with io.replacing_file(file) as tmp, open(tmp, "wb") as out:
            out.write(len(head).to_bytes(8, "little") + head)
            out.write(idx.docs.tobytes() + idx.weights.tobytes())
        for old in sorted(file.parent.glob("*.idx"), key=lambda p: p.stat().st_mtime)[:-CACHED]:
            old.unlink(missing_ok=True)


def _read(data: bytes) -> Index:
    """_write's file back; ValueError when it is not whole or not consistent."""
    size = int.from_bytes(data[:8], "little")
    head = json.loads(data[8 : 8 + size])
    ends = head["ends"]
    total = ends[-1] if ends else 0
    docs, weights = array("I"), array("d")
    body = data[8 + size :]
    cut = total * docs.itemsize
    docs.frombytes(body[:cut])
    weights.frombytes(body[cut:])
    ids = head["ids"]
    if len(docs) != total or len(weights) != total or (total and max(docs) >= len(ids)):
        raise ValueError("a search index cache that is not whole")
    starts = [0, *ends[:-1]]
    return Index(ids, head["last"], [tuple(f) for f in head["flags"]],
                 [frozenset(n) for n in head["named"]],
                 dict(zip(head["terms"], zip(starts, ends, strict=True), strict=True)), docs, weights)  # fmt: skip


def rank(idx: Index, query: str) -> list[tuple[int, float]]:
    """(record position, score in (0, 1]) of every record sharing a term with `query`, best
    first; equal scores newest revision first, then by id. The score is the BM25F sum over
    the query's terms divided by their idf total: 1.0 would be every term, saturated."""
    q = query_terms(query[:4096])[:MAX_QUERY_TERMS]
    scores: dict[int, float] = {}
    total = 0.0
    for t in q:
        post = idx.postings.get(t)
        if post is None:
            # an unknown word still counts against; a bigram or an option run nobody spells not
            total += idx.idf(0) if t.isalnum() else 0.0
            continue
        start, end = post
        idf = idx.idf(end - start)
        total += idf
        for doc, tf in zip(idx.docs[start:end], idx.weights[start:end], strict=True):
            scores[doc] = scores.get(doc, 0.0) + idf * tf * (K1 + 1) / (tf + K1)
    if not scores:
        return []
    top = (K1 + 1) * total
    return sorted(
        ((d, min(s / top, 1.0)) for d, s in scores.items()),
        key=lambda ds: (-ds[1], -idx.last_ord[ds[0]], idx.ids[ds[0]]),
    )


def rank_flag(idx: Index, flag: str) -> list[tuple[int, float]]:
    """The records of a flag, most about it first: a record whose message spells the flag
    (`max_model_len`, `--max-model-len`) and that involves it; then one that only spells it;
    then one involving it among others (a check on 25 flags is barely about any one of them).
    A prefix (`max-model`) finds the flags it starts, ranked below an exact name."""
    name, want = option(flag), dest(flag)
    if not want:
        return []
    scores: dict[int, float] = {}
    for doc, (fl, said) in enumerate(zip(idx.flags, idx.named, strict=True)):
        exact = name in fl
        prefix = not exact and any(f.startswith(name) for f in fl)
        spelled = want in said
        spelled_prefix = not spelled and any(s.startswith(want + "_") for s in said)
        if not (exact or prefix or spelled or spelled_prefix):
            continue
        share = 1 / len(fl) if fl else 0.0
        score = (1.0 if spelled else 0.5 if spelled_prefix else 0.0) + (
            (0.5 + 0.5 * share) * (1.0 if exact else 0.5 if prefix else 0.0)
        )
        scores[doc] = score
    best = max(scores.values(), default=1.0)
    return sorted(
        ((d, s / best) for d, s in scores.items()),
        key=lambda ds: (-ds[1], -idx.last_ord[ds[0]], idx.ids[ds[0]]),
    )
