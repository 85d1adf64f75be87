"""Every run the fix search makes for a few records of one revision, printed as it goes.

    python scripts/verify_trace.py [--watch] [--profile vllm] MIRROR REV ID [ID ...]

An ID may be a record id's first characters (`eec1b899`).

For a record whose verified fix looks wrong: which launch each run tried, what the check did
with it, and the fix it kept; with --watch, the guards each run watched. No cache is read or
written (each run starts a sandbox child).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from kverr.extractor import extract_files
from kverr.extractor.sources import read_git
from kverr.records import build_records
from kverr.verify import step
from kverr.verify.spec import spec_for

from kverr.profile import load_profile

SHOW_WATCH = False


def main(argv: list[str]) -> int:
    global SHOW_WATCH
    name = None
    if argv[:1] == ["--watch"]:
        SHOW_WATCH, argv = True, argv[1:]
    if argv[:1] == ["--profile"] and len(argv) > 1:
        name, argv = argv[1], argv[2:]
    if len(argv) < 3:
        print("usage: verify_trace.py [--profile NAME] MIRROR REV ID [ID ...]", file=sys.stderr)
        return 2
    mirror, rev, ids = argv[0], argv[1], set(argv[2:])
    profile = load_profile(name)
    revision, sources = read_git(mirror, rev, profile.file_set())
    exts = extract_files(sources, rules=profile.extract)
    records = [
        r
        for r in build_records(exts, revision, profile=profile)
        if any(r["id"].startswith(i) for i in ids)  # an id or its first characters
    ]
    if not records:
        print(f"none of {sorted(ids)} is a record of {rev}", file=sys.stderr)
        return 1
    real = step.runner_for

    def logged(*args, **kw):
        run = real(*args, **kw)

        def traced(launch, target, watch=()):
            out = run(launch, target, watch)
            argv = " ".join(launch.argv())
            env = " ".join(f"{k}={v}" for k, v in launch.env)
            model = dict(launch.model).get("profile") or ""
            print(f"  run [{kw.get('platform')}] {model} {env} {argv}".rstrip())
            print(f"      -> {out.status} {out.file}:{out.line} {out.message[:100]!r}")
            if SHOW_WATCH:
                print(f"      entered the check's function: {out.trace.get('entered')}")
            for w in watch if SHOW_WATCH else ():
                where = f"{w.get('function') or ''}:{w['line']}"
                print(f"      watch {where} want={w['want']} {w['test'][:110]}")
            for line, g in sorted(out.trace.get("guards", {}).items(), key=lambda x: int(x[0])):
                sol = g.get("solutions") or g.get("flipped") or g.get("others")
                if sol or SHOW_WATCH:
                    print(f"      guard {line}: value={g.get('value')} solutions={(sol or [])[:4]}")
            return out

        return traced

    step.runner_for = logged  # (put back below: a caller in the same process runs untraced)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            session = step.Session(spec_for(profile), mirror, Path(tmp), profile=profile)
            try:
                for rec in records:
                    print(f"{rec['id']} line {rec['lineNumber']}: {rec['errorMessage'][:80]}")
                    verdicts = step.verify_revision(
                        exts, [rec], session, revision, files=[(s.path, "") for s in sources]
                    )
                    v = verdicts[rec["id"]]
                    print(f"  => {v.verification['status']} {v.verification['reason']}")
                    print("     " + (v.example_fix or "").replace("\n", "\n     "))
                    for words in v.refuted:
                        print(f"     refuted by a run: {words}")
                    for flag, ok in v.choices:
                        print(f"     {flag}: the choices that pass are {', '.join(ok) or 'none'}")
            finally:
                session.close()
    finally:
        step.runner_for = real
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
