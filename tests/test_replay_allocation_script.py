"""scripts/replay_allocation.py: a profile's allocation replayed on a run's recorded trials."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import ModuleType

import pytest
import scripts_under_test
from test_report import XSS, make_run

from bakeoff.declare import registry
from bakeoff.declare.model import Case, RunRecord, Trial
from bakeoff.plan.cases import BenchmarkPlan
from bakeoff.run import runner
from bakeoff.store import results as store
from conftest import assert_usage_error, run_script

ROOM = "mremap-vs-memcpy"


@pytest.fixture(scope="module")
def script() -> ModuleType:
    return scripts_under_test.load("replay_allocation.py", "replay_allocation")


def _as_room(run: RunRecord) -> RunRecord:
    """The report tests' fake run, recorded as the default profile of a real room (its
    memcpy and mremap are that room's variants; the third no question of it reads)."""
    def moved(case: Case) -> Case:
        return dataclasses.replace(case, benchmark=ROOM)
    info = next(iter(run.benchmarks.values()))
    return dataclasses.replace(
        run, profile="default", benchmarks={ROOM: dataclasses.replace(info, name=ROOM)},
        cases=[moved(c) for c in run.cases],
        skips=[dataclasses.replace(s, case=moved(s.case)) for s in run.skips],
        trials=[dataclasses.replace(t, case=moved(t.case)) for t in run.trials])


@pytest.mark.slow(live=False)
def test_the_replay_gives_the_profiles_counts_from_the_recorded_trials(
        script: ModuleType, tmp_path: Path) -> None:
    run = _as_room(make_run())
    bench = registry.select([ROOM])[0]
    profile = bench.profiles["default"]
    assert profile.other_trials is not None and profile.min_trials is not None
    recorded: dict[Case, list[Trial]] = {}
    for t in run.trials:
        recorded.setdefault(t.case, []).append(t)
    cases = [c for c in run.cases if recorded.get(c)]
    plan = BenchmarkPlan(benchmark=bench, profile=profile, cases=cases, skips=[])
    count, short, _lines = script.replay(bench, plan, recorded, run.settings, run.seed)
    for case in cases:
        if case.variant == XSS:  # read by no question: other_trials, no more
            assert count[case] == profile.other_trials
        else:  # the crossover's line: at least the minimum, never past what was recorded
            assert profile.min_trials <= count[case] <= len(recorded[case])
    assert short <= set(cases)
    # From the command line: the totals, and a bad directory is one line, exit 2.
    store.save(run, tmp_path)
    res = run_script("replay_allocation.py", str(tmp_path))
    assert res.returncode == 0, res.stderr
    assert f"{ROOM}: {sum(count.values())} trials (recorded {len(run.trials)})" in res.stdout
    bad = run_script("replay_allocation.py", str(tmp_path / "nope"))
    assert_usage_error(bad, "no such results directory", "give one written by bakeoff run")


@pytest.mark.slow(live=False)
def test_the_answers_are_compared_on_the_recorded_and_the_replayed_trials(
        script: ModuleType, tmp_path: Path) -> None:
    """--answers: each answer figure's CI half-width on the recorded trials and on the
    replayed ones, analysed as the report does; an answer the replay leaves without its
    cases is said, and flagged wider."""
    run = _as_room(make_run())
    info = registry.select([ROOM])[0].info()  # the room's own questions: the crossover
    run = dataclasses.replace(run, benchmarks={ROOM: info})
    same = script.compare_answers(run, run)
    assert same and all(line.startswith(f"  {ROOM}: Q") for line in same)
    assert not any("(wider)" in line for line in same)
    crossing = [line for line in same if "crosses" in line]
    assert len(crossing) == 1
    figure = crossing[0].split(": +-")[1].split("%")[0]
    assert crossing[0].endswith(f"+-{figure}% -> +-{figure}%")  # the same trials, the same CI
    # The crossover's sizes measured by memcpy only: no ratio, so no answer.
    without = dataclasses.replace(run, trials=[t for t in run.trials
                                               if t.case.variant != "mremap"])
    gone = script.compare_answers(run, without)
    assert [line for line in gone if "crosses" in line] == [
        crossing[0].rsplit(" -> ", 1)[0] + " -> not answered (wider)"]
    # From the command line: the header, then one line per figure.
    store.save(run, tmp_path)
    res = run_script("replay_allocation.py", str(tmp_path), "--answers")
    assert res.returncode == 0, res.stderr
    out = res.stdout.splitlines()
    head = out.index("answers (CI half-width as a share of the figure: recorded trials -> "
                     "replayed):")
    assert len(out) > head + 1 and all(line.startswith("  ") for line in out[head + 1:])


@pytest.mark.slow(live=False)
def test_a_trial_recorded_counted_that_the_rules_would_not_count_is_charged_a_plain_one(
        script: ModuleType) -> None:
    """A case no question reads counts its first trial only (runner.UNREAD_COUNTED_TRIALS):
    its later trials the run recorded counted are charged the case's median plain trial; a
    read case's first counted_trials keep their recorded times."""
    run = _as_room(make_run())
    bench = registry.select([ROOM])[0]
    profile = bench.profiles["default"]
    assert profile.counted_trials == 2 and runner.UNREAD_COUNTED_TRIALS == 1
    recorded: dict[Case, list[Trial]] = {}
    for t in run.trials:
        recorded.setdefault(t.case, []).append(t)
    unread = next(c for c in recorded if c.variant == XSS and len(recorded[c]) >= 3)
    read = next(c for c in recorded if c.variant == "mremap" and len(recorded[c]) >= 3)

    def walls(case: Case, counted: int) -> None:  # counted first trials of 1.0 s, then 0.2 s
        recorded[case] = [dataclasses.replace(
            t, index=i, wall_s=1.0 if i < counted else 0.2,
            samples={**t.samples, **({"counted.ns_per_op": [1.0]} if i < counted else {})})
            for i, t in enumerate(recorded[case][:3])]
    walls(unread, 2)
    walls(read, 2)
    cases = [c for c in recorded if c.params == read.params or c == unread]
    plan = BenchmarkPlan(benchmark=bench, profile=profile, cases=cases, skips=[])
    count = dict.fromkeys(cases, 0) | {unread: 3, read: 3}
    seconds, charged, saved = script.trial_seconds(plan, run.settings, recorded, count)
    # unread: 1.0 (its counted first) + 0.2 (its second, charged) + 0.2; read: 1.0 + 1.0 + 0.2
    assert (charged, seconds, saved) == (1, pytest.approx(3.6), pytest.approx(0.8))
