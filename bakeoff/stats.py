"""Summaries, bootstrap confidence intervals, ratios to the baseline, tests and crossovers.

The unit of independence is the trial (one process): every interval here resamples whole
trials (a cluster bootstrap), never the samples inside one, because samples taken in one
process share its page layout, cache state and CPU placement and are not independent.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

CONFIDENCE = 0.95
N_BOOT = 2000
# Bootstrap replicates are computed in chunks so memory stays bounded for big trials.
_BOOT_CELLS_PER_CHUNK = 4_000_000

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
class Ratio:
    """median(variant) / median(baseline) with a bootstrap CI and a rank test."""

    ratio: float
    ci_low: float
    ci_high: float
    # Two-sided Mann-Whitney U on per-trial medians (trials are the independent units);
    # NaN when either side has fewer than 2 trials.
    p_value: float


@dataclass(frozen=True)
class Crossover:
    """Along a swept param, where the ratio to the baseline crosses 1.

    The crossing lies in [low, high] (adjacent swept values); estimate interpolates
    log(ratio) linearly in log(x) (in x when the axis includes values <= 0).
    'starts_winning': below low the variant loses, from high on it wins (for a metric where
    lower is better, ratio < 1 is a win); 'stops_winning' the other way round.
    confident is True when the ratio CIs at both ends exclude 1.
    """

    low: float
    high: float
    estimate: float
    direction: Literal["starts_winning", "stops_winning"]
    confident: bool


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
    medians = np.empty(n_boot)
    for start in range(0, n_boot, per_chunk):
        stop = min(n_boot, start + per_chunk)
        picks = rng.integers(0, n_trials, size=(stop - start, n_trials))
        pooled = matrix[picks].reshape(stop - start, n_trials * width)
        medians[start:stop] = np.nanmedian(pooled, axis=1)
    return medians


def _percentile_ci(replicates: FloatArray, confidence: float = CONFIDENCE) -> tuple[float, float]:
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(replicates, [alpha, 1.0 - alpha])
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
    point = float(np.median(np.concatenate(v)) / np.median(np.concatenate(b)))
    boot = bootstrap_medians(v, rng, n_boot) / bootstrap_medians(b, rng, n_boot)
    lo, hi = _percentile_ci(boot)
    return Ratio(ratio=point, ci_low=lo, ci_high=hi, p_value=mann_whitney_p(v, b))


def mann_whitney_p(a: Trials, b: Trials) -> float:
    """Two-sided Mann-Whitney U p-value on per-trial medians."""
    ma = [float(np.median(t)) for t in _as_arrays(a)]
    mb = [float(np.median(t)) for t in _as_arrays(b)]
    if len(ma) < 2 or len(mb) < 2:
        return math.nan
    if len(set(ma)) == 1 and set(ma) == set(mb):
        return 1.0
    from scipy.stats import mannwhitneyu  # imported late: scipy.stats takes ~2 s to import

    return float(mannwhitneyu(ma, mb, alternative="two-sided").pvalue)


def find_crossovers(
    xs: Sequence[float],
    ratios: Sequence[float],
    ci_lows: Sequence[float],
    ci_highs: Sequence[float],
    lower_is_better: bool = True,
) -> list[Crossover]:
    """Every place along a sorted numeric axis where the variant's win/lose state flips."""
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
        win0 = r0 < 1 if lower_is_better else r0 > 1
        win1 = r1 < 1 if lower_is_better else r1 > 1
        if win0 == win1:
            continue
        x0, x1 = xs[i], xs[i + 1]
        l0, l1 = math.log(r0), math.log(r1)
        frac = 0.5 if l1 == l0 else -l0 / (l1 - l0)
        if log_x:
            est = math.exp(math.log(x0) + frac * (math.log(x1) - math.log(x0)))
        else:
            est = x0 + frac * (x1 - x0)
        confident = not (ci_lows[i] <= 1 <= ci_highs[i]) and not (
            ci_lows[i + 1] <= 1 <= ci_highs[i + 1]
        )
        out.append(
            Crossover(
                low=float(x0),
                high=float(x1),
                estimate=float(est),
                direction="starts_winning" if win1 else "stops_winning",
                confident=confident,
            )
        )
    return out
