"""What scripts/aa-verdicts and scripts/busy-verdicts share: running this tree's (or another
tree's) bakeoff as a process, the load average, a share's exact CI; and busy-verdicts' pure
parts (splitting an interleaved run into one-command runs, resampling pairs and histories,
tallying calls), which tests/test_busy_verdicts_script.py checks without measuring anything.
"""

from __future__ import annotations

import dataclasses
import math
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
VENV_PYTHON = REPO / ".venv" / "bin" / "python"


def bakeoff(src: Path, *args: str, env: dict[str, str] | None = None,
            ) -> subprocess.CompletedProcess[str]:
    """`python -m bakeoff` of the tree `src` (its own code, this tree's build)."""
    full = {**os.environ, "PYTHONPATH": str(src),
            "BAKEOFF_BUILD_DIR": str(REPO / "build"), **(env or {})}
    return subprocess.run([str(VENV_PYTHON), "-m", "bakeoff", *args], cwd=src, env=full,
                          capture_output=True, text=True, check=False)


def load() -> str:
    """The 1-minute load average now."""
    return Path("/proc/loadavg").read_text().split()[0]


def exact_bounds(k: int, n: int) -> tuple[float, float]:
    """Clopper-Pearson 95% interval of a share k/n (fractions)."""
    if n == 0:
        return math.nan, math.nan
    from scipy.stats import beta

    lo = 0.0 if k == 0 else float(beta.ppf(0.025, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(0.975, k + 1, n - k))
    return lo, hi


def exact_ci(k: int, n: int) -> str:
    """'3/20 = 15.0% (95% CI 3.2–37.9%)': a share with its Clopper-Pearson 95% interval."""
    if n == 0:
        return "none"
    lo, hi = exact_bounds(k, n)
    return f"{k}/{n} = {k / n * 100:.1f}% (95% CI {lo * 100:.1f}–{hi * 100:.1f}%)"


# ---- busy-verdicts' pure parts ------------------------------------------------------------

@dataclass(frozen=True)
class Tally:
    """Decisions of one kind (say, compare on cpu_time, A/A): how many were made and how many
    called a change (on A/A: false alarms; on a real change: found)."""

    called: int = 0
    n: int = 0

    def add(self, called: bool) -> Tally:
        return Tally(self.called + int(called), self.n + 1)

    def words(self) -> str:
        return exact_ci(self.called, self.n)


def one_command(run: Any, variant: str, name: str = "work") -> Any:
    """One command of an interleaved `bakeoff cmd` run as a run of that command alone, named
    `name`: its trials (rounds and all), the benchmark's variants and recorded definition cut
    to it, so `bakeoff compare` and `compare --rerun` take it as a one-command `cmd` run."""
    (bench, info), = run.benchmarks.items()
    trials = [dataclasses.replace(t, case=dataclasses.replace(t.case, variant=name))
              for t in run.trials if t.case.variant == variant]
    if not trials:
        raise ValueError(f"run {run.run_id} has no trial of {variant!r}")
    variants = [dict(v, name=name, baseline=True) for v in info.variants
                if v["name"] == variant]
    definition = dict(info.definition or {})
    definition["commands"] = [dict(c, name=name) for c in definition.get("commands", [])
                              if c.get("name") == variant]
    new_info = dataclasses.replace(info, baseline=name, variants=variants,
                                   definition=definition)
    cases = list(dict.fromkeys(t.case for t in trials))
    return dataclasses.replace(run, run_id=f"{run.run_id}-{variant}",
                               benchmarks={bench: new_info}, cases=cases, trials=trials,
                               retaken=[], capped=[])


def distinct_pairs(units: Sequence[int], count: int, rng: np.random.Generator,
                   ) -> list[tuple[int, int]]:
    """`count` ordered pairs (i, j), i != j, of the given run indices, drawn without repeating
    a pair while there are pairs left (then with repeats)."""
    units = list(units)
    if len(units) < 2:
        raise ValueError("two runs at least")
    every = [(i, j) for i in units for j in units if i != j]
    order = rng.permutation(len(every))
    return [every[int(order[k % len(every)])] for k in range(count)]


def history(before: Sequence[Sequence[float]], after: Sequence[Sequence[float]],
            n_before: int, n_after: int, start: int) -> list[list[float]]:
    """A history of n_before runs of unchanged code then n_after runs of changed code, from
    runs measured side by side (before[k] and after[k]: the two commands' trials in run k,
    interleaved): the unchanged command of runs start, start + 1, ..., then the changed one
    of the runs that follow, wrapping round at the end. The runs keep the order they were
    measured in, so the drift of the minutes they span stays in the history, and the change
    comes at a run boundary as a commit's would. Each entry: that run's trial values."""
    if len(before) != len(after) or not before:
        raise ValueError("give both commands' values for the same runs")
    n = len(before)
    return ([list(before[(start + k) % n]) for k in range(n_before)]
            + [list(after[(start + n_before + k) % n]) for k in range(n_after)])


def found_at(change_indices: Sequence[int], step_at: int, tolerance: int = 1) -> bool:
    """A change point within `tolerance` runs of the step found it."""
    return any(abs(i - step_at) <= tolerance for i in change_indices)


def false_before(change_indices: Sequence[int], step_at: int, tolerance: int = 1) -> bool:
    """A change point among the identical runs before the step (further from it than
    `tolerance`): a false alarm in a history that also has a real change."""
    return any(i < step_at - tolerance for i in change_indices)
