"""Which sites of a launch-path module are launch-argument errors (a profile's `launch_path`).

The model runner, the memory pools and the workers raise thousands of things; the ones a user
can fix at launch say which flag, args field or environment variable is involved, or are
reached only through a test of one. Those are kept, with the flags their text names; the
rest (shape checks, kernel asserts, request handling) stay out of the records. An INFO line
is what a healthy launch prints, so it is never kept there.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from kverr.extractor.flags import FlagTable

from kverr.ftypes import Site

# `--mem-fraction-static`, `max_model_len`, `gpu_memory_utilization=`: a flag or a field as a
# message writes it. A field needs an underscore: `dtype` or `port` alone are common words.
_OPTION = re.compile(r"(?<![\w-])--([a-z0-9][a-z0-9-]*[a-z0-9])")
_FIELD = re.compile(r"(?<![\w.-])([a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?![\w(])")
# "Please specify `dtype`": a flag's one-word dest, quoted as code
_TICKED = re.compile(r"`([a-z][a-z0-9_]{0,80})`")
# "Page size must be 1": a flag of two or three words, written as words
_WORDS = re.compile(r"(?<![\w.-])(?=([A-Za-z][a-z0-9]*(?: [a-z][a-z0-9]*){1,2})(?![\w-]))")


def launch_sites(
    sites: Sequence[Site], table: FlagTable, env_prefixes: Sequence[str]
) -> tuple[Site, ...]:
    """The sites a launch can be fixed from, each with the flags its message text names."""
    env = _env_regex(env_prefixes)
    out = []
    for site in sites:
        if site.severity == "info":
            continue
        named = named_flags(site, table)
        if named or site.flags or (env is not None and _names_env(site, env)):
            flags = tuple(dict.fromkeys((*site.flags, *named)))
            out.append(site if flags == site.flags else dataclasses.replace(site, flags=flags))
    return tuple(out)


def named_flags(site: Site, table: FlagTable) -> tuple[str, ...]:
    """Declared flags the literal text of the message names: as `--flag`, as a field
    (`page_size`, `` `dtype` ``) or in words ("page size")."""
    out = []
    for part in site.template.parts:
        if not part.text:
            continue
        for m in _OPTION.finditer(part.text):
            flag = table.resolve(m.group(1).replace("-", "_"))
            if flag:
                out.append(flag)
        for m in (*_FIELD.finditer(part.text), *_TICKED.finditer(part.text)):
            flag = table.resolve(m.group(1))
            if flag:
                out.append(flag)
        for m in _WORDS.finditer(part.text):
            words = m.group(1).lower().split()
            for n in (3, 2):
                flag = table.resolve("_".join(words[:n])) if len(words) >= n else None
                if flag:
                    out.append(flag)
                    break
    return tuple(dict.fromkeys(out))


def _env_regex(prefixes: Sequence[str]) -> re.Pattern[str] | None:
    if not prefixes:
        return None
    alts = "|".join(re.escape(p) for p in sorted(prefixes, key=len, reverse=True))
    return re.compile(rf"(?<![A-Za-z0-9])(?:{alts})_[A-Z0-9_]+")


def _names_env(site: Site, env: re.Pattern[str]) -> bool:
    """The message, a value it prints or a guard over it names one of the project's variables."""
    texts = [p.text or p.expr or "" for p in site.template.parts]
    texts += [g.test for g in site.guards]
    return any(env.search(t) for t in texts)
