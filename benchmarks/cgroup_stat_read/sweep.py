"""What runs that died without cleaning up (SIGKILL) left of this room (Benchmark.sweep)."""

from __future__ import annotations

import contextlib
import re
import subprocess

from bakeoff.core import pids as procs

from .child import move_out, rmdir_when_empty
from .controller import memory_controller, mounts

TARGET_NAME = re.compile(r"^bakeoff-(\d+)-target$")
BPFFS_NAME = re.compile(r"^bakeoff-(\d+)-bpffs-")


def sweep_leftovers() -> list[str]:
    """Remove what runs that died without cleaning up (SIGKILL) left: their child cgroups and
    their trials' private bpffs mounts (which pin an iterator link, its program and map).
    Only those whose creating PID is gone. One line per thing removed (Benchmark.sweep)."""
    lines = []
    controller = memory_controller()
    if controller:
        for entry in controller[0].glob("bakeoff-*-target"):
            m = TARGET_NAME.match(entry.name)
            if m and not procs.alive(int(m.group(1))):
                move_out(entry)
                try:
                    rmdir_when_empty(entry)
                    lines.append(f"removed cgroup {entry} (its run, {m.group(1)}, is gone)")
                except OSError as exc:
                    lines.append(f"could not remove cgroup {entry}: {exc.strerror or exc}")
    for mount in mounts():
        m = BPFFS_NAME.match(mount.point.name)
        if mount.fstype == "bpf" and m and not procs.alive(int(m.group(1))):
            subprocess.run(["umount", "-l", str(mount.point)], check=False, capture_output=True)
            with contextlib.suppress(OSError):
                mount.point.rmdir()
            lines.append(f"unmounted and removed bpffs {mount.point} with the BPF iterator it "
                         f"pinned (its trial, {m.group(1)}, is gone)")
    return lines
