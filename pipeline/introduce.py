"""introduce: the commit that introduced each check, for a build that holds it.

A check's meaning is often only in the commit that added it: its subject, its PR number and
the paragraphs of its body. That commit is the first revision built where the record,
or an older wording of its message (lineage), exists, and only when the build leaves no
commit out there: the revision before it is the previous commit touching the file set
(`kverr build --touching` builds all of them). A release-only build knows the first release,
not the commit, so it says nothing. A paragraph of its body that speaks to the check is the
`why` of a record nothing else explains (records.knowledge.introduced).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from kverr.extractor import sources
from kverr.pipeline.cache import Cache
from kverr.pipeline.plan import Plan


def touching_soon(
    git_repo: Path | None, plan: Plan, globs: Sequence[str], cache: Cache
) -> Callable[[], list[str] | None]:
    """The commits touching the file set up to the newest revision (`sources.touching_commits`:
    a walk of the whole history, most of a warm rebuild): from the cache, or walked by git in a
    thread started now, beside the extraction. Returns the call that gives them (None: no git
    revision to walk from), and keeps a walked list in the cache."""
    known = [r.sha for r in plan.revisions if r.sha]
    if git_repo is None or not known:
        return lambda: None
    key = json.dumps([known[-1], list(globs)])
    cached = cache.get("touching", key)
    if cached is not None:
        found = json.loads(cached)
        return lambda: found
    out: dict[str, object] = {}

    def walk() -> None:
        try:
            out["shas"] = sources.touching_commits(git_repo, known[-1], globs)
        except Exception as exc:  # raised again where the list is needed
            out["error"] = exc

    thread = threading.Thread(target=walk, name="kverr-touching", daemon=True)
    thread.start()

    def result() -> list[str]:
        thread.join()
        if "error" in out:
            raise out["error"]  # type: ignore[misc]
        shas = out["shas"]
        cache.put_many("touching", {key: json.dumps(shas)})
        return shas  # type: ignore[return-value]

    return result


def introducing_commits(
    git_repo: Path | None,
    plan: Plan,
    spans: Sequence[dict],
    lineage: Sequence[dict],
    touching: list[str] | None,
    cache: Cache,
) -> dict[str, dict]:
    """record id -> {"sha", "subject", "body"} of the commit that introduced it, for the
    records whose introduction this build pins down exactly. `touching`: what
    `touching_soon` gave (None exactly when there is no git revision to walk from);
    `cache`: keeps the commits' messages (a commit never changes: a rebuild asks git for
    none of them)."""
    shas = [r.sha for r in plan.revisions]
    if git_repo is None or touching is None:
        return {}
    place = {sha: i for i, sha in enumerate(touching)}
    found = {rid: o for rid, o in first_seen(spans, lineage).items() if _exact(o, shas, place)}
    messages = _messages(git_repo, sorted({shas[o] or "" for o in found.values()}), cache)
    out = {}
    for rid, ord_ in found.items():
        sha = shas[ord_] or ""
        if sha in messages:
            subject, body = messages[sha]
            out[rid] = {"sha": sha, "subject": subject, "body": body}
    return out


def first_seen(spans: Sequence[dict], lineage: Sequence[dict]) -> dict[str, int]:
    """record id -> the first revision built (ord) that has the check, in this wording or an
    older one (lineage)."""
    first: dict[str, int] = {}
    for span in spans:
        first[span["id"]] = min(first.get(span["id"], span["from"]), span["from"])
    previous = {line["id"]: line["previousId"] for line in lineage}
    out = {}
    for rid in first:
        ord_, seen, cur = first[rid], {rid}, rid
        while cur in previous and previous[cur] not in seen:  # the oldest wording
            cur = previous[cur]
            seen.add(cur)
            ord_ = min(ord_, first.get(cur, ord_))
        out[rid] = ord_
    return out


def _messages(git_repo: Path, shas: list[str], cache: Cache) -> dict[str, tuple[str, str]]:
    out = {}
    for sha in shas:
        raw = cache.get("commit", sha)
        if raw is not None:
            out[sha] = tuple(json.loads(raw))
    fresh = sources.commit_messages(git_repo, [s for s in shas if s not in out])
    cache.put_many("commit", {sha: json.dumps(list(m)) for sha, m in fresh.items()})
    return {**out, **fresh}


def _exact(ord_: int, shas: Sequence[str | None], place: dict[str, int]) -> bool:
    """The revision at `ord_` is the commit that introduced what first shows up there: no
    commit touching the file set lies between it and the revision built before it."""
    sha = shas[ord_]
    if sha not in place:
        return False
    # The nearest revision built before it that touched the file set (a release tag on a
    # version bump touches nothing); none: it must be the first commit that touched it at all.
    before = next((place[s] for s in reversed(shas[:ord_]) if s in place), -1)
    return before == place[sha] - 1


def apply(records: list[dict], commits: dict[str, dict]) -> list[dict]:
    """Records whose introducing commit explains them: its words as their meaning's `why`
    (records.knowledge.introduced decides when they speak to the check)."""
    if not commits:
        return records
    from kverr.records.knowledge import introduced

    return [introduced(rec, commits[rec["id"]]) if rec["id"] in commits else rec for rec in records]
