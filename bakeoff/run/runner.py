"""Runs a plan: rounds of interleaved trials, each a subprocess, each saved as it finishes.

Order: for each benchmark, warm-up rounds (discarded) then measured rounds; a round runs once
every case that still needs a trial, in an order shuffled by the run's seed, so that drift of
the machine (thermal, background work, page cache) hits every variant alike.

A case needs trials until it has the profile's count; with --target-ci, until its median's CI
is narrow enough or it reaches --max-trials. --time-budget stops the whole run before a trial
that would not fit. The same loop finishes an interrupted run (--resume): what is recorded
counts, so nothing measured is measured again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import random
import secrets
import signal
import time
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.text import Text

from bakeoff.core.errors import Interrupted, UsageError
from bakeoff.declare import questions, registry
from bakeoff.declare.model import (
    Case,
    Contention,
    Profile,
    RunContext,
    RunRecord,
    RunSettings,
    Trial,
)
from bakeoff.machine import cpus
from bakeoff.machine import host as hostmod
from bakeoff.plan.cases import BenchmarkPlan
from bakeoff.run import allocation, cleanup, contention, interrupts, timings
from bakeoff.run import target as precision_target
from bakeoff.run.progress import RunProgress, earlier_times_and_trials
from bakeoff.run.protocol import ProgramOutput, plan_trial
from bakeoff.run.trial_process import ActiveChild, ProcessResult, run_program
from bakeoff.stats import estimates as stats
from bakeoff.store import results as store

DEFAULT_MAX_TRIALS = precision_target.DEFAULT_MAX_TRIALS  # with a target, no --max-trials
MIN_TRIALS_FOR_TARGET = 3  # a case meets --target-ci only from this many trials on

# Trials of a case no question reads (Profile.other_trials) that take counted samples: its
# counters once, without a CI (docs/notes/make-bench-time-20261129-epyc.md).
UNREAD_COUNTED_TRIALS = 1


@dataclass(frozen=True)
class RunOptions:
    out: Path | None
    results_root: Path
    build_dir: Path
    seed: int | None
    quiet: bool
    argv: list[str]
    profile: str
    settings: RunSettings = field(default_factory=RunSettings)


def median_half_width(per_trial: Sequence[Sequence[float]], net: bool = False) -> float:
    """--target-ci's measure of a case: its median's CI half-width as a fraction of the
    median, from its trials' samples; inf when it cannot count yet. net: a net difference
    (Metric.net), whose CI the report takes on the linear scale."""
    # Two trials whose medians happen to be equal (integer nanoseconds, a tight case) give
    # a zero-wide CI that says nothing about the spread: CI saw a case stop at 2 trials
    # under an impossible target. Three trials at least, and a zero-wide CI only counts
    # when every sample is the same value.
    if len(per_trial) < MIN_TRIALS_FOR_TARGET:
        return math.inf
    pooled = np.concatenate([np.asarray(p, dtype=float) for p in per_trial])
    ci = stats.median_ci(per_trial, log=False if net else None)  # the report's CI
    if ci.high == ci.low and pooled.min() != pooled.max():
        return math.inf
    center = float(np.median(pooled))
    return (ci.high - ci.low) / 2 / abs(center) if center != 0 else math.inf


def _trial_label(case: Case, round_no: int | None) -> str:
    params = " ".join(f"{k}={v}" for k, v in case.params)
    kind = "warm-up" if round_no is None else f"round {round_no + 1}"
    return f"{case.benchmark} {case.variant} {params} ({kind})"


def new_run(
    plans: Sequence[BenchmarkPlan],
    opts: RunOptions,
    facts: hostmod.HostFacts,
    console: Console,
) -> tuple[RunRecord, Path]:
    """Create the results directory and the run's record, saved before any trial runs."""
    run_dir = store.prepare_run_dir(
        opts.out, "-".join(p.benchmark.name for p in plans) or "empty", opts.results_root)
    seed = opts.seed if opts.seed is not None else secrets.randbelow(2**31)
    # "pinning" is added when measuring starts and the run claims its CPU (bakeoff.machine.cpus).
    host = {**facts.to_json(), "trial_rusage": ("the trial's own (bakeoff-launch)" if registry.launcher() else
                             "includes the harness's copied memory: bakeoff-launch not built")}
    infos = {}
    for p in plans:
        info = p.benchmark.info()
        info.profile = {"trials": p.profile.trials, "samples": p.profile.samples,
                        "warmup_samples": p.profile.warmup_samples,
                        "warmup_trials": p.profile.warmup_trials, "timeout_s": p.profile.timeout_s}
        if p.profile.min_trials is not None:
            info.profile["min_trials"] = p.profile.min_trials
        if p.profile.answer_trials is not None:
            info.profile["answer_trials"] = p.profile.answer_trials
        if p.profile.other_trials is not None:
            info.profile["other_trials"] = p.profile.other_trials
        if p.profile.counted_samples:
            info.profile["counted_samples"] = p.profile.counted_samples
            if p.profile.counted_trials is not None:
                info.profile["counted_trials"] = p.profile.counted_trials
        infos[p.benchmark.name] = info
    run = RunRecord(
        schema_version=store.SCHEMA_VERSION, run_id=run_dir.name, status="running",
        started_at=store.utc_now(), finished_at=None, argv=opts.argv, profile=opts.profile,
        seed=seed, host=host, warnings=hostmod.noise_warnings(facts), benchmarks=infos,
        cases=[c for p in plans for c in p.cases], skips=[s for p in plans for s in p.skips],
        trials=[], settings=opts.settings,
    )
    store.save(run, run_dir)
    if not opts.quiet:
        for w in run.warnings:
            console.print(Text("warning: ", style="yellow") + Text(w))
    return run, run_dir


