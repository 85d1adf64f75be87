"""Where the text to explain comes from (an argument, a file, or stdin `-`), and the record a
key names."""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

from kverr.catalog import browse
from kverr.catalog.catalog import Catalog
from kverr.catalog.reader import BoundedLines

from kverr.answers import CutLines, Match
from kverr.errors import NotFound, QueryError

USAGE = "pass a log line, --file PATH, or pipe text on stdin"


def explain_query(
    cat: Catalog,
    text: str | None,
    file: Path | None,
    *,
    version: str | None = None,
    project: str | None = None,
) -> tuple[str, list[Match], CutLines | None]:
    """(query label, matches, lines cut at reader.MAX_LINE characters or None) for the explain
    command; the label is the text itself, the file path, or "-"."""
    if text is not None and file is not None:
        raise QueryError(f"both a text and --file {file} were given; {USAGE}, not both.")
    _check_filters(cat, version, project)
    kw = {"version": version, "project": project}
    if text is not None and text != "-":
        return text, cat.explain(text, **kw), None
    if file is not None and str(file) != "-":
        try:
            with Path(file).open("rb") as raw:
                lines = _bounded(raw, str(file))
                return str(file), cat.explain_stream(lines, **kw), lines.cut_lines()
        except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:
            raise QueryError(f"cannot read {file} ({exc.strerror}); {USAGE}.") from None
    if sys.stdin is None or sys.stdin.isatty():
        raise QueryError(f"nothing to explain; {USAGE}.")
    stream = getattr(sys.stdin, "buffer", None)
    lines = _bounded(stream, "stdin") if stream else BoundedLines(sys.stdin, "stdin")
    return "-", cat.explain_stream(lines, **kw), lines.cut_lines()


def _check_filters(cat: Catalog, version: str | None, project: str | None) -> None:
    """A bad --version or --project is bad usage (exit 2), not "nothing matched"."""
    try:
        if project is not None:
            cat.project(project)
        if version is not None:
            cat.resolve_versions(version, project=project)
    except NotFound as exc:
        raise QueryError(str(exc)) from None


def _bounded(raw, name: str) -> BoundedLines:
    """Lines of the binary stream `raw` as UTF-8 text, bad bytes replaced, line ends kept
    (`\\r` is the cleaner's); a scan reads its bytes (`BoundedLines.blocks`)."""
    fh = io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline="")
    return BoundedLines(fh, name, binary=raw)


# An id (16 hex), an id prefix (6+ hex) or a slug (`words-words-1a2b3c`): what `kverr explain`
# prints and a user pastes back. No log line has this shape, so explain shows the record.
_KEY = re.compile(r"[0-9a-fA-F]{6,16}|[a-z0-9]+(?:-[a-z0-9]+)*-[0-9a-f]{6}")


def looks_like_key(text: str | None) -> bool:
    return bool(text) and _KEY.fullmatch(text.strip()) is not None


def record_match_or_raise(cat: Catalog, key: str) -> Match:
    """The record `key` names (Catalog.record_match), or NotFound saying how to find one."""
    m = cat.record_match(key)
    if m is None:
        raise NotFound(
            f"no record has the id, slug or id prefix {key.strip()[:80]!r} in this catalog;"
            ' find one with `kverr search WORDS` or `kverr explain "LOG LINE"`.'
        )
    return m


def search_query(
    cat: Catalog,
    words: str,
    flag: str | None,
    *,
    version: str | None = None,
    limit: int = 20,
    offset: int = 0,
    project: str | None = None,
) -> tuple[dict, list[Match], int]:
    """({"query"} or {"flag"}, one page of matches, total) for `kverr search`."""
    if bool(words.strip()) == bool(flag):
        raise QueryError(
            "pass the words to look for or --flag NAME (one of them); e.g. `kverr search radix cache`."
        )
    _check_filters(cat, version, project)
    page = {"version": version, "limit": limit, "offset": offset, "project": project}
    if flag:
        name = browse.option(flag)
        matches, total = cat.search_flag(name, **page)
        return {"flag": name}, matches, total
    matches, total = cat.search_page(words, **page)
    return {"query": words}, matches, total


COMPLETIONS = 50  # values a shell's Tab is offered at most


def completions(
    cat: Catalog, kind: str, prefix: str, *, project: str | None = None
) -> list[tuple[str, str]]:
    """(value, help) pairs for a shell's Tab: `release` (tags and snapshot labels, newest
    first; typed as digits, `0.5.9` as __version__ prints it), `project`, `flag` and `key`
    (record ids, or slugs once the prefix is not hex) that start with `prefix`."""
    if kind == "project":
        found = [(p["name"], p.get("product") or "") for p in cat.projects]
    elif kind == "release":
        revs = cat.revisions(
            project=project if project in {p["name"] for p in cat.projects} else None
        )
        bare = prefix[:1].isdigit()  # `0.5` completes to the tags' own spelling without the v
        found = [
            (
                t.removeprefix("≈")[1:] if bare and t.removeprefix("≈")[:1] in "vV" else t,
                f"{r.project or ''} {(r.date or '')[:10]}".strip(),
            )
            for r in reversed(revs)
            for t in r.tags
        ]
    elif kind == "flag":
        found = [(f["name"], (f.get("help") or "")[:60]) for f in cat.flags(project=None)]
        if not prefix.startswith("-"):  # `max-mo` completes as the option's own name
            found = [(n.lstrip("-"), h) for n, h in found]
    elif kind == "key":
        low = prefix.lower()
        rows = cat.con.execute(
            "SELECT id, slug, message FROM records WHERE starts_with(id, ?) OR starts_with(slug, ?)"
            " ORDER BY id LIMIT ?",
            [low, low, COMPLETIONS],
        ).fetchall()
        found = [
            (rid if rid.startswith(low) else slug, (msg or "")[:60]) for rid, slug, msg in rows
        ]
    else:
        raise ValueError(f"no completion of {kind!r}")
    return list(dict.fromkeys(v for v in found if v[0].startswith(prefix)))[:COMPLETIONS]
