"""Runs a plan: rounds of interleaved trials, each a subprocess, each saved as it finishes.

Order: for each benchmark, warm-up rounds (discarded) then measured rounds; within a round
every case runs once, in an order shuffled by the run's seed, so that drift of the machine
(thermal, background work, page cache) hits every variant alike.
"""

from __future__ import annotations

import os
import random
import secrets
import signal
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from bakeoff import host as hostmod
from bakeoff import store
from bakeoff.errors import Interrupted, UsageError
from bakeoff.model import Case, Profile, RunContext, RunRecord, Trial, TrialPlan
from bakeoff.plan import BenchmarkPlan
from bakeoff.process import ActiveChild, ProcessResult, run_program


@dataclass(frozen=True)
class RunOptions:
    out: Path | None
    results_root: Path
    build_dir: Path
    seed: int | None
    quiet: bool
    pin: bool
    argv: list[str]
    profile: str


def default_plan_trial(program: Path, case: Case, profile: Profile) -> TrialPlan:
    """The protocol's argv: --variant, one --param per axis, --samples, --warmup."""
    argv = [str(program), "--variant", case.variant]
    for name, value in case.params:
        argv += ["--param", f"{name}={value}"]
    argv += ["--samples", str(profile.samples), "--warmup", str(profile.warmup_samples)]
    return TrialPlan(argv=argv)


@contextmanager
def _signals_stop_the_run() -> Iterator[list[int]]:
    """SIGINT/SIGTERM kill the running trial and make the run stop after saving."""
    received: list[int] = []

    def handler(signum: int, _frame: FrameType | None) -> None:
        received.append(signum)
        ActiveChild.kill()

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield received
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _cpu_split(pin: bool) -> tuple[int | None, set[int] | None]:
    """Measured process on the last CPU, the harness on the rest, when there is a spare."""
    cpus = sorted(os.sched_getaffinity(0))
    if not pin or len(cpus) < 2:
        return None, None
    return cpus[-1], set(cpus[:-1])


class _Progress:
    """A rich bar on a terminal; plain lines otherwise; nothing but failures when quiet."""

    def __init__(self, total: int, quiet: bool, console: Console) -> None:
        self.quiet = quiet
        self.console = console
        self.fancy = console.is_terminal and not quiet
        self.total = total
        self.done = 0
        self.bar: Progress | None = None
        if self.fancy:
            self.bar = Progress(TextColumn("{task.description}"), BarColumn(),
                                MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("ETA"),
                                TimeRemainingColumn(), console=console, transient=True)
            self.task = self.bar.add_task("starting", total=total)
            self.bar.start()

    def starting(self, label: str) -> None:
        if self.bar:
            self.bar.update(self.task, description=label)

    def finished(self, label: str, result: ProcessResult) -> None:
        self.done += 1
        if self.bar:
            self.bar.advance(self.task)
        if result.status not in ("ok", "interrupted"):
            self.console.print(f"[red]trial failed[/red] {label}: {result.error}", markup=True,
                               highlight=False)
        elif not self.fancy and not self.quiet and (self.done % 25 == 0 or self.done == self.total):
            print(f"  {self.done}/{self.total} trials", flush=True)

    def stop(self) -> None:
        if self.bar:
            self.bar.stop()


def _trial_label(case: Case, round_no: int, warmup: bool) -> str:
    params = " ".join(f"{k}={v}" for k, v in case.params)
    kind = "warm-up" if warmup else f"round {round_no + 1}"
    return f"{case.benchmark} {case.variant} {params} ({kind})"


