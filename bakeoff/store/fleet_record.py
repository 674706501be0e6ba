"""fleet.json on disk: what happened on each host of a fleet run (bakeoff.fleet.record
builds it from the playbook's events), and where each host's results directory lies.

Per host: reachable or not, the status (complete, failed, unreachable, stalled, interrupted,
not tried), bakeoff
run's exit status, the reason when it failed, the run IDs its results carry, and the start
and end of each phase (connect, push, setup, run, fetch) by the controller's clock. Here, below
the analysis, because the report across hosts reads it back.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bakeoff.core.errors import UsageError
from bakeoff.store.results import write_atomic

FLEET_JSON = "fleet.json"
HOSTS_DIR = "hosts"
PHASES = ("connect", "push", "setup", "run", "fetch")
# 1: first version. 2: trials_recorded per host; phases may end "stopped" (an interrupt).
# 3: status "stalled" (and a run phase that ended so), run_started per host, stall_after_s.
SCHEMA_VERSION = 3


@dataclass
class Phase:
    started: float
    ended: float | None = None
    outcome: str = "running"  # running, ok, failed, unreachable, stalled, stopped (interrupted)

    @property
    def seconds(self) -> float | None:
        return None if self.ended is None else self.ended - self.started


@dataclass
class HostRecord:
    host: str
    status: str = "not tried"  # complete, failed, unreachable, stalled, interrupted, not tried
    reachable: bool | None = None  # False once any look at it found it unreachable
    exit_status: int | None = None  # of `bakeoff run` on the host
    reason: str = ""
    run_ids: list[str] = field(default_factory=list)
    run_status: str | None = None  # the fetched results.json's status
    results_bytes: int = 0  # the fetched results directory (what one host sends back)
    # Trials the host's run had recorded (its journal) at the controller's last look: what a
    # host lost mid-run had finished, kept on it for --resume.
    trials_recorded: int = 0
    # Its `bakeoff run` was started in this attempt (an interrupt before that stopped nothing
    # that measured).
    run_started: bool = False
    # After an interrupt: "stopped" (fleet/stop.yml stopped its run and counted its trials)
    # or "left running" (the stop was cut short by a second Ctrl-C, or could not reach it).
    stop: str = ""
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
    # Seconds (at least) without a new trial before a host's run counts as stalled.
    stall_after_s: int = 180
    # The directory the fleet run was started from: ansible-playbook runs there, so relative
    # paths in the inventory (a key file, a known_hosts) mean what they mean to `ansible -i`.
    cwd: str = ""
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
