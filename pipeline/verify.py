"""verify: every record's fix run through its revision's own check (`kverr build --verify`).

Records are verified at the revision their newest form was built at, one revision at a time
(verify/stage.py: one sandbox child per revision and platform, started only when a run
misses the cache). Two caches keep a rebuild cheap: `verdict` (a record's whole verdict, keyed
by the file set, the record, the harness code, spec and platform) and `verifyrun` (one run of
the check, keyed the same way plus the launch), so editing the search reruns only what changed.
Without --verify every record says so in its `verification` field (records/__init__.py).
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Callable, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kverr.pipeline.assemble import pin_to_commits
from kverr.pipeline.cache import Cache
from kverr.pipeline.history import Scan
from kverr.pipeline.plan import Plan

from kverr.ftypes import Revision

Progress = Callable[[str, int, int], None]


@dataclass
class VerifyReport:
    """What the build prints: per status counts, and the rate that matters (raise/assert
    records of the newest commit with a verified fix)."""

    counts: dict[str, int] = field(default_factory=dict)
    newest: str = ""  # short sha of the newest commit built
    errors_newest: int = 0  # raise/assert records at it
    verified_newest: int = 0
    runs: int = 0  # runs of the check this build (cache misses)
    cached: int = 0  # runs answered by the cache
    platform: str = ""
    main_file: str = ""  # the args class's file (server_args.py): the 151 records
    main_errors_newest: int = 0
    main_verified_newest: int = 0
    na_newest: int = 0  # raise/assert records at the newest commit that are not applicable
    not_run: str = ""  # why nothing ran (a project with no verify spec): no platform then
    argparse_records: int = 0  # argparse records of one flag (the generic one has no fix)
    argparse_verified: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "counts": dict(sorted(self.counts.items())),
            "newest": self.newest,
            "errorsNewest": self.errors_newest,
            "verifiedNewest": self.verified_newest,
            "notApplicableNewest": self.na_newest,
            "mainFile": self.main_file,
            "mainErrorsNewest": self.main_errors_newest,
            "mainVerifiedNewest": self.main_verified_newest,
            "platform": self.platform,
            **({"notRun": self.not_run} if self.not_run else {}),
            "argparseRecords": self.argparse_records,
            "argparseVerified": self.argparse_verified,
        }


class _Runs(MutableMapping[str, str]):
    """The run cache as a mapping: reads through to sqlite, writes collected and flushed."""

    def __init__(self, cache: Cache, ns: str) -> None:
        self.cache, self.ns, self.new = cache, ns, {}

    def __getitem__(self, key: str) -> str:
        if key in self.new:
            return self.new[key]
        hit = self.cache.get(self.ns, key)
        if hit is None:
            raise KeyError(key)
        return hit

    def __setitem__(self, key: str, value: str) -> None:
        self.new[key] = value

    def __delitem__(self, key: str) -> None:
        self.new.pop(key, None)

    def __iter__(self):
        return iter(self.new)

    def __len__(self) -> int:
        return len(self.new)

    def flush(self) -> None:
        if self.new:
            self.cache.put_many(self.ns, self.new)
            self.cache.commit()
            self.new = {}


def verify_step(
    plan: Plan,
    cache: Cache,
    scan: Scan,
    records: list[dict],
    *,
    repo: Path,
    platform: str | None = None,
    progress: Progress | None = None,
    workers: int = 1,
    occurrences: Sequence[dict] = (),
    trust_repo: bool = False,
) -> tuple[list[dict], VerifyReport]:
    """`records` with their verification (and verified fixes), and the build's report.
    `occurrences`: where each record applies; an argparse record is judged at the newest
    revision it applies at (its own parser, verify/parsing.py)."""
    from kverr.verify.spec import spec_for
    from kverr.verify.stage import Session, Verdict, apply_verdict, files_key, verify_revision

    spec = spec_for(plan.profile)
    progress = progress or (lambda phase, done, total: None)
    report = VerifyReport(platform=spec.platform(platform).name, main_file=spec.main_path)
    if not any(path == spec.main_path for files in plan.files for path, _ in files):
        # Another project: no spec says how to run its validation yet, so nothing is
        # verified, and each record says why rather than a harness error.
        profile = plan.profile
        reason = (
            f"kverr has no verify spec for {profile.product} yet (profile {profile.name} has no"
            " [verify] table)"
            if profile is not None and not profile.verifiable()
            else f"kverr has no verify spec for this project ({spec.main_path} is not in its files)"
        )
        report.platform, report.main_file, report.not_run = "", "", reason
        out = [
            # Nothing ran, so no fix is known to be wrong: each is kept and shown marked "not
            # verified" with the reason (a fix the check rejects is what gets dropped).
            apply_verdict(r, Verdict(_not_run(reason), keep_fix=True))
            for r in records
        ]
        _count(report, out, plan)
        return out, report
    by_sha = {r.sha: i for i, r in enumerate(plan.revisions) if r.sha}
    at = pin_to_commits(plan, scan)
    owed: dict[int, list[dict]] = {}
    parsed: dict[int, list[dict]] = {}  # argparse records, by the newest revision they apply at
    newest = _newest_ords(occurrences)
    for rec in records:
        last = len(plan.revisions) - 1
        if rec.get("scope") == "launch-path":
            continue  # its check runs after start-up: records/ says so in its verification
        if rec.get("kind") == "argparse":
            parsed.setdefault(newest.get(rec["id"], last), []).append(rec)
        else:
            owed.setdefault(at.get(rec["id"], last), []).append(rec)
    runs = _Runs(cache, "verifyrun")
    out: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix=".kverr-verify-", dir=cache.path.parent) as tmp:
        session = Session(
            spec,
            str(repo),
            Path(tmp),
            platform=platform,
            cache=runs,
            workers=workers,
            trust_repo=trust_repo,
        )
        try:
            done = 0
            # One pass over the revisions, each loaded once: an argparse record's revision is
            # often one whose checks are verified too.
            for ord_ in sorted(set(owed) | set(parsed)):
                recs = owed.get(ord_, [])
                revision, base, overrides = _where(plan, ord_, by_sha)
                files = plan.files[ord_]
                key = files_key(revision, files)
                fp = _verdict_fp(session)
                verdicts, todo = _cached_verdicts(cache, fp, key, recs)
                if todo:
                    exts = scan.loader.load(files, text=True)
                    fresh = verify_revision(
                        exts,
                        todo,
                        session,
                        base,
                        files=files,
                        overrides=overrides,
                        previous=scan.previous_at(ord_),
                        label=revision,
                    )
                    verdicts.update(fresh)
                    cache.put_many(
                        "verdict",
                        {_vkey(fp, key, r): json.dumps(_verdict_to(fresh[r["id"]])) for r in todo},
                    )
                    runs.flush()
                for rec in recs:
                    out[rec["id"]] = apply_verdict(rec, verdicts[rec["id"]])
                if ord_ in parsed:
                    out.update(
                        _verify_argparse(
                            plan, cache, session, parsed[ord_], revision, base, overrides, key
                        )
                    )
                done += len(recs) + len(parsed.get(ord_, ()))
                progress("verify", done, len(records))
        finally:
            session.close()
            runs.flush()
    report.runs, report.cached = int(session.stats["runs"]), int(session.stats["cached"])
    result = [out.get(r["id"], r) for r in records]
    _count(report, result, plan)
    return result, report


def _newest_ords(occurrences: Sequence[dict]) -> dict[str, int]:
    """id -> the newest revision ord any of its occurrence spans reaches."""
    out: dict[str, int] = {}
    for occ in occurrences:
        out[occ["id"]] = max(out.get(occ["id"], -1), occ["to"])
    return out


def _cached_verdicts(
    cache: Cache, fp: str, key: str, recs: list[dict]
) -> tuple[dict[str, Any], list[dict]]:
    """(id -> the verdict a build before reached, the records still to judge) for `recs` of
    the revision whose files hash to `key`."""
    verdicts: dict[str, Any] = {}
    todo = []
    for rec in recs:
        hit = cache.get("verdict", _vkey(fp, key, rec))
        if hit is None:
            todo.append(rec)
        else:
            verdicts[rec["id"]] = _verdict_from(json.loads(hit))
    return verdicts, todo


def _verify_argparse(
    plan: Plan,
    cache: Cache,
    session: Any,
    recs: list[dict],
    revision: Revision,
    base: Revision,
    overrides: dict,
    key: str,
) -> dict[str, dict]:
    """argparse records of one revision (`_where`'s revision, base and overrides, its files'
    `key`), each fix's two lines through that revision's parser and validation
    (verify/parsing.py), in the build's child; verdicts cached like the others'."""
    from kverr.verify.parsing import judge_argparse
    from kverr.verify.stage import Verdict, apply_verdict, options_of, runner_for

    fp = _verdict_fp(session)
    verdicts, todo = _cached_verdicts(cache, fp, key, recs)
    out = {rid: apply_verdict(rec, verdicts[rid]) for rec in recs if (rid := rec["id"]) in verdicts}
    if not todo:
        return out  # a rebuild: no child, no run
    name = revision.sha[:12] if revision.sha else (revision.tags[0] if revision.tags else "?")
    shown = {"platform": session.platform_name, "revision": name}
    info = options_of(session, base, key, overrides)
    profile = plan.profile
    launch = profile.launch_command() if profile is not None else ""
    program = (profile.programs or ("",))[0] if profile is not None else ""
    run = runner_for(session, base, key, overrides)
    fresh = {}
    for rec in todo:
        if not info["ready"]:
            why = f"the revision's code does not load in the sandbox: {info['reason']}"
            verdict = Verdict({"status": "unverified", **shown, "reason": why})
        else:
            judged = judge_argparse(rec, run, launch=launch, program=program)
            status = "verified" if judged.verified else "unverified"
            # A fix the parser did not pass is advice only (no command), like any record's.
            verdict = Verdict(
                {"status": status, **shown, "reason": judged.reason},
                keep_fix=judged.verified or not judged.ran,
            )
        fresh[_vkey(fp, key, rec)] = json.dumps(_verdict_to(verdict))
        out[rec["id"]] = apply_verdict(rec, verdict)
    cache.put_many("verdict", fresh)
    return out


def _not_run(reason: str) -> dict:
    # No platform: nothing ran on any (naming the default box would read as a run on it).
    return {
        "status": "unverified",
        "platform": None,
        "revision": None,
        "reason": reason,
    }


def _where(plan: Plan, ord_: int, by_sha: dict[str, int]) -> tuple[Revision, Revision, dict]:
    """(the revision, the commit to run against, files from disk placed over it). A snapshot
    revision runs against the newest commit with its snapshot files placed over it."""
    revision = plan.revisions[ord_]
    if revision.sha:
        return revision, revision, {}
    base = max(i for i, r in enumerate(plan.revisions[:ord_]) if r.sha)
    files = dict(plan.files[ord_])
    overrides = {
        s["repoPath"]: plan.read(s["repoPath"], files[s["repoPath"]]).text
        for s in plan.snapshots
        if s["repoPath"] in files
    }
    return revision, plan.revisions[base], overrides


def _verdict_fp(session: Any) -> str:
    from kverr.verify.stage import _fingerprint

    return _fingerprint(session.spec, session.platform_name)


def _vkey(fp: str, files_key: str, record: dict) -> str:
    body = json.dumps(record, sort_keys=True).encode()
    return f"{fp}:{files_key}:{record['id']}:{hashlib.sha256(body).hexdigest()[:16]}"


def _verdict_to(v: Any) -> dict:
    return {
        "verification": v.verification,
        "exampleFix": v.example_fix,
        "solution": v.solution,
        "keepFix": v.keep_fix,
    }


def _verdict_from(d: dict) -> Any:
    from kverr.verify.stage import Verdict

    return Verdict(d["verification"], d["exampleFix"], d["solution"], d["keepFix"])


def _count(report: VerifyReport, records: list[dict], plan: Plan) -> None:
    for rec in records:
        status = rec["verification"]["status"]
        report.counts[status] = report.counts.get(status, 0) + 1
    newest = next((r.sha for r in reversed(plan.revisions) if r.sha), None)
    report.newest = (newest or "")[:12]
    errors = [
        r
        for r in records
        if r["analyzedSha"] == newest and r["kind"] in ("raise", "assert") and newest
    ]
    report.errors_newest = len(errors)
    report.verified_newest = sum(r["verification"]["status"] == "verified" for r in errors)
    report.na_newest = sum(r["verification"]["status"] == "not-applicable" for r in errors)
    parsed = [r for r in records if r["kind"] == "argparse" and r["argparse"].get("flag")]
    report.argparse_records = len(parsed)
    report.argparse_verified = sum(r["verification"]["status"] == "verified" for r in parsed)
    main = [r for r in errors if r["filePath"] == report.main_file]
    report.main_errors_newest = len(main)
    report.main_verified_newest = sum(r["verification"]["status"] == "verified" for r in main)
