"""What a JSON option's fields take, read off the revision's config class (the sandbox child's
verify/sandbox/kinds.py), and a dotted option's value written as its field takes it
(verify/search/typed.py)."""

from __future__ import annotations

import sys
import types

import pytest
from kverr.verify.sandbox import kinds
from kverr.verify.search import typed

from kverr.ftypes import FlagDecl

MODULE = """
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # only a type checker sees it: the annotation naming it does not resolve
    from elsewhere import DraftModel

Method = Literal["ngram", "suffix"]


@dataclasses.dataclass
class Spec:
    draft: DraftModel | None = None
    method: Method | None = None
    rates: list[float] | None = None
    sizes: list[int | str] | None = None
    greedy: bool = False
"""


@pytest.fixture
def spec_class():
    module = types.ModuleType("kverr_kinds_fixture")
    sys.modules[module.__name__] = module
    try:
        exec(compile(MODULE, "<fixture>", "exec"), module.__dict__)  # noqa: S102 - our own text
        yield module.Spec
    finally:
        del sys.modules[module.__name__]


def test_one_unresolvable_annotation_leaves_the_other_fields_readable(spec_class) -> None:
    fields = kinds.fields_of(spec_class)
    assert "draft" not in fields  # says nothing usable
    assert fields["method"] == {"type": "str", "choices": ["ngram", "suffix"]}
    assert fields["rates"] == {"type": "list[float]"}
    assert fields["sizes"] == {"type": "list[int | str]"}
    assert fields["greedy"] == {"type": "bool", "choices": [True, False]}


@pytest.mark.parametrize(
    ("kind", "given", "written"),
    [
        ("list[float] | None", ("2",), "[2]"),  # the union's list: numbers, not words
        ("list[float]", ("0.5", "1"), "[0.5, 1]"),
        ("list[str] | None", ("a",), '["a"]'),
        ("list[int] | None", ("RATES",), "[1]"),  # a placeholder is no number
        ("list[int | str] | None", ("other",), '["other"]'),  # a word is an item too
        ("bool", ("DISABLE_PADDING",), "true"),  # a switch the class declares, no choices read
        ("bool | None", ("false",), "false"),
    ],
)
def test_a_fields_value_is_written_as_its_type_takes_it(kind, given, written) -> None:
    decl = FlagDecl(name="--spec.rates", dest="spec.rates", type=kind)
    assert typed.value(decl, given if len(given) > 1 else given[0]) == written
