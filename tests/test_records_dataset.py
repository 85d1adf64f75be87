"""Dataset directory: sorted, byte-identical on rebuild, atomic, and read back with file:line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kverr.extractor import extract_file
from kverr.records import build_records
from kverr.records.dataset import read_dataset, write_dataset

from kverr import io
from kverr.errors import DatasetError
from kverr.ftypes import FlagDecl, Revision, SourceFile

SRC = """
class ServerArgs:
    def check(self):
        if self.enable_a and self.enable_b:
            raise ValueError("--enable-a is incompatible with --enable-b.")
        if self.size < 1:
            raise ValueError(f"--size must be positive, got {self.size}.")
"""
OLD = Revision(repo="o/r", sha="1" * 40, date="2026-01-01T00:00:00Z", tags=("v1",), subject="old")
NEW = Revision(repo="o/r", sha="2" * 40, date="2026-02-01T00:00:00Z", tags=(), subject="new")


def _build(out: Path, *, reverse: bool = False) -> list[dict]:
    fx = extract_file(SourceFile(path="python/sglang/srt/server_args.py", text=SRC, blob="0" * 40))
    records = build_records([fx], NEW)
    occ = [
        {"id": r["id"], "sha": s, "file": r["filePath"], "line": r["lineNumber"]}
        for s in (NEW.sha, OLD.sha)
        for r in records
    ]
    flags = [
        FlagDecl(name="--size", dest="size", default="1", choices=("1", "2")),
        FlagDecl(name="--enable-a", dest="enable_a"),
    ]
    lineage = [{"id": records[0]["id"], "previousId": records[1]["id"], "sha": NEW.sha}]
    if reverse:
        records, occ, flags = records[::-1], occ[::-1], flags[::-1]
    write_dataset(
        out,
        records=records,
        revisions=[OLD, NEW],
        occurrences=occ,
        flags=flags,
        lineage=lineage,
        manifest={
            "tool": "kverr",
            "datasetVersion": NEW.date,
            "repository": "o/r",
            "counts": {"records": 2},
        },
    )
    return records


def test_write_read_round_trip(tmp_path):
    records = _build(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["manifest.json", *io.DATASET_FILES]
    )  # no temp files left behind
    ds = read_dataset(tmp_path)
    assert [r["id"] for r in ds.records] == sorted(r["id"] for r in records)
    # revisions.jsonl has no repo column: the manifest names the repository once
    assert ds.revisions == (
        Revision(sha=OLD.sha, date=OLD.date, tags=OLD.tags, subject=OLD.subject),
        Revision(sha=NEW.sha, date=NEW.date, subject=NEW.subject),
    )
    # one-revision lines ({"sha"}) are read as spans of that revision alone
    assert sorted((o["id"], o["from"], o["to"]) for o in ds.occurrences) == sorted(
        (r["id"], n, n) for n in (0, 1) for r in records
    )
    assert [f.name for f in ds.flags] == ["--enable-a", "--size"] and ds.flags[1].choices == (
        "1",
        "2",
    )
    assert ds.manifest["schemaVersion"] == 2 and ds.dataset_version == NEW.date
    line = json.loads((tmp_path / "records.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert set(line) == {"datasetVersion", "record"} and line["datasetVersion"] == NEW.date


def test_rebuild_is_byte_identical(tmp_path):
    _build(tmp_path / "a")
    _build(tmp_path / "b", reverse=True)
    for name in ("manifest.json", *io.DATASET_FILES):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


def _corrupt(tmp_path: Path, line: int, text: str) -> None:
    path = tmp_path / "records.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[line - 1] = text
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda rec: "{not json", "records.jsonl:2 is not valid JSON"),
        (
            lambda rec: json.dumps({"datasetVersion": "v", "record": {**rec, "severity": "loud"}}),
            "records.jsonl:2: record",
        ),
        (
            lambda rec: json.dumps(
                {"datasetVersion": "v", "record": {**rec, "messagePattern": "(a+)+"}}
            ),
            "nests quantifiers",
        ),
        (lambda rec: json.dumps({"datasetVersion": "v", "record": {**rec, "id": "0" * 16}}), None),
    ],
)
def test_bad_lines_are_named(tmp_path, mutate, message):
    _build(tmp_path)
    first = json.loads((tmp_path / "records.jsonl").read_text(encoding="utf-8").splitlines()[0])[
        "record"
    ]
    _corrupt(tmp_path, 2, mutate(first))
    if message is None:  # a second, different record with a valid line is fine
        assert len(read_dataset(tmp_path).records) == 2
        return
    with pytest.raises(DatasetError, match=message.replace("(", r"\(")):
        read_dataset(tmp_path)


def test_duplicate_ids_and_missing_files(tmp_path):
    _build(tmp_path)
    first = (tmp_path / "records.jsonl").read_text(encoding="utf-8").splitlines()[0]
    _corrupt(tmp_path, 2, first)
    with pytest.raises(DatasetError, match="appears twice"):
        read_dataset(tmp_path)
    with pytest.raises(DatasetError, match="not a kverr dataset"):
        read_dataset(tmp_path / "nowhere")
    (tmp_path / "manifest.json").unlink()
    with pytest.raises(DatasetError, match="manifest.json is missing"):
        read_dataset(tmp_path)
