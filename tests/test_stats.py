"""The statistics against known values and by simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bakeoff.stats import distributions, verdicts
from bakeoff.stats import estimates as stats


def _draw(rng: np.random.Generator, median: float, trials: int, samples: int) -> list[np.ndarray]:
    # Log-normal samples with a per-trial offset: trials differ more than samples within one,
    # as processes do on a real machine.
    out = []
    for _ in range(trials):
        trial_shift = rng.normal(0.0, 0.05)
        out.append(median * np.exp(trial_shift + rng.normal(0.0, 0.1, size=samples)))
    return out


def test_summary_of_known_values() -> None:
    rng = np.random.default_rng(1)
    s = stats.summarize([[1.0, 2.0, 3.0], [4.0, 5.0]], rng)
    assert s.n == 5 and s.n_trials == 2
    assert s.median == 3.0
    assert s.mean == 3.0
    assert s.min == 1.0 and s.max == 5.0
    assert s.mad == 1.0  # |x - 3| = 2,1,0,1,2 -> median 1
    assert s.stddev == pytest.approx(math.sqrt(2.5))
    assert s.p5 == pytest.approx(1.2) and s.p95 == pytest.approx(4.8)
    assert s.ci_low <= s.median <= s.ci_high


def test_single_trial_ci_collapses_to_the_median() -> None:
    s = stats.summarize([[5.0, 6.0, 7.0]], np.random.default_rng(0))
    assert s.ci_low == s.ci_high == 6.0


def test_empty_input_is_an_error() -> None:
    with pytest.raises(ValueError):
        stats.summarize([[], []], np.random.default_rng(0))


def test_bootstrap_ci_covers_the_true_median_in_most_draws() -> None:
    rng = np.random.default_rng(42)
    true_median = 100.0
    draws = 200
    covered = 0
    for _ in range(draws):
        s = stats.summarize(_draw(rng, true_median, trials=10, samples=10), rng, n_boot=500)
        covered += s.ci_low <= true_median <= s.ci_high
    # A 95% percentile bootstrap with 10 clusters undercovers a little (~92% here); far
    # under would mean the CI ignores the between-trial spread, ~100% that it is too wide.
    assert 0.87 <= covered / draws <= 0.99, covered / draws


@pytest.mark.slow(live=False)
def test_ratio_ci_covers_a_known_ratio() -> None:
    rng = np.random.default_rng(7)
    draws = 200
    covered = 0
    for _ in range(draws):
        base = _draw(rng, 100.0, trials=10, samples=10)
        variant = _draw(rng, 80.0, trials=10, samples=10)
        r = stats.ratio_of_medians(variant, base, rng, n_boot=500)
        covered += r.ci_low <= 0.8 <= r.ci_high
    assert 0.87 <= covered / draws <= 0.99, covered / draws


def test_ratio_point_value_and_test() -> None:
    rng = np.random.default_rng(3)
    base = [[10.0, 10.0], [10.0, 10.0], [10.0, 10.0], [10.0, 10.0], [10.0, 10.0]]
    fast = [[5.0, 5.0], [5.0, 5.0], [5.0, 5.0], [5.0, 5.0], [5.0, 5.0]]
    r = stats.ratio_of_medians(fast, base, rng)
    # No spread: the interval is the point (reports say "the same in every trial").
    assert r.ratio == pytest.approx(0.5) and r.ci_low == r.ratio == r.ci_high
    assert r.p_value < 0.01  # 5 vs 5 trials, complete separation: exact p = 2/252
    same = stats.ratio_of_medians(base, base, rng)
    assert same.p_value == 1.0


def test_mann_whitney_needs_two_trials_each() -> None:
    assert math.isnan(stats.mann_whitney_p([[1.0, 2.0]], [[3.0], [4.0]]))


def test_distributions_give_scipy_stats_figures() -> None:
    """bakeoff/stats/distributions.py calls scipy.special where scipy.stats does (and has
    its own Mann-Whitney U, so that no run loads scipy.stats): the same figures, to the last
    few ulps, on drawn arguments; the rank test's with ties, on small and large samples."""
    import scipy.stats as st

    rng = np.random.default_rng(37)
    dfs = [*range(1, 40), *rng.uniform(0.5, 400, 200), 1e6, math.inf]
    for df in dfs:
        for p in (0.6, 0.9, 0.975, 0.995):
            assert distributions.t_ppf(p, df) == pytest.approx(float(st.t.ppf(p, df)), rel=1e-13)
        for x in (0.0, 0.4, 2.5, 9.0, 40.0):
            assert distributions.t_sf(x, df) == pytest.approx(float(st.t.sf(x, df)), rel=1e-12)
            if df < math.inf:
                assert distributions.chi2_sf(x, df) == pytest.approx(float(st.chi2.sf(x, df)),
                                                                     rel=1e-12)
    for p in (0.9, 0.975, 1 - 0.05 / 40, 1 - 1e-9):
        assert distributions.norm_ppf(p) == pytest.approx(float(st.norm.ppf(p)), rel=1e-13)
    exact = asymptotic = 0
    for _ in range(1500):
        n1, n2 = (int(n) for n in rng.integers(2, 16, 2))
        if rng.random() < 0.3:  # ties
            x = [float(v) for v in rng.integers(0, 5, n1)]
            y = [float(v) for v in rng.integers(0, 5, n2)]
        else:
            x = [float(v) for v in rng.lognormal(0, 0.3, n1)]
            y = [float(v) for v in rng.lognormal(rng.normal(0, 0.3), 0.3, n2)]
        if len({*x, *y}) == 1:
            continue
        want = float(st.mannwhitneyu(x, y, alternative="two-sided").pvalue)
        assert distributions.mann_whitney_p(x, y) == pytest.approx(want, rel=1e-12, abs=1e-300)
        if min(n1, n2) <= 8 and len({*x, *y}) == n1 + n2:
            exact += 1
        else:
            asymptotic += 1
    assert exact > 300 and asymptotic > 300  # both of scipy's methods were compared
    tied = [2.0, 2.0, 2.0]
    assert distributions.mann_whitney_p(tied, tied) == float(
        st.mannwhitneyu(tied, tied, alternative="two-sided").pvalue) == 1.0


