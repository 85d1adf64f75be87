"""The DuckDB catalog file: build it from a dataset directory, find it, open it read-only.

A catalog is written to a temp file and renamed into place, so a reader never sees half a
catalog and two processes building the packaged default at once both end with a whole one.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import math
import os
import stat
import time
import warnings
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kverr.catalog import argparse_answers, matcher, patterns, prefilter
from kverr.catalog.connection import Connection, first_line
from kverr.catalog.engine import duckdb, quiet

from kverr import DEFAULT_PROJECT, __version__, io, pattern, progress, template
from kverr.errors import CatalogError, DatasetError, KverrWarning
from kverr.places import cache_dir

FORMAT = "kverr-catalog-11"  # bump when the tables change: old catalogs are then rebuilt
BM25_K1, BM25_B = 1.2, 0.75
LOAD_MEMORY = "64MB"  # DuckDB's memory while it writes a catalog (load_datasets)
STOP_SHARE, STOP_MIN = 0.02, 50

SCHEMA_SQL = """
CREATE TABLE meta(key VARCHAR PRIMARY KEY, value VARCHAR);
CREATE TABLE records(id VARCHAR PRIMARY KEY, slug VARCHAR, kind VARCHAR, severity VARCHAR,
    error_class VARCHAR, message VARCHAR, pattern VARCHAR, file VARCHAR, line INTEGER, record JSON,
    usable BOOLEAN, code_line VARCHAR, function VARCHAR, self_score DOUBLE, releases JSON, last_ord INTEGER,
    project VARCHAR);
CREATE TABLE anchors(id VARCHAR, token VARCHAR, literal VARCHAR, key VARCHAR, head VARCHAR);
CREATE TABLE terms(term VARCHAR PRIMARY KEY, idf DOUBLE, stop BOOLEAN, ids VARCHAR[], recall DOUBLE[]);
CREATE TABLE flags(name VARCHAR, dest VARCHAR, help VARCHAR, "default" VARCHAR,
    choices JSON, type VARCHAR, action VARCHAR, file VARCHAR, line INTEGER, project VARCHAR,
    PRIMARY KEY (project, name));
CREATE TABLE record_flags(id VARCHAR, flag VARCHAR);
CREATE TABLE revisions(ord INTEGER, sha VARCHAR, date VARCHAR, tags JSON, subject VARCHAR, project VARCHAR);
CREATE TABLE occurrences(id VARCHAR, file VARCHAR, function VARCHAR, guard VARCHAR,
    from_ord INTEGER, to_ord INTEGER, lines INTEGER[], guard_text VARCHAR);
CREATE TABLE lineage(id VARCHAR, previous_id VARCHAR, sha VARCHAR);
CREATE TABLE flag_history(project VARCHAR, name VARCHAR, from_ord INTEGER, to_ord INTEGER,
    choices JSON, type VARCHAR, "default" VARCHAR, action VARCHAR, nargs VARCHAR, options JSON,
    file VARCHAR, successor VARCHAR);
"""


# ---------------------------------------------------------------- reading a dataset


class _Records:
    """The records of one records.jsonl, read again from the file by each pass over them: a
    100,000-record catalog is loaded in the memory of a batch, not of every record (2.8 GB)."""

    def __init__(self, dataset_dir: Path) -> None:
        self.path = dataset_dir / "records.jsonl"
        self.count = sum(1 for _ in self)  # every line checked now, before anything is written

    def __iter__(self) -> Iterator[dict[str, Any]]:
        path = self.path
        rows = (obj for _, obj in io.iter_objects(path, optional=False))
        for no, row in enumerate(rows, 1):
            rec = row.get("record")
            if not isinstance(rec, dict) or not isinstance(rec.get("id"), str):
                raise DatasetError(
                    f"{path}:{no} has no record with an id; fix or rebuild the dataset."
                )
            if not isinstance(rec.get("messagePattern", ""), str):
                raise DatasetError(
                    f"{path}:{no} ({rec['id']}) has a non-string messagePattern; fix or rebuild the dataset."
                )
            yield rec


def _batches(items: Iterable[Any], size: int = 1000) -> Iterator[list[Any]]:
    it = iter(items)
    return iter(lambda: list(itertools.islice(it, size)), [])


# ---------------------------------------------------------------- derived columns


def enclosing_function(rec: dict[str, Any]) -> str | None:
    """Name of the `def` around the statement, read from the record's source context."""
    src = (rec.get("sourceCode") or "").splitlines()
    i = (rec.get("lineNumber") or 0) - (rec.get("sourceCodeStart") or 0)
    if not 0 <= i < len(src):
        return None
    indent = len(src[i]) - len(src[i].lstrip())
    for line in reversed(src[:i]):
        body = line.lstrip()
        if body.startswith(("def ", "async def ")) and len(line) - len(body) < indent:
            return body.split("def ", 1)[1].split("(", 1)[0].strip()
    return None


def _functions(occs: list[dict[str, Any]]) -> dict[str, str]:
    """id -> the function the extractor saw the site in (newest occurrence wins); better than
    reading the source context, which `enclosing_function` falls back to."""
    return {
        o["id"]: o["function"].rsplit(".", 1)[-1]
        for o in sorted(occs, key=lambda o: o["to"])
        if o.get("function") and o.get("id")
    }


