"""Change points in one series' history of runs: where its level moved, and how sure that is.

A series is one benchmark case's metric on one machine, run after run; each run brings its
trial-level values (a trial's median per trial). Two steps find where the level changed:

1. **Locate**: E-divisive means (Matteson & James 2014), the algorithm of Apache Otava
   (formerly Hunter) and of MongoDB's signal-processing-algorithms: in a stretch of runs, the
   split that maximizes the energy statistic Q-hat between the runs before and after it, on
   the runs' log levels. Implemented here (`_e_divisive_split`, after Otava's
   change_point_divisive/calculator.py) because neither package installs beside bakeoff's
   pinned numpy 2.4 / scipy 1.17: apache-otava 0.8 pins numpy 2.2 and scipy < 1.17 and brings
   BigQuery, Slack and PostgreSQL clients; signal-processing-algorithms 2.1 needs numpy < 2.
2. **Confirm** with each run's own uncertainty and the run-to-run spread (the model of
   bakeoff/stats/drift.py): run i's log level (the median of its trials) has variance
   se_i^2 + sigma^2, se_i from its own trials, sigma the series' run-to-run spread (Paule-
   Mandel: the runs' weighted scatter about their segments' levels less what their own
   errors explain, `_spread2`). Before and after are weighted means (weights
   1 / (se_i^2 + sigma^2)); their difference over its SE, the scale estimated from the
   runs' residuals at that split, is a t statistic. Its p comes from stretches of runs that
   did not change, drawn from those very variances (normal on log scale), the largest |t|
   over every allowed split taken in each: choosing the split is paid for, and a run that
   merely drifts by its spread is what the null is made of. A change is kept when p <=
   ALPHA; the stretch is split there and both halves searched again (binary segmentation, as
   Otava).

   Why drawn and not shuffled (Otava's permutation test): with a step a few runs before the
   end, shuffling the runs puts 3 of the few changed ones at the end often enough (10
   shuffles in 2300 at 5 of 25) that a shuffled stretch shows a step nearly as large as the
   real one more often than ALPHA allows, unless the step stands far above the scatter; on
   this machine's ratio series drawing found a +10% step within 5 runs in 25 of 40 cases,
   shuffling in 17 (docs/CHANGE-POINTS.md).

Figures of what this achieves on this machine (false alarms on A/A histories, detection of an
injected 10% step): docs/CHANGE-POINTS.md, from bakeoff/history/changes_selftest.py.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from bakeoff.core import lazy
from bakeoff.stats import distributions, verdicts

FloatArray = npt.NDArray[np.float64]

# A change needs this many runs on each side: one or two runs after a step cannot be told
# from one run that drifted (two runs of a drifting machine agree often enough).
MIN_RUNS_BEFORE: Final = 3
MIN_RUNS_AFTER: Final = 3
# The p a change must reach: Otava's default max_pvalue. 0.002 and 0.005 found a +10% step
# a little sooner and raised false alarms on this machine's ratio series to 0.75 and 1.75
# per 500 runs (docs/CHANGE-POINTS.md), past the goal of 1.
ALPHA: Final = 0.001
# The least change of level kept, however sure: the band within which bakeoff calls two
# figures equivalent (and Perfherder's default alert threshold). A tight series makes shifts
# far below it significant: real, and nothing a reader acts on (docs/CHANGE-POINTS.md).
MIN_CHANGE: Final = verdicts.DEFAULT_THRESHOLD
NULL_DRAWS: Final = 1999  # p resolves to 1/2000, below ALPHA
CONFIDENCE: Final = 0.95
# One fixed seed: the same history always gives the same change points.
_SEED: Final = 20261127
# A variance floor on log scale, so runs of identical values (no spread at all) still weigh
# something finite; far below any timer's resolution.
_VAR_FLOOR: Final = 1e-18


@dataclass(frozen=True)
class RunPoint:
    """One run of one series: its trial-level values (one figure per trial)."""

    run_id: str
    when: str  # ISO time the run started
    labels: dict[str, str]  # e.g. {"commit": "abc123"}
    values: tuple[float, ...]


def round_ratios(values: Mapping[int, float], base: Mapping[int, float]) -> list[float]:
    """A variant's figures over its baseline's, each trial over the baseline's trial of the same
    round of the same run (a round runs every case once, interleaved): the machine's drift
    within a run hits both alike and cancels. Rounds the baseline did not measure (or measured
    as 0) have no ratio. Keyed by round: values[round] -> values[round] / base[round]."""
    return [v / base[r] for r, v in values.items() if base.get(r)]


@dataclass(frozen=True)
class Level:
    """A series' level over a stretch of runs: the pooled median of their trials and a 95% CI
    that allows for each run's own error and the run-to-run spread."""

    median: float
    ci_low: float
    ci_high: float
    runs: int


