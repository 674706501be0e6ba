"""Where a run's time went, kept in its record (RunRecord.timings) and said at its end, so the
next slow part is found by reading, not guessing.

- set_up_s: from the command's start to the first benchmark (the host probed, the cases
  planned, the results directory made);
- benchmarks[name]: its session's set-up, its warm-up rounds, its measured rounds and its
  tear-down, in seconds, and its trials;
- time_left: the "time left" the progress said at 25%, 50% and 75% of the measuring time,
  each beside what truly remained (the issue's yardstick: within ±25%);
- estimate_log: everything the estimate was told, in order (progress.Estimate.log, replayed
  by progress.replay), so what a run said can be said again by a changed estimate.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bakeoff.declare.model import RunRecord
from bakeoff.run.progress import fmt_duration

CHECKPOINTS = (0.25, 0.5, 0.75)


@dataclass
class BenchmarkClock:
    """One benchmark's parts, timed as the runner passes from one to the next."""

    name: str
    parts: dict[str, float] = field(default_factory=dict)
    _part: str | None = None
    _since: float = 0.0

    def enter(self, part: str) -> None:
        now = time.monotonic()
        if self._part is not None:
            self.parts[self._part] = self.parts.get(self._part, 0.0) + now - self._since
        self._part, self._since = part, now

    def stop(self) -> None:
        self.enter("")
        self.parts.pop("", None)
        self._part = None


def record_benchmark(run: RunRecord, clock: BenchmarkClock, trials: int) -> None:
    benches = run.timings.setdefault("benchmarks", {})
    seen = benches.get(clock.name, {})
    # A resumed run adds its session's parts to the first session's.
    merged = {f"{k}_s": round(seen.get(f"{k}_s", 0.0) + v, 3) for k, v in clock.parts.items()}
    benches[clock.name] = {**seen, **merged, "trials": seen.get("trials", 0) + trials}


def said_against_truth(trace: Sequence[tuple[float, float | None, int, int]],
                       end_s: float) -> list[dict[str, float | None]]:
    """For each checkpoint (a share of the measuring time, end_s): the time left said last
    before it and what truly remained then; the trials the estimate still counted then and
    those that were truly still taken. trace: (elapsed s, seconds said or None before the
    first estimate, trials done, trials done and counted still to come) at each trial's
    end."""
    out: list[dict[str, float | None]] = []
    times = [t[0] for t in trace]
    final = trace[-1][2] if trace else 0
    for share in CHECKPOINTS:
        at = share * end_s
        i = bisect.bisect_right(times, at) - 1
        if i < 0:
            continue
        elapsed, said, done, planned = trace[i]
        out.append({"share": share, "elapsed_s": round(elapsed, 3),
                    "said_s": None if said is None else round(said, 3),
                    "remained_s": round(end_s - elapsed, 3),
                    "trials_said": planned - done, "trials_left": final - done})
    return out


def words(timings: dict[str, Any]) -> str:
    """One line of where the time went, for the end of a run."""
    parts = []
    if "set_up_s" in timings:
        parts.append(f"set-up {fmt_duration(timings['set_up_s'])}")
    for name, b in timings.get("benchmarks", {}).items():
        inner = ", ".join(f"{k[:-2].replace('_', '-')} {fmt_duration(v)}"
                          for k, v in b.items() if k.endswith("_s") and v >= 0.5)
        total = sum(v for k, v in b.items() if k.endswith("_s"))
        parts.append(f"{name} {fmt_duration(total)}" + (f" ({inner})" if inner else ""))
    said = [c for c in timings.get("time_left", []) if c.get("said_s") is not None]
    if said:
        parts.append("time left said at " + ", ".join(
            f"{c['share'] * 100:.0f}%: {fmt_duration(c['said_s'])} "
            f"(truly {fmt_duration(c['remained_s'])})" for c in said))
    return "time: " + "; ".join(parts)
