"""Schema v2: the hand-written example validates; every kind of bad record is named precisely."""

from __future__ import annotations

import copy
import json

import pytest
from kverr.schema import KVERR_FIELDS, load_schema, validate_line, validate_record

from kverr.errors import SchemaError

KVERR = {
    "kind": "raise",
    "flags": ["--x"],
    "placeholders": [],
    "previousId": None,
    "verification": {
        "status": "verified",
        "platform": "cuda-sm90",
        "revision": "3d3a32c0b9f5",
        "reason": "",
    },
}


@pytest.fixture
def example(seeds) -> dict:
    return json.loads((seeds / "record_example.json").read_text(encoding="utf-8"))


def test_example_line_and_record_validate(example):
    validate_line(example, require_kverr_fields=False)
    validate_record(example["record"], require_kverr_fields=False)
    validate_record({**example["record"], **KVERR})


def test_every_example_field_is_in_the_schema(example):
    props = load_schema("record.schema.json")["properties"]
    assert set(example["record"]) <= set(props)
    assert set(KVERR_FIELDS) <= set(props)
    for name, spec in props.items():
        assert spec.get("description"), f"{name} has no description"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"severity": "fatal"}, "severity"),
        ({"errorType": "oops"}, "errorType"),
        ({"backgroundTag": "misc"}, "backgroundTag"),
        ({"handlingStrategy": "panic"}, "handlingStrategy"),
        ({"schemaVersion": 1}, "schemaVersion"),
        ({"lineNumber": 0}, "lineNumber"),
        ({"solutions": "do it"}, "solutions"),
        ({"tags": ["Not A Tag"]}, "tags.0"),
        ({"githubUrl": "http://example.com"}, "githubUrl"),
        ({"analyzedAt": "yesterday"}, "analyzedAt"),
        ({"kind": "panic"}, "kind"),
        ({"flags": ["x"]}, "flags.0"),
        ({"previousId": "xyz"}, "previousId"),
    ],
)
def test_bad_field_is_named_with_the_id(example, change, field):
    rec = {**copy.deepcopy(example["record"]), **KVERR, **change}
    with pytest.raises(SchemaError) as err:
        validate_record(rec)
    assert "record d5a97f5076b7adab" in str(err.value)
    assert f"field {field}:" in str(err.value)


def test_unknown_and_missing_fields(example):
    rec = {**example["record"], **KVERR, "bogus": 1}
    with pytest.raises(SchemaError, match="'bogus' was unexpected"):
        validate_record(rec)
    rec = {**example["record"], **KVERR}
    del rec["slug"]
    with pytest.raises(SchemaError, match="'slug' is a required property"):
        validate_record(rec)
    with pytest.raises(SchemaError, match="field previousId: the kverr field is missing"):
        validate_record({**example["record"], "kind": "raise", "flags": [], "placeholders": []})


def test_line_errors_name_the_record_path(example):
    line = {"datasetVersion": "v", "record": {**example["record"], **KVERR, "severity": "x"}}
    with pytest.raises(SchemaError, match=r"field record\.severity"):
        validate_line(line)
    with pytest.raises(SchemaError, match="a record without an id"):
        validate_line({"record": {}})


def test_enums_are_closed_and_documented():
    desc = load_schema("record.schema.json")["properties"]
    for field in ("severity", "errorType", "handlingStrategy", "backgroundTag"):
        values = desc[field]["enum"]
        assert values
        for v in values:
            assert f"{v}:" in desc[field]["description"], f"{field}={v} is not documented"
    assert "unsupported-config-combination" in desc["backgroundTag"]["enum"]
