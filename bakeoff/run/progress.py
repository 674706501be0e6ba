"""What a run says while it measures.

On a terminal: a bar naming the benchmark and the case running, with the time left. On a pipe
(a CI log, `| tee`): a line as each benchmark ends with its trials and time, and one a minute
in between, so a long benchmark is not mistaken for a hung one. Quiet: failures only.

The time left is each trial still to run at what its own case's trials took so far (warm-up
included), else what the case's trials took in the newest earlier run on this machine that
measured it (results/), else its benchmark's mean trial, else its profile's declared trial_s
(moved toward its trial_s_busy as far as this run's trials wait for a CPU: Estimate.load)
scaled by this run's speed on the benchmarks ended, every trial as trial_s counts them
(Estimate.whole_trials), else the run's median trial:
trials of one run differ by orders of magnitude across benchmarks (a 2 ms memcpy, a 20 s
tracer session), so a count of trials times a mean would be wrong by as much. A benchmark
with none of these can only be guessed from the others, and the estimate says so. What passes
before a benchmark's first trial (its session's set-up) is counted apart, and each benchmark
not started is expected to need the mean of those seen. Under
sequential allocation a case counts its min_trials; the trials the rule adds join the count
round by round (RunProgress.grow, and RunProgress.replan with the allocation's plan), and a
case of a benchmark not yet started is expected to take as many trials as it kept in the
newest earlier run of this profile that measured it, else its start's plan times what the
ended benchmarks took over theirs (Estimate.growth): a plan made before a benchmark runs
cannot know its spread, and the rules add trials where the spread asks; the one running is
counted at no fewer than its profile's growth.
Earlier runs' trial times are taken from their run's load to this one's (Estimate.earlier_now)
and at this run's speed against them (Estimate.earlier_speed).

Two costs a trial's own time does not show are counted apart: the harness's decision after
each round (once per round left), and what counted samples add to a case's first trials:
each case's counted trials still to come are charged at a counted trial's price, the rest
at a plain one's, which for a case timed only by counted trials is theirs less what came
after their last measured sample (the counted samples and counters; Estimate.costs). A trial measured again
(run/contention.py) adds one to its case's trials left when it happens. What the estimate
was told is kept in the run's record (timings.estimate_log), so replay() says again what a
real run said.
"""

from __future__ import annotations

import json
import statistics
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from bakeoff.declare.model import Case, is_counted
from bakeoff.run.trial_process import ProcessResult

HEARTBEAT_S = 60.0  # on a pipe, at most this long without a line while trials run
EARLIER_RUNS = 20  # newest results directories read for earlier trial times
RECENT_TRIALS = 5  # a case's trial time: the median of its latest this many
# A counted-only case's plain trial: its counted trials less what counting added elsewhere,
# never below this share of them.
COUNTED_FLOOR = 0.1
# The machine's load, as the time left reads it: the share of their wall time the latest
# LOAD_TRIALS trials waited for a CPU (their run-queue wait, schedstat), over BUSY_WAIT_SHARE,
# a little below the share the trials of `make bench` waited beside two CPU hogs on two CPUs
# where the profiles' trial_s_busy were tuned (scripts/trial_s.py prints it), so that a
# window of trials as busy as those reads as busy through its spread (docs/RELIABILITY.md,
# "The time left beside other work").
LOAD_TRIALS = 50
BUSY_WAIT_SHARE = 0.12


def earlier_seconds(results_root: Path, cases: Iterable[Case]) -> dict[Case, float]:
    """Per case, the median wall time of its successful trials in the newest earlier run
    (of the newest EARLIER_RUNS under results_root) that measured it. Anything unreadable is
    passed over: this only informs an estimate."""
    return earlier_times_and_trials(results_root, cases, None)[0]


def earlier_trials(results_root: Path, cases: Iterable[Case], profile: str | None
                   ) -> dict[Case, int]:
    """Per case, the successful trials it kept in the newest complete earlier run of this
    profile that measured it: what the allocation gave the case there (a quick run's few
    trials of a case the default profile shares say nothing of its count here, nor does a
    run stopped part-way, this one's own record before a resume among them)."""
    return earlier_times_and_trials(results_root, cases, profile)[1]


def earlier_times_and_trials(results_root: Path, cases: Iterable[Case], profile: str | None
                             ) -> tuple[dict[Case, float], dict[Case, int], dict[Case, float]]:
    """earlier_seconds and earlier_trials, from one reading of the earlier runs' records
    (each a few MiB for a default run), and per case of earlier_seconds the load of the run
    its time came from (run_load)."""
    wanted = set(cases)
    seconds: dict[Case, float] = {}
    kept: dict[Case, int] = {}
    loads: dict[Case, float] = {}
    try:
        files = sorted(results_root.glob("*/results.json"), key=lambda p: p.stat().st_mtime,
                       reverse=True)[:EARLIER_RUNS]
    except OSError:
        return seconds, kept, loads
    for path in files:
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            counts = profile is not None and record.get("profile") == profile \
                and record.get("status") == "complete"
            walls: dict[Case, list[float]] = defaultdict(list)
            for t in record.get("trials", []):
                case = Case.from_json(t["case"])
                if case in wanted and t.get("status") == "ok" and (
                        case not in seconds or (counts and case not in kept)):
                    walls[case].append(float(t["wall_s"]))
            load = run_load([*record.get("trials", []), *record.get("retaken", [])])
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
        loads.update({c: load for c in walls if c not in seconds})
        seconds.update({c: statistics.median(w) for c, w in walls.items() if c not in seconds})
        if counts:
            kept.update({c: len(w) for c, w in walls.items() if c not in kept})
        if len(seconds) == len(wanted) and (profile is None or len(kept) == len(wanted)):
            break
    return seconds, kept, loads


