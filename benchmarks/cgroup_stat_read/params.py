"""The room's params' own parts: how many fields (fields, with 'all') and whose statistics
(target, with the check that names the fix); content's choices are in spec.py."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bakeoff.room import Param, ParamValue

from .controller import ALL_FIELDS, memory_controller, mount_of

CONTENTS = ("legacy", "legacy-parse", "ks", "bpf-iter", "bpf-iter-flush")
CGROUP_MAGIC_TYPES = ("cgroup", "cgroup2")


def check_target(value: ParamValue) -> str | None:
    """One sentence naming the problem with a target, or None when it can be read."""
    text = str(value)
    if text in ("child", "root"):
        return None
    path = Path(text)
    if not path.is_absolute():
        return ("give child, root, or an absolute memory cgroup path "
                "(e.g. /sys/fs/cgroup/memory/NAME); a path with ',' cannot be given, since "
                "--param splits its values at ','")
    controller = memory_controller()
    # Every refusal names the fix: the targets that do work here.
    fix = (f"; give child, root, or a memory cgroup directory under {controller[0]}"
           if controller else "; this machine has no memory controller (see bakeoff doctor)")
    if not path.is_dir():
        return f"{text} does not exist (or is not a directory){fix}"
    mount = mount_of(path)
    if mount is None or mount.fstype not in CGROUP_MAGIC_TYPES:
        return f"{text} is not a cgroup (not on a cgroup file system){fix}"
    stat = path / "memory.stat"
    if not stat.exists():
        return f"{text} is not a memory cgroup (it has no memory.stat){fix}"
    try:
        with stat.open("rb") as f:
            f.read(1)
    except OSError as exc:
        return f"{text} is not readable: {stat}: {exc.strerror}{fix}"
    return None


@dataclass(frozen=True)
class FieldCountParam(Param):
    """An int param that also takes 'all': every counter field of memory.stat here."""

    def parse(self, text: str) -> ParamValue:
        if text.strip() == "all":
            return ALL_FIELDS
        return super().parse(text)

    def bounds_problem(self, value: ParamValue) -> str | None:
        problem = super().bounds_problem(value)
        return f"{problem} (or all: {ALL_FIELDS} here)" if problem else None
