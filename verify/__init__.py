"""kverr.verify: the check is the judge. Runs a revision's own launch-argument validation on
a fix's command lines, in a sandbox, and says whether the fix is verified.

    verdict.py  Verdict, the one type of a record's verdict, and the rule that judges a run
    step.py     the build's verify step: a revision's records through the search, cached
    spec.py     VerifySpec: what a project's validation looks like, as data (its profile)
    harness.py  Harness: one confined child per platform, revision after revision; run()
    confine.py  the child's confinement by the OS: bubblewrap namespaces, rlimits, no privileges
    parsing.py  argparse records: the before line rejected by the parser as recorded, the after passes
    yours.py    `kverr check`: a user's own launch through its release's check
    preflight.py  `kverr check`'s entry: the release, the sandbox, the cache
    release.py  which release a launch runs, and where its code is
    memo.py     the run cache of `kverr check`
    sandbox/    what runs inside the confined child, and nothing else
    search/     the fix search: reach the check, then the smallest change that passes it

Import rules (tests/test_layout.py): stdlib, kverr.extractor, kverr.records, kverr.ftypes and
kverr.errors only; never duckdb, the catalog, the feeds, the build or the CLI. The child imports
sandbox/ and the stdlib alone.
"""
