"""One boot: a kernel in a virtme-ng guest, its results back as files.

The guest shares the host's root read-only (virtme-ng's default), gets WORK read-write
(`--rwdir`), and runs `python -m bakeoff.kernels.inside WORK` with this interpreter. What
came back is what WORK holds: kernel.json and done.json (bakeoff/kernels/inside.py), never
vng's exit status (255 on every run under this machine's qemu, a console fallback). The
guest's console goes to WORK/console.log. qemu runs in its own session and is killed with it
on every way out (timeout, Ctrl-C, SIGTERM).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bakeoff.core.errors import Interrupted, UsageError
from bakeoff.kernels import inside
from bakeoff.kernels.plan import Boot, RoomRun

CONSOLE = "console.log"
GUEST_CPUS = 2
GUEST_MEMORY = "2G"
# A trial's time limit under qemu's emulator, against its room's profile: at the room's own
# limit, bpf-map-dump's Go reader ran out of time in the first check (docs/KERNELS.md).
EMULATOR_TIMEOUT_FACTOR = 10.0
# Under the emulator, both vCPUs run in one qemu thread, taking turns (TCG's round-robin),
# not each in a thread of its own (MTTCG, qemu's default for an x86 guest on an x86 host).
# A 6.12 guest with MTTCG died of `Oops: int3` in __schedule: a vCPU met the int3 of a
# jump-label patch (text_poke_bp, as perf events open and close) that no published patch
# covered, which x86's ordering and the kernel's IPI syncs exclude; a stress of those keys
# reproduced it with MTTCG and not in one thread (docs/KERNELS.md has the runs).
EMULATOR_ACCEL = "tcg,thread=single"
# What booting a distribution's kernel in a guest takes beside Python: the tool and where
# it comes from (pyproject's `kernels` extra; debian-packages).
NEEDED = {
    "vng": "PyPI virtme-ng (make kernel-deps)",
    "qemu-system-x86_64": "Debian qemu-system-x86",
    "busybox": "Debian busybox-static (the guest's initramfs)",
    "depmod": "Debian kmod",
    "mount": "Debian mount",
}


def tool_path() -> str:
    """PATH for vng: this venv's scripts (vng calls virtme-run by name) and the sbin dirs
    (depmod)."""
    here = str(Path(sys.executable).parent)
    return os.pathsep.join([here, os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])


def missing_tools() -> list[str]:
    path = tool_path()
    return [f"{tool} ({where})" for tool, where in NEEDED.items()
            if shutil.which(tool, path=path) is None]


def preflight() -> None:
    missing = missing_tools()
    if missing:
        raise UsageError(f"--kernel needs {', '.join(missing)}; install them: make kernel-deps")


@dataclass
class BootResult:
    """What one boot brought back, read from its files."""

    boot: Boot
    work: Path
    seconds: float  # from starting vng to its exit
    kernel: dict[str, Any] = field(default_factory=dict)  # kernel.json: release, btf, ...
    rooms: list[dict[str, Any]] = field(default_factory=list)  # done.json's outcomes
    problem: str | None = None  # no done.json: why, with the console's last line

    def to_json(self) -> dict[str, Any]:
        return {"index": self.boot.index, "block": self.boot.block, "kernel": self.boot.kernel,
                "control": self.boot.control, "dir": self.work.name, "seconds": self.seconds,
                "guest_kernel": self.kernel, "rooms": self.rooms, "problem": self.problem}


def request_json(runs: list[RoomRun] | list[str], seed: int, pin: bool, env: dict[str, str],
                 timeout_factor: float = 1.0) -> dict[str, Any]:
    """runs: the rooms' runs as planned; or room names, for a functional check planned in
    the guest (inside.functional_runs)."""
    planned = [r.to_json() for r in runs if isinstance(r, RoomRun)]
    rooms = [r for r in runs if isinstance(r, str)]
    return {"runs": planned, "functional_rooms": rooms, "seed": seed, "pin": pin, "env": env,
            "private_tmp": True, "timeout_factor": timeout_factor}


# virtme-ng's init mounts an empty tmpfs over these in the guest, whatever the host has there
# (virtme/guest/virtme-init: `mount -t tmpfs tmpfs /var/tmp/`), after it shares the root.
HIDDEN_IN_GUEST = (Path("/var/tmp"),)


def hidden_dirs(repo: Path, work: Path) -> list[str]:
    """vng's --rodir/--rwdir words that show the guest the checkout and the interpreter's
    prefixes where they lie under a directory the guest's init hides (a fleet host's
    default remote directory is /var/tmp/bakeoff-fleet: its checkout and venv would be
    missing in the guest, whose `python` was then "not found"). Read-only, but a directory
    that holds WORK is read-write, and comes before WORK's own: vng mounts every --rwdir
    before any --rodir, and a read-only mount after WORK's would cover it."""
    found: list[Path] = []
    for p in dict.fromkeys(Path(x).resolve() for x in (repo, sys.prefix, sys.base_prefix)):
        if any(p.is_relative_to(h) for h in HIDDEN_IN_GUEST) and not any(
                p.is_relative_to(f) for f in found):
            found = [f for f in found if not f.is_relative_to(p)] + [p]
    return [f"--rwdir={p}" if work.resolve().is_relative_to(p) else f"--rodir={p}"
            for p in found]


