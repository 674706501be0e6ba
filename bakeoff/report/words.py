"""Verdicts and sentences: what a comparison means, said the same way in every report."""

from __future__ import annotations

import math
from typing import Literal

from bakeoff.analysis.within_run import BenchmarkAnalysis, CaseResult, SweepCrossover, SweepFit
from bakeoff.report.format import (
    fmt_number,
    fmt_range,
    fmt_value,
    is_time_unit,
    param_estimate_label,
    params_label,
    swept_label,
)
from bakeoff.stats import verdicts
from bakeoff.stats.estimates import Ratio, interval_note

FACTOR_FROM = 1.5  # further from 1 than this (either way), a ratio reads as a factor

# A case row's verdict: the stats vocabulary (stats/verdicts.py), or none for the baseline
# row ("—") and a case without a ratio ("n/a").
Verdict = verdicts.Verdict | Literal["—", "n/a"]


def lower_is_better(ba: BenchmarkAnalysis, metric: str) -> bool:
    return bool(ba.info.metric(metric).get("lower_is_better", True))


def better_phrase(ba: BenchmarkAnalysis, metric: str) -> str:
    """'lower is better', 'higher is better', or for a signed metric what its figures are of."""
    if ba.info.is_signed(metric):
        return "closer to zero is better: median, CI, p5/p95, ratio and verdict of |value|"
    return "lower is better" if lower_is_better(ba, metric) else "higher is better"


def verdict(result: CaseResult, baseline: str) -> Verdict:
    """The analysis's verdict (Holm-corrected test and the CI against the threshold)."""
    if result.case.variant == baseline:
        return "—"
    return result.verdict or "n/a"


def verdict_cell(result: CaseResult, baseline: str) -> str:
    """The verdict as a table cell: an inconclusive one says what would settle it in short
    ('inconclusive (≈40 trials)'); settle_sentence says it in full."""
    v = verdict(result, baseline)
    cmp = result.comparison
    if v != verdicts.INCONCLUSIVE or cmp is None or cmp.settle is None:
        return v
    total = cmp.settle.more(result.summary.n_trials if result.summary else 0)
    return f"{v} (≈{total} trials)" if total else f"{v} (at the threshold's edge)"


def settle_sentence(result: CaseResult) -> str | None:
    """An inconclusive case's 'about 40 trials a side would settle it (CI ±6.1% now, …)'."""
    cmp = result.comparison
    if cmp is None or cmp.verdict != verdicts.INCONCLUSIVE or cmp.settle is None:
        return None
    return cmp.settle.words(result.summary.n_trials if result.summary else 0)


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
    level = f"{c.level:g}"
    if c.confident:
        return f"confident: CIs exclude {level} on both sides"
    unsure = [
        swept_label(ba.info, sc.param, x)
        for x in (c.low, c.high)
        if (r := _ratio_at(ba, sc, x)) is not None and r.ci_low <= c.level <= r.ci_high
    ]
    if len(unsure) == 1:
        return f"tentative: the CI at {unsure[0]} includes {level}"
    return f"tentative: the CIs include {level} on both sides"


def _what_crosses(ba: BenchmarkAnalysis, sc: SweepCrossover) -> str:
    """'mremap starts winning over memcpy' at level 1; 'lttng's overhead over baseline falls
    under 5%' at level 1.05 (a ratio of 1.05 is 5% more time than the baseline)."""
    c, base = sc.crossover, ba.info.baseline
    if c.level == 1.0:
        verb = "starts winning" if c.direction == "starts_winning" else "stops winning"
        return f"{sc.variant} {verb} over {base}"
    pct = f"{abs(c.level - 1) * 100:g}%"
    verb = "falls under" if c.direction == "starts_winning" else "rises over"
    return f"{sc.variant}'s difference to {base} {verb} {pct} (ratio {c.level:g})"


