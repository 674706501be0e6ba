"""Processes, the few things psutil does not do for us: stopping with a grace, and liveness
in the sense the harness needs.

Everything else about a process (its name, state, children, command line, environment,
CPU times, memory) is psutil's: one well-kept parser of /proc instead of one per room.

Stopping follows one rule everywhere (a trial, a leftover of a dead run, a room's daemon,
a helper a session holds): SIGTERM, so the process can remove what it made as on Ctrl-C;
SIGKILL to whatever still runs after the grace. What happened is returned, so the caller
can say it ("SIGKILL: it outlived the 10 s grace").
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import psutil

_GONE = (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)


def alive(pid: int) -> bool:
    """Whether pid is a running process. A zombie (dead, not yet reaped: PID 1 may take a
    while) is gone for this purpose, since it can no longer clean up; a process we may not
    inspect counts as alive (leaving its things is the safe error)."""
    if pid <= 0:
        return False
    try:
        return psutil.Process(pid).status() not in _GONE
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True


def live_name(pid: int) -> str:
    """The name (comm) of a live process; '' when it is gone or a zombie. A killed daemon
    may stay a zombie for a while and keeps its name, so a name alone says nothing."""
    try:
        proc = psutil.Process(pid)
        return "" if proc.status() in _GONE else proc.name()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return ""


def wait_gone(pids: Iterable[int], timeout_s: float) -> list[int]:
    """Waits until none of pids is alive, or timeout_s; returns those still alive."""
    deadline = time.monotonic() + timeout_s
    left = [p for p in pids if alive(p)]
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [p for p in left if alive(p)]
    return left


@dataclass
class Stopped:
    """What stop() did: every PID it signalled, and those it had to SIGKILL."""

    grace_s: float
    signalled: list[int] = field(default_factory=list)
    killed: list[int] = field(default_factory=list)

    def how(self, pid: int) -> str:
        """'' for a process that went on SIGTERM, else why it was SIGKILLed."""
        if pid in self.killed:
            return f"SIGKILL: it outlived the {self.grace_s:g} s grace"
        return ""


def _signal(pid: int, sig: int) -> bool:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def stop(pids: Iterable[int], grace_s: float) -> Stopped:
    """SIGTERM to each of pids (not our children: see stop_child), SIGKILL to those still
    alive after grace_s, then a short wait for them to go."""
    done = Stopped(grace_s)
    done.signalled = [p for p in pids if alive(p) and _signal(p, signal.SIGTERM)]
    done.killed = [p for p in wait_gone(done.signalled, grace_s) if _signal(p, signal.SIGKILL)]
    wait_gone(done.killed, 5.0)
    return done


def stop_tree(pid: int, grace_s: float, name_prefix: str = "") -> Stopped:
    """pid and its children (those whose name starts with name_prefix), as stop() does: a
    daemon with the helpers it forked, which it normally stops itself on SIGTERM."""
    try:
        kids = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        kids = []
    family = [pid, *[k.pid for k in kids if _name(k).startswith(name_prefix)]]
    done = Stopped(grace_s)
    done.signalled = [pid] if _signal(pid, signal.SIGTERM) else []
    done.killed = [p for p in wait_gone(family, grace_s) if _signal(p, signal.SIGKILL)]
    wait_gone(done.killed, 5.0)
    return done


def _name(proc: psutil.Process) -> str:
    try:
        return proc.name()
    except psutil.Error:
        return ""


def stop_child(proc: subprocess.Popen[Any], grace_s: float) -> bool:
    """One child of ours, stopped as stop() does and reaped; True if it needed SIGKILL."""
    if proc.poll() is not None:
        return False
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=grace_s)
        return False
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return True


def signal_group(pgid: int, sig: int) -> None:
    """sig to a process group that may be gone already (a trial and what it started)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
