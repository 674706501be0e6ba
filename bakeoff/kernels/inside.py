"""The guest's side: `python -m bakeoff.kernels.inside WORK`, run as the guest's command.

It reads WORK/request.json (written by the host: the rooms' runs, or for a functional
check the rooms, whose runs are planned here on the guest's kernel; the environment, the
seed), makes /tmp private, runs each room's trials with the ordinary runner into
WORK/rooms/<room>/ (results.json, trials.jsonl: no report, the host analyses), and writes
WORK/kernel.json (what kernel this is) and, last, WORK/done.json (each room's outcome). The
host trusts these files and nothing else: virtme-ng's exit status says nothing here (it is
255 on every run of this machine's qemu).

/tmp: virtme-ng shows the guest the host's /tmp through an overlay, so a run's clean-up in
the guest would "remove" other runs' /tmp/bakeoff-* (in the overlay only, but the run is not
private). A tmpfs goes over /tmp first; WORK, and the checkout where it lies under /tmp (a
clone in /tmp, as CI's may be), are bound back into the new tmpfs through descriptors opened
before, so the results still reach the host and the rooms' programs are still there.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bakeoff.declare.model import Benchmark, RunContext

REQUEST, KERNEL, DONE, ROOMS = "request.json", "kernel.json", "done.json", "rooms"
BTF = Path("/sys/kernel/btf/vmlinux")


def write_json(path: Path, data: Any) -> None:
    """Whole or absent: written aside, flushed, renamed (the host may read at any time)."""
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w") as f:
        json.dump(data, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(path)


# The checkout (its code, its build, usually its venv) and the interpreter's prefix: what the
# guest's runs need, and what a tmpfs over /tmp would hide when a clone lives under /tmp.
CHECKOUT = Path(__file__).resolve().parents[2]


def private_tmp(work: Path) -> None:
    """A tmpfs over /tmp in this mount namespace; WORK, the checkout and the interpreter's
    prefix bound back in where they lie beneath it."""
    keep = [p for p in dict.fromkeys([work, CHECKOUT, Path(sys.prefix).resolve()])
            if p.is_relative_to("/tmp")]
    fds = {p: os.open(p, os.O_PATH | os.O_DIRECTORY) for p in keep}
    try:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=1777", "bakeoff-guest-tmp", "/tmp"],
                       check=True)
        for path, fd in fds.items():
            path.mkdir(parents=True, exist_ok=True)
            # --no-canonicalize: mount(8) would resolve the descriptor's path by name, which
            # now names the new, empty directory; the kernel follows the descriptor itself.
            subprocess.run(["mount", "--no-canonicalize", "--bind", f"/proc/self/fd/{fd}",
                            str(path)], check=True, pass_fds=(fd,))
    finally:
        for fd in fds.values():
            os.close(fd)


def kernel_facts() -> dict[str, Any]:
    uname = platform.uname()
    # The guest's uptime as bakeoff starts in it: how long the kernel took to boot as far as
    # the guest's command (the boot's own cost, apart from the rooms' runs).
    return {"release": uname.release, "version": uname.version, "btf": BTF.exists(),
            "cmdline": Path("/proc/cmdline").read_text().strip(),
            "uptime_s": float(Path("/proc/uptime").read_text().split()[0])}


def _slower(bench: Benchmark, factor: float) -> Benchmark:
    """The room with its trials' time limits `factor` times longer: under qemu's emulator a
    trial takes many times its time on hardware, and running out of time there says nothing
    about the kernel."""
    return dataclasses.replace(bench, profiles={
        name: dataclasses.replace(p, timeout_s=p.timeout_s * factor)
        for name, p in bench.profiles.items()})


def run_room(work: Path, run: dict[str, Any], seed: int, pin: bool,
             timeout_factor: float = 1.0) -> dict[str, Any]:
    """One room's run as `bakeoff run` makes it, minus the reports; its outcome in words."""
    from bakeoff.app import runs
    from bakeoff.app.request import RunRequest
    from bakeoff.core.errors import UsageError

    started = time.monotonic()
    out = work / ROOMS / run["dir"]
    request = RunRequest(names=(run["room"],), profile=run["profile"], params=tuple(run["params"]),
                         variants=tuple(run.get("variants", ())), trials=run["trials"], out=out,
                         seed=seed, quiet=True, pin=pin)
    outcome: dict[str, Any] = {"room": run["room"], "dir": f"{ROOMS}/{run['dir']}"}
    try:
        benches = [_slower(b, timeout_factor) for b in runs.benchmarks(request)]
        record, _ = runs.start(request, benches)
        outcome.update(status="ran", run_status=record.status)
    except UsageError as e:  # nothing to run here, a room that will not load: said, not raised
        outcome.update(status="refused", message=str(e))
    except Exception as e:  # one room's crash must not lose the others' results
        outcome.update(status="crashed", message=f"{type(e).__name__}: {e}")
    outcome["seconds"] = round(time.monotonic() - started, 1)
    return outcome


def here() -> RunContext:
    """This machine's context, for a room to say which of its cases cannot apply at a point
    of its grid (bakeoff/kernels/plan.py): in the guest, the guest kernel's (a room's grid
    may be read from the kernel it runs on, as cgroup-stat-read's count of fields is)."""
    from bakeoff.declare import registry
    from bakeoff.declare.model import RunContext
    from bakeoff.machine import host

    return RunContext(build_dir=registry.build_dir(), scratch_dir=Path(tempfile.gettempdir()),
                      capabilities={}, host=host.facts())


def functional_runs(rooms: list[str]) -> list[dict[str, Any]]:
    """The functional check's runs of these rooms, planned here, on the kernel they run on."""
    from bakeoff.declare import registry
    from bakeoff.kernels.plan import functional_runs as plan_runs

    benches = registry.select(rooms, registry.load_rooms())
    return [r.to_json() for r in plan_runs(benches, here())]


def main(argv: list[str]) -> int:
    work = Path(argv[0]).resolve()
    request = json.loads((work / REQUEST).read_text())
    os.environ.update(request.get("env", {}))
    if request.get("private_tmp", True):
        private_tmp(work)
        # The guest's /root is the host's, read-only (virtme-ng overlays /etc, /home, /var but
        # not /root): a tool that writes its config at home (lttng create: ~/.lttngrc) failed
        # there. A home of the guest's own, in its private /tmp.
        home = Path(tempfile.mkdtemp(prefix="bakeoff-guest-home-", dir="/tmp"))
        os.environ["HOME"] = str(home)
    write_json(work / KERNEL, kernel_facts())
    planned = (functional_runs(request["functional_rooms"]) if request.get("functional_rooms")
               else request["runs"])
    outcomes = [run_room(work, r, int(request["seed"]), bool(request.get("pin", False)),
                         float(request.get("timeout_factor", 1.0)))
                for r in planned]
    write_json(work / DONE, {"rooms": outcomes})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
