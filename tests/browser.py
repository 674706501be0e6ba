"""Headless Chromium driven over the DevTools protocol, for the tests that look at
report.html as a reader's browser does (test_security.py, test_report_browser.py)."""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any


class Browser:
    """Headless Chromium driven over the DevTools protocol on a pipe (fds 3 and 4), so that a
    JavaScript dialog, a console message or an uncaught exception is an event we receive,
    not a line we hope to find in a log."""

    def __init__(self, profile: Path) -> None:
        chromium = shutil.which("chromium")
        assert chromium, "chromium is not installed: make test installs it (debian-packages)"
        to_chrome_r, self._w = os.pipe()
        self._r, from_chrome_w = os.pipe()

        def pipes_on_3_and_4() -> None:
            a, b = os.dup(to_chrome_r), os.dup(from_chrome_w)  # not clobbered by the dup2s
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--remote-debugging-pipe", f"--user-data-dir={profile}", "about:blank"],
            pass_fds=(3, 4), preexec_fn=pipes_on_3_and_4, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buf = b""
        self._id = 0
        self._session: str | None = None
        self.events: list[dict[str, Any]] = []

    def _send(self, method: str, params: dict[str, Any] | None, session: str | None) -> int:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        return self._id

    def _receive(self, timeout: float) -> dict[str, Any] | None:
        deadline = time.monotonic() + timeout
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._r], [], [], left)[0]:
                return None
            chunk = os.read(self._r, 1 << 16)
            assert chunk, "chromium closed its DevTools pipe"
            self._buf += chunk
        raw, _, self._buf = self._buf.partition(b"\0")
        msg: dict[str, Any] = json.loads(raw)
        if "method" in msg:
            self.events.append(msg)
            if msg["method"] == "Page.javascriptDialogOpening":  # recorded; let the page go on
                self._send("Page.handleJavaScriptDialog", {"accept": True}, msg.get("sessionId"))
        return msg

    def call(self, method: str, params: dict[str, Any] | None = None, *,
             browser: bool = False, timeout: float = 60) -> dict[str, Any]:
        i = self._send(method, params, None if browser else self._session)
        deadline = time.monotonic() + timeout
        while True:
            msg = self._receive(deadline - time.monotonic())
            assert msg is not None, f"chromium did not answer {method} in {timeout} s"
            if msg.get("id") == i:
                assert "error" not in msg, (method, msg["error"])
                result: dict[str, Any] = msg.get("result", {})
                return result

    def open(self, url: str, size: tuple[int, int] | None = None) -> list[dict[str, Any]]:
        """Load url in a new tab (of size (width, height) in CSS pixels when given); returns
        the events of its load (dialogs, console, errors)."""
        target = self.call("Target.createTarget", {"url": "about:blank"}, browser=True)
        self._session = self.call("Target.attachToTarget", {
            "targetId": target["targetId"], "flatten": True}, browser=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")
        if size is not None:
            self.call("Emulation.setDeviceMetricsOverride", {
                "width": size[0], "height": size[1], "deviceScaleFactor": 1, "mobile": False})
        first = len(self.events)
        self.call("Page.navigate", {"url": url})
        deadline = time.monotonic() + 60
        while not any(e["method"] == "Page.loadEventFired" for e in self.events[first:]):
            assert time.monotonic() < deadline, f"{url} did not finish loading"
            self._receive(deadline - time.monotonic())
        return self.events[first:]

    def eval(self, expression: str) -> Any:
        res = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                             "awaitPromise": True})
        assert "exceptionDetails" not in res, res["exceptionDetails"]
        return res["result"].get("value")

    def close(self) -> None:
        try:
            self.call("Browser.close", browser=True, timeout=10)
        except AssertionError:
            self.proc.kill()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._r)
        os.close(self._w)

    def screenshot(self, path: Path) -> None:
        """The viewport as a PNG."""
        import base64

        data = self.call("Page.captureScreenshot", {"format": "png"})["data"]
        path.write_bytes(base64.b64decode(data))
