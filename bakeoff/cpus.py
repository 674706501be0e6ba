"""Which CPUs a run measures on, claimed so that two runs at once do not measure on the same.

Each run measures its trials on CPUs of their own and keeps the harness on the others. A
benchmark declares how many CPUs one trial needs (Benchmark.cpus: the measured program's,
plus one per partner process such as a tracer's consumer or a daemon); the run claims the
most any of its benchmarks needs. A claim is an flock on /run/lock/bakeoff-cpu<N>.lock, held
for the run and released by the kernel when the process dies (a SIGKILLed run leaves no
stale claim). A run takes the highest CPUs nobody claims and leaves at least one to the
harness; a CPU it cannot have to itself (every CPU claimed by another run, or too few CPUs)
is shared, and its warnings say so, since shared CPUs disturb the timings.
"""

from __future__ import annotations

import fcntl
import os
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
    return CpuClaim((*owned, *shared), harness, _warning(count, owned, shared, cpus),
                    tuple(owned), fds)


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