@dataclass(frozen=True)
class ChangePoint:
    """The level changed between run index - 1 and run `index`."""

    index: int  # the first run after the change
    before: Level  # from the previous change point (or the first run) to index - 1
    after: Level  # from index to the next change point (or the last run)
    ratio: float  # after.median / before.median
    ratio_ci_low: float
    ratio_ci_high: float
    p_value: float  # p (simulated null) when the change was accepted (<= alpha)
    spread: float  # the run-to-run spread sigma used (SD of a run's log level)
    worse: bool  # the change goes the bad way (slower, for lower_is_better)


@dataclass(frozen=True)
class _Series:
    """Runs' levels on the scale they are compared on (log when every value is positive)."""

    x: FloatArray  # each run's level: median of its (log) trial values
    se2: FloatArray  # each run's own squared standard error of x
    log: bool


def _series(points: Sequence[RunPoint]) -> _Series:
    arrays = [np.asarray(p.values, dtype=float) for p in points]
    for p, a in zip(points, arrays, strict=True):
        if a.size == 0 or not np.all(np.isfinite(a)):
            raise ValueError(f"run {p.run_id}: no values, or a value that is not finite")
    log = all(bool(np.all(a > 0)) for a in arrays)
    scaled = [np.log(a) if log else a for a in arrays]
    # A run's level is the median of its trials (the point every report prints), not their
    # mean: under load one preempted trial of three reads 2x, which moves a mean of logs by
    # log(2) / 3 = +23% and, in four runs of eight, made a level that was never there.
    x = np.array([float(np.median(a)) for a in scaled])
    # A run of one trial shows no spread of its own: it gets the pooled within-run variance
    # of the runs that do (as stats._two_sample does for a side of one trial).
    many = [a for a in scaled if a.size >= 2]
    df = sum(a.size - 1 for a in many)
    pooled = sum(float(((a - a.mean()) ** 2).sum()) for a in many) / df if df else 0.0
    se2 = np.array([float(a.var(ddof=1)) / a.size if a.size >= 2 else pooled
                    for a in scaled])
    return _Series(x, se2, log)