def test_crossover_between_two_points() -> None:
    xs = [4096.0, 65536.0, 262144.0, 1048576.0]
    ratios = [30.0, 2.0, 0.25, 0.1]
    cis_lo = [25.0, 1.5, 0.2, 0.08]
    cis_hi = [35.0, 2.5, 0.3, 0.12]
    found = stats.find_crossovers(xs, ratios, cis_lo, cis_hi)
    assert len(found) == 1
    c = found[0]
    assert (c.low, c.high) == (65536.0, 262144.0)
    assert c.direction == "starts_winning"
    assert c.confident
    # log-log interpolation: log2 ratio goes 1 -> -2, crossing 1/3 of the way in log x.
    assert c.estimate == pytest.approx(65536.0 * 4 ** (1 / 3))
    assert c.low < c.estimate < c.high


def test_crossover_not_confident_when_ci_spans_one() -> None:
    found = stats.find_crossovers([1.0, 2.0], [1.05, 0.95], [0.9, 0.8], [1.2, 1.1])
    assert len(found) == 1 and not found[0].confident


def test_no_crossover_when_always_winning_and_direction_for_higher_is_better() -> None:
    assert stats.find_crossovers([1.0, 2.0, 3.0], [0.5, 0.4, 0.3], [0.4] * 3, [0.6] * 3) == []
    # For a throughput (higher is better) a ratio above 1 wins.
    found = stats.find_crossovers([1.0, 2.0], [0.5, 2.0], [0.4, 1.8], [0.6, 2.2],
                                  lower_is_better=False)
    assert found[0].direction == "starts_winning"


