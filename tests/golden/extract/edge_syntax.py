"""Fixture: statement shapes around sites (written for kverr's tests; never executed)."""

import logging
import sys
import warnings as w
from sys import exit as leave

logger = logging.getLogger(__name__)
LEVELS = ("low", "high")

# match statements below need a new interpreter,
# so refuse to import on an old one.
if sys.version_info < (3, 10):
    raise RuntimeError("Python 3.10+ is required")


class Outer:
    assert LEVELS, "class-level check"

    class Inner:
        @staticmethod
        def deep(value):
            if value: raise ValueError(f"inline {value}")  # noqa: E701

    async def run(self, items):
        async with self.lock:
            for item in items:
                if (size := len(item)) > 3:
                    logger.log(logging.WARNING, "item %s has %d parts", item, size)
            else:
                logger.debug("not a site: debug is below info")
        while self.busy:
            try:
                await self.step()
            except (TimeoutError, OSError) as exc:
                logger.exception(f"step failed: {exc}")
            finally:
                pass


def choose(mode, names):
    match mode:
        case "a" | "b":
            pass
        case {"kind": kind} if kind in LEVELS:
            raise ValueError(f"kind {kind} is reserved, levels are {LEVELS}")
        case _:
            w.warn(f"unknown mode {mode!r}", RuntimeWarning)
    x = 1; assert x, "semicolon site"  # noqa: E702
    label = "é" ; assert names, f"{label} names"  # noqa: E702, E703
    handler = lambda: leave("lambda exit")  # noqa: E731
    return handler


def exits(code):
    if code == 2:
        sys.exit(f"exiting with {code}")
    leave(3)
    raise SystemExit
