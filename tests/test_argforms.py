"""What an argparse declaration lets the parser print, checked against a real parser built from
the same facts (kverr.argforms)."""

from __future__ import annotations

import argparse

import pytest

from kverr.argforms import abbreviated, applies


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


# Our own parser helpers, in the shapes a project's argparse utilities take: a factory that
# refuses through its own ArgumentTypeError, an optional wrapper that goes through it, one that
# calls the wrapped type itself, and a function that hands JSON-looking text to a wrapper.
HELPERS = """
import argparse
import json
import re


def parse_type(return_type):
    def _parse_type(val):
        try:
            return return_type(val)
        except ValueError as e:
            raise argparse.ArgumentTypeError(f"Value {val} cannot be converted to {return_type}.") from e

    return _parse_type


def optional_type(return_type):
    def _optional_type(val):
        if val == "" or val == "None":
            return None
        return parse_type(return_type)(val)

    return _optional_type


def old_optional(return_type):
    def _old_optional(val):
        if val == "None":
            return None
        return return_type(val)

    return _old_optional


def dict_or_str(val):
    if not re.match(r"(?s)^\\s*{.*}\\s*$", val):
        return str(val)
    return optional_type(json.loads)(val)
"""

CASES = [  # (type expression, a value it refuses; None: it refuses none)
    ("int", "x1"),
    ("json.loads", "{bad"),
    ("parse_type(json.loads)", "{bad"),
    ("optional_type(int)", "x1"),
    ("optional_type(float)", "x1"),
    ("optional_type(str)", None),
    ("optional_type(parse_type(json.loads))", "{bad"),
    ("old_optional(int)", "x1"),
    ("dict_or_str", "{bad}"),
]


@pytest.mark.parametrize(("type_text", "bad"), CASES)
def test_a_record_pattern_matches_what_the_parser_prints(type_text: str, bad: str | None) -> None:
    """The invalid-value record's pattern, from the helpers' definitions alone, matches the
    error a real parser built with those helpers prints for a value they refuse."""
    import json
    import re

    from kverr.extractor.converters import converter_models, invalid_template
    from kverr.records.argparse_records import BEFORE, _template_pattern

    space: dict = {"json": json}
    exec(compile(HELPERS, "helpers.py", "exec"), space)  # noqa: S102 - our own fixture
    template = invalid_template(type_text, converter_models([HELPERS]))
    assert (template is None) is (bad is None)
    if bad is None:
        return
    parser = argparse.ArgumentParser(prog="serve", exit_on_error=False)
    parser.add_argument("--opt", type=eval(type_text, space))  # noqa: S307 - our own fixture
    with pytest.raises(argparse.ArgumentError) as exc:
        parser.parse_args([f"--opt={bad}"])
    printed = f"serve: error: {exc.value}"
    pattern = f"{BEFORE}argument --opt: " + _template_pattern(template)
    m = re.search(pattern, printed)
    assert m and m.end() == len(printed), (printed, pattern)
    assert m.group("v0").strip("'") == bad


@pytest.mark.parametrize(
    "typed",
    ["--tp-size", "--tp", "--tensor", "--kernel", "--kernel-m", "--ker", "--nope", "-t"],
)
def test_an_abbreviation_names_the_option_the_parser_reads(typed):
    parser = argparse.ArgumentParser(prog="serve", exit_on_error=False)
    parser.add_argument("--tp-size", "--tensor-parallel-size", type=int)
    parser.add_argument("--kernel")
    parser.add_argument("--kernel-mode")
    owners = {s: a.dest for a in parser._actions for s in a.option_strings}
    try:
        ns = vars(parser.parse_args([typed, "1"]))
        read = next(dest for dest, value in ns.items() if value is not None)
    except (argparse.ArgumentError, SystemExit):
        read = None  # ambiguous or unknown: the parser refuses it (argparse exits for those)
    found = abbreviated(typed, owners)
    assert (owners[found] if found else None) == read
