"""Progress of a fleet run: one line per host per phase on a pipe, a live table on a terminal."""

from __future__ import annotations

from typing import Protocol

from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text

from bakeoff.fleet.record import PHASES, FleetRecord, Phase

_STYLE = {"ok": "green", "failed": "red", "unreachable": "red", "stalled": "red",
          "running": "yellow", "stopped": "yellow"}


class Progress(Protocol):
    def phase_ended(self, rec: FleetRecord, host: str, phase: str) -> None: ...
    def refresh(self, rec: FleetRecord) -> None: ...
    def close(self, rec: FleetRecord) -> None: ...


def _cell(p: Phase | None) -> Text:
    if p is None:
        return Text("·", style="dim")
    secs = p.seconds
    label = p.outcome if secs is None else f"{p.outcome} {secs:.1f}s"
    return Text(label, style=_STYLE.get(p.outcome, ""))


class Lines:
    """For logs and CI: a line as each phase of each host ends, nothing redrawn."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def phase_ended(self, rec: FleetRecord, host: str, phase: str) -> None:
        h = rec.hosts[host]
        p = h.phases[phase]
        secs = "" if p.seconds is None else f" ({p.seconds:.1f} s)"
        why = f": {h.reason}" if p.outcome in ("failed", "unreachable", "stalled") and h.reason \
            else ""
        self.console.print(f"{host}: {phase} {p.outcome}{secs}{why}", highlight=False,
                           soft_wrap=True)

    def refresh(self, rec: FleetRecord) -> None:
        pass

    def close(self, rec: FleetRecord) -> None:
        pass


class LiveTable:
    """On a terminal: one row per host, one column per phase, redrawn as events arrive."""

    def __init__(self, console: Console, rec: FleetRecord) -> None:
        self.live = Live(self._table(rec), console=console, refresh_per_second=4, transient=False)
        self.live.start()

    @staticmethod
    def _table(rec: FleetRecord) -> Table:
        table = Table("host", *PHASES, "status", title=f"fleet run {rec.fleet_run}")
        for h in rec.hosts.values():
            label = "running" if h.status == "not tried" and h.phases else h.status
            status = Text(label, style=_STYLE.get(
                {"complete": "ok", "not tried": "", "running": "running",
                 "interrupted": "stopped"}.get(label, "failed"), ""))
            table.add_row(h.host, *(_cell(h.phases.get(p)) for p in PHASES), status)
        return table

    def phase_ended(self, rec: FleetRecord, host: str, phase: str) -> None:
        self.refresh(rec)

    def refresh(self, rec: FleetRecord) -> None:
        self.live.update(self._table(rec))

    def close(self, rec: FleetRecord) -> None:
        self.live.update(self._table(rec))
        self.live.stop()
