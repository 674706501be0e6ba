"""Which CPUs a run measures on, claimed so that two runs at once do not measure on the same.

Each run measures its trials on CPUs of their own and keeps the harness on the others. A
benchmark declares how many CPUs one trial needs (Benchmark.cpus: the measured program's,
plus one per partner process such as a tracer's consumer or a daemon); the run claims the
most any of its benchmarks needs. A claim is an flock on /run/lock/bakeoff-cpu<N>.lock, held
for the run and released by the kernel when the process dies (a SIGKILLed run leaves no
stale claim). A run takes the highest CPUs nobody claims and leaves at least one to the
harness; a CPU it cannot have to itself (every CPU claimed by another run, or too few CPUs)
is shared, and its warnings say so, since shared CPUs disturb the timings. So is the other
way round: a run that got a CPU of its own while another run measures on the CPU left to its
harness (two runs on a 2-CPU machine: each one's harness runs where the other measures).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

LOCK_DIRS = (Path("/run/lock"), Path("/tmp"))
TRIAL_CPUS_ENV = "BAKEOFF_TRIAL_CPUS"  # "3,1": the measured CPU first, then the partners'


@dataclass
class CpuClaim:
    # The trial CPUs, the measured one first (the trial program is pinned to it), then the
    # ones for partner processes; empty: not pinned (one CPU, or --no-pin).
    cpus: tuple[int, ...]
    harness: set[int] | None
    warning: str | None = None
    owned: tuple[int, ...] = ()  # the CPUs among them this run holds the lock of
    _fds: list[int] = field(default_factory=list, repr=False)

    @property
    def measured(self) -> int | None:
        return self.cpus[0] if self.cpus else None

    def for_trial(self, count: int) -> tuple[int, ...]:
        """The CPUs a trial of a benchmark that needs `count` gets: the first `count`."""
        return self.cpus[:max(1, count)]

    def release(self) -> None:
        for fd in self._fds:
            os.close(fd)  # closing drops the flock
        self._fds.clear()


def trial_env(cpus: tuple[int, ...]) -> dict[str, str]:
    """BAKEOFF_TRIAL_CPUS as a trial sees it; empty when not pinned, so a value inherited
    from an outer run never leaks in."""
    return {TRIAL_CPUS_ENV: ",".join(str(c) for c in cpus)}


def _lock_dir() -> Path:
    for d in LOCK_DIRS:
        if os.access(d, os.W_OK | os.X_OK):
            return d
    return Path("/tmp")


def _try_lock(cpu: int) -> int | None:
    path = _lock_dir() / f"bakeoff-cpu{cpu}.lock"
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    except OSError:
        return None  # e.g. another user's lock file: treat the CPU as claimed
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _held_locks() -> set[tuple[int, int, int]]:
    """(major, minor, inode) of every file flock()ed on this machine, from /proc/locks."""
    held: set[tuple[int, int, int]] = set()
    try:
        text = Path("/proc/locks").read_text()
    except OSError:
        return held
    for line in text.splitlines():
        fields = line.split()
        # "1: FLOCK  ADVISORY  WRITE 12094 fe:00:9805825 0 EOF" ("->" marks a waiter)
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[2] != "->":
            try:
                major, minor, inode = fields[5].split(":")
                held.add((int(major, 16), int(minor, 16), int(inode)))
            except ValueError:
                continue
    return held


def claimed_by_others(cpus: set[int], owned: tuple[int, ...]) -> list[int]:
    """Those of `cpus` (not this run's own) that another bakeoff run measures on: their
    lock file is held. Read, not locked: taking the lock to test it could make a run starting
    at that instant think the CPU taken."""
    held = _held_locks()
    out = []
    for cpu in sorted(cpus - set(owned)):
        try:
            st = (_lock_dir() / f"bakeoff-cpu{cpu}.lock").stat()
        except OSError:
            continue
        if (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino) in held:
            out.append(cpu)
    return out


def claim(pin: bool, count: int = 1) -> CpuClaim:
    """`count` CPUs for the trials, as many of them as possible the run's own."""
    cpus = sorted(os.sched_getaffinity(0))
    if not pin or len(cpus) < 2:
        return CpuClaim((), None)
    count = max(1, count)
    owned: list[int] = []
    fds: list[int] = []
    for cpu in reversed(cpus):
        if len(owned) == min(count, len(cpus) - 1):  # one CPU at least stays the harness's
            break
        fd = _try_lock(cpu)
        if fd is not None:
            owned.append(cpu)
            fds.append(fd)
    # What the run could not have to itself it shares, highest first: another run's CPU
    # (when every one is claimed) or, with too few CPUs, the harness's.
    shared = [c for c in reversed(cpus) if c not in owned][:count - len(owned)]
    harness = set(cpus) - set(owned) if owned else set(cpus[:-1])
    warning = _warning(count, owned, shared, cpus)
    busy = claimed_by_others(harness, tuple(owned)) if owned and not shared else []
    if busy and warning is None:
        listed = ", ".join(str(c) for c in busy)
        warning = (f"another bakeoff run measures on CPU {listed}, which this run's harness "
                   f"shares, and its harness may run on CPU {', '.join(str(c) for c in owned)}"
                   ", where this run measures: both runs' timings disturb each other; run "
                   "them one after the other")
    return CpuClaim((*owned, *shared), harness, warning, tuple(owned), fds)


@contextlib.contextmanager
def held(pin: bool, count: int = 1) -> Iterator[CpuClaim]:
    """claim(), with the harness moved off the trial CPUs while it is held; the harness's
    CPUs and the locks are given back however the block ends."""
    cpu = claim(pin, count)
    old_affinity = os.sched_getaffinity(0)
    try:
        if cpu.harness:
            os.sched_setaffinity(0, cpu.harness)
        yield cpu
    finally:
        cpu.release()
        os.sched_setaffinity(0, old_affinity)


def _warning(count: int, owned: list[int], shared: list[int], cpus: list[int]) -> str | None:
    if not shared:
        return None
    listed = ", ".join(str(c) for c in shared)
    if not owned:
        return (f"every CPU is measuring for another bakeoff run; this run shares CPU "
                f"{listed}, so both runs' timings disturb each other: run them one after the "
                "other")
    if len(cpus) <= count:
        return (f"a benchmark of this run needs {count} CPUs for its trials and one more for "
                f"the harness, and this machine gives {len(cpus)}: CPU {listed} is shared with "
                "the harness, which disturbs the timings")
    return (f"a benchmark of this run needs {count} CPUs for its trials and other bakeoff runs "
            f"hold all but {len(owned)}: CPU {listed} is shared, which disturbs the timings; "
            "run them one after the other")
