"""Record ids: stable when a site moves, distinct for distinct errors, collisions disambiguated."""

from __future__ import annotations

import pytest
from kverr.extractor import extract
from kverr.records.identity import (
    assign_ids,
    claim_of,
    guard_key,
    normalise,
    record_id,
    settle,
)

BASE = """
class ServerArgs:
    def _handle_cache(self):
        if self.enable_a and self.enable_b:
            raise ValueError(f"--enable-a cannot be used with --enable-b (got {self.mode!r}).")
"""

SAME_ERROR = {
    "lines shifted": "\n\n\n# a comment\n" + BASE,
    "function renamed": BASE.replace("_handle_cache", "_check_cache_flags"),
    "moved to an arg-group function": """
def handle_cache(server_args):
    cfg = resolving_view(server_args)
    if cfg.enable_a and cfg.enable_b:
        raise ValueError(f"--enable-a cannot be used with --enable-b (got {cfg.mode!r}).")
""",
    "message re-wrapped": BASE.replace(
        '"--enable-a cannot be used with --enable-b (got {self.mode!r})."',
        '"--enable-a cannot be used "\n                f"with --enable-b (got {self.mode!r})."',
    ).replace('f"--enable-a cannot', '"--enable-a cannot'),
}

OTHER_ERROR = {
    "message edited": BASE.replace("cannot be used with", "is incompatible with"),
    "class changed": BASE.replace("ValueError", "RuntimeError"),
    "now a warning": BASE.replace("raise ValueError(", "logger.warning("),
}


def _id(src: str, path: str = "python/sglang/srt/server_args.py") -> str:
    (site,) = extract(src, path)
    return record_id(site)


@pytest.mark.parametrize("case", SAME_ERROR)
def test_id_is_stable(case):
    assert _id(SAME_ERROR[case]) == _id(BASE)


def test_id_is_stable_across_files():
    assert _id(BASE, "python/sglang/srt/arg_groups/cache.py") == _id(BASE)


@pytest.mark.parametrize("case", OTHER_ERROR)
def test_distinct_errors_get_distinct_ids(case):
    src = OTHER_ERROR[case]
    if case == "now a warning":
        src = "import logging\nlogger = logging.getLogger(__name__)\n" + src
    assert _id(src) != _id(BASE)


def test_id_shape_and_determinism():
    rid = _id(BASE)
    assert len(rid) == 16 and int(rid, 16) >= 0
    assert rid == _id(BASE)


@pytest.mark.parametrize(
    ("text", "normal"),
    [
        ("self.x  >  1", "x > 1"),
        ("cfg.a or server_args.b", "a or b"),
        ("resolved_view(server_args).attn_cp_size > 1", "attn_cp_size > 1"),
        ("self._resolved().attn_cp_size", "attn_cp_size"),
        ("sorted(backends)", "sorted(backends)"),
    ],
)
def test_normalise(text, normal):
    assert normalise(text) == normal


COLLIDING = """
class ServerArgs:
    def check(self):
        if self.alpha > 8:
            raise ValueError("Unsupported configuration.")
        if self.beta > 8:
            raise ValueError("Unsupported configuration.")
        for item in self.items:
            if item:
                raise ValueError("Unsupported configuration.")
        for item in self.others:
            if item:
                raise ValueError("Unsupported configuration.")
"""


def test_collisions_use_guards_then_occurrence_order():
    sites = extract(COLLIDING)
    ids = assign_ids(sites)
    assert len(set(ids)) == len(ids) == 4
    # The first site keeps the id a lone site gets; the others are told apart by their guards.
    assert ids[0] == record_id(sites[0])
    assert ids[1] not in (ids[2], ids[3])
    # Identical guards: the first of them keeps the guard-rule id, later ones are numbered.
    lone = assign_ids(sites[:3])
    assert lone[2] == ids[2]


# ---------------------------------------------------------------- a key shared over time
#
# One message M, first in pkg/b.py; later the same message appears in pkg/a.py (sorting before
# it) or pkg/z.py (after it). `previous` is built from revision N-1 as the pipeline builds it.

M = 'raise ValueError("--page-size must be a power of two")'


def _module(function: str, guard: str) -> str:
    return f"class ServerArgs:\n    def {function}(self):\n        if {guard}:\n            {M}\n"


OLD = ("pkg/b.py", "_check_page", "self.page_size & (self.page_size - 1)")
EARLIER_FILE = ("pkg/a.py", "handle_page", "cfg.page_size % 2")  # sorts before OLD
LATER_FILE = ("pkg/z.py", "handle_page", "cfg.page_size % 2")  # sorts after OLD
SAME_GUARD_ELSEWHERE = ("pkg/a.py", "other", "self.page_size & (self.page_size - 1)")


def _sites(*places: tuple[str, str, str]) -> list:
    out = []
    for path, function, guard in places:
        out.extend(extract(_module(function, guard), path))
    return out


def _holder(site) -> tuple[str, str | None, str]:
    return (site.file, site.function, guard_key(site))


# case -> (sites of revision N-1 (None: no history), sites of revision N, index in N that keeps
# the bare id)
CASES: dict[str, tuple[tuple | None, tuple, int]] = {
    "lone site": (None, (OLD,), 0),
    "pair in one revision: first in (file, line) order keeps it": (None, (OLD, EARLIER_FILE), 1),
    "pair appears later, newcomer in a later file": ((OLD,), (OLD, LATER_FILE), 0),
    "pair appears later, newcomer in an earlier file": ((OLD,), (OLD, EARLIER_FILE), 0),
    "same, sites listed in reverse file order": ((OLD,), (EARLIER_FILE, OLD), 1),
    "old site renamed as the newcomer arrives: same guard wins": (
        (OLD,),
        (EARLIER_FILE, (OLD[0], "_check_pages", OLD[2])),
        1,
    ),
    "old site moved: same file wins over an unrelated newcomer": (
        (OLD,),
        (EARLIER_FILE, (OLD[0], "_check_pages", "self.page_size < 1")),
        1,
    ),
    "old holder gone, two unrelated sites: first in order": (
        (OLD,),
        (LATER_FILE, ("pkg/c.py", "x", "self.other")),
        1,
    ),
    "file+function beats a guard-only match": (
        (OLD,),
        (SAME_GUARD_ELSEWHERE, (OLD[0], OLD[1], "self.page_size < 1")),
        1,
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_bare_id_goes_to_the_site_that_held_it(case):
    before, now, keeper = CASES[case]
    previous = None
    if before is not None:
        old_sites = _sites(*before)
        previous = {
            rid: _holder(s)
            for s, rid in zip(old_sites, assign_ids(old_sites), strict=True)
            if rid == record_id(s)
        }
    sites = _sites(*now)
    ids = assign_ids(sites, previous)
    bare = record_id(sites[0])
    assert all(record_id(s) == bare for s in sites)  # one shared key
    assert ids[keeper] == bare
    assert len(set(ids)) == len(ids)
    if before is not None:
        # the newcomers get the id they would get without history as non-first sites
        alone = assign_ids(sites)
        for i, s in enumerate(sites):
            if i != keeper:
                assert ids[i] != bare
                assert ids[i] == alone[i] or record_id(s) == alone[i]


def test_settle_on_claims_equals_assign_ids():
    sites = _sites(OLD, EARLIER_FILE, LATER_FILE)
    previous = {record_id(sites[0]): _holder(sites[0])}
    claims = [claim_of(s) for s in sites]
    assert settle(claims, previous) == assign_ids(sites, previous)
    assert settle(claims) == assign_ids(sites)
