"""`bakeoff selftest`: how often this host's verdicts are false alarms, measured A/A.

Back-to-back `bakeoff cmd` runs of two identical commands (A and A', each at a few work
sizes): nothing differs, so every CI that excludes 1 misses and every faster/slower is a false
alarm. Two figures come out:

- within a run: A' against A, each run's ratio CIs and verdicts (bakeoff's home ground:
  interleaved trials, ratios within one run);
- across runs: each run against the next, case by case (what `bakeoff compare` of one run a
  side faces). The runs' drift gives the run-to-run spread (bakeoff/stats/drift.py) of these
  commands, now; it is printed, not recorded (a comparison's drift is measured for its own
  commands: selftest/drift_of.py). How well widened CIs would do is checked
  leave-one-pair-out: each pair is judged with the spread estimated from the other pairs.
"""

from __future__ import annotations

import itertools
import math
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bakeoff.analysis.across_runs import compare_runs
from bakeoff.analysis.within_run import analyze
from bakeoff.core import pids as procs
from bakeoff.core.errors import UsageError
from bakeoff.declare.model import RunRecord
from bakeoff.stats import drift, verdicts
from bakeoff.store import results as store

# The measured work: awk summing n integers, so a size scales the work without a compiler.
# The bound is computed once: `i<n*1.1` in the loop would add a multiplication to every
# iteration, and a "10% larger" command would be ~20% slower.
WORK = "awk 'BEGIN{m=LIMIT;for(i=0;i<m;i++)s+=i}'"
DEFAULT_SIZES = (300_000, 1_200_000)
DEFAULT_RUNS = 6
DEFAULT_TRIALS = 5
DEFAULT_SAMPLES = 5


@dataclass(frozen=True)
class Tally:
    """Of n intervals: how many held the true value, how many were called a difference;
    and how many cases gave no interval at all (below the timer's resolution once the
    shell's start-up is subtracted: on a busy machine a short command can read 0), so that
    n plus those is always the number of cases run."""

    n: int
    covered: int
    called: int
    unmeasured: int = 0

    def coverage(self) -> float:
        return self.covered / self.n if self.n else math.nan

    def false_alarms(self) -> float:
        return self.called / self.n if self.n else math.nan

    def words(self) -> str:
        unmeasured = (f"; {self.unmeasured} case(s) below resolution, no interval"
                      if self.unmeasured else "")
        if not self.n:
            return "none measured" + unmeasured
        return (f"coverage {self.coverage() * 100:.0f}% ({self.covered}/{self.n}), "
                f"false alarms {self.false_alarms() * 100:.0f}% ({self.called}/{self.n})"
                + unmeasured)


@dataclass(frozen=True)
class Figures:
    within: Tally  # A' vs A inside each run
    across_raw: Tally  # run vs next run, the within-run CI alone
    across_widened: Tally  # the same, widened by the spread of the other pairs
    sigma: float  # the run-to-run spread from every pair
    pairs: int


def command(limit: str = "{n}") -> str:
    """The measured command line; `{n}` is the work size (a cmd -L scan)."""
    return WORK.replace("LIMIT", limit)


def cmd_argv(out: Path, seed: int, trials: int, samples: int, sizes: Sequence[int],
             work_factor: float = 1.0) -> list[str]:
    """One A/A run: `bakeoff cmd` of the same command twice (names a and b), interleaved.
    work_factor > 1 makes both commands' work that much larger (an injected slowdown); the
    scan values stay the nominal sizes, so such a run matches a plain one case by case."""
    text = command("{n}" if work_factor == 1.0 else f"{{n}}*{work_factor!r}")
    return [sys.executable, "-m", "bakeoff", "cmd", "-n", "a", "-n", "b", text, text,
            "-L", "n", ",".join(str(s) for s in sizes), "--trials", str(trials),
            "-r", str(samples), "--out", str(out), "--seed", str(seed), "--quiet"]


