"""Per series, its runs as levels (each run's median with its 95% CI, from the run's trials as
the run's own report computes it: stats.median_ci) and where the level changed.

A variant that has a baseline is listed, and searched for changes, as its per-round ratio to
the baseline measured in the same run (changes.round_ratios): the machine's drift hits both
and cancels, and on this VM the detector's false alarms on ratio series meet the goal while on
absolute times they do not (docs/CHANGE-POINTS.md). The baseline itself, and a series whose
baseline is not known or not recorded, is listed as its absolute level; its change points
are marked as including the machine's drift (docs/HISTORY.md).

A run's figure is recomputed from the trials the history keeps, never copied from a report,
so a later change of statistic applies to every recorded run alike.

The metric that decides (stats/load_metrics.py, measured in docs/STATISTICS.md, "Each metric
per decision"): by default each benchmark's primary one, except that a wall-time series every
run of which also counted instructions (`cmd --instructions`) is decided on the count, which
found the changes there that wall time missed, with no more false change points; the listing
says so.
A wall-time (or cpu_time) series that found no change, whose every run recorded a metric a
busy machine moves less, says which and the command that lists it.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

from bakeoff.history.changes import ChangePoint, Level, RunPoint, change_points, round_ratios
from bakeoff.history.store import History, Series, SeriesRun
from bakeoff.stats import load_metrics
from bakeoff.stats.estimates import median_ci

PRIMARY = "primary"  # --metric: each benchmark's primary metric (the default)
ALL = "all"


@dataclass(frozen=True)
class RunLevel:
    """One run of a series: its median over its trials with the 95% CI, and each trial's
    median (the run-to-run detector's points)."""

    run_key: str
    run_id: str
    when: str
    labels: dict[str, str]
    median: float
    ci_low: float
    ci_high: float
    n_trials: int
    trial_medians: tuple[float, ...]

    @property
    def label_text(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.labels.items()) or "—"


DRIFT_NOTE = "absolute level: includes machine drift"
RATIO = "×"  # the unit of a ratio series: a value shown as ×0.982


@dataclass(frozen=True)
class SeriesHistory:
    series: Series
    runs: list[RunLevel]
    changes: list[ChangePoint] = field(default_factory=list)
    # The baseline variant the runs are ratios to; None: the runs are absolute levels.
    relative_to: str | None = None
    # Said under the runs: why this metric decided instead of the primary one, and a metric
    # that would decide better (with the command that lists it); None: nothing to say.
    decided_instead: str | None = None
    better_hint: str | None = None

    @property
    def unit(self) -> str:
        """What format_value() is given: RATIO for a ratio series."""
        return RATIO if self.relative_to else self.series.unit

    @property
    def unit_text(self) -> str:
        """The unit as a heading or an axis names it."""
        return f"ratio to {self.relative_to}" if self.relative_to else self.series.unit

    @property
    def title(self) -> str:
        return (f"{self.series.title} / {self.relative_to}" if self.relative_to
                else self.series.title)


def level_of(run: SeriesRun) -> RunLevel:
    ci = median_ci(run.trials)
    medians = tuple(statistics.median(v) for v in run.trials)
    return RunLevel(run.run_key, run.run_id, run.started_at, run.labels, ci.estimate, ci.low,
                    ci.high, len(run.trials), medians)


def _by_round(run: SeriesRun) -> dict[int, float]:
    """Each trial's figure (its median) by the round it ran in."""
    return {r: statistics.median(v) for r, v in zip(run.rounds, run.trials, strict=True)}


def ratio_levels(runs: list[SeriesRun], base_runs: list[SeriesRun]) -> list[RunLevel]:
    """Each run of a variant as its per-round ratios to the baseline's trials in that run, one
    value per round both measured (a run without its baseline has none and is left out)."""
    base = {r.run_key: _by_round(r) for r in base_runs}
    out = []
    for run in runs:
        ratios = round_ratios(_by_round(run), base.get(run.run_key, {}))
        if ratios:
            out.append(level_of(SeriesRun(run.run_key, run.run_id, run.started_at, run.labels,
                                          [[x] for x in ratios])))
    return out


def _baseline_of(s: Series, every: list[Series]) -> Series | None:
    if s.baseline is None or s.is_baseline:
        return None
    return next((b for b in every if b.variant == s.baseline and b.benchmark == s.benchmark
                 and b.params == s.params and b.metric == s.metric and b.machine == s.machine),
                None)


def _sibling(s: Series, every: list[Series], metric: str) -> Series | None:
    """The series of the same case on the same machine, of another metric."""
    return next((o for o in every if o.metric == metric and o.benchmark == s.benchmark
                 and o.variant == s.variant and o.params == s.params
                 and o.machine == s.machine), None)


def histories(history: History, benchmark: str | None = None, machine: str | None = None,
              metric: str = PRIMARY, again: str = "bakeoff history") -> list[SeriesHistory]:
    """The series that match, each with its runs in time order. `again` is the command a
    hint to list another metric starts with (the CLI's, with its --history)."""
    out = []
    every = history.series(benchmark, machine)
    read: dict[int, list[SeriesRun]] = {}  # a baseline is read once for all its variants

    def runs_of(s: Series) -> list[SeriesRun]:
        if s.id not in read:
            read[s.id] = history.runs_of(s)
        return read[s.id]

    def recorded(s: Series) -> list[set[str]]:
        """Per run of s, the ranked metrics the same run recorded for the same case."""
        keys = {m: {r.run_key for r in runs_of(o)} for m in load_metrics.RANKED
                if (o := _sibling(s, every, m)) is not None}
        return [{m for m, k in keys.items() if r.run_key in k} for r in runs_of(s)]

    for s in every:
        instead = None
        if metric == PRIMARY and s.metric_order == 0:
            if load_metrics.counted_instead(s.metric, recorded(s)):
                instead = s.metric
                s = _sibling(s, every, load_metrics.INSTRUCTIONS) or s
        elif metric not in (ALL, s.metric):
            continue
        base = _baseline_of(s, every)
        if base is not None:
            runs = ratio_levels(runs_of(s), runs_of(base))
        else:
            runs = [level_of(r) for r in runs_of(s)]
        points = [RunPoint(r.run_id, r.when, r.labels, r.trial_medians) for r in runs]
        changes = change_points(points, s.lower_is_better)
        better = (load_metrics.better_metric(s.metric, recorded(s))
                  if metric != ALL and not changes else None)
        out.append(SeriesHistory(
            s, runs, changes, base.variant if base is not None else None,
            decided_instead=None if instead is None else load_metrics.counted_instead_text(
                instead, f"`{again} --metric {instead}` lists {instead}"),
            better_hint=None if better is None else load_metrics.better_metric_text(
                s.metric, better, "every run also recorded",
                f"`{again} --metric {better} --benchmark {s.benchmark}` lists it")))
    return out


_SECONDS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))


