"""Summaries, confidence intervals, ratios to the baseline, tests and crossovers.

The unit of independence is the trial (one process): every interval here takes its spread
from whole trials (each trial's median, or mean), never from the samples inside one, because
samples taken in one process share its page layout, cache state and CPU placement and are
not independent. Every printed CI is one method, INTERVAL_METHOD (a t interval over trials,
chosen by measured coverage: docs/STATISTICS.md); the cluster bootstrap stays for what is
not an interval of a reported figure.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from bakeoff.stats import distributions, verdicts

CONFIDENCE = 0.95
N_BOOT = 2000
# Fewer pooled values than this cannot place a p5 or p95 (each is then an interpolation
# between the two most extreme values): reports flag such quantiles instead of showing them.
MIN_VALUES_FOR_TAIL_QUANTILES = 20
# Fewer trials than this give no printed CI: a t interval from 2 has 1 degree of freedom
# (t = 12.7), and on log scale spans decades ("23.5 (0.149–3,705)"), which says nothing a
# reader can use. The interval is still computed (verdicts use it, at its own t); reports
# give the figure with its trial count instead.
MIN_TRIALS_FOR_CI = 3
# Bootstrap replicates are computed in chunks so memory stays bounded for big trials.
_BOOT_CELLS_PER_CHUNK = 4_000_000

# A trial with more samples of a metric than this keeps that many evenly spaced quantiles
# of them instead (odd, so the median is one of them; min and max are the ends). Pooled
# statistics then weight each such trial equally and place each quantile within half a
# 1/(SKETCH_POINTS - 1) step of rank of the exact value.
SKETCH_POINTS = 2049

FloatArray = NDArray[np.float64]
# Samples of one case, grouped by trial: a list of lists or of arrays.
Trials = Sequence[Sequence[float]] | Sequence[FloatArray]


@dataclass(frozen=True)
class Summary:
    """Descriptive statistics of one case's pooled samples, and a CI of their median."""

    n: int  # samples, pooled over trials
    n_trials: int
    mean: float
    median: float
    stddev: float
    mad: float  # median absolute deviation (unscaled)
    min: float
    max: float
    p5: float
    p95: float
    ci_low: float  # 95% CI of the median (median_ci: INTERVAL_METHOD)
    ci_high: float

    def resolved_from_zero(self) -> bool:
        """Its median's CI, from 2 trials or more, excludes 0: a net difference (Metric.net)
        its timer resolves, on either side of 0."""
        return self.n_trials > 1 and not self.ci_low <= 0 <= self.ci_high

    def resolved_above_zero(self) -> bool:
        """resolved_above_zero of its median's CI."""
        return resolved_above_zero(self.n_trials, self.ci_low, self.median)


def resolved_above_zero(n_trials: int, ci_low: float, estimate: float) -> bool:
    """A figure from 2 trials or more whose CI lies above 0: a ratio to or from a net
    difference (Metric.net) is formed only between such figures."""
    return n_trials > 1 and ci_low > 0 and estimate > 0


@dataclass(frozen=True)
class SignedError:
    """A metric whose sign is a direction and whose size is the badness (an estimation error):
    its bias and its typical size, each with a 95% CI (INTERVAL_METHOD: t over the trials'
    means, and over the logs of their mean squares)."""

    bias: float  # mean of the signed values
    bias_ci_low: float
    bias_ci_high: float
    rms: float  # root mean square: the size of the error, bias included
    rms_ci_low: float
    rms_ci_high: float
    # The value most values share and how many of the n do (a stuck estimator, e.g. an
    # estimate of 0 in every run, gives one value many times: its RMS interval then only
    # says how alike the runs were, report/answers/stuck.py says it in words instead).
    n: int = 0
    mode: float = math.nan
    mode_count: int = 0


@dataclass(frozen=True)
class Ratio:
    """median(variant) / median(baseline) with its CI (INTERVAL_METHOD) and a rank test."""

    ratio: float
    ci_low: float
    ci_high: float
    # Two-sided Mann-Whitney U on per-trial medians (trials are the independent units);
    # NaN when either side has fewer than 2 trials.
    p_value: float
    # Two-sided p of "ratio = 1" by the CI's own t test (the CI excludes 1 exactly when it is
    # below 0.05). The verdict's Holm correction uses it: unlike a rank test on 5 trials a
    # side (p >= 0.008) it can get small enough to survive correction over a 25-cell sweep.
    p_ci: float = math.nan

    @property
    def p_boot(self) -> float:
        """The name p_ci had when the CI was a bootstrap's (kept for callers)."""
        return self.p_ci


@dataclass(frozen=True)
class Crossover:
    """Along a swept param, where the ratio to the baseline crosses 1.

    The crossing lies in [low, high] (adjacent swept values); estimate interpolates
    log(ratio) linearly in log(x) (in x when the axis includes values <= 0).
    'starts_winning': below low the variant loses, from high on it wins (for a metric where
    lower is better, ratio < 1 is a win); 'stops_winning' the other way round.
    confident is True when the ratio CIs at both ends exclude the level crossed.
    """

    low: float
    high: float
    estimate: float
    direction: Literal["starts_winning", "stops_winning"]
    confident: bool
    level: float = 1.0  # the ratio crossed: 1, or e.g. 1.05 for "overhead under 5%"


