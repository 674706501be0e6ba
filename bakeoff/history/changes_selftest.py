"""The change-point self-test: false alarms on A/A histories, detection of injected steps.

Both replay real runs of this machine. The runs are of unchanged code measured again and
again (`bakeoff cmd` of the same command, run after run: `collect`), so whatever moves their
level is the machine. A replayed history takes the runs in blocks of consecutive runs (a
block bootstrap: the drift of the minutes a block spans stays in it; the joins between blocks
bring the larger moves between distant minutes) and resamples each run's trials.

- **A/A**: every change point found in such a history is a false alarm. Two counts: the
  change points `change_points` lists for the whole history (what `bakeoff history` shows),
  and the distinct ones it ever listed while the history grew run by run (what someone who
  reads it after every run is alerted by). Goal: at most 1 per 500 runs of a series.
- **Injected step**: the trials of every run from a chosen one on are multiplied by
  STEP (1.10). Found when a change point within STEP_TOLERANCE runs of the step is listed
  with 5 or fewer runs after it. Goal: found in >= 90% of cases.

Rates come with Clopper-Pearson 95% CIs.
"""

from __future__ import annotations

import json
import math
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import numpy as np

from bakeoff.core import lazy
from bakeoff.core.errors import UsageError
from bakeoff.declare.model import Case, RunRecord
from bakeoff.history.changes import (
    ALPHA,
    MIN_RUNS_AFTER,
    MIN_RUNS_BEFORE,
    RunPoint,
    change_points,
    round_ratios,
)
from bakeoff.store import results as store

STEP: Final = 1.10  # the injected step
RUNS_AFTER_GOAL: Final = 5  # the step must be found with at most this many runs after it
RUNS_AFTER_LOOK: Final = 10  # how far the replay looks, to show how many runs it takes here
STEP_TOLERANCE: Final = 1  # a change point this many runs from the step is the step
FALSE_ALARM_GOAL: Final = 1 / 500  # false change points per A/A run, at most
DETECTION_GOAL: Final = 0.90
BLOCK_RUNS: Final = 10  # consecutive real runs a replayed history takes at a time
FIXTURE_VERSION: Final = 1

# `collect`'s command: awk summing integers (as `bakeoff selftest`), two work sizes, so two
# series a run; no compiler, nothing to build.
COLLECT_COMMANDS: Final = (("small", "awk BEGIN{for(i=0;i<300000;i++)s+=i}"),
                           ("big", "awk BEGIN{for(i=0;i<1200000;i++)s+=i}"))


@dataclass(frozen=True)
class Series:
    """One series' real runs, in the order they ran."""

    name: str
    lower_is_better: bool
    runs: list[RunPoint]


@dataclass(frozen=True)
class Rate:
    hits: int
    n: int

    def ci(self) -> tuple[float, float]:
        """Clopper-Pearson 95% interval of hits / n."""
        if not self.n:
            return math.nan, math.nan
        result = lazy.load("scipy.stats").binomtest(self.hits, self.n)
        ci = result.proportion_ci(confidence_level=0.95, method="exact")
        return float(ci.low), float(ci.high)

    def words(self, per: float = 1.0, unit: str = "") -> str:
        if not self.n:
            return "none measured"
        lo, hi = self.ci()
        if per == 1.0:
            return (f"{self.hits}/{self.n} = {self.hits / self.n * 100:.1f}% "
                    f"(95% CI {lo * 100:.1f}-{hi * 100:.1f}%)")
        return (f"{self.hits}/{self.n} = {self.hits / self.n * per:.2f} {unit} "
                f"(95% CI {lo * per:.2f}-{hi * per:.2f})")


@dataclass(frozen=True)
class SeriesFigures:
    name: str
    real_runs: int
    trials_per_run: float  # mean
    spread: float  # run-to-run sigma of the real runs (log SD), whole sequence, no change
    within_se: float  # median of the runs' own log-scale SE
    false_final: Rate  # change points listed for whole A/A histories, per run
    false_grown: Rate  # distinct change points listed while A/A histories grew, per run
    detected: Rate  # injected steps found within RUNS_AFTER_GOAL runs
    detected_look: Rate  # injected steps found within RUNS_AFTER_LOOK runs
    latency: dict[int, int]  # runs after the step when first found -> cases


