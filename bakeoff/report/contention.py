"""The run's contention in one line, and the cases whose trials were contended.

From each trial's record (Trial.contention, bakeoff/run/contention.py): how long the trial's
processes waited for a CPU as a share of their wall time, the load average, the machine's
steal time, and the trials retaken for waiting too long. Every figure printed under load is
partly other work's; this says how much, where the reader starts (report.md's first lines,
report.html's header, the terminal summary) and beside each contended case's figure.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from bakeoff.declare.model import Case, RunRecord, Trial

# A run, or a case, whose trials waited this share of their wall time for a CPU (median
# over its trials) is called contended: a tenth more time than its own work, five times the
# 2% a verdict calls a difference.
CONTENDED_SHARE = 0.10
CONTENDED_MARK = "†"


@dataclass(frozen=True)
class RunContention:
    trials: int  # trials with a contention record (kept and retaken)
    wait_share: float | None  # their summed run-queue wait / their summed wall time
    load_low: float
    load_high: float
    steal_share: float  # steal / (wall × CPUs), summed over the trials
    retaken: int
    retake_above: float | None
    retakes: int
    contended_cases: int

    @property
    def contended(self) -> bool:
        return self.wait_share is not None and self.wait_share >= CONTENDED_SHARE


def _measured(trials: Iterable[Trial]) -> list[Trial]:
    return [t for t in trials if t.contention is not None and t.wall_s > 0]


def _share(trial: Trial) -> float | None:
    return None if trial.contention is None else trial.contention.wait_share(trial.wall_s)


def contended_cases(run: RunRecord, benchmark: str | None = None) -> frozenset[Case]:
    """The cases whose kept trials' median wait share reaches CONTENDED_SHARE."""
    shares: dict[Case, list[float]] = {}
    for t in run.trials:
        share = _share(t)
        if share is not None and t.ok and (benchmark is None or t.case.benchmark == benchmark):
            shares.setdefault(t.case, []).append(share)
    return frozenset(c for c, s in shares.items() if float(np.median(s)) >= CONTENDED_SHARE)


def of_run(run: RunRecord) -> RunContention | None:
    """None for a record made before trials carried their contention."""
    trials = _measured([*run.trials, *run.retaken])
    if not trials:
        return None
    waited = [t for t in trials if t.contention and t.contention.run_delay_s is not None]
    wall = sum(t.wall_s for t in waited)
    wait = (sum(t.contention.others_wait_s(t.wall_s) or 0.0 for t in waited if t.contention)
            / wall if waited and wall > 0 else None)
    loads = [t.contention.load for t in trials if t.contention]
    steal = sum(t.contention.steal_s for t in trials if t.contention)
    capacity = sum(t.wall_s * t.contention.cpus for t in trials if t.contention)
    return RunContention(len(trials), wait, min(loads), max(loads),
                         steal / capacity if capacity > 0 else 0.0, len(run.retaken),
                         run.settings.retake_wait, run.settings.retakes,
                         len(contended_cases(run)))


def _pct(x: float) -> str:
    return f"{x * 100:.0f}%" if x >= 0.01 or x == 0 else f"{x * 100:.1f}%"


def sentence(rc: RunContention) -> str:
    """e.g. "Contended: trial processes waited 38% of their wall time for a CPU; load 9–17;
    steal 0.2%; 12 trials retaken (waited over 25%)." """
    head = "Contended" if rc.contended else "Not contended"
    wait = ("their wait for a CPU is unknown (no schedstat)" if rc.wait_share is None else
            f"trial processes waited {_pct(rc.wait_share)} of their wall time for a CPU")
    load = (f"load {rc.load_low:.1f}" if round(rc.load_low, 1) == round(rc.load_high, 1)
            else f"load {rc.load_low:.1f}–{rc.load_high:.1f}")
    parts = [wait, load, f"steal {_pct(rc.steal_share)}"]
    if rc.retake_above is not None and rc.retakes:
        parts.append(f"{rc.retaken} trial{'s' if rc.retaken != 1 else ''} retaken "
                     f"(waited over {_pct(rc.retake_above)})")
    else:
        parts.append("no retakes asked")
    line = f"{head}: " + "; ".join(parts) + "."
    if rc.contended_cases:
        many = rc.contended_cases != 1
        line += (f" {rc.contended_cases} case{'s' if many else ''} marked {CONTENDED_MARK} "
                 f"where {'their figures are' if many else 'its figure is'} printed.")
    return line


def legend() -> str:
    return (f"{CONTENDED_MARK} the case's trials waited {_pct(CONTENDED_SHARE)} or more of "
            "their wall time for a CPU (median), so its figure includes other work's time")