def _e_divisive_splits(x: FloatArray, start: int, end: int) -> list[tuple[int, int]]:
    """E-divisive means' candidates in x[start:end]: the (tau, kappa) maximizing Q-hat, the
    energy distance of x[start:tau] and x[tau:kappa] over start + MIN_RUNS_BEFORE <= tau <=
    kappa - MIN_RUNS_AFTER, kappa <= end (Matteson & James 2014, eq. 6; Otava's
    PairDistanceCalculator); and, when kappa < end, the best tau with kappa = end too: a
    stretch of drifted runs in the middle can win Q-hat and fail the test while a step
    before the newest runs, over the whole stretch, would pass. None when no split is
    allowed or every run is equal."""
    seg = x[start:end]
    n = seg.size
    if n < MIN_RUNS_BEFORE + MIN_RUNS_AFTER:
        return []
    dist = np.abs(seg[:, None] - seg[None, :])
    if not np.any(dist > 0):
        return []
    # s[i, j] = sum of dist[:i, :j]: any block's sum in O(1).
    s = np.zeros((n + 1, n + 1))
    s[1:, 1:] = dist.cumsum(0).cumsum(1)

    def block(a: npt.NDArray[np.int_], b: npt.NDArray[np.int_], c: npt.NDArray[np.int_],
              d: npt.NDArray[np.int_]) -> FloatArray:
        return np.asarray(s[b, d] - s[a, d] - s[b, c] + s[a, c], dtype=float)

    tau = np.arange(MIN_RUNS_BEFORE, n - MIN_RUNS_AFTER + 1)[:, None]
    kappa = np.arange(MIN_RUNS_BEFORE + MIN_RUNS_AFTER, n + 1)[None, :]
    tau, kappa = np.broadcast_arrays(tau, kappa)
    ok = kappa - tau >= MIN_RUNS_AFTER
    kappa = np.where(ok, kappa, tau + MIN_RUNS_AFTER)  # placeholders, masked below
    zero = np.zeros_like(tau)
    nx, ny = tau.astype(float), (kappa - tau).astype(float)
    between = block(zero, tau, tau, kappa)
    within_x = block(zero, tau, zero, tau) / 2
    within_y = block(tau, kappa, tau, kappa) / 2
    q = (2 / (nx + ny) * between - 2 * ny / ((nx + ny) * (nx - 1)) * within_x
         - 2 * nx / ((nx + ny) * (ny - 1)) * within_y)
    q = np.where(ok, q, -np.inf)
    i, j = np.unravel_index(int(np.argmax(q)), q.shape)
    best = [(start + int(tau[i, j]), start + int(kappa[i, j]))]
    if best[0][1] < end:
        whole = int(np.argmax(q[:, -1]))  # the last column: kappa = end
        best.append((start + int(tau[whole, -1]), end))
    return best


def _segments(bounds: Sequence[int], n: int) -> list[tuple[int, int]]:
    edges = [0, *sorted(bounds), n]
    return list(itertools.pairwise(edges))


def _spread2(s: _Series, bounds: Sequence[int]) -> tuple[float, int]:
    """(sigma^2, its degrees of freedom): the run-to-run variance that, added to each run's
    own se_i^2, makes the runs' weighted scatter about their segments' weighted means what
    chance gives, sum w_i (x_i - mean_w)^2 = df with w_i = 1 / (se_i^2 + sigma^2) (the
    Paule-Mandel estimator of random-effects meta-analysis); 0 when the runs' own errors
    already explain it.

    Not the plain moment (scatter less the mean se_i^2): under load the runs' own errors
    differ by 10x and more (one preempted trial of three widens a run's), so the mean se_i^2
    is that of the few wide runs, it cancelled the whole scatter, and a run whose trials all
    sat 35% high together (tight, off by 8 of its SEs) weighed as if the machine never drifted
    between runs: with 4 such runs against 4 it raised a false change at p = 0.001 in the
    suite's history test (docs/RELIABILITY.md). Weighted, a tight run off by more than its
    error is what sigma measures."""
    segs = _segments(bounds, s.x.size)
    df = s.x.size - len(segs)
    if df <= 0:
        return 0.0, 0
    se2 = np.maximum(s.se2, _VAR_FLOOR)

    def excess(sigma2: float) -> float:
        w = 1 / (se2 + sigma2)
        q = 0.0
        for a, b in segs:
            wa, xa = w[a:b], s.x[a:b]
            q += float((wa * (xa - (wa * xa).sum() / wa.sum()) ** 2).sum())
        return q - df

    if excess(0.0) <= 0:
        return 0.0, df
    # At sigma^2 = the plain scatter ss / df every weight is below df / ss, so the weighted
    # scatter (about the weighted means, no more than about the plain ones) is below df.
    high = sum(float(((s.x[a:b] - s.x[a:b].mean()) ** 2).sum()) for a, b in segs) / df
    sigma2 = lazy.load("scipy.optimize").brentq(excess, 0.0, high, xtol=1e-12, rtol=1e-6)
    return float(sigma2), df


