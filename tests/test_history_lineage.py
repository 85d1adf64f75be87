"""Lineage pairing (records/lineage.py): pure functions, table-driven."""

from __future__ import annotations

import pytest
from kverr.records.lineage import Entry, apply, lineage, link, similarity


def E(
    rid: str,
    message: str,
    function: str | None = "ServerArgs.check",
    guard: str = "g1",
    kind: str = "raise",
) -> Entry:
    return Entry(rid, kind, message, function, guard, "ValueError")


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("--x requires --y", "--x requires --y", 1.0),
        ("--x requires --y", "--x needs --y", 0.5),
        ("", "", 1.0),
        ("alpha beta", "gamma delta", 0.0),
    ],
)
def test_similarity(a: str, b: str, expected: float) -> None:
    assert similarity(a, b) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("prev", "cur", "expected"),
    [
        # message edited in place: linked
        (
            [E("a", "--tp-size must be positive")],
            [E("b", "--tp-size must be a positive integer")],
            [("b", "a")],
        ),
        # same text family but other function and other guard: not the same error
        (
            [E("a", "--tp-size must be positive")],
            [E("b", "--tp-size must be a positive integer", function="other", guard="g2")],
            [],
        ),
        # renamed function but same guard: still linked (needs the stricter similarity)
        (
            [E("a", "--tp-size must be positive")],
            [E("b", "--tp-size must be a positive value", function="renamed")],
            [("b", "a")],
        ),
        # unrelated rewrite in the same function: not linked
        ([E("a", "--tp-size must be positive")], [E("b", "CUDA graphs are unsupported here")], []),
        # kind changed (raise -> log): not linked
        (
            [E("a", "--tp-size must be positive")],
            [E("b", "--tp-size must be positive!", kind="log")],
            [],
        ),
        # unchanged ids are never paired
        ([E("a", "x y z"), E("c", "p q")], [E("a", "x y z"), E("d", "p q r")], [("d", "c")]),
        # two edits in one function: each pairs with its closest predecessor
        (
            [E("a", "--x must be set with --y"), E("c", "--z cannot exceed 8")],
            [E("d", "--z cannot exceed 16"), E("b", "--x must be set together with --y")],
            [("b", "a"), ("d", "c")],
        ),
    ],
)
def test_link(prev, cur, expected) -> None:
    assert link(prev, cur) == expected


def test_lineage_chain_and_no_cycle_on_revert() -> None:
    revs = [
        ("s1", [E("a", "--x must be positive")]),
        ("s2", [E("b", "--x must be a positive int")]),
        ("s3", [E("c", "--x must be a positive integer")]),
        ("s4", [E("b", "--x must be a positive int")]),  # revert: b is not new, so no c -> b link
    ]
    assert lineage(revs) == [
        {"id": "b", "previousId": "a", "sha": "s2"},
        {"id": "c", "previousId": "b", "sha": "s3"},
    ]


def test_apply_sets_previous_id() -> None:
    records = [{"id": "b", "previousId": None}, {"id": "z", "previousId": None}]
    apply(records, [{"id": "b", "previousId": "a", "sha": "s2"}])
    assert records == [{"id": "b", "previousId": "a"}, {"id": "z", "previousId": None}]
