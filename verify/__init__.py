"""kverr.verify: the check is the judge. Runs a revision's own launch-argument validation on
a fix's command lines, in a sandbox, and says whether the fix is verified.

    spec.py     VerifySpec: what a project's validation looks like, as data (sglang.toml)
    harness.py  Harness: one sandboxed child process per revision; run(argv, env, target)
    child.py    the child: loads the revision's modules from git objects, runs one job a line
    sandbox.py  the child's import world: loaded / lazily defined / stubbed modules
    stubs.py    Stub objects that refuse to decide a branch (Undecidable)
    steps.py    the ordered validation steps and which one reaches a record's function
    judge.py    did a run report exactly this record?

Import rules (tests/test_layout.py): stdlib, kverr.extractor, kverr.records, kverr.ftypes and
kverr.errors only; never duckdb, the catalog, the feeds or the CLI.
"""
