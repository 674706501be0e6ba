"""A run, from a checked RunRequest to its reports: the one place a run's environment is made.

`RunEnvironment` owns what every measuring command needs from this machine: the probed
capabilities and facts, the scratch directory (removed on every way out), and the context a
room's session and trials see; the runner (bakeoff/run/runner.py) and the profiler
(bakeoff/perf/record.py) take the CPUs and latch the signals inside it. `start`, `resume`
and `profile` are what `run`, `cmd`, `compare --rerun` and `profile` call.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.text import Text

from bakeoff.app.console import err_console, out_console
from bakeoff.app.request import RunRequest
from bakeoff.cmd import definition as adhoc
from bakeoff.core import lazy
from bakeoff.core.errors import UsageError
from bakeoff.declare import registry
from bakeoff.declare.model import Benchmark, Case, RunContext, RunRecord
from bakeoff.machine import host as hostmod
from bakeoff.plan.cases import BenchmarkPlan, check_request, plan_run, plans_from_record
from bakeoff.run import cleanup, interrupts
from bakeoff.store import results as store


@dataclass(frozen=True)
class RunEnvironment:
    """This machine as a run sees it, and the scratch directory the run's trials use."""

    build_dir: Path
    capabilities: dict[str, hostmod.Capability]
    facts: hostmod.HostFacts
    scratch: Path

    @classmethod
    @contextlib.contextmanager
    def opened(cls, facts: hostmod.HostFacts | None = None) -> Iterator[RunEnvironment]:
        """Probe the host (the facts a resumed run recorded, when given) and make the scratch
        directory, mode 0700, named with our PID so a later run sweeps it if we are killed."""
        build_dir = registry.build_dir()
        caps = hostmod.capabilities()
        facts = hostmod.facts(build_dir) if facts is None else facts
        scratch = Path(tempfile.mkdtemp(prefix=f"bakeoff-{os.getpid()}-"))
        try:
            yield cls(build_dir, caps, facts, scratch)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def context(self) -> RunContext:
        """What a room's session and trials are given (the runner adds the cases and CPUs)."""
        return RunContext(build_dir=self.build_dir, scratch_dir=self.scratch,
                          capabilities={k: c.available for k, c in self.capabilities.items()},
                          host=self.facts)


def benchmarks(request: RunRequest) -> list[Benchmark]:
    """The benchmarks a request names, each room that did not load said in one line."""
    rooms = registry.load_rooms()
    chosen = registry.select(list(request.names), rooms)
    if not request.names:
        say_broken(rooms)
    return chosen


def say_broken(rooms: registry.Rooms) -> None:
    for room in rooms.broken:
        err_console.print(Text("warning: ", style="yellow") + Text(room.line()), soft_wrap=True)


def start(request: RunRequest, benches: list[Benchmark],
          profile_name: str | None = None) -> tuple[RunRecord, Path]:
    """A new run of the request: checked, planned, measured; returns its record and
    directory (the reports are report_run's)."""
    started = time.monotonic()
    request.check()
    profile = profile_name or request.profile
    # Bad input answers at once: before the host is probed (a quarter second) and numpy loads.
    check_request(benches, profile, request.variants, request.params, request.trials,
                  request.samples)
    with lazy.signals_held():
        from bakeoff.run.runner import RunOptions, measure, new_run

    with RunEnvironment.opened() as env:
        ctx = env.context()
        plans = plan_run(benches, profile, list(request.variants), list(request.params),
                         request.trials, request.samples, env.capabilities, ctx)
        if not any(p.cases for p in plans):
            skips = [s.reason for p in plans for s in p.skips]
            reasons = "; ".join(s.reason for p in plans for s in p.skips[:1])
            # Cases that apply nowhere want other params; cases this host lacks, the doctor.
            fix = ("choose --param values that apply (see bakeoff list)"
                   if skips and all(r.startswith("not applicable") for r in skips)
                   else "see bakeoff doctor")
            raise UsageError(f"nothing this machine can run ({reasons or 'no cases'}); {fix}")
        opts = RunOptions(out=request.out, results_root=registry.REPO_ROOT / "results",
                          build_dir=env.build_dir, seed=request.seed, quiet=request.quiet,
                          argv=["bakeoff", *sys.argv[1:]], profile=profile,
                          settings=request.settings())
        run, run_dir = new_run(plans, opts, env.facts, err_console)
        # After new_run: a bad --out is refused (exit 2) before anything is swept.
        sweep_dead_runs(request.quiet)
        run.timings["set_up_s"] = round(time.monotonic() - started, 3)
        measure(run, run_dir, plans, err_console, ctx, request.quiet,
                earlier_runs=opts.results_root, budget_from=started)
    return run, run_dir