@dataclass(frozen=True)
class Settings:
    histories: int = 200  # A/A histories a series
    length: int = 50  # runs in each
    grown: int = 20  # of them, replayed run by run too
    steps: int = 200  # injected-step cases a series
    seed: int = 1
    step: float = STEP  # the injected step's factor
    alpha: float = ALPHA  # change_points' alpha


def _trial_figure(samples: Sequence[float]) -> float:
    return float(np.median(np.asarray(samples, dtype=float)))


def _samples(samples: dict[str, list[float]], metric: str) -> list[float]:
    """A metric's samples; "a+b" sums two metrics execution by execution (user_time+sys_time:
    the CPU time, which rusage splits between the two at tick granularity)."""
    parts = [samples.get(m) or [] for m in metric.split("+")]
    if not all(parts) or len({len(p) for p in parts}) != 1:
        return []
    return [float(sum(v)) for v in zip(*parts, strict=True)]


def _figures(run: RunRecord, metrics: Sequence[str]) -> dict[tuple[Case, str], dict[int, float]]:
    """Per (case, metric): each ok trial's figure (its median), by round."""
    out: dict[tuple[Case, str], dict[int, float]] = {}
    for t in run.trials:
        info = run.benchmarks.get(t.case.benchmark)
        if info is None or not t.ok:
            continue
        for metric in metrics or [info.primary_metric]:
            samples = _samples(t.samples, metric)
            if samples:
                out.setdefault((t.case, metric), {})[t.round] = _trial_figure(samples)
    return out


def series_from_runs(run_dirs: Sequence[Path], metrics: Sequence[str] = (),
                     ratios: bool = False) -> list[Series]:
    """Each case's metrics across the results directories (its primary metric when `metrics`
    is empty), one value per ok trial (the trial's median), runs in the order they started.
    ratios: also each variant's ratio to its benchmark's baseline (same params), one value
    per round both ran in: what a run measures best, as the machine's drift hits both."""
    runs = sorted((store.load(d) for d in run_dirs), key=lambda r: r.started_at)
    by_name: dict[str, Series] = {}

    def add(name: str, lower: bool, run: RunRecord, values: list[float]) -> None:
        if values:
            series = by_name.setdefault(name, Series(name, lower, []))
            series.runs.append(RunPoint(run.run_id, run.started_at, {}, tuple(values)))

    for run in runs:
        figures = _figures(run, metrics)
        for (case, metric), by_round in figures.items():
            info = run.benchmarks[case.benchmark]
            lower = bool(info.metric(metric.split("+")[0])["lower_is_better"])
            add(f"{case.key} {metric}", lower, run, list(by_round.values()))
            base = figures.get((Case(case.benchmark, info.baseline, case.params), metric))
            if ratios and base is not None and case.variant != info.baseline:
                add(f"{case.key} {metric} / {info.baseline}", lower, run,
                    round_ratios(by_round, base))
    return list(by_name.values())


