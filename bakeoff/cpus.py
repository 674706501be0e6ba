"""Which CPU a run measures on, claimed so that two runs at once do not measure on the same.

Each run measures its trials on one CPU and keeps the harness on the others. A claim is an
flock on /run/lock/bakeoff-cpu<N>.lock, held for the run and released by the kernel when the
process dies (a SIGKILLed run leaves no stale claim). A run takes the highest CPU nobody
claims; when every CPU is claimed it shares the last one and says so in its warnings, since
the two runs' timings then disturb each other.
"""

from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass, field
from pathlib import Path

LOCK_DIRS = (Path("/run/lock"), Path("/tmp"))


@dataclass
class CpuClaim:
    measured: int | None  # None: not pinned (one CPU, or --no-pin)
    harness: set[int] | None
    warning: str | None = None
    _fd: int | None = field(default=None, repr=False)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing drops the flock
            self._fd = None


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


def claim(pin: bool) -> CpuClaim:
    cpus = sorted(os.sched_getaffinity(0))
    if not pin or len(cpus) < 2:
        return CpuClaim(None, None)
    for cpu in reversed(cpus):
        fd = _try_lock(cpu)
        if fd is not None:
            return CpuClaim(cpu, set(cpus) - {cpu}, _fd=fd)
    last = cpus[-1]
    return CpuClaim(last, set(cpus[:-1]), warning=(
        f"every CPU is measuring for another bakeoff run; this run shares CPU {last}, so "
        "both runs' timings disturb each other: run them one after the other"))