def format_value(value: float, unit: str) -> str:
    """A figure with its unit, three significant digits; seconds scaled to ms, µs, ns; a ratio
    (RATIO) as ×0.982, four."""
    if not math.isfinite(value):
        return f"{value} {unit}".strip()
    if unit == RATIO:
        return f"×{value:.4g}"
    if unit == "s":
        scale, name = next(((f, n) for f, n in _SECONDS if abs(value) >= f), _SECONDS[-1])
        return f"{value / scale:.3g} {name}"
    return f"{value:.4g} {unit}".strip()


def series_lines(sh: SeriesHistory) -> list[str]:
    """A series as the terminal shows it: a heading, then one line per run."""
    s, unit = sh.series, sh.unit
    better = "lower is better" if s.lower_is_better else "higher is better"
    head = f"{sh.title} ({sh.unit_text or 'no unit'}, {better}): {len(sh.runs)} runs"
    rows = [("when (UTC)", "labels", "median", "95% CI", "n")]
    for r in sh.runs:
        ci = (f"[{format_value(r.ci_low, unit)}, {format_value(r.ci_high, unit)}]"
              if r.n_trials > 1 else "(one trial)")
        rows.append((r.when[:19].replace("T", " "), r.label_text, format_value(r.median, unit),
                     ci, str(r.n_trials)))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    changed_at = {c.index: c for c in sh.changes}
    lines = [head]
    for i, row in enumerate(rows):
        if (c := changed_at.get(i - 1)) is not None:
            lines.append("  " + change_text(sh, c))
        lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(row[:4], widths, strict=True))
                     + "  " + row[4])
    if not sh.changes:
        lines.append(f"  no change of level found on {s.metric}")
    lines += [f"  {said}" for said in (sh.decided_instead, sh.better_hint) if said]
    return lines


def level_text(level: Level, unit: str) -> str:
    return (f"{format_value(level.median, unit)} [{format_value(level.ci_low, unit)}, "
            f"{format_value(level.ci_high, unit)}] over {level.runs} runs")


def labels_between(sh: SeriesHistory, lo: int, hi: int) -> str:
    """The labels of runs lo..hi-1, each distinct text once, in order."""
    seen: list[str] = []
    for r in sh.runs[max(lo, 0):hi]:
        if r.label_text not in seen:
            seen.append(r.label_text)
    return ", ".join(seen)


def change_text(sh: SeriesHistory, c: ChangePoint) -> str:
    """One line: the level before and after, the ratio with its CI, the labels either side."""
    unit = sh.unit
    way = "worse" if c.worse else "better"
    drift = "" if sh.relative_to else f" [{DRIFT_NOTE}]"
    return (f"── level changed ({way}){drift}: {level_text(c.before, unit)} → "
            f"{level_text(c.after, unit)}, ×{c.ratio:.3f} [{c.ratio_ci_low:.3f}, "
            f"{c.ratio_ci_high:.3f}] (p={c.p_value:.4f}); labels "
            f"{labels_between(sh, c.index - 1, c.index)} → "
            f"{labels_between(sh, c.index, c.index + 1)}")
