"""A "ratio" answer: the ratio of medians to the reference at each point of `at`, the best
variants named, with the kernel counters that explain the last point (report/counted.py's
why sentence). A question on a metric other than the primary one names it first."""

from __future__ import annotations

import math
from typing import Any

from bakeoff.analysis.within_run import BenchmarkAnalysis
from bakeoff.declare.model import LARGEST, SMALLEST
from bakeoff.report.answers.common import (
    MAX_NAMED,
    Answer,
    Figure,
    Side,
    against_name,
    question_metric,
    ratio_figure,
    read_results,
    short_side,
    short_why,
    side_name,
    side_of,
    side_words,
    tentative_reasons,
    trials_once,
    where_label,
    why_of,
    with_tentative,
)
from bakeoff.report.apart import apart
from bakeoff.report.grid import Params, grid
from bakeoff.report.words import lower_is_better


def _points(ba: BenchmarkAnalysis, q: dict[str, Any], metric: str) -> list[tuple[Params, list[Side]]]:
    """The points a question is read at, in param order, each with its compared sides."""
    by: dict[Params, list[Side]] = {}
    for r, reading in read_results(ba, q, "ratio", metric):
        params = tuple((k, v) for k, v in r.case.params if k != q.get("param"))
        s = side_of(ba, r, reading)
        if s is not None:
            by.setdefault(params, []).append(s)
    g = grid(ba, metric)
    order = {p.params: i for i, p in enumerate(g.points)}

    def key(item: tuple[Params, list[Side]]) -> tuple[float, ...]:
        first = item[1][0].result.case.params
        return (float(order.get(first, len(order))),)
    return sorted(by.items(), key=key)


def ratio_answer(ba: BenchmarkAnalysis, q: dict[str, Any]) -> Answer | None:
    metric = question_metric(ba, q)
    points = _points(ba, q, metric)
    if not points:
        return None
    against = against_name(ba, q)
    lower = lower_is_better(ba, metric)
    clauses, shorts, tentative, results = [], [], [], []
    why_text, why_short = "", ""
    figures: list[Figure] = []
    # Params the question fixes to one value go without saying at the top of a report.
    fixed = [k for k, vs in (q.get("at") or {}).items()
             if len(vs) == 1 and vs[0] not in (LARGEST, SMALLEST)]
    for i, (params, sides) in enumerate(points):
        sides.sort(key=lambda s: s.ratio.ratio, reverse=not lower)
        shown = sides[:MAX_NAMED]
        where = where_label(ba, params, skip=[q["param"]] if q.get("param") else [])
        figures += [Figure(f"{side_name(q, s.result)} against {against}"
                           + (f" at {where}" if where else ""), s.ratio.ratio,
                           s.ratio.ci_low, s.ratio.ci_high, ratio_figure(s)) for s in sides]
        words = "; ".join(side_words(ba, q, s, against) for s in shown)
        if len(sides) > len(shown):
            words += f"; {len(sides) - len(shown)} more in the table"
        # The order above is a ranking only where the first two are told apart.
        # Bonferroni over the benchmark's points, as the findings' rankings: one pair, one CI.
        pair = apart(shown[0].result, shown[1].result,
                     comparisons=len(grid(ba, metric).points)) \
            if len(shown) > 1 else None
        if len(shown) > 1 and (pair is None or not pair.shown):
            how = f" ({pair.words(shown[0].result.unit)})" if pair is not None else ""
            words += (f"; {side_name(q, shown[0].result)} and {side_name(q, shown[1].result)} "
                      f"cannot be told apart{how}")
        clauses.append(f"at {where}, {words}" if where else words)
        # The top of a report names the best two when a question compares many.
        brief = shown if len(sides) <= MAX_NAMED else shown[:2]
        brief_where = where_label(ba, params, skip=[*fixed, *([q["param"]] if q.get("param") else [])])
        shorts.append((f"at {brief_where} against {against}: " if brief_where
                       else f"against {against}: ")
                      + ", ".join(short_side(ba, q, s) for s in brief)
                      + f" ({trials_once(brief)})")
        tentative += tentative_reasons(shown)
        results += [x for s in shown for x in (s.result, s.against)]
        if i == len(points) - 1:
            # The why where the answer is read last (the largest), for the case furthest
            # from its reference among those shown to differ.
            told = max([s for s in shown if s.settled] or shown[:1],
                       key=lambda s: abs(math.log(s.ratio.ratio)) if s.ratio.ratio > 0 else 0)
            why_text, more = why_of(ba, q, where, told)
            why_short = short_why(ba, q, told)
            tentative += more
    # A question on a metric other than the primary one (the table's) says which it reads,
    # so its ratios are not taken for the table's.
    on = f"on {metric}: " if metric != ba.info.primary_metric else ""
    text = on + "; ".join(clauses)
    text = with_tentative(text[0].upper() + text[1:], tentative)
    short = on + "; ".join(shorts)
    short = with_tentative(short[0].upper() + short[1:], tentative)
    if why_text:
        text += " Why: " + why_text
    return Answer(q["ask"], "ratio", text, short, "; ".join(dict.fromkeys(tentative)),
                  tuple(results), tuple(figures), why_short)
