"""The verdict on a ratio: three states, never two, and what would settle an open one.

Every verdict bakeoff prints (a run's case tables, `bakeoff compare`, its gate, the answers)
comes from here, in these words:

- **faster / slower** (a difference, Pinpoint's DIFFERENT): the CI's p, Holm-adjusted across
  the family, is below ALPHA *and* the whole 95% CI lies beyond 1 ± threshold;
- **equivalent** (Pinpoint's SAME): the whole 95% CI lies within 1 ± threshold, so any
  difference is smaller than that (two one-sided tests at 2.5% each);
- **inconclusive** (Pinpoint's UNKNOWN): neither. It is never printed as "same": a CI of
  0.47-1.23 says nothing either way, and `to_settle` says how many more trials (or rounds,
  or runs) would bring it to the width that decides.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final, Literal, Protocol

from bakeoff.stats import distributions

Verdict = Literal["faster", "slower", "equivalent", "inconclusive"]
FASTER: Final = "faster"
SLOWER: Final = "slower"
EQUIVALENT: Final = "equivalent"
INCONCLUSIVE: Final = "inconclusive"
VERDICTS: tuple[Verdict, ...] = (FASTER, SLOWER, EQUIVALENT, INCONCLUSIVE)
# The verdicts that call a difference, and those that do not (for counting what is flagged).
CALLED: tuple[Verdict, ...] = (FASTER, SLOWER)
NO_DIFFERENCE: tuple[Verdict, ...] = (EQUIVALENT, INCONCLUSIVE)

ALPHA = 0.05
DEFAULT_THRESHOLD = 0.02
# Beyond this many times the current trials, "more trials" is no advice: the ratio sits on
# the band's edge, and another threshold or another metric is what settles it.
MAX_SETTLE_FACTOR = 100.0


class RatioLike(Protocol):
    @property
    def ratio(self) -> float: ...
    @property
    def ci_low(self) -> float: ...
    @property
    def ci_high(self) -> float: ...


def verdict(ratio: RatioLike, p_adjusted: float, lower_is_better: bool,
            threshold: float = DEFAULT_THRESHOLD) -> Verdict:
    """faster/slower only when the difference is both real and large enough to matter: the
    Holm-adjusted p of the CI's test is below ALPHA and the whole 95% CI of the ratio lies
    beyond the threshold (below 0.98 or above 1.02 for 2%); equivalent when the whole CI lies
    within 1 ± threshold; inconclusive otherwise (the CI reaches across an edge of the band,
    or the difference does not survive the correction)."""
    significant = not math.isnan(p_adjusted) and p_adjusted < ALPHA
    if significant and ratio.ci_high < 1 - threshold:
        return FASTER if lower_is_better else SLOWER
    if significant and ratio.ci_low > 1 + threshold:
        return SLOWER if lower_is_better else FASTER
    if 1 - threshold <= ratio.ci_low and ratio.ci_high <= 1 + threshold:
        return EQUIVALENT
    return INCONCLUSIVE


def is_called(v: str | None) -> bool:
    return v in CALLED


@dataclass(frozen=True)
class Settle:
    """What would turn an inconclusive verdict into a decided one: the CI half-width it
    needs (log scale, as a fraction), the half-width it has, and how many times the current
    count of independent units (trials, rounds, runs) would bring it there, the width going
    with 1/sqrt(n). `toward`: the verdict the point estimate leans to."""

    toward: Literal["different", "equivalent"]
    half_width: float
    needed: float
    factor: float  # inf: the point sits on the band's edge

    def more(self, n: int) -> int | None:
        """How many units in all would settle it, or None when no sensible number would."""
        if not (math.isfinite(self.factor) and self.factor <= MAX_SETTLE_FACTOR) or n < 1:
            return None
        return max(n + 1, math.ceil(n * self.factor))

    def words(self, n: int, unit: str = "trials a side") -> str:
        """'about 40 trials a side would settle it (CI ±6.1% now, ±2.9% needed)'."""
        now = f"CI ±{_pct(self.half_width)} now"
        total = self.more(n)
        if total is None:
            return (f"the ratio lies at the edge of the threshold ({now}): more {unit} "
                    "would take too long; another --threshold or a steadier metric settles it")
        return (f"about {total} {unit} would settle it ({now}, ±{_pct(self.needed)} needed "
                f"to call it {self.toward})")


def _pct(log_half_width: float) -> str:
    return f"{(math.exp(log_half_width) - 1) * 100:.1f}%"


def to_settle(ratio: RatioLike, threshold: float = DEFAULT_THRESHOLD,
              tests: int = 1) -> Settle | None:
    """How far an open verdict is from decided (None when the ratio has no usable CI).
    Toward 'different', the CI must clear the band's nearer edge at the confidence Holm asks
    of the most demanding of `tests` tests (Bonferroni's, an upper bound); toward
    'equivalent', it must fit inside the band from the point."""
    r, lo, hi = ratio.ratio, ratio.ci_low, ratio.ci_high
    if not all(math.isfinite(x) and x > 0 for x in (r, lo, hi)) or not 0 < threshold < 1:
        return None
    lr = math.log(r)
    h = (math.log(hi) - math.log(lo)) / 2
    up, down = math.log(1 + threshold), math.log(1 - threshold)
    z = distributions.norm_ppf(0.5 + 0.95 / 2)
    if lr > up or lr < down:
        dist = lr - up if lr > up else down - lr
        z_needed = distributions.norm_ppf(1 - ALPHA / (2 * max(1, tests)))
        toward: Literal["different", "equivalent"] = "different"
    else:
        dist = min(up - lr, lr - down)
        z_needed = z
        toward = "equivalent"
    needed = dist * z / z_needed  # the half-width at 95% that gives the needed confidence
    factor = (h / needed) ** 2 if needed > 0 else math.inf
    return Settle(toward, h, needed, factor)


def rule(threshold: float) -> str:
    """How a verdict is reached, in one sentence every output states the same way."""
    pct = f"{threshold * 100:g}%"
    return (f"faster/slower when the ratio's CI-test p, Holm-corrected, is below {ALPHA:g} "
            f"and its whole 95% CI lies beyond ±{pct}; equivalent when its whole 95% CI lies "
            f"within ±{pct} (any difference is smaller than that); otherwise inconclusive, "
            "with what would settle it (neither a difference nor its absence is shown)")
