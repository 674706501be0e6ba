"""What runs that died without cleaning up left behind, found and removed.

A run removes everything it creates on success, error, Ctrl-C and SIGTERM. SIGKILL, the OOM
killer or a power cut give it no chance: its scratch directory, a room's cgroup, tracing
session or daemon, and any trial still running stay behind. All of them carry the PID of the
process that made them: names start `bakeoff-<pid>-` (scratch directories, cgroups, LTTng
sessions, a trial's temp directory), and every process a run starts inherits
BAKEOFF_RUN_PID=<the harness's pid> in its environment. sweep() removes what belongs to PIDs
that are gone, and only that, so it never touches a live run's things and two runs started
side by side stay safe. It runs at the start of every `bakeoff run` (and --resume) and from
`bakeoff doctor --cleanup`.

A PID reused since its run died makes that run look alive: its leftovers then wait for a
later sweep. The check errs on the side of leaving things, never of removing a live run's.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import psutil

from bakeoff.core import pids as procs

if TYPE_CHECKING:  # a type only: trial drivers import this module, and model costs 20 ms
    from bakeoff.declare.model import Benchmark

# Set by `bakeoff run` in its own environment, so every process it starts carries it.
RUN_PID_ENV = "BAKEOFF_RUN_PID"
# bakeoff-<pid>-...: the prefix of every name a run or its trials give what they create.
OWNED_NAME = re.compile(r"^bakeoff-(\d+)-")
# How long a process left by a dead run has to clean up after SIGTERM before SIGKILL
# (as a trial the harness stops: bakeoff.run.trial_process.STOP_GRACE_S).
ORPHAN_GRACE_S = 10.0


def owner_pid(name: str) -> int | None:
    """The PID in a `bakeoff-<pid>-...` name, or None for any other name."""
    m = OWNED_NAME.match(name)
    return int(m.group(1)) if m else None


def left_by_dead_process(name: str) -> bool:
    """True for a `bakeoff-<pid>-...` name whose PID is gone."""
    pid = owner_pid(name)
    return pid is not None and not procs.alive(pid)


def mark_run() -> None:
    """Called by `bakeoff run`: every process it starts from now on (trials, loaders, helpers)
    carries this run's PID, so that sweep_orphans can tell them once the run is gone."""
    os.environ[RUN_PID_ENV] = str(os.getpid())


def _run_pid_of(proc: psutil.Process) -> int | None:
    try:
        value = proc.environ().get(RUN_PID_ENV, "")
    except psutil.Error:
        return None
    return int(value) if value.isdigit() else None


def _orphans() -> dict[int, tuple[int, str]]:
    """Live processes started by runs that are gone: pid -> (the run's pid, its name)."""
    me = os.getpid()
    found = {}
    for proc in psutil.process_iter(["name"]):
        run = _run_pid_of(proc) if proc.pid != me else None
        if run is not None and run != proc.pid and not procs.alive(run) \
                and procs.alive(proc.pid):
            found[proc.pid] = (run, proc.info["name"] or "?")
    return found


def sweep_orphans(grace_s: float = ORPHAN_GRACE_S) -> list[str]:
    """Stops processes a dead run left running (a trial, a loader, a tracer): SIGTERM, so
    that they remove what they made as on Ctrl-C, then SIGKILL after the grace."""
    found = _orphans()
    if not found:
        return []
    done = procs.stop(found, grace_s)
    return [f"stopped process {pid} ({name}) of bakeoff run {run}, which is gone"
            + (f" ({done.how(pid)})" if done.how(pid) else "")
            for pid, (run, name) in sorted(found.items())]


def sweep_scratch(pattern: str = "bakeoff-*", base: Path | None = None) -> list[str]:
    """Removes $TMPDIR/bakeoff-<pid>-* (the harness's scratch directories, trials' temp
    directories), or those matching pattern, of processes that are gone. Only our own, and
    never a mount point: a room's mount (a private bpffs) is its sweep's to unmount."""
    base = base if base is not None else Path(tempfile.gettempdir())
    lines = []
    try:
        entries = sorted(base.glob(pattern))
    except OSError:
        return []
    for entry in entries:
        if not left_by_dead_process(entry.name):
            continue
        try:
            st = entry.lstat()
            if st.st_uid != os.geteuid() or os.path.ismount(entry):
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
        except OSError as exc:
            lines.append(f"could not remove {entry}: {exc.strerror or exc}")
            continue
        lines.append(f"removed {entry} (its process, {owner_pid(entry.name)}, is gone)")
    return lines


def sweep(benchmarks: Iterable[Benchmark]) -> list[str]:
    """Everything dead runs left, removed: their processes first (given the chance to clean
    up after themselves), then each room's things (Benchmark.sweep), then scratch
    directories. One line per thing removed, or that could not be; a room's sweep that
    fails is one line too, never an exception: a run must start all the same."""
    lines = sweep_orphans()
    for bench in benchmarks:
        if bench.sweep is None:
            continue
        try:
            lines += [f"{bench.name}: {line}" for line in bench.sweep()]
        except Exception as exc:  # reported as a line: the run goes on all the same
            lines.append(f"{bench.name}: cleaning up after dead runs failed: {exc}")
    lines += sweep_scratch()
    return lines
