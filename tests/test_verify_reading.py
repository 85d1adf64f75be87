"""How the search reads a check's guards before the watch evaluates them (verify/search/reading.py):
locals replaced by what they hold, an except clause as "its try body raises", the values the
validation code assigns an attribute. Table tests on a fixture of our own."""

from __future__ import annotations

import pytest
from kverr.verify.sandbox import solve
from kverr.verify.search import reading

SOURCE = """\
class Args:
    def check(self, rule):
        for attr, label in [("prefill", "p"), ("decode", "d")]:
            backend = getattr(self, attr)
            if backend is not None and backend != "sparse":
                raise ValueError(label)
        for item in self.items.keys():
            item = item.strip()
            if item.startswith("{"):
                raise ValueError(item)
        try:
            first = float(rule[1])
            count = int(first)
        except (ValueError, IndexError):
            assert False, "numbers"
        try:
            import thing
        except ImportError:
            pass

    def reset(self):
        self.mode = "null"
        if self.other:
            self.mode = "lru"
        self.size = self.size * 2

    def fallback(self):
        if self.size > 1:
            self.ranks = self.size
        else:
            self.ranks = envs.RANKS
            if self.ranks > 1 and self.dense:
                raise ValueError("ranks")
        if self.ranks > 8:
            raise ValueError("many")
"""


def line(needle: str) -> int:
    return next(i for i, x in enumerate(SOURCE.splitlines(), 1) if needle in x)


@pytest.mark.parametrize(
    ("test", "at", "expected"),
    [
        # A loop over literal items reads as its first item; getattr(self, "x") as self.x.
        ('backend is not None and backend != "sparse"', "backend is not None",
         "self.prefill is not None and self.prefill != 'sparse'"),
        # Any other loop: its first item; `x = x.strip()` in its body refines it.
        ('item.startswith("{")', "item.startswith",
         "next(iter(self.items.keys())).strip().startswith('{')"),
    ],
)  # fmt: skip
def test_locals_read_as_what_they_hold(test: str, at: str, expected: str) -> None:
    assert reading.inline_locals(SOURCE, "Args.check", test, line(at)) == expected


@pytest.mark.parametrize(
    ("test", "at", "expected"),
    [
        # set earlier in the block the test is in: on every path to it
        ("self.ranks > 1 and self.dense", "self.ranks > 1 and", "envs.RANKS > 1 and self.dense"),
        # set in one branch or the other: neither is on every path, the attribute stays
        ("self.ranks > 8", "self.ranks > 8", "self.ranks > 8"),
    ],
)  # fmt: skip
def test_an_attribute_reads_as_what_every_path_to_the_test_sets(
    test: str, at: str, expected: str
) -> None:
    assert reading.inline_locals(SOURCE, "Args.fallback", test, line(at)) == expected


def test_an_environment_number_is_solved_past_the_guards_bound() -> None:
    """`envs.RANKS > 1`: the usual switches ("1", "true") never pass; 2 does."""
    import ast
    import types

    envs = types.ModuleType("envs")
    envs.__getattr__ = lambda name: int(__import__("os").environ.get(name, "1"))  # type: ignore[attr-defined]
    tree = ast.parse("envs.KVERR_TEST_RANKS > 1", mode="eval")
    found = solve.solve(tree, {"envs": envs}, True, {})
    assert ["env:KVERR_TEST_RANKS", "2"] in [pair for s in found for pair in s]


def test_an_except_clause_reads_as_its_try_body_raising() -> None:
    first_try = line("first = float") - 1
    assert reading.try_test(SOURCE, "Args.check", first_try, "except (ValueError, IndexError)") == (
        "__kverr_raises__(lambda: (float(rule[1]), int(float(rule[1]))), (ValueError, IndexError))"
    )
    # An import (not an expression) in the body, or a bare except: nothing to evaluate.
    assert (
        reading.try_test(SOURCE, "Args.check", line("import thing") - 1, "except ImportError")
        is None
    )
    assert reading.try_test(SOURCE, "Args.check", first_try, "except BaseException") is None
    assert solve.raises(lambda: float("x"), ValueError)
    assert not solve.raises(lambda: float("1"), ValueError)


def test_the_values_the_validation_code_assigns() -> None:
    assigned = reading.assigned_values(SOURCE, "Args")
    assert assigned["mode"] == ["null", "lru"]
    assert assigned["size"] is None  # `self.size * 2` is no literal: any value may come
    assert "other" not in assigned


def test_a_method_that_only_returns_a_test_of_its_fields_is_a_predicate() -> None:
    source = (
        "class Spec:\n"
        "    def use_eagle(self) -> bool:\n"
        '        """Whether the draft is an EAGLE head."""\n'
        "        return self.method in ('eagle', 'eagle3')\n"
        "    def needs(self, other):\n"
        "        return self.method == other\n"  # takes more than self
        "    def two(self):\n"
        "        x = self.method\n"
        "        return x\n"  # more than a return
    )
    assert reading.predicates(source) == {
        "Spec": {"use_eagle": "self.method in ('eagle', 'eagle3')"}
    }
    assert reading.predicates("def broken(:\n") == {}


@pytest.mark.parametrize(
    ("kind", "role", "reads"),
    [
        ("if", "direct", True),  # its own test
        ("early-exit", "gate", True),  # `if not model_config.is_hybrid: return` before it
        ("passed", "gate", False),  # an earlier check of its function, which the run passed
    ],
)
def test_a_check_reads_the_model_through_its_own_path_only(kind, role, reads) -> None:
    """An earlier check that fired first is about the model only through its own path: the
    search then tries other model profiles before dropping an option (where.reads_model)."""
    from types import SimpleNamespace

    from kverr.records.conditions import Reading
    from kverr.verify.search.where import reads_model

    from kverr.ftypes import Guard

    model = Reading(Guard("model_config.is_hybrid", True, kind, 3), (), role)
    own = Reading(Guard("self.max_size is not None", True, "if", 5), (), "direct")
    assert reads_model(SimpleNamespace(readings=[model, own])) is reads
