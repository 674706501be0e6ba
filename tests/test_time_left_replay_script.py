"""scripts/time_left_replay.py plans a run with the profile it recorded (as_run), so that a
run made before a profile changed is replayed under the rules it ran with (issue 34: the
17:07 and 17:15 `make bench` runs gave their unread cases 3 trials, today's profiles 2)."""

from __future__ import annotations

import dataclasses
from types import ModuleType

import scripts_under_test
from test_report import make_run

from bakeoff.declare import registry

ROOM = "heap-sampling"


def _script() -> ModuleType:
    return scripts_under_test.load("time_left_replay.py", "time_left_replay")


def test_a_run_is_planned_with_the_profile_it_recorded() -> None:
    script = _script()
    run = make_run()
    info = next(iter(run.benchmarks.values()))
    declared = registry.discover()[ROOM].profiles["default"]
    recorded = {"trials": 5, "samples": 2, "answer_trials": 15, "other_trials": 3,
                "not_a_profile_field": 1}
    run = dataclasses.replace(run, benchmarks={
        ROOM: dataclasses.replace(info, name=ROOM, profile=recorded)})
    profile = script.as_run(declared, run, ROOM)
    assert declared.other_trials == 2  # today's
    assert profile.other_trials == 3 and profile.answer_trials == 15  # as the run recorded
    # What the record leaves out stays as declared; what is no Profile field is passed over.
    assert profile.counted_samples == declared.counted_samples
    assert profile.params == declared.params
    # A benchmark the run did not record: the profile as declared.
    assert script.as_run(declared, run, "tracing-overhead") == declared
