"""plan: which revisions to build, and each one's files as (path, blob sha).

A directory is one revision; a git build lists revisions (tags, ranges, --touching) and reads
their trees without a checkout; --snapshot adds one revision of files from disk.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kverr.extractor import sources
from kverr.pipeline.cache import Cache
from kverr.pipeline.releases import name_releases

from kverr.errors import SourceError
from kverr.ftypes import Profile, Revision, SourceFile


@dataclass(frozen=True)
class Plan:
    revisions: list[Revision]
    files: list[list[tuple[str, str]]]  # per revision: (path, blob), sorted by path
    read: Callable[[str, str], SourceFile]  # (path, blob) -> SourceFile
    repository: str | None
    close: Callable[[], None]
    # --snapshot files: {"path", "repoPath", "blob", "label", "date"} (the manifest's provenance)
    snapshots: tuple[dict, ...] = ()
    # git builds: any object by name (`sha:path`), for modules outside the file set (extractor/imports.py)
    read_object: Callable[[str], bytes] | None = None
    profile: Profile | None = None  # the project: every later step reads its rules from here


def plan_directory(
    path: Path,
    globs: Sequence[str],
    *,
    repo_name: str | None = None,
    profile: Profile | None = None,
) -> Plan:
    """One revision from files on disk. It has no commit, so no links; its records still name
    the repository they come from (--repo-name, else the profile's)."""
    revision, files = sources.read_directory(path, globs)
    repo = repo_name or (profile.repository if profile else None)
    revision = dataclasses.replace(revision, repo=repo)
    by_key = {(f.path, f.blob): f for f in files}
    return Plan(
        [revision],
        [sorted(by_key)],
        lambda p, b: by_key[(p, b)],
        repo,
        lambda: None,
        profile=profile,
    )


def plan_directory_default(
    path: Path, globs: Sequence[str] | None, *, repo_name: str | None, profile: Profile
) -> tuple[Plan, list[str]]:
    """A directory without --files: the profile's file set when the tree has it, else every .py."""
    kw = {"repo_name": repo_name, "profile": profile}
    if globs:
        return plan_directory(path, globs, **kw), list(globs)
    try:
        return plan_directory(path, profile.file_set(), **kw), list(profile.file_set())
    except SourceError:
        return plan_directory(path, ["**/*.py"], **kw), ["**/*.py"]


def plan_git(
    repo: Path,
    revs: Sequence[str],
    *,
    tags_glob: str | None,
    touching: bool,
    globs: Sequence[str],
    repo_name: str | None,
    cache: Cache | None = None,
    profile: Profile | None = None,
) -> Plan:
    revisions = sources.list_revisions(
        repo, revs, tags_glob=tags_glob, touching=touching, globs=globs, repo_name=repo_name
    )
    reader = sources.BlobReader(repo)
    try:
        memo: dict = {}  # subtrees already listed: neighbouring commits share most of them
        files = [_tree(reader, r.sha or "", globs, cache, memo) for r in revisions]
        if not any(files):
            raise SourceError(sources._no_match(f"{repo} at the selected revisions", globs))
        revisions = name_releases(
            str(repo), revisions, files, profile, lambda sha: _tree(reader, sha, globs, cache, memo)
        )
    except BaseException:
        reader.close()
        raise
    return Plan(
        revisions,
        files,
        reader.source,
        repo_name,
        reader.close,
        read_object=reader.read,
        profile=profile,
    )


def add_snapshot(
    plan: Plan, specs: Sequence[str], *, label: str, date: str, globs: Sequence[str]
) -> Plan:
    """One more revision after the git ones: the newest git revision's files with the snapshot
    files added or replacing theirs. It is no commit, so its sha is null; its tag is `label`
    and its date the one given (never the clock: a rebuild must be byte-identical)."""
    date = sources.parse_date(date, what="--snapshot-date")
    base = plan.revisions[-1]
    if base.date and date < base.date:
        raise SourceError(
            f"--snapshot-date {date} is older than the newest revision built ({base.sha[:12]}, {base.date}); pass a later date."
        )
    if any(label in r.tags for r in plan.revisions) or not label.strip():
        raise SourceError(
            f"--snapshot-label {label!r} is empty or already a tag of a revision built; pass another label."
        )
    placed: dict[str, tuple[str, SourceFile]] = {}
    for spec in specs:
        for disk, src in sources.read_snapshot(spec, globs):
            placed[src.path] = (disk, src)
    files = dict(plan.files[-1])
    files.update({path: src.blob for path, (_, src) in placed.items()})
    by_key = {(src.path, src.blob): src for _, src in placed.values()}
    where = ", ".join(f"{disk} at {path}" for path, (disk, _) in sorted(placed.items()))
    revision = Revision(
        repo=base.repo,
        sha=None,
        date=date,
        tags=(label,),
        subject=f"snapshot {label}: {where}, over {base.sha[:12]} (files from disk, not a commit)",
    )
    provenance = tuple(
        {"path": disk, "repoPath": path, "blob": src.blob, "label": label, "date": date}
        for path, (disk, src) in sorted(placed.items())
    )
    read = plan.read
    return Plan(
        revisions=[*plan.revisions, revision],
        files=[*plan.files, sorted(files.items())],
        read=lambda p, b: by_key.get((p, b)) or read(p, b),
        repository=plan.repository,
        close=plan.close,
        snapshots=plan.snapshots + provenance,
        read_object=plan.read_object,
        profile=plan.profile,
    )


def _tree(
    reader: sources.BlobReader, sha: str, globs: Sequence[str], cache: Cache | None, memo: dict
) -> list[tuple[str, str]]:
    """A commit's matching files never change: cached, a no-op rebuild reads no tree."""
    key = f"{sha}:{json.dumps(list(globs))}"
    hit = cache.get("tree", key) if cache else None
    if hit is not None:
        return [tuple(x) for x in json.loads(hit)]
    files = sources.list_files_read(reader, sha, globs, memo)
    if cache:
        cache.put_many("tree", {key: json.dumps(files)})
    return files


def link_repo(git_repo: Path, globs: Sequence[str] | None, profile: Profile) -> str:
    """The GitHub `owner/name` that githubUrl links point into when --repo-name is not given:
    the repository's GitHub origin, else the profile's repository for the profile's file set.
    Another file set without a GitHub origin must say, rather than get links into the
    profile's project."""
    name = sources.github_name(git_repo)
    if name:
        return name
    if not globs or list(globs) in (list(profile.files), list(profile.file_set())):
        return profile.repository
    raise SourceError(
        f"{git_repo} has no GitHub origin to link records to; pass --repo-name OWNER/NAME."
    )
