"""From a recorded run to the numbers a report shows: per case, per metric, per sweep.

Reads only the RunRecord (what results.json holds), so reports regenerate from disk alone.
The bootstrap is seeded from the run's seed: the same results.json gives the same report.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import groupby

import numpy as np

from bakeoff.analysis.question_pairs import PairComparison, PairKey, pair_comparisons
from bakeoff.declare import questions
from bakeoff.declare.model import (
    COUNTED_PREFIX,
    PER_OP_PREFIX,
    BenchmarkInfo,
    Case,
    ParamValue,
    RunRecord,
    Skip,
    Trial,
)
from bakeoff.run import allocation, interrupts
from bakeoff.stats import estimates as stats
from bakeoff.stats import verdicts

MIN_TRIALS_FOR_VERDICT = 5
# Counters are context, not verdicts, and there are many: fewer resamples than N_BOOT.
COUNTER_BOOT = 500


@dataclass
class BaselineComparison:
    """A non-baseline case against the baseline case with the same params."""

    ratio: stats.Ratio  # median(variant) / median(baseline), 95% CI, rank-test p
    p_holm: float  # the bootstrap p after Holm correction across the variant's cells
    shift: stats.Shift  # Hodges-Lehmann: variant - baseline, in the metric's unit
    cliffs_delta: float
    verdict: stats.Verdict  # faster / slower / equivalent / inconclusive, at the threshold
    # An inconclusive verdict's distance from decided (stats/verdicts.py); None otherwise.
    settle: verdicts.Settle | None = None
    # variant - baseline paired by round (stats.paired_difference); None with fewer than two
    # rounds in common. What an "overhead" answer reads at each point of its axis.
    paired: stats.Shift | None = None


@dataclass(frozen=True)
class CountingCost:
    """counted.<metric> over <metric>: the ratio of medians of one case's counted samples to
    its measured ones, trials resampled in pairs (both come from every trial)."""

    ratio: stats.Ratio
    n_trials: int
    # How much longer an operation took while counted (ratio for a lower-is-better metric,
    # its inverse for a rate): 1.08 = 8% longer.
    slowdown: float
    slowdown_low: float
    slowdown_high: float


@dataclass(frozen=True)
class CountingCostSummary:
    """The cost of counting over a benchmark's cases (its primary metric): median and range
    of the cases' slowdowns."""

    metric: str
    median: float
    low: float
    high: float
    n_cases: int
    n_trials: int  # the fewest trials behind one case's figure


@dataclass
class CaseResult:
    case: Case
    metric: str
    unit: str
    summary: stats.Summary | None  # None when no trial of the case succeeded
    comparison: BaselineComparison | None  # None for the baseline itself, or with no baseline data
    n_failed: int
    failures: list[str]
    outliers: stats.Outliers | None = None
    # A signed metric (closer to zero is better): summary and comparison are of |value|;
    # this is the bias and RMS of the signed values.
    signed: stats.SignedError | None = None
    counters: dict[str, float] = field(default_factory=dict)  # median over ok trials
    # Median over ok trials of the measured process's user and system CPU and peak RSS.
    user_s: float | None = None
    sys_s: float | None = None
    max_rss_kib: float | None = None
    wall_s: float | None = None  # median wall time of one ok trial (the whole process)
    # Kernel counters per operation (counters.h), by counter name: median with 95% CI, from
    # the counted samples only.
    per_op: dict[str, stats.Summary] = field(default_factory=dict)
    # Each per-op counter against the baseline case's at the same params: ratio of medians,
    # 95% CI over trials. None for a counter whose baseline median is 0 (no ratio to 0).
    per_op_vs_baseline: dict[str, stats.Ratio | None] = field(default_factory=dict)
    # counted.<metric> / <metric> in the same trials: what counting cost this case.
    counting_cost: CountingCost | None = None
    # A metric measured with something subtracted (Metric.subtracted: the shell's start-up)
    # whose CI reaches 0: what it is below the resolution of. No ratio is formed with it.
    below_resolution: str | None = None
    # Each ok trial's median of the compared values (|value| of a signed metric) and its
    # round, in one order: a report sets two cases side by side (stats.ratio_ci,
    # stats.difference_ci, paired by round) with the functions the analysis uses.
    trial_medians: tuple[float, ...] = ()
    trial_rounds: tuple[int, ...] = ()

    @property
    def vs_baseline(self) -> stats.Ratio | None:
        return self.comparison.ratio if self.comparison else None

    @property
    def verdict(self) -> stats.Verdict | None:
        return self.comparison.verdict if self.comparison else None