def wait_share(waits: Iterable[tuple[float | None, float]]) -> float | None:
    """Of (seconds waited for a CPU, wall seconds) per trial, the share of their wall time
    the trials whose wait is known waited; None if none is (or their wall time is 0)."""
    known = [(w, s) for w, s in waits if w is not None]
    wall = sum(s for _, s in known)
    return sum(w for w, _ in known) / wall if wall > 0 else None


def load_of(waits: Iterable[tuple[float | None, float]]) -> float:
    """How busy the machine was for these trials (wait_share): from 0 (they waited for no
    CPU, or no wait is known) to 1 (they waited as long as beside two CPU hogs,
    BUSY_WAIT_SHARE of their time, or longer)."""
    share = wait_share(waits)
    return 0.0 if share is None else min(1.0, share / BUSY_WAIT_SHARE)


def run_load(trials: Iterable[Mapping[str, Any]]) -> float:
    """A recorded run's load as Estimate.load reads a running one's (load_of), over all its
    trials (those retaken too, as the estimate counts every attempt)."""
    return load_of(((t.get("contention") or {}).get("run_delay_s"), float(t["wall_s"]))
                   for t in trials)


def fmt_duration(seconds: float) -> str:
    """'45 s', '3 min 05 s', '1 h 02 min'."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


class Estimate:
    """Seconds left, from the trials still to run and what trials took so far.

    declared: per benchmark, its profile's trial_s (a mean trial's seconds where the profile
    was tuned). A benchmark with no timed trial yet is estimated from it, times how much
    slower or faster this run has been than declared on the benchmarks it has timed: on a
    first run the others' trial times say nothing about it (a 20 s tracer session against a
    2 ms copy), and a machine that is twice as slow is about twice as slow everywhere."""

    def __init__(self, todo: Mapping[Case, int],
                 earlier: Mapping[Case, float] | None = None,
                 declared: Mapping[str, float] | None = None,
                 no_set_up: Iterable[str] = (),
                 counted: Mapping[str, int | None] | None = None,
                 earlier_kept: Mapping[Case, int] | None = None,
                 declared_growth: Mapping[str, float] | None = None,
                 declared_busy: Mapping[str, float] | None = None,
                 earlier_load: Mapping[Case, float] | None = None,
                 declared_counting: Mapping[str, float] | None = None) -> None:
        self.todo: dict[Case, int] = dict(todo)
        # What the estimate was told, in order, with the seconds since it began: kept in the
        # run's record (timings.estimate_log), so an estimate can be replayed on a real run's
        # timeline (replay()) and a change to it measured on runs already made.
        self._began = time.monotonic()
        self._keys: dict[Case, int] = {}
        self.log: list[list[Any]] = [["begin", 0.0, [[self._key(c), n] for c, n in todo.items()],
                                      [[self._key(c), v] for c, v in (earlier or {}).items()],
                                      dict(declared or {}), sorted(no_set_up),
                                      dict(counted or {}),
                                      [[self._key(c), n] for c, n in (earlier_kept or {}).items()],
                                      dict(declared_growth or {}),
                                      dict(declared_busy or {}),
                                      [[self._key(c), v] for c, v in (earlier_load or {}).items()],
                                      dict(declared_counting or {})]]
        self.took: dict[Case, list[float]] = defaultdict(list)
        self.took_counted: dict[Case, list[float]] = defaultdict(list)
        # Per benchmark, how many of a case's first trials take counted samples
        # (Profile.counted_trials; None: every trial). Those still to come are charged what a
        # counted trial costs, the rest what a trial without counting costs: in a run's first
        # rounds the counted trials were most of its time (three quarters of a
        # mremap-vs-memcpy quick run), and charging every trial left at one of the two prices
        # said half as much again, or half as little, as remained.
        self.counted_trials: dict[str, int | None] = dict(counted or {})
        self.counted_kept: dict[Case, int] = defaultdict(int)  # counted trials taken, not retaken
        self._last_counted: dict[Case, bool] = {}
        # Per trial, the seconds from the program's last measured sample to its end
        # (ProcessResult.tail_s): of a case's counted trials, and of the plain trials of each
        # benchmark.
        self.counted_tails: dict[Case, list[float | None]] = defaultdict(list)
        self.plain_tails: dict[str, list[float]] = defaultdict(list)
        self.earlier: dict[Case, float] = dict(earlier or {})
        # Per case, the trials it kept in the newest earlier run of this profile
        # (earlier_trials): what a case of a benchmark not yet started is expected to take.
        # A benchmark's cases grow unalike (the cheap ones an answer reads to their cap, the
        # dear ones no answer reads never), so its start's plan times the growth, with each
        # case priced at its earlier time, said 40-50% too much a quarter into `make bench`
        # runs that had earlier runs (docs/RELIABILITY.md, "The time left from earlier runs").
        self.earlier_kept: dict[Case, int] = dict(earlier_kept or {})
        self.declared: dict[str, float] = {b: s for b, s in (declared or {}).items() if s > 0}
        # Per benchmark, its profile's trials_growth: how much its plan grew where the profile
        # was tuned. Benchmarks grow unalike (a quarter more trials than planned in
        # mremap-vs-memcpy, three quarters more in cgroup-stat-read's), so the growth of those
        # ended said half as much again as remained halfway into a first run
        # (docs/RELIABILITY.md, "The time left of a first run").
        self.declared_growth: dict[str, float] = {
            b: g for b, g in (declared_growth or {}).items() if g >= 1}
        # Per benchmark, its profile's trial_s_busy, and the latest trials' (wait for a CPU,
        # seconds): beside two CPU hogs a tight user-space loop (heap-sampling) ran 1.3-1.4
        # times its idle trial_s where the first rooms, dumping kernel maps and reading cgroup
        # files, ran at theirs, so the rooms not started, priced at the first rooms' speed,
        # said a third too little a quarter in (docs/RELIABILITY.md, "The time left beside
        # other work").
        self.declared_busy: dict[str, float] = {
            b: s for b, s in (declared_busy or {}).items() if s > 0}
        # Per benchmark, its profile's counting_s: what counting added to a counted trial
        # before its last measured sample where the profile was tuned (counting_beyond_tail).
        self.declared_counting: dict[str, float] = {
            b: c for b, c in (declared_counting or {}).items() if c > 0}
        self.waits: deque[tuple[float, float]] = deque(maxlen=LOAD_TRIALS)
        # Per case of earlier, the load of the run its time came from (run_load): an earlier
        # run's times are taken to this run's load room by room as the declared ones are
        # (earlier_now); an idle run's heap-sampling times, at the first rooms' speed beside
        # two CPU hogs, said a third short a quarter in.
        self.earlier_load: dict[Case, float] = dict(earlier_load or {})
        # Per benchmark started, what passed before its first trial began (its session's
        # set-up: a daemon, maps filled): kept apart so the first trial's time, and the speed
        # taken from it, are the trial's own; a benchmark not started is expected to need the
        # mean of these.
        self.set_ups: dict[str, float] = {}
        # Benchmarks with no session: nothing to set up, so none of the others' set-up time
        # (a map of a million entries filled) is expected of them.
        self.no_set_up = set(no_set_up)
        # The seconds --time-budget leaves (None: no budget): the time left never exceeds it.
        self.budget_left: Callable[[], float | None] = lambda: None
        # Per benchmark, the harness's decisions between its rounds (the allocation's
        # intervals, the plan): counted apart from the trials, as the rounds left times a
        # typical one, since they come once a round, not once a trial. Before they were counted
        # at all, a long decision on a loaded machine went into one trial's time, which the
        # median of that case's trials then dropped, and every time left said ran short
        # (docs/RELIABILITY.md, "The time left at 25, 50 and 75% of a run").
        self.decisions: dict[str, list[float]] = defaultdict(list)
        # Per benchmark, the trials planned for it before anything ran (its minimums), and
        # the trials it has kept (attempts less those measured again): how many times its
        # start's plan the benchmarks already ended took (growth) is what those not started
        # are expected to take. Without it the time left said a quarter into a `make bench`
        # was far short, idle and beside CPU hogs alike (docs/RELIABILITY.md, "The time
        # left from the rooms already ended").
        self.planned_at_start: dict[str, int] = defaultdict(int)
        for case, n in todo.items():
            self.planned_at_start[case.benchmark] += n
        self.kept: dict[str, int] = defaultdict(int)

    def _key(self, case: Case) -> int:
        return self._keys.setdefault(case, len(self._keys))

    def _told(self, what: str, *args: Any) -> None:
        self.log.append([what, round(time.monotonic() - self._began, 4), *args])

    def cases(self) -> list[dict[str, Any]]:
        """The cases the log's numbers stand for, in their order."""
        return [c.to_json() for c in self._keys]

    def done(self, case: Case, seconds: float, counted: bool = False,
             tail: float | None = None, waited: float | None = None) -> None:
        """A trial of case ended after seconds; counted: it also took counted samples (a
        case's first Profile.counted_trials do), so it cost more than the trials after it.
        tail: of those seconds, the ones after the program's last measured sample (a
        counted trial's counted samples and counters, and the exit); None: not known.
        waited: of its process's time, the seconds it waited for a CPU; None: not known."""
        # The estimate takes the seconds as logged, so a replay of the log is exact.
        seconds = round(seconds, 4)
        tail = None if tail is None else round(tail, 4)
        waited = None if waited is None else round(waited, 4)
        self._told("done", self._key(case), seconds, counted, tail, waited)
        if waited is not None:
            self.waits.append((waited, seconds))
        self.todo[case] = max(0, self.todo.get(case, 0) - 1)
        self.kept[case.benchmark] += 1
        self._last_counted[case] = counted
        if counted:
            self.took_counted[case].append(seconds)
            self.counted_tails[case].append(tail)
            self.counted_kept[case] += 1
        else:
            self.took[case].append(seconds)
            if tail is not None:
                self.plain_tails[case.benchmark].append(tail)
        if not self.took[case]:
            self.took[case] = []  # a case timed, if only by counted trials, for seconds_left

    def grow(self, cases: Iterable[Case]) -> None:
        cases = list(cases)
        self._told("grow", [self._key(c) for c in cases])
        for c in cases:
            self.todo[c] = self.todo.get(c, 0) + 1

    def replan(self, left: Mapping[Case, int]) -> None:
        """The allocation's plan after a round: the trials each of these cases is still
        expected to take (run/allocation.py expected_trials, run/target.py)."""
        self._told("replan", [[self._key(c), n] for c, n in left.items()])
        self.todo.update(left)

    def set_up(self, benchmark: str, seconds: float) -> None:
        seconds = round(seconds, 4)
        self._told("set_up", benchmark, seconds)
        # Benchmarks run one after another: those started before this one have ended, and
        # whatever their plan still counted (a rule that stopped short of its plan) is no
        # longer to come. Left counted, heap-sampling's 180 planned trials it did not take
        # were charged to the rest of a `make bench` run: +92% at 75% (docs/RELIABILITY.md).
        for case in self.todo:
            if case.benchmark != benchmark and case.benchmark in self.set_ups:
                self.todo[case] = 0
        self.set_ups[benchmark] = seconds

    def decided(self, benchmark: str, seconds: float) -> None:
        """The harness decided, after a round of benchmark, what the next takes."""
        seconds = round(seconds, 4)
        self._told("decided", benchmark, seconds)
        self.decisions[benchmark].append(seconds)

    def retaken(self, case: Case) -> None:
        """The attempt just timed is measured again: one more trial of case to take. Not
        extrapolated to the trials left: retakes come in bursts of load, and taking the
        share seen so far for every trial left overshot the time left in half the runs
        measured (docs/RELIABILITY.md)."""
        self._told("retaken", self._key(case))
        self.todo[case] = self.todo.get(case, 0) + 1
        self.kept[case.benchmark] -= 1
        if self._last_counted.get(case):
            self.counted_kept[case] -= 1  # measured again, with its counted samples again

    def growth(self) -> float:
        """The trials the benchmarks already ended kept, over what they were planned at
        before anything ran (1 before any has ended, and never below 1: a start's plan is
        each case's minimum)."""
        ended = list(self.set_ups)[:-1]  # benchmarks run one after another
        planned = sum(self.planned_at_start[b] for b in ended)
        return max(1.0, sum(self.kept[b] for b in ended) / planned) if planned else 1.0

    def _trials_left(self) -> dict[Case, float]:
        """Per case, the trials still to come: the plan (todo), and for a case of a benchmark
        not yet started, what it kept in the newest earlier run of this profile (never below
        its plan), else its start's plan times its profile's trials_growth, else times
        growth(). The one running has its own plan from its own spread, which early in the
        benchmark knows little of it (tracing-overhead's said 163 trials three quarters into
        an idle `make bench`, where 220 were taken; beside two CPU hogs, 170 where 248 were):
        its count is raised to its start's plan times its profile's growth, less what it has
        kept, when that is more (not the growth of the rooms ended: a third too much at 75%).
        It once floored busy runs only, while counted trials were overpriced idle and the two
        errors cancelled (docs/RELIABILITY.md, "The time left, retuned")."""
        grow = self.growth()
        left = {c: n if c.benchmark in self.set_ups
                else max(n, self.earlier_kept[c]) if c in self.earlier_kept
                else n * self.declared_growth.get(c.benchmark, grow)
                for c, n in self.todo.items() if n > 0}
        running = next(reversed(self.set_ups), None)
        if running is None or running not in self.declared_growth:
            return left
        planned = sum(n for c, n in left.items() if c.benchmark == running)
        floor = (self.planned_at_start[running] * self.declared_growth[running]
                 - self.kept[running])
        if not 0 < planned < floor:
            return left
        return {c: n * floor / planned if c.benchmark == running else n
                for c, n in left.items()}

    def load(self) -> float:
        """How busy the machine is (load_of the latest LOAD_TRIALS trials); 0 before a
        trial's wait is known."""
        return load_of(self.waits)

    def slowdown(self, benchmark: str, load: float) -> float:
        """How much longer than idle a trial of benchmark takes at load: its trial_s moved
        that far toward its trial_s_busy, over its trial_s (1 without both)."""
        idle, busy = self.declared.get(benchmark), self.declared_busy.get(benchmark)
        return 1.0 if not idle or not busy else 1 + load * (busy / idle - 1)

    def declared_now(self) -> dict[str, float]:
        """Per benchmark with a declared trial_s, the trial it is expected to take at this
        load: its trial_s, moved toward its trial_s_busy as far as load() says."""
        load = self.load()
        return {b: s * self.slowdown(b, load) for b, s in self.declared.items()}

    def earlier_now(self) -> dict[Case, float]:
        """Per case an earlier run timed, its time there taken from that run's load to this
        one's (slowdown)."""
        load = self.load()
        return {c: s * self.slowdown(c.benchmark, load)
                / self.slowdown(c.benchmark, self.earlier_load.get(c, 0.0))
                for c, s in self.earlier.items()}

    def trials_counted(self) -> float:
        """The trials still to come as the time left counts them (_trials_left): what a run
        records beside the trials truly still taken (run/timings.py said_against_truth)."""
        return sum(self._trials_left().values())

    def earlier_speed(self, earlier: Mapping[Case, float] | None = None) -> float:
        """This run's trial seconds over the earlier runs' (earlier_now() unless given) on the
        cases both timed (1 before any): an earlier run made at another load, or another
        hour of a shared VM, priced every case of this one as fast or as slow as it was (a
        run beside CPU hogs with an idle run's times said 28% short a quarter in)."""
        earlier = self.earlier_now() if earlier is None else earlier
        both = {c: t for c, t in self.took.items() if t and c in earlier}
        if not both:
            return 1.0
        return (sum(sum(t) for t in both.values())
                / sum(earlier[c] * len(t) for c, t in both.items()))

    def counted_left(self, case: Case) -> int:
        """How many of the case's trials still to come take counted samples."""
        if case.benchmark not in self.counted_trials:
            return 0
        first = self.counted_trials[case.benchmark]
        n = self.todo.get(case, 0)
        return n if first is None else max(0, min(n, first - self.counted_kept[case]))

    def decisions_left(self) -> float:
        """Seconds of decisions still to come: per benchmark with trials left, its rounds
        left (the most trials any of its cases still takes: each open case takes one a
        round) times its recent decision time."""
        rounds: dict[str, int] = defaultdict(int)
        for case, n in self.todo.items():
            rounds[case.benchmark] = max(rounds[case.benchmark], n)
        # The lower median: one slow decision among cheap ones (the first of the sequential
        # rule, a moment of load) is not what each round left will take.
        return sum(n * statistics.median_low(self.decisions[b])
                   for b, n in rounds.items() if n > 0 and self.decisions.get(b))

    def speed(self, by_bench: Mapping[str, list[float]],
              declared: Mapping[str, float] | None = None) -> float:
        """This run's trial seconds over the declared ones (declared_now() unless given), on
        the benchmarks both know of by_bench (whole_trials() where the time left reads it; 1
        before any): what a declared figure is multiplied by here."""
        declared = self.declared_now() if declared is None else declared
        known = [b for b in by_bench if b in declared and by_bench[b]]
        if not known:
            return 1.0
        took = sum(sum(by_bench[b]) for b in known)
        return took / sum(declared[b] * len(by_bench[b]) for b in known)

    def whole_trials(self) -> dict[str, list[float]]:
        """Per benchmark, every trial's seconds, counted ones included, as a whole run of it
        has them: of the benchmarks ended (benchmarks run one after another), else of the
        one running. What speed() compares with trial_s, which is the mean over a whole run
        of every trial: against the plain trials alone (cheaper than the first, counted ones,
        0.48 s against 0.77 in bpf-map-dump) an idle first `make bench` ran at 0.73 of its
        profiles, and priced the rooms not started 30% short a quarter in; the running
        benchmark's trials so far are mostly its counted ones."""
        ended = list(self.set_ups)[:-1]
        whole: dict[str, list[float]] = defaultdict(list)
        for trials in (self.took, self.took_counted):
            for case, seconds in trials.items():
                whole[case.benchmark] += seconds
        ended_timed = {b: whole[b] for b in ended if whole.get(b)}
        return ended_timed or dict(whole)

    def typical(self) -> dict[Case, float]:
        """Per case timed, what each of its trials without counted samples still to come
        costs (costs(), its first figure)."""
        return self._plain_costs()

    def costs(self) -> dict[Case, tuple[float, float]]:
        """Per case timed, what each of its trials still to come costs: (one without counted
        samples, one with them), each the median of its latest RECENT_TRIALS of that kind
        when it has some (a machine whose load changes mid-run changes what a trial costs,
        and the time left follows within a few trials)."""
        plain_of = self._plain_costs()
        return self._with_counted(plain_of, self.counting_added(plain_of))

    def _plain_costs(self) -> dict[Case, float]:
        """Per case timed, what each of its trials without counted samples still to come
        costs.

        A case timed only by counted trials (all of them are, for the run's first rounds):
        those less what counting added to them, which is two parts. What came after the
        trial's last measured sample beyond what follows a plain trial's (its tail: the
        counted samples, the counters opened, and closed at exit, ~40 ms a tracepoint here;
        ProcessResult.tail_s), known of every counted trial; and what else counting added,
        known once some case of the benchmark has both kinds, and until then its profile's
        counting_s (0 without one: tracing-overhead's counted-only cases were priced a
        fifth to a third over their plain trials at 75% of a run and said up to 28% too
        much; docs/RELIABILITY.md, "The time left before a room's first plain trial"). Without
        tails (a record from before they were kept): its benchmark's counted trials less its
        plain ones where a case has both. Taken as they were, counted trials (ten times a plain
        one at 4 KiB in mremap-vs-memcpy) made each time left said before a case had plain
        trials far too long (docs/RELIABILITY.md)."""
        added: dict[str, list[float]] = defaultdict(list)  # counted less plain, cases with both
        for case, plain in self.took.items():
            counted = self.took_counted.get(case)
            if plain and counted:
                added[case.benchmark].append(statistics.median(counted[-RECENT_TRIALS:])
                                             - statistics.median(plain[-RECENT_TRIALS:]))
        exits = self._exit_extras()
        rest = self.counting_beyond_tail(exits)
        plain_of: dict[Case, float] = {}
        for case, plain in self.took.items():
            counted = self.took_counted.get(case)
            if plain:
                plain_of[case] = statistics.median(plain[-RECENT_TRIALS:])
            elif counted:
                seen = statistics.median(counted[-RECENT_TRIALS:])
                extra = exits.get(case)
                if extra is not None:
                    extra += rest.get(case.benchmark,
                                      self.declared_counting.get(case.benchmark, 0.0))
                else:
                    extra = max(0.0, statistics.median(added[case.benchmark])) if added.get(
                        case.benchmark) else 0.0
                plain_of[case] = max(seen - extra, seen * COUNTED_FLOOR)
        return plain_of

    def _exit_extras(self) -> dict[Case, float]:
        """Per case with a counted trial's tail known, what came after its counted trials'
        last measured sample beyond what follows a plain trial's of its benchmark (each
        benchmark's plain tails taken once, not once a case)."""
        plain_tail = {b: statistics.median(t) for b, t in self.plain_tails.items() if t}
        out: dict[Case, float] = {}
        for case, tails in self.counted_tails.items():
            known = [t for t in tails[-RECENT_TRIALS:] if t is not None]
            if known:
                out[case] = max(0.0, statistics.median(known)
                                - plain_tail.get(case.benchmark, 0.0))
        return out

    def counting_beyond_tail(self, exits: Mapping[Case, float] | None = None
                             ) -> dict[str, float]:
        """Per benchmark, the median over its cases with both kinds of trial (and tails) of
        what a counted trial took beyond a plain one less its exit's extra (exits, else
        _exit_extras()): what counting added before the program's last measured sample.
        Until a case of the benchmark has both, its profile's counting_s stands in for it
        (declared_counting)."""
        exits = self._exit_extras() if exits is None else exits
        rest: dict[str, list[float]] = defaultdict(list)
        for case, plain in self.took.items():
            counted = self.took_counted.get(case)
            extra = exits.get(case)
            if plain and counted and extra is not None:
                rest[case.benchmark].append(statistics.median(counted[-RECENT_TRIALS:])
                                            - statistics.median(plain[-RECENT_TRIALS:])
                                            - extra)
        return {b: statistics.median(r) for b, r in rest.items()}

    def _with_counted(self, plain_of: Mapping[Case, float], counting: Mapping[str, float]
                      ) -> dict[Case, tuple[float, float]]:
        """(plain, counted) per case: a counted trial's own median where it has some, else
        its plain trial and what counting added in its benchmark (counting_added)."""
        out: dict[Case, tuple[float, float]] = {}
        for case, plain_s in plain_of.items():
            counted = self.took_counted.get(case)
            out[case] = (plain_s, statistics.median(counted[-RECENT_TRIALS:]) if counted
                         else plain_s + counting.get(case.benchmark, 0.0))
        return out

    def counting_added(self, plain_of: Mapping[Case, float]) -> dict[str, float]:
        """Per benchmark, the median over its cases with counted trials of what a counted
        trial costs beyond the case's plain one (plain_of: each case's plain trial)."""
        by_bench: dict[str, list[float]] = defaultdict(list)
        for case, counted in self.took_counted.items():
            if counted and case in plain_of:
                by_bench[case.benchmark].append(
                    statistics.median(counted[-RECENT_TRIALS:]) - plain_of[case])
        return {b: max(0.0, statistics.median(d)) for b, d in by_bench.items()}

    def seconds_left(self) -> tuple[float, int] | None:
        """(seconds, benchmarks still to run whose time is a guess from the others); None
        before any trial has finished."""
        took = {c: t or self.took_counted.get(c, []) for c, t in self.took.items()}
        everything = [s for t in took.values() for s in t]
        if not everything and not self.earlier:
            return None
        run_median = statistics.median(everything or list(self.earlier.values()))
        declared = self.declared_now()
        speed = self.speed(self.whole_trials(), declared)
        earlier = self.earlier_now()
        earlier_speed = self.earlier_speed(earlier)
        plain_of = self._plain_costs()
        counting = self.counting_added(plain_of)
        costs = self._with_counted(plain_of, counting)
        bench_typical: dict[str, list[float]] = defaultdict(list)
        for case, (per_case, _) in costs.items():
            bench_typical[case.benchmark].append(per_case)
        total = 0.0
        untimed: set[str] = set()
        for case, n in self._trials_left().items():
            counted_n = min(self.counted_left(case), n)
            if case in costs:
                plain, counted = costs[case]
                total += (n - counted_n) * plain + counted_n * counted
                continue
            if case in earlier:
                per = earlier[case] * earlier_speed
            elif bench_typical.get(case.benchmark):
                # The mean of its timed cases, not their median: the cases not yet timed are
                # as likely its slow ones as its fast ones, and the sum is what is estimated.
                per = statistics.fmean(bench_typical[case.benchmark])
            elif case.benchmark in declared:
                per = declared[case.benchmark] * speed
            else:
                per = run_median
                untimed.add(case.benchmark)
            total += n * per + counted_n * counting.get(case.benchmark, 0.0)
        total += self.decisions_left()
        waiting = ({c.benchmark for c, n in self.todo.items() if n > 0} - set(self.set_ups)
                   - self.no_set_up)
        if self.set_ups:
            total += len(waiting) * statistics.fmean(self.set_ups.values())
        budget = self.budget_left()
        return (total if budget is None else min(total, budget)), len(untimed)


