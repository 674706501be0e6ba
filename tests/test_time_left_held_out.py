"""scripts/time_left_held_out.py: each run replayed as a first run with the profiles' figures
tuned on the other runs."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest
import scripts_under_test
from test_progress import _fixture_checkpoints
from test_report import make_run

from bakeoff.declare import registry
from bakeoff.store import results as store
from conftest import FIXTURES, assert_usage_error, run_script


@pytest.fixture(scope="module")
def script() -> ModuleType:
    return scripts_under_test.load("time_left_held_out.py", "time_left_held_out")


def test_tuned_is_the_mean_over_the_runs_as_trial_s_py_writes_it(
        script: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    """Per room: the mean of the runs' mean trials, growths and counting added, rounded as
    trial_s.py writes them, counting never below 0; a room one run lacks is the other's."""
    runs = [SimpleNamespace(rooms={"a": (10, 0.50, 9.0), "b": (4, 2.0, 9.0)},
                            grown={"a": 1.5}, added={"a": -0.02}),
            SimpleNamespace(rooms={"a": (10, 0.60, 9.0)}, grown={"a": 1.7},
                            added={"a": 0.01})]
    monkeypatch.setattr(script.trial_s, "room_times", lambda run: run.rooms)
    monkeypatch.setattr(script.trial_s, "growth", lambda run: run.grown)
    monkeypatch.setattr(script.trial_s, "counting", lambda run: run.added)
    got = script.tuned(runs)
    assert got.trial_s == {"a": 0.55, "b": 2.0}
    assert got.growth == {"a": 1.6}
    assert got.counting == {"a": 0.0}


def test_a_replay_with_the_specs_figures_says_what_the_fixture_replay_says(
        script: ModuleType) -> None:
    """first_run_errors with the profiles as the specs declare them is the first-run replay
    tests/test_progress.py makes of the same log (one way of telling a log to the estimate)."""
    name = "make-bench-first-hogs-2-xeon.json"
    profiles = {room: bench.profiles["default"] for room, bench in registry.discover().items()}
    idle = script.Tuning({n: p.trial_s for n, p in profiles.items() if p.trial_s},
                         {n: p.trials_growth for n, p in profiles.items() if p.trials_growth},
                         {n: p.counting_s for n, p in profiles.items() if p.counting_s})
    busy = script.Tuning({n: p.trial_s_busy for n, p in profiles.items() if p.trial_s_busy},
                         {}, {})
    timings = json.loads((FIXTURES / "time-left" / name).read_text())["timings"]
    errors = script.first_run_errors(timings, idle, busy)
    expected = [said / remained - 1 for _, said, remained
                in _fixture_checkpoints(name, first_run=True)]
    assert errors == pytest.approx(expected)


@pytest.mark.slow(live=False)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    res = run_script("time_left_held_out.py", "--idle", str(tmp_path / "nope"), "--busy",
                     str(tmp_path / "nope"))
    assert_usage_error(res, "no such results directory", "give one written by bakeoff run")
    store.save(make_run(), tmp_path)
    res = run_script("time_left_held_out.py", "--idle", str(tmp_path), "--busy", str(tmp_path))
    assert_usage_error(res, "give at least two runs of each kind")
