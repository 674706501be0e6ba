"""The statistics against known values and by simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bakeoff import stats


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
    # A 95% percentile bootstrap with 10 clusters undercovers a little; well under 80%
    # would mean the CI ignores the between-trial spread.
    assert covered / draws >= 0.85, covered / draws


def test_ratio_ci_covers_a_known_ratio() -> None:
    rng = np.random.default_rng(7)
    draws = 150
    covered = 0
    for _ in range(draws):
        base = _draw(rng, 100.0, trials=10, samples=10)
        variant = _draw(rng, 80.0, trials=10, samples=10)
        r = stats.ratio_of_medians(variant, base, rng, n_boot=500)
        covered += r.ci_low <= 0.8 <= r.ci_high
    assert covered / draws >= 0.85, covered / draws


def test_ratio_point_value_and_test() -> None:
    rng = np.random.default_rng(3)
    base = [[10.0, 10.0], [10.0, 10.0], [10.0, 10.0], [10.0, 10.0], [10.0, 10.0]]
    fast = [[5.0, 5.0], [5.0, 5.0], [5.0, 5.0], [5.0, 5.0], [5.0, 5.0]]
    r = stats.ratio_of_medians(fast, base, rng)
    assert r.ratio == 0.5 and r.ci_low == 0.5 and r.ci_high == 0.5
    assert r.p_value < 0.01  # 5 vs 5 trials, complete separation: exact p = 2/252
    same = stats.ratio_of_medians(base, base, rng)
    assert same.p_value == 1.0


def test_mann_whitney_needs_two_trials_each() -> None:
    assert math.isnan(stats.mann_whitney_p([[1.0, 2.0]], [[3.0], [4.0]]))


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
