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

import math
import re
from array import array
from collections import Counter
from dataclasses import dataclass

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
    """Postings of every record: term -> (positions, BM25F weights), and per record its id,
    last revision, flags and the options its message spells."""

    ids: list[str]
    last_ord: list[int]
    flags: list[tuple[str, ...]]
    named: list[frozenset[str]]  # dest names the message spells (`max_model_len`)
    postings: dict[str, tuple[array, array]]

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
    postings: dict[str, tuple[array, array]] = {}
    for doc, parts in enumerate(counts):
        weight: dict[str, float] = {}
        get = weight.get
        for part, (_, w), mean in zip(parts, FIELDS, avg, strict=True):
            norm = w / (1 - B + B * part.total() / mean)
            for t, c in part.items():
                weight[t] = get(t, 0.0) + c * norm
        for t, tf in weight.items():
            post = postings.get(t)
            if post is None:
                post = postings[t] = (array("I"), array("d"))
            post[0].append(doc)
            post[1].append(tf)
    return Index(ids, last, flags, named, postings)


def load(con) -> Index:
    """The index of a catalog's records (Catalog keeps one per open catalog)."""
    return build(con.execute(SQL, []).fetchall())


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
        docs, tfs = post
        idf = idx.idf(len(docs))
        total += idf
        for doc, tf in zip(docs, tfs, strict=True):
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