@dataclass
class SweepCrossover:
    variant: str
    param: str
    fixed: dict[str, ParamValue]  # the other params' values along this sweep
    metric: str
    crossover: stats.Crossover


@dataclass
class SweepFit:
    variant: str
    param: str
    fixed: dict[str, ParamValue]
    metric: str
    description: str
    fit: stats.LineFit


@dataclass(frozen=True)
class AnswerPrecision:
    """One figure a declared question reads (questions.Reading), as the report quotes it:
    the figure, its 95% CI (cluster bootstrap) and the CI's half-width as a fraction of the
    figure, against the question's target (the default profile spends trials to reach it)."""

    question: int  # index in BenchmarkInfo.questions
    kind: str  # "ratio", "difference" or "error" (questions.ReadingKind, levels aside)
    case: Case
    reference: Case | None
    metric: str
    value: float
    ci_low: float
    ci_high: float
    half_width: float  # (ci_high - ci_low) / 2 / |value|; inf when value is 0
    n_trials: int
    n_reference_trials: int
    target: float

    @property
    def met(self) -> bool:
        return self.half_width <= self.target


@dataclass
class BenchmarkAnalysis:
    info: BenchmarkInfo
    results: list[CaseResult]  # every case x every metric it reported
    crossovers: list[SweepCrossover]
    skips: list[Skip]
    fits: list[SweepFit] = field(default_factory=list)
    threshold: float = stats.DEFAULT_THRESHOLD
    # The comparisons its declared questions read against a reference other than the
    # baseline (question_pairs.py); those to the baseline are in each CaseResult.
    pairs: dict[PairKey, PairComparison] = field(default_factory=dict)
    # The precision of each figure the declared questions read (not a crossover's points).
    answers: list[AnswerPrecision] = field(default_factory=list)

    def for_metric(self, metric: str) -> list[CaseResult]:
        return [r for r in self.results if r.metric == metric]

    @property
    def metrics(self) -> list[str]:
        seen = {r.metric for r in self.results}
        return [m["name"] for m in self.info.metrics if m["name"] in seen]

    @property
    def counting_cost(self) -> CountingCostSummary | None:
        """Over the cases that took counted samples, of the primary metric; or, when that is
        a difference some case measures at 0 or below (heap-sampling's added cost: a ratio to
        it says nothing), of the first declared metric every case measures above 0. None
        without any (a run before counted samples, or a program that takes none)."""
        for metric in [self.info.primary_metric, *self.metrics]:
            results = [r for r in self.for_metric(metric) if r.counting_cost is not None]
            if results and all(r.summary is not None and r.summary.median > 0
                               for r in self.for_metric(metric)):
                break
        else:
            return None
        costs = [r.counting_cost for r in results if r.counting_cost is not None]
        slow = [c.slowdown for c in costs]
        return CountingCostSummary(metric, float(np.median(slow)), min(slow), max(slow),
                                   len(costs), min(c.n_trials for c in costs))

    @property
    def few_trials(self) -> bool:
        """True when some measured case has fewer trials than a verdict needs."""
        return any(r.summary is not None and r.summary.n_trials < MIN_TRIALS_FOR_VERDICT
                   for r in self.results)


@dataclass
class Analysis:
    benchmarks: list[BenchmarkAnalysis]
    warnings: list[str] = field(default_factory=list)


def _median_or_none(values: list[float]) -> float | None:
    return float(np.median(values)) if values else None


def _ok_samples(trials: list[Trial], metric: str) -> list[list[float]]:
    return [t.samples[metric] for t in trials if t.ok and t.samples.get(metric)]


