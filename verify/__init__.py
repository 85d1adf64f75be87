"""kverr.verify: the check is the judge. Runs a revision's own launch-argument validation on
a fix's command lines, in a sandbox, and says whether the fix is verified.

    spec.py     VerifySpec: what a project's validation looks like, as data (sglang.toml)
    harness.py  Harness: one confined child per platform, revision after revision; run()
    confine.py  the child's confinement by the OS: bubblewrap namespaces, rlimits, no privileges
    channel.py  the frames between harness and child: length-prefixed JSON, read with deadlines
    child.py    the child: loads the revision's modules from git objects, runs one job a frame
    disk.py     the file system a run sees: the platform's declared paths, the launch's files
    argv.py     the argv stage: the launch's statements before it parses the command line
    watch.py    the child's watch: each guard evaluated where the code evaluates it
    solve.py    the child's solver: option values that turn a guard around
    derive.py   the child's reading of a derived value as the options it derives from
    kinds.py    the child's reading of what a JSON option's fields take (their annotations)
    sandbox.py  the child's import world: loaded / lazily defined / stubbed modules
    stubs.py    Stub objects that refuse to decide a branch (Undecidable)
    steps.py    the ordered validation steps and which one reaches a record's function
    reading.py  how a check's guards read: locals as what they hold, call sites, resets
    judge.py    did a run report exactly this record?
    search.py   the fix search: reach the check, then the smallest change that passes it
    configfile.py  the fix search for argv-time checks: what a config file can get wrong
    json_yaml.py   the sandbox's yaml: YAML's JSON subset, for the config files it writes
    fields.py   what the solver is told about each option (choices, known values, sample)
    typed.py    a candidate's values for a JSON option's fields, as its parser reads them
    values.py   the values a free-text option is known to take (compared with, Literal, split)
    changes.py  the order candidate changes are tried in, and a change in words
    notice.py   what a notice's fix may be: a choice made explicit, never the feature given up
    told.py     what a run's own output offers it (quoted values, a notice's choice)
    where.py    which platform and model profile a check is tried on
    stage.py    a revision's records through the search, with the run cache (the build's step)
    parsing.py  argparse records: the before line rejected by the parser as recorded, the after passes

Import rules (tests/test_layout.py): stdlib, kverr.extractor, kverr.records, kverr.ftypes and
kverr.errors only; never duckdb, the catalog, the feeds or the CLI.
"""
