"""`Catalog`: the read-only query API over one DuckDB catalog file (see docs/CONTRACTS.md)."""

from __future__ import annotations

import contextlib
import itertools
import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from kverr.catalog import browse, matcher, normalize, store
from kverr.catalog.reader import BoundedLines

from kverr.answers import Match, Revision
from kverr.errors import CatalogError, KverrWarning, NotFound, QueryError

HEAD_CHARS = 1 << 20  # explain_stream reads this much before deciding paste vs. log
MAX_FLAG_QUERY = 200  # a search query longer than this is not a flag name


# a lone flag name: `page-size`, `--page-size`, `page_size`
_FLAG_QUERY = re.compile(r"-{0,2}[A-Za-z0-9][A-Za-z0-9_]*(?:[-_][A-Za-z0-9]+)+")


RECORD_CACHE = 4096  # records kept decoded per open catalog


class Catalog:
    """Records, flags and revisions of one catalog; `explain` / `scan` find records in text."""

    def __init__(self, path: Path, *, cached: bool = False):
        self.path = Path(path)
        # Every query goes through this door: a cursor per thread, DuckDB errors as CatalogError.
        self.con = store.connect_read_only(self.path, cached=cached)
        self._index: matcher.Index | None = None
        self._search: browse.Index | None = None  # catalog/browse.py's, on first search
        self._revs: dict[str, tuple[str, ...]] = {}
        self._records: dict[str, dict[str, Any]] = {}  # decoded records, never handed out
        self._projects: list[dict[str, Any]] | None = None
        self._argparse_history: dict[str, Any] = {}  # project -> argparse_answers.History
        self.budget: float | None = matcher.default_budget()  # CPU seconds per explain

    @property
    def index(self) -> matcher.Index:
        if self._index is None:  # read on first lookup: `get`/`flags` callers never pay for it
            forms = self.forms
            stored = store.index_text(self.con.meta)  # read at open, stored by the loader
            try:
                state = json.loads(stored) if stored else None
            except ValueError:  # a row of it lost or edited: the file is not what the loader wrote
                raise self.con._damaged("its stored matcher index is not whole") from None
            self._index = matcher.Index(
                self.con, forms if forms.prefixes or forms.suffixes else None, state
            )
        return self._index

    @property
    def projects(self) -> list[dict[str, Any]]:
        """The projects this catalog holds: name, product, repository, launch command, log
        forms, whether its fixes are verified (catalog/profiles.py), dataset version."""
        if self._projects is None:
            value = self.con.meta.get("projects")  # read with the format, at open
            self._projects = json.loads(value) if value else []
        return self._projects

    @property
    def forms(self) -> normalize.LogForms:
        """The log forms of every project here (stripped from pasted lines, and a hint of who
        printed them)."""
        return normalize.LogForms(
            prefixes=tuple((p["name"], f) for p in self.projects for f in p.get("logPrefixes", ())),
            suffixes=tuple((p["name"], f) for p in self.projects for f in p.get("logSuffixes", ())),
        )

    def project(self, name: str) -> dict[str, Any]:
        """One project's facts by name; NotFound names the ones this catalog holds."""
        for p in self.projects:
            if p["name"] == name:
                return p
        held = ", ".join(p["name"] for p in self.projects) or "none"
        raise NotFound(
            f"project {name!r} is not in this catalog (it holds: {held}); pass one of those."
        )

    # ------------------------------------------------------------ matching

    def explain(
        self,
        text: str,
        *,
        version: str | None = None,
        limit: int = 5,
        project: str | None = None,
    ) -> list[Match]:
        """Records matching pasted text (a line, a wrapped message, a traceback, a log), best
        first. `project`: only that project's records; else the paste's log forms (a profile's
        `WARNING 05-19 ... [arg_utils.py:123]`) or its message decide, and each match says so.
        TooExpensive when matching needs more than `self.budget` seconds of CPU."""
        if not text or not text.strip():
            raise QueryError(
                "the text to explain is empty; pass a log line, --file PATH, or pipe text on stdin."
            )
        hints: dict[int, normalize.Hint] = {}
        allowed = self._allowed(version, project)
        with matcher.budget(self.budget):
            hits = matcher.explain_text(self.index, text, allowed=allowed, hints=hints)
        hits, found = self._detect(hits, hints, project)
        if len({h.line for h in hits}) > 1:
            # Errors on several lines: a log, not one message. Report every one of them,
            # most severe first, as a scan would; `limit` is for ranking candidates of one line.
            return self._matches(matcher.log_order(self.index, hits), found)
        return _answered([self._match(h, found) for h in hits])[:limit]

    def explain_stream(
        self,
        stream: IO[str] | BoundedLines,
        *,
        version: str | None = None,
        limit: int = 5,
        project: str | None = None,
    ) -> list[Match]:
        """Like `explain` for a file or stdin: a short paste is read whole; a long log is
        scanned line by line (every known error, most severe first). Memory is bounded
        whatever the input: lines are read through `BoundedLines` (pass one to learn which
        lines were cut)."""
        lines = stream if isinstance(stream, BoundedLines) else BoundedLines(stream, "the input")
        it = lines.blocks()
        head: list[tuple[str | bytes, int]] = []
        size = 0
        for block in it:
            head.append(block)
            size += len(_text(block[0])) + 1
            if size > HEAD_CHARS:  # a log: scanned, at the cost of its length, with no budget
                return self.scan_blocks(itertools.chain(head, it), version=version, project=project)
        text = "\n".join(_text(t) for t, _ in head)
        return self.explain(text, version=version, limit=limit, project=project)

    def scan(
        self, lines: Iterable[str], *, version: str | None = None, project: str | None = None
    ) -> list[Match]:
        """Every known error in a log with its line number, most severe first (streaming)."""
        return self._scanned(matcher.scan_lines, lines, version, project)

    def scan_blocks(
        self,
        blocks: Iterable[tuple[str | bytes, int]],
        *,
        version: str | None = None,
        project: str | None = None,
    ) -> list[Match]:
        """`scan` for a log in blocks of lines ((text, n): `BoundedLines.blocks`), as a file is read."""
        return self._scanned(matcher.scan_blocks, blocks, version, project)

    def _scanned(self, scan, source, version: str | None, project: str | None) -> list[Match]:
        """`scan` (matcher.scan_lines or scan_blocks) over `source`, its hits as matches."""
        hints: dict[int, normalize.Hint] = {}
        hits = scan(self.index, source, allowed=self._allowed(version, project), hints=hints)
        hits, found = self._detect(hits, hints, project)
        return self._matches(hits, found)

    def _detect(self, hits, hints, project: str | None):
        if project is not None:
            return hits, matcher.Detection(project, {}, None)
        return matcher.pick_project(self.index, hits, hints)

    def search(
        self,
        q: str,
        *,
        version: str | None = None,
        limit: int = 20,
        project: str | None = None,
    ) -> list[Match]:
        """Records whose message, flags or meaning resemble `q` (BM25F, catalog/browse.py),
        with no threshold: for browsing. A query that is a flag (`page-size`, `--page-size`,
        `page_size`) lists the records of that flag first (search_flag's order)."""
        return self.search_page(q, version=version, limit=limit, project=project)[0]

    def search_page(
        self,
        q: str,
        *,
        version: str | None = None,
        limit: int = 20,
        offset: int = 0,
        project: str | None = None,
    ) -> tuple[list[Match], int]:
        """One page of `search` (`limit` matches from `offset`) and how many matched in all."""
        idx = self.search_index
        ranked = browse.rank(idx, q)
        if len(q) <= MAX_FLAG_QUERY and _FLAG_QUERY.fullmatch(q.strip()):
            first = [(d, 1.0) for d, _ in browse.rank_flag(idx, q)]
            ranked = first + [(d, s * 0.99) for d, s in ranked]  # (below every flag record)
        return self._page(ranked, version, project, limit, offset)

    def search_flag(
        self,
        flag: str,
        *,
        version: str | None = None,
        limit: int = 20,
        offset: int = 0,
        project: str | None = None,
    ) -> tuple[list[Match], int]:
        """The records of `flag` (`--max-model-len`, `max-model-len`, `max_model_len`, or a
        prefix: `max-model`), most about it first (browse.rank_flag), one page of them and
        how many in all."""
        ranked = browse.rank_flag(self.search_index, flag)
        return self._page(ranked, version, project, limit, offset, how="flag")

    @property
    def search_index(self) -> browse.Index:
        if self._search is None:  # read on the first search: explain never pays for it
            self._search = browse.load(self.con, self.path)
        return self._search

    def _page(
        self, ranked, version, project, limit: int, offset: int, how: str = "fuzzy"
    ) -> tuple[list[Match], int]:
        """A page of (search position, score) pairs as matches, filtered and each id once."""
        allowed = self._allowed(version, project)
        ids, pos = self.search_index.ids, self.index.pos
        seen: set[str] = set()
        hits = []
        for doc, score in ranked:
            rid = ids[doc]
            if rid in seen or rid not in pos or (allowed is not None and rid not in allowed):
                continue
            seen.add(rid)
            hits.append(matcher.Hit(pos[rid], score, how, None))
        return [self._match(h) for h in hits[offset : offset + limit]], len(hits)

    def _matches(
        self, hits: list[matcher.Hit], found: matcher.Detection | None = None
    ) -> list[Match]:
        """Matches of a log: the record of each id is loaded once and shared by its matches
        (10,000 findings of one message must not hold 10,000 copies of its record)."""
        records: dict[str, dict[str, Any]] = {}
        return _answered([self._match(h, found, records) for h in hits])

    def _match(
        self,
        h: matcher.Hit,
        found: matcher.Detection | None = None,
        records: dict[str, dict[str, Any]] | None = None,
    ) -> Match:
        rid = self.index.ids[h.index]
        if records is None:
            rec = self.get(rid) or {}
        else:
            rec = records.get(rid) or records.setdefault(rid, self.get(rid) or {})
        names = rec.get("placeholders") or []
        values = {}
        for group, text in h.values.items():
            i = int(group[1:]) if group[:1] == "v" and group[1:].isdigit() else -1
            values[names[i] if 0 <= i < len(names) else group] = text
        name = self.index.project[h.index]
        how = found.how(name, h.line) if found else "message"
        project = self._project_of(name, how)
        answer = None
        if rec.get("kind") == "argparse" and h.how == "pattern":
            from kverr.catalog import argparse_answers  # only a paste of an argparse error

            answer = argparse_answers.answer(self, rec, values, project)
            moved = None if answer else argparse_answers.rehome(self, rec, values)
            if moved:  # another project's program printed it: answered as that project's
                rec, values, facts = moved
                rid, project = rec["id"], {**facts, "detectedBy": "program"}
                answer = argparse_answers.answer(self, rec, values, project)
            for group in ("before", "closed", "head", "tail"):  # read by the answer alone
                values.pop(group, None)
        return Match(rec, h.score, h.how, values, h.line, self._release_names(rid), project, answer)

    def _project_of(self, name: str, how: str) -> dict[str, Any]:
        facts = next((p for p in self.projects if p["name"] == name), {"name": name})
        return {"name": name, "product": facts.get("product", name), "detectedBy": how}

    def releases_of(self, record_id: str) -> list[str]:
        """The releases containing a record, oldest first: the `releases` list of a match, of
        /errors/{id}, of `kverr show --json` and of the JSONL export alike."""
        return list(self._release_names(record_id))

    def _release_names(self, rid: str) -> tuple[str, ...]:
        """Release tags containing the record (precomputed at load, see store._releases)."""
        if rid not in self._revs:
            row = self.con.execute("SELECT releases FROM records WHERE id = ?", [rid]).fetchone()
            self._revs[rid] = tuple(json.loads(row[0])) if row and row[0] else ()
        return self._revs[rid]

    def _allowed(self, version: str | None, project: str | None = None) -> set[str] | None:
        allowed = None
        if project is not None:
            self.project(project)  # NotFound for a project this catalog does not hold
            rows = self.con.execute("SELECT id FROM records WHERE project = ?", [project])
            allowed = {r[0] for r in rows.fetchall()}
        if version is None:
            return allowed
        at: set[str] = set()
        for rev in self.resolve_versions(version, project=project):
            rows = self.con.execute(
                "SELECT DISTINCT id FROM occurrences WHERE ? BETWEEN from_ord AND to_ord", [rev.ord]
            ).fetchall()
            at.update(r[0] for r in rows)
        return at if allowed is None else at & allowed

    # ------------------------------------------------------------ lookups

    def find_id(self, key: str) -> str | None:
        """The record id `key` names: an id, the slug a page or `explain` shows, or an id prefix
        of at least 6 hex characters that only one record has. None when it names none."""
        key = key.strip().lower()
        rows = self.con.execute(
            "SELECT id FROM records WHERE id = ? OR slug = ? "
            "OR (length(?) BETWEEN 6 AND 15 AND regexp_full_match(?, '[0-9a-f]+') AND starts_with(id, ?)) "
            "LIMIT 2",
            [key, key, key, key, key],
        ).fetchall()
        return rows[0][0] if len(rows) == 1 else None

    def record_match(self, key: str) -> Match | None:
        """The record `key` names (id, slug or id prefix, see find_id) as a Match of kind "id",
        with its releases: what `kverr show` prints. None when `key` names none."""
        rid = self.find_id(key)
        rec = self.get(rid) if rid else None
        if rec is None:
            return None
        project = self._project_of(self.index.project[self.index.pos[rid]], "id")
        return Match(rec, 1.0, "id", {}, None, self._release_names(rid), project)

    def get(self, record_id: str) -> dict[str, Any] | None:
        # The record is kept decoded (bounded), and every caller gets its own copy to change:
        # a repeat costs a copy of its lists and dicts (its strings are shared, being
        # immutable), a third of the json.loads it replaces, and no DuckDB round trip.
        rec = self._records.get(record_id)
        if rec is None:
            row = self.con.execute(
                "SELECT record, releases FROM records WHERE id = ?", [record_id]
            ).fetchone()
            if row is None:
                return None
            rec = json.loads(row[0])
            if record_id not in self._revs:  # what a match asks next (_release_names)
                self._revs[record_id] = tuple(json.loads(row[1])) if row[1] else ()
            if len(self._records) >= RECORD_CACHE:
                return rec
            self._records[record_id] = rec
        return _copied(rec)

    def records(
        self, *, version: str | None = None, project: str | None = None
    ) -> Iterator[dict[str, Any]]:
        allowed = self._allowed(version, project)
        cur = self.con.execute("SELECT id, record FROM records ORDER BY id")
        while batch := cur.fetchmany(1000):
            for rid, rec in batch:
                if allowed is None or rid in allowed:
                    yield json.loads(rec)

    def flag(self, name: str, *, project: str | None = None) -> dict[str, Any] | None:
        """A flag's declaration (the given project's, else the first project's that has it)."""
        rows = self._flag_rows("WHERE name = ?", [name], project)
        return rows[0] if rows else None

    def flag_history(self, name: str, *, project: str | None = None) -> list[dict[str, Any]]:
        """A flag's declarations over the revisions (flaghistory.jsonl), oldest first: one row
        per run of revisions declaring it alike, with the releases of that run (`releases`, and
        `range` as text) and its `project`; [] for a flag no revision declares."""
        from kverr.catalog import argparse_answers

        out = []
        for p in [project] if project is not None else [q["name"] for q in self.projects]:
            hist = argparse_answers.history(self, p)
            for sp in hist.spans(name):
                ords = set(range(sp["from"], sp["to"] + 1))
                out.append(
                    {**sp, "project": p, "releases": hist.names(ords), "range": hist.text(ords)}
                )
        return out

    def flags(self, *, project: str | None = None) -> list[dict[str, Any]]:
        return self._flag_rows("", [], project)

    def _flag_rows(self, where: str, params: list, project: str | None) -> list[dict[str, Any]]:
        if project is not None:
            where = f"{where} AND f.project = ?" if where else "WHERE f.project = ?"
            params = [*params, project]
        rows = self.con.execute(
            f"""SELECT f.*, coalesce((SELECT list(rf.id ORDER BY rf.id) FROM record_flags rf
                JOIN records r ON r.id = rf.id WHERE rf.flag = f.name AND r.project = f.project), [])
                AS records FROM flags f {where} ORDER BY name, project""",
            params,
        ).dicts()
        for d in rows:
            d["choices"] = json.loads(d["choices"]) if d["choices"] is not None else None
        return rows

    def revisions(self, *, project: str | None = None) -> list[Revision]:
        """The catalog's revisions (with ord and project), oldest first per project."""
        where, params = ("WHERE project = ?", [project]) if project is not None else ("", [])
        sql = f"SELECT ord, sha, date, tags, subject, project FROM revisions {where} ORDER BY ord"
        return self._rev_rows(sql, params)

    def revisions_of(self, record_id: str) -> list[Revision]:
        return self._rev_rows(
            """SELECT r.ord, r.sha, r.date, r.tags, r.subject, r.project FROM revisions r
               WHERE EXISTS (SELECT 1 FROM occurrences o WHERE o.id = ?
                             AND r.ord BETWEEN o.from_ord AND o.to_ord) ORDER BY r.ord""",
            [record_id],
        )

    def dataset_version(self) -> str:
        """The loaded dataset's version (its manifest's datasetVersion; "" when unknown)."""
        row = self.con.execute("SELECT value FROM meta WHERE key = 'datasetVersion'").fetchone()
        return row[0] if row and row[0] else ""

    def release_order(self, *, tags_only: bool = False, project: str | None = None) -> list[str]:
        """Every name a match's `releases` can hold, oldest first: each revision's tags (and
        snapshot labels) and the short sha of the newest commit when it is untagged, as
        store._releases names them (each project's own newest commit). `tags_only`: the tags
        of commits alone, the releases proper, which views group into ranges (a sha or a
        snapshot label stands alone). `project`: that project's alone."""
        revs = self.revisions(project=project)
        newest_git: dict[str, int] = {}
        for r in revs:
            if r.sha:
                newest_git[r.project] = max(r.ord, newest_git.get(r.project, r.ord))
        out: list[str] = []
        for r in revs:
            if r.tags and (r.sha or not tags_only):
                out += r.tags
            elif r.ord == newest_git.get(r.project) and not tags_only:
                out.append(r.sha[:10])
        return out

    def release_orders(self) -> dict[str, list[str]]:
        """Each project's releases proper (release_order's tags_only), for ranges: the names
        one project gives its releases may be another's too."""
        return {
            p["name"]: self.release_order(tags_only=True, project=p["name"]) for p in self.projects
        }

    def _rev_rows(self, sql: str, params: list) -> list[Revision]:
        return [
            Revision(sha=s, date=d, tags=tuple(json.loads(t) if t else ()), subject=subj, ord=o, project=p)
            for o, s, d, t, subj, p in self.con.execute(sql, params).fetchall()
        ]  # fmt: skip

    def resolve_versions(self, rev: str, *, project: str | None = None) -> list[Revision]:
        """resolve_version, where a release that several projects of the catalog name (one's
        v0.4.0, another's ≈v0.4.0) is one revision of each: what a message matched against it
        may be raised by."""
        if project is None and len(self.projects) > 1:
            found = []
            for p in self.projects:
                with contextlib.suppress(NotFound):
                    found.append(self.resolve_version(rev, project=p["name"]))
            if len(found) > 1:
                return found
        return [self.resolve_version(rev, project=project)]

    def resolve_version(self, rev: str, *, project: str | None = None) -> Revision:
        """A release tag or snapshot label, a sha prefix (>= 4 hex), or HEAD (the newest git
        revision built) -> its revision row; NotFound otherwise. A snapshot revision (files
        from disk, sha null) is found by its label only. In a catalog of several projects,
        HEAD needs `project`."""
        revs = self.revisions(project=project)
        found = [r for r in revs if rev in r.tags]
        if not found:  # `0.5.9` is what a package's __version__ prints; the tag is `v0.5.9`,
            # or `≈v0.5.9` where the release was named by its date (pipeline/releases.py)
            names = _spellings(rev)
            found = [r for r in revs if names.intersection(r.tags)]
        if not found and rev == "HEAD":
            newest = {r.project: r for r in revs if r.sha}
            if len(newest) > 1:
                raise NotFound(
                    f"HEAD is ambiguous in a catalog of {len(newest)} projects; pass --project "
                    f"({', '.join(sorted(newest))}) or a sha."
                )
            found = list(newest.values())
        if not found and len(rev) >= 4:
            found = [r for r in revs if r.sha and r.sha.startswith(rev.lower())]
        if len(found) == 1 or (found and all(f.ord == found[0].ord for f in found)):
            return found[0]
        where = f"of project {project!r} " if project else ""
        projects = {f.project for f in found}
        if len(projects) > 1 and len(found) == len(projects):
            raise NotFound(
                f"{rev} is a version of {' and '.join(sorted(projects))}; pass --project"
                f" ({', '.join(sorted(projects))})."
            )
        if found:
            raise NotFound(
                f"version {rev!r} is ambiguous; list revisions with `kverr history` or pass a longer sha."
            )
        elsewhere = self._release_of_another(rev, project)
        if elsewhere:
            raise NotFound(elsewhere)
        raise NotFound(
            f"version {rev!r} is not a revision {where}in this catalog; {_nearest_tags(rev, revs)}"
        )

    def release_owners(self, rev: str) -> list[str]:
        """The products of the projects that have a release spelled `rev` (`0.11.1`, `v0.5.9`)."""
        names = _spellings(rev) | {rev}
        have = {r.project for r in self.revisions() if names.intersection(r.tags)}
        return [p["product"] for p in self.projects if p["name"] in have]

    def _release_of_another(self, rev: str, project: str | None) -> str | None:
        """The sentence for a release that another project of the catalog has, or None."""
        if project is None:
            return None
        names = _spellings(rev) | {rev}
        theirs = sorted(
            {r.project for r in self.revisions() if r.project != project and names & set(r.tags)}
        )
        if not theirs:
            return None
        products = " or ".join(self.project(p)["product"] for p in theirs)
        mine = self.project(project)["product"]
        return (
            f"{rev} is a version of {products}, not of {mine}; "
            f"try --project {theirs[0]} (or leave --project out)."
        )

    def verify(self) -> int:
        """Read the whole catalog once (CatalogError if any of it is damaged); the record count.
        `serve` runs it before listening: a damaged catalog must not answer half the requests."""
        return store.verify(self.con)

    def ping(self) -> int:
        """One cheap query (the record count): does the catalog still answer?"""
        return int(self.con.execute("SELECT count(*) FROM records").fetchone()[0])

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> Catalog:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _answered(matches: list[Match]) -> list[Match]:
    """Matches without the argparse errors that are not the project's to answer (another
    program printed them, or nothing is known about the options they name)."""
    if not any(m.record.get("kind") == "argparse" for m in matches):
        return matches
    from kverr.catalog import argparse_answers

    kept = [m for m in matches if m.argparse is not None or m.record.get("kind") != "argparse"]
    return argparse_answers.prune(kept)