def sketch(values: Sequence[float] | FloatArray) -> list[float] | None:
    """SKETCH_POINTS evenly spaced quantiles of values, or None when there are not more
    values than that (they are then kept as they are)."""
    a = np.asarray(values, dtype=np.float64)
    if a.size <= SKETCH_POINTS:
        return None
    return [float(q) for q in np.quantile(a, np.linspace(0.0, 1.0, SKETCH_POINTS))]


def _as_arrays(trials: Trials) -> list[FloatArray]:
    arrays = [np.asarray(t, dtype=np.float64) for t in trials]
    return [a for a in arrays if a.size > 0]


def _padded(trials: list[FloatArray]) -> FloatArray:
    """Trials as rows of one matrix, padded with NaN, for vectorised resampling."""
    width = max(a.size for a in trials)
    out = np.full((len(trials), width), np.nan)
    for i, a in enumerate(trials):
        out[i, : a.size] = a
    return out


def bootstrap_medians(
    trials: Trials, rng: np.random.Generator, n_boot: int = N_BOOT
) -> FloatArray:
    """Medians of n_boot cluster-bootstrap replicates: draw trials with replacement, pool."""
    arrays = _as_arrays(trials)
    if not arrays:
        raise ValueError("no samples")
    matrix = _padded(arrays)
    n_trials, width = matrix.shape
    if n_trials == 1:
        # One cluster: every replicate is the same pool; the CI collapses to the median.
        return np.full(n_boot, float(np.median(arrays[0])))
    per_chunk = max(1, _BOOT_CELLS_PER_CHUNK // (n_trials * width))
    median = _row_median(matrix)
    medians = np.empty(n_boot)
    for start in range(0, n_boot, per_chunk):
        stop = min(n_boot, start + per_chunk)
        picks = rng.integers(0, n_trials, size=(stop - start, n_trials))
        pooled = matrix[picks].reshape(stop - start, n_trials * width)
        medians[start:stop] = median(pooled, axis=1)
    return medians


def _row_median(matrix: FloatArray) -> Callable[..., FloatArray]:
    """The median that ignores the padding of unequal trials (np.nanmedian), or, where there
    is none, np.median: the same values, and many times faster (the whole analysis spent
    most of its time in nanmedian)."""
    return np.nanmedian if np.isnan(matrix).any() else np.median


def signed_error(trials: Trials, rng: np.random.Generator | None = None,
                 n_boot: int = N_BOOT) -> SignedError:
    """Bias (mean) and RMS of signed values with INTERVAL_METHOD's CIs: t over the trials'
    means (bias), and over the logs of the trials' mean squares (RMS, which is positive),
    each centred on the pooled figure. rng and n_boot are unused (kept for callers)."""
    arrays = _as_arrays(trials)
    if not arrays:
        raise ValueError("no samples")
    pooled = np.concatenate(arrays)
    n = len(arrays)
    means = _trial_figures(arrays, np.mean)
    squares = _trial_figures(arrays, lambda a: float(np.mean(a * a)))
    bias = float(np.mean(pooled))
    mean_square = float(np.mean(pooled * pooled))
    se = float(means.std(ddof=1)) / math.sqrt(n) if n > 1 else math.inf
    b = _interval(bias, se, n - 1, False)
    if mean_square > 0 and bool(np.all(squares > 0)):
        se_sq = float(np.log(squares).std(ddof=1)) / math.sqrt(n) if n > 1 else math.inf
        sq = _interval(math.log(mean_square), se_sq, n - 1, True)
    else:  # every value 0 in some trial: on the linear scale, floored at 0
        se_sq = float(squares.std(ddof=1)) / math.sqrt(n) if n > 1 else math.inf
        sq = _interval(mean_square, se_sq, n - 1, False)
    values, counts = np.unique(pooled, return_counts=True)
    top = int(np.argmax(counts))
    return SignedError(bias=bias, bias_ci_low=b.low, bias_ci_high=b.high,
                       rms=math.sqrt(mean_square), rms_ci_low=math.sqrt(max(sq.low, 0.0)),
                       rms_ci_high=math.sqrt(max(sq.high, 0.0)), n=int(pooled.size),
                       mode=float(values[top]), mode_count=int(counts[top]))


# ---- the interval every reported CI uses ---------------------------------------------------

# One method for every 95% CI bakeoff prints, and for its verdicts and its sequential
# allocation: a t interval over trials. Per trial, its median (or mean, for a signed metric's
# bias); the spread of those per-trial figures gives the standard error, Student's t (Welch's
# degrees of freedom for two sides) the small-sample width; the interval is centred on its
# point, so a point is never at an end: a ratio's point is the t's own centre (the geometric
# mean of the per-round ratios: pooling would undo the pairing), a median's and a
# difference's the pooled figure the report prints (estimate ± t·SE). Ratios and positive
# medians are done on log scale (a ratio's error is about symmetric there, and the ends
# stay positive). Why not the trial
# bootstrap it replaced: with 3 to 5 trials a side, resampling the trials that happened
# misses the spread they come from (docs/STATISTICS.md has the coverage table of both;
# scripts/coverage regenerates it).
INTERVAL_METHOD = "trial-t"
INTERVAL_DESCRIPTION = ("t over per-trial medians; ratios paired by round, on log scale")
# The coverage of 1 by INTERVAL_METHOD's nominal 95% ratio interval that docs/STATISTICS.md
# measured at 3 to 20 trials a side, simulated and on real trials resampled A/A: the lowest
# and highest cell (tests/test_coverage.py checks it still holds). Above 97% is conservative:
# real trials with heavier tails than a normal's on log scale.
CALIBRATED_COVERAGE = (0.94, 0.995)


def interval_note() -> str:
    """The sentence a report names its CIs' method and calibrated coverage with."""
    lo, hi = CALIBRATED_COVERAGE
    return (f"95% CIs: {INTERVAL_METHOD} ({INTERVAL_DESCRIPTION}); measured coverage "
            f"{lo * 100:g}-{hi * 100:g}% at 3 to 20 trials a side, simulated and on real "
            "trials resampled A/A (docs/STATISTICS.md)")


@functools.lru_cache(maxsize=1024)  # dfs repeat (n - 1 for paired rounds): ppf is slow
def t_quantile(df: float, confidence: float = CONFIDENCE) -> float:
    """The two-sided t quantile; the normal's for infinite df, infinite for none."""
    if not df > 0:
        return math.inf
    return distributions.t_ppf(0.5 + confidence / 2, df)


def _t_p(estimate: float, se: float, df: float) -> float:
    """Two-sided p of "estimate = 0" for a t statistic; NaN when it cannot be formed. With no
    spread seen (se 0: every trial gave the same figure) a nonzero estimate is certain."""
    if se == 0 and not math.isnan(estimate):
        return 0.0 if estimate != 0 else 1.0
    if not (0 < se < math.inf and df > 0) or math.isnan(estimate):
        return math.nan
    return min(1.0, 2.0 * distributions.t_sf(abs(estimate) / se, df))


def welch_df(var_a: float, var_b: float, n_a: int, n_b: int) -> float:
    """Welch-Satterthwaite degrees of freedom of var_a + var_b (each a squared standard error
    of a mean of n_a, n_b values)."""
    return satterthwaite_df([(var_a, n_a - 1), (var_b, n_b - 1)])


def satterthwaite_df(terms: Sequence[tuple[float, float]]) -> float:
    """Degrees of freedom of a sum of variance terms, each (variance, its df)."""
    total = sum(v for v, _ in terms)
    denom = sum(v * v / df for v, df in terms if v > 0 and df > 0)
    return total * total / denom if denom > 0 else math.inf


def _trial_figures(trials: Trials,
                   of: Callable[[FloatArray], float] | None = None) -> FloatArray:
    """Each trial's median (or `of` it)."""
    f = of or (lambda a: float(np.median(a)))
    return np.array([float(f(a)) for a in _as_arrays(trials)])


@dataclass(frozen=True)
class TInterval:
    """A t interval: its estimate and ends, and the standard error and degrees of freedom
    behind it (on log scale when log is True)."""

    estimate: float
    low: float
    high: float
    se: float
    df: float
    log: bool
    p_zero: float  # two-sided t p of "no difference" (ratio 1 on log scale, 0 otherwise)


def _interval(centre: float, se: float, df: float, log: bool,
              confidence: float = CONFIDENCE) -> TInterval:
    if se == 0 or not math.isfinite(se):
        # No spread seen (every trial the same figure) or none that can be seen (one trial):
        # the interval is the point. Reports say "no CI from one trial" by trial count.
        lo = hi = centre
    else:
        half = t_quantile(df, confidence) * se
        lo, hi = centre - half, centre + half
    p = _t_p(centre, se, df)
    if log:
        return TInterval(math.exp(centre), math.exp(lo), math.exp(hi), se, df, True, p)
    return TInterval(centre, lo, hi, se, df, False, p)


def median_ci(trials: Trials, confidence: float = CONFIDENCE,
              log: bool | None = None) -> TInterval:
    """The pooled median with its calibrated CI: the standard error of the trials' medians
    (one-sample t, on log scale when every one is positive, or as `log` says: a difference
    that may be 0, such as an added cost, wants the linear scale), n - 1 degrees of freedom,
    centred on the pooled median it is printed beside (estimate ± t·SE), so the point lies
    inside its interval, never at an end. Where every value is >= 0 (a count, a time) the
    interval stops at 0. p_zero is NaN (no "zero" to test).

    A net difference (Metric.net) passes log=False: on log scale its interval from few
    trials would span decades (t = 12.7 at 2 trials, taken on logs of figures near 0) and
    could never include the 0 it may be; nor is its interval floored at 0 where every value
    seen is >= 0 (a difference may be below 0 all the same)."""
    arrays = _as_arrays(trials)
    if not arrays:
        raise ValueError("no samples")
    pooled_values = np.concatenate(arrays)
    pooled = float(np.median(pooled_values))
    meds = _trial_figures(arrays)
    n = meds.size
    positive = pooled > 0 and bool(np.all(meds > 0))
    explicit = log  # told the scale (a net difference): its interval is not floored at 0
    log = positive if log is None else (log and positive)
    x = np.log(meds) if log else meds
    se = float(x.std(ddof=1)) / math.sqrt(n) if n > 1 else 0.0
    t = _interval(math.log(pooled) if log else pooled, se, n - 1, log, confidence)
    if se == 0:  # no spread seen: the interval is the point itself, exactly (exp(log(x)) != x)
        t = dataclasses.replace(t, estimate=pooled, low=pooled, high=pooled)
    if not log and explicit is None and bool(np.all(pooled_values >= 0)):
        t = dataclasses.replace(t, low=max(t.low, 0.0))
    return dataclasses.replace(t, p_zero=math.nan)


def _two_sample(a: FloatArray, b: FloatArray) -> tuple[float, float]:
    """Squared standard error and Welch df of mean(a) - mean(b). A side of one trial shows no
    spread of its own: it is taken to have the other side's (Student's equal-variance
    assumption), with the other side's degrees of freedom. Both of one trial: (inf, 0)."""
    if a.size < 2 and b.size < 2:
        return math.inf, 0.0
    if a.size < 2 or b.size < 2:
        many = a if a.size >= 2 else b
        var = float(many.var(ddof=1))
        return var * (1 / a.size + 1 / b.size), float(many.size - 1)
    va, vb = float(a.var(ddof=1)) / a.size, float(b.var(ddof=1)) / b.size
    return va + vb, welch_df(va, vb, a.size, b.size)


def ratio_ci(variant: Trials, baseline: Trials, confidence: float = CONFIDENCE,
             variant_rounds: Sequence[int] | None = None,
             baseline_rounds: Sequence[int] | None = None) -> Ratio:
    """The ratio variant / baseline with bakeoff's calibrated 95% CI, both from one t.

    With rounds (variant_rounds[i]: the round trial i ran in), the ratio is the geometric
    mean of the per-round ratios of trial medians, over the rounds both sides have a trial
    in, and its CI a one-sample t on those log ratios (n - 1 df): trials of one round ran
    interleaved, so what the round shared, a machine slowing down or a busy neighbour,
    cancels, in the point as in its interval. Without rounds, or fewer than 2 shared, it is
    the ratio of the two sides' geometric mean trial medians, with Welch's t. The point is
    the interval's own centre on log scale: inside it, never at an end (a ratio of pooled
    medians does not cancel a round's drift, and lies outside a paired interval as often as
    the drift is large). p_ci is the t test's p of "ratio = 1" (the CI excludes 1 exactly
    when p_ci < 0.05); p_value the Mann-Whitney test on per-trial medians.

    Where some trial's median is 0 or below (a difference metric), log scale cannot be
    used: the ratio is then of the pooled medians, its SE the delta method's, on the trial
    medians' means."""
    v, b = _as_arrays(variant), _as_arrays(baseline)
    if not v or not b:
        raise ValueError("no samples")
    base_median = float(np.median(np.concatenate(b)))
    if base_median == 0:
        raise ValueError("the baseline's median is 0: no ratio to it")
    point = float(np.median(np.concatenate(v)) / base_median)
    mv, mb = _trial_figures(v), _trial_figures(b)
    if point > 0 and bool(np.all(mv > 0)) and bool(np.all(mb > 0)):
        centre, se, df = _log_ratio_t(variant, baseline, variant_rounds, baseline_rounds)
        t = _interval(centre, se, df, True, confidence)
        point, lo, hi, p = t.estimate, t.low, t.high, t.p_zero
    else:
        se2, df = _delta_ratio_se2(mv, mb)
        t = _interval(point - 1.0, math.sqrt(se2), df, False, confidence)
        lo, hi, p = t.low + 1.0, t.high + 1.0, t.p_zero
        if bool(np.all(mv >= 0)) and bool(np.all(mb >= 0)):
            lo = max(lo, 0.0)  # a ratio of counts (or times) is never below 0
    return Ratio(ratio=point, ci_low=lo, ci_high=hi, p_value=mann_whitney_p(v, b), p_ci=p)


def _log_ratio_t(variant: Trials, baseline: Trials, variant_rounds: Sequence[int] | None,
                 baseline_rounds: Sequence[int] | None) -> tuple[float, float, float]:
    """The log ratio, its standard error and df: the mean of the per-round log ratios of
    trial medians where two or more rounds have a trial of each side (paired), else the
    difference of the two sides' mean log per-trial medians with Welch's SE (allocation's
    rule of stopping uses the same)."""
    if variant_rounds is not None and baseline_rounds is not None:
        base_by_round = {r: float(np.median(t)) for r, t in
                         zip(baseline_rounds, _as_arrays_keep(baseline), strict=True) if t.size}
        d = np.array([math.log(float(np.median(t)) / base_by_round[r])
                      for r, t in zip(variant_rounds, _as_arrays_keep(variant), strict=True)
                      if t.size and r in base_by_round])
        if d.size >= 2:
            return float(d.mean()), float(d.std(ddof=1)) / math.sqrt(d.size), float(d.size - 1)
    lv, lb = np.log(_trial_figures(variant)), np.log(_trial_figures(baseline))
    se2, df = _two_sample(lv, lb)
    return float(lv.mean() - lb.mean()), math.sqrt(se2), df


def _delta_ratio_se2(mv: FloatArray, mb: FloatArray) -> tuple[float, float]:
    """Squared SE (and df) of mean(mv)/mean(mb) by the delta method."""
    mean_b = float(mb.mean())
    if mean_b == 0:
        return math.inf, 0.0
    se2, df = _two_sample(mv, float(mv.mean()) / mean_b * mb)
    return se2 / mean_b**2, df


def _percentile_ci(replicates: FloatArray, confidence: float = CONFIDENCE) -> tuple[float, float]:
    alpha = (1.0 - confidence) / 2.0
    qs = [alpha, 1.0 - alpha]
    with np.errstate(invalid="ignore"):
        lo, hi = np.quantile(replicates, qs)
    if (math.isnan(lo) or math.isnan(hi)) and not np.isnan(replicates).any():
        # Interpolating between two infinite replicates (a ratio's x/0) gives inf - inf: the
        # bound there is that infinity, the CI unbounded on that side.
        near_lo, near_hi = np.quantile(replicates, qs, method="nearest")
        lo, hi = (near_lo if math.isnan(lo) else lo), (near_hi if math.isnan(hi) else hi)
    return float(lo), float(hi)


def summarize(
    trials: Trials, rng: np.random.Generator | None = None, n_boot: int = N_BOOT,
    log: bool | None = None,
) -> Summary:
    """Descriptive statistics of the pooled samples, and median_ci's CI of their median
    (rng and n_boot are unused: the CI is no longer a bootstrap's; kept for callers). log:
    as median_ci's (False for a net difference, Metric.net)."""
    arrays = _as_arrays(trials)
    if not arrays:
        raise ValueError("no samples")
    pooled = np.concatenate(arrays)
    median = float(np.median(pooled))
    ci = median_ci(arrays, log=log)
    ci_low, ci_high = ci.low, ci.high
    p5, p95 = np.quantile(pooled, [0.05, 0.95])
    return Summary(
        n=int(pooled.size),
        n_trials=len(arrays),
        mean=float(np.mean(pooled)),
        median=median,
        stddev=float(np.std(pooled, ddof=1)) if pooled.size > 1 else 0.0,
        mad=float(np.median(np.abs(pooled - median))),
        min=float(np.min(pooled)),
        max=float(np.max(pooled)),
        p5=float(p5),
        p95=float(p95),
        ci_low=ci_low,
        ci_high=ci_high,
    )


def ratio_of_medians(
    variant: Trials,
    baseline: Trials,
    rng: np.random.Generator | None = None,
    n_boot: int = N_BOOT,
) -> Ratio:
    """Ratio of pooled medians with the calibrated CI: ratio_ci (rng and n_boot are unused,
    kept for callers of the bootstrap this once was)."""
    return ratio_ci(variant, baseline)


def paired_ratio_of_medians(
    numerator: Trials,
    denominator: Trials,
    rng: np.random.Generator | None = None,
    n_boot: int = N_BOOT,
) -> Ratio:
    """Ratio of two metrics measured in the same trials (numerator[i] and denominator[i] come
    from trial i): the geometric mean of the trials' own ratios of medians, and its CI a
    one-sample t over their logs, centred on it (one trial: its ratio, no CI): what a trial
    shares (its page layout, its CPU) cancels out, as it does in the point estimate. No rank
    test: the sides are not two independent groups (p_value is NaN; p_ci is the t test's).
    rng and n_boot are unused (kept for callers)."""
    pairs = [(a, b) for a, b in zip(_as_arrays_keep(numerator), _as_arrays_keep(denominator),
                                    strict=True) if a.size and b.size]
    if not pairs:
        raise ValueError("no samples")
    den = float(np.median(np.concatenate([b for _, b in pairs])))
    if den == 0:
        raise ValueError("the denominator's median is 0: no ratio to it")
    point = float(np.median(np.concatenate([a for a, _ in pairs])) / den)
    if len(pairs) == 1:
        return Ratio(point, point, point, p_value=math.nan, p_ci=math.nan)
    top = np.array([float(np.median(a)) for a, _ in pairs])
    bottom = np.array([float(np.median(b)) for _, b in pairs])
    n = len(pairs)
    if point > 0 and bool(np.all(top > 0)) and bool(np.all(bottom > 0)):
        d = np.log(top) - np.log(bottom)
        t = _interval(float(d.mean()), float(d.std(ddof=1)) / math.sqrt(n), n - 1, True)
        return Ratio(t.estimate, t.low, t.high, p_value=math.nan, p_ci=t.p_zero)
    # Some trial's median is 0 or below: the delta method on the trials' ratio of means.
    d = top - point * bottom
    t = _interval(point - 1.0, float(d.std(ddof=1)) / math.sqrt(n) / abs(float(bottom.mean())),
                  n - 1, False)
    return Ratio(point, t.low + 1.0, t.high + 1.0, p_value=math.nan, p_ci=t.p_zero)


def difference_ci(a: Sequence[float], b: Sequence[float],
                  a_rounds: Sequence[int] | None = None, b_rounds: Sequence[int] | None = None,
                  confidence: float = CONFIDENCE) -> TInterval:
    """a - b from per-trial figures (each trial's median), with INTERVAL_METHOD's CI: the mean
    of the per-round differences where two or more rounds have a trial of each (paired, as
    ratio_ci), else the difference of the two means with Welch's SE; the estimate is the
    interval's centre, p_zero its t test of "no difference"."""
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.size == 0 or y.size == 0:
        raise ValueError("no samples")
    if a_rounds is not None and b_rounds is not None:
        by_round = dict(zip(b_rounds, y, strict=True))
        d = np.array([v - by_round[r] for r, v in zip(a_rounds, x, strict=True)
                      if r in by_round])
        if d.size >= 2:
            return _interval(float(d.mean()), float(d.std(ddof=1)) / math.sqrt(d.size),
                             d.size - 1, False, confidence)
    se2, df = _two_sample(x, y)
    return _interval(float(x.mean() - y.mean()), math.sqrt(se2), df, False, confidence)


def _as_arrays_keep(trials: Trials) -> list[FloatArray]:
    """Trials as arrays, empty ones kept, so two metrics of the same trials stay aligned."""
    return [np.asarray(t, dtype=np.float64) for t in trials]


def mann_whitney_p(a: Trials, b: Trials) -> float:
    """Two-sided Mann-Whitney U p-value on per-trial medians."""
    ma = [float(np.median(t)) for t in _as_arrays(a)]
    mb = [float(np.median(t)) for t in _as_arrays(b)]
    if len(ma) < 2 or len(mb) < 2:
        return math.nan
    if len(set(ma)) == 1 and set(ma) == set(mb):
        return 1.0
    return distributions.mann_whitney_p(ma, mb)


def find_crossovers(
    xs: Sequence[float],
    ratios: Sequence[float],
    ci_lows: Sequence[float],
    ci_highs: Sequence[float],
    lower_is_better: bool = True,
    level: float = 1.0,
) -> list[Crossover]:
    """Every place along a sorted numeric axis where the ratio crosses `level`.

    At level 1 that is where the variant starts or stops beating the baseline; at 1.05, where
    its overhead over the baseline falls under (or rises over) 5%. 'Winning' at a level means
    ratio < level for a metric where lower is better, ratio > level otherwise.
    """
    if len(xs) != len(ratios) or len(xs) < 2:
        return []
    if any(b <= a for a, b in itertools.pairwise(xs)):
        raise ValueError("xs must be strictly increasing")
    out: list[Crossover] = []
    for i in range(len(xs) - 1):
        r0, r1 = ratios[i], ratios[i + 1]
        if not (r0 > 0 and r1 > 0):
            continue
        win0 = r0 < level if lower_is_better else r0 > level
        win1 = r1 < level if lower_is_better else r1 > level
        if win0 == win1:
            continue
        x0, x1 = xs[i], xs[i + 1]
        l0, l1 = math.log(r0 / level), math.log(r1 / level)
        frac = 0.5 if l1 == l0 else -l0 / (l1 - l0)
        # On log scale between two positive points (sweeps are geometric: 5, 50, 500 µs),
        # whatever else the axis holds: an axis that starts at 0 interpolates linearly only
        # next to 0, so a crossing reads the same from the whole line and from its two
        # neighbours (an answer asks the latter, the contrasts the former).
        if x0 > 0:
            est = math.exp(math.log(x0) + frac * (math.log(x1) - math.log(x0)))
        else:
            est = x0 + frac * (x1 - x0)
        confident = not (ci_lows[i] <= level <= ci_highs[i]) and not (
            ci_lows[i + 1] <= level <= ci_highs[i + 1]
        )
        out.append(
            Crossover(
                low=float(x0),
                high=float(x1),
                estimate=float(est),
                direction="starts_winning" if win1 else "stops_winning",
                confident=confident,
                level=level,
            )
        )
    return out


# ---- effect sizes, outliers, multiple comparisons, verdicts ----------------------------


@dataclass(frozen=True)
class Shift:
    """Hodges-Lehmann shift (variant - baseline) with a cluster-bootstrap CI, in the unit."""

    estimate: float
    ci_low: float
    ci_high: float


def _hodges_lehmann(a: FloatArray, b: FloatArray) -> float:
    return float(np.median(np.subtract.outer(a, b)))


def hodges_lehmann(
    variant: Trials, baseline: Trials, rng: np.random.Generator | None = None,
    n_boot: int = 1000
) -> Shift:
    """Median of all pairwise differences of per-trial medians, with INTERVAL_METHOD's CI
    (Welch t on the per-trial medians, centred on the estimate). rng and n_boot unused.

    On per-trial medians, like the rank test, because trials are the independent units.
    """
    ma = np.array([np.median(t) for t in _as_arrays(variant)])
    mb = np.array([np.median(t) for t in _as_arrays(baseline)])
    if ma.size == 0 or mb.size == 0:
        raise ValueError("no samples")
    point = _hodges_lehmann(ma, mb)
    se2, df = _two_sample(ma, mb)
    t = _interval(point, math.sqrt(se2), df, False)
    return Shift(point, t.low, t.high)


def paired_difference(variant: Trials, baseline: Trials, variant_rounds: Sequence[int],
                      baseline_rounds: Sequence[int],
                      confidence: float = CONFIDENCE) -> Shift | None:
    """variant - baseline, paired by round: the mean over the rounds both sides have a trial
    in of (the variant trial's median - the baseline trial's median), with the one-sample
    t interval on those differences (n - 1 df). Trials of one round ran interleaved, so
    what the round shared (a busy neighbour, the machine slowing down) cancels, as in
    ratio_ci's paired design; the point is the interval's centre, so always inside it.
    None with fewer than 2 rounds in common (no spread to show)."""
    base_by_round = {r: float(np.median(t)) for r, t in
                     zip(baseline_rounds, _as_arrays_keep(baseline), strict=True) if t.size}
    d = np.array([float(np.median(t)) - base_by_round[r]
                  for r, t in zip(variant_rounds, _as_arrays_keep(variant), strict=True)
                  if t.size and r in base_by_round])
    if d.size < 2:
        return None
    t = _interval(float(d.mean()), float(d.std(ddof=1)) / math.sqrt(d.size), d.size - 1,
                  False, confidence)
    return Shift(float(d.mean()), t.low, t.high)


def cliffs_delta(variant: Trials, baseline: Trials) -> float:
    """P(variant > baseline) - P(variant < baseline) over all pairs of pooled samples.

    -1: every variant sample is below every baseline sample; 0: the two overlap evenly.
    """
    a = np.sort(np.concatenate(_as_arrays(variant)))
    b = np.sort(np.concatenate(_as_arrays(baseline)))
    if a.size == 0 or b.size == 0:
        raise ValueError("no samples")
    # For each a: how many b are below it, and how many above it.
    below = np.searchsorted(b, a, side="left")
    above = b.size - np.searchsorted(b, a, side="right")
    return float((below.sum() - above.sum()) / (a.size * b.size))


@dataclass(frozen=True)
class Outliers:
    """Counted and shown, never dropped: Tukey fences (1.5 IQR) and MAD (modified z > 3.5)."""

    tukey_low: int
    tukey_high: int
    mad: int


def outliers(trials: Trials, represents: Sequence[float] | None = None) -> Outliers:
    """represents[i]: how many measured samples each value of trial i stands for (1 when
    kept whole; samples/SKETCH_POINTS for a trial kept as quantiles), so the counts are of
    samples measured, not of values kept."""
    arrays = _as_arrays(trials)
    x = np.concatenate(arrays)
    w = (np.ones(x.size) if represents is None else
         np.concatenate([np.full(a.size, r) for a, r in zip(arrays, represents, strict=True)]))
    q1, q3 = np.quantile(x, [0.25, 0.75])
    iqr = q3 - q1
    median = np.median(x)
    mad = np.median(np.abs(x - median))
    # 0.6745 = Phi^-1(0.75): makes the MAD comparable to a standard deviation (Iglewicz and
    # Hoaglin's modified z-score); with MAD 0 nothing can be flagged that way.
    mad_flags = 0.6745 * np.abs(x - median) / mad > 3.5 if mad > 0 else np.zeros(x.size, bool)
    return Outliers(
        tukey_low=round(float(np.sum(w[x < q1 - 1.5 * iqr]))),
        tukey_high=round(float(np.sum(w[x > q3 + 1.5 * iqr]))),
        mad=round(float(np.sum(w[mad_flags]))),
    )


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values (NaN stays NaN and does not count as a test)."""
    idx = [i for i, p in enumerate(p_values) if not math.isnan(p)]
    order = sorted(idx, key=lambda i: p_values[i])
    m = len(order)
    adjusted = [math.nan] * len(p_values)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


# The verdict vocabulary and rule live in stats/verdicts.py (three states, never two); they
# are re-exported here for the callers that read them with the estimates.
ALPHA = verdicts.ALPHA
DEFAULT_THRESHOLD = verdicts.DEFAULT_THRESHOLD
Verdict = verdicts.Verdict
NO_DIFFERENCE = verdicts.NO_DIFFERENCE
verdict = verdicts.verdict


# ---- straight-line fits along a param --------------------------------------------------


@dataclass(frozen=True)
class LineFit:
    """y = a + b x by weighted least squares over the points, with t CIs."""

    a: float
    a_low: float
    a_high: float
    b: float
    b_low: float
    b_high: float
    r2: float
    n_points: int


def fit_difference_line(
    xs: Sequence[float],
    variant: Sequence[Trials],
    baseline: Sequence[Trials],
    rng: np.random.Generator | None = None,
    n_boot: int = 1000,
) -> LineFit:
    """Fit median(variant) - median(baseline) = a + b x, one point per x, each point weighted
    by the inverse of its variance (weighted least squares).

    Each point's variance is that of its difference: the spread of its two cases' per-trial
    medians (a case of one trial adds none it could show). Unweighted, a noisy point far out
    on x (1 ms of work, whose wall-clock spread is microseconds) swamps the intercept that
    precise points near 0 pin down; weighted, each point counts as much as it is known.
    Where some point has no variance to weigh by, every point counts alike. a and b are
    linear in the points, so their SEs follow from each point's; the CIs are t intervals
    (INTERVAL_METHOD) with Satterthwaite's degrees of freedom over every case. R² is the
    weighted one. rng and n_boot are unused.
    """
    if len(xs) < 2:
        raise ValueError("a line needs two points")
    x = np.asarray(xs, dtype=np.float64)
    y = np.array([np.median(np.concatenate(_as_arrays(v))) - np.median(np.concatenate(_as_arrays(b)))
                  for v, b in zip(variant, baseline, strict=True)])
    # Each point's variance, as terms (variance of a side's mean, its df).
    point_terms: list[list[tuple[float, float]]] = []
    for v, bb in zip(variant, baseline, strict=True):
        terms = []
        for side in (v, bb):
            m = _trial_figures(side)
            if m.size >= 2:
                terms.append((float(m.var(ddof=1)) / m.size, float(m.size - 1)))
        point_terms.append(terms)
    var = np.array([sum(v for v, _ in pt) for pt in point_terms])
    w = 1.0 / var if bool(np.all(var > 0)) else np.ones_like(x)
    xw = float(w @ x) / float(w.sum())
    xc = x - xw
    slope_w = w * xc / float(w @ (xc * xc))
    intercept_w = w / float(w.sum()) - xw * slope_w
    a, b = float(intercept_w @ y), float(slope_w @ y)
    residual = y - (a + b * x)
    total = y - float(w @ y) / float(w.sum())
    ss_tot = float(w @ (total * total))
    r2 = 1.0 - float(w @ (residual * residual)) / ss_tot if ss_tot else 1.0

    def interval(centre: float, weights: FloatArray) -> tuple[float, float]:
        terms = [(float(wt * wt) * v, df) for wt, pt in zip(weights, point_terms, strict=True)
                 for v, df in pt]
        se = math.sqrt(sum(v for v, _ in terms)) if terms else math.inf
        t = _interval(centre, se, satterthwaite_df(terms) if terms else 0.0, False)
        return t.low, t.high

    a_lo, a_hi = interval(a, intercept_w)
    b_lo, b_hi = interval(b, slope_w)
    return LineFit(a, a_lo, a_hi, b, b_lo, b_hi, r2, len(xs))


@dataclass(frozen=True)
class Heterogeneity:
    """Cochran's Q: do k estimates of one ratio (one per host) differ more than their CIs allow?

    On log ratios (a ratio's sampling error is about symmetric in log space), each weighted
    by 1/SE², the SE read off its 95% CI as half its log width over 1.96. The CI is a t
    interval (ratio_ci), wider than 1.96 SEs by the t quantile, so this SE carries the
    small-sample doubt about the SE itself, which a chi² of estimated weights otherwise
    ignores (it raised the false-alarm rate at 5 trials a side). Q follows chi² with k-1
    degrees of freedom when every host has the same true ratio
    (tests/test_stats.py checks the false alarm rate by simulation).
    """

    q: float
    df: int
    p_value: float  # NaN when fewer than 2 estimates have a usable CI


_Z95 = 1.959963984540054


def heterogeneity(ratios: Sequence[Ratio], trials: Sequence[int] | None = None) -> Heterogeneity:
    """trials: the trial count behind each ratio (the smaller side); only its length is
    checked now (the t interval's width already says how few trials there were)."""
    counts = list(trials) if trials is not None else [0] * len(ratios)
    usable = [(r, n) for r, n in zip(ratios, counts, strict=True)
              if 0 < r.ci_low <= r.ratio <= r.ci_high < math.inf]
    if len(usable) < 2:
        return Heterogeneity(math.nan, max(len(usable) - 1, 0), math.nan)
    y = np.log([r.ratio for r, _ in usable])
    se = np.array([(math.log(r.ci_high) - math.log(r.ci_low)) / (2 * _Z95) for r, _ in usable])
    # A CI of zero width (every trial the same value) still has some error: a floor keeps
    # its weight finite, and two such hosts with different ratios still differ.
    se = np.maximum(se, 1e-6)
    w = 1.0 / se**2
    pooled = float(np.sum(w * y) / np.sum(w))
    q = float(np.sum(w * (y - pooled) ** 2))
    df = len(usable) - 1
    return Heterogeneity(q, df, distributions.chi2_sf(q, df))
