"""The stage types: the human form of a template and the one serialiser."""

from __future__ import annotations

import dataclasses

import pytest

from kverr.ftypes import (
    Binding,
    FlagDecl,
    Guard,
    Part,
    Site,
    Template,
    from_json,
    moved,
    to_json,
)

COLOURED = Template(
    (
        Part(text="\x1b[1;33m"),
        Part(text="--tp "),
        Part(expr="self.tp_size"),
        Part(text=" is odd\x1b[0m"),
    )
)


@pytest.mark.parametrize(
    ("template", "shown"),
    [
        (COLOURED, "--tp {self.tp_size} is odd"),
        (
            Template((Part(text="\x1b[33m"), Part(expr="message"), Part(text="\x1b[0m"))),
            "{message}",
        ),
        (Template((Part(text="plain "), Part(expr=None, dynamic=True))), "plain {...}"),
    ],
)
def test_display_shows_placeholders_and_drops_colour_codes(template, shown):
    assert template.display() == shown


def test_json_round_trip_keeps_types_and_tuples():
    site = Site(
        kind="raise", file="a.py", line=3, end_line=4, col=4, end_col=9, function="f",
        error_class="ValueError", severity="error", template=COLOURED, snippet="raise X",
        guards=(Guard("cfg.x", True, "if", 2, ("--x",)),), flags=("--x",),
    )  # fmt: skip
    flag = FlagDecl("--x", "x", choices=("a", "b"))
    assert from_json(to_json([site, flag])) == [site, flag]


def test_slugs_hold_no_colour_codes():
    from kverr.records import slug_for

    site = Site(
        kind="log", file="a.py", line=1, end_line=1, col=0, end_col=9, function=None,
        error_class=None, severity="warning", snippet="logger.warning(...)",
        template=Template((Part(text="\x1b[1;33m"), Part(expr="message"), Part(text="\x1b[0m"))),
    )  # fmt: skip
    assert slug_for(site, "4e88d55da2f10683") == "log-4e88d5"
    assert (
        slug_for(Site(**{**site.__dict__, "template": COLOURED}), "0123456789abcdef")
        == "tp-is-odd-012345"
    )


def test_a_launch_that_sets_a_base_option_shows_it_once_with_its_own_value() -> None:
    from kverr.ftypes import Launch

    base = ("--model-path", "MODEL_PATH")
    launch = Launch((("--speculative-algorithm", "EAGLE"), ("--model-path", "/path/to/model")))
    assert launch.command("python -m srv", base) == (
        "python -m srv --speculative-algorithm EAGLE --model-path /path/to/model"
    )
    plain = Launch((("--tp-size", "2"),), (("APP_X", "1"),))
    assert plain.command("python -m srv", base) == (
        "APP_X=1 python -m srv --model-path MODEL_PATH --tp-size 2"
    )


def test_moved_is_dataclasses_replace():
    # the loader re-places cached sites with `moved`: it must give what replace gives (equal,
    # same hash, a new object, the original untouched) for each frozen record that moves
    guard = Guard("cfg.x", True, "if", 2, ("--x",))
    binding = Binding("y", "assigned", "cfg.y", ("--y",), 5)
    site = Site(
        kind="raise", file="", line=3, end_line=4, col=4, end_col=9, function="f",
        error_class="ValueError", severity="error", template=COLOURED, snippet="raise X",
        guards=(guard,), bindings=(binding,), flags=("--x",),
    )  # fmt: skip
    decl = FlagDecl("--x", "x", help="X.", line=40, end_line=44)
    for record, changes in [
        (guard, {"line": 30}),
        (binding, {"line": 31}),
        (decl, {"line": 1, "end_line": 5}),
        (site, {"file": "b.py", "line": 99, "guards": (dataclasses.replace(guard, line=97),)}),
    ]:
        before = dataclasses.replace(record)
        new = moved(record, **changes)
        assert new == dataclasses.replace(record, **changes)
        assert hash(new) == hash(dataclasses.replace(record, **changes))
        assert new != record and record == before
