"""Summaries, bootstrap confidence intervals, ratios to the baseline, tests and crossovers.

The unit of independence is the trial (one process): every interval here resamples whole
trials (a cluster bootstrap), never the samples inside one, because samples taken in one
process share its page layout, cache state and CPU placement and are not independent.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from bakeoff import lazy

CONFIDENCE = 0.95
N_BOOT = 2000
# Fewer pooled values than this cannot place a p5 or p95 (each is then an interpolation
# between the two most extreme values): reports flag such quantiles instead of showing them.
MIN_VALUES_FOR_TAIL_QUANTILES = 20
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
    ci_low: float  # 95% CI of the median, cluster bootstrap over trials
    ci_high: float


@dataclass(frozen=True)
class SignedError:
    """A metric whose sign is a direction and whose size is the badness (an estimation error):
    its bias and its typical size, each with a 95% CI by cluster bootstrap over trials."""

    bias: float  # mean of the signed values
    bias_ci_low: float
    bias_ci_high: float
    rms: float  # root mean square: the size of the error, bias included
    rms_ci_low: float
    rms_ci_high: float


@dataclass(frozen=True)
class Ratio:
    """median(variant) / median(baseline) with a bootstrap CI and a rank test."""

    ratio: float
    ci_low: float
    ci_high: float
    # Two-sided Mann-Whitney U on per-trial medians (trials are the independent units);
    # NaN when either side has fewer than 2 trials.
    p_value: float
    # Two-sided bootstrap p of "ratio = 1": twice the share of replicates on the far side
    # of 1 (at least 1/(n_boot + 1)). The verdict's Holm correction uses it: it is the CI's
    # own test, and unlike a rank test on 5 trials a side (p >= 0.008) it can get small
    # enough to survive correction over a 25-cell sweep.
    p_boot: float = math.nan


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


def signed_error(trials: Trials, rng: np.random.Generator, n_boot: int = N_BOOT) -> SignedError:
    """Bias (mean) and RMS of signed values, resampling whole trials as bootstrap_medians does."""
    arrays = _as_arrays(trials)
    if not arrays:
        raise ValueError("no samples")
    pooled = np.concatenate(arrays)
    matrix = _padded(arrays)
    n_trials, width = matrix.shape
    per_chunk = max(1, _BOOT_CELLS_PER_CHUNK // (n_trials * width))
    means, rms = np.empty(n_boot), np.empty(n_boot)
    for start in range(0, n_boot, per_chunk):
        stop = min(n_boot, start + per_chunk)
        picks = rng.integers(0, n_trials, size=(stop - start, n_trials))
        rows = matrix[picks].reshape(stop - start, n_trials * width)
        means[start:stop] = np.nanmean(rows, axis=1)
        rms[start:stop] = np.sqrt(np.nanmean(rows * rows, axis=1))
    b_lo, b_hi = _percentile_ci(means)
    r_lo, r_hi = _percentile_ci(rms)
    return SignedError(bias=float(np.mean(pooled)), bias_ci_low=b_lo, bias_ci_high=b_hi,
                       rms=float(np.sqrt(np.mean(pooled * pooled))), rms_ci_low=r_lo,
                       rms_ci_high=r_hi)


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
    trials: Trials, rng: np.random.Generator, n_boot: int = N_BOOT
) -> Summary:
    arrays = _as_arrays(trials)
    if not arrays:
        raise ValueError("no samples")
    pooled = np.concatenate(arrays)
    median = float(np.median(pooled))
    ci_low, ci_high = _percentile_ci(bootstrap_medians(arrays, rng, n_boot))
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
    rng: np.random.Generator,
    n_boot: int = N_BOOT,
) -> Ratio:
    """Ratio of pooled medians; each side resampled by trials independently."""
    v, b = _as_arrays(variant), _as_arrays(baseline)
    if not v or not b:
        raise ValueError("no samples")
    base_median = float(np.median(np.concatenate(b)))
    if base_median == 0:
        raise ValueError("the baseline's median is 0: no ratio to it")
    point = float(np.median(np.concatenate(v)) / base_median)
    with np.errstate(divide="ignore", invalid="ignore"):
        # A replicate whose baseline median is 0 gives inf: the CI then says "unbounded"
        # (interpolating between two infs is what numpy would warn of).
        boot = bootstrap_medians(v, rng, n_boot) / bootstrap_medians(b, rng, n_boot)
        lo, hi = _percentile_ci(boot)
    far_side = min(float(np.mean(boot >= 1.0)), float(np.mean(boot <= 1.0)))
    p_boot = min(1.0, max(2.0 * far_side, 1.0 / (n_boot + 1)))
    return Ratio(ratio=point, ci_low=lo, ci_high=hi, p_value=mann_whitney_p(v, b),
                 p_boot=p_boot)


def paired_ratio_of_medians(
    numerator: Trials,
    denominator: Trials,
    rng: np.random.Generator,
    n_boot: int = N_BOOT,
) -> Ratio:
    """Ratio of pooled medians of two metrics measured in the same trials (numerator[i] and
    denominator[i] come from trial i): each replicate draws trials with replacement and
    pools both sides from the same draw, so what a trial shares (its page layout, its CPU)
    cancels out, as it does in the point estimate. No rank test: the sides are not two
    independent groups (p_value is NaN; p_boot is the bootstrap's)."""
    pairs = [(a, b) for a, b in zip(_as_arrays_keep(numerator), _as_arrays_keep(denominator),
                                    strict=True) if a.size and b.size]
    if not pairs:
        raise ValueError("no samples")
    den = float(np.median(np.concatenate([b for _, b in pairs])))
    if den == 0:
        raise ValueError("the denominator's median is 0: no ratio to it")
    point = float(np.median(np.concatenate([a for a, _ in pairs])) / den)
    if len(pairs) == 1:
        return Ratio(point, point, point, p_value=math.nan, p_boot=math.nan)
    top, bottom = _padded([a for a, _ in pairs]), _padded([b for _, b in pairs])
    top_median, bottom_median = _row_median(top), _row_median(bottom)
    n_trials = len(pairs)
    per_chunk = max(1, _BOOT_CELLS_PER_CHUNK // (n_trials * max(top.shape[1], bottom.shape[1])))
    boot = np.empty(n_boot)
    for start in range(0, n_boot, per_chunk):
        stop = min(n_boot, start + per_chunk)
        picks = rng.integers(0, n_trials, size=(stop - start, n_trials))
        with np.errstate(divide="ignore", invalid="ignore"):
            boot[start:stop] = (top_median(top[picks].reshape(stop - start, -1), axis=1)
                                / bottom_median(bottom[picks].reshape(stop - start, -1), axis=1))
    lo, hi = _percentile_ci(boot)
    far_side = min(float(np.mean(boot >= 1.0)), float(np.mean(boot <= 1.0)))
    return Ratio(ratio=point, ci_low=lo, ci_high=hi, p_value=math.nan,
                 p_boot=min(1.0, max(2.0 * far_side, 1.0 / (n_boot + 1))))


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
    scipy_stats = lazy.load("scipy.stats")  # ~2 s to load: only when a p-value is wanted

    return float(scipy_stats.mannwhitneyu(ma, mb, alternative="two-sided").pvalue)


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
    log_x = all(x > 0 for x in xs)
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
        if log_x:
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
    variant: Trials, baseline: Trials, rng: np.random.Generator, n_boot: int = 1000
) -> Shift:
    """Median of all pairwise differences of per-trial medians, resampled by trials.

    On per-trial medians, like the rank test, because trials are the independent units.
    """
    ma = np.array([np.median(t) for t in _as_arrays(variant)])
    mb = np.array([np.median(t) for t in _as_arrays(baseline)])
    if ma.size == 0 or mb.size == 0:
        raise ValueError("no samples")
    point = _hodges_lehmann(ma, mb)
    if ma.size < 2 or mb.size < 2:
        return Shift(point, point, point)
    ia = rng.integers(0, ma.size, size=(n_boot, ma.size))
    ib = rng.integers(0, mb.size, size=(n_boot, mb.size))
    diffs = ma[ia][:, :, None] - mb[ib][:, None, :]
    boots = np.median(diffs.reshape(n_boot, -1), axis=1)
    lo, hi = _percentile_ci(boots)
    return Shift(point, lo, hi)


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


Verdict = Literal["faster", "slower", "same"]

ALPHA = 0.05
DEFAULT_THRESHOLD = 0.02


def verdict(
    ratio: Ratio, p_adjusted: float, lower_is_better: bool, threshold: float = DEFAULT_THRESHOLD
) -> Verdict:
    """'faster'/'slower' only when the difference is both real and large enough to matter:
    the Holm-adjusted bootstrap p is below 5%, AND the whole 95% CI of the ratio lies beyond
    the practical threshold (e.g. below 0.98 for 2%). Anything else is 'same': no difference
    of that size was shown (which includes 'not enough trials to tell')."""
    significant = not math.isnan(p_adjusted) and p_adjusted < ALPHA
    if significant and ratio.ci_high < 1 - threshold:
        return "faster" if lower_is_better else "slower"
    if significant and ratio.ci_low > 1 + threshold:
        return "slower" if lower_is_better else "faster"
    return "same"


# ---- straight-line fits along a param --------------------------------------------------


@dataclass(frozen=True)
class LineFit:
    """y = a + b x by least squares over the points, CIs by cluster bootstrap."""

    a: float
    a_low: float
    a_high: float
    b: float
    b_low: float
    b_high: float
    r2: float
    n_points: int


def _ols(x: FloatArray, y: FloatArray) -> tuple[float, float]:
    b, a = np.polyfit(x, y, 1)
    return float(a), float(b)


def fit_difference_line(
    xs: Sequence[float],
    variant: Sequence[Trials],
    baseline: Sequence[Trials],
    rng: np.random.Generator,
    n_boot: int = 1000,
) -> LineFit:
    """Fit median(variant) - median(baseline) = a + b x, one point per x.

    Each replicate resamples the trials of every case and refits, so the CIs of a and b carry
    the run-to-run spread of every point.
    """
    if len(xs) < 2:
        raise ValueError("a line needs two points")
    x = np.asarray(xs, dtype=np.float64)
    y = np.array([np.median(np.concatenate(_as_arrays(v))) - np.median(np.concatenate(_as_arrays(b)))
                  for v, b in zip(variant, baseline, strict=True)])
    a, b = _ols(x, y)
    residual = y - (a + b * x)
    total = y - y.mean()
    r2 = 1.0 - float(residual @ residual) / float(total @ total) if float(total @ total) else 1.0
    boot_v = [bootstrap_medians(v, rng, n_boot) for v in variant]
    boot_b = [bootstrap_medians(bb, rng, n_boot) for bb in baseline]
    ys = np.stack([bv - bb for bv, bb in zip(boot_v, boot_b, strict=True)], axis=1)
    # Closed-form OLS for every replicate at once (same x each time).
    xc = x - x.mean()
    slopes = (ys - ys.mean(axis=1, keepdims=True)) @ xc / float(xc @ xc)
    intercepts = ys.mean(axis=1) - slopes * x.mean()
    a_lo, a_hi = _percentile_ci(intercepts)
    b_lo, b_hi = _percentile_ci(slopes)
    return LineFit(a, a_lo, a_hi, b, b_lo, b_hi, r2, len(xs))


@dataclass(frozen=True)
class Heterogeneity:
    """Cochran's Q: do k estimates of one ratio (one per host) differ more than their CIs allow?

    On log ratios (a ratio's sampling error is about symmetric in log space), each weighted
    by 1/SE², the SE read off its 95% bootstrap CI. Q follows chi² with k-1 degrees of
    freedom when every host has the same true ratio (tests/test_stats.py checks the false
    alarm rate by simulation).

    A percentile bootstrap over few trials gives too narrow a CI (it resamples the trials
    that happened, not the spread they come from): by simulation, with 5 trials a side the
    false-alarm rate at a nominal 5% was 10-15%. Each SE is therefore widened by
    sqrt((n+1)/(n-1)) for n trials, which brought it to about 5% for 5 and for 10 trials.
    """

    q: float
    df: int
    p_value: float  # NaN when fewer than 2 estimates have a usable CI


_Z95 = 1.959963984540054


def heterogeneity(ratios: Sequence[Ratio], trials: Sequence[int] | None = None) -> Heterogeneity:
    """trials: the trial count behind each ratio (the smaller side), for the small-sample
    widening; None when unknown (no widening)."""
    counts = list(trials) if trials is not None else [0] * len(ratios)
    usable = [(r, n) for r, n in zip(ratios, counts, strict=True)
              if 0 < r.ci_low <= r.ratio <= r.ci_high < math.inf]
    if len(usable) < 2:
        return Heterogeneity(math.nan, max(len(usable) - 1, 0), math.nan)
    y = np.log([r.ratio for r, _ in usable])
    se = np.array([(math.log(r.ci_high) - math.log(r.ci_low)) / (2 * _Z95)
                   * (math.sqrt((n + 1) / (n - 1)) if n >= 2 else 1.0) for r, n in usable])
    # A CI of zero width (every trial the same value) still has some error: a floor keeps
    # its weight finite, and two such hosts with different ratios still differ.
    se = np.maximum(se, 1e-6)
    w = 1.0 / se**2
    pooled = float(np.sum(w * y) / np.sum(w))
    q = float(np.sum(w * (y - pooled) ** 2))
    df = len(usable) - 1
    scipy_stats = lazy.load("scipy.stats")
    return Heterogeneity(q, df, float(scipy_stats.chi2.sf(q, df)))
