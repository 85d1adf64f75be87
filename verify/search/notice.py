"""What the fix search may offer for a notice (a warning or an info line): expected behaviour,
so its fix makes SGLang's own choice explicit, or completes what the launch left out; it never
gives up what the user asked for.

A change gives the feature up when it drops an option the before line sets, sets it back to
its default (`--pp-size 2` -> `1`), picks another of its declared choices
(`--attention-backend dual_chunk_flash_attn` -> `triton`, `--disaggregation-mode prefill` ->
`null`), or switches a feature off (`--disable-piecewise-cuda-graph`), unless the notice's own
branch assigns that option (SGLang does it anyway: `--disable-radix-cache` where it turns the
radix cache off) or the message itself says to (`use 'follow_bootstrap_room' instead`).
Another value of a free-text or numeric option is a correction (`--mooncake-ib-device
mlx5_0,mlx5_0` -> `mlx5_0`), unless it takes a size down to one or none (`--pp-size 2` ->
`0`). When only giving up would silence it, the record says so instead
of showing a fix.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from kverr.extractor.pysource import NOT_LITERAL, literal
from kverr.records.knowledge.facts import Facts
from kverr.records.knowledge.notices import chosen

from kverr.ftypes import FixChange, FlagDecl, Launch

_OFF = ("--disable-", "--no-")


def gives_up(c: FixChange, f: Facts, before: Launch, decls: Mapping[str, FlagDecl]) -> bool:
    if c.source == "advice":
        return False  # the message's own words (or what the run's notice says it chose)
    assigned = {_dest(flag, decls) for flag, _ in chosen(f)}
    for op, name, value in c.edits:
        if op not in ("set", "drop") or _dest(name, decls) in assigned:
            continue
        d = decls.get(name)
        new = _literal(value)
        if before.has(name) and (
            op == "drop"
            or d is None
            or d.choices
            or value is None
            or _literal(d.default) == new
            # a size or count taken down to one or none: the feature is off
            or (type(new) in (int, float) and new <= 1 < _number(before.value(name)))
        ):
            return True  # the user's own choice left out, undone or switched
        if not before.has(name) and op == "set" and value is None and name.startswith(_OFF):
            return True  # a feature switched off that SGLang keeps on
        if (
            not before.has(name)
            and op == "set"
            and re.search(re.escape(name) + r"(?![\w-])", f.message) is None  # its own advice
            and (
                (value is None and not name.startswith(_OFF)) or name in f.profile.hardware_options
            )
        ):
            # a feature switched on, or other hardware, that the launch did not ask for (the
            # notice about a fusion silenced by --enable-dp-attention or --nnodes 2): that
            # is another deployment, not a fix of this one
            return True
    return False


def _number(text: object) -> float:
    value = _literal(text)
    return value if type(value) in (int, float) else 0  # type: ignore[return-value]


def _literal(text: object) -> object:
    value = literal(str(text))
    return text if value is NOT_LITERAL else value


def ordered(changes: Sequence[FixChange], before: Launch) -> list[FixChange]:
    """Changes that keep every option the user set (they add what the launch left out:
    `--remote-instance-weight-loader-seed-instance-ip` for an incomplete setting) first, then
    the rest in their order."""

    def keeps(c: FixChange) -> bool:
        return all(op in ("set", "env") and not before.has(n) for op, n, _ in c.edits)

    return sorted(changes, key=lambda c: not keeps(c))


def _dest(flag: str, decls: Mapping[str, FlagDecl]) -> str:
    d = decls.get(flag)
    return (d.arg_dest or d.dest) if d is not None else flag
