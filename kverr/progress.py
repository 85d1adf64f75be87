"""Progress of work that can take a while: the library reports it, the program shows it.

Library code wraps such work in `with progress.reporting(title) as report:` and calls
`report(phase, done, total)` as it goes. Nothing is shown unless the program named a display
with `shown_by` (kverr/cli.py does when stderr is a terminal: Rich bars, kverr/render.py), so
the library never writes to a stream, and a pipe, a test or the server sees nothing. The work
that reports deep inside a call (the first use building the packaged catalog, inside any
command that opens it) needs no callback handed down every layer on the way.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager

Report = Callable[[str, int, int], None]  # (phase, done, total)
Display = Callable[[str], AbstractContextManager[Report]]  # title -> report, while it runs

_display: Display | None = None


@contextlib.contextmanager
def shown_by(display: Display | None) -> Iterator[None]:
    """Show the progress reported while this block runs with `display` (None: show none)."""
    global _display
    before, _display = _display, display
    try:
        yield
    finally:
        _display = before


@contextlib.contextmanager
def reporting(title: str) -> Iterator[Report]:
    """The report function for one piece of work, `title` saying what it is to a person."""
    if _display is None:
        yield quiet
        return
    with _display(title) as report:
        yield report


def quiet(phase: str, done: int, total: int) -> None:
    """The report of work nobody watches."""
