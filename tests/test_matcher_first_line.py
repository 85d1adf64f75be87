"""A message of several lines pasted as its first line only: the opening words and the value
that ends that line ("Graph capture failed: out of memory", without the list of solutions the
exception goes on with). Records and catalog are our own, in the shape of such a check that
moved from one module to another between two releases."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import synth
from kverr.catalog import load_dataset, open_catalog

OLD_SHA, NEW_SHA = "c" * 40, "d" * 40
OLD, NEW, SHORT = "f1a0000000000001", "f1b0000000000002", "f1c0000000000003"
TAIL = r"\s+Possible solutions:\s+1\. lower --graph-batch\s+2\. skip the capture with --no-graph\s+"


def _record(rid: str, head: str, file: str) -> dict:
    message = f"{head} {{e}}\nPossible solutions:\n1. lower --graph-batch\n2. skip the capture with --no-graph\n"
    pattern = re.escape(head).replace("\\ ", " ") + r" (?P<v0>.{0,256}?)" + TAIL
    return synth.make_record(
        rid, message, pattern, kind="raise", error_class="Exception", placeholders=["e"],
        flags=["--graph-batch", "--no-graph"], file=file,
    )  # fmt: skip


@pytest.fixture(scope="module")
def cat(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("first-line")
    records = [
        _record(OLD, "Graph capture failed for the runner:", "pkg/runner.py"),
        _record(NEW, "Graph capture failed for the runner:", "pkg/graph_runner.py"),
        _record(SHORT, "Load failed:", "pkg/loader.py"),
    ]
    revisions = [
        {"sha": OLD_SHA, "date": "2026-01-01T00:00:00Z", "tags": ["v1.0"], "subject": "old", "ord": 0},
        {"sha": NEW_SHA, "date": "2026-02-01T00:00:00Z", "tags": ["v2.0"], "subject": "new", "ord": 1},
    ]  # fmt: skip
    occurrences = [
        {"id": OLD, "sha": OLD_SHA, "file": "pkg/runner.py", "line": 100},
        {"id": NEW, "sha": NEW_SHA, "file": "pkg/graph_runner.py", "line": 100},
        {"id": SHORT, "sha": NEW_SHA, "file": "pkg/loader.py", "line": 100},
    ]
    ds = synth.write_files(tmp / "ds", records, revisions=revisions, occurrences=occurrences)
    load_dataset(ds, tmp / "c.duckdb")
    with open_catalog(Path(tmp / "c.duckdb")) as c:
        yield c


@pytest.mark.parametrize(
    ("text", "found"),
    [
        # the first line whole: the check, in the newest release's wording and module
        ("Exception: Graph capture failed for the runner: out of memory (tried 448 MiB)", NEW),
        ("[TP3] Graph capture failed for the runner: connection refused", NEW),
        # opening words too few to tell a message by
        ("Exception: Load failed: out of memory", None),
        # the opening words alone, without the value that ends the line: too little
        ("Exception: Graph capture failed for the runner:", None),
    ],
)
def test_a_first_line_shown_whole_finds_its_check(cat, text, found) -> None:
    got = [m.record["id"] for m in cat.explain(text)]
    assert got[:1] == ([found] if found else [])