def _t_scan(x: FloatArray, var: FloatArray) -> FloatArray:
    """|t| of after-minus-before at every allowed split of each row (rows: stretches of runs,
    observed or drawn); column j is the split before run MIN_RUNS_BEFORE + j. Weighted least
    squares: run i weighs 1 / var_i, and the scale is estimated from the residuals about the
    two sides' means at that very split, so a stretch whose runs scatter wider than var says
    (drift the spread did not catch) is judged against its own scatter."""
    w = 1 / var
    cw, cwx, cwxx = (np.cumsum(w, axis=-1), np.cumsum(w * x, axis=-1),
                     np.cumsum(w * x * x, axis=-1))
    m = x.shape[-1]
    cut = slice(MIN_RUNS_BEFORE - 1, m - MIN_RUNS_AFTER)
    w_b, wx_b, wxx_b = cw[..., cut], cwx[..., cut], cwxx[..., cut]
    w_a, wx_a, wxx_a = (cw[..., -1:] - w_b, cwx[..., -1:] - wx_b, cwxx[..., -1:] - wxx_b)
    diff = wx_a / w_a - wx_b / w_b
    rss = np.maximum(wxx_b - wx_b ** 2 / w_b + wxx_a - wx_a ** 2 / w_a, 0.0)
    scale2 = np.maximum(rss / (m - 2), _VAR_FLOOR)
    return np.asarray(np.abs(diff) / np.sqrt(scale2 * (1 / w_a + 1 / w_b)), dtype=float)


def _null_p(x: FloatArray, var: FloatArray, split: int, rng: np.random.Generator) -> float:
    """P of a |t| at least the one at `split` (an index into x) anywhere in a stretch of
    runs that did not change: NULL_DRAWS such stretches drawn from the runs' own variances
    (normal on log scale, run i with var_i = se_i^2 + sigma^2), each one's largest |t|."""
    observed = float(_t_scan(x, var)[split - MIN_RUNS_BEFORE])
    drawn = rng.standard_normal((NULL_DRAWS, x.size)) * np.sqrt(var)
    null = _t_scan(drawn, np.broadcast_to(var, drawn.shape)).max(axis=1)
    # A tolerance so float noise of equal statistics (identical runs) counts as "as large".
    return float((1 + np.count_nonzero(null >= observed * (1 - 1e-9))) / (NULL_DRAWS + 1))


def _run_vars(s: _Series, sigma2: float) -> FloatArray:
    return np.maximum(s.se2 + sigma2, _VAR_FLOOR)


def _weighted_mean(x: FloatArray, var: FloatArray) -> tuple[float, float]:
    """The mean of x weighted by 1 / var, and that mean's variance."""
    w = 1 / var
    return float((w * x).sum() / w.sum()), float(1 / w.sum())


def _large_enough(s: _Series, a: int, split: int, kappa: int, var: FloatArray) -> bool:
    """The level after the split (to kappa) differs from the one before it (from a) by
    MIN_CHANGE or more: weighted means, on log scale a ratio, else relative to the mean
    before."""
    before, _ = _weighted_mean(s.x[a:split], var[a:split])
    after, _ = _weighted_mean(s.x[split:kappa], var[split:kappa])
    if s.log:
        return abs(after - before) >= math.log1p(MIN_CHANGE)
    return before == 0 or abs(after - before) >= MIN_CHANGE * abs(before)


