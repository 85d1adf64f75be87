"""`kverr build`: source(s) -> extraction (cached) -> records -> lineage -> dataset dir -> catalog.

One revision or a thousand go through the same path, one module per step:

1. plan      (plan.py)     each revision's files as (path, blob sha) — a directory is one revision.
2. extract   (extract.py)  every distinct (path, blob) once, ever: the blob cache maps it to a
                           serialised FileExtraction; within a changed file the unit cache lets
                           unchanged functions skip libcst. Both live in one sqlite file next to
                           the output (cache.py; stdlib only, duckdb stays in catalog/).
                           `jobs > 1` spreads the blobs over processes.
3. history   (history.py)  per revision: ids and sites (cached per file set), folded oldest first
                           into occurrence spans, lineage (edited messages link new id -> old id)
                           and each record's newest revision. The folded state is cached under a
                           hash chain of the revisions, so a build that adds commits to a built
                           history folds in only the new ones.
4. assemble  (assemble.py) the newest form of each record, built at the last revision that has it
                           (cached).
5. write     (write.py)    all dataset files into a temp dir, then swapped in: Ctrl-C never leaves
                           a half-written dataset, and the cache keeps the finished work for the
                           re-run.

`run.build` wires them (scanning each revision as soon as its blobs are extracted), from one
`spec.BuildSpec`.
"""

from kverr.pipeline.run import BuildResult, build
from kverr.pipeline.spec import BuildSpec, GitSource

__all__ = ["BuildResult", "BuildSpec", "GitSource", "build"]
