"""Change points of a series' history (bakeoff/history/changes.py): the interface's edge
cases, a big step found at its run, and a small replay of real A/A runs of this machine."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bakeoff.history import changes_selftest as st
from bakeoff.history.changes import (
    MIN_CHANGE,
    MIN_RUNS_AFTER,
    MIN_RUNS_BEFORE,
    ChangePoint,
    RunPoint,
    change_points,
)
from bakeoff.store import results as store


def _points(levels: list[float], trials: int = 5, within: float = 0.03,
            seed: int = 0) -> list[RunPoint]:
    rng = np.random.default_rng(seed)
    return [RunPoint(f"r{i}", f"2026-11-27T00:{i % 60:02d}:00", {"commit": f"c{i}"},
                     tuple(float(v) for v in lvl * np.exp(rng.normal(0, within, trials))))
            for i, lvl in enumerate(levels)]


def test_fewer_runs_than_two_sides_need_give_no_change() -> None:
    assert change_points([]) == []
    assert change_points(_points([1.0, 2.0])) == []
    short = _points([1.0] * MIN_RUNS_BEFORE + [2.0] * (MIN_RUNS_AFTER - 1))
    assert change_points(short) == []


def test_constant_values_give_no_change() -> None:
    flat = [RunPoint(f"r{i}", "", {}, (5.0, 5.0, 5.0)) for i in range(20)]
    assert change_points(flat) == []


def test_constant_levels_that_step_are_one_certain_change() -> None:
    pts = [RunPoint(f"r{i}", "", {}, (5.0,) * 3 if i < 8 else (6.0,) * 3) for i in range(16)]
    [cp] = change_points(pts)
    assert cp.index == 8
    assert cp.ratio == 1.2 and cp.ratio_ci_low <= 1.2 <= cp.ratio_ci_high
    assert cp.before.runs == 8 and cp.after.runs == 8
    assert cp.worse  # lower is better by default: 5 -> 6 is worse
    assert not change_points(pts, lower_is_better=False)[0].worse


def test_runs_of_one_trial_are_weighed_with_the_pooled_spread() -> None:
    pts = _points([1.0] * 12 + [1.5] * 12, seed=3)
    single = [RunPoint(p.run_id, p.when, p.labels, p.values[:1]) if i % 2 else p
              for i, p in enumerate(pts)]
    [cp] = change_points(single)
    assert cp.index == 12
    assert all(math.isfinite(v) for v in (cp.ratio_ci_low, cp.ratio_ci_high))
    every_one = [RunPoint(p.run_id, p.when, p.labels, p.values[:1]) for p in pts]
    assert [c.index for c in change_points(every_one)] == [12]


def test_big_step_is_found_at_its_run_with_a_ci_holding_it() -> None:
    levels = [1.0] * 20 + [1.5] * 5
    [cp] = change_points(_points(levels, seed=7))
    assert isinstance(cp, ChangePoint)
    assert cp.index == 20
    assert cp.ratio_ci_low < 1.5 < cp.ratio_ci_high
    assert cp.before.ci_low <= cp.before.median <= cp.before.ci_high
    assert cp.p_value <= 0.001


def test_two_steps_are_both_found() -> None:
    cps = change_points(_points([1.0] * 10 + [1.5] * 10 + [1.0] * 10, seed=11))
    assert [c.index for c in cps] == [10, 20]
    assert cps[0].worse and not cps[1].worse


def test_one_drifted_run_is_not_a_change() -> None:
    levels = [1.0] * 15 + [1.6] + [1.0] * 15
    assert change_points(_points(levels, seed=5)) == []
    # Nor at the end: a step needs MIN_RUNS_AFTER runs to be told from a run that drifted.
    assert change_points(_points([1.0] * 15 + [1.6] * (MIN_RUNS_AFTER - 1), seed=5)) == []


def test_non_positive_values_work_on_the_linear_scale() -> None:
    pts = [RunPoint(f"r{i}", "", {}, (-1.0 + 0.01 * (i % 3), 0.5) if i < 10 else (3.0, 3.1))
           for i in range(20)]
    [cp] = change_points(pts)
    assert cp.index == 10


def test_same_history_same_answer() -> None:
    pts = _points([1.0] * 12 + [1.2] * 8, within=0.08, seed=2)
    assert change_points(pts) == change_points(pts)


# Real A/A runs of this machine (scripts/changes-selftest --collect; docs/CHANGE-POINTS.md):
# the same two awk loops, run after run, under other engineers' load.
AA_FIXTURE = Path(__file__).parent / "fixtures" / "history" / "aa-awk.json"
# The series that docs/CHANGE-POINTS.md measured within the false-alarm goal: the per-round
# ratios of the two commands (each one's own time moves with the machine's load).
QUIET_SERIES = ("cmd/big[] wall_time / small", "cmd/big[] user_time+sys_time / small")


def _series(name: str) -> st.Series:
    return next(s for s in st.load_series(AA_FIXTURE) if s.name == name)


def test_aa_replay_of_real_runs_raises_few_false_changes() -> None:
    # 2 series x 6 histories x 40 runs = 480 A/A runs. At the rate measured on these series
    # (16 in 20000 runs, 0.40 per 500, 95% CI 0.23-0.65; docs/CHANGE-POINTS.md) 0.38 are
    # expected; 4 or more happen with probability 0.07% (0.4% at the CI's top).
    rng = np.random.default_rng(2026)
    false = 0
    for name in QUIET_SERIES:
        runs = _series(name).runs
        for _ in range(6):
            false += len(change_points(st.replay(runs, 40, rng)))
    assert false <= 3


def test_big_injected_step_in_real_runs_is_found_at_its_run() -> None:
    rng = np.random.default_rng(7)
    # Wall time's per-round ratios are heavy-tailed under load (a run's level moved by up to
    # 50% here): a doubling is big for them; 1.5 for CPU time's.
    for name, factor in zip(QUIET_SERIES, (2.0, 1.5), strict=True):
        history = st.replay(_series(name).runs, 30, rng, factor_from=20, factor=factor)
        [cp] = change_points(history)
        assert cp.index == 20 and cp.worse, (name, cp)
        assert cp.ratio_ci_low < factor < cp.ratio_ci_high, (name, cp)


def test_rates_carry_exact_binomial_intervals() -> None:
    lo, hi = st.Rate(0, 500).ci()
    assert lo == 0 and 0.007 < hi < 0.0075  # Clopper-Pearson: 1 - 0.025 ** (1 / 500)
    lo, hi = st.Rate(9, 10).ci()
    assert 0.55 < lo < 0.56 and 0.997 < hi < 0.998


@pytest.mark.slow(live=False)
def test_selftest_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    script = Path(__file__).parent.parent / "scripts" / "changes-selftest"
    bad = tmp_path / "series.json"
    bad.write_text("{not json")
    for argv in (["--runs", str(tmp_path / "none")], ["--series", str(bad)]):
        done = subprocess.run([sys.executable, str(script), *argv], capture_output=True,
                              text=True, timeout=60, check=False)
        assert done.returncode == 2, done.stderr
        assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: ")


def test_series_from_results_dirs_hold_trial_medians_and_round_ratios() -> None:
    # Two real runs of mremap-vs-memcpy (tests/recorded_fleet.py says what they are); both
    # measured size=4 KiB, so its series have two runs, oldest first.
    runs = [Path(__file__).parent / "fixtures" / "fleet_runs" / r for r in ("b", "a")]
    series = {s.name: s for s in st.series_from_runs(runs, ratios=True)}
    record = store.load(runs[1])
    metric = record.benchmarks["mremap-vs-memcpy"].primary_metric
    trials = [t for t in record.trials if t.ok and t.case.variant == "mremap"
              and dict(t.case.params)["size"] == 4096]
    own = series[f"{trials[0].case.key} {metric}"]
    assert [p.run_id for p in own.runs] == [record.run_id, store.load(runs[0]).run_id]
    assert sorted(own.runs[0].values) == sorted(float(np.median(t.samples[metric]))
                                                 for t in trials)
    ratio = series[f"{trials[0].case.key} {metric} / memcpy"]
    assert len(ratio.runs) == 2 and ratio.lower_is_better
    base = {t.round: float(np.median(t.samples[metric])) for t in record.trials
            if t.ok and t.case.variant == "memcpy" and dict(t.case.params)["size"] == 4096}
    assert sorted(ratio.runs[0].values) == sorted(
        float(np.median(t.samples[metric])) / base[t.round] for t in trials if t.round in base)


# The suite's history test (tests/test_history.py) under load, 2026-11-29 19:52-19:53 UTC
# (fresh-clone `make test` beside the suite's own other workers): per-round ratios
# work / base of sixteen `bakeoff cmd` runs, `sleep 0.001` against itself in runs 0-7,
# `sleep 0.03` against `sleep 0.001` from run 8 on. Load shows as one preempted trial of
# three reading 2x (runs 0, 1, 4, 5) and one run whose three rounds all read 1.35x (run 6).
# Taken as means of log trials, with the spread as scatter less the mean se^2, that was
# a change at run 4 at p = 0.001 besides the true one (docs/RELIABILITY.md).
LOADED_RATIOS = (
    (0.9560, 0.9992, 1.6326), (1.0028, 0.9717, 1.8466), (0.9805, 1.0582, 0.9757),
    (1.0155, 0.9780, 1.0082), (0.9913, 1.9321, 1.0003), (0.9941, 1.0028, 2.0629),
    (1.2766, 1.4428, 1.3498), (1.0039, 0.9914, 1.0621),
    (14.5900, 16.1121, 15.9967), (15.9726, 16.9478, 16.3482), (17.1089, 15.9823, 15.9885),
    (16.0555, 15.7953, 14.3281), (16.4111, 15.2575, 16.4039), (14.4458, 15.8352, 14.9038),
    (16.4599, 16.4737, 16.2545), (16.0413, 14.8577, 15.9305),
)


def test_preempted_trials_and_a_drifted_run_raise_no_change() -> None:
    points = [RunPoint(f"r{i}", f"2026-11-29T19:52:{i:02d}", {}, v)
              for i, v in enumerate(LOADED_RATIOS)]
    [cp] = change_points(points)  # the true step, and nothing in the eight runs before it
    assert cp.index == 8 and cp.worse and cp.ratio_ci_low < 16 < cp.ratio_ci_high, cp
    assert change_points(points[:8]) == []  # the loaded stretch alone holds no change either


def test_a_shift_below_min_change_is_no_change_however_sure() -> None:
    """The CI of 2026-11-30 beside CPU hogs: sixteen runs of a work/base ratio, the step from
    x1 to x2.86 at run 8, and the last four runs 0.4% above the four before them, every run's
    trials within 0.3%: that shift was significant (p = 0.001) and listed as a change. A
    change below MIN_CHANGE is not one: the step alone is found."""
    rng = np.random.default_rng(30)
    levels = [1.0] * 8 + [2.856] * 4 + [2.868] * 4
    points = [RunPoint(f"r{i}", f"2026-11-30T01:{i:02d}:00", {}, tuple(
        float(x) for x in level * (1 + 0.001 * rng.standard_normal(3))))
        for i, level in enumerate(levels)]
    found = change_points(points)
    assert [c.index for c in found] == [8], [(c.index, c.ratio, c.p_value) for c in found]
    assert MIN_CHANGE == 0.02