def _find(s: _Series, alpha: float) -> list[tuple[int, float]]:
    """Binary segmentation: (index, p) of every accepted change, in index order."""
    rng = np.random.default_rng(_SEED)
    found: list[tuple[int, float]] = []
    searched: set[tuple[int, int]] = set()  # stretches already found to hold no change
    while True:
        best: tuple[float, int] | None = None
        for a, b in _segments([i for i, _ in found], s.x.size):
            if (a, b) in searched:
                continue
            candidates = _e_divisive_splits(s.x, a, b)
            tested = []
            for split, kappa in candidates:
                # The test looks at the runs E-divisive compared: a..kappa-1. Runs after
                # kappa may sit at yet another level (a step back), which would blur this one.
                bounds = [i for i, _ in found] + [split] + ([kappa] if kappa < b else [])
                var = _run_vars(s, _spread2(s, bounds)[0])
                # Bonferroni over the candidates tested: each is one more look.
                p = min(1.0, _null_p(s.x[a:kappa], var[a:kappa], split - a, rng)
                        * len(candidates))
                if not _large_enough(s, a, split, kappa, var):
                    p = 1.0
                tested.append((p, split))
            if not tested or min(tested)[0] > alpha:
                searched.add((a, b))
            elif best is None or min(tested) < best:
                best = min(tested)
        if best is None:
            return found
        found = sorted([*found, (best[1], best[0])])


def _level(s: _Series, points: Sequence[RunPoint], a: int, b: int, var: FloatArray,
           df: int) -> tuple[Level, float, float]:
    """The Level of runs a..b-1, and its weighted mean and that mean's variance."""
    mean, var_mean = _weighted_mean(s.x[a:b], var[a:b])
    pooled = np.concatenate([np.asarray(p.values, dtype=float) for p in points[a:b]])
    median = float(np.median(pooled))
    half = _t(df) * math.sqrt(var_mean)
    # Centred on the pooled median it is printed beside (estimate ± t·SE, as stats' every
    # interval): the point lies inside, never at an end.
    if s.log and median > 0:
        lo, hi = median * math.exp(-half), median * math.exp(half)
    else:
        lo, hi = median - half, median + half
    return Level(median, lo, hi, b - a), mean, var_mean


def _t(df: int) -> float:
    if df <= 0:
        return math.inf
    return distributions.t_ppf(0.5 + CONFIDENCE / 2, df)


def change_points(points: Sequence[RunPoint], lower_is_better: bool = True,
                  alpha: float = ALPHA) -> list[ChangePoint]:
    """Where the level of this series changed, oldest first. `points` are one series' runs
    in the order they ran; fewer than MIN_RUNS_BEFORE + MIN_RUNS_AFTER runs give none. alpha:
    the p a change must reach (smaller: fewer false alarms, later detection)."""
    if len(points) < MIN_RUNS_BEFORE + MIN_RUNS_AFTER:
        return []
    if not 0 < alpha < 1:
        raise ValueError(f"alpha {alpha}: give a probability between 0 and 1, e.g. {ALPHA}")
    s = _series(points)
    found = _find(s, alpha)
    bounds = [i for i, _ in found]
    sigma2, df = _spread2(s, bounds)
    var = _run_vars(s, sigma2)
    edges = [0, *bounds, s.x.size]
    out = []
    for k, (index, p) in enumerate(found):
        before, m_b, v_b = _level(s, points, edges[k], index, var, df)
        after, m_a, v_a = _level(s, points, index, edges[k + 2], var, df)
        ratio = after.median / before.median if before.median != 0 else math.nan
        half = _t(df) * math.sqrt(v_a + v_b)
        if s.log:
            lo, hi = math.exp(m_a - m_b - half), math.exp(m_a - m_b + half)
        elif m_b > 0:
            # Linear scale (a value <= 0 somewhere): the difference's CI over the level before.
            lo, hi = 1 + (m_a - m_b - half) / m_b, 1 + (m_a - m_b + half) / m_b
        else:
            lo, hi = -math.inf, math.inf
        if math.isfinite(ratio):
            lo, hi = min(lo, ratio), max(hi, ratio)
        out.append(ChangePoint(
            index=index, before=before, after=after, ratio=ratio, ratio_ci_low=lo,
            ratio_ci_high=hi, p_value=p, spread=math.sqrt(sigma2),
            worse=(after.median > before.median) == lower_is_better))
    return out
