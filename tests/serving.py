"""A real HTTP server for tests: an ASGI app answering on 127.0.0.1, uvicorn in a thread."""

from __future__ import annotations

import contextlib
import threading
import time


@contextlib.contextmanager
def serving(app, limits=None, *, join: float = 10):
    """`app` served by the guarded uvicorn (feeds/server.py) until the block ends; yields
    (host, port). `join`: how long to wait for the server to drain when the block ends."""
    from kverr.feeds.server import Limits, bind, server_for

    sock = bind("127.0.0.1", 0)
    server = server_for(app, sock, limits=limits or Limits())
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start within 10 s"
        time.sleep(0.01)
    try:
        yield sock.getsockname()[:2]
    finally:
        server.should_exit = True
        thread.join(timeout=join)
