"""One sentence about a record's fix: verified against which revision's check, on which
platform, or plainly not verified and why. explain (terminal and --json), the site and the API
all say it the same way."""

from __future__ import annotations

from typing import Any


def fix_status(record: dict[str, Any]) -> str:
    v = record.get("verification") or {}
    status = v.get("status")
    if status == "verified":
        return f"Fix verified against {v.get('revision')}'s own check on {v.get('platform')}."
    reason = (v.get("reason") or "this dataset was built without verification").rstrip(".")
    return f"Fix not verified: {reason}."


def is_verified(record: dict[str, Any]) -> bool:
    return (record.get("verification") or {}).get("status") == "verified"