def _spans(occs: list[dict[str, Any]], revisions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Occurrence lines as spans of revision ords (`from`..`to`, inclusive, `lines` one per
    revision); a one-revision line `{"id", "sha", "line", ...}` (hand-made datasets) spans that
    revision alone."""
    ord_of = {r.get("sha"): r.get("ord", i) for i, r in enumerate(revisions)}
    out = []
    for o in occs:
        if "from" not in o:
            n = ord_of.get(o.get("sha"))
            if n is None:
                continue  # a revision the dataset does not list: nowhere to place it
            o = {**o, "from": n, "to": n, "lines": [o.get("line")]}
        out.append(o)
    return out


def _analyse(
    recs: Iterable[dict[str, Any]], report: progress.Report, total: int
) -> tuple[dict[str, patterns.Shape | None], list[str]]:
    """Shape of each usable pattern; a warning for each pattern that is unsafe to run."""
    shapes: dict[str, patterns.Shape | None] = {}
    warnings = []
    for n, rec in enumerate(recs, 1):
        report("patterns", n, total)
        pat = pattern.matchable(rec.get("messagePattern") or "")
        why, sh = patterns.inspect(pat) if pat else (None, None)
        if why:
            warnings.append(f"record {rec['id']}: messagePattern skipped because {why}")
        shapes[rec["id"]] = sh
    return shapes, warnings


def _anchor_rows(
    shapes: dict[str, patterns.Shape | None], report: progress.Report
) -> Iterator[tuple[str, ...]]:
    """Each record's anchor token (the per-line prefilter: one dict lookup per token) and its
    scan key (catalog/prefilter.py), both the rarest in real log lines first (data/noise.json),
    then in the catalog: "server" is rare among the records and in every other INFO line.

    The catalog's counts come first; then each record's candidates are made again and chosen
    from, not kept: 100,000 records' candidate lists held 400 MB of a load."""
    noise, noise_df = _noise()
    live = [(rid, sh) for rid, sh in shapes.items() if sh]
    df = Counter(t for _, sh in live for t in {t for t, _ in patterns.anchor_tokens(sh)})
    key_df = Counter(k for _, sh in live for k in {k for k, _ in prefilter.candidates(sh)})
    for n, (rid, sh) in enumerate(live, 1):
        report("prefilter keys", n, len(live))
        pairs = patterns.anchor_tokens(sh)
        if pairs:
            tok, lit = min(pairs, key=lambda p: (noise_df[p[0]], df[p[0]], -len(p[0]), p[0]))
            key = prefilter.choose_key(sh, noise, key_df) or prefilter.escape(tok)
            # what a message cut short shows at least (prefilter.head)
            yield (rid, tok, lit, key, prefilter.head(sh))


@functools.lru_cache(maxsize=1)
def _noise() -> tuple[prefilter.NoiseCount, Counter]:
    """The noise counts of the default project's rendered log lines (`noise_messages`), made
    once per process (a test run builds dozens of catalogs); of none when the file is not
    shipped (keys are then chosen by the catalog's counts alone)."""
    lines = [m["text"] for m in noise_messages()]
    return prefilter.NoiseCount(lines), Counter(t for x in lines for t in set(patterns.tokens(x)))


def noise_messages() -> list[dict[str, str]]:
    """data/noise.json's messages (scripts/noise_corpus.py): kind, severity and the rendered
    text."""
    from importlib.resources import files

    try:
        data = json.loads(files("kverr.data").joinpath("noise.json").read_text("utf-8"))
    except (OSError, ValueError):
        return []
    return [m for m in data.get("messages", []) if isinstance(m.get("text"), str)]


def _term_rows(shapes: dict[str, patterns.Shape | None]):
    """BM25 postings per term (ids + weights), and each record's self score.

    Terms in more than STOP_SHARE of the records (and at least STOP_MIN of them) are "stop"
    terms: they carry little weight and long postings, so neither side counts them and a
    fuzzy lookup touches only short postings however large the catalog grows.

    Returns (the rows, in term order, made as they are read; the self scores). Bags and
    postings are packed arrays over term numbers, grouped by term at the end: per-term lists
    and a Counter per record were most of a 100,000-record load's memory. The arithmetic is
    a Counter's, term by term in first-seen order."""
    number: dict[str, int] = {}
    names: list[str] = []
    df = array("I")
    bags = []  # (id, term numbers, counts), first-seen order
    for rid, sh in shapes.items():
        if sh:
            bag = Counter(patterns.terms(sh.text()))
            nums = array("I")
            for t in bag:
                i = number.setdefault(t, len(names))
                if i == len(names):
                    names.append(t)
                    df.append(0)
                df[i] += 1
                nums.append(i)
            bags.append((rid, nums, array("I", bag.values())))
    del number
    n = max(len(bags), 1)
    idf = array("d", (math.log(1 + (n - d + 0.5) / (d + 0.5)) for d in df))
    stop = bytes(d > max(STOP_MIN, STOP_SHARE * n) for d in df)
    avgdl = sum(sum(tfs) for _, _, tfs in bags) / n or 1.0
    term, ids, share = array("I"), [], array("d")  # one posting each, in record order
    selfs = {}
    for rid, nums, tfs in bags:
        norm = BM25_K1 * (1 - BM25_B + BM25_B * sum(tfs) / avgdl)
        weights = [
            (i, idf[i] * tf * (BM25_K1 + 1) / (tf + norm))
            for i, tf in zip(nums, tfs, strict=True)
            if not stop[i]
        ]
        selfs[rid] = total = sum(w for _, w in weights)
        for i, w in weights:  # stored as the share of the record's own score: recall adds up
            term.append(i)
            ids.append(rid)
            share.append(w / total)
    del bags
    # postings grouped by term, keeping record order (a counting sort)
    count = array("I", [0]) * len(names)
    for i in term:
        count[i] += 1
    start, at = array("I", [0]) * len(names), 0
    for i, c in enumerate(count):
        start[i], at = at, at + c
    order, fill = array("I", [0]) * len(term), array("I", start)
    for k, i in enumerate(term):
        order[fill[i]] = k
        fill[i] += 1

    def rows():
        for i in sorted(range(len(names)), key=names.__getitem__):
            mine = order[start[i] : start[i] + count[i]]
            yield names[i], idf[i], bool(stop[i]), [ids[k] for k in mine], [share[k] for k in mine]

    return rows(), selfs


def _last_ord(occs: list[dict[str, Any]]) -> dict[str, int]:
    """id -> ord of the newest revision containing it (ranks ties toward current code)."""
    out: dict[str, int] = {}
    for o in occs:
        if o["to"] > out.get(o.get("id"), -1):
            out[o["id"]] = o["to"]
    return out


def _releases(occs: list[dict[str, Any]], revisions: list[dict[str, Any]]) -> dict[str, list[str]]:
    """id -> the names of the revisions containing it (argparse_answers.release_names), ids
    of a directory build left out. Precomputed so a match costs no join."""
    by_ord = {r.get("ord", i): r for i, r in enumerate(revisions)}
    newest_git = max((n for n, r in by_ord.items() if r.get("sha")), default=None)
    ords: dict[str, set[int]] = {}
    for o in occs:
        ords.setdefault(o["id"], set()).update(range(o["from"], o["to"] + 1))
    out = {}
    for rid, present in ords.items():
        revs = [(n, by_ord[n]) for n in sorted(present) if n in by_ord]
        if names := argparse_answers.release_names(revs, newest_git):
            out[rid] = names
    return out


# ---------------------------------------------------------------- writing a catalog


def _insert(con: duckdb.DuckDBPyConnection, table: str, rows: list[tuple]) -> None:
    """Columnar bulk insert (one unnest per column): far faster than executemany. Each row
    holds every column of the table, in SCHEMA_SQL's order."""
    if not rows:
        return
    cols = [list(c) for c in zip(*rows, strict=True)]
    select = ", ".join(f"unnest(${i + 1})" for i in range(len(cols)))
    con.execute(f"INSERT INTO {table} SELECT {select}", cols)


def _j(value: Any) -> str | None:
    return None if value is None else json.dumps(value, sort_keys=True, ensure_ascii=False)


@dataclass(frozen=True)
class LoadReport:
    records: int
    usable: int  # records whose pattern the matcher runs
    warnings: tuple[str, ...]  # e.g. a pattern skipped as unsafe (the record itself is kept)


def load_dataset(dataset_dir: Path | str, catalog_path: Path | str) -> LoadReport:
    """Build the catalog file from a dataset directory, atomically (temp file + rename)."""
    return load_datasets([dataset_dir], catalog_path)


def load_datasets(dataset_dirs: list[Path | str], catalog_path: Path | str) -> LoadReport:
    """One catalog from the datasets of several projects (each built with its own profile),
    atomically (temp file + rename). Revisions are numbered on after the dataset before, so a
    revision ord names one revision of one project; a record id must be unique across them
    (profiles hash their project into ids)."""
    catalog_path = Path(catalog_path)
    if not dataset_dirs:
        raise DatasetError("no dataset to load; pass at least one dataset directory.")
    for d in dataset_dirs:
        if not Path(d).is_dir():
            raise DatasetError(
                f"{d} is not a directory; pass a dataset directory written by `kverr build`."
            )
    _check_target(catalog_path)
    sets = [_dataset(Path(d)) for d in dataset_dirs]
    _check_projects(sets)
    count = sum(d.records.count for d in sets)
    where = ", ".join(str(d.path) for d in sets)
    with progress.reporting(f"kverr: loading {where} into {catalog_path}") as report:
        shapes, warnings = _analyse((r for d in sets for r in d.records), report, count)
        usable = sum(1 for sh in shapes.values() if sh is not None)  # (_write empties `shapes`)
        _write_file(catalog_path, sets, shapes, report, where)
    return LoadReport(count, usable, tuple(warnings + [w for d in sets for w in d.warnings]))


def _write_file(catalog_path: Path, sets: list[_Set], shapes, report, where: str) -> None:
    """The catalog written to a temp file beside `catalog_path` and renamed into place."""
    try:
        with io.replacing_file(catalog_path) as tmp:
            # DuckDB keeps what a load writes in memory up to its limit (80% of RAM by
            # default): bounded, it writes the blocks out instead, and a large load stays small.
            con = quiet(duckdb.connect(str(tmp), config={"memory_limit": LOAD_MEMORY}))
            try:
                _write(con, sets, shapes, report)
                con.execute("CHECKPOINT")
            finally:
                con.close()
    except duckdb.Error as exc:
        raise CatalogError(
            f"could not write catalog {catalog_path} ({exc}); check the dataset(s) in {where}.",
            first_line(exc),
        ) from None
    except OSError as exc:  # the folder is a file, read-only, full...
        raise CatalogError(
            f"could not write catalog {catalog_path} ({exc.strerror}: {exc.filename});"
            " pass a --catalog path in a writable directory.",
            f"{exc.strerror}: {exc.filename}",
        ) from None


def _check_target(path: Path) -> None:
    """Refuse a --catalog path that `load` must not replace: a directory, or a file that is
    not a catalog (an `errors.jsonl` passed by mistake would be lost). An empty file, a damaged
    catalog or an older kverr's catalog is fine to replace: that is what rebuilding means."""
    if path.is_dir():
        raise CatalogError(
            f"{path} is a directory; pass a catalog file path such as {path / 'kverr.duckdb'}."
        )
    if not path.is_file() or path.stat().st_size == 0:
        return
    kind = _file_kind(path)
    if kind not in ("catalog", "damaged"):
        raise CatalogError(
            f"{path} exists and is not a kverr catalog ({kind}); `kverr load` does not replace"
            " other files: pass a new --catalog path."
        )


def _file_kind(path: Path) -> str:
    """ "catalog", "damaged" (DuckDB's header, yet unreadable), or what else the file is."""
    try:
        with path.open("rb") as fh:
            head = fh.read(12)
    except OSError as exc:
        return f"unreadable: {exc.strerror}"
    if head[8:12] != b"DUCK":  # DuckDB's magic bytes follow an 8-byte header checksum
        return "not a DuckDB file"
    try:
        con = quiet(duckdb.connect(str(path), read_only=True))
    except duckdb.Error:
        return "damaged"
    try:
        con.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
        return "catalog"
    except duckdb.CatalogException:
        return "a DuckDB database without kverr's tables"
    except duckdb.Error:
        return "damaged"
    finally:
        con.close()


class _Set:
    """One dataset directory as the loader uses it: its project and where its ords start.
    (A plain class: this module is on explain's start-up path, a dataclass costs there.)"""

    def __init__(self, path, manifest, project, records, side, warnings) -> None:
        self.path: Path = path
        self.manifest: dict[str, Any] = manifest
        self.project: dict[str, Any] = project  # profiles.project_info: name, product, forms
        self.records: _Records = records  # read from the file by each pass
        self.side: dict[str, list[dict[str, Any]]] = side
        self.warnings: list[str] = warnings
        self.offset = 0  # added to every revision ord of this dataset


def _dataset(path: Path) -> _Set:
    manifest = io.read_manifest(path)
    from kverr.catalog import profiles  # loading only, never on explain's path

    project, warnings = profiles.project_info(manifest, str(path))
    recs = _Records(path)
    side = {
        name: [obj for _, obj in io.iter_objects(path / name, optional=True)]
        for name in io.DATASET_FILES[1:]
    }
    return _Set(path, manifest, project, recs, side, warnings)


def _check_projects(sets: list[_Set]) -> None:
    seen: dict[str, Path] = {}
    owner: dict[str, Path] = {}
    offset = 0
    for d in sets:
        name = d.project["name"]
        if name in seen:
            raise DatasetError(
                f"{d.path} and {seen[name]} are both project {name!r}; load one dataset per project."
            )
        seen[name] = d.path
        for r in d.records:
            if r["id"] in owner:
                raise DatasetError(
                    f"record {r['id']} is in both {owner[r['id']]} and {d.path}; rebuild one of "
                    "them with kverr (profiles hash their project into record ids)."
                )
            owner[r["id"]] = d.path
        d.offset = offset
        offset += (
            max([row.get("ord", i) for i, row in enumerate(d.side["revisions.jsonl"])] or [-1]) + 1
        )


def _shift(d: _Set) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(revisions, occurrence spans) of one dataset with ords moved past the datasets before."""
    revisions = [
        {**row, "ord": row.get("ord", i) + d.offset}
        for i, row in enumerate(d.side["revisions.jsonl"])
    ]
    occs = [
        {**o, "from": o["from"] + d.offset, "to": o["to"] + d.offset}
        for o in _spans(d.side["occurrences.jsonl"], d.side["revisions.jsonl"])
    ]
    return revisions, occs


def _write(con, sets: list[_Set], shapes, report: progress.Report) -> None:
    con.execute(SCHEMA_SQL)
    term_rows, selfs = _term_rows(shapes)
    # first, and a batch at a time: the postings are gone before the records come in
    for batch in _batches(term_rows, 2000):
        _insert(con, "terms", batch)
    del term_rows
    revisions: list[dict[str, Any]] = []
    occs: list[dict[str, Any]] = []
    releases: dict[str, list[str]] = {}
    for d in sets:
        revs, spans = _shift(d)
        # releases per project: "the newest commit built" is that project's newest
        releases.update(_releases(spans, revs))
        revisions += [{**r, "project": d.project["name"]} for r in revs]
        occs += spans
    funcs = _functions(occs)
    last_ord = _last_ord(occs)
    for batch in _batches(occs, 5000):
        _insert(con, "occurrences", [
            (o.get("id"), o.get("file"), o.get("function"), o.get("guard"), o["from"], o["to"], o.get("lines") or [],
             o.get("guardText"))
            for o in batch
        ])  # fmt: skip
    del occs, spans  # (and the datasets' own lines: neither is needed again)
    for d in sets:
        d.side["occurrences.jsonl"] = []
    manifest = sets[0].manifest
    _insert(con, "meta", [
        ("format", FORMAT), ("kverr", __version__), ("schemaVersion", str(manifest.get("schemaVersion", 2))),
        ("datasetVersion", str(manifest.get("datasetVersion", ""))), ("manifest", _j(manifest)),
        ("projects", _j([{**d.project, "datasetVersion": d.manifest.get("datasetVersion", "")}
                         for d in sets])),
    ])  # fmt: skip
    for d in sets:  # a batch at a time: memory for a batch of records, not for all of them
        for n, batch in enumerate(_batches(d.records), 1):
            if not n % 10:  # written out, so DuckDB may drop them from memory (LOAD_MEMORY)
                con.execute("CHECKPOINT")
            _insert(con, "records", [
                (r["id"], r.get("slug"), r.get("kind"), r.get("severity"), r.get("errorClass"),
                 r.get("errorMessage"), pattern.matchable(r.get("messagePattern") or ""), r.get("filePath"), r.get("lineNumber"),
                 _j(r), shapes[r["id"]] is not None, template.source_line(r),
                 funcs.get(r["id"]) or enclosing_function(r), selfs.get(r["id"], 0.0), _j(releases.get(r["id"], [])), last_ord.get(r["id"]),
                 # a record written before records carried `project` is its dataset's project's
                 r.get("project") or d.project["name"])
                for r in batch
            ])  # fmt: skip
            _insert(
                con, "record_flags", [(r["id"], f) for r in batch for f in r.get("flags") or []]
            )
    del selfs, funcs, last_ord, releases  # (the records are written: none is read again)
    for batch in _batches(_anchor_rows(shapes, report), 5000):
        _insert(con, "anchors", batch)
    # The matcher's index, made once here: rebuilding it cost every process that opened the
    # catalog 26 ms at 1,000 records and 0.8 s at 100,000.
    cur = con.execute(matcher.INDEX_SQL)
    index = matcher.index_state(
        (row for rows in iter(lambda: cur.fetchmany(5000), []) for row in rows), shapes
    )
    # The shapes' last reader: emptied (the caller's dict, counted before) so that they are
    # gone before the index's JSON text is made, the load's peak (100,000 records: ~50 MB)
    shapes.clear()
    _insert_index(con, json.dumps(index, separators=(",", ":")))
    flag_rows = [
        (f.get("name"), f.get("dest"), f.get("help"), f.get("default"), _j(f.get("choices")),
         f.get("type"), f.get("action"), f.get("file"), f.get("line"), d.project["name"])
        for d in sets for f in d.side["flags.jsonl"] if f.get("name")
    ]  # fmt: skip
    _insert(con, "flags", list({(row[-1], row[0]): row for row in flag_rows}.values()))
    _insert(con, "revisions", [
        (row["ord"], row.get("sha"), row.get("date"), _j(row.get("tags") or []), row.get("subject"), row["project"])
        for row in revisions
    ])  # fmt: skip
    # point lookups: where a record exists (history, versions), and traceback frames
    con.execute("CREATE INDEX occurrences_id ON occurrences(id)")
    con.execute("CREATE INDEX records_code_line ON records(code_line)")
    _insert(con, "lineage", [
        (x.get("id"), x.get("previousId"), x.get("sha")) for d in sets for x in d.side["lineage.jsonl"]
    ])  # fmt: skip
    # each flag's declarations over the revisions (ords shifted like the occurrences): what
    # argparse's answers are computed from at explain time (catalog/argparse_answers.py)
    _insert(con, "flag_history", [
        (d.project["name"], x.get("name"), x["from"] + d.offset, x["to"] + d.offset, _j(x.get("choices")),
         x.get("type"), x.get("default"), x.get("action"), x.get("nargs"), _j(x.get("options")), x.get("file"),
         x.get("successor"))
        for d in sets for x in d.side["flaghistory.jsonl"] if x.get("name") and "from" in x and "to" in x
    ])  # fmt: skip
    for d in sets:  # what argparse's answers read of it, in one row per project
        state = argparse_answers.history_state(con, d.project["name"])
        con.execute(
            "INSERT INTO meta VALUES (?, ?)",
            [f"argparse:{d.project['name']}", json.dumps(state, separators=(",", ":"))],
        )


INDEX_CHUNK = 1 << 20  # characters of the index's JSON text per `meta` row


def _insert_index(con, text: str) -> None:
    """The index's JSON text as `meta` rows 'index.0000', 'index.0001'... of INDEX_CHUNK
    characters, joined again at open (`index_text`). One 30 MB value (100,000 records) cost
    DuckDB about three copies of it at once, the load's peak; a chunk costs three of 1 MB."""
    for n, at in enumerate(range(0, len(text), INDEX_CHUNK)):
        con.execute(
            "INSERT INTO meta VALUES (?, ?)", [f"index.{n:04d}", text[at : at + INDEX_CHUNK]]
        )


def index_text(meta: dict[str, str]) -> str | None:
    """The stored index's JSON text from the `meta` rows read at open (None: not stored)."""
    keys = sorted(k for k in meta if k.startswith("index."))
    return "".join(meta.pop(k) for k in keys) if keys else None


# ---------------------------------------------------------------- finding a catalog


def packaged_dataset_dir() -> Path:
    """Where the datasets shipped inside the package live (`kverr/data/<project>/`): the
    package's folder, as kverr is installed as files (importlib.resources would cost a
    one-shot explain 5 ms to say the same)."""
    import kverr.data

    return Path(kverr.data.__file__).parent


def packaged_datasets() -> list[Path]:
    """Every shipped dataset (one per project), the default project's first."""
    root = packaged_dataset_dir()
    if not root.is_dir():
        return []
    found = [d for d in sorted(root.iterdir()) if (d / "manifest.json").is_file()]
    return sorted(found, key=lambda d: d.name != DEFAULT_PROJECT)


# The code that decides what a load writes, by module: the key holds its text, so a kverr that
# derives a column differently (releases, anchors, keys, the stored index) never answers from
# a catalog another loader wrote (tests/test_first_answer.py: a load imports no other module
# of ours that could). The noise the keys are counted against is read by the loader too.
LOADER_CODE = ("store", "patterns", "prefilter", "matcher", "normalize", "argparse_answers", "profiles")  # fmt: skip
SHARED_CODE = ("regexsafe", "pattern", "argforms", "io", "profile", "template")  # kverr/*.py
CACHE_DAYS = 30  # a cached packaged catalog no kverr has opened for this long is removed
KEYS_KEPT = 64  # remembered keys (catalog_key), one per set of files seen


def loader_files() -> list[Path]:
    """The files besides the datasets whose content a load's output depends on."""
    import kverr.data

    here, top = Path(__file__).parent, Path(io.__file__).parent
    return [
        *(here / f"{name}.py" for name in LOADER_CODE),
        *(top / f"{name}.py" for name in SHARED_CODE),
        Path(kverr.data.__file__).with_name("noise.json"),  # (what _noise reads)
    ]


def catalog_key(datasets: list[Path]) -> str:
    """The name of the packaged datasets' catalog: a hash of what a load reads, by content.

    Reading and hashing those 13 MB costs 35 ms, a tenth of a one-shot explain, so the key is
    remembered in the cache beside each file's path, size, times and inode: a
    `pip install` that writes the same files again costs one hash, not a rebuild, and a
    checkout and an installed kverr of the same content share one catalog."""
    files = _keyed_files(datasets)
    import hashlib

    stamp = hashlib.sha256("".join(map(_stamp, files)).encode()).hexdigest()[:32]
    keys = _remembered()
    if stamp not in keys:
        keys[stamp] = content_key(files)
        _remember(keys)
    return keys[stamp]


def _keyed_files(datasets: list[Path]) -> list[Path]:
    data = [d / name for d in datasets for name in ("manifest.json", *io.DATASET_FILES)]
    return data + loader_files()


def content_key(files: list[Path]) -> str:
    """A hash of the files' text (each named by its folder and name, so the same files
    anywhere hash alike), the catalog format and kverr's version."""
    import hashlib

    digest = hashlib.sha256(f"{FORMAT}\0{__version__}\0".encode())
    for path in files:
        try:
            data = path.read_bytes()
        except FileNotFoundError:  # (an optional dataset file)
            data = None
        size = -1 if data is None else len(data)
        digest.update(f"{path.parent.name}/{path.name}\0{size}\0".encode())
        digest.update(data or b"")
    return digest.hexdigest()[:16]


def _stamp(path: Path) -> str:
    try:
        st = path.stat()
    except OSError:
        return f"{path}:-;"
    # (the change time too: a write that keeps the size and puts the mtime back still moves it)
    return f"{path}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino};"


def _remembered() -> dict[str, str]:
    try:
        keys = json.loads((cache_dir() / "packaged-keys.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return keys if isinstance(keys, dict) else {}


def _remember(keys: dict[str, str]) -> None:
    """Keep the newest KEYS_KEPT keys, written whole (temp file + rename); best effort, as a
    key that is not remembered is only hashed again."""
    path = cache_dir() / "packaged-keys.json"
    kept = dict(list(keys.items())[-KEYS_KEPT:])
    with contextlib.suppress(OSError), io.replacing_file(path) as tmp:
        tmp.write_text(json.dumps(kept), encoding="utf-8")


def default_catalog_path(*, shipped: bool = True) -> Path:
    """The catalog of the packaged datasets, in the user cache: on first use, a copy of the
    one the package ships for these datasets and this loader (`shipped`: setup.py builds it
    into the wheel), else built from the datasets.

    Named by catalog_key, so each kverr (an installed one, a checkout's `python -m kverr`)
    finds its own and they live side by side: none is removed for another, only when no kverr
    has opened it for CACHE_DAYS. Racing builders each write their own temp file and rename,
    so whoever renames last leaves a complete file. A cache that cannot be written (read-only,
    not a directory, full) is not fatal: the catalog goes to a private temp directory
    instead, with a warning."""
    datasets = packaged_datasets()
    if not datasets:
        raise CatalogError(
            f"no packaged dataset at {packaged_dataset_dir()}; pass --catalog FILE (build one with `kverr load DATASET_DIR --catalog FILE`)."
        )
    name = f"packaged-{catalog_key(datasets)}.duckdb"
    target = cache_dir() / name
    if _used(target):
        return target
    try:
        _place(datasets, target, shipped)
        return target
    except CatalogError as exc:
        why = exc.reason
    fallback = private_temp_dir() / name
    warnings.warn(
        f"cannot write the catalog cache {cache_dir()} ({why}); using {fallback} instead:"
        " set XDG_CACHE_HOME to a writable directory to keep it.",
        KverrWarning,
        stacklevel=2,
    )
    if not fallback.is_file():
        _place(datasets, fallback, shipped)
    return fallback


def _used(path: Path) -> bool:
    """Whether the catalog is there; if so, its modification time says it was used today
    (written at most once a day), which is the age CACHE_DAYS counts."""
    try:
        st = path.stat()
    except OSError:
        return False
    if time.time() - st.st_mtime > 86400:
        with contextlib.suppress(OSError):
            os.utime(path)
    return stat.S_ISREG(st.st_mode)


def _place(datasets: list[Path], target: Path, shipped: bool) -> None:
    ready = packaged_dataset_dir() / target.name
    if shipped and ready.is_file():
        _copy(ready, target)
    else:
        title = f"kverr: building the catalog of the packaged datasets, once, in {target.parent}"
        with progress.reporting(title):  # (the load's bars show under this title)
            load_datasets(datasets, target)
    # A catalog another kverr may still open is kept; one unused for CACHE_DAYS is not (a
    # reader that has it open keeps its inode, so removing it is safe).
    for old in target.parent.glob("packaged-*.duckdb"):
        with contextlib.suppress(OSError):
            if old != target and time.time() - old.stat().st_mtime > CACHE_DAYS * 86400:
                old.unlink()


def _copy(source: Path, target: Path) -> None:
    """The shipped catalog into the cache: a hard link where the file system allows one (no
    copy of 13 MB), else a copy; renamed into place either way."""
    import shutil

    try:
        with io.replacing_file(target) as tmp:
            try:
                os.link(source, tmp)
            except OSError:
                shutil.copyfile(source, tmp)
    except OSError as exc:
        raise CatalogError(
            f"could not write catalog {target} ({exc.strerror}: {exc.filename}).",
            f"{exc.strerror}: {exc.filename}",
        ) from None


def ship_catalog() -> Path:
    """Build the packaged datasets' catalog beside them, under the name an installed kverr
    looks for (setup.py runs this in the built package, so a wheel ships its catalog ready
    and an installed kverr's first answer needs no build)."""
    datasets = packaged_datasets()
    target = packaged_dataset_dir() / f"packaged-{content_key(_keyed_files(datasets))}.duckdb"
    for old in packaged_dataset_dir().glob("packaged-*.duckdb"):
        old.unlink()  # a build folder's earlier catalog: one is shipped
    load_datasets(datasets, target)
    return target


def private_temp_dir() -> Path:
    """This user's own folder in the system temp dir, for a catalog the cache cannot hold.
    Made 0700 and checked to be a real directory owned by this user, so another local user
    cannot plant a catalog (or a symlink) there."""
    uid = os.getuid() if hasattr(os, "getuid") else None
    import tempfile

    path = Path(tempfile.gettempdir()) / f"kverr-{uid if uid is not None else 'user'}"
    try:
        path.mkdir(mode=0o700, exist_ok=True)
        st = os.lstat(path)
    except OSError as exc:
        raise CatalogError(
            f"cannot build the packaged catalog: neither the cache {cache_dir()} nor {path} is"
            f" writable ({exc.strerror}); set XDG_CACHE_HOME to a writable directory or pass"
            " --catalog FILE."
        ) from None
    if not stat.S_ISDIR(st.st_mode) or (uid is not None and st.st_uid != uid) or st.st_mode & 0o077:
        raise CatalogError(
            f"cannot build the packaged catalog: the cache {cache_dir()} is not writable and {path}"
            " is not a private directory of this user; set XDG_CACHE_HOME to a writable directory."
        )
    return path


def rebuild_hint(path: Path) -> str:
    return f"rebuild it with `kverr load DATASET_DIR --catalog {path}`"


def connect_read_only(path: Path, *, cached: bool = False) -> Connection:
    """Open a catalog file read-only (many readers at once); CatalogError names the fix.

    `cached`: the file is kverr's own cached default catalog, so a damaged one is removed
    (the next open rebuilds it) instead of sending the user to `kverr load`. A file that is
    not a catalog at all never gets a `kverr load` hint: that command would replace it.

    A load replaces the file while readers open it (os.replace). DuckDB opens a file by its
    name three times (magic, header, blocks), so a swap between those reads leaves it a header
    of one catalog over the blocks of another, which reads as truncated and aborts the process
    when closed. So DuckDB is given a hard link of its own to the file as it is now, which no
    swap can replace, and every check reads that same file."""
    if path.is_dir():
        raise CatalogError(
            f"{path} is a directory, not a catalog; pass --catalog FILE.duckdb (build one with"
            " `kverr load DATASET_DIR --catalog FILE.duckdb`)."
        )
    missing = CatalogError(
        f"catalog {path} does not exist; build it with `kverr load DATASET_DIR --catalog {path}`."
    )
    if not path.is_file():
        raise missing
    deadline = time.monotonic() + SWAP_WAIT
    while time.monotonic() < deadline:
        try:
            pinned = _pin(path)
        except FileNotFoundError:  # replaced between the lookup of its name and the link
            if not path.is_file():
                raise missing from None
            continue
        try:
            con = _connect(path, pinned or path, cached)
        finally:
            if pinned is not None:
                with contextlib.suppress(OSError):  # DuckDB holds the file open from here
                    pinned.unlink()
        if con is not None:
            return con
    raise CatalogError(
        f"catalog {path} was replaced again and again for {SWAP_WAIT:.0f} s while kverr opened"
        " it; run the command again once the catalog has been written.",
        "replaced while it was being opened",
    )


SWAP_WAIT = 2.0  # seconds a reader tries to open a catalog that keeps being replaced


def _pin(path: Path) -> Path | None:
    """A hard link to the file at `path`, named as a load's temp file (kverr/io.py sweeps one
    a killed reader left); None where links cannot be made (a read-only folder).
    FileNotFoundError: the file was replaced while it was being linked."""
    link = io.temp_name(path)
    try:
        os.link(path, link)
    except FileNotFoundError:
        raise
    except OSError:
        return None
    return link


def _connect(path: Path, opened: Path, cached: bool) -> Connection | None:
    """The connection to `opened` (the file at `path`, or a link to it), checked; None when
    `opened` is `path` itself and it was replaced while DuckDB opened it (open it again)."""

    def damaged(why: str) -> CatalogError:
        why = why.replace(str(opened), str(path))  # DuckDB names the file it was given
        if not cached:
            return CatalogError(f"catalog {path} is damaged ({why}); {rebuild_hint(path)}.", why)
        if _discard(path, identity):
            return CatalogError(
                f"the cached catalog {path} is damaged ({why}); it has been removed, and the"
                " next run rebuilds it from the packaged dataset: run the command again.",
                why,
            )
        return CatalogError(
            f"the cached catalog {path} is damaged ({why}) and cannot be removed; delete it,"
            " or set XDG_CACHE_HOME to a writable directory.",
            why,
        )

    try:
        with opened.open("rb") as fh:
            head = fh.read(12)
            st = os.fstat(fh.fileno())  # the file read here, whatever `path` names by now
    except OSError as exc:
        raise CatalogError(
            f"cannot read catalog {path} ({exc.strerror}); check its permissions."
        ) from None
    identity = (st.st_dev, st.st_ino)
    # DuckDB's magic, after a header checksum; a shorter non-empty file is no catalog either
    # (an empty one is: a copy cut short, which `kverr load` may replace).
    if head and head[8:12] != b"DUCK":
        raise CatalogError(
            f"{path} is not a kverr catalog (not a DuckDB file); pass --catalog a file written"
            " by `kverr load` or `kverr build --catalog`.",
            "not a DuckDB file",
        )
    try:
        # (no config: DuckDB refuses a second connection to one file in one process with a
        # configuration other than the first's, and callers and tests open their own)
        raw = quiet(duckdb.connect(str(opened), read_only=True))
    except duckdb.Error as exc:
        if opened == path and _identity(path) != identity:
            return None
        raise damaged(first_line(exc)) from None
    if opened == path and _identity(path) != identity:
        # Unpinned (no link in a read-only folder): the swap may have fallen between DuckDB's
        # reads, a risk only a writable folder removes.
        raw.close()
        return None
    try:
        # the format, and the projects' facts and matcher index every explain reads, in one query
        meta = dict(
            raw.execute(
                "SELECT key, value FROM meta WHERE key IN ('format', 'projects')"
                " OR key BETWEEN 'index.' AND 'index.9999'"
            ).fetchall()
        )
        row = (meta["format"],) if "format" in meta else None
    except duckdb.CatalogException:
        raw.close()
        if cached:
            raise damaged("no meta table") from None
        raise CatalogError(
            f"{path} is not a kverr catalog (a DuckDB database without kverr's tables); pass"
            " --catalog a file written by `kverr load` or `kverr build --catalog`.",
            "a DuckDB database without kverr's tables",
        ) from None
    except duckdb.Error as exc:
        raw.close()
        raise damaged(first_line(exc)) from None
    con = Connection(raw, path, damaged)
    con.meta = meta
    try:
        # A copy cut short opens and reads its first blocks; the block count in the header
        # tells that the rest is missing before any query trips over it.
        blocks, size = con.execute(
            "SELECT total_blocks, block_size FROM pragma_database_size()"
        ).fetchone()
        if blocks * size > st.st_size:
            raise damaged(
                f"truncated: {st.st_size} bytes, its header lists {blocks * size} in blocks"
            )
    except CatalogError:
        con.close()
        raise
    if not row or row[0] != FORMAT:
        con.close()
        found = row[0] if row else "unknown"
        raise CatalogError(
            f"{path} was built by an incompatible kverr ({found}); {rebuild_hint(path)}.",
            f"built by an incompatible kverr ({found})",
        )
    return con


def _discard(path: Path, identity: tuple[int, int] | None) -> bool:
    """Remove the damaged file that was opened; True when it is gone (or already replaced by
    a racing process's rebuild, which must not be removed)."""
    if _identity(path) != identity:
        return True
    try:
        path.unlink(missing_ok=True)
    except OSError:
        return False
    return True


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def verify(con: Connection) -> int:
    """Read every block of every table (a few ms per MB), so damage shows now, not on the
    query that happens to touch it; returns the number of records."""
    names = SCHEMA_SQL.split("CREATE TABLE ")[1:]
    for table in (n.split("(", 1)[0] for n in names):
        con.execute(f"SELECT count(*), max(hash(COLUMNS(*))) FROM {table}").fetchall()
    return int(con.execute("SELECT count(*) FROM records").fetchone()[0])
