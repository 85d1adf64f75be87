"""Which records' patterns also match another record's message (the build prints this report).

Each message is rendered from its errorMessage with a realistic value in place of every
`{placeholder}`, whitespace collapsed as a matcher does; then every other record's pattern is
tried on it. A cheap literal-anchor test skips most pairs before any regex runs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from kverr.records.pattern import sample_value

from kverr.ftypes import Part


def rendered_message(record: dict) -> str:
    """The record's message with a sample value for each placeholder, as a log would show it."""
    message = record["errorMessage"]
    out, pos = [], 0
    for expr in record.get("placeholders", []):
        token = "{" + expr + "}"
        at = message.find(token, pos)
        if at < 0:
            continue
        out.append(message[pos:at])
        out.append(str(sample_value(Part(expr=expr))))
        pos = at + len(token)
    out.append(message[pos:])
    return " ".join("".join(out).split())


def _anchor(record: dict) -> str:
    """Longest literal run of the message: any text the pattern matches must contain it."""
    message = record["errorMessage"]
    for expr in record.get("placeholders", []):
        message = message.replace("{" + expr + "}", "\0")
    runs = [" ".join(r.split()) for r in message.split("\0")]
    return max(runs, key=len, default="")


def collisions(records: Sequence[dict]) -> list[tuple[str, str]]:
    """Sorted (id_a, id_b) pairs where a's messagePattern matches b's rendered message."""
    rendered = [(r["id"], rendered_message(r)) for r in records if r["errorMessage"]]
    out = []
    for rec in records:
        if not rec["messagePattern"]:
            continue
        anchor = _anchor(rec)
        rx = re.compile(rec["messagePattern"])
        for other_id, text in rendered:
            if other_id != rec["id"] and anchor in text and rx.search(text):
                out.append((rec["id"], other_id))
    return sorted(out)
