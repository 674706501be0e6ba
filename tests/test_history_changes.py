"""Change points of a series' history (bakeoff/history/changes.py): the interface's edge
cases, a big step found at its run, and a small replay of real A/A runs of this machine."""

from __future__ import annotations

import math

import numpy as np

from bakeoff.history.changes import (
    MIN_RUNS_AFTER,
    MIN_RUNS_BEFORE,
    ChangePoint,
    RunPoint,
    change_points,
)


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
