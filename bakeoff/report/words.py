"""Verdicts and sentences: what a comparison means, said the same way in every report."""

from __future__ import annotations

from typing import Literal

from bakeoff.analysis import BenchmarkAnalysis, CaseResult, SweepCrossover
from bakeoff.report.format import param_estimate_label, params_label, swept_label
from bakeoff.stats import Ratio

Verdict = Literal["faster", "slower", "same", "—", "n/a"]


def lower_is_better(ba: BenchmarkAnalysis, metric: str) -> bool:
    return bool(ba.info.metric(metric).get("lower_is_better", True))


def verdict(result: CaseResult, lower_better: bool, baseline: str) -> Verdict:
    """From the ratio CI alone: a win only when the whole interval is on one side of 1."""
    if result.case.variant == baseline:
        return "—"
    r = result.vs_baseline
    if r is None:
        return "n/a"
    if r.ci_high < 1:
        return "faster" if lower_better else "slower"
    if r.ci_low > 1:
        return "slower" if lower_better else "faster"
    return "same"


def speedup(r: Ratio, lower_better: bool) -> tuple[float, float, float]:
    """(point, low, high) of how many times better than the baseline the variant is.

    For a time, speed-up = baseline/variant = 1/ratio (the CI ends swap); for a throughput
    the ratio already says it.
    """
    if not lower_better:
        return r.ratio, r.ci_low, r.ci_high
    inv = [1 / x if x > 0 else float("inf") for x in (r.ratio, r.ci_high, r.ci_low)]
    return inv[0], inv[1], inv[2]


def _ratio_at(ba: BenchmarkAnalysis, sc: SweepCrossover, x: float) -> Ratio | None:
    for r in ba.for_metric(sc.metric):
        if r.case.variant != sc.variant or r.vs_baseline is None:
            continue
        params = dict(r.case.params)
        if float(params[sc.param]) == x and all(params.get(k) == v for k, v in sc.fixed.items()):
            return r.vs_baseline
    return None


def _confidence(ba: BenchmarkAnalysis, sc: SweepCrossover) -> str:
    c = sc.crossover
    if c.confident:
        return "confident: CIs exclude 1 on both sides"
    unsure = [
        swept_label(ba.info, sc.param, x)
        for x in (c.low, c.high)
        if (r := _ratio_at(ba, sc, x)) is not None and r.ci_low <= 1 <= r.ci_high
    ]
    if len(unsure) == 1:
        return f"tentative: the CI at {unsure[0]} includes 1"
    return "tentative: the CIs include 1 on both sides"


def crossover_sentence(ba: BenchmarkAnalysis, sc: SweepCrossover) -> str:
    """'mremap starts winning over memcpy between 128 KiB and 256 KiB (≈ 176 KiB; confident:
    CIs exclude 1 on both sides)'; names the param and the fixed ones when there are several.
    """
    info, c = ba.info, sc.crossover
    verb = "starts winning" if c.direction == "starts_winning" else "stops winning"
    low, high = swept_label(info, sc.param, c.low), swept_label(info, sc.param, c.high)
    where = f"between {low} and {high}"
    if len(info.params) > 1:
        where = f"{where} of {sc.param}"
    notes = [f"≈ {param_estimate_label(info, sc.param, c.estimate)}", _confidence(ba, sc)]
    if sc.fixed:
        notes.append(f"with {params_label(info, sc.fixed.items())}")
    return f"{sc.variant} {verb} over {info.baseline} {where} ({'; '.join(notes)})"


def crossover_label(ba: BenchmarkAnalysis, sc: SweepCrossover) -> str:
    """The short form for a chart annotation."""
    info, c = ba.info, sc.crossover
    low, high = swept_label(info, sc.param, c.low), swept_label(info, sc.param, c.high)
    estimate = param_estimate_label(info, sc.param, c.estimate)
    prefix = "" if c.confident else "tentative "
    return f"{prefix}crossover ≈ {estimate} (between {low} and {high})"
