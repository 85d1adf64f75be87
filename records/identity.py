"""Record identity: the `id` of a site, stable while the error stays the same.

Rule (docs/CONTRACTS.md "Identity"):

    key = kind | errorClass | normalised template display
          (a message-less assert: its normalised condition instead of the template)
    id  = first 16 hex of sha256(key)                                  (the bare id)

Lines, file and function names are not in the key, so a site that moves to other lines, to
another file or into a renamed function keeps its id. Normalising means: whitespace runs become
one space and the ends are stripped, and inside placeholders and conditions the receiver of a
flag read is dropped (the profile's `[identity] receivers`: `self.x`, `cfg.x`, `args.x`,
`resolved_view(args).x` and `self._resolved().x` all become `x`) - a project that moves checks
from methods of its args class (`self.`) to helper functions (`cfg.`) must not change ids.

A profile with an `[identity] namespace` hashes `namespace|key` instead, so one catalog can hold
several projects: the same message in two projects is two records.

When several sites of one revision share a key, exactly one of them keeps the bare id:

- with history (`previous`: bare id -> (file, function, guard hash) of the site that held it in
  the revision before), the site that best matches that holder: same file and function, else
  the same guard hash, else the same file, else the first in (file, line) order;
- without history (a one-revision build, or a key nobody held before), the first site in
  (file, line) order - so a lone site and the first of a pair share an id.

Every other site of the group gets the guard-disambiguated id (the key plus its normalised guard
tests, with the side they hold on); when two of those are still equal, the later ones in
(file, line) order get the hash of that id plus `|occurrence:N` (N = 1, 2, ...). So an old error
keeps its id when an identical message appears elsewhere later: only the newcomer gets a new id.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from kverr.ftypes import Part, Profile, Site, Template

Holder = tuple[str, str | None, str]  # (file, function, guard hash) of a bare id's site


class Claim(NamedTuple):
    """What identity needs of one site; the build's per-revision entries carry the same fields,
    so a cached revision can be given ids without parsing it again."""

    bare: str  # id from the key alone
    alt: str  # id from the key plus the guard tests
    file: str
    line: int
    variant: int
    function: str | None
    guard: str  # _guard_digest of guard_key


@functools.lru_cache(maxsize=16)
def _receivers(receivers: tuple[str, ...], calls: tuple[str, ...]) -> re.Pattern[str]:
    alt = "|".join(re.escape(r) for r in receivers)
    call = "|".join(re.escape(r) for r in calls)
    return re.compile(
        (rf"\b(?:{alt})\." if alt else "(?!)")
        + (rf"|\b\w+\((?:{call})?\)\." if call else r"|\b\w+\(\)\.")
        + r"|\bself\.\w+\(\)\."
    )


def profile_or_default(profile: Profile | None) -> Profile:
    if profile is None:
        from kverr.profile import default_profile

        return default_profile()
    return profile


def normalise(text: str, profile: Profile | None = None) -> str:
    """Whitespace-collapsed text with flag receivers dropped (see the module docstring)."""
    p = profile_or_default(profile)
    rx = _receivers(p.id_receivers, p.id_call_receivers)
    text = " ".join(text.split())
    prev = None
    while prev != text:  # `resolved_view(self).x` needs two passes
        prev = text
        text = rx.sub("", text)
    return text


def base_key(site: Site, profile: Profile | None = None) -> str:
    """The identity key before any collision handling."""
    if site.template.is_empty:
        body = "assert " + normalise(site.condition or site.snippet, profile)
    else:
        body = normalise(_as_extracted(site.template), profile)
    key = f"{site.kind}|{site.error_class or ''}|{body}"
    namespace = profile_or_default(profile).id_namespace
    return f"{namespace}|{key}" if namespace else key


def _as_extracted(template: Template) -> str:
    """The template's display with an imported constant shown by name, as the scan of the
    history (which reads no other module) sees it: folding it in changes no id."""
    if not any(p.is_literal and p.expr for p in template.parts):
        return template.display()
    unfolded = (Part(expr=p.expr) if p.is_literal and p.expr else p for p in template.parts)
    return Template(tuple(unfolded)).display()


def guard_key(site: Site, profile: Profile | None = None) -> str:
    return "; ".join(
        f"{'' if g.holds else 'not '}({normalise(g.test, profile)})" for g in site.guards
    )


def _guard_digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()[:12] if key else ""


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


def claim_of(site: Site, profile: Profile | None = None) -> Claim:
    bare, alt, guard = claim_keys(site, profile)
    return Claim(bare, alt, site.file, site.line, site.variant, site.function, guard)


def claim_keys(site: Site, profile: Profile | None = None) -> tuple[str, str, str]:
    """(bare, alt, guard hash) of a site's claim: what its text decides, wherever it sits
    (`claim_text` is that text)."""
    key, guards = base_key(site, profile), guard_key(site, profile)
    return hash_key(key), hash_key(f"{key}|guards:{guards}"), _guard_digest(guards)


def claim_text(site: Site) -> tuple:
    """Everything of a site that `claim_keys` reads: two sites equal here have equal keys (a
    function moved by an edit above it gives new sites with the same text)."""
    guards = tuple((g.holds, g.test) for g in site.guards)
    return (site.kind, site.error_class, site.template, site.condition, site.snippet, guards)


def assign_ids(
    sites: Sequence[Site],
    previous: Mapping[str, Holder] | None = None,
    profile: Profile | None = None,
) -> list[str]:
    """The id of each site (same order); `previous` maps each bare id of the revision before to
    the (file, function, guard hash) of the site that held it (see the module docstring)."""
    return settle([claim_of(s, profile) for s in sites], previous)


def settle(claims: Sequence[Claim], previous: Mapping[str, Holder] | None = None) -> list[str]:
    """assign_ids over claims: the one rule, for sites and for cached entries alike."""
    previous = previous or {}
    ids = [c.bare for c in claims]
    groups: dict[str, list[int]] = defaultdict(list)
    for i, c in enumerate(claims):
        groups[c.bare].append(i)
    others: dict[str, list[int]] = defaultdict(list)
    for bare, members in groups.items():
        if len(members) < 2:
            continue
        ordered = sorted(members, key=lambda i: _order(claims, i))
        keeper = _keeper([claims[i] for i in ordered], previous.get(bare))
        for i in ordered[:keeper] + ordered[keeper + 1 :]:
            ids[i] = claims[i].alt
            others[claims[i].alt].append(i)
    for alt, members in others.items():
        # `members` is in (file, line) order already: groups were walked in that order
        for n, i in enumerate(members[1:], start=1):
            ids[i] = hash_key(f"{alt}|occurrence:{n}")
    return ids


def _order(claims: Sequence[Claim], i: int) -> tuple:
    c = claims[i]
    return (c.file, c.line, c.variant, i)


def _keeper(ordered: Sequence[Claim], holder: Holder | None) -> int:
    """Index in `ordered` of the site that keeps the bare id."""
    if holder is None:
        return 0
    file, function, guard = holder
    tests = (
        lambda c: (c.file, c.function) == (file, function),
        lambda c: c.guard == guard,
        lambda c: c.file == file,
    )
    for test in tests:
        for n, c in enumerate(ordered):
            if test(c):
                return n
    return 0


def record_id(site: Site, profile: Profile | None = None) -> str:
    """The bare id: what a site gets when no other site of its revision shares its key (and
    what the first of several gets without history)."""
    return hash_key(base_key(site, profile))