def recorded_plans(run: RunRecord) -> list[BenchmarkPlan]:
    """The plans of a recorded run: its rooms' specs, and a benchmark built at run time
    (bakeoff cmd) from its recorded definition. Only the run's own rooms need to load."""
    rooms = registry.load_rooms()
    return plans_from_record(run, {**rooms.benchmarks, **adhoc.from_record(run)})


def resume(run_dir: Path, quiet: bool) -> tuple[RunRecord, Path]:
    """An interrupted run in run_dir finished, without repeating its recorded trials."""
    run = store.load(run_dir)
    if run.status == "complete":
        raise UsageError(f"{run_dir}: this run is complete; nothing to resume "
                         "(bakeoff report regenerates its reports)")
    plans = recorded_plans(run)
    with lazy.signals_held():
        from bakeoff.run.runner import measure  # numpy: only once the input is good

    sweep_dead_runs(quiet)
    with RunEnvironment.opened(hostmod.HostFacts.from_json(run.host)) as env:
        param_names = list(dict.fromkeys(p.name for pl in plans for p in pl.benchmark.params))
        store.rewrite_samples_csv(run, run_dir, param_names)
        run.status = "running"
        # One file again before going on: the journal then holds this session's trials only.
        run.schema_version = store.SCHEMA_VERSION
        store.finish(run, run_dir)
        measure(run, run_dir, plans, err_console, env.context(), quiet,
                earlier_runs=registry.REPO_ROOT / "results")
    return run, run_dir


def profile(run: RunRecord, run_dir: Path, plan: BenchmarkPlan, case: Case, seconds: float,
            repeat: int | None) -> Any:
    """`bakeoff profile`: the case and its baseline under perf, in this environment."""
    with lazy.signals_held():
        from bakeoff.perf.record import profile_case

    sweep_dead_runs(quiet=False)
    if repeat not in (None, 1) and plan.benchmark.profile_repeat == 1:
        raise UsageError(f"--repeat: {plan.benchmark.name}'s program does not repeat its "
                         "operation (its spec declares no profile_repeat); leave --repeat out")
    with RunEnvironment.opened(hostmod.HostFacts.from_json(run.host)) as env:
        return profile_case(run, run_dir, plan, case, seconds, env.context(), env.capabilities,
                            repeat)


def sweep_dead_runs(quiet: bool) -> None:
    """Before measuring: what runs killed before they could clean up left (a cgroup, a
    tracing daemon, a temp directory), removed, one note each (bakeoff/run/cleanup.py)."""
    rooms = registry.load_rooms()
    for line in cleanup.sweep(rooms.benchmarks.values()):
        if not quiet:
            err_console.print(Text("note: ", style="cyan") + Text(line), soft_wrap=True)


def report_run(run: RunRecord, run_dir: Path, quiet: bool,
               request: RunRequest | None = None) -> Any:
    """The reports of a measured run, then what the request's options do once it is
    complete (RunRequest.when_done); returns its analysis."""
    # Every trial is measured and saved; a signal from here on stops the reports, not the run.
    interrupts.tell(lambda: f"the run is complete ({len(run.trials)} trials saved in "
                    f"{run_dir}); `bakeoff report {run_dir}` writes the reports")
    interrupts.checkpoint("saved")
    analysis = export(run, run_dir, quiet)
    interrupts.tell(lambda: f"the run is complete and its reports are written in {run_dir}")
    for line in request.when_done(run_dir) if request is not None else ():
        out_console.print(line, highlight=False)
    return analysis


def say_failed(run: RunRecord) -> bool:
    """Whether trials failed; if so, says how many."""
    failed = [t for t in run.trials if not t.ok]
    if failed:
        err_console.print(Text(f"{len(failed)} trial(s) failed", style="red")
                          + Text("; see the report"))
    return bool(failed)


def export(run: RunRecord, run_dir: Path, quiet: bool) -> Any:
    """The reports, the terminal summary; returns the analysis."""
    analysis, paths = write_exports(run, run_dir)
    if not quiet:
        with lazy.signals_held():
            from bakeoff.report.terminal import print_summary
        interrupts.checkpoint("summary")
        print_summary(run, analysis, out_console)
    for p in [run_dir / store.RESULTS_JSON, run_dir / store.SAMPLES_CSV, *paths]:
        if p.exists():
            out_console.print(f"wrote {p}", highlight=False)
    return analysis


def write_exports(run: RunRecord, run_dir: Path) -> tuple[Any, list[Path]]:
    """The analysis, and the reports and legacy CSVs it wrote into run_dir."""
    # Imported here, with interrupts held while they load (bakeoff/core/lazy.py says why).
    with lazy.signals_held():
        from bakeoff.analysis.within_run import analyze
        from bakeoff.report import write_reports

    interrupts.checkpoint("analysis")
    analysis = analyze(run, threshold=run.settings.threshold)
    paths = write_reports(run, analysis, run_dir)  # a checkpoint before each file
    interrupts.checkpoint("report:csv")
    paths += store.write_legacy_csvs(run, run_dir)
    return analysis, paths
