"""kernels.md of a fleet directory: each host's `bakeoff run --kernel` outcome, and one table
across hosts and kernels.

The report across hosts compares hosts on one kernel each (bakeoff/analysis/across_hosts.py);
a --kernel run makes the kernel an axis within each host. This page lists each host's status
with a link to its own kernels.md (its boots; a timed host's comparison), or why it has none
(its refusal), then the table of what runs, skips and why per host and kernel, which the
caller makes from the hosts' run directories (bakeoff/kernels/across_hosts.py, handed in by
the CLI: the fleet layer does not import the kernels layer, its sibling).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from bakeoff.fleet.record import FleetRecord

KERNELS_MD = "kernels.md"
KERNELS_JSON = "kernels.json"
# The table for scripts, beside kernels.md.
TABLE_JSON = "kernels-across-hosts.json"

# Each host's run directory (with its kernels.json), and where the table's JSON goes →
# the table in Markdown.
Table = Callable[[dict[str, Path], Path], list[str]]


def host_runs(rec: FleetRecord, fleet_dir: Path) -> dict[str, Path]:
    """The hosts that sent a kernel run back (a kernels.json), in the inventory's order."""
    return {h.host: d for h in rec.hosts.values()
            if (d := rec.host_dir(fleet_dir, h.host)) and (d / KERNELS_JSON).is_file()}


def lines(rec: FleetRecord, fleet_dir: Path, table: Table | None = None) -> list[str]:
    out = [f"# bakeoff fleet: {rec.fleet_run}, with --kernel", "",
           "Each host booted the kernels itself and chose its own mode (timed only with "
           "hardware KVM). Each host's own page (its boots, a timed host's comparison):", "",
           "| host | status | kernels table, or why none |", "|---|---|---|"]
    for h in rec.hosts.values():
        page = rec.host_dir(fleet_dir, h.host) / KERNELS_MD
        where = (f"[{page.relative_to(fleet_dir)}]({page.relative_to(fleet_dir)})"
                 if page.is_file() else "none")
        why = f"; {h.reason}" if h.reason else ""
        out.append(f"| {h.host} | {h.status} | {where}{why.replace('|', '/')} |")
    out.append("")
    if table is not None:
        out += table(host_runs(rec, fleet_dir), fleet_dir / TABLE_JSON)
    return out


def write(rec: FleetRecord, fleet_dir: Path, table: Table | None = None) -> Path:
    path = fleet_dir / KERNELS_MD
    path.write_text("\n".join(lines(rec, fleet_dir, table)))
    return path