def run_cmd(argv: list[str], timeout_s: float) -> None:
    """One `bakeoff cmd` child; stopped (SIGTERM, grace, SIGKILL) if we are interrupted."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except BaseException:
        procs.stop_child(proc, 5.0)
        raise
    if proc.returncode != 0:
        last = (err.strip().splitlines() or out.strip().splitlines() or ["no output"])[-1]
        raise UsageError(f"selftest: a `bakeoff cmd` run failed (exit {proc.returncode}): "
                         f"{last}; see `bakeoff doctor`")


def _spread_of(logs: list[float], within: list[float], host: str, how: str) -> drift.RunSpread:
    return drift.RunSpread(drift.estimate_sigma(logs, within), len(logs), host,
                           store.utc_now(), how)


def figures(runs: Sequence[RunRecord], threshold: float, how: str = "") -> Figures:
    """The A/A figures of back-to-back runs of identical commands (see the module doc)."""
    within = [0, 0, 0, 0]
    for run in runs:
        for ba in analyze(run, threshold).benchmarks:
            for r in ba.for_metric(ba.info.primary_metric):
                if r.case.variant == ba.info.baseline:
                    continue
                if r.vs_baseline is None:
                    within[3] += 1
                    continue
                within[0] += 1
                within[1] += r.vs_baseline.ci_low <= 1 <= r.vs_baseline.ci_high
                within[2] += verdicts.is_called(r.verdict)
    # Per run pair, each case's log ratio and the within-run variance of it.
    pair_cases: list[list[tuple[float, float, float, float]]] = []
    across_unmeasured = 0
    for old, new in itertools.pairwise(runs):
        cmp = compare_runs(old, new, threshold)
        across_unmeasured += len(cmp.no_ratio) + sum(c.ratio.ratio <= 0 for c in cmp.changes)
        pair_cases.append([(math.log(c.ratio.ratio),
                            drift.log_se_of_ci(c.ratio.ci_low, c.ratio.ci_high),
                            c.ratio.ci_low, c.ratio.ci_high)
                           for c in cmp.changes if c.ratio.ratio > 0])
    host = drift.host_key(runs[0].host) if runs else ""
    # One value per pair: its cases' mean squared log ratio and mean within variance (the
    # cases of one pair share the runs' drift, so the pair is the unit).
    per_pair = [(sum(d * d for d, *_ in cs) / len(cs), sum(se * se for _, se, *_ in cs) / len(cs))
                for cs in pair_cases if cs and all(math.isfinite(se) for _, se, *_ in cs)]
    raw, widened = [0, 0, 0], [0, 0, 0]
    for i, cs in enumerate(pair_cases):
        others = [p for j, p in enumerate(per_pair) if j != i]
        loo = (_spread_of([math.sqrt(d2) for d2, _ in others], [v for _, v in others], host, how)
               if others else None)
        for d, se, lo, hi in cs:
            raw[0] += 1
            raw[1] += lo <= 1 <= hi
            raw[2] += hi < 1 - threshold or lo > 1 + threshold
            if loo is None:
                continue
            wlo, whi, _ = drift.widened(math.exp(d), se, loo)
            widened[0] += 1
            widened[1] += wlo <= 1 <= whi
            widened[2] += whi < 1 - threshold or wlo > 1 + threshold
    spread = (_spread_of([math.sqrt(d2) for d2, _ in per_pair], [v for _, v in per_pair],
                         host, how) if per_pair else None)
    return Figures(Tally(*within), Tally(raw[0], raw[1], raw[2], across_unmeasured),
                   Tally(widened[0], widened[1], widened[2], across_unmeasured),
                   spread.sigma if spread else math.nan, len(per_pair))


def measure(runs: int, trials: int, samples: int, sizes: Sequence[int], seed: int,
            threshold: float, say: Callable[[str], None],
            timeout_s: float = 600.0) -> tuple[Figures, drift.RunSpread | None]:
    """Run the A/A runs back to back in a temporary directory (removed on every exit) and
    return their figures and the run-to-run spread they measured."""
    how = (f"{runs} back-to-back `bakeoff cmd` A/A runs of {command()} at n="
           f"{','.join(str(s) for s in sizes)}, {trials} trials x {samples} executions")
    tmp = Path(tempfile.mkdtemp(prefix="bakeoff-selftest-"))
    try:
        records = []
        for i in range(runs):
            say(f"selftest: run {i + 1} of {runs}")
            out = tmp / f"run-{i + 1}"
            run_cmd(cmd_argv(out, seed + i, trials, samples, sizes), timeout_s)
            records.append(store.load(out))
        figs = figures(records, threshold, how)
        spread = (drift.RunSpread(figs.sigma, figs.pairs, drift.host_key(records[0].host),
                                  store.utc_now(), how) if figs.pairs else None)
        return figs, spread
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
