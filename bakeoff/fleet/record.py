"""fleet.json: what happened on each host of a fleet run, built from the playbook's events.

Per host: reachable or not, the status (complete, failed, unreachable, interrupted, not tried), bakeoff
run's exit status, the reason when it failed, the run IDs its results carry, and the start
and end of each phase (connect, push, setup, run, fetch) by the controller's clock.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from pathlib import Path
from typing import Any

# The record itself (its dataclasses, save and load) is the store's: the analysis across
# hosts reads it back, and may not import this package. Named here too for the fleet's code.
from bakeoff.store.fleet_record import (
    FLEET_JSON,
    HOSTS_DIR,
    PHASES,
    SCHEMA_VERSION,
    FleetRecord,
    HostRecord,
    Phase,
    is_fleet_dir,
    load,
    save,
)

__all__ = ["FAULTS", "FLEET_JSON", "HOSTS_DIR", "PHASES", "RUN_TASK", "SCHEMA_VERSION",
           "START_TASK", "FleetRecord", "HostRecord", "Phase", "apply_event", "close_phases",
           "dir_bytes", "is_fleet_dir",
           "load", "phase_of", "save"]

# The playbook's task that looks at a host's run (fleet/poll_run.py prints one JSON line).
RUN_TASK = "run: bakeoff run"
# The task that starts it (an async job).
START_TASK = "run: start bakeoff run"
# How the playbook's result check begins its message for a stalled run.
STALLED_MSG = "stalled: "
# Statuses that end a host's attempt before its results are settled.
FAULTS = ("failed", "unreachable", "stalled")
# make's own summary of a failed recipe: it names the target, never the cause.
_MAKE_SUMMARY = re.compile(r"^make(\[\d+\])?: \*\*\* ")
# A line that names a cause (a missing tool or file, a refused permission, an error).
_CAUSE = re.compile(r"not found|no such file|permission denied|cannot|can't|error|fatal|"
                    r"missing|denied|failed", re.I)


def phase_of(task: str) -> str:
    """Task names in fleet/playbook.yml start with their phase ('setup: make deps build');
    '' for a task outside the phases (the final 'result:' check)."""
    head = task.split(":", 1)[0].strip()
    return head if head in PHASES else ""


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def _cause(text: str) -> str:
    """The first line of a command's stderr that names a cause (`bpftool: not found`), not
    the last (make's `*** [Makefile:12: build] Error 2`); else the last line."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    for ln in lines:
        if not _MAKE_SUMMARY.match(ln) and _CAUSE.search(ln):
            return ln
    return lines[-1] if lines else ""


def _reason(event: dict[str, Any]) -> str:
    """The one line that says why: the stderr line naming the cause, else Ansible's message."""
    msg = str(event.get("msg") or "").strip()
    if msg.startswith("bakeoff run exited"):
        return msg  # the playbook's own summary already names the exit and the error line
    if msg.startswith(STALLED_MSG):  # the status says "stalled" already
        return msg.removeprefix(STALLED_MSG)
    detail = _cause(str(event.get("stderr") or "")) or _last_line(msg)
    rc = event.get("rc")
    return f"{event['task']}: " + (f"exit {rc}: " if isinstance(rc, int) and rc else "") + detail


def apply_event(rec: FleetRecord, event: dict[str, Any]) -> list[tuple[str, str]]:
    """Fold one playbook event into its host's record; returns the (host, phase) pairs that
    ended with it, for the progress display."""
    host = rec.hosts.get(str(event.get("host")))
    if host is None:
        return []
    kind, t, task = str(event["event"]), float(event["t"]), str(event["task"])
    phase = phase_of(task)
    ended: list[tuple[str, str]] = []
    if kind == "start":
        if not phase:
            return ended
        # A host's tasks run in order: starting a new phase ends the one before it (a run
        # that stalled ends "stalled", never "ok").
        for name, p in host.phases.items():
            if p.outcome == "running" and name != phase:
                p.ended = t
                p.outcome = "stalled" if name == "run" and host.status == "stalled" else "ok"
                ended.append((host.host, name))
        if phase not in host.phases or host.phases[phase].outcome != "running":
            host.phases[phase] = Phase(started=t)
        return ended
    current = host.phases.get(phase) if phase else None
    if current is not None:
        current.ended = t  # the phase's latest task so far; the next start closes it
    answered = host.reachable
    # A task that ran and failed (the root check, the connect phase's first task) answered
    # too: only "unreachable" says the host did not.
    if kind in ("ok", "failed") and phase == "connect" and host.reachable is None:
        host.reachable = True
    if task == START_TASK and kind == "ok" and not event.get("skipped"):
        host.run_started = True
    if task == RUN_TASK and kind in ("ok", "retry"):
        look = _run_look(event)
        host.trials_recorded = int(look.get("trials") or host.trials_recorded)
        rc = look.get("rc")
        if kind == "ok":
            host.exit_status = rc if isinstance(rc, int) else None
        if look.get("stalled") and host.status not in FAULTS:
            host.status, host.reason = "stalled", str(look.get("stall", ""))
    if kind in ("unreachable", "failed"):
        if current is not None and current.outcome == "running":
            current.outcome = kind
            ended.append((host.host, phase))
        if kind == "unreachable":
            host.reachable = False  # as its status says, whenever it was lost
        # The first failure is the reason; an unreachable fetch after a failed run is not.
        if host.status not in FAULTS:
            host.status, host.reason = kind, _reason(event)
            if kind == "unreachable" and answered:
                host.reason = f"{_lost(host, phase)}: {host.reason}"
    return ended


def _run_look(event: dict[str, Any]) -> dict[str, Any]:
    try:
        look = json.loads(str(event.get("stdout") or "{}"))
    except ValueError:
        return {}
    return look if isinstance(look, dict) else {}


def _lost(host: HostRecord, phase: str) -> str:
    """What a host that answered before and stopped answering had done."""
    if phase != "run":
        return f"stopped answering in its {phase or 'last'} phase"
    return (f"stopped answering mid-run, with {host.trials_recorded} trial(s) recorded; they "
            "stay on the host, and --resume goes on from them once it answers")


def close_phases(rec: FleetRecord, t: float, outcome: str = "ok") -> list[tuple[str, str]]:
    """At the playbook's end: phases still open ended with their last task ("ok"); when the
    fleet run was interrupted, they were cut short ("stopped"), and end now."""
    out = []
    for host in rec.hosts.values():
        for name, p in host.phases.items():
            if p.outcome == "running":
                p.ended = (p.ended or t) if outcome == "ok" else t
                p.outcome = outcome
                out.append((host.host, name))
    return out


def dir_bytes(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            with contextlib.suppress(OSError):
                total += (Path(root) / f).stat().st_size
    return total