def crossover_sentence(ba: BenchmarkAnalysis, sc: SweepCrossover) -> str:
    """'mremap starts winning over memcpy between 128 KiB and 256 KiB (≈ 176 KiB; confident:
    CIs exclude 1 on both sides)'; names the param and the fixed ones when there are several.
    """
    info, c = ba.info, sc.crossover
    low, high = swept_label(info, sc.param, c.low), swept_label(info, sc.param, c.high)
    where = f"between {low} and {high}"
    if len(info.params) > 1:
        where = f"{where} of {sc.param}"
    notes = [f"≈ {param_estimate_label(info, sc.param, c.estimate)}", _confidence(ba, sc)]
    if sc.fixed:
        notes.append(f"with {params_label(info, sc.fixed.items())}")
    return f"{_what_crosses(ba, sc)} {where} ({'; '.join(notes)})"


def crossover_label(ba: BenchmarkAnalysis, sc: SweepCrossover) -> str:
    """The short form for a chart annotation."""
    info, c = ba.info, sc.crossover
    low, high = swept_label(info, sc.param, c.low), swept_label(info, sc.param, c.high)
    estimate = param_estimate_label(info, sc.param, c.estimate)
    prefix = "" if c.confident else "tentative "
    what = "crossover" if c.level == 1.0 else f"ratio {c.level:g}"
    return f"{prefix}{what} ≈ {estimate} (between {low} and {high})"


def fit_sentence(ba: BenchmarkAnalysis, sf: SweepFit) -> str:
    """'lttng: overhead = a + b·duration_us: a = 1.2 µs (1.1–1.3 µs), b = 0.001 ns per µs …'"""
    f, unit = sf.fit, str(ba.info.metric(sf.metric)["unit"])
    param_unit = next((str(p["unit"]) for p in ba.info.params if p["name"] == sf.param), "")
    per = f"{unit} per {param_unit or sf.param}"
    fixed = f" with {params_label(ba.info, sf.fixed.items())}" if sf.fixed else ""
    return (f"{sf.variant}{fixed}: {sf.description}: {sf.metric} − {ba.info.baseline} = a + b·"
            f"{sf.param}; a = {fmt_value(f.a, unit)} ({fmt_range(f.a_low, f.a_high, unit)}), "
            f"b = {fmt_number(f.b)} {per} ({fmt_number(f.b_low)}–{fmt_number(f.b_high)}), "
            f"R² = {f.r2:.3f}, {f.n_points} points")


def verdict_rule(threshold: float) -> str:
    """How a verdict is reached, and how its CIs are made, said once under every case table."""
    return (f"Verdicts (Holm across the variant's cells): {verdicts.rule(threshold)}; an "
            "inconclusive cell's bracket is about how many trials a side would settle it, from "
            "its CI's width now. The Mann-Whitney p on per-trial medians is shown beside it. "
            f"Outliers are counted, never dropped. {interval_note()}.")


def shown_metric(ba: BenchmarkAnalysis, metric: str) -> str:
    return f"|{metric}|" if ba.info.is_signed(metric) else metric


def change_phrase(ba: BenchmarkAnalysis, metric: str, ratio: float,
                  reference: str | None = None) -> str:
    """'35.1× faster', '12.3% slower', '2.00× higher entries_per_s', '48.0× higher
    |error_pct|': a ratio to the baseline in words. Time reads as faster/slower; any other
    metric as lower/higher (of |value| for a signed one), so the words never contradict it.
    reference: what the ratio is to (the baseline when None), named when the two are level."""
    if not math.isfinite(ratio) or ratio <= 0:
        return f"ratio {fmt_number(ratio)}"
    unit = str(ba.info.metric(metric)["unit"])
    time_like = is_time_unit(unit) and not ba.info.is_signed(metric) and \
        lower_is_better(ba, metric)
    lower = ratio < 1
    if abs(ratio - 1) < 0.0005:  # would read "0% slower"
        return f"level with {reference or ba.info.baseline}"
    if ratio >= FACTOR_FROM or ratio <= 1 / FACTOR_FROM:
        amount = f"{fmt_number(1 / ratio if lower else ratio)}×"
    else:
        amount = f"{fmt_number(abs(ratio - 1) * 100)}%"
    if time_like:
        return f"{amount} {'faster' if lower else 'slower'}"
    return f"{amount} {'lower' if lower else 'higher'} {shown_metric(ba, metric)}"
