"""An "added" answer: what each variant adds over its reference (the Hodges-Lehmann shift,
variant - reference) with its CI at each point; where the reference does not report the
metric, or the table shows the metric's medians (a metric that is itself the addition,
measured inside the program), the case's own median, the figure its table cell shows."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from bakeoff.analysis.within_run import MIN_TRIALS_FOR_VERDICT, BenchmarkAnalysis, CaseResult
from bakeoff.declare.questions import Reading
from bakeoff.report.answers.common import (
    Answer,
    Figure,
    against_name,
    fixed_params,
    question_metric,
    read_results,
    result_of,
    side_name,
    side_of,
    where_label,
    with_tentative,
)
from bakeoff.report.apart import apart
from bakeoff.report.format import fmt_estimate, interval_words
from bakeoff.report.grid import Params, grid, trials_of


@dataclass(frozen=True)
class _Added:
    """What one case adds over its reference: a shift with its CI, or, where the reference
    does not report the metric (a metric that is itself the addition, measured inside the
    program), the case's own median with its CI."""

    result: CaseResult
    against: CaseResult | None
    estimate: float
    low: float
    high: float

    @property
    def trials(self) -> str:
        if self.against is None:
            return f"{trials_of(self.result)} trials"
        return f"{trials_of(self.result)} + {trials_of(self.against)} trials"



def _added(ba: BenchmarkAnalysis, r: CaseResult, reading: Reading,
           as_tabled: bool) -> _Added | None:
    """as_tabled: the benchmark's table shows this metric's medians (no ratios), so the
    answer quotes the case's own median and CI, the figure its cell shows: one figure per
    cell (issue 33). heap-sampling's decide_ns_per_alloc is already a difference inside the
    program, and its reference (NONE) the A/A check of it; a shift over that check took its
    noise in a second time and printed a second figure for the cell."""
    if as_tabled and r.summary is not None:
        return _Added(r, None, r.summary.median, r.summary.ci_low, r.summary.ci_high)
    s = side_of(ba, r, reading)
    if s is not None and s.shift is not None:
        return _Added(r, s.against, s.shift.estimate, s.shift.ci_low, s.shift.ci_high)
    ref = result_of(ba, reading.reference, r.metric)
    pair = ba.pairs.get((r.case, reading.reference, r.metric)) if reading.reference else None
    if pair is not None and ref is not None:  # a reference whose median is 0: no ratio, a shift
        return _Added(r, ref, pair.shift.estimate, pair.shift.ci_low, pair.shift.ci_high)
    if ref is not None or r.summary is None:
        return None
    # The reference does not report the metric: the case's own median is what it adds.
    return _Added(r, None, r.summary.median, r.summary.ci_low, r.summary.ci_high)


def _interval_words(low: float, high: float, unit: str) -> str:
    """'−0.34 to +0.42 ns': an interval that straddles 0, said alone."""
    return interval_words(low, high, unit)


def _what_it_adds(a: _Added, unit: str, against: str) -> tuple[str, str]:
    """(the full clause's figure, the short one): what the case adds, with its CI; where the
    CI includes 0, the interval alone (no cost resolved); where the whole CI is below 0, how
    much less it takes (never a negative cost said as a cost)."""
    if a.low <= 0 <= a.high and a.low < a.high:
        span = _interval_words(a.low, a.high, unit)
        return (f"adds no cost resolved from 0 (95% CI {span}; {a.trials})",
                f"not resolved from 0 ({span})")
    if a.estimate < 0:
        e = fmt_estimate(-a.estimate, -a.high, -a.low, unit)
        ci = f"95% CI {e.interval}" if e.interval else "the same in every trial"
        return (f"takes {e.point} less than {against} ({ci}; {a.trials})",
                f"{e.point} less ({e.interval or 'every trial'})")
    e = fmt_estimate(a.estimate, a.low, a.high, unit)
    ci = f"95% CI {e.interval}" if e.interval else "the same in every trial"
    return f"adds {e.point} ({ci}; {a.trials})", f"{e.point} ({e.interval or 'every trial'})"


