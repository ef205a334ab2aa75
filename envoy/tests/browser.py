"""Headless Chromium driven over the DevTools protocol, for tests that click through a page.

Chromium is started with ``--remote-debugging-pipe``: it reads protocol commands on file
descriptor 3 and writes answers and events on 4, each message a JSON text ended by a NUL byte.
No port is opened and nothing but the Debian ``chromium`` package is needed.

Design decision: the test acts the way a person does: clicks are mouse events dispatched at the
middle of the element (after scrolling it into view), text is typed into the focused field,
and the page is read with JavaScript evaluated in it; every wait is bounded and polls.
Chromium runs in its own session with a fresh profile and is stopped by PID.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import envoyctl

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--remote-debugging-pipe"]


_TRAMPOLINE = """
import fcntl, os, sys
high = [fcntl.fcntl(int(fd), fcntl.F_DUPFD, 10) for fd in sys.argv[1:3]]
for target, fd in zip((3, 4), high):
    os.dup2(fd, target)
os.execv(sys.argv[3], sys.argv[3:])
"""


class BrowserError(RuntimeError):
    """The browser failed, answered an error, or a wait ran out."""


class Browser:
    """One Chromium with one page, attached over the pipe."""

    def __init__(self, binary: str, width: int = 1400, height: int = 1800) -> None:
        self._profile = tempfile.TemporaryDirectory(prefix="toolseal-chromium-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        # A Python trampoline puts the two pipe ends on descriptors 3 and 4, then becomes
        # Chromium (the ends first move above 4, so that neither clobbers the other).
        self._popen = subprocess.Popen(
            [sys.executable, "-c", _TRAMPOLINE, str(to_browser_r), str(from_browser_w), binary,
             *FLAGS, f"--user-data-dir={self._profile.name}", "about:blank"],
            pass_fds=(to_browser_r, from_browser_w), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._next_id = 0
        self._answers: dict[int, dict[str, Any]] = {}
        self.events: list[dict[str, Any]] = []
        self._cond = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        try:
            targets = self.send("Target.getTargets")["targetInfos"]
            page = next(t for t in targets if t["type"] == "page")
            self._session = self.send("Target.attachToTarget",
                                      {"targetId": page["targetId"], "flatten": True})["sessionId"]
            for domain in ("Page", "Runtime", "Log"):
                self.page(f"{domain}.enable")
            self.page("Emulation.setDeviceMetricsOverride",
                      {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        except BaseException:
            self.close()
            raise

    def _read(self) -> None:
        buffer = b""
        while True:
            try:
                chunk = os.read(self._from_browser, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                with self._cond:
                    self._answers[-1] = {"error": {"message": "the browser closed the pipe"}}
                    self._cond.notify_all()
                return
            buffer += chunk
            while b"\0" in buffer:
                raw, buffer = buffer.split(b"\0", 1)
                message = json.loads(raw)
                with self._cond:
                    if "id" in message:
                        self._answers[message["id"]] = message
                    else:
                        self.events.append(message)
                    self._cond.notify_all()

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None,
             timeout: float = 30) -> dict[str, Any]:
        """One protocol command; its result (raises on an error answer)."""
        with self._cond:
            self._next_id += 1
            ident = self._next_id
        message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        with self._cond:
            while ident not in self._answers:
                if -1 in self._answers:
                    raise BrowserError(f"{method}: {self._answers[-1]['error']['message']}")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise BrowserError(f"{method}: no answer in {timeout} s")
                self._cond.wait(remaining)
            answer = self._answers.pop(ident)
        if "error" in answer:
            raise BrowserError(f"{method}: {answer['error']}")
        return answer.get("result", {})

    def page(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """A command to the page's session."""
        return self.send(method, params, self._session)

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (promises awaited)."""
        result = self.page("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True})
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, what: str, timeout: float = 30) -> Any:
        """Polls until ``expression`` is truthy; returns its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise BrowserError(f"timed out waiting for {what}")
            time.sleep(0.1)

    def goto(self, url: str) -> None:
        """Navigates and waits for the document to be complete."""
        self.page("Page.navigate", {"url": url})
        self.wait_for("document.readyState === 'complete' && location.href !== 'about:blank'",
                      f"{url} to load")

    def click(self, selector: str) -> None:
        """A left click in the middle of the element, as a mouse would."""
        point = self.wait_for(
            f"""(() => {{ const e = document.querySelector({json.dumps(selector)});
                 if (!e || e.disabled || e.offsetParent === null) return null;
                 e.scrollIntoView({{block: 'center'}});
                 const r = e.getBoundingClientRect();
                 return [r.left + r.width / 2, r.top + r.height / 2]; }})()""",
            f"{selector} to be clickable")
        for kind in ("mousePressed", "mouseReleased"):
            self.page("Input.dispatchMouseEvent", {"type": kind, "x": point[0], "y": point[1],
                                                   "button": "left", "clickCount": 1})

    def type_text(self, selector: str, text: str) -> None:
        """Clicks into a field and types ``text``."""
        self.click(selector)
        self.page("Input.insertText", {"text": text})

    def screenshot(self, path: Path) -> None:
        """A PNG of the viewport."""
        data = self.page("Page.captureScreenshot", {"format": "png"})["data"]
        path.write_bytes(base64.b64decode(data))

    def log_entries(self) -> list[dict[str, Any]]:
        """The page's log entries so far (``Log.entryAdded``: CSP reports, failed loads…)."""
        with self._cond:
            return [e["params"]["entry"] for e in self.events if e.get("method") == "Log.entryAdded"]

    def close(self) -> None:
        """Asks Chromium to close, stops it by PID (bounded), removes its profile."""
        try:
            self.send("Browser.close", timeout=5)
        except (BrowserError, OSError):
            pass
        try:
            os.close(self._to_browser)
        except OSError:
            pass
        envoyctl.stop_pid(self._popen.pid, 10, self._popen)
        # Chromium's helpers (renderer, GPU, crash handler) are in the group the browser
        # leads and may still write to the profile for a moment after it exits.
        try:
            os.killpg(self._popen.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            os.close(self._from_browser)
        except OSError:
            pass
        for _ in range(50):
            try:
                shutil.rmtree(self._profile.name)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.1)
        self._profile.cleanup()

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