def test_crossover_rejects_unsorted_axis() -> None:
    with pytest.raises(ValueError):
        stats.find_crossovers([2.0, 1.0], [2.0, 0.5], [1.0, 0.4], [3.0, 0.6])


def test_holm_adjusts_in_step_down_order() -> None:
    adjusted = stats.holm([0.01, 0.04, 0.03, math.nan])
    # m = 3 real tests: 0.01*3, then max(0.03, 0.03*2), then max(0.06, 0.04*1).
    assert adjusted[:3] == pytest.approx([0.03, 0.06, 0.06])
    assert math.isnan(adjusted[3])


@pytest.mark.slow(live=False)
def test_verdict_same_for_one_distribution_and_faster_for_a_10pct_shift() -> None:
    rng = np.random.default_rng(2024)
    draws = 100
    same = faster = 0
    for _ in range(draws):
        # "Enough samples": 20 trials a side, each 10 samples, trial-to-trial spread ~5%.
        base = _draw(rng, 100.0, trials=20, samples=10)
        twin = _draw(rng, 100.0, trials=20, samples=10)
        quick = _draw(rng, 90.0, trials=20, samples=10)
        r_same = stats.ratio_of_medians(twin, base, rng, n_boot=400)
        r_fast = stats.ratio_of_medians(quick, base, rng, n_boot=400)
        p_same, p_fast = stats.holm([r_same.p_boot]), stats.holm([r_fast.p_boot])
        same += stats.verdict(r_same, p_same[0], lower_is_better=True) in stats.NO_DIFFERENCE
        faster += stats.verdict(r_fast, p_fast[0], lower_is_better=True) == "faster"
    assert same / draws >= 0.9, same
    assert faster / draws >= 0.9, faster


def test_verdict_needs_the_ci_beyond_the_threshold() -> None:
    tiny = stats.Ratio(ratio=0.99, ci_low=0.985, ci_high=0.995, p_value=0.001)
    # The whole CI within ±2%: a claim that any difference is smaller than that.
    assert stats.verdict(tiny, 0.001, lower_is_better=True, threshold=0.02) == "equivalent"
    assert stats.verdict(tiny, 0.5, lower_is_better=True, threshold=0.02) == "equivalent"
    # Reaching past the threshold on one side: neither shown, nor its absence.
    wide = stats.Ratio(ratio=0.99, ci_low=0.97, ci_high=1.01, p_value=0.3)
    assert stats.verdict(wide, 0.3, lower_is_better=True, threshold=0.02) == "inconclusive"
    assert stats.verdict(tiny, 0.001, lower_is_better=True, threshold=0.001) == "faster"
    big = stats.Ratio(ratio=1.5, ci_low=1.4, ci_high=1.6, p_value=0.001)
    assert stats.verdict(big, 0.001, lower_is_better=True) == "slower"
    assert stats.verdict(big, 0.001, lower_is_better=False) == "faster"
    assert stats.verdict(big, 0.2, lower_is_better=True) == "inconclusive"  # not significant