def replay(log: Sequence[Sequence[Any]], cases: Sequence[Mapping[str, Any]]
           ) -> list[tuple[float, float | None]]:
    """An estimate's log (Estimate.log, with Estimate.cases) told again to a new estimate:
    after each trial, (seconds since the estimate began, the seconds left it then says), as
    the run's progress said them (no --time-budget: the budget's clock is not in the log)."""
    return replayed(log, cases)[1]


def as_first_run(log: Sequence[Sequence[Any]], declared: Mapping[str, float],
                 growth: Mapping[str, float], busy: Mapping[str, float],
                 counting: Mapping[str, float]) -> list[Sequence[Any]]:
    """An estimate's log as if its run had found no earlier run in results/ and its profiles
    had declared these trial_s, trials_growth, trial_s_busy and counting_s: what a fresh
    clone's run would have been told, to replay a recorded run with other figures."""
    begin = list(log[0])
    # The begin entry as Estimate writes it: 3 earlier trial times, 4 declared trial_s,
    # 7 earlier trial counts, 8 declared growth, 9 busy trial_s, 10 earlier load, 11 counting.
    begin[3], begin[7] = [], []
    begin[4] = dict(declared)
    begin[8:] = [dict(growth), dict(busy), [], dict(counting)]
    return [begin, *log[1:]]


