"""Advice from a message's captured values when no launch was pasted (kverr/advice.py)."""

from __future__ import annotations

import pytest

from kverr.advice import advise

HARDWARE = ("--tp-size",)


@pytest.mark.parametrize(
    ("condition", "flags", "values", "expected"),
    [
        (  # keep the GPUs the user has: the other option moves
            "--tp-size % --dp-size == 0",
            ["--tp-size", "--dp-size"],
            {"self.tp_size": "4", "self.dp_size": "3"},
            [
                "With --tp-size 4, use --dp-size 4, 2 or 1 (not 3).",
                "With --dp-size 3, use --tp-size 3, 6 or 9 (not 4).",
            ],
        ),
        (  # a constant of the code: its divisors nearest to the printed value
            "64 % --page-size == 0",
            ["--page-size"],
            {"self.page_size": "48"},
            ["Use --page-size 64, 32 or 16 (not 48)."],
        ),
        (
            "0 < --swa-full-tokens-ratio <= 1.0",
            ["--swa-full-tokens-ratio"],
            {"self.swa_full_tokens_ratio": "1.5"},
            ["Use --swa-full-tokens-ratio 1 (not 1.5)."],
        ),
        (  # values that already satisfy it say nothing
            "--tp-size % --dp-size == 0",
            ["--tp-size", "--dp-size"],
            {"self.tp_size": "4", "self.dp_size": "2"},
            [],
        ),
        (  # a value the message did not print: no guess
            "--tp-size % --dp-size == 0",
            ["--tp-size", "--dp-size"],
            {"self.tp_size": "4"},
            [],
        ),
        (  # code the interpreter does not run
            "len(--port) == 2",
            ["--port"],
            {"self.port": "3"},
            [],
        ),
    ],
)
def test_advice_from_captured_values(condition, flags, values, expected) -> None:
    record = {"flags": flags, "solutions": [f"Change them so that `{condition}` is true"]}
    assert advise(record, values, keep=HARDWARE) == expected
