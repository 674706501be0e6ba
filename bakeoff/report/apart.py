"""Whether two cases can be told apart, said in words: what a ranking may claim.

A report ranks two cases ("the lowest decide_ns is poisson's", "the closest, reopen") only
where the difference between them is shown: its CI, after Bonferroni over the comparisons the
sentence's benchmark makes, excludes no difference. Otherwise it says they cannot be told
apart, with the CI of their difference. The comparison is the analysis' own method on the two
cases' trial medians (CaseResult.trial_medians and trial_rounds): stats.ratio_ci, paired by
round where the two ran interleaved, or stats.difference_ci for a metric that may be 0 or
below. Nothing here knows a benchmark by name; sentences are raw text.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from bakeoff.analysis.within_run import CaseResult
from bakeoff.report.format import fmt_estimate
from bakeoff.stats import estimates as stats


@dataclass(frozen=True)
class Apart:
    """a against b: their difference (a - b, in the metric's unit) with its 95% CI, the ratio
    a / b where both are positive, and whether the difference is shown after correction."""

    a: CaseResult
    b: CaseResult
    difference: stats.TInterval
    ratio: stats.Ratio | None
    shown: bool
    comparisons: int = 1  # the CIs are Bonferroni's over this many (95% at 1)

    def _ci(self, interval: str) -> str:
        """'95% CI a–b', or '98.3% CI a–b, Bonferroni over 3': the CI decided on."""
        if self.comparisons <= 1:
            return f"95% CI {interval}"
        level = (1 - stats.ALPHA / self.comparisons) * 100
        return f"{level:.3g}% CI {interval}, Bonferroni over {self.comparisons}"

    def words(self, unit: str) -> str:
        """'difference a − b -0.34 to +0.42 ns (95% CI)', or 'a / b 0.957, 95% CI
        0.883–1.04' where both are positive: named, so no reader takes it for a ratio to the
        baseline."""
        if self.ratio is not None:
            e = fmt_estimate(self.ratio.ratio, self.ratio.ci_low, self.ratio.ci_high, "",
                             si=False)
            ratio = f"{self.a.case.variant} / {self.b.case.variant} {e.point}"
            return (f"{ratio}, {self._ci(e.interval)}" if e.interval else
                    f"{ratio} in every trial")
        d = self.difference
        e = fmt_estimate(d.estimate, d.low, d.high, unit)
        named = f"difference {self.a.case.variant} − {self.b.case.variant}"
        if e.interval is None:
            return f"{named} {e.point} in every trial"
        low, _, high = e.interval.partition("–")
        return f"{named}, {self._ci(f'{_signed(low)} to {_signed(high)}')}"


def _signed(text: str) -> str:
    return text if text.startswith(("-", "−")) or text.split()[0] == "0" else "+" + text


def apart(a: CaseResult, b: CaseResult, comparisons: int = 1, net: bool = False,
          min_trials: int = stats.MIN_TRIALS_FOR_CI) -> Apart | None:
    """a against b (module docstring); None when either has fewer than MIN_TRIALS_FOR_CI
    trials (from 2, t = 12.7: an interval that says nothing a reader can use). comparisons:
    how many such tests the sentence's benchmark makes (Bonferroni: p × comparisons <
    ALPHA). net: the metric is a net difference (Metric.net): a ratio is formed only where
    both cases' CIs exclude 0, else their difference is said. min_trials=2 asks only
    whether the difference is shown (a valid test at its own t), its interval not to be
    printed."""
    if min(len(a.trial_medians), len(b.trial_medians)) < max(min_trials, 2):
        return None  # 1 degree of freedom: a CI of their difference would span decades
    m = max(comparisons, 1)
    # The interval printed is the one decided on: Bonferroni's level over the comparisons.
    confidence = 1 - stats.ALPHA / m
    d = stats.difference_ci(a.trial_medians, b.trial_medians, a.trial_rounds, b.trial_rounds,
                            confidence)
    ratio = None
    if min(*a.trial_medians, *b.trial_medians) > 0 and (
            not net or (resolved_from_zero(a) and resolved_from_zero(b))):
        ratio = stats.ratio_ci([[x] for x in a.trial_medians], [[x] for x in b.trial_medians],
                               confidence, variant_rounds=a.trial_rounds,
                               baseline_rounds=b.trial_rounds)
    p = ratio.p_ci if ratio is not None else d.p_zero
    shown = not math.isnan(p) and p * m < stats.ALPHA
    return Apart(a, b, d, ratio, shown, m)


def resolved_from_zero(r: CaseResult) -> bool:
    """The case's median CI excludes 0 (a cost that its timer resolves)."""
    return r.summary is not None and r.summary.resolved_from_zero()
