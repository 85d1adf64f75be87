"""Records that tie on everything the matcher ranks by (one message raised at two sites of the
same releases) are answered in the order of their ids, whatever order the catalog's index read
them in. Records are our own."""

from __future__ import annotations

import synth
from kverr.catalog import load_dataset, open_catalog

SHA = "e" * 40
FIRST, SECOND = "0a00000000000001", "0b00000000000002"
MESSAGE = "This model does not support the 'x' task."


def test_tied_records_are_answered_in_the_order_of_their_ids(tmp_path) -> None:
    # written second id first: the dataset's order is not the answer's
    records = [
        synth.make_record(SECOND, MESSAGE, file="pkg/b.py", line=20),
        synth.make_record(FIRST, MESSAGE, file="pkg/a.py", line=10),
    ]
    revisions = [
        {"sha": SHA, "date": "2026-01-01T00:00:00Z", "tags": ["v1.0"], "subject": "s", "ord": 0}
    ]
    occurrences = [
        {"id": r["id"], "sha": SHA, "file": r["filePath"], "line": r["lineNumber"]} for r in records
    ]
    ds = synth.write_files(tmp_path / "ds", records, revisions=revisions, occurrences=occurrences)
    load_dataset(ds, tmp_path / "c.duckdb")
    with open_catalog(tmp_path / "c.duckdb") as cat:
        assert [m.record["id"] for m in cat.explain(f"ValueError: {MESSAGE}")] == [FIRST, SECOND]
