"""kverr.verify: the check is the judge. Runs a revision's own launch-argument validation on
a fix's command lines, in a sandbox, and says whether the fix is verified.

    verdict.py   Verdict, the one type of a record's verdict, and the rule that judges a run
    step.py      the build's verify step: a revision's records through the search, cached
    spec.py      VerifySpec: what a project's validation looks like, as data (its profile)
    harness.py   Harness: one confined child per platform, revision after revision; run()
    confine.py   the child's confinement by the OS: bubblewrap namespaces, rlimits, no privileges
    parsing.py   argparse records: the before line rejected by the parser as recorded, the after passes
    preflight.py, yours.py, release.py, memo.py   `kverr check`: a user's launch, its release's check
    sandbox/     what runs in the confined child: child.py and its frames (channel.py), git
                 reader (blobs.py), import world (modules.py, stubs.py, fakes.py, json_yaml.py),
                 file system (disk.py), steps (steps.py, argv.py), watch and solver (watch.py,
                 solve.py, compared.py, derive.py, kinds.py)
    search/      the fix search (core.py; configfile.py for argv-time checks): the candidate
                 launches (candidates.py), their order (changes.py), what a run offers (told.py,
                 notice.py), what the solver is told (fields.py, typed.py, values.py), how a
                 guard reads (reading.py), which platform and model to try (where.py)

Import rules (tests/test_layout.py): stdlib, kverr.extractor, kverr.records, kverr.ftypes and
kverr.errors only; never duckdb, the catalog, the feeds, the build or the CLI.
"""
