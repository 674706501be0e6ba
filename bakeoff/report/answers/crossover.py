"""A "crossover" answer: along `along`, where the ratio to the reference crosses 1
(stats.find_crossovers on those ratios and CIs); a crossing with a CI at an end that
includes 1 is said to be unsettled, never stated as a crossover. The lines along the axis
are the overhead answer's too."""

from __future__ import annotations

import math
from typing import Any

from bakeoff.analysis.within_run import BenchmarkAnalysis
from bakeoff.report.answers.common import (
    Answer,
    Figure,
    Side,
    against_name,
    question_metric,
    read_results,
    side_name,
    side_of,
    tentative_reasons,
    where_label,
    with_tentative,
)
from bakeoff.report.format import fmt_with_ci, param_estimate_label, swept_label
from bakeoff.report.grid import Params, trials_of
from bakeoff.report.words import lower_is_better
from bakeoff.stats import estimates as stats


def lines_along(ba: BenchmarkAnalysis, q: dict[str, Any],
                metric: str) -> list[tuple[str, Params, list[Side]]]:
    """Along q.along: per compared variant and fixed other params, its sides in order."""
    along = str(q["along"])
    lines: dict[tuple[str, Params], list[Side]] = {}
    for r, reading in read_results(ba, q, "level", metric):
        s = side_of(ba, r, reading)
        if s is None:
            continue
        fixed = tuple((k, v) for k, v in r.case.params if k != along)
        lines.setdefault((side_name(q, r), fixed), []).append(s)
    out = []
    for (name, fixed), sides in lines.items():
        sides.sort(key=lambda s: float(s.result.case.param(along)))
        if len(sides) >= 2:
            out.append((name, fixed, sides))
    return out


def crossings(ba: BenchmarkAnalysis, along: str, sides: list[Side],
               level: float) -> list[stats.Crossover]:
    lower = lower_is_better(ba, sides[0].result.metric)
    return stats.find_crossovers([float(s.result.case.param(along)) for s in sides],
                                 [s.ratio.ratio for s in sides],
                                 [s.ratio.ci_low for s in sides],
                                 [s.ratio.ci_high for s in sides], lower, level)


def ratio_at(ba: BenchmarkAnalysis, along: str, s: Side) -> str:
    x = swept_label(ba.info, along, float(s.result.case.param(along)))
    return f"{fmt_with_ci(s.ratio.ratio, s.ratio.ci_low, s.ratio.ci_high, '')} at {x}"


def _no_crossing(ba: BenchmarkAnalysis, metric: str, along: str, sides: list[Side],
                 against: str, name: str) -> str:
    """A line that never crosses 1, said as what it is: 'X beats Y at every measured n', or
    'X beats Y at no measured n' (never "does not beat at every", which reads as "at some"),
    with the points where a CI includes 1, where that is so."""
    lower = lower_is_better(ba, metric)
    wins = sides[0].ratio.ratio < 1 if lower else sides[0].ratio.ratio > 1
    unsure = sum(1 for s in sides if s.ratio.ci_low <= 1 <= s.ratio.ci_high)
    said = (f"{name} beats {against} at {'every' if wins else 'no'} measured {along}")
    if unsure:
        said += f" (a CI includes 1 at {unsure} of the {len(sides)} points)"
    return said


def crossover_answer(ba: BenchmarkAnalysis, q: dict[str, Any]) -> Answer | None:
    metric = question_metric(ba, q)
    along = str(q["along"])
    against = against_name(ba, q)
    clauses, shorts, tentative, results = [], [], [], []
    figures: list[Figure] = []
    for name, fixed, sides in lines_along(ba, q, metric):
        where = where_label(ba, fixed, skip=[q["param"]] if q.get("param") else [])
        where = f" (at {where})" if where else ""
        found = crossings(ba, along, sides, 1.0)
        by_x = {float(s.result.case.param(along)): s for s in sides}
        settled = [c for c in found if c.confident]
        unsure = [c for c in found if not c.confident]
        parts, brief = [], []
        for c in settled:
            verb = "starts beating" if c.direction == "starts_winning" else "stops beating"
            parts.append(
                f"{name} {verb} {against}{where} between {swept_label(ba.info, along, c.low)} "
                f"and {swept_label(ba.info, along, c.high)} (≈ "
                f"{param_estimate_label(ba.info, along, c.estimate)}; "
                f"ratio {ratio_at(ba, along, by_x[c.low])}"
                f", {ratio_at(ba, along, by_x[c.high])})")
            brief.append(f"{name} {verb} {against}{where} between "
                         f"{swept_label(ba.info, along, c.low)} and "
                         f"{swept_label(ba.info, along, c.high)} (≈ "
                         f"{param_estimate_label(ba.info, along, c.estimate)}; ratio "
                         f"{ratio_at(ba, along, by_x[c.low])}, {ratio_at(ba, along, by_x[c.high])})")
        for c in unsure:
            parts.append(
                f"{name}'s ratio to {against}{where} passes 1 between "
                f"{swept_label(ba.info, along, c.low)} and {swept_label(ba.info, along, c.high)}"
                f", but a CI there includes 1 ({ratio_at(ba, along, by_x[c.low])}, "
                f"{ratio_at(ba, along, by_x[c.high])}): no settled crossover")

        if unsure:
            tentative.append("a CI at a crossing includes 1")
            ends = "; ".join(f"{ratio_at(ba, along, by_x[c.low])}, {ratio_at(ba, along, by_x[c.high])}"
                             for c in unsure)
            brief.append(f"where {name} crosses {against}{where} is not settled: a CI at "
                         f"{'each crossing' if len(unsure) > 1 else 'the crossing'} includes 1 "
                         f"(ratio {ends})")
        label = f"where {name} crosses {against}{where}"
        figures += [Figure(label, c.estimate, c.low, c.high,
                           f"≈ {param_estimate_label(ba.info, along, c.estimate)} (between "
                           f"{swept_label(ba.info, along, c.low)} and "
                           f"{swept_label(ba.info, along, c.high)})") for c in settled]
        if not settled:
            figures.append(Figure(label, math.nan, math.nan, math.nan,
                                  "not settled" if unsure else "none in the measured range"))
        if not found:
            side = _no_crossing(ba, metric, along, sides, against + where, name)
            parts.append(f"{side}, from {ratio_at(ba, along, sides[0])} to "
                         f"{ratio_at(ba, along, sides[-1])}: no crossover in the measured range")
            brief.append(f"{side} (ratio {ratio_at(ba, along, sides[0])} to "
                         f"{ratio_at(ba, along, sides[-1])})")
        trials = min(min(trials_of(s.result), trials_of(s.against)) for s in sides)
        clauses.append("; ".join(parts) + f" (at least {trials} trials a side)")
        shorts.append("; ".join(brief) + f" (≥ {trials} trials a side)")
        tentative += tentative_reasons(sides)
        results += [x for s in sides for x in (s.result, s.against)]
    if not clauses:
        return None
    text = with_tentative("; ".join(clauses), tentative)
    short = "; ".join(shorts)
    # A sentence that opens on a variant's name keeps its case, as names are written.
    short = with_tentative(short[0].upper() + short[1:] if short.startswith("where ")
                            else short, tentative)
    return Answer(q["ask"], "crossover", text, short, "; ".join(dict.fromkeys(tentative)),
                  tuple(results), tuple(figures))
