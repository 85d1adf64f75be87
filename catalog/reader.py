"""Lines of a file or stdin in bounded memory, whatever the input's size or shape.

`for line in stream` holds a whole line in memory, and a line has no upper bound: /dev/zero has
no newline at all (3.3 GB in 15 s), a 200 MB one-line file took 688 MB. `BoundedLines` reads
fixed-size chunks and keeps about MAX_LINE characters of any line, its two ends; the middle of
a longer line is read past and dropped, and its number is kept so the output can say so.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO

from kverr.answers import CutLines
from kverr.errors import QueryError

MAX_LINE = 1 << 16  # characters of one line kept; a shipped message is under 2,000
CHUNK = 1 << 16  # characters read at a time
MAX_CUT_NOTED = 100  # cut line numbers kept (the count goes on)
CUT_MARK = " [...] "  # stands for the middle of a cut line


class BoundedLines:
    """The lines of `stream` (without their "\\n"), each at most about `max_line` characters.

    A longer line keeps its first and last `max_line // 2` characters around a " [...] " mark:
    a message sits at one end of such a line (a message followed by a dump, or the last redraw
    of a progress bar, which `normalize.clean_line` takes). Memory is bounded by a few times
    `max_line + chunk` characters. Binary bytes are read like any text (a log may hold some),
    but a stream whose first chunk is nothing but NULs is refused with a QueryError naming
    `name`: /dev/zero would otherwise be read forever. Iterate once."""

    def __init__(
        self, stream: IO[str], name: str, *, max_line: int = MAX_LINE, chunk: int = CHUNK
    ) -> None:
        self.stream = stream
        self.name = name
        self.max_line = max_line
        self.chunk = chunk
        self.cut: list[int] = []  # numbers of the first MAX_CUT_NOTED lines that were cut
        self.cut_count = 0
        self.lines_read = 0

    def __iter__(self) -> Iterator[str]:
        head: list[str] = []  # the line's first max_line characters
        size = 0
        tail = ""  # past max_line: the last max_line // 2 characters read
        first = True
        while data := self.stream.read(self.chunk):
            if first and not data.strip("\x00"):
                raise QueryError(
                    f"{self.name} starts with {len(data):,} NUL bytes and nothing else, which is"
                    " no log (a device like /dev/zero, or a file of zeros); pass a text log."
                )
            first = False
            pos = 0
            while pos < len(data):
                nl = data.find("\n", pos)
                end = len(data) if nl < 0 else nl
                room = self.max_line - size
                if end - pos <= room and not tail:
                    head.append(data[pos:end])
                    size += end - pos
                else:
                    if room > 0:
                        head.append(data[pos : pos + room])
                        size = self.max_line
                    tail = (tail + data[pos + max(room, 0) : end])[-(self.max_line // 2) :]
                if nl < 0:
                    break
                yield self._line(head, tail)
                head, size, tail = [], 0, ""
                pos = nl + 1
        if head:
            yield self._line(head, tail)

    def cut_lines(self) -> CutLines | None:
        """Which lines were cut so far, or None when none was."""
        if not self.cut_count:
            return None
        return CutLines(self.max_line, self.cut_count, tuple(self.cut))

    def _line(self, head: list[str], tail: str) -> str:
        self.lines_read += 1
        line = "".join(head)
        if not tail:
            return line
        self.cut_count += 1
        if len(self.cut) < MAX_CUT_NOTED:
            self.cut.append(self.lines_read)
        half = self.max_line // 2
        return line[:half] + CUT_MARK + (line[half:] + tail)[-half:]
