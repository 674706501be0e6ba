"""The comparisons a declared Question reads that the analysis does not already hold.

A comparison to the baseline is in every CaseResult (analysis.BaselineComparison). A
question may set a case against another reference: a variant other than the baseline
(Question.against), or one value of a param against another within a variant
(Question.param, e.g. the BPF iterator against text content, both read through a held fd).
Those pairs get the same statistics as a comparison to the baseline, by the same functions
(stats.ratio_ci, paired by round; the Hodges-Lehmann shift), so that declaring a question
never moves another figure of the analysis.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from bakeoff.declare import questions
from bakeoff.declare.model import BenchmarkInfo, Case, Trial
from bakeoff.stats import estimates as stats

PairKey = tuple[Case, Case, str]  # (case, the reference case, metric)


@dataclass(frozen=True)
class PairComparison:
    """A case against a reference case other than its baseline case, on one metric."""

    case: Case
    against: Case
    metric: str
    # median(case) / median(against), 95% CI over trials; None when the reference's median
    # is 0 (an added cost measured as 0 by a control): the shift still says what is added.
    ratio: stats.Ratio | None
    shift: stats.Shift  # case - against (Hodges-Lehmann), in the metric's unit
    n_trials: int
    n_against: int


def _compared(info: BenchmarkInfo, trials: Sequence[Trial], metric: str) -> list[list[float]]:
    """What is ranked: the values, or |values| of a signed metric (as analysis.py does)."""
    per_trial = [t.samples[metric] for t in trials if t.ok and t.samples.get(metric)]
    return [[abs(v) for v in t] for t in per_trial] if info.is_signed(metric) else per_trial


def _resolved(per_trial: list[list[float]]) -> bool:
    """Its median's CI (linear scale, as a net difference's) lies above 0."""
    ci = stats.median_ci(per_trial, log=False)
    return stats.resolved_above_zero(len(per_trial), ci.low, ci.estimate)


def _rounds(trials: Sequence[Trial], metric: str) -> list[int]:
    """The round of each trial _compared keeps, in its order."""
    return [t.round for t in trials if t.ok and t.samples.get(metric)]


def _pairs(info: BenchmarkInfo, cases: Sequence[Case]) -> Iterator[PairKey]:
    """Every (case, reference, metric) a question reads (declare/questions.py resolves it, as
    for the allocation and the report) whose reference is not the case's baseline case; and
    an "added" question's against the baseline too: it reads a shift, which the analysis
    lacks where the baseline's median is 0."""
    not_answers = [str(v["name"]) for v in info.variants
                   if v.get("control") or v.get("diagnostic")]
    asked = [questions.question_from_dict(q) for q in info.questions]
    for r in questions.benchmark_readings(asked, cases, info.baseline, not_answers,
                                          info.crossover_ratios, info.primary_metric):
        if r.reference is None:
            continue
        to_baseline = r.reference == Case(r.case.benchmark, info.baseline, r.case.params)
        if not to_baseline or (r.kind == "difference" and asked[r.question].form == "added"):
            yield r.case, r.reference, r.metric


def pair_comparisons(info: BenchmarkInfo, cases: Sequence[Case],
                     trials_by_case: Mapping[Case, list[Trial]],
                     rng: np.random.Generator) -> dict[PairKey, PairComparison]:
    """The comparisons info.questions read beyond those to the baseline (module docstring),
    among the cases measured (a question's LARGEST is the largest measured, as the report
    reads it)."""
    measured = [c for c in cases if any(t.ok for t in trials_by_case.get(c, []))]
    out: dict[PairKey, PairComparison] = {}
    for key in _pairs(info, measured):
        if key in out:
            continue
        case, ref, metric = key
        mine = _compared(info, trials_by_case.get(case, []), metric)
        theirs = _compared(info, trials_by_case.get(ref, []), metric)
        if not mine or not theirs:
            continue
        zero = float(np.median(np.concatenate(theirs))) == 0
        if info.is_net(metric):
            # A net difference whose CI includes 0 (or sits below it): no ratio to or from
            # it (Metric.net); the shift still says what is added.
            zero = zero or not all(_resolved(x) for x in (mine, theirs))
        # The one ratio every report prints (stats.ratio_ci, as against the baseline):
        # paired by round where the two cases ran interleaved, so a table's ratio and an
        # answer's are the same figure.
        ratio = None if zero else stats.ratio_ci(
            mine, theirs, variant_rounds=_rounds(trials_by_case.get(case, []), metric),
            baseline_rounds=_rounds(trials_by_case.get(ref, []), metric))
        out[key] = PairComparison(case, ref, metric, ratio,
                                  stats.hodges_lehmann(mine, theirs, rng), len(mine), len(theirs))
    return out
