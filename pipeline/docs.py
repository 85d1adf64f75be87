"""docs: the project's own documentation at each revision built, for the knowledge fields.

The profile's `[docs]` globs name the pages (argument tables, feature pages, config modules)
and the launch files (docs examples, tests, CI). Each file is read from git objects at the
revision (no checkout) and parsed once per blob (records/knowledge/docs.py, cached); a
revision's `Docs` carries the links of that revision ("Learn more" opens the page as it was).
A directory build has no git objects to read: its records go without.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path

from kverr.extractor import sources
from kverr.pipeline.cache import Cache, code_fingerprint
from kverr.records.knowledge.docs import given_options, read_file

from kverr.errors import SourceError
from kverr.ftypes import DocFile, Docs, Profile, Revision, from_json, to_json


class DocsReader:
    """`at(revision)` -> that revision's Docs (made by docs_reader: the profile declares
    docs)."""

    def __init__(self, git_repo: Path, profile: Profile, repository: str, cache: Cache) -> None:
        self.profile, self.repository, self.cache = profile, repository, cache
        self.globs = tuple(dict.fromkeys(profile.docs_pages + profile.docs_launches))
        self.reader = sources.BlobReader(git_repo)
        self.markers = profile.launch_modules + profile.launch_executables
        self.calls = profile.docs_launch_calls
        self.fp = code_fingerprint("records") + ":" + json.dumps([self.markers, self.calls])
        self._memo: dict = {}  # subtrees listed: neighbouring revisions share most of them
        self._trees: dict[str, list[tuple[str, str]]] = {}
        self._last: tuple[str, Docs] | None = None

    def files(self, sha: str) -> list[tuple[str, str]]:
        if sha not in self._trees:
            try:
                self._trees[sha] = sources.list_files_read(self.reader, sha, self.globs, self._memo)
            except SourceError:
                self._trees[sha] = []
        return self._trees[sha]

    def key(self, revision: Revision) -> str:
        """What records built with this revision's docs depend on: the files, the parser, the
        links. "" when there are none."""
        if not revision.sha:
            return ""
        files = self.files(revision.sha)
        text = json.dumps([self.fp, self._urls(revision), files])
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def at(self, revision: Revision) -> Docs | None:
        if not revision.sha:
            return None
        key = self.key(revision)
        if self._last and self._last[0] == key:
            return self._last[1]
        pages, launches = set(self.profile.docs_pages), set(self.profile.docs_launches)
        parsed = []
        for path, blob in self.files(revision.sha):
            page, shows = (sources.matches_any(path, globs) for globs in (pages, launches))
            parsed.append(self._parse(path, blob, page, shows))
        url, flag_url = self._urls(revision)
        docs = Docs(tuple(parsed), url=url, flag_url=flag_url, key=key)
        self._last = (key, docs)
        return docs

    def _parse(self, path: str, blob: str, page: bool, shows: bool) -> DocFile:
        ckey = f"{self.fp}:{path}:{blob}:{int(page)}{int(shows)}"
        hit = self.cache.get("docfile", ckey)
        if hit is not None:
            return from_json(hit)
        src = self.reader.source(path, blob)
        found = (
            read_file(path, src.text, self.markers, page=page, shows=shows, calls=self.calls)
            if not src.error
            else DocFile(path)
        )
        self.cache.put_many("docfile", {ckey: to_json(found)})
        return found

    def _urls(self, revision: Revision) -> tuple[str, str]:
        release = next((t for t in revision.tags if t[:1] in "v0123456789"), "latest")
        fill = {"{repository}": self.repository, "{sha}": revision.sha or "", "{release}": release}
        out = []
        for template in (self.profile.docs_url, self.profile.docs_flag_url):
            for k, v in fill.items():
                template = template.replace(k, v)
            out.append(template)
        return out[0], out[1]

    def close(self) -> None:
        self.reader.close()


def docs_reader(git_repo: Path | None, profile: Profile, repository: str | None, cache: Cache):
    """A DocsReader for a git build whose profile declares docs, else None."""
    if git_repo is None or not (profile.docs_pages or profile.docs_launches):
        return None
    return DocsReader(Path(git_repo), profile, repository or profile.repository, cache)


def base_revision(revisions: Sequence[Revision], ord_: int) -> Revision:
    """The commit a revision's docs are read at: itself, or for a snapshot (no commit) the
    newest commit before it, whose tree the snapshot's files were placed over."""
    for rev in reversed(revisions[: ord_ + 1]):
        if rev.sha:
            return rev
    return revisions[ord_]