def test_verdict_has_three_states_and_an_open_one_says_what_settles_it() -> None:
    """faster/slower, equivalent, inconclusive: never "same". An inconclusive CI says how
    many times the trials would bring it to the width that decides, toward the side its
    point leans to; a point on the band's edge gets no number."""
    assert set(verdicts.VERDICTS) == {"faster", "slower", "equivalent", "inconclusive"}
    r = stats.Ratio
    assert verdicts.verdict(r(1.5, 1.4, 1.6, 0.0), 0.001, True) == "slower"
    assert verdicts.verdict(r(0.6, 0.5, 0.7, 0.0), 0.001, True) == "faster"
    assert verdicts.verdict(r(1.0, 0.99, 1.01, 0.0), 0.5, True) == "equivalent"
    # The CI of 0.47-1.23: nothing either way.
    wide = r(0.76, 0.47, 1.23, 0.5)
    assert verdicts.verdict(wide, 0.5, True) == "inconclusive"
    # Leaning to a difference: 1.10 with a CI of ±8% needs the CI to clear 1.02.
    lean = r(1.10, 1.10 / 1.08, 1.10 * 1.08, 0.1)
    assert verdicts.verdict(lean, 0.1, True) == "inconclusive"
    s = verdicts.to_settle(lean, 0.02)
    assert s is not None and s.toward == "different"
    # Half-width log(1.08) against log(1.10) - log(1.02): about 1.0x the trials... so more.
    expected = (math.log(1.08) / (math.log(1.10) - math.log(1.02))) ** 2
    assert s.factor == pytest.approx(expected)
    assert s.more(10) == max(11, math.ceil(10 * expected))
    # Holm over 25 tests asks more of the same CI.
    s25 = verdicts.to_settle(lean, 0.02, tests=25)
    assert s25 is not None and s25.factor > s.factor
    # Leaning to equivalence: 1.005 with ±3%: must fit inside ±2% from the point.
    eq = verdicts.to_settle(r(1.005, 1.005 / 1.03, 1.005 * 1.03, 0.5), 0.02)
    assert eq is not None and eq.toward == "equivalent" and eq.factor > 1
    assert "trials a side would settle it" in eq.words(5)
    # On the edge: no number of trials is advice.
    edge = verdicts.to_settle(r(1.02, 1.0, 1.04, 0.1), 0.02)
    assert edge is not None and edge.more(5) is None and "edge" in edge.words(5)
    assert verdicts.to_settle(r(1.0, 0.0, 2.0, 0.5), 0.02) is None  # no log CI


def test_hodges_lehmann_and_cliffs_delta_on_known_shift() -> None:
    rng = np.random.default_rng(5)
    base = [[10.0 + i] for i in range(8)]
    shifted = [[7.0 + i] for i in range(8)]
    hl = stats.hodges_lehmann(shifted, base, rng)
    assert hl.estimate == -3.0
    assert hl.ci_low <= -3.0 <= hl.ci_high
    assert stats.cliffs_delta([[1.0, 2.0]], [[3.0, 4.0]]) == -1.0
    assert stats.cliffs_delta([[3.0, 4.0]], [[1.0, 2.0]]) == 1.0
    assert stats.cliffs_delta([[1.0, 2.0]], [[1.0, 2.0]]) == 0.0


def test_outliers_are_counted() -> None:
    values = [[10.0, 10.5, 9.5, 10.2, 9.8, 10.1, 9.9, 10.0, 100.0, 0.0]]
    o = stats.outliers(values)
    assert (o.tukey_low, o.tukey_high) == (1, 1)
    assert o.mad == 2


def test_line_fit_recovers_known_intercept_and_slope() -> None:
    rng = np.random.default_rng(9)
    xs = [0.0, 50.0, 500.0, 1000.0, 5000.0]
    # variant - baseline = 2000 + 3 x (ns), with noise.
    base = [_draw(rng, 10_000.0, trials=8, samples=20) for _ in xs]
    var = [[t + 2000.0 + 3.0 * x for t in _draw(rng, 10_000.0, trials=8, samples=20)] for x in xs]
    fit = stats.fit_difference_line(xs, var, base, rng, n_boot=300)
    assert fit.a_low <= 2000.0 <= fit.a_high
    assert fit.b_low <= 3.0 <= fit.b_high
    assert fit.r2 > 0.9 and fit.n_points == 5


def test_crossover_at_an_overhead_level() -> None:
    # Overhead shrinks as the traced function gets longer: ratio 2.0, 1.1, 1.02, 1.001.
    xs = [0.0, 10.0, 100.0, 1000.0]
    ratios = [2.0, 1.1, 1.02, 1.001]
    found = stats.find_crossovers(xs, ratios, [r * 0.99 for r in ratios],
                                  [r * 1.005 for r in ratios], level=1.05)
    assert [(c.low, c.high, c.direction, c.level) for c in found] == [
        (10.0, 100.0, "starts_winning", 1.05)]
    assert 10.0 < found[0].estimate < 100.0