def replayed(log: Sequence[Sequence[Any]], cases: Sequence[Mapping[str, Any]]
             ) -> tuple[Estimate, list[tuple[float, float | None]]]:
    """replay(), with the estimate as the whole log left it (what it learned of the run:
    Estimate.counting_beyond_tail, for scripts/trial_s.py)."""
    by_key = [Case.from_json(c) for c in cases]
    begin = log[0]
    # Older logs: no counted trials (begin[6]), no earlier runs' trial counts (begin[7]), no
    # declared growth (begin[8]), busy trial (begin[9]), earlier runs' load (begin[10]) or
    # declared counting (begin[11]), no trial's wait (a done's 6th).
    estimate = Estimate({by_key[k]: n for k, n in begin[2]},
                        {by_key[k]: v for k, v in begin[3]}, begin[4], begin[5],
                        begin[6] if len(begin) > 6 else None,
                        {by_key[k]: n for k, n in begin[7]} if len(begin) > 7 else None,
                        begin[8] if len(begin) > 8 else None,
                        begin[9] if len(begin) > 9 else None,
                        {by_key[k]: v for k, v in begin[10]} if len(begin) > 10 else None,
                        begin[11] if len(begin) > 11 else None)
    said: list[tuple[float, float | None]] = []
    for what, at, *args in log[1:]:
        if what == "done":
            estimate.done(by_key[args[0]], args[1], args[2], args[3] if len(args) > 3 else None,
                          args[4] if len(args) > 4 else None)
            found = estimate.seconds_left()
            said.append((at, None if found is None else found[0]))
        elif what == "grow":
            estimate.grow([by_key[k] for k in args[0]])
        elif what == "replan":
            estimate.replan({by_key[k]: n for k, n in args[0]})
        elif what == "set_up":
            estimate.set_up(args[0], args[1])
        elif what == "decided":
            estimate.decided(args[0], args[1])
        elif what == "retaken":
            estimate.retaken(by_key[args[0]])
    return estimate, said