def _ok_rounds(trials: list[Trial], metric: str) -> list[int]:
    """The round of each trial _ok_samples keeps, in its order."""
    return [t.round for t in trials if t.ok and t.samples.get(metric)]


def _compared_samples(info: BenchmarkInfo, trials: list[Trial], metric: str) -> list[list[float]]:
    """What statistics and verdicts rank: the values, or |values| of a signed metric."""
    per_trial = _ok_samples(trials, metric)
    if info.is_signed(metric):
        return [[abs(v) for v in t] for t in per_trial]
    return per_trial


def _per_op_counters(trials: list[Trial], rng: np.random.Generator) -> dict[str, stats.Summary]:
    names = sorted({m for t in trials if t.ok for m in t.samples if m.startswith(PER_OP_PREFIX)})
    return {name.removeprefix(PER_OP_PREFIX): stats.summarize(per_trial, rng, n_boot=COUNTER_BOOT)
            for name in names if (per_trial := _ok_samples(trials, name))}


def _per_op_vs_baseline(info: BenchmarkInfo, case: Case, trials_by_case: dict[Case, list[Trial]],
                        rng: np.random.Generator) -> dict[str, stats.Ratio | None]:
    """Each counter both this case and the baseline case at its params counted: the ratio
    of their per-op medians (None where the baseline's is 0)."""
    if case.variant == info.baseline:
        return {}
    mine = trials_by_case.get(case, [])
    base = trials_by_case.get(Case(case.benchmark, info.baseline, case.params), [])
    out: dict[str, stats.Ratio | None] = {}
    names = sorted({m for t in mine if t.ok for m in t.samples if m.startswith(PER_OP_PREFIX)})
    for name in names:
        a, b = _ok_samples(mine, name), _ok_samples(base, name)
        if not a or not b:
            continue
        zero = float(np.median(np.concatenate(b))) == 0
        out[name.removeprefix(PER_OP_PREFIX)] = None if zero else stats.ratio_ci(
            a, b, variant_rounds=_ok_rounds(mine, name), baseline_rounds=_ok_rounds(base, name))
    return out


def _counting_cost(info: BenchmarkInfo, trials: list[Trial], metric: str,
                   rng: np.random.Generator) -> CountingCost | None:
    """counted.<metric> against <metric>, from the trials that have both."""
    both = [t for t in trials if t.ok and t.samples.get(metric)
            and t.samples.get(COUNTED_PREFIX + metric)]
    if not both:
        return None
    counted = [t.samples[COUNTED_PREFIX + metric] for t in both]
    measured = [t.samples[metric] for t in both]
    if info.is_signed(metric):
        counted = [[abs(v) for v in t] for t in counted]
        measured = [[abs(v) for v in t] for t in measured]
    try:
        r = stats.paired_ratio_of_medians(counted, measured, rng, n_boot=COUNTER_BOOT)
    except ValueError:  # the measured median is 0: no ratio to it
        return None
    if not r.ratio > 0:
        return None
    if bool(info.metric(metric)["lower_is_better"]):
        slow = (r.ratio, r.ci_low, r.ci_high)
    else:  # a rate: an operation takes 1/rate, so counting's slowdown is measured/counted
        slow = (1 / r.ratio, 1 / r.ci_high if r.ci_high > 0 else float("inf"),
                1 / r.ci_low if r.ci_low > 0 else float("inf"))
    return CountingCost(r, len(both), *slow)


