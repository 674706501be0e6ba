"""What other work did to a trial: its CPU time, its run-queue wait, the machine's steal time
and load, its involuntary context switches; and the rule that retakes a trial held off the
CPU too long.

On a shared machine a trial's wall time is its own work plus the time it was runnable but
waiting for a CPU. The kernel counts that wait per task (schedstat's run_delay, what
mremap-vs-memcpy's timer takes off per sample); bakeoff-launch reads it from the trial's
zombie just before reaping it (benchmarks/common/launch.c), and a trial that spawns the
processes it measures adds theirs (meta children_run_delay_s: bakeoff-cmd-exec). Steal time
is the hypervisor running someone else on our vCPUs (/proc/stat, all CPUs, 10 ms ticks).

A trial whose wait passes RunSettings.retake_wait of its wall time is measured again, up to
RunSettings.retakes times, the least contended attempt kept and the others recorded as
retaken with why (RunRecord.retaken); across the run, retakes stop at RETAKE_BUDGET_SHARE of
the trials, and for a benchmark once RETAKE_FUTILE_AFTER trials in a row found no attempt
under the threshold (a machine busy throughout: a run warning says so). Retakes help where
load comes and goes; where it stays, the report's header line and marks say the figures are
the busy machine's.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from bakeoff.declare.model import Contention, Rusage

RETAKE_BUDGET_SHARE = 0.5  # retakes, run-wide, at most half as many as the measured trials
# Retakes stop for a benchmark after this many trials in a row whose every attempt waited past
# the threshold: a machine busy throughout gives no freer CPU to retake on.
RETAKE_FUTILE_AFTER = 3
CHILDREN_WAIT_META = "children_run_delay_s"  # a trial's report of its spawned processes' wait
_TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class MachineMark:
    """The machine's steal time so far, read before and after a trial."""

    steal_s: float

    @staticmethod
    def now() -> MachineMark:
        try:
            with open("/proc/stat", encoding="ascii") as f:
                fields = f.readline().split()
        except OSError:
            return MachineMark(0.0)
        # cpu user nice system idle iowait irq softirq steal ...
        steal = int(fields[8]) if fields and fields[0] == "cpu" and len(fields) > 8 else 0
        return MachineMark(steal * _TICK_S)


def _load() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:
        return 0.0


def of_trial(before: MachineMark, rusage: Rusage | None, nivcsw: int | None,
             run_delay_s: float | None, meta: dict[str, object],
             trial_cpus: int = 0) -> Contention | None:
    """The trial's contention from what its process reported; None when it reported no
    rusage (a trial that could not start, or a launcher killed before reporting).
    trial_cpus: how many CPUs the run claimed for it (0: not pinned)."""
    if rusage is None:
        return None
    children = meta.get(CHILDREN_WAIT_META)
    if run_delay_s is not None and isinstance(children, int | float) and children >= 0:
        run_delay_s += float(children)
    return Contention(
        cpu_s=rusage.user_s + rusage.sys_s, run_delay_s=run_delay_s,
        steal_s=max(0.0, MachineMark.now().steal_s - before.steal_s),
        nivcsw=nivcsw or 0, load=_load(), cpus=os.cpu_count() or 1, trial_cpus=trial_cpus)


def retake_reason(contention: Contention | None, wall_s: float,
                  threshold: float | None) -> str | None:
    """Why the trial should be measured again, or None."""
    if contention is None or threshold is None:
        return None
    share = contention.wait_share(wall_s)
    if share is None or share <= threshold:
        return None
    return (f"its processes waited {share:.0%} of its wall time for a CPU other work held "
            f"(retaken above {threshold:.0%})")