class _Budget:
    """The whole run's time budget: a trial starts only if its expected length still fits."""

    def __init__(self, seconds: float | None, start: float | None = None) -> None:
        self.seconds = seconds
        self.start = time.monotonic() if start is None else start
        self.stopped = False  # it stopped a trial from starting

    def left(self) -> float | None:
        if self.seconds is None:
            return None
        return max(0.0, self.seconds - (time.monotonic() - self.start))

    def allows(self, expected_s: float) -> bool:
        if self.seconds is None:
            return True
        return time.monotonic() - self.start + expected_s <= self.seconds


def measure(
    run: RunRecord,
    run_dir: Path,
    plans: Sequence[BenchmarkPlan],
    console: Console,
    ctx: RunContext,
    quiet: bool,
    earlier_runs: Path | None = None,
    budget_from: float | None = None,
) -> None:
    """Run every trial the plans still need, saving after each; raises Interrupted.
    earlier_runs: the results directory whose earlier runs' trial times seed the estimate
    of the time left. budget_from: the time.monotonic() the time budget counts from (the
    command's start; default now)."""
    param_names = list(dict.fromkeys(p.name for pl in plans for p in pl.benchmark.params))
    csv_out = store.SamplesCsv(run_dir / store.SAMPLES_CSV, param_names)
    done = {c: sum(1 for t in run.trials if t.case == c) for c in run.cases}
    todo: dict[Case, int] = {}
    for p in plans:
        # Under sequential allocation a case is sure of min_trials only; the rounds after that
        # add to the count as they are decided (_Measurement._cases_needing_trials).
        planned = _rule(p, run.settings).min_trials
        others = _others(p, run.settings)
        left = {c: max(0, (others.trials if others is not None and c in others.cases
                           else planned) - done.get(c, 0)) for c in p.cases}
        if sum(left.values()):  # warm-ups only where trials are left: see _Measurement.run
            todo.update({c: n + p.profile.warmup_trials for c, n in left.items()})
    earlier, kept, earlier_load = earlier_times_and_trials(earlier_runs, todo, run.profile) \
        if earlier_runs is not None and not quiet else ({}, {}, {})
    # What an earlier run kept in all, less what this one (resumed) already has.
    earlier_kept = {c: n - done.get(c, 0) for c, n in kept.items() if n > done.get(c, 0)}
    declared = {p.benchmark.name: p.profile.trial_s for p in plans if p.profile.trial_s}
    declared_growth = {p.benchmark.name: p.profile.trials_growth for p in plans
                       if p.profile.trials_growth}
    declared_busy = {p.benchmark.name: p.profile.trial_s_busy for p in plans
                     if p.profile.trial_s_busy}
    declared_counting = {p.benchmark.name: p.profile.counting_s for p in plans
                         if p.profile.counting_s}
    # Per benchmark, how many of a case's first trials take counted samples (None: all).
    counted = {p.benchmark.name: 0 if p.profile.counted_samples == 0
               else p.profile.counted_trials for p in plans}
    # The t quantiles (scipy.special), loaded now, before the clock of the time left: by the first
    # decision that forms an interval (the allocation's, a target's), they made it seconds
    # long at load, and the time left multiplied it by the rounds left (a 1.2 s decision said
    # "24 s left" where 11 s remained; 1.8 s in a `cmd --target-ratio-ci` run). Every run
    # loads them anyway, for its report's intervals.
    stats.t_quantile(2.0)
    progress = RunProgress(todo, quiet, console, earlier, declared,
                           no_set_up=[p.benchmark.name for p in plans if p.benchmark.session is None],
                           counted=counted, earlier_kept=earlier_kept,
                           declared_growth=declared_growth, declared_busy=declared_busy,
                           earlier_load=earlier_load, declared_counting=declared_counting)
    # As many CPUs as the most demanding benchmark's trials need (Benchmark.cpus).
    with cpus.held(run.settings.pin,
                   max((p.benchmark.cpus for p in plans), default=1)) as cpu:
        run.host["pinning"] = {"measured_cpu": cpu.measured,
                               "trial_cpus": list(cpu.cpus) or None,
                               "harness_cpus": sorted(cpu.harness) if cpu.harness else None}
        if cpu.warning and cpu.warning not in run.warnings:
            run.warnings.append(cpu.warning)
            if not quiet:
                console.print(Text("warning: ", style="yellow") + Text(cpu.warning))
        # From the command's start, not from here: the set-up before (host facts, the sweep
        # of dead runs, CPU claims) grows under load, and a budget counted from here let a
        # trial start after the budget had run out (docs/RELIABILITY.md).
        budget = _Budget(run.settings.time_budget_s, budget_from)
        progress.estimate.budget_left = budget.left
        # From here to the process's exit a signal is recorded, not raised
        # (bakeoff/run/interrupts.py).
        interrupts.latch()
        interrupts.tell(lambda: f"the {len(run.trials)} trials finished so far are kept in "
                        f"{run_dir}; finish with: bakeoff run --resume {run_dir}")
        try:
            for plan in plans:
                _Measurement(run, run_dir, plan, csv_out, ctx, cpu, progress, budget).run()
            # A signal during the last benchmark's tear-down: every trial is measured, so the
            # run is complete; the caller stops at its next checkpoint, before the reports.
            run.status = "complete"
        except Interrupted:
            run.status = "interrupted"
            raise
        except BaseException:
            run.status = "failed"
            raise
        finally:
            progress.stop()
            measured_s = time.monotonic() - progress.started
            run.timings["measure_s"] = round(measured_s, 3)
            run.timings["time_left"] = timings.said_against_truth(progress.trace, measured_s)
            run.timings["estimate_log"] = {"cases": progress.estimate.cases(),
                                           "log": progress.estimate.log}
            run.finished_at = store.utc_now()
            store.finish(run, run_dir)
        if not quiet:
            console.print(timings.words(run.timings), highlight=False)


