"""What runs that died without cleaning up (SIGKILL) left of this room (Benchmark.sweep)."""

from __future__ import annotations

import contextlib
import subprocess
from pathlib import Path

from bakeoff.room import sweep_dead_owners

from .child import move_out, rmdir_when_empty
from .controller import memory_controller, mounts


def _unmount(point: Path) -> None:
    """Lazily: the iterator link, program and map it pins go with the mount."""
    subprocess.run(["umount", "-l", str(point)], check=False, capture_output=True)
    with contextlib.suppress(OSError):
        point.rmdir()


def sweep_leftovers() -> list[str]:
    """Remove what runs that died without cleaning up (SIGKILL) left: their child cgroups
    (bakeoff-<pid>-target) and their trials' private bpffs mounts (bakeoff-<pid>-bpffs-...,
    which pin an iterator link, its program and map). Only those whose creating PID is
    gone. One line per thing removed (Benchmark.sweep)."""
    lines = []
    controller = memory_controller()
    if controller:
        def remove_cgroup(cgroup: Path) -> None:
            move_out(cgroup)
            rmdir_when_empty(cgroup)

        lines += sweep_dead_owners(controller[0].glob("bakeoff-*-target"), remove_cgroup,
                                   "cgroup")
    bpffs = [m.point for m in mounts() if m.fstype == "bpf"]
    lines += sweep_dead_owners(bpffs, _unmount, "bpffs", verb="unmounted and removed")
    return lines
