"""Comparisons over options in words and back (kverr/relations.py): what the records write,
`kverr explain` reads."""

from __future__ import annotations

import pytest

from kverr.relations import relation, relation_words, stated


@pytest.mark.parametrize(
    ("code", "holds", "read"),
    [
        ("--tp-size % --dp-size == 0", False, ("--tp-size % --dp-size == 0", False)),
        ("--tp-size % --dp-size != 0", True, ("--tp-size % --dp-size == 0", False)),
        ("64 % --page-size == 0", True, ("64 % --page-size == 0", True)),
        ("--long-prefill >= --block-size", False, ("--long-prefill < --block-size", True)),
        (
            "--tp-size * --pp-size % --nnodes == 0",
            True,
            ("--tp-size * --pp-size % --nnodes == 0", True),
        ),
        ("len(--lora-paths) > --max-loras", True, ("len(--lora-paths) > --max-loras", True)),
        ("--ep-size in [1, --tp-size]", False, ("--ep-size in [1, --tp-size]", False)),
        ("--ep-size not in [1, 2, --tp-size]", False, ("--ep-size in [1, 2, --tp-size]", True)),
    ],
)
def test_what_the_words_say_reads_back_as_the_condition(code, holds, read):
    subject, how = relation(code, holds)
    # as a trigger has them ("..., when --a is not a multiple of --b.") and as a fix
    assert stated(f"Launching with --x set, when {subject} is {how}.") == [read]
    assert stated(f"Make {relation_words(code, holds)}") == [read]


def test_words_that_are_no_comparison_read_as_none():
    assert stated("Launching with --enable-x and --mode=fast, when `helper()` is true.") == []
    assert stated("--x " * 5000) == []  # (a record's text is read, and datasets are hostile)


@pytest.mark.parametrize(
    ("cond", "values", "got"),
    [
        # a key of a config's JSON option is an option like any other
        (
            "--spec-config.lo > --spec-config.hi",
            {"--spec-config.lo": 5, "--spec-config.hi": 3},
            True,
        ),
        (
            "--spec-config.lo > --spec-config.hi",
            {"--spec-config.lo": 1, "--spec-config.hi": 3},
            False,
        ),
        # an option left unset
        ("--draft is None and --steps is not None", {"--draft": None, "--steps": 2}, True),
        ("--draft is None", {"--draft": 1}, False),
        # what the launch does not give is not known
        ("--draft > --steps", {"--draft": 1}, None),
    ],
)
def test_a_condition_over_options_and_config_keys_evaluates(cond, values, got):
    from kverr.advice import evaluate

    assert evaluate(cond, values) is got