def _not_told_apart(q: dict[str, Any], added: list[_Added], where: str, unit: str,
                    comparisons: int, net: bool = False) -> list[str]:
    """Neighbours in the order of their figures that cannot be told apart (report/apart.py):
    the order is no ranking there, and the answer says so."""
    out = []
    for x, y in itertools.pairwise(added):
        told = apart(x.result, y.result, comparisons, net)
        if told is None or not told.shown:
            how = f": {told.words(unit)}" if told is not None else ": too few trials"
            out.append(f"{side_name(q, x.result)} and {side_name(q, y.result)} cannot be told "
                       f"apart{' at ' + where if where else ''}{how}")
    return out


def added_answer(ba: BenchmarkAnalysis, q: dict[str, Any]) -> Answer | None:
    metric = question_metric(ba, q)
    unit = str(ba.info.metric(metric)["unit"])
    against = against_name(ba, q)
    by: dict[Params, list[_Added]] = {}
    as_tabled = not grid(ba, metric).with_ratios
    for r, reading in read_results(ba, q, "difference", metric):
        if (a := _added(ba, r, reading, as_tabled)) is not None:
            by.setdefault(tuple((k, v) for k, v in r.case.params if k != q.get("param")),
                          []).append(a)
    order = {p.params: i for i, p in enumerate(grid(ba, metric).points)}
    clauses, tentative, results, shorts = [], [], [], []
    figures: list[Figure] = []
    skip = [q["param"]] if q.get("param") else []
    fixed = fixed_params(q)
    # Bonferroni over the benchmark's points, as the findings' rankings: one pair, one CI.
    comparisons = len(grid(ba, metric).points)
    for params, added in sorted(by.items(), key=lambda item: order.get(
            item[1][0].result.case.params, len(order))):
        added = sorted(added, key=lambda a: a.estimate)
        where = where_label(ba, params, skip=skip)
        brief_where = where_label(ba, params, skip=[*skip, *fixed])
        level = _not_told_apart(q, added, brief_where, unit, comparisons,
                                ba.info.is_net(metric))
        shorts.append((f"{brief_where}: " if brief_where else "") + ", ".join(
            f"{side_name(q, a.result)} {_what_it_adds(a, unit, against)[1]}" for a in added)
            + "".join(f"; {x}" for x in level))
        parts = []
        for a in added:
            name = side_name(q, a.result)
            said = _what_it_adds(a, unit, against)[0]
            parts.append(f"{name} {said}")
            figures.append(Figure(f"{name} over {against}" + (f" at {where}" if where else ""),
                                  a.estimate, a.low, a.high, said))
            if min(trials_of(a.result), trials_of(a.against) if a.against else 99) < \
                    MIN_TRIALS_FOR_VERDICT:
                tentative.append(f"fewer than {MIN_TRIALS_FOR_VERDICT} trials")
            results += [a.result, *([a.against] if a.against else [])]
        lead = f"at {where}, " if where else ""
        # Measured inside the program (the reference has no such figure): said as measured.
        how = "" if all(a.against for a in added) else f" ({metric} as measured)"
        clauses.append(lead + f"over {against}{how}: " + "; ".join(
            parts + _not_told_apart(q, added, "", unit, comparisons, ba.info.is_net(metric))))
    if not clauses:
        return None
    text = "; ".join(clauses)
    text = with_tentative(text[0].upper() + text[1:], tentative)
    # The top of a report: the metric and the reference once, the question's fixed params
    # once, each point's figures with their CIs, the trials once.
    first = next(iter(by))
    fixed_where = where_label(ba, tuple((k, v) for k, v in first if k in fixed))
    counts = {a.trials for added in by.values() for a in added}
    trials = (f"{next(iter(counts))} each" if len(counts) == 1 else
              f"≥ {min(trials_of(r) for r in results)} trials a side")
    # A metric's name keeps its case, as names are written.
    short = with_tentative((f"At {fixed_where}, " if fixed_where else "") +
                            f"{metric} over {against} (95% CI; {trials}): " + "; ".join(shorts),
                            tentative)
    return Answer(q["ask"], "added", text, short, "; ".join(dict.fromkeys(tentative)),
                  tuple(results), tuple(figures))