def left_text(estimate: Estimate) -> str:
    found = estimate.seconds_left()
    if found is None:
        return "time left: after the first trial"
    seconds, untimed = found
    guess = (f" (+ {untimed} benchmark{'s' if untimed > 1 else ''} not yet timed, guessed "
             "from the others)" if untimed else "")
    return f"about {fmt_duration(seconds)} left{guess}"


class RunProgress:
    """The run's progress, told as the runner starts and finishes trials and benchmarks."""

    def __init__(self, todo: Mapping[Case, int], quiet: bool, console: Console,
                 earlier: Mapping[Case, float] | None = None,
                 declared: Mapping[str, float] | None = None,
                 no_set_up: Iterable[str] = (),
                 counted: Mapping[str, int | None] | None = None,
                 earlier_kept: Mapping[Case, int] | None = None,
                 declared_growth: Mapping[str, float] | None = None,
                 declared_busy: Mapping[str, float] | None = None,
                 earlier_load: Mapping[Case, float] | None = None,
                 declared_counting: Mapping[str, float] | None = None) -> None:
        self.quiet = quiet
        self.console = console
        self.fancy = console.is_terminal and not quiet
        self.estimate = Estimate(todo, earlier, declared, no_set_up, counted, earlier_kept,
                                 declared_growth, declared_busy, earlier_load,
                                 declared_counting)
        self.total = sum(todo.values())
        self.done = 0
        self.benchmarks = list(dict.fromkeys(c.benchmark for c in todo))
        self.planned: dict[str, int] = defaultdict(int)
        for c, n in todo.items():
            self.planned[c.benchmark] += n
        self.bench_done: dict[str, int] = defaultdict(int)
        self.retakes: dict[str, int] = defaultdict(int)  # attempts measured again, per benchmark
        self.retake_next = False
        self.bench_started: dict[str, float] = {}
        self.started = self.last_mark = self.last_line = time.monotonic()
        # At each trial's end (seconds since the start, the time left said, trials done,
        # trials done and counted still to come): what the run's record keeps of its
        # estimates (run/timings.py said_against_truth). The count is the estimate's, the
        # rooms not started grown as it grows them, not the bar's plan.
        self.trace: list[tuple[float, float | None, int, int]] = []
        self.bar: Progress | None = None
        if self.fancy:
            self.bar = Progress(TextColumn("{task.description}"), BarColumn(),
                                MofNCompleteColumn(), TimeElapsedColumn(),
                                TextColumn("{task.fields[left]}"), console=console,
                                transient=True)
            self.task = self.bar.add_task("starting", total=self.total,
                                          left=left_text(self.estimate))
            self.bar.start()

    def grow(self, cases: list[Case]) -> None:
        """An adaptive round adds trials nobody planned; the bar and the time left follow
        (until replan says how many more the plan expects, which grow then only tops up)."""
        for c in cases:
            if self.estimate.todo.get(c, 0) > 0:
                continue  # already in the plan
            self.total += 1
            self.estimate.grow([c])
            self.planned[c.benchmark] += 1
        if self.bar:
            self.bar.update(self.task, total=self.total, left=left_text(self.estimate))

    def replan(self, left: Mapping[Case, int]) -> None:
        """The allocation's plan after a round (trials each case is still expected to take):
        the total and the time left follow it, up or down."""
        self.estimate.replan(left)
        todo = self.estimate.todo
        self.total = self.done + sum(max(0, n) for n in todo.values())
        for bench in {c.benchmark for c in left}:
            self.planned[bench] = self.bench_done[bench] + sum(
                max(0, n) for c, n in todo.items() if c.benchmark == bench)
        if self.bar:
            self.bar.update(self.task, total=self.total, left=left_text(self.estimate))

    def retaking(self, case: Case) -> None:
        """The trial just finished is measured again (bakeoff/run/contention.py): the next
        attempt costs time, which the estimate counts, but is no further trial of the plan;
        the counts say how many were retaken."""
        self.retake_next = True
        self.estimate.retaken(case)
        if self.bar:
            self.bar.update(self.task, left=left_text(self.estimate))

    def decided(self, benchmark: str) -> None:
        """The harness has decided, after a round, what the next round takes: the time since
        the round's last trial is the decision's, not the next trial's."""
        now = time.monotonic()
        if benchmark in self.bench_started:
            self.estimate.decided(benchmark, now - self.last_mark)
            self.last_mark = now

    def starting(self, case: Case, label: str) -> None:
        if case.benchmark not in self.bench_started:
            now = time.monotonic()
            self.bench_started[case.benchmark] = now
            self.estimate.set_up(case.benchmark, now - self.last_mark)
            self.last_mark = now
        if self.bar:
            i = self.benchmarks.index(case.benchmark) + 1 if case.benchmark in self.benchmarks else 0
            self.bar.update(self.task, description=f"[{i}/{len(self.benchmarks)}] {label}")

    def finished(self, case: Case, label: str, result: ProcessResult) -> None:
        now = time.monotonic()
        # From the previous trial's end: the harness's own work (saving the trial, planning the
        # next) is part of what a trial costs the run; a session's set-up is counted apart.
        self.estimate.done(case, now - self.last_mark,
                           counted=any(is_counted(k) for k in result.output.samples),
                           tail=result.tail_s, waited=result.run_delay_s)
        self.last_mark = now
        if self.retake_next:
            self.retake_next = False
            self.retakes[case.benchmark] += 1
        else:
            self.done += 1
            self.bench_done[case.benchmark] += 1
        found = self.estimate.seconds_left()
        self.trace.append((now - self.started, None if found is None else found[0], self.done,
                           self.done + round(self.estimate.trials_counted())))
        if self.bar:
            self.bar.update(self.task, completed=self.done, left=left_text(self.estimate))
        if result.status not in ("ok", "interrupted"):
            self.console.print(Text("trial failed ", style="red") + Text(f"{label}: {result.error}"))
        elif not self.fancy and not self.quiet and now - self.last_line >= HEARTBEAT_S:
            self._line(case.benchmark, ended=False)

    def benchmark_done(self, name: str) -> None:
        """One line on a pipe: the benchmark's trials and time, and the run's."""
        if not self.fancy and not self.quiet and self.bench_done.get(name):
            self._line(name, ended=True)

    def _line(self, name: str, ended: bool) -> None:
        now = time.monotonic()
        self.last_line = now
        took = fmt_duration(now - self.bench_started.get(name, now))
        what = "done" if ended else "running"
        run = f"run {self.done}/{self.total} trials in {fmt_duration(now - self.started)}"
        rest = "" if self.done >= self.total else f", {left_text(self.estimate)}"
        retaken = f" (+{self.retakes[name]} retaken)" if self.retakes.get(name) else ""
        print(f"{name}: {what}, {self.bench_done[name]}/{self.planned[name]} trials{retaken} in {took}; "
              f"{run}{rest}", flush=True)

    def stop(self) -> None:
        if self.bar:
            self.bar.stop()
