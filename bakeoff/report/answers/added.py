"""An "added" answer: what each variant adds over its reference (the Hodges-Lehmann shift,
variant - reference) with its CI at each point; where the reference does not report the
metric (a metric that is itself the addition), the case's own median."""

from __future__ import annotations

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
from bakeoff.report.format import fmt_range, fmt_value
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



def _added(ba: BenchmarkAnalysis, r: CaseResult, reading: Reading) -> _Added | None:
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


def added_answer(ba: BenchmarkAnalysis, q: dict[str, Any]) -> Answer | None:
    metric = question_metric(ba, q)
    unit = str(ba.info.metric(metric)["unit"])
    against = against_name(ba, q)
    by: dict[Params, list[_Added]] = {}
    for r, reading in read_results(ba, q, "difference", metric):
        if (a := _added(ba, r, reading)) is not None:
            by.setdefault(tuple((k, v) for k, v in r.case.params if k != q.get("param")),
                          []).append(a)
    order = {p.params: i for i, p in enumerate(grid(ba, metric).points)}
    clauses, tentative, results, shorts = [], [], [], []
    figures: list[Figure] = []
    skip = [q["param"]] if q.get("param") else []
    fixed = fixed_params(q)
    for params, added in sorted(by.items(), key=lambda item: order.get(
            item[1][0].result.case.params, len(order))):
        where = where_label(ba, params, skip=skip)
        brief_where = where_label(ba, params, skip=[*skip, *fixed])
        shorts.append((f"{brief_where}: " if brief_where else "") + ", ".join(
            f"{side_name(q, a.result)} {fmt_value(a.estimate, unit)} "
            f"({fmt_range(a.low, a.high, unit)})" for a in sorted(added, key=lambda a: a.estimate)))
        parts = []
        for a in sorted(added, key=lambda a: a.estimate):
            name = side_name(q, a.result)
            shown = (f"{fmt_value(a.estimate, unit)} (95% CI {fmt_range(a.low, a.high, unit)}; "
                     f"{a.trials})")
            parts.append(f"{name} adds {shown}")
            figures.append(Figure(f"{name} over {against}" + (f" at {where}" if where else ""),
                                  a.estimate, a.low, a.high, shown))
            if a.low <= 0 <= a.high:
                tentative.append(f"{name}'s CI includes 0")
            if min(trials_of(a.result), trials_of(a.against) if a.against else 99) < \
                    MIN_TRIALS_FOR_VERDICT:
                tentative.append(f"fewer than {MIN_TRIALS_FOR_VERDICT} trials")
            results += [a.result, *([a.against] if a.against else [])]
        lead = f"at {where}, " if where else ""
        # Measured inside the program (the reference has no such figure): said as measured.
        how = "" if all(a.against for a in added) else f" ({metric} as measured)"
        clauses.append(lead + f"over {against}{how}: " + "; ".join(parts))
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
