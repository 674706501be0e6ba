"""An "error" answer: the RMS of each signed metric named (CaseResult.signed) at each
point; at the top of a report, each variant's lowest and highest over three points or
more."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from bakeoff.analysis.within_run import MIN_TRIALS_FOR_VERDICT, BenchmarkAnalysis, CaseResult
from bakeoff.report.answers.common import Answer, Figure, read_results, where_label, with_tentative
from bakeoff.report.answers.stuck import stuck_words
from bakeoff.report.format import fmt_with_ci
from bakeoff.report.grid import trials_of


def error_answer(ba: BenchmarkAnalysis, q: dict[str, Any]) -> Answer | None:
    metrics = [str(m) for m in q.get("metrics") or ()]
    shorts: list[str] = []
    clauses, tentative, results = [], [], []
    figures: list[Figure] = []
    for metric in metrics:
        unit = str(ba.info.metric(metric)["unit"])
        rows = [r for r, _ in read_results(ba, q, "error", metric) if r.signed is not None]
        if not rows:
            continue
        parts = []
        shorts.append(_error_range(ba, metric, rows))
        for r in rows:
            e = r.signed
            assert e is not None
            where = where_label(ba, r.case.params)
            figures.append(Figure(f"RMS of {metric}: {r.case.variant}"
                                  + (f" at {where}" if where else ""), e.rms, e.rms_ci_low,
                                  e.rms_ci_high, fmt_with_ci(e.rms, e.rms_ci_low, e.rms_ci_high, unit)
                                  .removesuffix(")") + f"; {trials_of(r)} trials)"))
            stuck = stuck_words(e, unit)
            parts.append(f"{r.case.variant}{' at ' + where if where else ''} "
                         + (f"{stuck}; {trials_of(r)} trials" if stuck else
                            fmt_with_ci(e.rms, e.rms_ci_low, e.rms_ci_high, unit)
                            .removesuffix(")") + f"; {trials_of(r)} trials)"))
            if trials_of(r) < MIN_TRIALS_FOR_VERDICT:
                tentative.append(f"fewer than {MIN_TRIALS_FOR_VERDICT} trials")
            results.append(r)
        clauses.append(f"RMS of {metric}: " + "; ".join(parts))
    if not clauses:
        return None
    text = with_tentative("; ".join(clauses), tentative)
    n = {trials_of(r) for r in results}
    trials = f"{next(iter(n))} trials each" if len(n) == 1 else f"≥ {min(n)} trials each"
    short = with_tentative(f"RMS (95% CI; {trials}): " + "; ".join(shorts), tentative)
    return Answer(q["ask"], "error", text, short, "; ".join(dict.fromkeys(tentative)),
                  tuple(results), tuple(figures))


def _error_range(ba: BenchmarkAnalysis, metric: str, rows: Sequence[CaseResult]) -> str:
    """One metric's RMS per variant for the top of a report: at its one or two points, or
    from its lowest to its highest over three or more (each with its CI and where)."""
    unit = str(ba.info.metric(metric)["unit"])

    def said(r: CaseResult) -> str:
        e = r.signed
        assert e is not None
        where = where_label(ba, r.case.params)
        stuck = stuck_words(e, unit)
        return ((stuck or fmt_with_ci(e.rms, e.rms_ci_low, e.rms_ci_high, unit, ""))
                + (f" at {where}" if where else ""))

    by: dict[str, list[CaseResult]] = {}
    for r in rows:
        by.setdefault(r.case.variant, []).append(r)
    parts = []
    for variant, mine in by.items():
        mine = sorted(mine, key=lambda r: r.signed.rms if r.signed else math.nan)
        if len(mine) <= 2:
            parts.append(f"{variant} " + ", ".join(said(r) for r in mine))
        else:
            parts.append(f"{variant} from {said(mine[0])} to {said(mine[-1])} "
                         f"({len(mine)} points)")
    return f"{metric}: " + "; ".join(parts)
