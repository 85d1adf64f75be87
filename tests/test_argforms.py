"""What an argparse declaration lets the parser print, checked against a real parser built from
the same facts (kverr.argforms)."""

from __future__ import annotations

import argparse

import pytest

from kverr.argforms import applies


def optional_str(val: str) -> str | None:
    return None if val in ("", "None") else val


def optional_int(val: str) -> int | None:
    return None if val in ("", "None") else int(val)


@pytest.mark.parametrize(
    ("type_text", "func"), [("optional_str", optional_str), ("optional_int", optional_int)]
)
def test_an_invalid_value_record_only_for_a_conversion_that_can_fail(type_text, func):
    parser = argparse.ArgumentParser(prog="serve", exit_on_error=False)
    parser.add_argument("--x", type=func)
    try:
        parser.parse_args(["--x", "not-a-number"])
        failed = False
    except argparse.ArgumentError as exc:
        failed = f"invalid {type_text} value" in str(exc)
    facts = {"options": ["--x"], "type": type_text, "action": None}
    assert applies("invalid-value", facts) is failed
