"""Which records' patterns also match another record's message (the build prints this report).

Each message is rendered from its errorMessage with a realistic value in place of every
`{placeholder}`, whitespace folded as a matcher does; then every other record's pattern is
tried on it. An index of the texts' words and a literal-anchor test skip most pairs before
any regex runs.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

from kverr.records.pattern import sample_value

from kverr import pattern, template
from kverr.errors import KverrWarning
from kverr.ftypes import Part


def rendered_message(record: dict) -> str:
    """The record's message with a sample value for each placeholder, as a log would show it."""
    names = record.get("placeholders", [])
    values = {expr: str(sample_value(Part(expr=expr))) for expr in names}
    return pattern.fold_space(template.fill(record["errorMessage"], names, values))


def _anchor(record: dict) -> str:
    """Longest literal run of the message: any text the pattern matches must contain it."""
    spans = template.spans(record["errorMessage"], record.get("placeholders", []))
    return max(
        (pattern.fold_space(text) for text, expr in spans if expr is None), key=len, default=""
    )


# Texts a pattern is tried on, over the whole report: past it the report stops (with a
# warning), so a file of ten thousand lookalike messages cannot make it quadratic. The
# shipped projects need about 50,000.
MAX_TRIES = 2_000_000


def collisions(records: Sequence[dict], budget: int = MAX_TRIES) -> list[tuple[str, str]]:
    """Sorted (id_a, id_b) pairs where a's messagePattern matches b's rendered message.

    Only texts holding a word every match of a's pattern holds are tried (a word of its
    anchor with a space either side of it: a whole word of any text the pattern matches);
    an index of the texts' words finds them, the rarest such word first."""
    rendered = [(r["id"], rendered_message(r)) for r in records if r["errorMessage"]]
    by_word: dict[str, list[int]] = {}
    for i, (_, text) in enumerate(rendered):
        for word in set(text.split(" ")):
            by_word.setdefault(word, []).append(i)
    everything = range(len(rendered))
    out = []
    for rec in records:
        if not rec["messagePattern"]:
            continue
        anchor = _anchor(rec)
        whole = anchor.split(" ")[1:-1]
        texts = min((by_word.get(w, ()) for w in whole), key=len, default=everything)
        budget -= len(texts)
        if budget < 0:
            warnings.warn(
                KverrWarning(
                    f"pattern collisions: stopped after {MAX_TRIES:,} comparisons, at record"
                    f" {rec['id']}; the report lists those found before it"
                ),
                stacklevel=2,
            )
            break
        rx = pattern.compiled(rec["messagePattern"])
        for i in texts:
            other_id, text = rendered[i]
            if other_id != rec["id"] and anchor in text and rx.search(text):
                out.append((rec["id"], other_id))
    return sorted(out)
