"""Sequential allocation of trials: spend them where they can still change an answer.

Every case first gets `min_trials`. From then on, each round gives one more trial only to the
cases whose answer is not settled, up to the profile's `trials`:

- a variant's case is *settled* when an interval of its ratio to the baseline, widened by
  STOP_MARGIN, contains none of the levels an answer turns on: the verdict's thresholds
  1 - t and 1 + t (t = --threshold) and the benchmark's declared crossover ratios. Then later
  trials would most likely leave its verdict, and the side of each level its ratio is on,
  as they are;
- the baseline's case needs a trial while any variant's case at the same params does (both
  sides of a ratio carry its error);
- a case without a usable ratio (failed trials, a baseline median of 0, a metric the baseline
  does not report) is never settled: it gets every trial the profile allows, as without
  this rule.

The interval is the report's own (stats.ratio_ci, a Welch t interval on the logs of the
per-trial medians), widened by STOP_MARGIN (log_ratio_interval says more).

What this does to the statistics (tests/test_allocation.py checks it by simulation): the
stopping rule looks at the data several times, so the final CI is not a fixed-n CI. The error
that matters, a verdict that names the wrong winner or claims a difference beyond the
threshold that is not there, stays within a stated bound of the fixed design's at `trials`;
the final CI's coverage of the true ratio stays within a stated bound of the fixed design's.
Cases near a threshold get the most trials, which is where the fixed design's verdicts are
least sure; cases far from every level stop at `min_trials` with the answer they would have
had at `trials`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from bakeoff import stats
from bakeoff.model import Case

# How much wider than the 95% t interval (in log ratio) the interval a case must keep clear of
# every level is. Larger is more careful and costs more trials. Of 1.0 and 1.5, tried with
# the simulation of tests/test_allocation.py (3 to 10 trials a case), only 1.5 kept the
# share of wrong verdicts within its bound at a 15% trial-to-trial spread.
STOP_MARGIN = 1.5


@dataclass(frozen=True)
class Rule:
    """When cases stop getting trials. min_trials == max_trials is the fixed design."""

    min_trials: int
    max_trials: int
    levels: tuple[float, ...]  # ratios an answer turns on: 1 ± threshold, crossover ratios
    margin: float = STOP_MARGIN

    @classmethod
    def for_benchmark(cls, min_trials: int | None, max_trials: int, threshold: float,
                      crossover_ratios: Sequence[float]) -> Rule:
        low = max_trials if min_trials is None else max(1, min(min_trials, max_trials))
        levels = tuple(sorted({1.0 - threshold, 1.0 + threshold, *crossover_ratios}))
        return cls(low, max_trials, levels)

    @property
    def sequential(self) -> bool:
        return self.min_trials < self.max_trials


def log_ratio_interval(variant: stats.Trials, baseline: stats.Trials,
                       confidence: float) -> tuple[float, float] | None:
    """The report's interval of the ratio (stats.ratio_ci: Welch t on the logs of the
    per-trial medians, centred on the pooled ratio); None when it cannot be formed (fewer
    than 2 trials a side, a median <= 0).

    The same interval the report prints and its verdicts use: it was chosen for covering
    94-97% from 3 trials a side on (docs/STATISTICS.md), where the percentile bootstrap
    that was printed before is too narrow, and a stopping rule on a too-narrow interval
    stops too early, exactly where stopping is a bet."""
    v = [np.asarray(t, dtype=np.float64) for t in variant if len(t)]
    b = [np.asarray(t, dtype=np.float64) for t in baseline if len(t)]
    if len(v) < 2 or len(b) < 2:
        return None
    if min(float(np.median(t)) for t in [*v, *b]) <= 0:
        return None
    r = stats.ratio_ci(v, b, confidence)
    return r.ci_low, r.ci_high


def settled(variant: stats.Trials, baseline: stats.Trials, rule: Rule) -> bool:
    """True when the ratio's interval, widened by the rule's margin, lies clear of every level
    of the rule, and the report's point ratio (pooled medians) lies in it."""
    interval = log_ratio_interval(variant, baseline, stats.CONFIDENCE)
    if interval is None:
        return False
    low, high = interval
    centre = math.sqrt(low * high)
    lo = centre * (low / centre) ** rule.margin
    hi = centre * (high / centre) ** rule.margin
    pooled_b = float(np.median(np.concatenate([np.asarray(t, dtype=float) for t in baseline])))
    pooled_v = float(np.median(np.concatenate([np.asarray(t, dtype=float) for t in variant])))
    # (The tolerance: exp(log(a) - log(b)) is a/b to a few ulps.)
    if pooled_b <= 0 or not lo * (1 - 1e-9) <= pooled_v / pooled_b <= hi * (1 + 1e-9):
        return False
    return not any(lo <= level <= hi for level in rule.levels)


def cases_needing_trials(
    cases: Sequence[Case],
    counts: Mapping[Case, int],
    samples: Callable[[Case], stats.Trials],
    baseline: str,
    rule: Rule,
) -> list[Case]:
    """The cases that get a trial in the next round, in the order of `cases`.

    samples(case): the case's ok trials' values of the metric the verdict ranks.
    """
    below_min = [c for c in cases if counts[c] < rule.min_trials]
    if below_min or not rule.sequential:
        return below_min
    open_variants: list[Case] = []
    open_params: set[tuple[tuple[str, object], ...]] = set()
    base_of = {c.params: c for c in cases if c.variant == baseline}
    for case in cases:
        if case.variant == baseline:
            continue
        base = base_of.get(case.params)
        if base is None or not settled(samples(case), samples(base), rule):
            # Open: its baseline keeps getting trials even once the variant's own are spent.
            open_params.add(case.params)
            if counts[case] < rule.max_trials:
                open_variants.append(case)
    chosen = set(open_variants) | {c for c in base_of.values()
                                   if c.params in open_params and counts[c] < rule.max_trials}
    return [c for c in cases if c in chosen]