def _readings(plan: BenchmarkPlan) -> list[questions.Reading]:
    """What the benchmark's declared questions read among the plan's cases."""
    bench = plan.benchmark
    return questions.benchmark_readings(
        bench.questions, plan.cases, bench.baseline.name,
        [v.name for v in bench.variants if v.control or v.diagnostic],
        bench.crossover_ratios, bench.primary_metric.name)


def _precision(plan: BenchmarkPlan, settings: RunSettings,
               seed: int) -> allocation.Precision | None:
    """The questions' readings and the trials their cases may take, when the profile gives
    answers a share (Profile.answer_trials) and --target-ci does not decide instead."""
    bench, profile = plan.benchmark, plan.profile
    if settings.target_ci is not None or profile.answer_trials is None or not bench.questions:
        return None
    readings = _readings(plan)
    if not readings:
        return None
    # Seeded like the rest of the run's decisions: a resumed run decides as the first did.
    return allocation.Precision(tuple(readings), profile.answer_trials,
                                np.random.default_rng([seed, 3]))


def _others(plan: BenchmarkPlan, settings: RunSettings) -> allocation.Others | None:
    """The cases none of the benchmark's questions reads, when its profile gives them fewer
    trials (Profile.other_trials) and --target-ci does not decide instead; None when every
    case is read, or none is (a question that reads nothing leaves the run as it was)."""
    bench, profile = plan.benchmark, plan.profile
    if settings.target_ci is not None or profile.other_trials is None or not bench.questions:
        return None
    readings = _readings(plan)
    asked = questions.answer_cases(readings)
    rest = frozenset(c for c in plan.cases if c not in asked)
    if not asked or not rest:
        return None
    return allocation.Others(rest, profile.other_trials)


def _rule(plan: BenchmarkPlan, settings: RunSettings) -> allocation.Rule:
    """The benchmark's sequential allocation, or the fixed design (min = max) when its profile
    has none or --target-ci decides instead."""
    low = None if settings.target_ci is not None else plan.profile.min_trials
    return allocation.Rule.for_benchmark(low, plan.profile.trials, settings.threshold,
                                         plan.benchmark.crossover_ratios)


