"""What every form of answer shares: the Answer and its Figures, one compared case against
its reference (Side), and how a figure and its doubts read.

Which cases a question reads is not decided here: `readings` asks declare/questions.py's
`question_readings`, the one resolver of a Question against a grid (the allocation of trials
and the analysis' answers' precision read the same), on the cases this run measured; each
form then takes the figures the analysis holds for those cases (CaseResult.comparison, or a
question_pairs.PairComparison for a reference other than the baseline).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from bakeoff.analysis.within_run import MIN_TRIALS_FOR_VERDICT, BenchmarkAnalysis, CaseResult
from bakeoff.declare.model import LARGEST, SMALLEST, Case, ParamValue
from bakeoff.declare.questions import Reading, question_from_dict, question_readings
from bakeoff.report.counted import counter_words, why_sentence
from bakeoff.report.format import (
    fmt_estimate,
    fmt_number,
    fmt_value,
    is_time_unit,
    params_label,
    ratio_with_ci,
)
from bakeoff.report.grid import Params, grid, trials_of
from bakeoff.report.words import FACTOR_FROM, change_phrase, lower_is_better
from bakeoff.stats import estimates as stats
from bakeoff.stats.estimates import MIN_TRIALS_FOR_CI

MAX_NAMED = 3  # variants a ratio answer names at one point; the table has the rest


@dataclass(frozen=True)
class Side:
    """One compared case against its reference at one point, as the analysis has it."""

    result: CaseResult
    against: CaseResult
    ratio: stats.Ratio
    shift: stats.Shift | None
    settled: bool  # the ratio's CI lies beyond the verdict's band (a difference is shown)

    @property
    def trials(self) -> str:
        return f"{trials_of(self.result)} + {trials_of(self.against)} trials"

    @property
    def few(self) -> bool:
        return min(trials_of(self.result), trials_of(self.against)) < MIN_TRIALS_FOR_VERDICT


@dataclass(frozen=True)
class Figure:
    """One figure of an answer with its 95% CI (NaN where the answer is a statement, such as
    'not reached in the measured range'), so two runs or two hosts can be set side by side."""

    label: str  # what it is: 'mremap against memcpy at size=16 MiB'
    value: float
    low: float
    high: float
    shown: str  # as a report says it: 'ratio 0.0180 (95% CI 0.0167–0.0202; 5 + 5 trials)'


def figures_agree(figures: Sequence[Figure]) -> bool:
    """The same answer everywhere: the CIs share a common range (statements: the same
    words)."""
    if all(math.isfinite(f.low) and math.isfinite(f.high) for f in figures):
        return max(f.low for f in figures) <= min(f.high for f in figures)
    return len({f.shown for f in figures}) == 1


@dataclass(frozen=True)
class Answer:
    """A question's answer: `text` in full, `short` for the top of a report."""

    ask: str
    form: str
    text: str
    short: str
    tentative: str
    results: tuple[CaseResult, ...]
    figures: tuple[Figure, ...] = ()
    # The short form's why (its lead counter), kept apart so that a benchmark whose questions
    # share it says it once at the top of a report.
    short_why: str = ""


def question_metric(ba: BenchmarkAnalysis, q: dict[str, Any]) -> str:
    return str(q.get("metric") or ba.info.primary_metric)


def same_value(a: ParamValue, b: object) -> bool:
    if isinstance(a, int | float) and isinstance(b, int | float):
        return float(a) == float(b)
    return str(a) == str(b)




# ---- what a question reads ---------------------------------------------------------------


def readings(ba: BenchmarkAnalysis, q: dict[str, Any]) -> list[Reading]:
    """The figures question q reads in this run (declare/questions.py resolves it), on the
    cases the run measured: LARGEST and SMALLEST are the largest and smallest it measured."""
    info = ba.info
    measured = list(dict.fromkeys(r.case for r in ba.results if r.summary is not None))
    not_answers = [str(v["name"]) for v in info.variants
                   if info.is_diagnostic(str(v["name"])) or info.is_control(str(v["name"]))]
    index = next((i for i, x in enumerate(info.questions) if x is q), 0)
    return question_readings(question_from_dict(q), index, measured, info.baseline,
                             not_answers, info.crossover_ratios, info.primary_metric)