def vng_argv(image: Path, work: Path, hardware_kvm: bool, pin: bool,
             repo: Path | None = None) -> list[str]:
    inner = shlex.join([sys.executable, "-m", "bakeoff.kernels.inside", str(work)])
    shown = hidden_dirs(repo, work) if repo is not None else []
    argv = ["vng", "--run", str(image), "--cpus", str(GUEST_CPUS), "--memory", GUEST_MEMORY,
            *(w for w in shown if w.startswith("--rwdir")), "--rwdir", str(work),
            *(w for w in shown if w.startswith("--rodir")), "--exec", inner,
            # The kernel's console into console.log: without it vng writes nothing when its
            # output is not a terminal, and a guest that dies (a panic, an OOM) says nothing.
            "--verbose"]
    if not hardware_kvm:
        argv += ["--disable-kvm", f"--qemu-opts=-accel {EMULATOR_ACCEL}"]
    if pin:  # each vCPU on its own host CPU: a timed boot's trials do not migrate under it
        argv.append("--pin")
    return argv


def collect(boot: Boot, work: Path, seconds: float) -> BootResult:
    """The boot's outcome from its files alone."""
    result = BootResult(boot, work, round(seconds, 1))
    kernel, done = work / inside.KERNEL, work / inside.DONE
    if kernel.is_file():
        result.kernel = json.loads(kernel.read_text())
    if done.is_file():
        result.rooms = list(json.loads(done.read_text())["rooms"])
        return result
    console = work / CONSOLE
    lines = console.read_text(errors="replace").strip().splitlines() if console.is_file() else []
    last = lines[-1].strip() if lines else "no console output"
    result.problem = ("the guest wrote no done.json" + ("" if result.kernel else
                      " (nor kernel.json: it did not boot as far as bakeoff)")
                      + f"; console's last line: {last[:200]}")
    return result


@contextmanager
def _terminated_as_interrupt() -> Iterator[None]:
    """SIGTERM raises, so the guest's session is killed on the way out as on Ctrl-C."""
    def raise_(signum: int, _frame: Any) -> None:
        raise Interrupted(signum)
    old = signal.signal(signal.SIGTERM, raise_)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def boot(boot: Boot, image: Path, work: Path, runs: list[RoomRun] | list[str], seed: int,
         hardware_kvm: bool, pin: bool, timeout_s: float, env: dict[str, str],
         repo: Path) -> BootResult:
    """Boot the image once, run `runs` inside, and read back what it wrote."""
    work.mkdir(parents=True)
    # Under the emulator a trial runs many times slower than on hardware (a functional
    # check's trial limits are stretched; a timed boot always has hardware KVM).
    factor = 1.0 if hardware_kvm else EMULATOR_TIMEOUT_FACTOR
    inside.write_json(work / inside.REQUEST, request_json(runs, seed, pin, env, factor))
    started = time.monotonic()
    with (work / CONSOLE).open("wb") as console, _terminated_as_interrupt():
        proc = subprocess.Popen(vng_argv(image, work, hardware_kvm, pin, repo), cwd=repo,
                                stdin=subprocess.DEVNULL, stdout=console,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                env={**os.environ, "PATH": tool_path()})
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            console.write(f"\nbakeoff: the guest ran past {timeout_s:.0f} s; stopped\n".encode())
        finally:
            if proc.poll() is None:
                with suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    return collect(boot, work, time.monotonic() - started)
