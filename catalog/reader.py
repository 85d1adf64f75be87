"""Lines of a file or stdin in bounded memory, whatever the input's size or shape.

`for line in stream` holds a whole line in memory, and a line has no upper bound: /dev/zero has
no newline at all (3.3 GB in 15 s), a 200 MB one-line file took 688 MB. `BoundedLines` reads
fixed-size chunks and keeps about MAX_LINE characters of any line, its two ends; the middle of
a longer line is read past and dropped, and its number is kept so the output can say so.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from typing import IO

from kverr.answers import CutLines
from kverr.errors import QueryError

MAX_LINE = 1 << 16  # characters of one line kept; a shipped message is under 2,000
CHUNK = 1 << 16  # characters read at a time
BLOCK = 1 << 20  # characters `blocks` reads at a time (after a first CHUNK)
MAX_CUT_NOTED = 100  # cut line numbers kept (the count goes on)
CUT_MARK = " [...] "  # stands for the middle of a cut line


class BoundedLines:
    """The lines of `stream` (without their "\\n"), each at most about `max_line` characters.

    A longer line keeps its first and last `max_line // 2` characters around a " [...] " mark:
    a message sits at one end of such a line (a message followed by a dump, or the last redraw
    of a progress bar, which `normalize.clean_line` takes). Memory is bounded by a few times
    `max_line + chunk` characters. Binary bytes are read like any text (a log may hold some),
    but a stream whose first chunk is nothing but NULs is refused with a QueryError naming
    `name`: /dev/zero would otherwise be read forever. Iterate once (or read `blocks` once).

    `binary`: the UTF-8 bytes under `stream` (opened with errors="replace" and newline=""),
    which `blocks` then reads instead: a scan runs its regex over bytes, and only the lines
    near a hit are decoded."""

    def __init__(
        self,
        stream: IO[str],
        name: str,
        *,
        max_line: int = MAX_LINE,
        chunk: int = CHUNK,
        binary: IO[bytes] | None = None,
    ) -> None:
        self.stream = stream
        self.binary = binary
        self.name = name
        self.max_line = max_line
        self.chunk = chunk
        self.cut: list[int] = []  # numbers of the first MAX_CUT_NOTED lines that were cut
        self.cut_count = 0
        self.lines_read = 0

    def _refuse_zeros(self, first: str | bytes) -> None:
        """The first chunk read: nothing but NULs is a device like /dev/zero, read forever."""
        if first and not first.strip("\x00" if isinstance(first, str) else b"\x00"):
            raise QueryError(
                f"{self.name} starts with {len(first):,} NUL bytes and nothing else, which is"
                " no log (a device like /dev/zero, or a file of zeros); pass a text log."
            )

    def __iter__(self) -> Iterator[str]:
        head: list[str] = []  # the line's first max_line characters
        size = 0
        tail = ""  # past max_line: the last max_line // 2 characters read
        first = True
        while data := self.stream.read(self.chunk):
            if first:
                self._refuse_zeros(data)
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

    def blocks(self, size: int = BLOCK) -> Iterator[tuple[str | bytes, int]]:
        """The same lines as iterating, in blocks: (text, n), n lines joined by "\\n", as
        UTF-8 bytes when the reader has `binary` (a block that holds a cut line is text). A
        scan reads a block with one regex pass and splits only the lines around a hit, so a
        line costs no Python step of its own; `__iter__` is the reference it is tested
        against. Memory: a block, plus the two ends of a line longer than `max_line`."""
        if self.binary is not None:
            read, nl, block = self.binary.read, b"\n", self._bytes_block
            # a line is surely longer than max_line characters past 4 * max_line bytes: until
            # then (or its end) it is carried whole, then decoded
            limit = 4 * self.max_line + 4
            decode = codecs.getincrementaldecoder("utf-8")("replace").decode
        else:
            read, nl, block, limit = self.stream.read, "\n", self._block, self.max_line
            decode = _as_read
        half = self.max_line // 2
        empty = carry = nl[:0]  # `carry`: the start of a line not ended yet
        long = False  # inside a long line: only `head`, its first max_line characters, and
        head = tail = ""  # `tail`, the last `half` of the rest, are kept
        data = read(self.chunk)
        self._refuse_zeros(data)
        while data:
            if long:
                at = data.find(nl)
                tail = (tail + decode(data if at < 0 else data[:at]))[-half:]
                if at < 0:
                    data = read(size)
                    continue
                yield self._line([head], (tail + decode(empty, True))[-half:]), 1
                long, data = False, data[at + 1 :]
            buf = carry + data if carry else data
            cut = buf.rfind(nl)
            if cut >= 0:
                yield block(buf[:cut])
            carry = buf[cut + 1 :]
            if len(carry) > limit:
                long, text, carry = True, decode(carry), empty
                head, tail = text[: self.max_line], text[self.max_line :][-half:]
            data = read(size)
        if long:
            yield self._line([head], (tail + decode(empty, True))[-half:]), 1
        elif carry:
            text = carry.decode("utf-8", "replace") if isinstance(carry, bytes) else carry
            yield self._line([text[: self.max_line]], text[self.max_line :][-half:]), 1

    def _bytes_block(self, data: bytes) -> tuple[str | bytes, int]:
        """`_block` for UTF-8 bytes: no line longer than max_line bytes, the bytes as they are;
        else decoded, and cut as text."""
        whole = self._whole(data, b"\n")
        return whole if whole is not None else self._block(data.decode("utf-8", "replace"))

    def _whole(self, data: str | bytes, nl: str | bytes) -> tuple[str | bytes, int] | None:
        """(data, n) when no line of `data` (`nl`: its line break, str or bytes) is longer than
        max_line: such a line holds one of the block's `step`-sized slices whole, with no line
        break in it, so a few `find`s per block rule that out; else None."""
        step = max(self.max_line // 2, 1)
        slices = range(0, len(data) - step + 1, step)
        if not all(data.find(nl, at, at + step) >= 0 for at in slices):
            return None
        n = data.count(nl) + 1
        self.lines_read += n
        return data, n

    def _block(self, text: str) -> tuple[str, int]:
        """(text, n) for whole lines joined by "\\n", any line past max_line cut as `_line`
        cuts it; the block is split only when `_whole` finds it may hold one."""
        whole = self._whole(text, "\n")
        if whole is not None:
            return whole
        half = self.max_line // 2
        lines = text.split("\n")
        out = []
        for line in lines:
            if len(line) > self.max_line:
                out.append(self._line([line[: self.max_line]], line[self.max_line :][-half:]))
            else:
                self.lines_read += 1
                out.append(line)
        return "\n".join(out), len(out)

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


def _as_read(text: str, final: bool = False) -> str:
    """The decoder of text that is read as text (an incremental decoder's `decode`)."""
    return text