def open_catalog(path: Path | str | None = None) -> Catalog:
    """Open a catalog read-only: `path`, else `$KVERR_CATALOG`, else the packaged default."""
    import os

    if path is None:
        env = os.environ.get("KVERR_CATALOG")
        if not env:
            return _open_default()
        path = Path(env)
    return Catalog(Path(path))


def _open_default() -> Catalog:
    """The packaged catalog, from the user cache. kverr put that file there and can build it
    again, so a damaged one is rebuilt here, with a warning, instead of failing every later
    run; from the datasets, as the shipped copy it may have come from may be the damaged one
    (or written by a DuckDB newer than this one)."""
    import warnings

    path = store.default_catalog_path()
    try:
        return Catalog(path, cached=True)
    except CatalogError as exc:
        warnings.warn(
            f"the cached catalog {path} was damaged ({exc.reason}); rebuilding it from the packaged dataset.",
            KverrWarning,
            stacklevel=3,
        )
    # connect_read_only removed the damaged file; this builds it again.
    return Catalog(store.default_catalog_path(shipped=False), cached=True)


def _spellings(rev: str) -> set[str]:
    """The tags a version may be written as: `0.5.9`, `v0.5.9`, `≈v0.5.9` (named by date)."""
    bare = rev.removeprefix("≈")
    bare = bare[1:] if bare[:1] in "vV" and bare[1:2].isdigit() else bare
    if not bare[:1].isdigit():
        return {rev}
    return {bare, f"v{bare}", f"≈v{bare}"}