def execute(
    plans: Sequence[BenchmarkPlan],
    opts: RunOptions,
    caps: dict[str, hostmod.Capability],
    facts: dict[str, object],
    console: Console,
    ctx: RunContext,
) -> tuple[RunRecord, Path]:
    run_dir = store.prepare_run_dir(
        opts.out, "-".join(p.benchmark.name for p in plans) or "empty", opts.results_root)
    seed = opts.seed if opts.seed is not None else secrets.randbelow(2**31)
    measured_cpu, harness_cpus = _cpu_split(opts.pin)
    host = {**facts, "pinning": {"measured_cpu": measured_cpu,
                                 "harness_cpus": sorted(harness_cpus) if harness_cpus else None}}
    run = RunRecord(
        schema_version=store.SCHEMA_VERSION, run_id=run_dir.name, status="running",
        started_at=store.utc_now(), finished_at=None, argv=opts.argv, profile=opts.profile,
        seed=seed, host=host, warnings=hostmod.noise_warnings(host),
        benchmarks={p.benchmark.name: p.benchmark.info() for p in plans},
        cases=[c for p in plans for c in p.cases], skips=[s for p in plans for s in p.skips],
        trials=[],
    )
    store.save(run, run_dir)
    if not opts.quiet:
        for w in run.warnings:
            console.print(f"[yellow]warning:[/yellow] {w}", highlight=False)
    param_names = list(dict.fromkeys(p.name for pl in plans for p in pl.benchmark.params))
    csv_out = store.SamplesCsv(run_dir / store.SAMPLES_CSV, param_names)
    total = sum(len(p.cases) * (p.profile.trials + p.profile.warmup_trials) for p in plans)
    progress = _Progress(total, opts.quiet, console)
    old_affinity = os.sched_getaffinity(0)
    try:
        if harness_cpus:
            os.sched_setaffinity(0, harness_cpus)
        with _signals_stop_the_run() as received:
            for plan in plans:
                _run_benchmark(plan, run, run_dir, csv_out, ctx, seed, measured_cpu, progress,
                               received)
        run.status = "complete"
    except Interrupted as exc:
        run.status = "interrupted"
        console.print(f"interrupted by signal {exc.signum}: the {len(run.trials)} trials "
                      f"finished so far are kept in {run_dir}", highlight=False)
        raise
    except BaseException:
        run.status = "failed"
        raise
    finally:
        progress.stop()
        os.sched_setaffinity(0, old_affinity)
        run.finished_at = store.utc_now()
        store.save(run, run_dir)
    return run, run_dir


def _run_benchmark(
    plan: BenchmarkPlan,
    run: RunRecord,
    run_dir: Path,
    csv_out: store.SamplesCsv,
    ctx: RunContext,
    seed: int,
    cpu: int | None,
    progress: _Progress,
    received: list[int],
) -> None:
    bench, profile = plan.benchmark, plan.profile
    program = ctx.build_dir / bench.program
    if plan.cases and not program.exists():
        raise UsageError(f"{bench.name}: program {bench.program} is not built in "
                         f"{ctx.build_dir}; run make build")
    # One generator per benchmark, derived from the run seed, so adding a benchmark to a run
    # does not reshuffle the order of another's trials.
    order_rng = random.Random(f"{seed}:{bench.name}")
    trial_index = {c: 0 for c in plan.cases}
    with ExitStack() as stack:
        if bench.session is not None and plan.cases:
            stack.enter_context(bench.session(ctx))
        rounds = profile.warmup_trials + profile.trials
        for round_no in range(rounds):
            warmup = round_no < profile.warmup_trials
            order = list(plan.cases)
            order_rng.shuffle(order)
            for case in order:
                if received:
                    raise Interrupted(received[0])
                label = _trial_label(case, round_no - profile.warmup_trials, warmup)
                progress.starting(label)
                trial_plan = (bench.plan_trial(case, profile, ctx) if bench.plan_trial
                              else default_plan_trial(program, case, profile))
                started = store.utc_now()
                result = run_program(trial_plan.argv, trial_plan.env, profile.timeout_s, cpu)
                progress.finished(label, result)
                if received or result.status == "interrupted":
                    # The trial in flight is incomplete: it is not recorded, so a resumed
                    # run measures it again instead of keeping half a measurement.
                    raise Interrupted(received[0] if received else signal.SIGINT)
                if warmup:
                    continue
                trial = Trial(
                    case=case, index=trial_index[case], round=round_no - profile.warmup_trials,
                    status=result.status,  # type: ignore[arg-type]
                    started_at=started, wall_s=result.wall_s, exit_code=result.exit_code,
                    samples=result.output.samples if result.status == "ok" else {},
                    counters=result.output.counters, meta=result.output.meta,
                    rusage=result.rusage, error=result.error, stderr_tail=result.stderr_tail,
                )
                trial_index[case] += 1
                run.trials.append(trial)
                if trial.ok:
                    csv_out.append(trial)
                store.save(run, run_dir)


def interrupted_exit_code(signum: int) -> int:
    return 128 + signum

