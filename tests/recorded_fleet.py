"""A fleet directory built from two real recorded runs, laid out as `bakeoff fleet run` leaves
it (fleet.json, hosts/<host>/), for the report across hosts without a live fleet.

tests/fixtures/fleet_runs/{a,b}/results.json are two real runs on this project's 2-vCPU KVM
test machine (2026-11-26, `bakeoff run mremap-vs-memcpy --profile quick --seed 26`): a with
--param size=4KiB,256KiB, b with --param size=4KiB,16MiB. Both measured 4 KiB on the same
machine: there the hosts should agree. With relabel=True, b's 16 MiB cases are renamed
256 KiB, standing in for a host where the same case makes the kernel do more (a 16 MiB
move flushes the TLB once per 2 MiB extent, a cold 16 MiB copy faults 4096 pages in): its
figures are real measurements, of a bigger buffer. The relabelling is the one thing not
measured, and it is done here, in the open.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from bakeoff.fleet import record as fleet_record

RUNS = Path(__file__).resolve().parent / "fixtures" / "fleet_runs"
SIZE_A, SIZE_B = 256 * 1024, 16 * 1024 * 1024  # the size each run swept beside 4 KiB


def _relabel(value: object) -> object:
    """Every case's size=16 MiB as 256 KiB, wherever a case is recorded."""
    if isinstance(value, dict):
        if value.get("size") == SIZE_B:
            return {**value, "size": SIZE_A}
        return {k: _relabel(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_relabel(v) for v in value]
    return value


def recorded_fleet(root: Path, hosts: tuple[str, str] = ("alpha", "beta"),
                   relabel: bool = True) -> Path:
    """root/fleet: fleet.json and hosts/<host>/results.json for the two recorded runs; the
    inventory fleet.json names is not written (ansible-inventory is not started to read it)."""
    fleet = root / "fleet"
    records = {n: fleet_record.HostRecord(host=n, status="complete", reachable=True,
                                          exit_status=0, run_status="complete")
               for n in hosts}
    inv = root / "hosts.yml"
    rec = fleet_record.FleetRecord(
        fleet_run="fleet", remote_name="fleet-26ab", commit="0" * 40, inventory=str(inv),
        run_args=["mremap-vs-memcpy", "--profile", "quick"], seed=26,
        rooms=["mremap_vs_memcpy"], serial=False, forks=2, host_timeout_s=600,
        argv=["bakeoff", "fleet", "run", "-i", str(inv), "mremap-vs-memcpy"],
        started_at="2026-11-26T22:13:00Z", hosts=records)
    for name, run in zip(hosts, ("a", "b"), strict=True):
        hdir = rec.host_dir(fleet, name)
        hdir.mkdir(parents=True)
        data = json.loads((RUNS / run / "results.json").read_text())
        if run == "b" and relabel:
            data = _relabel(data)
        (hdir / "results.json").write_text(json.dumps(data, indent=1))
    fleet_record.save(rec, fleet)
    return fleet


def copy_run(run: str, dest: Path) -> Path:
    """One recorded run as a plain run directory."""
    shutil.copytree(RUNS / run, dest)
    return dest