def read_results(ba: BenchmarkAnalysis, q: dict[str, Any], kind: str,
                 metric: str) -> list[tuple[CaseResult, Reading]]:
    """Each result of `metric` a reading of `kind` reads, in the analysis' order of results."""
    by_case = {r.case: r for r in readings(ba, q) if r.kind == kind and r.metric == metric}
    return [(r, by_case[r.case]) for r in ba.for_metric(metric)
            if r.summary is not None and r.case in by_case]


def result_of(ba: BenchmarkAnalysis, case: Case | None, metric: str) -> CaseResult | None:
    return next((r for r in ba.for_metric(metric) if r.case == case and r.summary is not None),
                None)


def side_of(ba: BenchmarkAnalysis, r: CaseResult, reading: Reading) -> Side | None:
    """r against the reading's reference (another value of q.param, or the reference
    variant), from the analysis' figures: its comparison to the baseline, or its pair."""
    ref = reading.reference
    if ref is None:
        return None
    if ref.variant == ba.info.baseline and ref.params == r.case.params and r.comparison:
        base = result_of(ba, ref, r.metric)
        if base is None:
            return None
        return Side(r, base, r.comparison.ratio, r.comparison.shift,
                    r.comparison.verdict not in stats.NO_DIFFERENCE)
    pair = ba.pairs.get((r.case, ref, r.metric))
    against = result_of(ba, ref, r.metric)
    if pair is None or pair.ratio is None or against is None:
        return None
    lower = lower_is_better(ba, r.metric)
    settled = (stats.verdict(pair.ratio, pair.ratio.p_ci, lower, ba.threshold)
               not in stats.NO_DIFFERENCE)
    return Side(r, against, pair.ratio, pair.shift, settled)


def where_label(ba: BenchmarkAnalysis, params: Params, skip: Iterable[str] = ()) -> str:
    """The params that vary in this run, as a label ('size=16 MiB')."""
    constant = dict(grid(ba).constant)
    left = [(k, v) for k, v in params if k not in constant and k not in set(skip)]
    return params_label(ba.info, left) if left else ""


def side_name(q: dict[str, Any], r: CaseResult) -> str:
    return str(r.case.param(q["param"])) if q.get("param") else r.case.variant


def against_name(ba: BenchmarkAnalysis, q: dict[str, Any]) -> str:
    if q.get("param"):
        within = ", ".join(str(v) for v in q.get("within") or ())
        return f"{q['against']} ({within})" if within else str(q["against"])
    return str(q.get("against") or ba.info.baseline)


def fixed_params(q: dict[str, Any]) -> list[str]:
    """Params the question fixes to one value: said once at the top of a report."""
    return [k for k, vs in (q.get("at") or {}).items()
            if len(vs) == 1 and vs[0] not in (LARGEST, SMALLEST)]


# ---- how a figure reads ------------------------------------------------------------------


def ratio_figure(s: Side) -> str:
    if min(trials_of(s.result), trials_of(s.against)) < 2:
        return f"ratio {fmt_number(s.ratio.ratio)}, no CI from one trial; {s.trials}"
    if min(trials_of(s.result), trials_of(s.against)) < MIN_TRIALS_FOR_CI:
        return f"ratio {fmt_number(s.ratio.ratio)}; {s.trials}: too few for a CI"
    return f"{ratio_with_ci(s.ratio.ratio, s.ratio.ci_low, s.ratio.ci_high)}; {s.trials}"


def side_words(ba: BenchmarkAnalysis, q: dict[str, Any], s: Side, against: str) -> str:
    """'mremap is 51.6× faster than memcpy (ratio …; 5 + 5 trials)', or, when the CI
    reaches the verdict's band, that no difference of that size is shown."""
    name = side_name(q, s.result)
    if s.settled:
        phrase = change_phrase(ba, s.result.metric, s.ratio.ratio, against)
        return f"{name} is {phrase} than {against} " \
               f"({ratio_figure(s)})"
    if 1 - ba.threshold <= s.ratio.ci_low and s.ratio.ci_high <= 1 + ba.threshold:
        return (f"{name} is equivalent to {against} within ±{ba.threshold * 100:g}% "
                f"({ratio_figure(s)})")
    return (f"{name} is not shown to differ from {against} by more than "
            f"±{ba.threshold * 100:g}% ({ratio_figure(s)})")