def save_series(series: Sequence[Series], path: Path, how: str) -> None:
    """The runs' trial values as a small JSON file (what tests replay), a run a line."""
    lines = [f'{{"version": {FIXTURE_VERSION}, "how": {json.dumps(how)}, "series": [']
    for i, s in enumerate(series):
        lines.append(f'{{"name": {json.dumps(s.name)}, '
                     f'"lower_is_better": {json.dumps(s.lower_is_better)}, "runs": [')
        lines += [json.dumps({"run_id": r.run_id, "when": r.when, "values": list(r.values)})
                  + ("," if j < len(s.runs) - 1 else "") for j, r in enumerate(s.runs)]
        lines.append("]}" + ("," if i < len(series) - 1 else ""))
    lines.append("]}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def load_series(path: Path) -> list[Series]:
    try:
        doc = json.loads(path.read_text())
        if doc.get("version") != FIXTURE_VERSION:
            raise UsageError(f"{path}: not a version {FIXTURE_VERSION} series file; make one "
                             "with scripts/changes-selftest --collect N --save FILE")
        return [Series(str(s["name"]), bool(s["lower_is_better"]),
                       [RunPoint(str(r["run_id"]), str(r["when"]), {},
                                 tuple(float(v) for v in r["values"])) for r in s["runs"]])
                for s in doc["series"]]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise UsageError(f"{path}: cannot read a series file ({e}); give a file written by "
                         "scripts/changes-selftest --save") from None


def load_how(path: Path) -> str:
    """The `how` a series file records (where and when its runs were measured)."""
    try:
        return str(json.loads(path.read_text()).get("how", ""))
    except (OSError, ValueError, AttributeError):
        return ""


def replay(runs: Sequence[RunPoint], length: int, rng: np.random.Generator,
           factor_from: int | None = None, factor: float = STEP) -> list[RunPoint]:
    """A history of `length` runs: blocks of BLOCK_RUNS consecutive real runs from random
    places, each run's trials resampled; from run `factor_from` on, every value * factor."""
    block = min(BLOCK_RUNS, len(runs))
    out: list[RunPoint] = []
    while len(out) < length:
        start = int(rng.integers(0, len(runs) - block + 1))
        for r in runs[start:start + block]:
            if len(out) == length:
                break
            i = len(out)
            vals = rng.choice(np.asarray(r.values), size=len(r.values), replace=True)
            if factor_from is not None and i >= factor_from:
                vals = vals * factor
            out.append(RunPoint(f"{r.run_id}#{i}", r.when, {}, tuple(float(v) for v in vals)))
    return out


def _distinct_grown(history: Sequence[RunPoint], lower: bool, alpha: float) -> int:
    """Distinct change points listed as the history grew from its first runs to all of it."""
    seen: set[int] = set()
    for k in range(MIN_RUNS_BEFORE + MIN_RUNS_AFTER, len(history) + 1):
        seen.update(c.index for c in change_points(history[:k], lower, alpha))
    return len(seen)


def _first_found(history: Sequence[RunPoint], step_at: int, lower: bool,
                 alpha: float) -> int | None:
    """How many runs after the step it was first listed (within STEP_TOLERANCE runs of it),
    looking with MIN_RUNS_AFTER to RUNS_AFTER_LOOK runs after it; None if it was not."""
    for after in range(MIN_RUNS_AFTER, min(RUNS_AFTER_LOOK, len(history) - step_at) + 1):
        cps = change_points(history[:step_at + after], lower, alpha)
        if any(abs(c.index - step_at) <= STEP_TOLERANCE for c in cps):
            return after
    return None


def _spread_and_se(runs: Sequence[RunPoint]) -> tuple[float, float]:
    logs = [np.log(np.asarray(r.values)) for r in runs if all(v > 0 for v in r.values)]
    levels = np.array([float(a.mean()) for a in logs])
    se2 = np.array([float(a.var(ddof=1)) / a.size for a in logs if a.size >= 2])
    if levels.size < 2:
        return math.nan, math.nan
    sigma2 = max(0.0, float(levels.var(ddof=1)) - (float(se2.mean()) if se2.size else 0.0))
    return math.sqrt(sigma2), float(np.median(np.sqrt(se2))) if se2.size else math.nan


def measure_series(s: Series, settings: Settings, seed: int,
                   say: Callable[[str], None]) -> SeriesFigures:
    """The A/A and injected-step figures of one series: settings.histories A/A histories of
    settings.length runs (the first settings.grown also replayed run by run); settings.steps
    injected cases, the step after 10 to 30 runs."""
    histories, length, steps = settings.histories, settings.length, settings.steps
    grown = min(settings.grown, histories)
    rng = np.random.default_rng(seed)
    false_final = false_grown = grown_points = 0
    for h in range(histories):
        history = replay(s.runs, length, rng)
        false_final += len(change_points(history, s.lower_is_better, settings.alpha))
        if h < grown:
            false_grown += _distinct_grown(history, s.lower_is_better, settings.alpha)
            grown_points += length
    say(f"  {s.name}: A/A done ({histories} histories of {length} runs)")
    latency: dict[int, int] = {}
    for _ in range(steps):
        step_at = int(rng.integers(10, 31))
        history = replay(s.runs, step_at + RUNS_AFTER_LOOK, rng, factor_from=step_at,
                         factor=settings.step)
        after = _first_found(history, step_at, s.lower_is_better, settings.alpha)
        if after is not None:
            latency[after] = latency.get(after, 0) + 1
    found = sum(n for after, n in latency.items() if after <= RUNS_AFTER_GOAL)
    say(f"  {s.name}: injected steps done ({steps} cases)")
    spread, within = _spread_and_se(s.runs)
    return SeriesFigures(
        name=s.name, real_runs=len(s.runs),
        trials_per_run=float(np.mean([len(r.values) for r in s.runs])),
        spread=spread, within_se=within,
        false_final=Rate(false_final, histories * length),
        false_grown=Rate(false_grown, grown_points),
        detected=Rate(found, steps), detected_look=Rate(sum(latency.values()), steps),
        latency=dict(sorted(latency.items())))


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def report(figs: Sequence[SeriesFigures], step: float = STEP) -> list[str]:
    """The self-test's figures as lines of text."""
    lines = []
    total_false = Rate(sum(f.false_final.hits for f in figs), sum(f.false_final.n for f in figs))
    total_grown = Rate(sum(f.false_grown.hits for f in figs), sum(f.false_grown.n for f in figs))
    total_found = Rate(sum(f.detected.hits for f in figs), sum(f.detected.n for f in figs))
    total_look = Rate(sum(f.detected_look.hits for f in figs),
                      sum(f.detected_look.n for f in figs))
    for f in figs:
        lines += [
            f"series {f.name}: {f.real_runs} real runs, {f.trials_per_run:.1f} trials a run; "
            f"run-to-run spread sigma {f.spread * 100:.1f}%, a run's own SE (median) "
            f"{f.within_se * 100:.1f}%",
            "  A/A false change points per 500 runs, whole history: "
            + f.false_final.words(500, "per 500 runs"),
            "  A/A false change points per 500 runs, listed while it grew: "
            + f.false_grown.words(500, "per 500 runs"),
            f"  +{(step - 1) * 100:.0f}% step found within {RUNS_AFTER_GOAL} runs after it: "
            + f.detected.words()
            + f"; within {RUNS_AFTER_LOOK}: " + f.detected_look.words()
            + "; runs after it when first found: "
            + (", ".join(f"{k}: {v}" for k, v in f.latency.items()) or "none"),
        ]
    lines += [
        "all series: A/A false change points, whole history: "
        + total_false.words(500, "per 500 runs")
        + f" (goal <= {FALSE_ALARM_GOAL * 500:g}: "
        + ("met" if total_false.hits <= FALSE_ALARM_GOAL * total_false.n else "NOT met") + ")",
        "all series: A/A false change points listed while histories grew: "
        + total_grown.words(500, "per 500 runs")
        + (" (goal <= 1: " + ("met" if total_grown.hits <= FALSE_ALARM_GOAL * total_grown.n
                              else "NOT met") + ")" if total_grown.n else ""),
        f"all series: +{(step - 1) * 100:.0f}% step found within {RUNS_AFTER_GOAL} runs: "
        + total_found.words()
        + f" (goal >= {DETECTION_GOAL * 100:.0f}%: "
        + ("met" if total_found.hits >= DETECTION_GOAL * total_found.n else "NOT met") + ")"
        + f"; within {RUNS_AFTER_LOOK} runs: " + total_look.words(),
    ]
    return lines


def collect(runs: int, out: Path, trials: int, executions: int, pause_s: float,
            say: Callable[[str], None]) -> list[Path]:
    """`runs` back-to-back `bakeoff cmd` runs of COLLECT_COMMANDS into out/run-NNN."""
    out.mkdir(parents=True, exist_ok=True)
    dirs = []
    for i in range(1, runs + 1):
        d = out / f"run-{i:03d}"
        argv = [sys.executable, "-m", "bakeoff", "cmd", "-N", "--trials", str(trials),
                "-r", str(executions), "--seed", str(i), "--out", str(d)]
        for name, _ in COLLECT_COMMANDS:
            argv += ["-n", name]
        argv += [c for _, c in COLLECT_COMMANDS]
        done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True, check=False)
        if done.returncode != 0:
            raise UsageError(f"bakeoff cmd failed (exit {done.returncode}): "
                             f"{done.stderr.strip().splitlines()[-1:]}")
        dirs.append(d)
        say(f"  run {i}/{runs} done {datetime.now(UTC):%H:%M:%S}")
        if i < runs:
            time.sleep(pause_s)
    return dirs


