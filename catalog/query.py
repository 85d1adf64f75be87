"""Where the text to explain comes from: an argument, a file, or stdin (`-`)."""

from __future__ import annotations

import io
import sys
from pathlib import Path

from kverr.catalog.catalog import Catalog
from kverr.catalog.reader import BoundedLines

from kverr.errors import NotFound, QueryError
from kverr.ftypes import CutLines, Match

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
    try:  # a bad --version or --project is bad usage (exit 2), not "nothing matched"
        if project is not None:
            cat.project(project)
        if version is not None:
            cat.resolve_version(version, project=project)
    except NotFound as exc:
        raise QueryError(str(exc)) from None
    kw = {"version": version, "project": project}
    if text is not None and text != "-":
        return text, cat.explain(text, **kw), None
    if file is not None and str(file) != "-":
        try:
            with Path(file).open(encoding="utf-8", errors="replace", newline="") as fh:
                lines = BoundedLines(fh, str(file))
                return str(file), cat.explain_stream(lines, **kw), lines.cut_lines()
        except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:
            raise QueryError(f"cannot read {file} ({exc.strerror}); {USAGE}.") from None
    if sys.stdin is None or sys.stdin.isatty():
        raise QueryError(f"nothing to explain; {USAGE}.")
    stream = getattr(sys.stdin, "buffer", None)
    fh = (
        io.TextIOWrapper(stream, encoding="utf-8", errors="replace", newline="")
        if stream
        else sys.stdin
    )
    lines = BoundedLines(fh, "stdin")
    return "-", cat.explain_stream(lines, **kw), lines.cut_lines()
