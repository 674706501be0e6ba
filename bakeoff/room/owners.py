"""Things named by the PID of the process that made them, removed once that process is gone:
a room's Benchmark.sweep in one call.

Everything a run makes outside a process is named `bakeoff-<pid>-...` (a cgroup, a bpffs
mount, a tracing session, a trial's temp directory); a name may carry two PIDs,
`bakeoff-<run pid>-<trial pid>` (then both must be gone), or end at the PID
(`bakeoff-<pid>`, a trial run by hand). A thing is left while any of its PIDs lives: a live
run's things are never touched, and a reused PID only delays the removal to a later sweep.

    def sweep() -> list[str]:
        return sweep_dead_owners(root.glob("bakeoff-*-target"), remove_cgroup,
                                 what="cgroup")
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import PurePath
from typing import TypeVar

from bakeoff.core import pids as procs

T = TypeVar("T")

# bakeoff-<pid>[-<pid>] followed by '-' or the end of the name.
_OWNED = re.compile(r"^bakeoff-(\d+)(?:-(\d+))?(?=-|$)")
# A `bakeoff-<pid>-...` directory inside a path or a command line.
_OWNED_DIR = re.compile(r"/(bakeoff-\d+-[^/\s]*)/")


def owner_pids(name: str) -> tuple[int, ...]:
    """The PIDs a `bakeoff-<pid>[-<pid>]...` name carries; () for any other name."""
    m = _OWNED.match(name)
    return tuple(int(g) for g in m.groups() if g) if m else ()


def left_by_dead_owner(name: str) -> bool:
    """True for a `bakeoff-<pid>...` name none of whose PIDs is a live process."""
    pids = owner_pids(name)
    return bool(pids) and not any(procs.alive(p) for p in pids)


def owned_dirs_in(text: str) -> list[str]:
    """The `bakeoff-<pid>-...` directory names in a path or command line (a trial's
    private library under its temp directory, a tracer's argument)."""
    return _OWNED_DIR.findall(text)


def all_owners_dead(text: str) -> bool:
    """True when text names `bakeoff-<pid>-...` directories and every one was left by a
    dead process (a probe or a tracer attached to a dead trial's files)."""
    names = owned_dirs_in(text)
    return bool(names) and all(left_by_dead_owner(n) for n in names)


def _name(thing: object) -> str:
    return thing.name if isinstance(thing, PurePath) else str(thing)


def sweep_dead_owners(things: Iterable[T], remove: Callable[[T], None], what: str,
                      name: Callable[[T], str] = _name, verb: str = "removed") -> list[str]:
    """remove(thing) for each thing whose name (a path's last part, else str(thing); or
    `name`) was left by a dead process. One line per thing: "<verb> <what> <thing> (its
    process, <pid>, is gone)", or "could not remove ...: <why>" when remove raised
    OSError or RuntimeError (the sweep goes on: one stuck thing must not keep the others)."""
    lines = []
    for thing in things:
        label = name(thing)
        if not left_by_dead_owner(label):
            continue
        pids = ", ".join(str(p) for p in owner_pids(label))
        try:
            remove(thing)
        except (OSError, RuntimeError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            lines.append(f"could not remove {what} {thing}: {why}")
            continue
        lines.append(f"{verb} {what} {thing} (its process, {pids}, is gone)")
    return lines