def tentative_reasons(sides: Sequence[Side], more: Iterable[str] = ()) -> list[str]:
    why = list(more)
    if any(s.few for s in sides):
        why.append(f"fewer than {MIN_TRIALS_FOR_VERDICT} trials")
    return why


def with_tentative(text: str, why: Sequence[str]) -> str:
    return text + (f" [tentative: {', '.join(dict.fromkeys(why))}]." if why else ".")


def why_of(ba: BenchmarkAnalysis, q: dict[str, Any], where: str, s: Side) -> tuple[str, list[str]]:
    """The why_counters of the compared case against its reference (counted samples)."""
    said = why_sentence(ba, where, s.result, s.against, rival=s.against,
                        called=(side_name(q, s.result), side_name(q, s.against)) if q.get("param")
                         else None)
    if said is None:
        return "", []
    return said.text, said.tentative.split("; ") if said.tentative else []


def short_side(ba: BenchmarkAnalysis, q: dict[str, Any], s: Side) -> str:
    """'mremap 531× faster (95% CI 91.7–671×)': the speed-up with its CI, as a factor (or a
    percentage near 1); the ratio itself where no difference is shown."""
    r, name = s.ratio, side_name(q, s.result)
    if not s.settled or not (r.ratio > 0 and r.ci_low > 0):
        # ≈ as in the compact table: no difference beyond the verdict's threshold shown.
        return f"{name} ≈ {side_name(q, s.against)} ({ratio_with_ci(r.ratio, r.ci_low, r.ci_high)})"
    better = (r.ratio < 1) == lower_is_better(ba, s.result.metric)
    point, low, high = (1 / r.ratio, 1 / r.ci_high, 1 / r.ci_low) if r.ratio < 1 else \
        (r.ratio, r.ci_low, r.ci_high)
    unit = str(ba.info.metric(s.result.metric)["unit"])
    time_like = is_time_unit(unit) and not ba.info.is_signed(s.result.metric)
    word = ("faster" if better else "slower") if time_like else \
        ("lower" if r.ratio < 1 else "higher")
    if point >= FACTOR_FROM:
        e = fmt_estimate(point, low, high, "", si=False)
        return f"{name} {e.point}× {word} (95% CI {e.interval}×)"
    # A percentage is of the ratio itself, as change_phrase says it in the answer below
    # ("5.35% faster", ratio 0.947), not of its inverse: one figure for one cell.
    low, high = sorted(abs(x - 1) * 100 for x in (r.ci_low, r.ci_high))
    e = fmt_estimate(abs(r.ratio - 1) * 100, low, high, "", si=False)
    return f"{name} {e.point}% {word} (95% CI {e.interval}%)"


def short_why(ba: BenchmarkAnalysis, q: dict[str, Any], s: Side) -> str:
    """The lead counter of the why alone, medians only, for the top of a report: 'Why
    (counted samples, per op): mremap 8.00 tlb:tlb_flush events, memcpy 0.'"""
    said = why_sentence(ba, "", s.result, s.against, rival=s.against)
    if said is None or not said.counters:
        return ""
    lead = said.counters[0]
    mine, theirs = s.result.per_op[lead].median, s.against.per_op[lead].median
    return (f" Why (per op, counted): {side_name(q, s.result)} {fmt_value(mine, '')} "
            f"{counter_words(lead)}, {side_name(q, s.against)} {fmt_value(theirs, '')}.")


def trials_once(sides: Sequence[Side]) -> str:
    """'5 + 5 trials' said once for a point (each, when every side has the same)."""
    counts = {s.trials for s in sides}
    return f"{next(iter(counts))} each" if len(counts) == 1 and len(sides) > 1 else \
        ", ".join(sorted(counts))
