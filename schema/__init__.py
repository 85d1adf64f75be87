"""kverr.schema: the schema-v2 JSON Schemas and the two validators every stage uses.

`record.schema.json` describes one record, `dataset_line.schema.json` one line of
records.jsonl. jsonschema is imported on first use only, so modules that import this
package for its constants (the catalog's explain path) stay fast.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from kverr.errors import SchemaError

RECORD_SCHEMA = "record.schema.json"
LINE_SCHEMA = "dataset_line.schema.json"
# Always written by kverr; optional in the JSON Schema so hand-written v2 records validate.
KVERR_FIELDS = ("kind", "flags", "placeholders", "previousId", "verification")


def load_schema(name: str) -> dict[str, Any]:
    """One of the packaged schemas as a dict (a fresh copy)."""
    return json.loads(_schema_text(name))


@cache
def _schema_text(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


@cache
def _validator(name: str) -> Any:
    import jsonschema
    from referencing import Registry, Resource

    record = load_schema(RECORD_SCHEMA)
    registry = Registry().with_resources(
        [
            (record["$id"], Resource.from_contents(record)),
            (RECORD_SCHEMA, Resource.from_contents(record)),
        ]
    )
    schema = load_schema(name)
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema, registry=registry)


def validate_record(rec: Any, *, require_kverr_fields: bool = True) -> None:
    """Raise SchemaError naming the record id and the field when `rec` is not a v2 record."""
    _check(RECORD_SCHEMA, rec, rec, require_kverr_fields, prefix="")


def validate_line(line: Any, *, require_kverr_fields: bool = True) -> None:
    """Raise SchemaError when `line` is not a valid records.jsonl object."""
    rec = line.get("record") if isinstance(line, dict) else None
    _check(LINE_SCHEMA, line, rec, require_kverr_fields, prefix="record.")


def _check(name: str, doc: Any, rec: Any, require_kverr: bool, *, prefix: str) -> None:
    rid = rec.get("id") if isinstance(rec, dict) else None
    who = f"record {rid}" if isinstance(rid, str) and rid else "a record without an id"
    errors = list(_validator(name).iter_errors(doc))
    if errors:
        import jsonschema

        err = jsonschema.exceptions.best_match(errors)
        path = ".".join(str(p) for p in err.absolute_path) or "(top level)"
        detail = err.message if len(err.message) <= 160 else err.message[:157] + "..."
        raise SchemaError(
            f"{who} fails schema v2 at field {path}: {detail}; "
            "fix the code that derives it or the curated overlay, then rebuild."
        )
    if require_kverr and isinstance(rec, dict):
        for field in KVERR_FIELDS:
            if field not in rec:
                raise SchemaError(
                    f"{who} fails schema v2 at field {prefix}{field}: the kverr field is missing; "
                    "rebuild the dataset with kverr."
                )
