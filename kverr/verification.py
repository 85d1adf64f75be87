"""One sentence about a record's fix: verified against which revision's check, on which
platform, or plainly not verified and why. explain (terminal and --json), the site and the API
all say it the same way."""

from __future__ import annotations

from typing import Any


def fix_status(record: dict[str, Any]) -> str:
    v = record.get("verification") or {}
    status = v.get("status")
    if status == "verified":
        model = f" with model profile {v['model']}" if v.get("model") else ""
        ran = _argparse_run(record) if record.get("kind") == "argparse" else ""
        return (
            f"Fix verified against {v.get('revision')}'s own check on {v.get('platform')}{model}"
            f"{ran}."
        )
    reason = (v.get("reason") or "this dataset was built without verification").rstrip(".")
    return f"Fix not verified: {reason}."


def is_verified(record: dict[str, Any]) -> bool:
    return (record.get("verification") or {}).get("status") == "verified"


def _argparse_run(record: dict[str, Any]) -> str:
    """What was run of an argparse record's fix: explain shows the option as pasted, with an
    answer computed for the user's release, so the sentence names the lines the check ran."""
    lines = (record.get("exampleFix") or "").splitlines()
    if len(lines) != 4:
        return ""
    before, after = lines[1].split(), lines[3].split()
    n = 0
    while n < min(len(before), len(after)) and before[n] == after[n]:
        n += 1
    while 0 < n < len(before) and not before[n].startswith("-"):
        n -= 1  # from the option whose value changed: `--tp-size 1`, not `1`
    bad, good = " ".join(before[n:]), " ".join(after[n:])
    if not bad:
        return ""
    passed = (
        f"`{good}` passes it and the launch's validation"
        if good
        else ("the launch without it passes its validation")
    )
    return f" (its parser rejects `{bad}`; {passed})"