def finish(
    records: list[dict],
    flag_spans: Sequence[dict],
    revisions: Sequence[Revision],
    profile: Profile,
    spans: Sequence[dict] = (),
    lineage: Sequence[dict] = (),
) -> list[dict]:
    """Each record with what only the whole build knows (records/knowledge/after.py): the
    first release declaring each flag, the releases around a check's arrival to options an
    older release already took, the kverr check tip from its final exampleFix. `spans` and
    `lineage`: the records' occurrences and older wordings (pipeline/introduce.first_seen)."""
    from kverr.pipeline.introduce import first_seen
    from kverr.records.knowledge.after import before_launch
    from kverr.records.knowledge.after import finish as finish_one

    tag_at = {i: r.tags[0] for i, r in enumerate(revisions) if r.tags and r.sha}
    ords = sorted(tag_at)
    since: dict[str, str] = {}
    spans_of: dict[str, list[dict]] = {}
    for sp in sorted(flag_spans, key=lambda s: s["from"]):
        for option in sp.get("options") or [sp["name"]]:
            spans_of.setdefault(option, []).append(sp)
        first = next((o for o in ords if sp["from"] <= o <= sp["to"]), None)
        if first is not None and sp["name"] not in since:
            since[sp["name"]] = tag_at[first]
    arrived = first_seen(spans, lineage)

    def upgrade(rec: dict) -> tuple[str, str] | None:
        """(the last release without the check, the first with it), when the last one's
        parser took the launch the check was seen to stop: every option there, and its value
        among the choices declared then (`--x=v` of a JSON option has no history here: no
        claim). A launch kept across that upgrade meets the check."""
        at = arrived.get(rec["id"])
        error = rec.get("severity") in ("error", "critical")
        if not at or rec.get("kind") == "argparse":
            return None
        if not (error or rec.get("backgroundTag") == "deprecated-option"):
            return None  # (a notice's arrival changes nothing a launch must do)
        shown = before_launch(rec, launch)
        before = [o for o in ords if o < at]
        after = [o for o in ords if o >= at]
        if shown is None or not before or not after:
            return None
        last = before[-1]
        given = given_options(shown[1])
        if given is None or not all(took(opt, value, last) for opt, value in given):
            return None
        if _phrases(rec.get("errorMessage") or "") & said_at(last):
            return None  # (an older check said it in words lineage did not tie to this one)
        return tag_at[last], tag_at[after[0]]

    said: dict[int, set[tuple[str, ...]]] = {}
    message = {rec["id"]: rec.get("errorMessage") or "" for rec in records}

    def said_at(at: int) -> set[tuple[str, ...]]:
        """The phrases of every message the revision at `at` has."""
        if at not in said:
            alive = {sp["id"] for sp in spans if sp["from"] <= at <= sp["to"]}
            said[at] = {p for rid in alive for p in _phrases(message.get(rid, ""))}
        return said[at]

    def took(option: str, value: str | None, at: int) -> bool:
        for sp in spans_of.get(option, ()):
            if sp["from"] <= at <= sp["to"]:
                choices = sp.get("choices")
                return not choices or value is None or value in map(str, choices)
        return False

    launch = profile.launch_command()
    return [finish_one(rec, launch=launch, since=since, upgrade=upgrade(rec)) for rec in records]


def _phrases(template: str) -> set[tuple[str, ...]]:
    """Runs of four words of a message's own text (its placeholders left out): a check that
    moved to a new message keeps some ("We recommend to remove {feature} from your config")."""
    out: set[tuple[str, ...]] = set()
    for piece in re.split(r"\{[^{}]*\}", template):
        words = re.findall(r"[a-z0-9_]+", piece.lower())
        out.update(tuple(words[k : k + 4]) for k in range(len(words) - 3))
    return out