def test_no_ratio_to_a_zero_baseline() -> None:
    with pytest.raises(ValueError, match="median is 0"):
        stats.ratio_of_medians([[1.0, 2.0]], [[0.0, 0.0]], np.random.default_rng(0))


def test_bootstrap_p_is_small_for_a_clear_difference_and_large_for_none() -> None:
    rng = np.random.default_rng(12)
    base = _draw(rng, 100.0, trials=5, samples=10)
    # A clear 3x difference with 5 trials a side: small enough to survive Holm over 25 cells,
    # which no rank test on 5 trials can (its smallest p is 2/252).
    fast = _draw(rng, 33.0, trials=5, samples=10)
    r = stats.ratio_of_medians(fast, base, rng)
    assert r.p_boot * 25 < 0.05
    assert r.p_value >= 2 / 252
    twin = _draw(rng, 100.0, trials=5, samples=10)
    assert stats.ratio_of_medians(twin, base, rng).p_boot > 0.05


def test_trials_kept_as_quantiles_give_the_exact_statistics_within_their_rank_step() -> None:
    """A trial with more than SKETCH_POINTS samples keeps that many quantiles: min, median,
    max exact per trial, and pooled quantiles within one quantile step of rank."""
    rng = np.random.default_rng(7)
    trials = [rng.lognormal(5.0, 0.4, size=200_000) for _ in range(5)]
    kept = [stats.sketch(t) for t in trials]
    assert all(k is not None and len(k) == stats.SKETCH_POINTS for k in kept)
    assert stats.sketch(trials[0][: stats.SKETCH_POINTS]) is None  # small trials stay whole
    for t, k in zip(trials, kept, strict=True):
        assert k is not None
        assert (k[0], k[len(k) // 2], k[-1]) == (t.min(), float(np.median(t)), t.max())
    exact = np.concatenate(trials)
    approx = stats.summarize([k for k in kept if k is not None], np.random.default_rng(1))
    step = 1.0 / (stats.SKETCH_POINTS - 1)
    for q, value in ((0.5, approx.median), (0.05, approx.p5), (0.95, approx.p95)):
        rank = float(np.mean(exact <= value))
        assert abs(rank - q) <= step, (q, rank)
    assert approx.mean == pytest.approx(exact.mean(), rel=0.01)  # the tails weigh a little more
    # Outlier counts are of samples measured, not of quantiles kept.
    whole = stats.outliers(trials)
    counted = stats.outliers([k for k in kept if k is not None],
                             [t.size / stats.SKETCH_POINTS for t in trials])
    assert counted.tukey_high == pytest.approx(whole.tukey_high, rel=0.05)


def _host_ratio(rng: np.random.Generator, level: float, ratio: float, spread: float,
                trials: int = 10) -> stats.Ratio:
    """One host's run: its own absolute level and noise, the variant at `ratio` of its baseline."""
    def draw(median: float) -> list[np.ndarray]:
        return [median * np.exp(rng.normal(0.0, spread) + rng.normal(0.0, 0.1, size=10))
                for _ in range(trials)]
    return stats.ratio_of_medians(draw(level * ratio), draw(level), rng, n_boot=500)


@pytest.mark.parametrize("trials", [5, 10])
@pytest.mark.slow(live=False)
def test_heterogeneity_false_alarm_rate_when_every_host_has_the_same_ratio(trials: int) -> None:
    # Hosts differ in speed (one twice as slow) and in noise, but not in the ratio: "differs"
    # must be rare: near the nominal 5% (200 draws: ±3% is noise); near 0 would mean a test
    # that never fires. Without the small-sample widening, 5 trials gave 10-15%.
    rng = np.random.default_rng(11)
    draws = 200
    hosts = [(100.0, 0.05), (200.0, 0.08), (50.0, 0.03)]
    for k in (2, 3):
        alarms = sum(
            stats.heterogeneity([_host_ratio(rng, level, 0.8, spread, trials)
                                 for level, spread in hosts[:k]], [trials] * k).p_value < 0.05
            for _ in range(draws))
        assert 0.01 <= alarms / draws <= 0.085, (trials, k, alarms / draws)


def test_heterogeneity_finds_a_host_whose_ratio_differs() -> None:
    rng = np.random.default_rng(12)
    draws = 100
    found = sum(stats.heterogeneity([_host_ratio(rng, 100.0, 0.8, 0.05),
                                     _host_ratio(rng, 100.0, 0.6, 0.05)], [10, 10]).p_value < 0.05
                for _ in range(draws))
    assert found / draws >= 0.9, found / draws


def test_heterogeneity_needs_two_usable_estimates() -> None:
    r = stats.Ratio(0.5, 0.4, 0.6, math.nan)
    assert math.isnan(stats.heterogeneity([r]).p_value)
    unbounded = stats.Ratio(0.5, 0.4, math.inf, math.nan)
    assert math.isnan(stats.heterogeneity([r, unbounded]).p_value)
    # Two exact (zero-width) ratios that differ: the floor on the SE keeps them different.
    a, b = stats.Ratio(0.5, 0.5, 0.5, math.nan), stats.Ratio(0.6, 0.6, 0.6, math.nan)
    assert stats.heterogeneity([a, b]).p_value < 1e-6


def test_paired_ratio_cancels_what_a_trial_shares() -> None:
    # Each trial has its own level (layout, CPU); counting adds 10% within the trial. Paired,
    # the trial's level cancels: the CI is tight around 1.10 and covers it. Resampled as two
    # independent groups, the levels' spread widens the CI several times over.
    rng = np.random.default_rng(3)
    levels = rng.uniform(80, 120, size=8)
    measured = [lvl + rng.normal(0, 0.5, 20) for lvl in levels]
    counted = [1.10 * lvl + rng.normal(0, 0.5, 5) for lvl in levels]
    paired = stats.paired_ratio_of_medians(counted, measured, np.random.default_rng(1))
    apart = stats.ratio_of_medians(counted, measured, np.random.default_rng(1))
    assert paired.ci_low <= 1.10 <= paired.ci_high
    assert paired.ci_high - paired.ci_low < (apart.ci_high - apart.ci_low) / 3
    # The point is the interval's own centre: the geometric mean of the trials' ratios.
    assert paired.ratio == pytest.approx(float(np.exp(np.mean(
        [np.log(np.median(c) / np.median(m)) for c, m in zip(counted, measured, strict=True)]))))
    assert paired.ci_low < paired.ratio < paired.ci_high
    assert paired.p_boot < 0.01 and math.isnan(paired.p_value)


def test_paired_ratio_of_one_trial_and_of_a_zero_denominator() -> None:
    one = stats.paired_ratio_of_medians([[3.0, 3.0]], [[2.0]], np.random.default_rng(0))
    assert (one.ratio, one.ci_low, one.ci_high) == (1.5, 1.5, 1.5)
    with pytest.raises(ValueError, match="median is 0"):
        stats.paired_ratio_of_medians([[1.0], [2.0]], [[0.0], [0.0]], np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"argument 2 is longer"):
        stats.paired_ratio_of_medians([[1.0]], [[1.0], [2.0]], np.random.default_rng(0))


def test_paired_ratio_with_zero_denominators_falls_back_to_the_delta_method() -> None:
    # Two of four trials have a zero denominator: the pooled median is not 0, but no log
    # ratio exists for those trials. The CI is then the delta method's on the trials' ratio of
    # means: finite, around the point, wide (4 trials that disagree), and no numpy warning.
    with np.errstate(all="raise"):
        ratio = stats.paired_ratio_of_medians([[1.0], [2.0], [3.0], [4.0]],
                                              [[0.0], [0.0], [2.0], [2.0]],
                                              np.random.default_rng(0))
    assert math.isfinite(ratio.ci_high) and ratio.ci_high > 2 * ratio.ratio
    assert ratio.ci_low <= 1.0 <= ratio.ci_high
    assert ratio.ci_low <= ratio.ratio


def test_weighted_line_fit_is_not_swamped_by_a_noisy_far_point() -> None:
    # tracing-overhead's shape: the added cost is 2000 ns at every x, known to ±10 ns near 0
    # and to ±100 µs at x = 1000 (wall-clock noise of a long call). An unweighted fit let the
    # far point drag the intercept by tens of µs; weighted, it stays near the precise points.
    rng = np.random.default_rng(4)
    xs = [0.0, 5.0, 50.0, 1000.0]
    spread = [10.0, 20.0, 200.0, 100_000.0]
    base = [[rng.normal(1e6, s, 10) for _ in range(6)] for s in spread]
    var = [[rng.normal(1e6 + 2000.0, s, 10) for _ in range(6)] for s in spread]
    # The far point reads 60 µs too high: one unlucky, contended case.
    var[3] = [t + 60_000.0 for t in var[3]]
    fit = stats.fit_difference_line(xs, var, base)
    assert abs(fit.a - 2000.0) < 50.0
    assert fit.a_low <= 2000.0 <= fit.a_high


def test_paired_difference_cancels_what_a_round_shared() -> None:
    # Each round's machine speed moves both sides alike (±30%); the variant adds 100 ns.
    rng = np.random.default_rng(5)
    speed = rng.uniform(0.7, 1.3, 8)
    base = [rng.normal(1000.0 * s, 2.0, 10) for s in speed]
    var = [rng.normal(1000.0 * s + 100.0, 2.0, 10) for s in speed]
    rounds = list(range(8))
    d = stats.paired_difference(var, base, rounds, rounds)
    assert d is not None
    assert d.ci_low <= d.estimate <= d.ci_high
    assert d.ci_low <= 100.0 <= d.ci_high and d.ci_high - d.ci_low < 10.0
    # Unpaired, the rounds' drift is all spread: far wider.
    hl = stats.hodges_lehmann(var, base)
    assert hl.ci_high - hl.ci_low > 10 * (d.ci_high - d.ci_low)
    # Rounds only one side has are left out; fewer than two in common: nothing to show.
    assert stats.paired_difference(var[:1], base, [0], rounds) is None


def test_a_crossing_reads_the_same_from_the_whole_line_and_from_its_neighbours() -> None:
    """An axis from 0 (tracing-overhead's durations: 0, 5, 50, 500 µs): between two positive
    points the crossing is interpolated on log scale, as from those two points alone (an
    answer asks them; the contrasts ask the whole line, and read 43 µs where it read 34.9)."""
    xs, ratios = [0.0, 5.0, 50.0, 500.0], [80.0, 1.2, 1.004, 1.001]
    lows, highs = [r * 0.99 for r in ratios], [r * 1.01 for r in ratios]
    (whole,) = stats.find_crossovers(xs, ratios, lows, highs, level=1.01)
    (pair,) = stats.find_crossovers(xs[1:3], ratios[1:3], lows[1:3], highs[1:3], level=1.01)
    assert (whole.low, whole.high) == (5.0, 50.0)
    assert whole.estimate == pytest.approx(pair.estimate)
    frac = math.log(1.2 / 1.01) / (math.log(1.2 / 1.01) - math.log(1.004 / 1.01))
    assert whole.estimate == pytest.approx(5.0 * 10 ** frac)
    # Next to 0 there is no log scale: linear there.
    (first,) = stats.find_crossovers(xs[:2], [2.0, 0.5], [1.9, 0.4], [2.1, 0.6])
    assert first.estimate == pytest.approx(2.5)
