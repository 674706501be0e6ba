"""RunRequest (bakeoff/app/request.py): each run option's check, what --resume refuses, the
fleet hosts' argv and the recorded settings all come from its one field; --label shows it."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from bakeoff.app.request import RunRequest
from bakeoff.core.errors import UsageError
from bakeoff.declare.model import RunSettings
from bakeoff.store import results as store
from conftest import FIXTURES

RUN = FIXTURES / "fleet_runs" / "a"  # a recorded run, from before --label


def test_the_defaults_are_the_settings_a_run_had_before() -> None:
    assert RunRequest().check().settings() == RunSettings()
    assert RunRequest().given() == []
    assert RunRequest().host_argv() == ["--profile", "default"]


def test_one_request_gives_settings_resume_refusals_and_host_argv() -> None:
    req = RunRequest(names=("mremap-vs-memcpy",), variants=("mremap",), trials=0,
                     threshold=5.0, target_ci=2.5, max_trials=30, pin=False,
                     labels=("kernel=6.18-rc2", "note=a b=c")).check()
    assert req.settings() == RunSettings(threshold=0.05, target_ci=0.025, max_trials=30,
                                         pin=False,
                                         labels={"kernel": "6.18-rc2", "note": "a b=c"})
    # --trials 0 is given; --pin is not refused (it only says how this machine measures).
    assert req.refused_with_resume() == ["NAMES", "--variant", "--trials", "--threshold",
                                         "--target-ci", "--max-trials", "--label"]
    assert req.refused_with_resume({"trials": "-t"})[2] == "-t"
    assert req.host_argv() == [
        "mremap-vs-memcpy", "--profile", "default", "--variant", "mremap", "--trials", "0",
        "--threshold", "5", "--target-ci", "2.5", "--max-trials", "30", "--no-pin",
        "--label", "kernel=6.18-rc2", "--label", "note=a b=c"]


@pytest.mark.parametrize(("request_", "needle"), [
    (RunRequest(seed=-1), "--seed -1: a seed is a whole number of 0 or more"),
    (RunRequest(threshold=100.0), "--threshold is a percentage from 0 to 100"),
    (RunRequest(target_ci=0.0), "--target-ci is a percentage above 0"),
    (RunRequest(target_ratio_ci=100.0), "--target-ratio-ci is a percentage above 0"),
    (RunRequest(max_trials=1, target_ci=1.0), "--max-trials must be at least 2"),
    (RunRequest(max_trials=10), "--max-trials goes with --target-ci"),
    (RunRequest(time_budget=float("nan")), "--time-budget is a number of seconds above 0"),
    (RunRequest(labels=("kernel",)), "--label 'kernel': give KEY=VALUE"),
    (RunRequest(labels=("=x",)), "--label '=x': give KEY=VALUE"),
    (RunRequest(labels=("a=1", "a=2")), "--label a: given twice"),
])
def test_a_bad_value_is_one_line_naming_the_fix(request_: RunRequest, needle: str) -> None:
    with pytest.raises(UsageError) as exc:
        request_.check()
    assert str(exc.value).startswith(needle), str(exc.value)
    assert "\n" not in str(exc.value)


def test_every_field_says_how_it_is_given() -> None:
    for f in dataclasses.fields(RunRequest):
        option = f.metadata["option"]
        assert option.flags and option.help, f.name
        if option.setting is not None:
            assert option.setting in {s.name for s in dataclasses.fields(RunSettings)}, f.name


def test_labels_are_recorded_and_old_results_still_load(tmp_path: Path) -> None:
    old = store.load(RUN)
    assert old.settings.labels == {}
    run_dir = tmp_path / "run"
    shutil.copytree(RUN, run_dir)
    old.settings = RunRequest(labels=("kernel=6.18-rc2",)).check().settings()
    store.save(old, run_dir)
    data = json.loads((run_dir / store.RESULTS_JSON).read_text())
    assert data["settings"]["labels"] == {"kernel": "6.18-rc2"}
    assert store.load(run_dir).settings.labels == {"kernel": "6.18-rc2"}
    # The schema checks the new setting as it checks the others.
    data["settings"]["labels"] = {"kernel": 6}
    (run_dir / store.RESULTS_JSON).write_text(json.dumps(data))
    with pytest.raises(UsageError, match=r"settings\.labels\.kernel"):
        store.load(run_dir)


def test_history_acts_when_the_run_is_done_and_goes_with_resume(tmp_path: Path) -> None:
    """--history: one field with a when_done action; --resume takes it (a resumed run is
    recorded once complete); a fleet's hosts are not given it (the controller records)."""
    req = RunRequest(history=str(tmp_path / "h.sqlite")).check()
    assert req.refused_with_resume() == []
    assert req.host_argv() == ["--profile", "default"]
    assert req.settings() == RunSettings()  # a URL may hold a password: never recorded
    run_dir = tmp_path / "run"
    shutil.copytree(RUN, run_dir)
    [line] = req.when_done(run_dir)
    assert line.startswith("recorded in the history: ")
    assert req.when_done(run_dir)[0].startswith("already in the history: ")
    assert RunRequest().when_done(run_dir) == []
    with pytest.raises(UsageError, match="--history names the history"):
        RunRequest(history="").check()