def describe(series: Sequence[Series]) -> dict[str, Any]:
    """Where and when the replayed runs were measured, for the output's header."""
    whens = sorted(r.when for s in series for r in s.runs)
    return {"series": len(series), "runs": max((len(s.runs) for s in series), default=0),
            "first": whens[0] if whens else "", "last": whens[-1] if whens else ""}


def run_dirs_under(paths: Sequence[Path]) -> list[Path]:
    """Results directories: each path is one (it holds results.json) or a folder of them."""
    dirs: list[Path] = []
    for p in paths:
        if (p / "results.json").is_file():
            dirs.append(p)
        elif p.is_dir():
            dirs += sorted(d for d in p.iterdir() if (d / "results.json").is_file())
        else:
            raise UsageError(f"{p}: not a results directory nor a folder of them")
    if not dirs:
        raise UsageError(f"no results directory in {', '.join(map(str, paths))}; give the "
                         "--out of bakeoff runs, or --collect N to make some")
    return dirs


def selftest(series: Sequence[Series], settings: Settings,
             say: Callable[[str], None]) -> list[SeriesFigures]:
    """The figures of every series (each seeded apart, so they are independent replays)."""
    for s in series:
        if len(s.runs) < BLOCK_RUNS:
            raise UsageError(f"{s.name}: {len(s.runs)} runs; the replay needs at least "
                             f"{BLOCK_RUNS} (make more: --collect 40)")
    if settings.length < MIN_RUNS_BEFORE + MIN_RUNS_AFTER or settings.histories < 1:
        raise UsageError(f"--length must be at least {MIN_RUNS_BEFORE + MIN_RUNS_AFTER} and "
                         "--histories at least 1, e.g. --histories 200 --length 50")
    if not 0 < settings.alpha < 1 or not settings.step > 0:
        raise UsageError("--alpha is a probability between 0 and 1 (e.g. 0.001) and --step "
                         "a factor above 0 (e.g. 1.10)")
    return [measure_series(s, settings, settings.seed + 1000 * i, say)
            for i, s in enumerate(series)]


def header(series: Sequence[Series], settings: Settings, command: str) -> list[str]:
    d = describe(series)
    return [f"change-point self-test, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
            f"machine: {platform.node()}, {cpu_model()}, {os_cpus()} CPUs, "
            f"Linux {platform.release()}, load average {load_average()}",
            f"command: {command}",
            f"replayed: {d['series']} series of up to {d['runs']} real runs, measured "
            f"{d['first'][:19]} to {d['last'][:19]}",
            f"detector: E-divisive split, confirmed at p <= {settings.alpha} (a null drawn "
            f"from the runs' own errors and spread; {MIN_RUNS_BEFORE}+ runs before, "
            f"{MIN_RUNS_AFTER}+ after); step "
            f"x{settings.step:.2f}, found within {STEP_TOLERANCE} run of it; histories of blocks of "
            f"{BLOCK_RUNS} consecutive real runs, trials resampled"]


def os_cpus() -> int:
    return os.cpu_count() or 0


def load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"