def _case_results(
    info: BenchmarkInfo,
    cases: list[Case],
    trials_by_case: dict[Case, list[Trial]],
    rng: np.random.Generator,
    threshold: float,
    counter_rng: np.random.Generator,
) -> list[CaseResult]:
    """counter_rng draws every counted sample's resamples, so the timing figures stay the
    same whether or not a run took counted samples."""
    results: list[CaseResult] = []
    pending: list[tuple[CaseResult, stats.Ratio, stats.Shift, float]] = []
    paired: dict[tuple[Case, str], stats.Shift | None] = {}
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
        per_op = _per_op_counters(trials, counter_rng)
        per_op_vs_base = _per_op_vs_baseline(info, case, trials_by_case, counter_rng)
        for metric in metric_names:
            per_trial = _compared_samples(info, trials, metric)
            signed_values = _ok_samples(trials, metric) if info.is_signed(metric) else []
            summary = (stats.summarize(per_trial, rng, log=False if info.is_net(metric) else None)
                       if per_trial else None)
            below = None
            if summary is not None and info.subtracted(metric):
                summary, below = _floored(summary, per_trial, info.subtracted(metric))
            if summary is not None:
                # n counts what was measured, also for trials kept as quantiles.
                summary = dataclasses.replace(summary, n=sum(
                    t.n_samples(metric) for t in ok if t.samples.get(metric)))
            result = CaseResult(
                case=case, metric=metric, unit=str(info.metric(metric)["unit"]),
                summary=summary,
                comparison=None, n_failed=len(trials) - len(ok), failures=failures,
                outliers=stats.outliers(per_trial, [
                    t.n_samples(metric) / len(t.samples[metric])
                    for t in ok if t.samples.get(metric)]) if per_trial else None,
                counters=counters, per_op=per_op, per_op_vs_baseline=per_op_vs_base,
                counting_cost=_counting_cost(info, trials, metric, counter_rng),
                trial_medians=tuple(float(np.median(t)) for t in per_trial),
                trial_rounds=tuple(_ok_rounds(trials, metric)),
                signed=stats.signed_error(signed_values, rng) if signed_values else None,
                user_s=_median_or_none([t.rusage.user_s for t in ok if t.rusage]),
                sys_s=_median_or_none([t.rusage.sys_s for t in ok if t.rusage]),
                max_rss_kib=_median_or_none([float(t.rusage.max_rss_kib) for t in ok if t.rusage]),
                wall_s=_median_or_none([t.wall_s for t in ok]),
                below_resolution=below,
            )
            results.append(result)
            if per_trial and case.variant != info.baseline and below is None:
                base_trials = trials_by_case.get(
                    Case(case.benchmark, info.baseline, case.params), [])
                base = _compared_samples(info, base_trials, metric)
                if info.is_net(metric) and not (
                        summary is not None and summary.resolved_above_zero() and base
                        and stats.summarize(base, rng, log=False).resolved_above_zero()):
                    continue  # a net difference that may be 0: no ratio to or from it
                if base and info.subtracted(metric) and _floored(
                        stats.summarize(base, rng), base, info.subtracted(metric))[1]:
                    continue  # the baseline below resolution: no ratio of positive figures
                if base and float(np.median(np.concatenate(base))) != 0:
                    # Rounds pair the two sides' trials (they ran interleaved): the CI's t
                    # is on the per-round ratios, where a round's drift cancels.
                    ratio = stats.ratio_ci(per_trial, base,
                                           variant_rounds=_ok_rounds(trials, metric),
                                           baseline_rounds=_ok_rounds(base_trials, metric))
                    pending.append((result, ratio,
                                    stats.hodges_lehmann(per_trial, base, rng),
                                    stats.cliffs_delta(per_trial, base)))
                    paired[(case, metric)] = stats.paired_difference(
                        per_trial, base, _ok_rounds(trials, metric),
                        _ok_rounds(base_trials, metric))
    _decide(info, pending, threshold)
    for result in results:
        if result.comparison is not None:
            result.comparison = dataclasses.replace(
                result.comparison, paired=paired.get((result.case, result.metric)))
    return results


def _floored(summary: stats.Summary, per_trial: list[list[float]], subtracted: str | None
             ) -> tuple[stats.Summary, str | None]:
    """A subtracted metric's summary (values floored at 0, so its median is never below 0)
    with its CI floored at 0 too, and what it is below the resolution of when the figure
    cannot be told from 0 after the subtraction: its CI reaches 0, or a trial's median is 0
    (then no interval on log scale exists, and a ratio's would reach below 0)."""
    floored = dataclasses.replace(summary, ci_low=max(summary.ci_low, 0.0))
    zero = floored.ci_low <= 0 or any(float(np.median(t)) <= 0 for t in per_trial if len(t))
    return floored, (subtracted if zero else None)


