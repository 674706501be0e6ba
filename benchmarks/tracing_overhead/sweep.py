"""What killed runs of this room left: tracer processes and uprobes on a dead trial's
private library; with lttng.py's sessions and session daemon (Benchmark.sweep). Named by
PIDs that are gone; never a live run's."""

from __future__ import annotations

import os
from pathlib import Path

import psutil

from bakeoff.room import alive, all_owners_dead, stop_processes

from . import lttng

# A trial's temp directory in a path (its private library, its trace) is bakeoff-<trial
# pid>-x: all_owners_dead(text) says whether every such directory a text names is a dead one's.
TRACER_COMMS = ("bpftrace", "bakeoff_tracer")
TRACER_GRACE_S = 5.0


def _sweep_uprobe_events() -> list[str]:
    """Probes in tracefs uprobe_events on a dead trial's private library (libbpf's and
    bpftrace's fallback on kernels without the uprobe PMU; here they use perf_event_open,
    and such probes go with their file descriptors)."""
    for tracefs in (Path("/sys/kernel/tracing"), Path("/sys/kernel/debug/tracing")):
        events = tracefs / "uprobe_events"
        # os.access, not exists(): without root, tracefs refuses even a stat (EACCES)
        if os.access(events, os.F_OK):
            break
    else:
        return []
    try:
        text = events.read_text()
    except OSError:
        return []
    lines = []
    for line in text.splitlines():
        kind_name, _, where = line.partition(" ")
        name = kind_name.partition(":")[2]
        if name and all_owners_dead(where):
            try:  # O_APPEND without Python's seek to the end, which tracefs refuses
                fd = os.open(events, os.O_WRONLY | os.O_APPEND)
                try:
                    os.write(fd, f"-:{name}\n".encode())
                finally:
                    os.close(fd)
                lines.append(f"removed uprobe {name} on {where.split()[0]} (its trial is gone)")
            except OSError as exc:
                lines.append(f"could not remove uprobe {name}: {exc.strerror or exc}")
    return lines


def _sweep_tracers() -> list[str]:
    """bpftrace or bakeoff_tracer processes still attached to a dead trial's library (a
    trial run by hand and killed: under bakeoff run, bakeoff.run.cleanup stops them)."""
    lines = []
    for proc in psutil.process_iter(["name", "cmdline"]):
        if proc.info["name"] not in TRACER_COMMS or not alive(proc.pid):
            continue
        if all_owners_dead(" ".join(proc.info["cmdline"] or [])):
            stop_processes([proc.pid], TRACER_GRACE_S)
            lines.append(f"stopped {proc.info['name']} {proc.pid}, left running by a "
                         "trial that is gone")
    return lines


def sweep() -> list[str]:
    """What killed runs of this room left: LTTng sessions, uprobes, tracer processes, and the
    session daemon bakeoff started. Named by PIDs that are gone; never a live run's."""
    return [*_sweep_tracers(), *lttng.sweep_sessions(), *_sweep_uprobe_events(),
            *lttng.sweep_sessiond()]
