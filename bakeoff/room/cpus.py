"""Where a trial's partner goes: the second CPU the run claimed for it (Benchmark.cpus = 2).

The harness claims `cpus` CPUs per trial, the measured one first, and hands them to the
session and the trial's preparation as RunContext.trial_cpus and to the trial program as
BAKEOFF_TRIAL_CPUS=3,1. The trial program is pinned to the first; a partner (a ping-pong
peer, a tracer's consumer, a daemon the session starts) belongs on the others. Empty when
the run is not pinned (one CPU, --no-pin, a program run by hand): then place nothing.

    partner = partner_cpus(ctx)          # in a session hook or prepare_trial
    HeldProcess("peer", argv, ready="ready", cpus=partner)
    partner = partner_cpus()             # in a Python trial program: from the environment
    pin = pin_to(partner)                # subprocess.Popen(..., preexec_fn=pin)

C programs: bench.h's bench_partner_cpu() and bench_pin_cpu().
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from bakeoff.machine.cpus import TRIAL_CPUS_ENV

if TYPE_CHECKING:
    from bakeoff.declare.model import RunContext


def trial_cpus(ctx: RunContext | None = None) -> tuple[int, ...]:
    """The trial's CPUs, the measured one first: ctx.trial_cpus, or without a context (in a
    trial program) BAKEOFF_TRIAL_CPUS. () when not pinned; a malformed entry is ignored (a
    value set by hand), so a partner is then placed nowhere rather than somewhere wrong."""
    if ctx is not None:
        return tuple(ctx.trial_cpus)
    text = os.environ.get(TRIAL_CPUS_ENV, "")
    return tuple(int(c) for c in text.split(",") if c.strip().isdigit())


def measured_cpu(ctx: RunContext | None = None) -> int | None:
    """The CPU the trial program runs on; None when not pinned."""
    cpus = trial_cpus(ctx)
    return cpus[0] if cpus else None


def partner_cpus(ctx: RunContext | None = None) -> tuple[int, ...]:
    """The CPUs for the trial's partners (all but the measured one); () when there is none:
    not pinned, or the benchmark declared cpus=1."""
    return trial_cpus(ctx)[1:]


def partner_cpu(ctx: RunContext | None = None) -> int | None:
    """The first partner CPU (the one a single partner goes on); None when there is none."""
    cpus = partner_cpus(ctx)
    return cpus[0] if cpus else None


def pin_to(cpus: tuple[int, ...]) -> Callable[[], None] | None:
    """A preexec_fn that pins the new process to cpus; None (no placement) for ()."""
    if not cpus:
        return None
    return lambda: os.sched_setaffinity(0, cpus)
