"""fleet.json: what happened on each host of a fleet run, built from the playbook's events.

Per host: reachable or not, the status (complete, failed, unreachable, interrupted, not tried), bakeoff
run's exit status, the reason when it failed, the run IDs its results carry, and the start
and end of each phase (connect, push, setup, run, fetch) by the controller's clock.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bakeoff.core.errors import UsageError
from bakeoff.store.results import write_atomic

FLEET_JSON = "fleet.json"
HOSTS_DIR = "hosts"
PHASES = ("connect", "push", "setup", "run", "fetch")
# 1: first version. 2: trials_recorded per host; phases may end "stopped" (an interrupt).
SCHEMA_VERSION = 2
# The playbook's task that looks at a host's run (fleet/poll_run.py prints one JSON line).
RUN_TASK = "run: bakeoff run"


@dataclass
class Phase:
    started: float
    ended: float | None = None
    outcome: str = "running"  # running, ok, failed, unreachable, stopped (interrupted)

    @property
    def seconds(self) -> float | None:
        return None if self.ended is None else self.ended - self.started


@dataclass
class HostRecord:
    host: str
    status: str = "not tried"  # complete, failed, unreachable, interrupted, not tried
    reachable: bool | None = None
    exit_status: int | None = None  # of `bakeoff run` on the host
    reason: str = ""
    run_ids: list[str] = field(default_factory=list)
    run_status: str | None = None  # the fetched results.json's status
    results_bytes: int = 0  # the fetched results directory (what one host sends back)
    # Trials the host's run had recorded (its journal) at the controller's last look: what a
    # host lost mid-run had finished, kept on it for --resume.
    trials_recorded: int = 0
    attempts: int = 0
    phases: dict[str, Phase] = field(default_factory=dict)

    def phase_seconds(self) -> dict[str, float | None]:
        return {name: p.seconds for name, p in self.phases.items()}


@dataclass
class FleetRecord:
    fleet_run: str
    # The name of the hosts' results directory: the fleet run's name and a random suffix, so
    # two fleet runs of one name (the same --out basename) never share a host's directory.
    remote_name: str
    commit: str
    inventory: str
    run_args: list[str]
    seed: int
    rooms: list[str]
    serial: bool
    forks: int
    host_timeout_s: int
    argv: list[str]
    started_at: str
    finished_at: str | None = None
    wheelhouse_bytes: int = 0
    archive_bytes: int = 0
    hosts: dict[str, HostRecord] = field(default_factory=dict)
    schema_version: int = SCHEMA_VERSION

    def host_dir(self, fleet_dir: Path, host: str) -> Path:
        return fleet_dir / HOSTS_DIR / host

    def failed(self) -> list[HostRecord]:
        return [h for h in self.hosts.values() if h.status != "complete"]


def save(record: FleetRecord, fleet_dir: Path) -> Path:
    path = fleet_dir / FLEET_JSON
    data = asdict(record)
    for name, h in record.hosts.items():  # seconds too, for readers of the JSON
        for phase, p in h.phases.items():
            data["hosts"][name]["phases"][phase]["seconds"] = p.seconds
    write_atomic(path, json.dumps(data, indent=2) + "\n")
    return path


def load(fleet_dir: Path) -> FleetRecord:
    path = fleet_dir / FLEET_JSON
    try:
        data = json.loads(path.read_text())
        hosts = {name: HostRecord(**{**h, "phases": {p: _phase(v) for p, v in h["phases"].items()}})
                 for name, h in data.pop("hosts").items()}
        return FleetRecord(**data, hosts=hosts)
    except FileNotFoundError:
        raise UsageError(f"{fleet_dir} holds no {FLEET_JSON}; give a directory written by "
                         "bakeoff fleet run") from None
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise UsageError(f"{path} is not a fleet record this bakeoff reads ({exc}); "
                         "give a directory written by bakeoff fleet run") from None


def _phase(data: dict[str, Any]) -> Phase:
    return Phase(started=data["started"], ended=data["ended"], outcome=data["outcome"])


def is_fleet_dir(path: Path) -> bool:
    return (path / FLEET_JSON).is_file()


def phase_of(task: str) -> str:
    """Task names in fleet/playbook.yml start with their phase ('setup: make deps build');
    '' for a task outside the phases (the final 'result:' check)."""
    head = task.split(":", 1)[0].strip()
    return head if head in PHASES else ""


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def _reason(event: dict[str, Any]) -> str:
    """The one line that says why: the command's last stderr line, else Ansible's message."""
    msg = str(event.get("msg") or "").strip()
    if msg.startswith("bakeoff run exited"):
        return msg  # the playbook's own summary already names the exit and the error line
    detail = _last_line(str(event.get("stderr") or "")) or _last_line(msg)
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
        # A host's tasks run in order: starting a new phase ends the one before it.
        for name, p in host.phases.items():
            if p.outcome == "running" and name != phase:
                p.ended, p.outcome = t, "ok"
                ended.append((host.host, name))
        if phase not in host.phases or host.phases[phase].outcome != "running":
            host.phases[phase] = Phase(started=t)
        return ended
    current = host.phases.get(phase) if phase else None
    if current is not None:
        current.ended = t  # the phase's latest task so far; the next start closes it
    if kind == "ok" and phase == "connect":
        host.reachable = True
    if task == RUN_TASK and kind in ("ok", "retry"):
        look = _run_look(event)
        host.trials_recorded = int(look.get("trials") or host.trials_recorded)
        rc = look.get("rc")
        if kind == "ok":
            host.exit_status = rc if isinstance(rc, int) else None
    if kind in ("unreachable", "failed"):
        if current is not None:
            current.outcome = kind
            ended.append((host.host, phase))
        if kind == "unreachable" and phase == "connect":
            host.reachable = False
        # The first failure is the reason; an unreachable fetch after a failed run is not.
        if host.status not in ("failed", "unreachable"):
            host.status, host.reason = kind, _reason(event)
            if kind == "unreachable" and host.reachable:
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