def _nearest_tags(rev: str, revs: list[Revision]) -> str:
    """The next step after an unknown version: the tags it most likely meant (`v0.5.0` when
    only v0.5.0rc0..rc2 were tagged), else the newest tag as an example of the spelling."""
    import difflib

    tags = [t for r in revs for t in r.tags]
    want = rev if rev[:1] in "vV" else f"v{rev}"
    plain = {t.removeprefix("≈"): t for t in tags}  # a release named by its date reads alike
    close = [t for t in tags if t.removeprefix("≈").startswith(want)][:3] or [
        plain[t] for t in difflib.get_close_matches(want, list(plain), n=3)
    ]
    if close:
        return f"did you mean {', '.join(close)}? (`kverr history` lists them all)"
    releases = [t for t in tags if re.match(r"≈?v\d", t)]  # not a snapshot label
    example = f" like {releases[-1]}" if releases else ""
    return f"list revisions with `kverr history` or pass a release tag{example}."


def _text(block: str | bytes) -> str:
    """A block of `BoundedLines.blocks` as text (bytes were read as with errors="replace")."""
    return block.decode("utf-8", "replace") if isinstance(block, bytes) else block


def _copied(value: Any) -> Any:
    """A copy of a decoded JSON value: new dicts and lists, the same (immutable) strings."""
    if type(value) is dict:
        return {k: _copied(v) if type(v) in (dict, list) else v for k, v in value.items()}
    if type(value) is list:
        return [_copied(v) if type(v) in (dict, list) else v for v in value]
    return value
