"""The comparisons a declared Question reads that the analysis does not already hold.

A comparison to the baseline is in every CaseResult (analysis.BaselineComparison). A
question may set a case against another reference: a variant other than the baseline
(Question.against), or one value of a param against another within a variant
(Question.param, e.g. the BPF iterator against text content, both read through a held fd).
Those pairs get the same statistics as a comparison to the baseline (stats.py: ratio of
medians with its cluster-bootstrap CI, Hodges-Lehmann shift), drawn from their own random
stream so that declaring a question never moves another figure of the analysis.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

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


def _pairs(info: BenchmarkInfo, cases: Sequence[Case]) -> Iterator[PairKey]:
    """Every (case, reference, metric) a question reads whose reference is not the case's
    baseline case; the values a question's `at` narrows to are chosen by the report."""
    present = set(cases)
    for q in info.questions:
        metric = q.get("metric") or info.primary_metric
        against = str(q.get("against") or "")
        param = q.get("param")
        if param:
            values = [str(v) for v in q.get("variants") or ()] or sorted(
                {str(c.param(param)) for c in cases} - {against})
            for c in cases:
                if c.variant in (q.get("within") or ()) and str(c.param(param)) in values:
                    ref = next((r for r in present if r.variant == c.variant and all(
                        str(v) == against if k == param else v == c.param(k)
                        for k, v in r.params)), None)
                    if ref is not None:
                        yield c, ref, metric
        # "added" reads a shift, which the analysis lacks where the baseline's median is 0.
        elif against and (against != info.baseline or q.get("form") == "added"):
            named = set(q.get("variants") or ())
            for c in cases:
                if c.variant != against and (c.variant in named or not named):
                    ref = Case(c.benchmark, against, c.params)
                    if ref in present:
                        yield c, ref, metric


def pair_comparisons(info: BenchmarkInfo, cases: Sequence[Case],
                     trials_by_case: Mapping[Case, list[Trial]],
                     rng: np.random.Generator) -> dict[PairKey, PairComparison]:
    """The comparisons info.questions read beyond those to the baseline (module docstring)."""
    out: dict[PairKey, PairComparison] = {}
    for key in _pairs(info, cases):
        if key in out:
            continue
        case, ref, metric = key
        mine = _compared(info, trials_by_case.get(case, []), metric)
        theirs = _compared(info, trials_by_case.get(ref, []), metric)
        if not mine or not theirs:
            continue
        zero = float(np.median(np.concatenate(theirs))) == 0
        out[key] = PairComparison(case, ref, metric,
                                  None if zero else stats.ratio_of_medians(mine, theirs, rng),
                                  stats.hodges_lehmann(mine, theirs, rng), len(mine), len(theirs))
    return out
