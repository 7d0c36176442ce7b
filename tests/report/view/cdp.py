"""A headless Chromium driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`:
JSON messages ending in NUL, commands on the child's fd 3, answers and events on its fd 4), so a
test can load a page over HTTP, click with the real mouse, follow the navigation it causes,
read the DOM and take a screenshot - with the standard library only.

Everything the page logs (console calls, uncaught exceptions, CSP violations, failed loads) is
kept in `Browser.logged`: the view's pages log nothing.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import subprocess
import time
from pathlib import Path
from typing import Any

from tests.report.test_html_browser import FLAGS, chromium

TIMEOUT_S = 60.0


class Browser:
    def __init__(self, profile: Path, width: int = 1280, height: int = 900):
        to_child, self._send = os.pipe()
        self._receive, from_child = os.pipe()

        def fds() -> None:  # in the child, before exec: the pipe ends on fds 3 and 4
            os.dup2(to_child, 3)
            os.dup2(from_child, 4)

        self.proc = subprocess.Popen(
            [chromium(), *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-pipe"],
            pass_fds=(to_child, from_child, 3, 4),
            preexec_fn=fds,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_child)
        os.close(from_child)
        self._buffer = b""
        self._next_id = 0
        self._events: list[dict[str, Any]] = []
        self.logged: list[str] = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        attached = self.call("Target.attachToTarget", targetId=target, flatten=True)
        self.session = attached["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable", session=True)
        self.call(
            "Emulation.setDeviceMetricsOverride",
            session=True,
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    # --- the protocol -----------------------------------------------------------------------
    def call(self, method: str, *, session: bool = False, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self._send, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self._keep(reply)

    def wait_for(self, method: str) -> dict[str, Any]:
        """The next event named `method` (one that already arrived counts)."""
        for i, event in enumerate(self._events):
            if event["method"] == method:
                return self._events.pop(i)
        while True:
            event = self._read()
            if event.get("method") == method:
                return event
            self._keep(event)

    def _keep(self, message: dict[str, Any]) -> None:
        method, params = message.get("method", ""), message.get("params", {})
        if method == "Runtime.consoleAPICalled":
            self.logged.append(f"console: {[a.get('value') for a in params.get('args', [])]}")
        elif method == "Runtime.exceptionThrown":
            self.logged.append(f"exception: {params['exceptionDetails'].get('text')}")
        elif method == "Log.entryAdded":
            self.logged.append(f"log: {params['entry'].get('text')}")
        if method:
            self._events.append(message)

    def _read(self) -> dict[str, Any]:
        deadline = time.monotonic() + TIMEOUT_S
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self._receive], [], [], max(left, 0))
            if not ready:
                raise TimeoutError(f"chromium said nothing for {TIMEOUT_S:.0f} s")
            chunk = os.read(self._receive, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the pipe")
            self._buffer += chunk
        raw, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(raw)

    # --- what a test does -------------------------------------------------------------------
    def open(self, url: str) -> None:
        self._events = [e for e in self._events if e["method"] != "Page.loadEventFired"]
        self.call("Page.navigate", session=True, url=url)
        self.wait_for("Page.loadEventFired")

    def js(self, expression: str) -> Any:
        result = self.call(
            "Runtime.evaluate", session=True, expression=expression, returnByValue=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_until(self, expression: str, timeout_s: float = 10.0) -> Any:
        """`expression`'s value once it is truthy (what a click started may finish a moment
        later: a hashchange handler); its last value when `timeout_s` passes first."""
        deadline = time.monotonic() + timeout_s
        while not (value := self.js(expression)) and time.monotonic() < deadline:
            time.sleep(0.05)
        return value

    def click(self, selector: str, *, navigates: bool = False) -> None:
        """A real mouse click (press and release) at the middle of the element `selector`."""
        box = self.js(
            f"(() => {{ const el = document.querySelector({json.dumps(selector)});"
            " if (!el) return null; el.scrollIntoView({block: 'center'});"
            " const r = el.getBoundingClientRect();"
            " return [r.left + r.width / 2, r.top + r.height / 2]; })()"
        )
        assert box is not None, f"no element {selector} to click"
        if navigates:
            self._events = [e for e in self._events if e["method"] != "Page.loadEventFired"]
        for kind in ("mousePressed", "mouseReleased"):
            self.call(
                "Input.dispatchMouseEvent",
                session=True,
                type=kind,
                x=box[0],
                y=box[1],
                button="left",
                clickCount=1,
            )
        if navigates:
            self.wait_for("Page.loadEventFired")

    def screenshot(self, path: Path) -> bytes:
        """The whole page (not only the window) as a PNG at `path`, scrolled to its top so
        sticky bars sit where they belong."""
        self.js("window.scrollTo(0, 0)")
        size = self.call("Page.getLayoutMetrics", session=True)["cssContentSize"]
        clip = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
        shot = self.call(
            "Page.captureScreenshot",
            session=True,
            format="png",
            clip=clip,
            captureBeyondViewport=True,
        )
        data = base64.b64decode(shot["data"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return data

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, OSError):
            self.call("Browser.close")
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._send)
        os.close(self._receive)
