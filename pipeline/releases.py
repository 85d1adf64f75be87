"""Release names for the revisions of a repository that has no release tags (a fork).

A profile's `[releases]` table says how its project releases. Each release not already tagged
in the build gets a name on one revision built:

- its release commit, when the history holds it (an upstream tagged commit listed in
  `commits`, or a commit whose subject bumps the version to it): the revision built whose files
  are that commit's is the release, `v0.5.0`; when none is, the newest revision built before
  it is `≈v0.5.0`;
- else its date: the newest revision built before the release shipped is `≈v0.9.0`, when a
  revision built after that date shows the release falls inside the history built.

`≈` marks a name found by date or by a nearest commit: the release's code and the revision's
may differ (a release branch's own fixes, commits merged after the branch was cut).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence

from kverr.extractor import sources
from kverr.present.display import APPROX

from kverr.ftypes import Profile, Revision


def name_releases(
    repo: str,
    revisions: Sequence[Revision],
    files: Sequence[Sequence[tuple[str, str]]],
    profile: Profile | None,
    tree: Callable[[str], list[tuple[str, str]]],
) -> list[Revision]:
    """`revisions` (oldest first; `files[i]` the file set of the i-th) with the release names
    the profile's table gives them added to their tags. `tree(sha)`: a commit's file set."""
    revisions = list(revisions)
    if profile is None or not (profile.release_dates or profile.release_commits):
        return revisions
    built = [i for i, r in enumerate(revisions) if r.sha]
    if not built:
        return revisions
    tagged = {_bare(t) for r in revisions for t in r.tags}
    names: dict[int, list[str]] = {}
    found = _release_commits(repo, revisions[built[-1]].sha or "", profile)
    for version, (sha, date) in found.items():
        if version in tagged:
            continue
        before = [i for i in built if (revisions[i].date or "") <= date]
        if not before:
            continue
        own = tree(sha)
        same = next((i for i in reversed(before) if list(files[i]) == own), None)
        if same is not None:
            names.setdefault(same, []).append(f"v{version}")
        else:
            names.setdefault(before[-1], []).append(f"{APPROX}v{version}")
        tagged.add(version)
    newest = revisions[built[-1]].date or ""
    for version, date in profile.release_dates:
        if version in tagged or _iso(date) >= newest:
            continue  # (a release after the newest revision built may hold commits past it)
        before = [i for i in built if (revisions[i].date or "") <= _iso(date)]
        if before:
            names.setdefault(before[-1], []).append(f"{APPROX}v{version}")
    order = {v: n for n, (v, _) in enumerate(profile.release_dates)}
    for i, more in names.items():
        more.sort(key=lambda t: (order.get(_bare(t), len(order)), t))
        revisions[i] = dataclasses.replace(revisions[i], tags=(*revisions[i].tags, *more))
    return revisions


def _release_commits(repo: str, tip: str, profile: Profile) -> dict[str, tuple[str, str]]:
    """version -> (sha, date) of the commits in `tip`'s history that made a release: those the
    table lists, then the newest commit whose subject bumps the version to it (one git walk)."""
    out: dict[str, tuple[str, str]] = {}
    bump = re.compile(profile.release_bump) if profile.release_bump else None
    listed = {sha: v for v, sha in profile.release_commits}
    if not bump and not listed:
        return out
    log = sources.git(repo, "log", "-z", "--format=%H%x00%ct%x00%s", "--end-of-options", tip)
    fields = log.decode("utf-8", "replace").split("\0")
    for i in range(0, len(fields) - 2, 3):
        sha, ct, subject = fields[i].strip(), fields[i + 1], fields[i + 2]
        if not ct.isdigit():
            continue
        version = next((v for s, v in listed.items() if sha.startswith(s)), None)
        if version is None and bump is not None:
            m = bump.search(subject)
            version = m.group("version") if m else None
        if version and version not in out:  # newest first: a later bump redoes an earlier one
            out[version] = (sha, sources.iso_utc(int(ct)))
    return out


def _bare(tag: str) -> str:
    """`≈v0.9.0`, `v0.9.0`, `0.9.0` -> `0.9.0`."""
    tag = tag.removeprefix(APPROX)
    return tag[1:] if tag[:1] in "vV" and tag[1:2].isdigit() else tag


def _iso(date: str) -> str:
    """A table date (`2025-05-28T01:30:28Z`) in the dataset's format, to compare as text."""
    return date.replace("Z", ".000Z") if len(date) == 20 else date
