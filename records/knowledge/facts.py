"""What the field functions read about one site, computed once: `Facts`, and the flags'
declared choices and defaults.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from kverr.records.conditions import (
    Atom,
    Reading,
    earlier_checks,
    readings,
)

from kverr.ftypes import FlagDecl, Profile, Site


@dataclass(frozen=True)
class Facts:
    """Everything the field functions read, computed once per site."""

    site: Site
    message: str  # Template.display()
    literal: str  # the message's literal text only (placeholders dropped)
    readings: tuple[Reading, ...]
    decls: dict[str, FlagDecl] = field(default_factory=dict)
    pattern: str = ""
    profile: Profile = field(default=None)  # type: ignore[assignment]  # facts_for sets it

    @property
    def direct(self) -> tuple[Atom, ...]:
        return tuple(a for r in self.readings if r.role == "direct" for a in r.atoms)

    @property
    def context(self) -> tuple[Atom, ...]:
        """Facts the site needs besides the direct test: enclosing ifs, and gates on a flag the
        message names (the validator's own switch, e.g. `if not cfg.feature: return`)."""
        out = []
        for r in self.readings:
            if r.role == "enclosing":
                out.extend(a for a in r.atoms if a.flag or a.op == "expr")
            elif r.role == "gate":
                out.extend(a for a in r.atoms if a.positive and _named(a.flag, self.literal))
        return tuple(out)

    @property
    def passed(self) -> tuple[Atom, ...]:
        """Earlier checks the launch already passed, as the positive flag facts they imply.
        With the profile's `earlier_checks = "related"` (validators that check unrelated
        features one after another), only checks about a flag this site's own conditions read."""
        own: set[str] | None = None
        if self.profile.earlier_checks == "related":
            mine = self.direct + self.context
            own = {a.flag for a in mine if a.flag} | {fl for a in mine for fl in a.flags}
        return tuple(
            a
            for r in self.readings
            if r.role == "gate"
            for a in r.atoms
            if a.positive
            and not _named(a.flag, self.literal)
            and (own is None or r.guard.kind != "passed" or a.flag in own)
        )


def _named(flag: str | None, text: str) -> bool:
    return bool(flag) and re.search(re.escape(flag) + r"(?![\w-])", text) is not None


def facts_for(
    site: Site,
    decls: dict[str, FlagDecl] | None = None,
    pattern: str = "",
    siblings: Sequence[Site] = (),
    profile: Profile | None = None,
) -> Facts:
    if profile is None:
        from kverr.profile import default_profile

        profile = default_profile()
    literal = " ".join(p.text or "" for p in site.template.parts if p.is_literal)
    return Facts(
        site=site,
        message=site.template.display(),
        literal=" ".join(literal.split()),
        readings=tuple(readings(site, earlier_checks(site, siblings), profile)),
        decls=decls or {},  # shared, read-only: one map per build
        pattern=pattern,
        profile=profile,
    )


def in_files(path: str, globs: Sequence[str]) -> bool:
    """Whether a site's file is one of the profile's globs (fnmatch, case-sensitive)."""
    import fnmatch

    return any(fnmatch.fnmatchcase(path, g) for g in globs)


def _choices(flag: str | None, decls: dict[str, FlagDecl]) -> tuple[str, ...] | None:
    d = decls.get(flag or "")
    return d.choices if d and d.choices else None


def _default(flag: str, decls: dict[str, FlagDecl]) -> object:
    d = decls.get(flag)
    if d is None or d.default is None:
        return None
    try:
        return ast.literal_eval(d.default)
    except (ValueError, SyntaxError):
        return None