def _decide(
    info: BenchmarkInfo,
    pending: list[tuple[CaseResult, stats.Ratio, stats.Shift, float]],
    threshold: float,
) -> None:
    """Verdicts with Holm correction over each variant's cells of each metric (its sweep)."""

    def family(item: tuple[CaseResult, stats.Ratio, stats.Shift, float]) -> tuple[str, str]:
        return item[0].case.variant, item[0].metric

    for _, group in groupby(sorted(pending, key=family), key=family):
        members = list(group)
        adjusted = stats.holm([ratio.p_ci for _, ratio, _, _ in members])
        for (result, ratio, shift, delta), p_holm in zip(members, adjusted, strict=True):
            lower = bool(info.metric(result.metric)["lower_is_better"])
            decided = stats.verdict(ratio, p_holm, lower, threshold)
            result.comparison = BaselineComparison(
                ratio=ratio, p_holm=p_holm, shift=shift, cliffs_delta=delta, verdict=decided,
                settle=(verdicts.to_settle(ratio, threshold, len(members))
                        if decided == verdicts.INCONCLUSIVE else None))


def _sweep_lines(info: BenchmarkInfo, rows: list[CaseResult]) -> Iterator[tuple[str, list[CaseResult]]]:
    """For each numeric param: the lines of cases along it (one variant, others fixed)."""
    for p in info.params:
        name = p["name"]
        if not info.param_is_numeric(name):
            continue

        def sweep_key(r: CaseResult, name: str = name) -> tuple[str, str]:
            others = tuple((k, v) for k, v in r.case.params if k != name)
            return r.case.variant, repr(others)

        for _, group in groupby(sorted(rows, key=sweep_key), key=sweep_key):
            line = sorted(group, key=lambda r: float(r.case.param(name)))
            if len(line) >= 2:
                yield name, line


def _crossovers(info: BenchmarkInfo, results: list[CaseResult]) -> list[SweepCrossover]:
    """Where each variant's ratio to the baseline crosses 1 (and the declared levels)."""
    metric = info.primary_metric
    lower_is_better = bool(info.metric(metric)["lower_is_better"])
    rows = [r for r in results if r.metric == metric and r.vs_baseline is not None]
    out: list[SweepCrossover] = []
    levels = [1.0, *info.crossover_ratios]
    for name, line in _sweep_lines(info, rows):
        ratios = [r.vs_baseline for r in line if r.vs_baseline]
        fixed = {k: v for k, v in line[0].case.params if k != name}
        for level in levels:
            found = stats.find_crossovers(
                [float(r.case.param(name)) for r in line],
                [x.ratio for x in ratios], [x.ci_low for x in ratios], [x.ci_high for x in ratios],
                lower_is_better=lower_is_better, level=level,
            )
            out.extend(SweepCrossover(line[0].case.variant, name, fixed, metric, c) for c in found)
    return out


def _fits(
    info: BenchmarkInfo,
    results: list[CaseResult],
    trials_by_case: dict[Case, list[Trial]],
    rng: np.random.Generator,
) -> list[SweepFit]:
    out: list[SweepFit] = []
    # A benchmark whose only variant is its baseline (one command under `bakeoff cmd`) has no
    # difference to fit: its own metric is fitted instead (against a baseline of 0).
    alone = len(info.variants) == 1
    for spec in info.fits:
        metric, param = spec["metric"], spec["param"]
        rows = [r for r in results if r.metric == metric
                and (r.comparison is not None or (alone and r.summary is not None))]
        for name, line in _sweep_lines(info, rows):
            if name != param:
                continue
            variant = [_compared_samples(info, trials_by_case[r.case], metric) for r in line]
            base = [[[0.0]] if alone else
                    _compared_samples(info, trials_by_case[Case(r.case.benchmark, info.baseline,
                                                                 r.case.params)], metric)
                    for r in line]
            fit = stats.fit_difference_line([float(r.case.param(param)) for r in line],
                                            variant, base, rng)
            fixed = {k: v for k, v in line[0].case.params if k != param}
            out.append(SweepFit(line[0].case.variant, param, fixed, metric,
                                str(spec["description"]), fit))
    return out


