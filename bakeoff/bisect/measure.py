"""One bisect step: the good build and a candidate measured interleaved in one `cmd` run.

The two measure commands (`{build}` replaced by each build's tree) become a `bakeoff cmd`
definition, "old good" and "new <commit>", measured by the runner as `bakeoff cmd` is
(trials of both in seeded order per round, each a fresh bakeoff-cmd-exec process), and
compared as `compare --rerun` does: `rerun.split` then `compare_runs(..., interleaved=True)`,
whose CI is paired by round, so drift a round shares cancels.

A step measures in looks. The first adds rounds until the ratio's CI half-width reaches the
step's target (`cmd --target-ratio-ci`, from MIN_ROUNDS rounds); stopping on the CI's width,
not on where it lies, leaves its coverage as calibrated. While the verdict is UNKNOWN each
further look measures as many rounds again (a new run; rounds pool, as each is a paired
block of its own), until the budget of rounds or seconds is spent.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from bakeoff.analysis.across_runs import compare_runs
from bakeoff.bisect.verdict import RatioCI, classify
from bakeoff.cmd import definition as adhoc
from bakeoff.cmd import rerun
from bakeoff.core.errors import UsageError
from bakeoff.declare import registry
from bakeoff.declare.model import Benchmark, RunContext, RunRecord, RunSettings
from bakeoff.machine import host as hostmod
from bakeoff.plan.cases import plan_run
from bakeoff.run.runner import RunOptions, measure, new_run

MIN_ROUNDS = 8  # a first look's rounds before its CI is looked at
PLACEHOLDER = "{build}"
# A build's path goes into a command line as it is: it must need no quoting there.
_PLAIN_PATH = re.compile(r"^[A-Za-z0-9_./+=,@:-]+$")


@dataclass(frozen=True)
class Request:
    """How every step measures (the user's flags)."""

    measure: str  # with {build}
    metric: str
    threshold: float
    runs: int  # executions per trial
    budget_rounds: int  # per step
    step_time_s: float  # per step
    shell: bool
    seed: int


def check_measure(command: str) -> None:
    if PLACEHOLDER not in command:
        raise UsageError(f"--measure {command!r} has no {PLACEHOLDER}; put {PLACEHOLDER} where "
                         "the build's directory goes, e.g. --measure '{build}/prog'")


def command_for(request: Request, tree: Path) -> str:
    if not _PLAIN_PATH.match(str(tree)):
        raise UsageError(f"the build directory {tree} has characters a command line would "
                         "need quoted; set XDG_CACHE_HOME to a plain path")
    return request.measure.replace(PLACEHOLDER, str(tree))


@dataclass
class Measurer:
    """What every step's run shares: the host's facts, probed once, and the output dir."""

    request: Request
    out: Path
    console: Console

    def __post_init__(self) -> None:
        self.build_dir = registry.build_dir()
        self.caps = hostmod.capabilities()
        self.facts = hostmod.facts(self.build_dir)
        self._probed: set[str] = set()

    def definition(self, good: Path, candidate: Path) -> adhoc.Definition:
        commands = (adhoc.Command(rerun.OLD + "measure", command_for(self.request, good)),
                    adhoc.Command(rerun.NEW + "measure", command_for(self.request, candidate)))
        shell = self.request.shell or any(adhoc.needs_shell(c.command) for c in commands)
        defn = adhoc.Definition(commands=commands,
                                shell=adhoc.shell_path(adhoc.DEFAULT_SHELL) if shell else None,
                                instructions=int(self.request.metric == adhoc.INSTRUCTIONS.name))
        adhoc.check(defn)
        return defn

    def probe(self, command: str, shell: bool) -> None:
        """One execution of a step's command before it is measured: a command that fails
        is one line naming it, not a run of failed trials."""
        if command in self._probed:
            return
        argv = [adhoc.DEFAULT_SHELL, "-c", command] if shell else shlex.split(command)
        try:
            proc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True, timeout=600, check=False)
        except subprocess.TimeoutExpired:
            raise UsageError(f"the measure command {command!r} ran over 600 s; give a "
                             "shorter --measure") from None
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise UsageError(f"the measure command {command!r} exited with status "
                             f"{proc.returncode} ({last}); check --measure on that build")
        self._probed.add(command)

    def benchmark(self, defn: adhoc.Definition, trials: int) -> Benchmark:
        bench = adhoc.benchmark(defn, trials, self.request.runs, warmup=1, warmup_trials=1,
                                timeout_s=600.0)
        # The metric asked for first: it is the primary one the runner's precision target,
        # the analysis and compare_runs read.
        chosen = [m for m in bench.metrics if m.name == self.request.metric]
        rest = [m for m in bench.metrics if m.name != self.request.metric]
        return dataclasses.replace(bench, metrics=(*chosen, *rest), questions=())

    def look(self, run_dir: Path, defn: adhoc.Definition, trials: int, seed: int,
             settings: RunSettings) -> RunRecord:
        """One `cmd` run of good and candidate into run_dir."""
        bench = self.benchmark(defn, trials)
        scratch = Path(tempfile.mkdtemp(prefix=f"bakeoff-{os.getpid()}-"))
        try:
            ctx = RunContext(build_dir=self.build_dir, scratch_dir=scratch,
                             capabilities={k: c.available for k, c in self.caps.items()},
                             host=self.facts)
            plans = plan_run([bench], "default", [], [], None, None, self.caps, ctx)
            opts = RunOptions(out=run_dir, results_root=run_dir.parent,
                              build_dir=self.build_dir, seed=seed, quiet=True,
                              argv=["bakeoff", "bisect", "(step)"], profile="default",
                              settings=settings)
            run, run_dir = new_run(plans, opts, self.facts, self.console)
            measure(run, run_dir, plans, self.console, ctx, True)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        failed = [t for t in run.trials if not t.ok]
        if failed:
            t = failed[0]
            command = next(c.command for c in defn.commands if c.name == t.case.variant)
            raise UsageError(f"the measure command {command!r} failed ({t.status}: "
                             f"{t.error or 'no message'}); check --measure on that build "
                             f"(the run: {run_dir})")
        return run

    def step(self, step_dir: Path, good: Path, candidate: Path, target: float,
             boundary: float, seed: int) -> tuple[RatioCI, int]:
        """Looks until the CI clears the boundary or the budget is spent; the pooled CI and
        the number of looks."""
        req = self.request
        defn = self.definition(good, candidate)
        for c in defn.commands:
            self.probe(c.command, defn.shell is not None)
        started = time.monotonic()
        runs: list[RunRecord] = []
        ci: RatioCI | None = None
        while True:
            used = sum(_rounds(r) for r in runs)
            left_rounds = req.budget_rounds - used
            left_s = req.step_time_s - (time.monotonic() - started)
            if left_rounds < 2 or left_s <= 0:
                break
            if not runs:  # the first look: to the target width
                trials = min(MIN_ROUNDS, left_rounds)
                settings = RunSettings(threshold=req.threshold, target_ratio_ci=target,
                                       max_trials=max(left_rounds, 2), time_budget_s=left_s)
            else:  # as many rounds again, pooled
                trials = min(used, left_rounds)
                settings = RunSettings(threshold=req.threshold, time_budget_s=left_s)
            runs.append(self.look(step_dir / f"look-{len(runs) + 1}", defn, trials,
                                  seed + 7919 * len(runs), settings))
            ci = pooled_ratio(runs, req.threshold)
            if classify(ci, boundary) != "UNKNOWN":
                break
        if ci is None:
            raise UsageError("--budget and --step-time leave no room for a round; raise them")
        return ci, len(runs)


def _rounds(run: RunRecord) -> int:
    return len({t.round for t in run.trials if t.ok})


def pooled_ratio(runs: list[RunRecord], threshold: float) -> RatioCI:
    """new / old over every look's rounds, paired by round (rounds renumbered apart)."""
    trials = []
    offset = 0
    for run in runs:
        trials += [dataclasses.replace(t, round=t.round + offset) for t in run.trials]
        offset += max((t.round for t in run.trials), default=-1) + 1
    merged = dataclasses.replace(runs[0], trials=trials)
    cmp = compare_runs(*rerun.split(merged), threshold, interleaved=True)
    if len(cmp.changes) != 1:
        raise UsageError("the measurement gave no ratio (a metric of 0?); choose another "
                         "--metric")
    r = cmp.changes[0].ratio
    sides = [{t.round for t in trials if t.ok and t.case.variant.startswith(prefix)}
             for prefix in (rerun.OLD, rerun.NEW)]
    return RatioCI(r.ratio, r.ci_low, r.ci_high, len(sides[0] & sides[1]))
