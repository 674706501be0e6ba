"""The machine's memory controller: where it is mounted, v1 or v2, and the counter fields
its memory.stat has here."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import NamedTuple

# memory.stat lines that are not counters (v1 limits) or are sums of other lines (v2); the
# C side (memstat.c, is_counter_field) leaves out the same ones.
NOT_COUNTERS = frozenset({"hierarchical_memory_limit", "hierarchical_memsw_limit", "slab",
                          "pgscan", "pgsteal"})


class Mount(NamedTuple):
    point: Path
    fstype: str
    options: frozenset[str]


def mounts() -> list[Mount]:
    out = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mounts").read_text().splitlines():
            fields = line.split()
            if len(fields) >= 4:
                point = fields[1].replace("\\040", " ")
                out.append(Mount(Path(point), fields[2], frozenset(fields[3].split(","))))
    return out


def memory_controller() -> tuple[Path, str] | None:
    """(mount point, 'v1' or 'v2') of the memory controller, v1 first as the kernel does."""
    found = mounts()
    for m in found:
        if m.fstype == "cgroup" and "memory" in m.options:
            return m.point, "v1"
    for m in found:
        if m.fstype == "cgroup2":
            with contextlib.suppress(OSError):
                if "memory" in (m.point / "cgroup.controllers").read_text().split():
                    return m.point, "v2"
    return None


def mount_of(path: Path) -> Mount | None:
    best: Mount | None = None
    for m in mounts():
        if (path == m.point or m.point in path.parents) and (
                best is None or len(str(m.point)) > len(str(best.point))):
            best = m
    return best


def counter_fields(cgroup: Path) -> list[str]:
    """The memory.stat fields a consumer may select (what fields=all means)."""
    try:
        text = (cgroup / "memory.stat").read_text()
    except OSError:
        return []
    names = [line.split(" ", 1)[0] for line in text.splitlines() if " " in line]
    return [n for n in names if n not in NOT_COUNTERS]


def _all_fields_here() -> int:
    controller = memory_controller()
    count = len(counter_fields(controller[0])) if controller else 0
    return count or 40  # cgroup v1 on 6.18; only a label on a machine with no memcg at all


ALL_FIELDS = _all_fields_here()
