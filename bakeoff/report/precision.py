"""How precise each answer to a declared question is: the details table of
BenchmarkAnalysis.answers (the figure, its 95% CI, the CI's half-width against the
question's target, the trials behind it). The findings quote the same figures in words."""

from __future__ import annotations

import math

from bakeoff.analysis.within_run import AnswerPrecision, BenchmarkAnalysis
from bakeoff.report.format import case_params_label, fmt_number, fmt_ratio, fmt_with_ci

HEADERS = ("question", "case", "against", "figure (95% CI)", "± half-width", "target",
           "trials")


def _figure(ba: BenchmarkAnalysis, a: AnswerPrecision) -> str:
    if a.kind == "ratio":
        return "ratio " + fmt_ratio(a.value, a.ci_low, a.ci_high)
    unit = str(ba.info.metric(a.metric)["unit"])
    what = "RMS " if a.kind == "error" else "added " if a.reference is not None else ""
    return f"{what}{a.metric} {fmt_with_ci(a.value, a.ci_low, a.ci_high, unit, '')}"


def _against(ba: BenchmarkAnalysis, a: AnswerPrecision) -> str:
    if a.reference is None:
        return "—"
    if a.reference.variant != a.case.variant:
        return a.reference.variant
    return case_params_label(ba.info, a.reference)  # a param's values compared (content=...)


def answer_rows(ba: BenchmarkAnalysis) -> list[list[str]]:
    """One row per figure the questions read, in the questions' order; plain text."""
    rows = []
    for a in ba.answers:
        half = "unbounded" if math.isinf(a.half_width) else f"{fmt_number(a.half_width * 100)}%"
        trials = (f"{a.n_trials} + {a.n_reference_trials}" if a.reference is not None
                  else str(a.n_trials))
        rows.append([f"Q{a.question + 1}",
                     f"{a.case.variant}, {case_params_label(ba.info, a.case)}",
                     _against(ba, a), _figure(ba, a),
                     half + ("" if a.met else " (over target)"),
                     f"{fmt_number(a.target * 100)}%", trials])
    return rows
