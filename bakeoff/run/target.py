"""A precision target (--target-ci, --target-ratio-ci): how many rounds it needs, whether the
cap and the time budget let it be reached, and the words that say so.

A t interval's half-width shrinks as t(n-1)/√n for the same spread, so from a half-width h
seen after n rounds, the target T needs the least m with
h · (t(m-1)/√m) / (t(n-1)/√n) ≤ T. That is the plan the run's cap is fitted to when no
--max-trials is given (up to FITTED_MAX_TRIALS), the plan the time left is estimated from
(bakeoff/run/progress.py), and what the run says when the cap or the budget cannot reach it:
as soon as the spread says so, and again at the end, in the terminal and in the report
(the run's stop_reason).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from bakeoff.run.progress import fmt_duration
from bakeoff.stats import estimates as stats

# With a target and no --max-trials: the cap starts here and is raised to what the target
# needs at the measured spread, up to FITTED_MAX_TRIALS (then the run says it is short).
DEFAULT_MAX_TRIALS = 50
FITTED_MAX_TRIALS = 400
FIT_MARGIN = 1.1  # the cap fitted is the estimate of rounds needed, and a tenth more
# Rounds before the spread is trusted to plan with: from 3 a t interval's width is still mostly
# its t quantile (4.3 at 3 rounds), and one wild round moves the estimate tenfold.
MIN_ROUNDS_TO_PLAN = 6
SEARCH_LIMIT = 1_000_000


def _shrink(n: int) -> float:
    """How wide a t interval of n values is, for a unit spread: t(n-1)/√n."""
    return stats.t_quantile(n - 1) / math.sqrt(n)


def rounds_needed(half_width: float, target: float, rounds: int) -> int | None:
    """The rounds a half-width seen after `rounds` needs to reach `target` (both fractions),
    at the spread seen; None when it cannot be told (fewer than 2 rounds, no finite width)."""
    if rounds < 2 or not math.isfinite(half_width) or target <= 0:
        return None
    if half_width <= target:
        return rounds
    scale = half_width / _shrink(rounds)
    # A rough jump first (half-width ∝ 1/√n), then the exact least m by bisection.
    low, high = rounds, max(rounds + 1, math.ceil(rounds * (half_width / target) ** 2) + 1)
    while scale * _shrink(high) > target:
        if high >= SEARCH_LIMIT:
            return SEARCH_LIMIT
        low, high = high, min(SEARCH_LIMIT, high * 2)
    while high - low > 1:
        mid = (low + high) // 2
        if scale * _shrink(mid) <= target:
            high = mid
        else:
            low = mid
    return high


def fitted_cap(needed: int | None, given: int | None, rounds: int) -> int:
    """The per-case cap: --max-trials when given; else fitted to the rounds needed, once
    the spread of MIN_ROUNDS_TO_PLAN rounds says how many."""
    if given is not None:
        return given
    if needed is None or rounds < MIN_ROUNDS_TO_PLAN:
        return DEFAULT_MAX_TRIALS
    return max(DEFAULT_MAX_TRIALS, min(FITTED_MAX_TRIALS, math.ceil(needed * FIT_MARGIN)))


def half_width_after(half_width: float, rounds: int, more: int) -> float:
    """What a half-width seen after `rounds` becomes after `more` rounds more, at the same
    spread."""
    if rounds < 2 or more <= 0:
        return half_width
    return half_width * _shrink(rounds + more) / _shrink(rounds)


@dataclass(frozen=True)
class Progress:
    """Where a target stands after some rounds."""

    flag: str  # --target-ratio-ci / --target-ci
    target: float  # fraction
    widest: float  # the widest half-width now (fraction); inf before any can be formed
    widest_case: str
    rounds: int  # rounds the widest case has
    needed: int | None  # rounds it needs at the measured spread
    cap: int
    round_s: float | None  # seconds a round takes, measured
    budget_left_s: float | None  # of --time-budget; None: no budget

    @property
    def reached(self) -> bool:
        return self.widest <= self.target

    def limit(self) -> tuple[str, int] | None:
        """What stops the target first, and the rounds the widest case will have then;
        None when neither does (the target is reached first)."""
        if self.needed is None or (self.needed <= self.cap and self._by_budget() is None):
            return None
        stops: list[tuple[int, str]] = []
        if self.needed > self.cap:
            stops.append((self.cap, f"the cap of {self.cap} trials per case"))
        by_budget = self._by_budget()
        if by_budget is not None:
            stops.append((by_budget, "the time budget"))
        rounds, why = min(stops)
        return why, rounds

    def _by_budget(self) -> int | None:
        """The rounds the budget lets the widest case reach, if fewer than it needs."""
        if self.budget_left_s is None or not self.round_s or self.needed is None:
            return None
        reachable = self.rounds + int(self.budget_left_s / self.round_s)
        return reachable if reachable < self.needed else None

    def need_words(self) -> str:
        if self.needed is None:
            return ""
        time = (f", about {fmt_duration((self.needed - self.rounds) * self.round_s)} more"
                if self.round_s and self.needed > self.rounds else "")
        return (f"at the spread measured, {self.widest_case} needs about {self.needed} rounds "
                f"in all{time}")

    def warning(self) -> str | None:
        """Said once, as soon as the spread (of MIN_ROUNDS_TO_PLAN rounds or more) shows the
        target out of reach."""
        stop = self.limit()
        if stop is None or self.reached or self.rounds < MIN_ROUNDS_TO_PLAN:
            return None
        why, rounds = stop
        expect = half_width_after(self.widest, self.rounds, rounds - self.rounds)
        fix = ("raise --max-trials" if why.startswith("the cap") else "raise --time-budget")
        return (f"{self.flag} {self.target * 100:g}% will not be reached: {self.need_words()}, "
                f"and {why} stops it at about {rounds} (expect about ±{_pct(expect)}%); "
                f"{fix} to reach it")

    def missed(self, stopped_by_budget: bool) -> str | None:
        """The run's end: None when the target was reached, else what it reached and why."""
        if self.reached:
            return None
        why = ("the time budget ran out" if stopped_by_budget
               else f"the cap of {self.cap} trials per case was reached")
        need = f"; {self.need_words()}" if self.needed is not None else ""
        return (f"target {self.flag} {self.target * 100:g}% not reached: the widest CI is "
                f"±{_pct(self.widest)}% ({self.widest_case}) after {self.rounds} rounds; "
                f"{why}{need}")


def _pct(fraction: float) -> str:
    return f"{fraction * 100:.2f}" if fraction < 0.1 else f"{fraction * 100:.3g}"
