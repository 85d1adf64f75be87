"""The frames between the harness and its child: a 4-byte big-endian length, then that many
bytes of UTF-8 JSON holding one object.

The child runs a repository's code, so whatever arrives from it is hostile: a frame may be cut
short, never end, claim a huge length or hold anything but an object. `Reader.read` bounds the
wait (one deadline for the whole frame, however it trickles in) and the size, and says what was
wrong with a ChannelError; the harness turns that into an outcome, never a traceback. The
frames travel on their own descriptors, not on the child's stdin or stdout, which the
revision's prints and reads would share.
"""

from __future__ import annotations

import json
import os
import select
import time
from typing import Any

HEADER = 4
MAX_FRAME = 32 << 20  # bytes; a revision's option table, the largest answer, is under 1 MB


class ChannelError(Exception):
    """The other side closed the channel, or sent a frame that is not a JSON object."""


class Late(ChannelError):
    """No whole frame went through within the deadline."""


def encode(obj: dict[str, Any]) -> bytes:
    body = json.dumps(obj, default=repr, ensure_ascii=True).encode("ascii")
    if len(body) > MAX_FRAME:
        raise ChannelError(f"a frame of {len(body)} bytes is over the {MAX_FRAME}-byte limit")
    return len(body).to_bytes(HEADER, "big") + body


def send(fd: int, obj: dict[str, Any], timeout: float | None = None) -> None:
    """Write one whole frame to `fd`; Late when the reader does not take it in `timeout`
    seconds (a child that stops reading must not hang the harness on a full pipe)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    view = memoryview(encode(obj))
    while view:
        _wait(fd, deadline, write=True)
        view = view[os.write(fd, view[: 1 << 16]) :]


def _wait(fd: int, deadline: float | None, *, write: bool = False) -> None:
    """Return when `fd` is ready; Late once the deadline has passed."""
    while True:
        wait = None if deadline is None else deadline - time.monotonic()
        if wait is not None and wait <= 0:
            raise Late("no whole frame went through in time")
        ready = (
            select.select([], [fd], [], wait)[1] if write else select.select([fd], [], [], wait)[0]
        )
        if ready:
            return


class Reader:
    """Frames from one descriptor, each within its deadline."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._buf = bytearray()

    def read(self, timeout: float | None) -> dict[str, Any]:
        """The next frame's object; ChannelError when it is late, cut off or not an object.
        `timeout` None waits for ever (the child waiting for its next job)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        head = self._take(HEADER, deadline)
        size = int.from_bytes(head, "big")
        if size > MAX_FRAME:
            raise ChannelError(f"a frame claims {size} bytes, over the {MAX_FRAME}-byte limit")
        body = self._take(size, deadline)
        try:
            obj = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise ChannelError(f"a frame is not JSON ({exc})") from None
        if not isinstance(obj, dict):
            raise ChannelError(f"a frame holds a {type(obj).__name__}, not an object")
        return obj

    def _take(self, n: int, deadline: float | None) -> bytes:
        while len(self._buf) < n:
            _wait(self.fd, deadline)
            chunk = os.read(self.fd, max(n - len(self._buf), 1 << 16))
            if not chunk:
                raise ChannelError("the other side closed the channel")
            self._buf += chunk
        out = bytes(self._buf[:n])
        del self._buf[:n]
        return out