class _Measurement:
    """One benchmark's trials: warm-up rounds, then rounds until no case needs more."""

    def __init__(self, run: RunRecord, run_dir: Path, plan: BenchmarkPlan,
                 csv_out: store.SamplesCsv, ctx: RunContext, claim: cpus.CpuClaim,
                 progress: RunProgress, budget: _Budget) -> None:
        self.record, self.run_dir, self.plan, self.csv_out = run, run_dir, plan, csv_out
        # The trial runs on the first; a session or the trial's partners use the others.
        self.trial_cpus = claim.for_trial(plan.benchmark.cpus) if claim.cpus else ()
        self.ctx = dataclasses.replace(ctx, cases=tuple(plan.cases), trial_cpus=self.trial_cpus)
        self.progress = progress
        self.budget = budget
        self.state: Any = None  # what the benchmark's session yielded, for prepare_trial
        self.program = ctx.build_dir / plan.benchmark.program
        self.launcher = registry.launcher()
        mine = [t for t in run.trials if t.case.benchmark == plan.benchmark.name]
        self.count = {c: sum(1 for t in mine if t.case == c) for c in plan.cases}
        self.walls: dict[Case, list[float]] = {c: [t.wall_s for t in mine if t.case == c]
                                               for c in plan.cases}
        self.round_no = max((t.round for t in mine), default=-1) + 1
        # Cases a timed-out trial ended (Benchmark.timeout_ends_case); a resumed run keeps
        # them ended.
        self.ended: set[Case] = ({t.case for t in mine if t.status == "timeout"}
                                 if plan.benchmark.timeout_ends_case else set())
        # One generator per benchmark, derived from the run seed and the round reached, so
        # adding a benchmark to a run does not reshuffle another's order, and a resumed run
        # does not replay the order of the rounds it already ran.
        self.order_rng = random.Random(f"{run.seed}:{plan.benchmark.name}:{self.round_no}")
        self.settings = run.settings
        self.adaptive = bool(self.settings.target_ci or self.settings.target_ratio_ci)
        self.max_trials = self.settings.max_trials or (
            DEFAULT_MAX_TRIALS if self.adaptive else plan.profile.trials)
        # With a target and no --max-trials, the cap is fitted to what the target needs
        # (run/target.py); the target's one warning is said once.
        self.fit_cap = self.adaptive and self.settings.max_trials is None
        self.warned = False
        self.rule = _rule(plan, self.settings)
        self.precision = _precision(plan, self.settings, run.seed)
        self.others = _others(plan, self.settings)
        # Retakes that find no freer CPU (_judge_retakes): in a row, and whether they stopped.
        self.futile_in_a_row = 0
        self.retakes_futile = False

    def run(self) -> None:
        bench, profile = self.plan.benchmark, self.plan.profile
        if not self.plan.cases:
            return
        if not self.program.exists():
            raise UsageError(f"{bench.name}: program {bench.program} is not built in "
                             f"{self.ctx.build_dir}; run make build")
        todo = self._cases_needing_trials()
        if not todo:
            # A resumed run that had measured everything (a signal came in the session's
            # tear-down): no session to set up, no warm-up to spend.
            return
        clock = timings.BenchmarkClock(bench.name)
        before = sum(self.count.values())
        try:
            with ExitStack() as stack:
                # Last, after the session's tear-down: what a trial SIGKILLed after its grace
                # could not remove (its temp directory, a probe) is a dead process's, so swept.
                stack.callback(self._sweep_if_trials_were_killed,
                               ActiveChild.killed_after_grace)
                clock.enter("set_up")
                if bench.session is not None:
                    self.state = stack.enter_context(bench.session(self.ctx))
                clock.enter("warm_up")
                for _ in range(profile.warmup_trials):
                    self._round(self.plan.cases, warmup=True)
                clock.enter("trials")
                while todo:
                    if not self._round(todo, warmup=False):
                        break
                    self._replan()
                    todo = self._cases_needing_trials()
                    self.progress.decided(bench.name)
                interrupts.log_phase("teardown")  # the session's, as the stack closes
                clock.enter("tear_down")
        finally:
            clock.stop()
            timings.record_benchmark(self.record, clock, sum(self.count.values()) - before)
        self._say_target_missed()
        self.progress.benchmark_done(bench.name)

    # ---- the plan: what the time left is estimated from, and the target's words -----------

    def _replan(self) -> None:
        """After a round: the trials each case is still expected to take, from the
        allocation's own rule at the measured spread; with a target, the fitted cap and, once,
        the warning that it will not be reached."""
        if self.adaptive and not (self.rule.sequential or self.precision or self.others):
            status, need = self._target_status()
            if self.fit_cap:
                self.max_trials = precision_target.fitted_cap(status.needed, None,
                                                              status.rounds)
                status = dataclasses.replace(status, cap=self.max_trials)
            warning = status.warning()
            if warning and not self.warned:
                self.warned = True
                self.record.warnings.append(warning)
                if not self.progress.quiet:
                    self.progress.console.print(Text("warning: ", style="yellow")
                                                + Text(warning))
            # What the budget lets a round still be taken (each open case once a round).
            budget_rounds = (int(status.budget_left_s / status.round_s)
                             if status.budget_left_s is not None and status.round_s
                             else None)
            left = {c: max(0, min(n, self.max_trials) - self.count[c]) for c, n in need.items()}
            if budget_rounds is not None:
                left = {c: min(n, budget_rounds) for c, n in left.items()}
        elif self.rule.sequential or self.precision or self.others:
            expected = allocation.expected_trials(
                self.plan.cases, self.count, self._ranked_samples,
                self.plan.benchmark.baseline.name, self.rule, self.precision,
                self._metric_samples, self.others)
            left = {c: max(0, n - self.count[c]) for c, n in expected.items()}
        else:
            return
        self.progress.replan({c: n for c, n in left.items() if c not in self.ended})

    def _target_status(self) -> tuple[precision_target.Progress, dict[Case, int]]:
        """Where the target stands (its widest case), and each case's rounds needed."""
        flag = "--target-ratio-ci" if self.settings.target_ratio_ci else "--target-ci"
        goal = (self.settings.target_ratio_ci or self.settings.target_ci) or 0.0
        widths = self._half_widths()
        need: dict[Case, int] = {}
        for case, width in widths.items():
            needed = precision_target.rounds_needed(width, goal, self.count[case])
            need[case] = self.max_trials if needed is None else needed
        widest = max(widths, key=lambda c: widths[c], default=None)
        # A round of the cases still open: each one's typical trial, as the run spends it
        # (from one trial's end to the next's: the harness's own work included).
        took = self.progress.estimate.took
        open_walls = [float(np.median((took.get(c) or self.walls[c])[-5:]))
                      for c, n in need.items()
                      if n > self.count[c] and (took.get(c) or self.walls.get(c))]
        per_round = sum(open_walls) if open_walls else None
        status = precision_target.Progress(
            flag=flag, target=goal,
            widest=widths[widest] if widest is not None else 0.0,
            widest_case=widest.key if widest is not None else "",
            rounds=self.count[widest] if widest is not None else 0,
            needed=need.get(widest) if widest is not None else None,
            cap=self.max_trials, round_s=per_round, budget_left_s=self.budget.left())
        return status, need

    def _half_widths(self) -> dict[Case, float]:
        """Each case's half-width against its target (a fraction; inf when not formable):
        a ratio's for --target-ratio-ci (its baseline takes its widest variant's), the
        median's for --target-ci."""
        widths: dict[Case, float] = {}
        if self.settings.target_ratio_ci:
            metric = self.plan.benchmark.primary_metric.name
            baseline = self.plan.benchmark.baseline.name
            base_of = {c.params: c for c in self.plan.cases if c.variant == baseline}
            for case in self.plan.cases:
                base = base_of.get(case.params)
                if case.variant == baseline or base is None:
                    continue
                width = self._ratio_half_width(case, base, metric)
                widths[case] = width
                widths[base] = max(widths.get(base, 0.0), width)
        if self.settings.target_ci:
            for case in self.plan.cases:
                widths[case] = max(widths.get(case, 0.0), self._median_half_width(case))
        return widths

    def _say_target_missed(self) -> None:
        """A target not reached is said, with what was reached and why, in the terminal and
        in the run's stop_reason (the report's "measuring stopped early")."""
        if not self.adaptive or self.rule.sequential or self.precision or self.others:
            return
        if not any(self.count.values()):
            return
        status, _ = self._target_status()
        missed = status.missed(self.budget.stopped)
        if missed is None:
            return
        self.record.stop_reason = missed  # the report's "measuring stopped early"
        if not self.progress.quiet:
            self.progress.console.print(Text("warning: ", style="yellow") + Text(missed))

    def _sweep_if_trials_were_killed(self, killed_before: int) -> None:
        if ActiveChild.killed_after_grace == killed_before:
            return
        bench = self.plan.benchmark
        with contextlib.suppress(Exception):  # a sweep that fails must not hide the run's end
            cleanup.sweep_scratch()
            if bench.sweep is not None:
                bench.sweep()

    def _cases_needing_trials(self) -> list[Case]:
        return [c for c in self._cases_needing_trials_any() if c not in self.ended]

    def _cases_needing_trials_any(self) -> list[Case]:
        if self.rule.sequential or self.precision is not None or self.others is not None:
            todo = self._open_cases()
            self.progress.grow([c for c in todo if self.count[c] >= self._planned(c)])
            return todo
        planned = self.plan.profile.trials
        todo = [c for c in self.plan.cases if self.count[c] < min(planned, self.max_trials)]
        if todo or (self.settings.target_ci is None and self.settings.target_ratio_ci is None):
            return todo
        wide_ratio = self._ratios_too_wide() if self.settings.target_ratio_ci else set()
        wide = [c for c in self.plan.cases if c in wide_ratio or (
            self.settings.target_ci is not None and not self._ci_narrow_enough(c))]
        capped = [c for c in wide if self.count[c] >= self.max_trials]
        self.record.capped = [c for c in self.record.capped if c not in self.plan.cases] + capped
        todo = [c for c in wide if self.count[c] < self.max_trials]
        if todo:
            self.progress.grow(todo)
        return todo

    def _planned(self, case: Case) -> int:
        """The trials the estimate of the time left counted for the case from the start
        (measure()); the rules' later ones join it as they are decided."""
        if self.others is not None and case in self.others.cases:
            return self.others.trials
        return self.rule.min_trials

    def _open_cases(self) -> list[Case]:
        """Under sequential allocation: the cases the rule gives another trial."""
        return allocation.cases_needing_trials(self.plan.cases, self.count, self._ranked_samples,
                                               self.plan.benchmark.baseline.name, self.rule,
                                               self.precision, self._metric_samples,
                                               self.others)

    def _ranked_samples(self, case: Case) -> list[list[float]]:
        """The case's ok trials' values of the primary metric as verdicts rank them (|value|
        of a signed metric, as analysis does)."""
        return self._metric_samples(case, self.plan.benchmark.primary_metric.name)

    def _metric_samples(self, case: Case, name: str) -> list[list[float]]:
        """The case's ok trials' values of one metric as compared (|value| when signed)."""
        signed = any(m.name == name and m.signed for m in self.plan.benchmark.metrics)
        per_trial = [t.samples[name] for t in self.record.trials
                     if t.case == case and t.ok and t.samples.get(name)]
        return [[abs(v) for v in t] for t in per_trial] if signed else per_trial

    def _ci_narrow_enough(self, case: Case) -> bool:
        return self._median_half_width(case) <= (self.settings.target_ci or 0.0)

    def _median_half_width(self, case: Case) -> float:
        """The case's median CI half-width as a fraction of the median (median_half_width)."""
        metric = self.plan.benchmark.primary_metric
        per_trial = [t.samples[metric.name] for t in self.record.trials
                     if t.case == case and t.ok and t.samples.get(metric.name)]
        return median_half_width(per_trial, net=metric.net)

    def _ratios_too_wide(self) -> set[Case]:
        """--target-ratio-ci: each variant case whose ratio to the baseline at the same
        params has a CI wider than the target, with that baseline (both sides carry the
        ratio's error). The CI is the report's: paired by round (stats.ratio_ci), so drift
        the round shares does not count against it, as it does not in the verdict."""
        metric = self.plan.benchmark.primary_metric.name
        baseline = self.plan.benchmark.baseline.name
        base_of = {c.params: c for c in self.plan.cases if c.variant == baseline}
        wide: set[Case] = set()
        for case in self.plan.cases:
            base = base_of.get(case.params)
            if case.variant == baseline or base is None:
                continue
            if not self._ratio_narrow_enough(case, base, metric):
                wide.update((case, base))
        return wide

    def _ratio_narrow_enough(self, case: Case, base: Case, metric: str) -> bool:
        return self._ratio_half_width(case, base, metric) <= (self.settings.target_ratio_ci
                                                               or 0.0)

    def _ratio_half_width(self, case: Case, base: Case, metric: str) -> float:
        """The half-width of the case's ratio CI to its baseline, as a fraction of the ratio
        (log-centred); inf when it cannot count yet."""
        def ok(c: Case) -> list[Trial]:
            return [t for t in self.record.trials if t.case == c and t.ok and t.samples.get(metric)]
        v, b = ok(case), ok(base)
        # As for --target-ci: from 3 trials a side, so that two trials that happen to agree
        # do not end a case.
        if min(len(v), len(b)) < MIN_TRIALS_FOR_TARGET:
            return math.inf
        try:
            r = stats.ratio_ci([t.samples[metric] for t in v], [t.samples[metric] for t in b],
                               variant_rounds=[t.round for t in v],
                               baseline_rounds=[t.round for t in b])
        except ValueError:  # a baseline median of 0: no ratio, so never precise enough
            return math.inf
        centre = math.sqrt(r.ci_low * r.ci_high) if r.ci_low > 0 else r.ratio
        return allocation.relative_half_width(r.ci_low, r.ci_high, centre)

    def _expected_wall(self, case: Case) -> float:
        walls = self.walls.get(case) or [w for ws in self.walls.values() for w in ws]
        return float(np.median(walls)) if walls else 0.0

    def _round(self, cases: Sequence[Case], warmup: bool) -> bool:
        """Run each case once, shuffled. False when the time budget stopped the run."""
        order = list(cases)
        self.order_rng.shuffle(order)
        for case in order:
            if case in self.ended:
                continue
            interrupts.checkpoint("trial")
            if not self.budget.allows(self._expected_wall(case)):
                self.budget.stopped = True
                self.record.stop_reason = (f"time budget of {self.settings.time_budget_s:g} s "
                                        "reached")
                short = (self._open_cases()
                         if self.rule.sequential or self.precision or self.others else
                         [c for c in self.plan.cases
                          if self.count[c] < min(self.plan.profile.trials, self.max_trials)])
                self.record.capped += [c for c in short if c not in self.record.capped]
                return False
            self._trial(case, None if warmup else self.round_no)
            if not warmup and self.count[case] == 1:
                # A case's first trial: the plan is made again at once rather than at the
                # round's end, so the first round's time left counts the trials the rules
                # will add (docs/RELIABILITY.md, "The time left": a first round was a third
                # of a mremap-vs-memcpy run, and its plan then counted only min_trials).
                self._replan()
        if not warmup:
            self.round_no += 1
        return True

    def _attempt(self, case: Case, label: str,
                 profile: Profile) -> tuple[str, ProcessResult, Contention | None]:
        """One run of the trial's process: when it started, what it gave, its contention."""
        bench = self.plan.benchmark
        self.progress.starting(case, label)
        trial_plan = plan_trial(bench, case, profile, self.ctx, self.state)
        started = store.utc_now()
        env = {**trial_plan.env, **cpus.trial_env(self.trial_cpus)}
        mark = contention.MachineMark.now()
        result = (ProcessResult("failed", None, 0.0, ProgramOutput(), None, "",
                                trial_plan.failure) if trial_plan.failure is not None
                  else run_program(trial_plan.argv, env, profile.timeout_s,
                                   self.trial_cpus[0] if self.trial_cpus else None,
                                   self.launcher))
        self.progress.finished(case, label, result)
        if interrupts.received() or result.status == "interrupted":
            # The trial in flight is incomplete: it is not recorded, so a resumed run
            # measures it again instead of keeping half a measurement.
            raise Interrupted(interrupts.received() or signal.SIGINT)
        self.walls.setdefault(case, []).append(result.wall_s)
        strain = contention.of_trial(mark, result.rusage, result.nivcsw, result.run_delay_s,
                                     result.output.meta, len(self.trial_cpus))
        return started, result, strain

    @staticmethod
    def _wait_share(result: ProcessResult, strain: Contention | None) -> float:
        """What the choice among attempts minimises: an ok attempt before any other, then
        the least run-queue wait per wall second."""
        share = strain.wait_share(result.wall_s) if strain is not None else None
        return (0.0 if result.status == "ok" else 1e9) + (share or 0.0)

    def _retake(self, result: ProcessResult, strain: Contention | None, attempts: int) -> bool:
        """Whether to measure the trial again: it was held off the CPU past the threshold,
        it has attempts left, and the run's retake budget is not spent."""
        settings = self.settings
        if result.status != "ok" or attempts > settings.retakes:
            return False
        if len(self.record.retaken) >= max(
                1, contention.RETAKE_BUDGET_SHARE * len(self.record.trials)):
            return False
        if not self.budget.allows(result.wall_s) or self.retakes_futile:
            return False
        return contention.retake_reason(strain, result.wall_s,
                                        settings.retake_wait) is not None

    def _judge_retakes(self, kept: ProcessResult, strain: Contention | None,
                       attempts: int) -> None:
        """After a trial that was retaken: did a retake find a CPU free enough? After
        RETAKE_FUTILE_AFTER trials in a row whose every attempt waited past the threshold,
        the machine is busy throughout: retakes stop for this benchmark, and the run says so
        (the figures are then the busy machine's; the report's header says how busy)."""
        if attempts < 2:
            return
        if contention.retake_reason(strain, kept.wall_s, self.settings.retake_wait) is None:
            self.futile_in_a_row = 0
            return
        self.futile_in_a_row += 1
        if self.futile_in_a_row >= contention.RETAKE_FUTILE_AFTER:
            self.retakes_futile = True
            self.record.warnings.append(
                f"{self.plan.benchmark.name}: retakes stopped after {self.futile_in_a_row} "
                "trials in a row whose every attempt waited over "
                f"{(self.settings.retake_wait or 0) * 100:g}% of its wall time for a CPU: the "
                "machine was busy throughout, so its figures include other work's time")

    def _record_retaken(self, case: Case, round_no: int, started: str, result: ProcessResult,
                        strain: Contention | None) -> None:
        why = contention.retake_reason(strain, result.wall_s, self.settings.retake_wait)
        trial = Trial(case=case, index=self.count[case], round=round_no,
                      status=result.status,  # type: ignore[arg-type]
                      started_at=started, wall_s=result.wall_s, exit_code=result.exit_code,
                      samples={}, counters={}, meta={}, rusage=result.rusage,
                      error=result.error, contention=strain,
                      retaken_because=why or "a less contended attempt was kept")
        store.append_trial(trial, self.run_dir)
        self.record.retaken.append(trial)

    def _trial(self, case: Case, round_no: int | None) -> None:
        bench, profile = self.plan.benchmark, self.plan.profile
        label = _trial_label(case, round_no)
        counted_trials = profile.counted_trials
        if self.others is not None and case in self.others.cases:
            # A case no question reads: its counters once, for its table row; no answer's
            # why reads them, and each counted trial costs a trial's exit the counted
            # tracepoints' RCU grace periods (Profile.counted_trials).
            counted_trials = min(counted_trials or 1, UNREAD_COUNTED_TRIALS)
        if round_no is None or (counted_trials is not None
                                and self.count[case] >= counted_trials):
            # Counted samples in a case's first counted_trials measured trials only.
            profile = dataclasses.replace(profile, counted_samples=0)
        attempts: list[tuple[str, ProcessResult, Contention | None]] = []
        while True:
            started, result, strain = self._attempt(case, label, profile)
            attempts.append((started, result, strain))
            if round_no is None or not self._retake(result, strain, len(attempts)):
                break
            self.progress.retaking(case)  # more time, not another trial of the plan
        # The least contended attempt is the trial; the others are recorded as retaken.
        started, result, strain = min(attempts, key=lambda a: self._wait_share(a[1], a[2]))
        self._judge_retakes(result, strain, len(attempts))
        for other_started, other, other_strain in attempts:
            if other is not result and round_no is not None:
                self._record_retaken(case, round_no, other_started, other, other_strain)
        if result.status == "timeout" and bench.timeout_ends_case:
            self.ended.add(case)
            self.record.warnings.append(
                f"{label} timed out after {profile.timeout_s:g} s; its other trials were not "
                "run (a command that hangs once would hang again); the other cases went on")
        if round_no is None:
            if result.status != "ok":
                # Not a measurement, so not a failed trial; but a case that cannot even warm
                # up is news the report must carry.
                self.record.warnings.append(f"a warm-up trial of {label} failed: {result.error}")
            return
        ok = result.status == "ok"
        measured = result.output.samples if ok else {}
        kept: dict[str, list[float]] = {}
        counts: dict[str, int] = {}
        for metric, values in measured.items():
            quantiles = stats.sketch(values)
            kept[metric] = values.tolist() if quantiles is None else quantiles
            if quantiles is not None:
                counts[metric] = len(values)
        trial = Trial(
            case=case, index=self.count[case], round=round_no,
            status=result.status,  # type: ignore[arg-type]
            started_at=started, wall_s=result.wall_s, exit_code=result.exit_code,
            samples=kept, counters=result.output.counters, meta=result.output.meta,
            rusage=result.rusage, error=result.error, stderr_tail=result.stderr_tail,
            sample_counts=counts, contention=strain,
        )
        # Every sample to samples.csv first, then the trial to the journal: a kill between
        # leaves CSV rows of a trial the record lacks, which --resume drops.
        if ok:
            self.csv_out.append(case, trial.index, measured)
        store.append_trial(trial, self.run_dir)
        self.count[case] += 1
        self.record.trials.append(trial)
