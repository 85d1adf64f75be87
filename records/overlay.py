"""The curated overlay: maintainers' hand-written knowledge, keyed by record id.

`data/curated.json` maps an id to the fields to write over the derived ones, plus
`sourceMessage`: the record's errorMessage when the text was written. The overlay is applied
after derivation, so it survives every regeneration; the build warns when an overlaid id no
longer exists or its message changed since (the curated text may be stale), and still applies it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kverr.errors import DatasetError

# Fields a maintainer may curate: the knowledge, never what identifies or locates the site.
CURATED_FIELDS = frozenset(
    {
        "documentation", "triggerScenarios", "commonSituations", "solutions", "exampleFix",
        "handlingStrategy", "validationCode", "typeGuard", "tryCatchPattern", "preventionTips",
        "tags", "backgroundTag", "errorType", "errorCode", "httpStatus",
    }
)  # fmt: skip
_ID = re.compile(r"^[0-9a-f]{16}$")


@dataclass(frozen=True)
class Overlay:
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    path: str = ""


def load_overlay(path: str | Path) -> Overlay:
    """Read and check an overlay file; DatasetError names the file and what to fix."""
    p = Path(path)
    try:
        raw = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DatasetError(
            f"curated overlay {p} does not exist; create it with {{}} or drop --overlay."
        ) from None
    except json.JSONDecodeError as exc:
        raise DatasetError(
            f"curated overlay {p} is not valid JSON at line {exc.lineno} column {exc.colno}; fix that line."
        ) from None
    if not isinstance(raw, dict):
        raise DatasetError(
            f"curated overlay {p} must be a JSON object keyed by record id; wrap the entries in {{}}."
        )
    for rid, entry in raw.items():
        _check_entry(p, rid, entry)
    return Overlay(entries=raw, path=str(p))


def _check_entry(p: Path, rid: str, entry: Any) -> None:
    if not _ID.match(rid):
        raise DatasetError(
            f"curated overlay {p}: key {rid!r} is not a 16-hex record id; use the id from kverr explain."
        )
    if not isinstance(entry, dict):
        raise DatasetError(f"curated overlay {p}: entry {rid} must be an object of fields; fix it.")
    unknown = sorted(set(entry) - CURATED_FIELDS - {"sourceMessage"})
    if unknown:
        raise DatasetError(
            f"curated overlay {p}: entry {rid} sets {', '.join(unknown)}, which cannot be curated; "
            f"use only {', '.join(sorted(CURATED_FIELDS))}."
        )


def apply_overlay(records: list[dict], overlay: Overlay | None) -> list[dict]:
    """Records with curated fields written over the derived ones (new dicts; input untouched)."""
    if overlay is None or not overlay.entries:
        return records
    out = []
    for rec in records:
        entry = overlay.entries.get(rec["id"])
        if entry:
            rec = {**rec, **{k: v for k, v in entry.items() if k in CURATED_FIELDS}}
        out.append(rec)
    return out


def overlay_warnings(records: list[dict], overlay: Overlay | None) -> list[str]:
    """One sentence per overlay entry that no longer fits the build."""
    if overlay is None:
        return []
    by_id = {r["id"]: r for r in records}
    warnings = []
    for rid, entry in sorted(overlay.entries.items()):
        rec = by_id.get(rid)
        if rec is None:
            warnings.append(
                f"curated overlay {overlay.path}: id {rid} is not in this build; "
                "move its text to the record's new id (see kverr history) or delete the entry."
            )
        elif "sourceMessage" in entry and entry["sourceMessage"] != rec["errorMessage"]:
            warnings.append(
                f"curated overlay {overlay.path}: the message of {rid} changed since its text was written "
                f"(now {rec['errorMessage'][:80]!r}); review the entry and update its sourceMessage."
            )
    return warnings
