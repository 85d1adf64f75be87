"""Record identity: the `id` of a site, stable while the error stays the same.

Rule (docs/CONTRACTS.md "Identity"):

    key = kind | errorClass | normalised template display
          (a message-less assert: its normalised condition instead of the template)
    id  = first 16 hex of sha256(key)

Lines, file and function names are not in the key, so a site that moves to other lines, to
another file or into a renamed function keeps its id. Normalising means: whitespace runs become
one space and the ends are stripped, and inside placeholders and conditions the receiver of a
flag read is dropped (`self.x`, `cfg.x`, `server_args.x`, `resolved_view(server_args).x` and
`self._resolved().x` all become `x`) - SGLang moved checks from `ServerArgs` methods (`self.`) to
`arg_groups/` functions (`cfg.`), and such a move must not change an id.

When two sites of one revision share a key, the normalised guard tests (with the side they
hold on) are added to the key of each of them; if that still collides, the occurrence index in
(file, line) order is appended to every site but the first. So distinct errors never share an
id, and the first occurrence keeps the same id a lone site would get under the guard rule.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Sequence

from kverr.ftypes import Site

_RECEIVER = re.compile(
    r"\b(?:self\.server_args|server_args|self|cfg|args)\."
    r"|\b\w+\((?:self|server_args|cfg)?\)\."
    r"|\bself\.\w+\(\)\."
)


def normalise(text: str) -> str:
    """Whitespace-collapsed text with flag receivers dropped (see the module docstring)."""
    text = " ".join(text.split())
    prev = None
    while prev != text:  # `resolved_view(self).x` needs two passes
        prev = text
        text = _RECEIVER.sub("", text)
    return text


def base_key(site: Site) -> str:
    """The identity key before any collision handling."""
    if site.template.is_empty:
        body = "assert " + normalise(site.condition or site.snippet)
    else:
        body = normalise(site.template.display())
    return f"{site.kind}|{site.error_class or ''}|{body}"


def guard_key(site: Site) -> str:
    return "; ".join(f"{'' if g.holds else 'not '}({normalise(g.test)})" for g in site.guards)


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


def assign_ids(sites: Sequence[Site]) -> list[str]:
    """The id of each site (same order), with collisions inside this revision disambiguated."""
    keys = [base_key(s) for s in sites]
    by_key: dict[str, list[int]] = defaultdict(list)
    for i, k in enumerate(keys):
        by_key[k].append(i)
    for members in by_key.values():
        if len(members) < 2:
            continue
        for i in members:
            keys[i] = keys[i] + "|guards:" + guard_key(sites[i])
    by_key2: dict[str, list[int]] = defaultdict(list)
    for i, k in enumerate(keys):
        by_key2[k].append(i)
    for members in by_key2.values():
        if len(members) < 2:
            continue
        ordered = sorted(members, key=lambda i: (sites[i].file, sites[i].line, sites[i].variant))
        for n, i in enumerate(ordered[1:], start=1):
            keys[i] = keys[i] + f"|occurrence:{n}"
    return [hash_key(k) for k in keys]


def record_id(site: Site) -> str:
    """The id of a site that shares its key with no other site of its revision."""
    return hash_key(base_key(site))
