"""kernels.md of a fleet directory: each host's `bakeoff run --kernel` outcome, and its table.

The report across hosts compares hosts on one kernel each (bakeoff/analysis/across_hosts.py);
a --kernel run makes the kernel an axis within each host, and that report has no second axis
yet. Until it has, the fleet's own page says so and links each host's kernels.md (what runs
on each kernel, or the timed comparison), or says why the host has none (its refusal).
"""

from __future__ import annotations

from pathlib import Path

from bakeoff.fleet.record import FleetRecord

KERNELS_MD = "kernels.md"


def lines(rec: FleetRecord, fleet_dir: Path) -> list[str]:
    out = [f"# bakeoff fleet: {rec.fleet_run}, with --kernel", "",
           "Each host booted the kernels itself and chose its own mode (timed only with "
           "hardware KVM). No report across hosts yet: it compares hosts on one kernel each, "
           "and would need the kernel as a second axis. Each host's own table:", "",
           "| host | status | kernels table, or why none |", "|---|---|---|"]
    for h in rec.hosts.values():
        table = rec.host_dir(fleet_dir, h.host) / KERNELS_MD
        where = (f"[{table.relative_to(fleet_dir)}]({table.relative_to(fleet_dir)})"
                 if table.is_file() else "none")
        why = f"; {h.reason}" if h.reason else ""
        out.append(f"| {h.host} | {h.status} | {where}{why.replace('|', '/')} |")
    return [*out, ""]


def write(rec: FleetRecord, fleet_dir: Path) -> Path:
    path = fleet_dir / KERNELS_MD
    path.write_text("\n".join(lines(rec, fleet_dir)))
    return path
