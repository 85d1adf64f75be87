"""Record ids: stable when a site moves, distinct for distinct errors, collisions disambiguated."""

from __future__ import annotations

import pytest
from kverr.extractor import extract
from kverr.records.identity import assign_ids, normalise, record_id

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
    # Guards tell the first two apart, so moving the alpha check below keeps both ids.
    swapped = (
        COLLIDING.replace("self.alpha > 8", "self.tmp > 8")
        .replace("self.beta > 8", "self.alpha > 8")
        .replace("self.tmp > 8", "self.beta > 8")
    )
    assert sorted(assign_ids(extract(swapped))[:2]) == sorted(ids[:2])
    # Identical guards: the first occurrence keeps the guard-rule id, later ones are numbered.
    lone = assign_ids(sites[:3])
    assert lone[2] == ids[2]
