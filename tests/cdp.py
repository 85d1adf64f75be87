"""A headless Chromium driven over the DevTools protocol, for the site's browser tests (no tests
here; test_site_browser.py uses it).

`--window-size=390,...` does not make a phone: headless Chromium lays such a window out at
485 px, so a page that overflows at 390 px passed. Here the page gets a real device metrics
override (Emulation.setDeviceMetricsOverride: width, device scale, mobile viewport) before it
loads, as DevTools' device mode does. The protocol runs over `--remote-debugging-pipe` (fds 3
and 4, NUL-terminated JSON), so no port is opened and no WebSocket library is needed.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import selectors
import subprocess
import time
from pathlib import Path
from typing import Any

PHONE = {"width": 390, "height": 844, "deviceScaleFactor": 3, "mobile": True}
DESKTOP = {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False}
TIMEOUT = 60.0  # seconds for any one answer; a hung browser fails the test, never the run


class Browser:
    """One headless Chromium and one page, closed with the `with` block."""

    def __init__(self, binary: str, profile: Path) -> None:
        to_child, self._out = os.pipe()  # we write commands; the browser reads fd 3
        self._in, from_child = os.pipe()  # the browser writes answers on fd 4
        # above 4, so that placing one end at 3 or 4 in the child never overwrites the other
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_child, from_child)]
        os.close(to_child)
        os.close(from_child)
        to_child, from_child = high

        def fds() -> None:  # in the child before exec (and before it closes all but pass_fds)
            os.dup2(to_child, 3)
            os.dup2(from_child, 4)

        cmd = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
               "--hide-scrollbars", "--remote-debugging-pipe", f"--user-data-dir={profile}",
               "about:blank"]  # fmt: skip
        self.proc = subprocess.Popen(
            cmd,
            pass_fds=(3, 4),
            preexec_fn=fds,  # noqa: PLW1509 - the only way to place the pipe at fds 3 and 4
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        os.close(to_child)
        os.close(from_child)
        self._buf = b""
        self._next = 0
        self._events: list[dict] = []
        self._sel = selectors.DefaultSelector()
        self._sel.register(self._in, selectors.EVENT_READ)
        page = next(t for t in self.call("Target.getTargets")["targetInfos"] if t["type"] == "page")
        attached = self.call("Target.attachToTarget", targetId=page["targetId"], flatten=True)
        self.session = attached["sessionId"]
        self.call("Page.enable", session=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except (OSError, TimeoutError, RuntimeError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, 9)
            self.proc.wait(timeout=10)
        self._sel.close()
        for fd in (self._in, self._out):
            try:
                os.close(fd)
            except OSError:
                pass

    # ------------------------------------------------------------ the protocol

    def call(self, method: str, *, session: bool = False, **params: Any) -> dict:
        """Send one command and wait for its answer (events read meanwhile are kept)."""
        self._next += 1
        msg = {"id": self._next, "method": method, "params": params}
        if session:
            msg["sessionId"] = self.session
        os.write(self._out, json.dumps(msg).encode() + b"\0")
        while True:
            got = self._read()
            if got.get("id") == self._next:
                if "error" in got:
                    raise RuntimeError(f"{method}: {got['error']}")
                return got.get("result", {})
            self._events.append(got)

    def wait_for(self, event: str) -> dict:
        """The first `event` since the last wait (kept if it came during a call)."""
        while True:
            for i, ev in enumerate(self._events):
                if ev.get("method") == event:
                    return self._events.pop(i)
            self._events.append(self._read())

    def _read(self) -> dict:
        deadline = time.monotonic() + TIMEOUT
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not self._sel.select(timeout=left):
                raise TimeoutError(f"Chromium answered nothing within {TIMEOUT:.0f} s")
            chunk = os.read(self._in, 1 << 16)
            if not chunk:
                raise RuntimeError("Chromium closed the DevTools pipe (did it crash?)")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\0", 1)
        return json.loads(line)

    # ------------------------------------------------------------ pages

    def open(self, url: str, device: dict, *, dark: bool = False) -> None:
        """Load `url` as `device` would show it and wait until its scripts have run."""
        self.call("Emulation.setDeviceMetricsOverride", session=True, **device)
        self.call("Emulation.setTouchEmulationEnabled", session=True, enabled=device["mobile"])
        scheme = "dark" if dark else "light"
        self.call("Emulation.setEmulatedMedia", session=True,
                  features=[{"name": "prefers-color-scheme", "value": scheme}])  # fmt: skip
        self._events.clear()
        self.call("Page.navigate", session=True, url=url)
        self.wait_for("Page.loadEventFired")

    def eval(self, expression: str) -> Any:
        got = self.call("Runtime.evaluate", session=True, expression=expression,
                        returnByValue=True, awaitPromise=True)  # fmt: skip
        if "exceptionDetails" in got:
            raise RuntimeError(f"page script failed: {got['exceptionDetails']}")
        return got["result"].get("value")

    def screenshot(self, path: Path, height: int | None = None) -> None:
        """A PNG of the page's top `height` CSS pixels (default: all of it), at the device's
        scale."""
        width, whole = self.eval(
            "[document.documentElement.scrollWidth, document.documentElement.scrollHeight]"
        )
        clip = {"x": 0, "y": 0, "width": width, "height": min(whole, height or whole), "scale": 1}
        data = self.call("Page.captureScreenshot", session=True, format="png",
                         captureBeyondViewport=True, clip=clip)["data"]  # fmt: skip
        path.write_bytes(base64.b64decode(data))


# What overflows: any visible element whose box reaches past the viewport's right edge, unless a
# scroll box (overflow-x auto or scroll) holds it, as a wide table or a source listing may be held.
# An element clipped by overflow: hidden is reported too: a row cut off is text the reader loses.
OVERFLOW_JS = r"""
(() => {
  const vw = document.documentElement.clientWidth;
  const out = [];
  const scrolls = (el) => {
    for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      const x = getComputedStyle(p).overflowX;
      if (x === "auto" || x === "scroll") return p;
    }
    return null;
  };
  for (const el of document.querySelectorAll("body *")) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    const box = scrolls(el);
    const edge = box ? Math.min(vw, box.getBoundingClientRect().right) : vw;
    if (box ? box.getBoundingClientRect().right > vw + 0.5 : r.right > edge + 0.5 || r.left < -0.5) {
      const name = el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") +
        (el.className && typeof el.className === "string" ? "." + el.className.trim().split(/\s+/).join(".") : "");
      out.push(name + " " + Math.round(r.left) + ".." + Math.round(r.right));
    }
  }
  return {viewport: vw, page: document.documentElement.scrollWidth, overflow: out.slice(0, 20)};
})()
"""
