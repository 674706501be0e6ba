"""From a recorded run to the numbers a report shows: per case, per metric, per sweep.

Reads only the RunRecord (what results.json holds), so reports regenerate from disk alone.
The bootstrap is seeded from the run's seed: the same results.json gives the same report.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from itertools import groupby

import numpy as np

from bakeoff import stats
from bakeoff.model import BenchmarkInfo, Case, ParamValue, RunRecord, Skip, Trial


@dataclass
class CaseResult:
    case: Case
    metric: str
    unit: str
    summary: stats.Summary | None  # None when no trial of the case succeeded
    vs_baseline: stats.Ratio | None  # None for the baseline itself, or with no baseline data
    n_failed: int
    failures: list[str]
    counters: dict[str, float] = field(default_factory=dict)  # median over ok trials
    # Median over ok trials of the measured process's user and system CPU and peak RSS.
    user_s: float | None = None
    sys_s: float | None = None
    max_rss_kib: float | None = None
    wall_s: float | None = None  # median wall time of one ok trial (the whole process)


@dataclass
class SweepCrossover:
    variant: str
    param: str
    fixed: dict[str, ParamValue]  # the other params' values along this sweep
    metric: str
    crossover: stats.Crossover


@dataclass
class BenchmarkAnalysis:
    info: BenchmarkInfo
    results: list[CaseResult]  # every case x every metric it reported
    crossovers: list[SweepCrossover]
    skips: list[Skip]

    def for_metric(self, metric: str) -> list[CaseResult]:
        return [r for r in self.results if r.metric == metric]

    @property
    def metrics(self) -> list[str]:
        seen = {r.metric for r in self.results}
        return [m["name"] for m in self.info.metrics if m["name"] in seen]


@dataclass
class Analysis:
    benchmarks: list[BenchmarkAnalysis]


def _median_or_none(values: list[float]) -> float | None:
    return float(np.median(values)) if values else None


def _case_results(
    info: BenchmarkInfo,
    cases: list[Case],
    trials_by_case: dict[Case, list[Trial]],
    rng: np.random.Generator,
) -> list[CaseResult]:
    results: list[CaseResult] = []
    for case in cases:
        trials = trials_by_case.get(case, [])
        ok = [t for t in trials if t.ok]
        failures = [t.error or t.status for t in trials if not t.ok]
        metric_names = [m["name"] for m in info.metrics if any(m["name"] in t.samples for t in ok)]
        if not metric_names:
            metric_names = [info.primary_metric]
        counter_names = sorted({name for t in ok for name in t.counters})
        counters = {n: float(np.median([t.counters[n] for t in ok if n in t.counters]))
                    for n in counter_names}
        for metric in metric_names:
            per_trial = [t.samples[metric] for t in ok if t.samples.get(metric)]
            summary = stats.summarize(per_trial, rng) if per_trial else None
            vs_baseline = None
            if summary and case.variant != info.baseline:
                base_case = Case(case.benchmark, info.baseline, case.params)
                base = [t.samples[metric] for t in trials_by_case.get(base_case, [])
                        if t.ok and t.samples.get(metric)]
                if base:
                    vs_baseline = stats.ratio_of_medians(per_trial, base, rng)
            results.append(CaseResult(
                case=case, metric=metric, unit=str(info.metric(metric)["unit"]),
                summary=summary, vs_baseline=vs_baseline,
                n_failed=len(trials) - len(ok), failures=failures, counters=counters,
                user_s=_median_or_none([t.rusage.user_s for t in ok if t.rusage]),
                sys_s=_median_or_none([t.rusage.sys_s for t in ok if t.rusage]),
                max_rss_kib=_median_or_none([float(t.rusage.max_rss_kib) for t in ok if t.rusage]),
                wall_s=_median_or_none([t.wall_s for t in ok]),
            ))
    return results


def _crossovers(info: BenchmarkInfo, results: list[CaseResult]) -> list[SweepCrossover]:
    """For each numeric param, each variant, each setting of the other params: flips of 1."""
    metric = info.primary_metric
    lower_is_better = bool(info.metric(metric)["lower_is_better"])
    rows = [r for r in results if r.metric == metric and r.vs_baseline is not None]
    out: list[SweepCrossover] = []
    for p in info.params:
        name = p["name"]
        if not info.param_is_numeric(name):
            continue

        def sweep_key(r: CaseResult, name: str = name) -> tuple[str, str]:
            others = tuple((k, v) for k, v in r.case.params if k != name)
            return r.case.variant, repr(others)

        for _, group in groupby(sorted(rows, key=sweep_key), key=sweep_key):
            line = sorted(group, key=lambda r: float(r.case.param(name)))
            if len(line) < 2:
                continue
            ratios = [r.vs_baseline for r in line if r.vs_baseline]
            found = stats.find_crossovers(
                [float(r.case.param(name)) for r in line],
                [x.ratio for x in ratios], [x.ci_low for x in ratios], [x.ci_high for x in ratios],
                lower_is_better=lower_is_better,
            )
            fixed = {k: v for k, v in line[0].case.params if k != name}
            out.extend(SweepCrossover(line[0].case.variant, name, fixed, metric, c) for c in found)
    return out


def analyze(run: RunRecord) -> Analysis:
    rng = np.random.default_rng(run.seed)
    trials_by_case: dict[Case, list[Trial]] = defaultdict(list)
    for t in run.trials:
        trials_by_case[t.case].append(t)
    out: list[BenchmarkAnalysis] = []
    for name, info in run.benchmarks.items():
        cases = [c for c in run.cases if c.benchmark == name]
        results = _case_results(info, cases, trials_by_case, rng)
        out.append(BenchmarkAnalysis(
            info=info, results=results, crossovers=_crossovers(info, results),
            skips=[s for s in run.skips if s.case.benchmark == name],
        ))
    return Analysis(benchmarks=out)
