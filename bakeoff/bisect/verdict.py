"""SAME, DIFFERENT or UNKNOWN: one candidate's ratio to the good build, against a boundary.

Bisect assumes one step: every commit runs at the good level (ratio 1 to good) or at the bad
level (the ratio R that good and bad measured at the start). A candidate is classified by the
level it is nearer, told by its ratio's 95% CI against the boundary between them:

- DIFFERENT (slower, on the bad side): the whole CI above the boundary;
- SAME (on the good side): the whole CI below it;
- UNKNOWN: the CI holds the boundary; more rounds are measured, up to the budget.

The boundary is the geometric mean of the two levels, √R (log-midway): a candidate at either
level is then as far from it, so SAME and DIFFERENT need CIs of the same width, the fewest
rounds for both. (A boundary at 1 + threshold/2 instead would make SAME of a step of twice
the threshold need a CI about a third as wide as DIFFERENT: some eight times the rounds, as
rounds go with the inverse square of the width.) It is never below 1 +
threshold/2: a step smaller than the threshold is not looked for. Where slowdowns creep in
over several commits, √R finds the first commit past half the total slowdown (in log terms).

The ends must show the step first: bad against good DIFFERENT by the threshold, i.e. the CI
of R wholly above 1 + threshold/2 (half the threshold: a real step of the threshold's size
reads below it half the time, and its CI must clear a lower bar to be found).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

Verdict = Literal["SAME", "DIFFERENT", "UNKNOWN"]


@dataclass(frozen=True)
class RatioCI:
    ratio: float  # candidate / good, on the measured metric
    low: float
    high: float
    rounds: int  # paired rounds the CI rests on

    def words(self) -> str:
        return f"{self.ratio:.4f} (95% CI {self.low:.4f}–{self.high:.4f}, n={self.rounds} rounds)"


def ends_boundary(threshold: float) -> float:
    """What the CI of bad / good must lie wholly above for there to be a step to find."""
    return 1.0 + threshold / 2


def step_boundary(ends: RatioCI, threshold: float) -> float:
    """Between the good level (1) and the bad one (the ends' ratio): log-midway."""
    return max(math.sqrt(ends.ratio), ends_boundary(threshold))


def classify(ci: RatioCI, boundary: float) -> Verdict:
    if ci.low > boundary:
        return "DIFFERENT"
    if ci.high < boundary:
        return "SAME"
    return "UNKNOWN"


def first_target(boundary: float, ends_ratio: float) -> float:
    """The CI half-width (a fraction) a step first measures to: half the log distance from
    the nearer level to the boundary. With the point within two SEs (about this half-width)
    of its level, which it is 19 times in 20, the CI then clears the boundary."""
    return min(math.log(boundary), math.log(ends_ratio) - math.log(boundary)) / 2
