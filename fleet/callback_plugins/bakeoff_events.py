"""Ansible callback: every task start and result, per host, as one JSON line.

`bakeoff fleet run` sets BAKEOFF_FLEET_EVENTS to a file and reads it while the playbook runs:
the fleet record (per-phase times, exit status, reason) and the progress display come from
these lines. Run by hand, without that variable, the plugin writes nothing.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
    name: bakeoff_events
    type: notification
    short_description: per-host task events as JSON lines for bakeoff fleet run
    description: writes one JSON object per task start and result to $BAKEOFF_FLEET_EVENTS
"""

# Tails kept of a command's output: enough for the last error line, not a whole log.
_TAIL = 4000


def _tail(text: Any) -> str:
    return text[-_TAIL:] if isinstance(text, str) else ""


class CallbackModule(CallbackBase):  # type: ignore[misc]
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "notification"
    CALLBACK_NAME = "bakeoff_events"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self) -> None:
        super().__init__()
        path = os.environ.get("BAKEOFF_FLEET_EVENTS")
        # Line-buffered: the controller reads each event as it happens.
        self._out = open(path, "a", buffering=1, encoding="utf-8") if path else None  # noqa: SIM115
        # The last output of each host's retried task (the run's look, every few seconds):
        # a retry is written only when it says something new (a trial more), not every look.
        self._last_retry: dict[str, str] = {}

    def _emit(self, event: str, host: str, task: str, result: dict[str, Any] | None = None) -> None:
        if self._out is None:
            return
        line: dict[str, Any] = {"t": time.time(), "event": event, "host": host, "task": task}
        if result is not None:
            for key in ("rc", "msg", "skipped", "changed"):
                if key in result and isinstance(result[key], str | int | float | bool):
                    line[key] = result[key]
            line["stderr"] = _tail(result.get("stderr"))
            line["stdout"] = _tail(result.get("stdout"))
            if "results" in result:  # a loop: the first failing item's message
                bad = [r for r in result["results"] if isinstance(r, dict) and r.get("failed")]
                if bad and "msg" not in line:
                    line["msg"] = str(bad[0].get("msg", ""))
        self._out.write(json.dumps(line) + "\n")

    def v2_runner_on_start(self, host: Any, task: Any) -> None:
        self._emit("start", host.get_name(), task.get_name())

    def v2_runner_on_ok(self, result: Any) -> None:
        self._emit("ok", result._host.get_name(), result._task.get_name(), result._result)

    def v2_runner_on_failed(self, result: Any, ignore_errors: bool = False) -> None:
        event = "ignored" if ignore_errors else "failed"
        self._emit(event, result._host.get_name(), result._task.get_name(), result._result)

    def v2_runner_on_unreachable(self, result: Any) -> None:
        self._emit("unreachable", result._host.get_name(), result._task.get_name(), result._result)

    def v2_runner_retry(self, result: Any) -> None:
        host = result._host.get_name()
        said = str(result._result.get("stdout", ""))
        if self._last_retry.get(host) != said:
            self._last_retry[host] = said
            self._emit("retry", host, result._task.get_name(), result._result)

    def v2_runner_on_skipped(self, result: Any) -> None:
        self._emit("skipped", result._host.get_name(), result._task.get_name(), result._result)

    def v2_playbook_on_stats(self, stats: Any) -> None:
        if self._out is not None:
            self._out.write(json.dumps({"t": time.time(), "event": "end"}) + "\n")
            self._out.close()
            self._out = None