def _answer_precision(info: BenchmarkInfo, cases: list[Case],
                      trials_by_case: dict[Case, list[Trial]],
                      rng: np.random.Generator) -> list[AnswerPrecision]:
    """Each reading of the declared questions, with its bootstrap CI and half-width."""
    not_answers = [v["name"] for v in info.variants if v.get("control") or v.get("diagnostic")]
    readings = questions.benchmark_readings(
        [questions.question_from_dict(q) for q in info.questions], cases, info.baseline,
        not_answers, info.crossover_ratios, info.primary_metric)
    known = {m["name"] for m in info.metrics}
    out: list[AnswerPrecision] = []
    for r in readings:
        if r.kind == "level" or r.target_ci is None or r.metric not in known:
            continue
        mine = _compared_samples(info, trials_by_case.get(r.case, []), r.metric)
        ref = (_compared_samples(info, trials_by_case.get(r.reference, []), r.metric)
               if r.reference is not None else [])
        if not mine:
            continue
        signed = _ok_samples(trials_by_case.get(r.case, []), r.metric)
        rounds = (_ok_rounds(trials_by_case.get(r.case, []), r.metric),
                  _ok_rounds(trials_by_case.get(r.reference, []), r.metric)
                  if r.reference is not None else [])
        quoted = allocation.answer_interval(r.kind, signed if r.kind == "error" else mine,
                                            ref, rng, rounds=rounds)
        if quoted is None:
            continue
        value, low, high = quoted
        out.append(AnswerPrecision(
            r.question, r.kind, r.case, r.reference, r.metric, value, low, high,
            allocation.relative_half_width(low, high, value), len(mine), len(ref),
            r.target_ci))
    return out


def analyze(run: RunRecord, threshold: float = stats.DEFAULT_THRESHOLD) -> Analysis:
    rng = np.random.default_rng(run.seed)
    # Its own stream: what counters add to a run never moves a figure of its timings.
    counter_rng = np.random.default_rng([run.seed, 1])
    pair_rng = np.random.default_rng([run.seed, 2])  # and so do a question's own pairs
    # And the answers' precision its own: adding questions never moves another figure.
    answer_rng = np.random.default_rng([run.seed, 3])
    trials_by_case: dict[Case, list[Trial]] = defaultdict(list)
    for t in run.trials:
        trials_by_case[t.case].append(t)
    out: list[BenchmarkAnalysis] = []
    warnings: list[str] = []
    for name, info in run.benchmarks.items():
        interrupts.checkpoint(f"analysis:{name}")  # a Ctrl-C waits one benchmark at most
        cases = [c for c in run.cases if c.benchmark == name]
        results = _case_results(info, cases, trials_by_case, rng, threshold, counter_rng)
        ba = BenchmarkAnalysis(
            info=info, results=results, crossovers=_crossovers(info, results),
            skips=[s for s in run.skips if s.case.benchmark == name],
            fits=_fits(info, results, trials_by_case, rng), threshold=threshold,
            pairs=pair_comparisons(info, cases, trials_by_case, pair_rng),
            answers=_answer_precision(info, cases, trials_by_case, answer_rng),
        )
        if ba.few_trials:
            warnings.append(
                f"{name}: some cases have fewer than {MIN_TRIALS_FOR_VERDICT} trials; verdicts "
                "need more to reach significance: use --trials 10 or more")
        out.append(ba)
    if run.stop_reason:
        warnings.append(f"measuring stopped early: {run.stop_reason}")
    if run.capped:
        target, ratio_target = run.settings.target_ci, run.settings.target_ratio_ci
        why = (f"before its median CI was within ±{target * 100:g}%" if target
               else f"before its ratio's CI was within ±{ratio_target * 100:g}%" if ratio_target
               else "before all its planned trials")
        names = "; ".join(c.key for c in run.capped[:12])
        more = f" and {len(run.capped) - 12} more" if len(run.capped) > 12 else ""
        warnings.append(f"{len(run.capped)} case(s) hit the cap {why}: {names}{more}")
    return Analysis(benchmarks=out, warnings=warnings)
