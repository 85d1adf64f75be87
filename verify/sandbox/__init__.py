"""kverr.verify.sandbox: everything that runs inside the confined child, and nothing else.

    child.py     the child: loads a revision's modules from git objects, runs one job a frame
    channel.py   the frames between harness and child: length-prefixed JSON, read with deadlines
    blobs.py     the child's `git cat-file`, with the command the parent names
    modules.py   the child's import world: loaded / lazily defined / stubbed modules
    stubs.py     Stub objects that refuse to decide a branch (Undecidable)
    fakes.py     stand-ins a platform profile names (`@ref:kverr.verify.sandbox.fakes:float16`)
    json_yaml.py YAML's JSON subset, for the config files the fix search writes
    disk.py      the file system a run sees: the platform's declared paths, the launch's files
    argv.py      the argv stage: the launch's statements before it parses the command line
    steps.py     the ordered validation steps and which one reaches a record's function
    watch.py     each guard evaluated where the code evaluates it
    solve.py     option values that turn a guard around
    compared.py  the strings a guard compares an option with (the solver's candidates)
    derive.py    a derived value read as the options it derives from
    kinds.py     what a JSON option's fields take (their annotations)

The child imports the standard library and this package only (tests/test_layout.py): what runs
beside a revision's code is small and in one place. It parses the revision's Python with the
stdlib's `ast` itself, as it compiles and executes that code; the parent's side reads Python
text through kverr.extractor.pysource. The parent imports from here (the frames, the steps).
"""
