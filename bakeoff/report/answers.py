"""Answers: the questions a benchmark declares (BenchmarkInfo.questions, model.Question),
answered first, one finding per question, before any generic contrast.

Each form of answer reads figures the analysis already holds, with their CIs and trials:
- "ratio": the ratio of medians to the reference (CaseResult.comparison, or a
  question_pairs.PairComparison for a reference other than the baseline) at each point of
  `at`, with the kernel counters that explain it (report/counted.py's why sentence);
- "crossover": along `along`, where that ratio crosses 1 (stats.find_crossovers on those
  ratios and CIs); a crossing with a CI at an end that includes 1 is said to be unsettled,
  never stated as a crossover;
- "overhead": the Fit's intercept a (what a variant adds per operation) and, for each of
  the benchmark's crossover_ratios, from which value of `along` the ratio stays under it;
- "added": the shift (variant - reference, Hodges-Lehmann) with its CI at each point;
- "error": the RMS of each signed metric named (CaseResult.signed) at each point.
Diagnostic and control variants never answer. Each Answer has its full text (the
benchmark's section), a short form for the top of a report (speed-ups as factors with their
CIs, the lead counter of the why kept apart as short_why), and its Figures, which `bakeoff
compare` and the report across hosts set side by side. Nothing here knows a benchmark by
name; sentences are raw text, each renderer escapes them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from bakeoff.analysis.question_pairs import PairComparison
from bakeoff.analysis.within_run import MIN_TRIALS_FOR_VERDICT, BenchmarkAnalysis, CaseResult, SweepFit
from bakeoff.declare.model import LARGEST, SMALLEST, Case, ParamValue
from bakeoff.report.counted import counter_words, why_sentence
from bakeoff.report.format import (
    fmt_number,
    fmt_range,
    fmt_value,
    is_time_unit,
    param_estimate_label,
    params_label,
    swept_label,
)
from bakeoff.report.grid import Params, grid, trials_of
from bakeoff.report.words import FACTOR_FROM, change_phrase, lower_is_better
from bakeoff.stats import estimates as stats

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


# ---- what a question reads ---------------------------------------------------------------


def answering_variants(ba: BenchmarkAnalysis, q: dict[str, Any]) -> list[str]:
    """The variants a question compares with its reference: those it names, or every one
    that is neither the reference, the baseline, a control nor diagnostic; never a
    diagnostic or control variant (model.Variant.diagnostic)."""
    info = ba.info
    named = [str(v) for v in q.get("variants") or ()]
    if q.get("param"):
        return named  # values of the param, not variants
    pool = named or [str(v["name"]) for v in info.variants
                     if v["name"] not in (q.get("against"), info.baseline)]
    return [v for v in pool if not info.is_diagnostic(v) and not info.is_control(v)
            and v != q.get("against")]


def _metric(ba: BenchmarkAnalysis, q: dict[str, Any]) -> str:
    return str(q.get("metric") or ba.info.primary_metric)


def _same(a: ParamValue, b: object) -> bool:
    if isinstance(a, int | float) and isinstance(b, int | float):
        return float(a) == float(b)
    return str(a) == str(b)


def resolve_at(ba: BenchmarkAnalysis, q: dict[str, Any], metric: str) -> dict[str, list[ParamValue]]:
    """`at` with LARGEST/SMALLEST replaced by the values this run measured."""
    measured = [r for r in ba.for_metric(metric) if r.summary is not None]
    out: dict[str, list[ParamValue]] = {}
    for name, wanted in (q.get("at") or {}).items():
        values = sorted({r.case.param(name) for r in measured if name in dict(r.case.params)},
                        key=lambda v: (0, float(v), "") if isinstance(v, int | float)
                        else (1, 0.0, str(v)))
        picked: list[ParamValue] = []
        for w in wanted:
            if w in (LARGEST, SMALLEST) and values:
                picked.append(values[-1] if w == LARGEST else values[0])
            else:
                picked += [v for v in values if _same(v, w)]
        out[name] = list(dict.fromkeys(picked))
    return out


def _matches(params: Params, at: dict[str, list[ParamValue]], skip: str | None = None) -> bool:
    d = dict(params)
    return all(k == skip or any(_same(d.get(k, ""), v) for v in vs) for k, vs in at.items())


def _pair(ba: BenchmarkAnalysis, q: dict[str, Any], r: CaseResult) -> PairComparison | None:
    """r against the question's reference, as question_pairs.py computed it."""
    param, against = q.get("param"), str(q.get("against") or "")

    def is_reference(ref: Case) -> bool:
        if param:
            return ref.variant == r.case.variant and str(ref.param(param)) == against
        return ref.variant == against

    # Two questions may set one case against different references: the one asked of.
    return next((p for (c, ref, m), p in ba.pairs.items()
                 if c == r.case and m == r.metric and is_reference(ref)), None)


def _side(ba: BenchmarkAnalysis, q: dict[str, Any], r: CaseResult) -> Side | None:
    """r against the question's reference at r's params (another value of q.param, or the
    reference variant), from the analysis' figures."""
    lower = lower_is_better(ba, r.metric)
    param, against = q.get("param"), str(q.get("against") or "")
    if not param and against == ba.info.baseline and r.comparison is not None:
        base = next((b for b in ba.for_metric(r.metric) if b.case.variant == against
                     and b.case.params == r.case.params), None)
        if base is None:
            return None
        return Side(r, base, r.comparison.ratio, r.comparison.shift,
                    r.comparison.verdict not in stats.NO_DIFFERENCE)
    pair = _pair(ba, q, r)
    if pair is None or pair.ratio is None:
        return None
    ref = next((b for b in ba.for_metric(r.metric) if b.case == pair.against), None)
    if ref is None:
        return None
    settled = (stats.verdict(pair.ratio, pair.ratio.p_ci, lower, ba.threshold)
               not in stats.NO_DIFFERENCE)
    return Side(r, ref, pair.ratio, pair.shift, settled)


def _compared(ba: BenchmarkAnalysis, q: dict[str, Any], metric: str) -> list[CaseResult]:
    """The results that answer: each variant's (or, with q.param, each value's) cases."""
    names = answering_variants(ba, q)
    param = q.get("param")
    within = [str(v) for v in q.get("within") or ()]
    if param and not names:  # every value of the param but the reference
        names = sorted({str(r.case.param(param)) for r in ba.for_metric(metric)} -
                       {str(q.get("against"))})
    out = []
    for r in ba.for_metric(metric):
        if r.summary is None:
            continue
        if param:
            if r.case.variant in within and str(r.case.param(param)) in names:
                out.append(r)
        elif r.case.variant in names:
            out.append(r)
    return out


def _where(ba: BenchmarkAnalysis, params: Params, skip: Iterable[str] = ()) -> str:
    """The params that vary in this run, as a label ('size=16 MiB')."""
    constant = dict(grid(ba).constant)
    left = [(k, v) for k, v in params if k not in constant and k not in set(skip)]
    return params_label(ba.info, left) if left else ""


def _name(q: dict[str, Any], r: CaseResult) -> str:
    return str(r.case.param(q["param"])) if q.get("param") else r.case.variant


def _against_name(ba: BenchmarkAnalysis, q: dict[str, Any]) -> str:
    if q.get("param"):
        within = ", ".join(str(v) for v in q.get("within") or ())
        return f"{q['against']} ({within})" if within else str(q["against"])
    return str(q.get("against") or ba.info.baseline)


# ---- how a figure reads ------------------------------------------------------------------


def _figure(s: Side) -> str:
    if min(trials_of(s.result), trials_of(s.against)) < 2:
        return f"ratio {fmt_number(s.ratio.ratio)}, no CI from one trial; {s.trials}"
    return (f"ratio {fmt_number(s.ratio.ratio)}, 95% CI {fmt_number(s.ratio.ci_low)}–"
            f"{fmt_number(s.ratio.ci_high)}; {s.trials}")


def _side_words(ba: BenchmarkAnalysis, q: dict[str, Any], s: Side, against: str) -> str:
    """'mremap is 51.6× faster than memcpy (ratio …; 5 + 5 trials)', or, when the CI
    reaches the verdict's band, that no difference of that size is shown."""
    name = _name(q, s.result)
    if s.settled:
        phrase = change_phrase(ba, s.result.metric, s.ratio.ratio, against)
        return f"{name} is {phrase} than {against} " \
               f"({_figure(s)})"
    if 1 - ba.threshold <= s.ratio.ci_low and s.ratio.ci_high <= 1 + ba.threshold:
        return (f"{name} is equivalent to {against} within ±{ba.threshold * 100:g}% "
                f"({_figure(s)})")
    return (f"{name} is not shown to differ from {against} by more than "
            f"±{ba.threshold * 100:g}% ({_figure(s)})")


def _tentative(sides: Sequence[Side], more: Iterable[str] = ()) -> list[str]:
    why = list(more)
    if any(s.few for s in sides):
        why.append(f"fewer than {MIN_TRIALS_FOR_VERDICT} trials")
    return why


def _with_tentative(text: str, why: Sequence[str]) -> str:
    return text + (f" [tentative: {', '.join(dict.fromkeys(why))}]." if why else ".")


def _why(ba: BenchmarkAnalysis, q: dict[str, Any], where: str, s: Side) -> tuple[str, list[str]]:
    """The why_counters of the compared case against its reference (counted samples)."""
    said = why_sentence(ba, where, s.result, s.against, rival=s.against,
                        called=(_name(q, s.result), _name(q, s.against)) if q.get("param")
                         else None)
    if said is None:
        return "", []
    return said.text, said.tentative.split("; ") if said.tentative else []


# ---- the forms ---------------------------------------------------------------------------


def _points(ba: BenchmarkAnalysis, q: dict[str, Any], metric: str) -> list[tuple[Params, list[Side]]]:
    """The points a question is read at, in param order, each with its compared sides."""
    at = resolve_at(ba, q, metric)
    by: dict[Params, list[Side]] = {}
    for r in _compared(ba, q, metric):
        if not _matches(r.case.params, at, skip=q.get("param")):
            continue
        params = tuple((k, v) for k, v in r.case.params if k != q.get("param"))
        s = _side(ba, q, r)
        if s is not None:
            by.setdefault(params, []).append(s)
    g = grid(ba, metric)
    order = {p.params: i for i, p in enumerate(g.points)}

    def key(item: tuple[Params, list[Side]]) -> tuple[float, ...]:
        first = item[1][0].result.case.params
        return (float(order.get(first, len(order))),)
    return sorted(by.items(), key=key)


def _short_side(ba: BenchmarkAnalysis, q: dict[str, Any], s: Side) -> str:
    """'mremap 531× faster (95% CI 91.7–671×)': the speed-up with its CI, as a factor (or a
    percentage near 1); the ratio itself where no difference is shown."""
    r, name = s.ratio, _name(q, s.result)
    if not s.settled or not (r.ratio > 0 and r.ci_low > 0):
        # ≈ as in the compact table: no difference beyond the verdict's threshold shown.
        return (f"{name} ≈ {_name(q, s.against)} (ratio {fmt_number(r.ratio)}, 95% CI "
                f"{fmt_number(r.ci_low)}–{fmt_number(r.ci_high)})")
    better = (r.ratio < 1) == lower_is_better(ba, s.result.metric)
    point, low, high = (1 / r.ratio, 1 / r.ci_high, 1 / r.ci_low) if r.ratio < 1 else \
        (r.ratio, r.ci_low, r.ci_high)
    unit = str(ba.info.metric(s.result.metric)["unit"])
    time_like = is_time_unit(unit) and not ba.info.is_signed(s.result.metric)
    word = ("faster" if better else "slower") if time_like else \
        ("lower" if r.ratio < 1 else "higher")
    if point >= FACTOR_FROM:
        return f"{name} {fmt_number(point)}× {word} (95% CI {fmt_number(low)}–{fmt_number(high)}×)"
    return (f"{name} {fmt_number((point - 1) * 100)}% {word} (95% CI "
            f"{fmt_number((low - 1) * 100)}–{fmt_number((high - 1) * 100)}%)")


def _short_why(ba: BenchmarkAnalysis, q: dict[str, Any], s: Side) -> str:
    """The lead counter of the why alone, medians only, for the top of a report: 'Why
    (counted samples, per op): mremap 8.00 tlb:tlb_flush events, memcpy 0.'"""
    said = why_sentence(ba, "", s.result, s.against, rival=s.against)
    if said is None or not said.counters:
        return ""
    lead = said.counters[0]
    mine, theirs = s.result.per_op[lead].median, s.against.per_op[lead].median
    return (f" Why (per op, counted): {_name(q, s.result)} {fmt_value(mine, '')} "
            f"{counter_words(lead)}, {_name(q, s.against)} {fmt_value(theirs, '')}.")


def _trials_once(sides: Sequence[Side]) -> str:
    """'5 + 5 trials' said once for a point (each, when every side has the same)."""
    counts = {s.trials for s in sides}
    return f"{next(iter(counts))} each" if len(counts) == 1 and len(sides) > 1 else \
        ", ".join(sorted(counts))


def _ratio_answer(ba: BenchmarkAnalysis, q: dict[str, Any]) -> Answer | None:
    metric = _metric(ba, q)
    points = _points(ba, q, metric)
    if not points:
        return None
    against = _against_name(ba, q)
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
        where = _where(ba, params, skip=[q["param"]] if q.get("param") else [])
        figures += [Figure(f"{_name(q, s.result)} against {against}"
                           + (f" at {where}" if where else ""), s.ratio.ratio,
                           s.ratio.ci_low, s.ratio.ci_high, _figure(s)) for s in sides]
        words = "; ".join(_side_words(ba, q, s, against) for s in shown)
        if len(sides) > len(shown):
            words += f"; {len(sides) - len(shown)} more in the table"
        if len(shown) > 1 and shown[0].ratio.ci_low <= shown[1].ratio.ci_high and \
                shown[1].ratio.ci_low <= shown[0].ratio.ci_high:
            tentative.append(f"{_name(q, shown[1].result)}'s CI overlaps the best's")
        clauses.append(f"at {where}, {words}" if where else words)
        # The top of a report names the best two when a question compares many.
        brief = shown if len(sides) <= MAX_NAMED else shown[:2]
        brief_where = _where(ba, params, skip=[*fixed, *([q["param"]] if q.get("param") else [])])
        shorts.append((f"at {brief_where} against {against}: " if brief_where
                       else f"against {against}: ")
                      + ", ".join(_short_side(ba, q, s) for s in brief)
                      + f" ({_trials_once(brief)})")
        tentative += _tentative(shown)
        results += [x for s in shown for x in (s.result, s.against)]
        if i == len(points) - 1:
            # The why where the answer is read last (the largest), for the case furthest
            # from its reference among those shown to differ.
            told = max([s for s in shown if s.settled] or shown[:1],
                       key=lambda s: abs(math.log(s.ratio.ratio)) if s.ratio.ratio > 0 else 0)
            why_text, more = _why(ba, q, where, told)
            why_short = _short_why(ba, q, told)
            tentative += more
    text = "; ".join(clauses)
    text = _with_tentative(text[0].upper() + text[1:], tentative)
    short = "; ".join(shorts)
    short = _with_tentative(short[0].upper() + short[1:], tentative)
    if why_text:
        text += " Why: " + why_text
    return Answer(q["ask"], "ratio", text, short, "; ".join(dict.fromkeys(tentative)),
                  tuple(results), tuple(figures), why_short)


def _lines(ba: BenchmarkAnalysis, q: dict[str, Any], metric: str) -> list[tuple[str, Params, list[Side]]]:
    """Along q.along: per compared variant and fixed other params, its sides in order."""
    along = str(q["along"])
    at = {k: v for k, v in resolve_at(ba, q, metric).items() if k != along}
    lines: dict[tuple[str, Params], list[Side]] = {}
    for r in _compared(ba, q, metric):
        if not _matches(r.case.params, at, skip=q.get("param")):
            continue
        s = _side(ba, q, r)
        if s is None:
            continue
        fixed = tuple((k, v) for k, v in r.case.params if k != along)
        lines.setdefault((_name(q, r), fixed), []).append(s)
    out = []
    for (name, fixed), sides in lines.items():
        sides.sort(key=lambda s: float(s.result.case.param(along)))
        if len(sides) >= 2:
            out.append((name, fixed, sides))
    return out


def _crossings(ba: BenchmarkAnalysis, along: str, sides: list[Side],
               level: float) -> list[stats.Crossover]:
    lower = lower_is_better(ba, sides[0].result.metric)
    return stats.find_crossovers([float(s.result.case.param(along)) for s in sides],
                                 [s.ratio.ratio for s in sides],
                                 [s.ratio.ci_low for s in sides],
                                 [s.ratio.ci_high for s in sides], lower, level)


def _at_x(ba: BenchmarkAnalysis, along: str, s: Side) -> str:
    x = swept_label(ba.info, along, float(s.result.case.param(along)))
    return f"{fmt_number(s.ratio.ratio)} (95% CI {fmt_number(s.ratio.ci_low)}–" \
           f"{fmt_number(s.ratio.ci_high)}) at {x}"


def _crossover_answer(ba: BenchmarkAnalysis, q: dict[str, Any]) -> Answer | None:
    metric = _metric(ba, q)
    along = str(q["along"])
    against = _against_name(ba, q)
    clauses, shorts, tentative, results = [], [], [], []
    figures: list[Figure] = []
    for name, fixed, sides in _lines(ba, q, metric):
        where = _where(ba, fixed, skip=[q["param"]] if q.get("param") else [])
        where = f" (at {where})" if where else ""
        found = _crossings(ba, along, sides, 1.0)
        by_x = {float(s.result.case.param(along)): s for s in sides}
        settled = [c for c in found if c.confident]
        unsure = [c for c in found if not c.confident]
        parts, brief = [], []
        for c in settled:
            verb = "starts beating" if c.direction == "starts_winning" else "stops beating"
            parts.append(
                f"{name} {verb} {against}{where} between {swept_label(ba.info, along, c.low)} "
                f"and {swept_label(ba.info, along, c.high)} (≈ "
                f"{param_estimate_label(ba.info, along, c.estimate)}; ratio {_at_x(ba, along, by_x[c.low])}"
                f", {_at_x(ba, along, by_x[c.high])})")
            brief.append(f"{name} {verb} {against}{where} between "
                         f"{swept_label(ba.info, along, c.low)} and "
                         f"{swept_label(ba.info, along, c.high)} (≈ "
                         f"{param_estimate_label(ba.info, along, c.estimate)}; ratio "
                         f"{_at_x(ba, along, by_x[c.low])}, {_at_x(ba, along, by_x[c.high])})")
        for c in unsure:
            parts.append(
                f"{name}'s ratio to {against}{where} passes 1 between "
                f"{swept_label(ba.info, along, c.low)} and {swept_label(ba.info, along, c.high)}"
                f", but a CI there includes 1 ({_at_x(ba, along, by_x[c.low])}, "
                f"{_at_x(ba, along, by_x[c.high])}): no settled crossover")

        if unsure:
            tentative.append("a CI at a crossing includes 1")
            ends = "; ".join(f"{_at_x(ba, along, by_x[c.low])}, {_at_x(ba, along, by_x[c.high])}"
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
            last = sides[-1].ratio.ratio
            side = "beats" if (last < 1 if lower_is_better(ba, metric) else last > 1) \
                else "does not beat"
            parts.append(f"{name} {side} {against}{where} at every measured {along}, from "
                         f"{_at_x(ba, along, sides[0])} to {_at_x(ba, along, sides[-1])}: "
                         "no crossover in the measured range")
            brief.append(f"{name} {side} {against}{where} at every measured {along} (ratio "
                         f"{_at_x(ba, along, sides[0])} to {_at_x(ba, along, sides[-1])})")
        trials = min(min(trials_of(s.result), trials_of(s.against)) for s in sides)
        clauses.append("; ".join(parts) + f" (at least {trials} trials a side)")
        shorts.append("; ".join(brief) + f" (≥ {trials} trials a side)")
        tentative += _tentative(sides)
        results += [x for s in sides for x in (s.result, s.against)]
    if not clauses:
        return None
    text = _with_tentative("; ".join(clauses), tentative)
    short = "; ".join(shorts)
    # A sentence that opens on a variant's name keeps its case, as names are written.
    short = _with_tentative(short[0].upper() + short[1:] if short.startswith("where ")
                            else short, tentative)
    return Answer(q["ask"], "crossover", text, short, "; ".join(dict.fromkeys(tentative)),
                  tuple(results), tuple(figures))


def _level_words(ba: BenchmarkAnalysis, along: str, sides: list[Side],
                 level: float) -> tuple[str, bool]:
    """From which value of `along` the ratio stays under `level` (overhead under 5%), and
    whether that is settled; 'not reached in the measured range' when it never does."""
    pct = f"{abs(level - 1) * 100:g}%"
    lower = lower_is_better(ba, sides[0].result.metric)

    def under(s: Side) -> bool:
        return s.ratio.ratio < level if lower else s.ratio.ratio > level

    if not under(sides[-1]):
        s = sides[-1]
        # Over the level at the last point, but its CI reaching under it: not shown either way.
        sure = not (s.ratio.ci_low <= level <= s.ratio.ci_high)
        return (f"under {pct}: {'not reached in the measured range' if sure else 'not settled'}"
                f" (at {swept_label(ba.info, along, float(s.result.case.param(along)))}: "
                f"{(s.ratio.ratio - 1) * 100:+.1f}%, 95% CI {(s.ratio.ci_low - 1) * 100:+.1f}% "
                f"to {(s.ratio.ci_high - 1) * 100:+.1f}%)", sure)
    k = len(sides) - 1
    while k > 0 and under(sides[k - 1]):
        k -= 1
    if k == 0:
        first = sides[0]
        sure = not (first.ratio.ci_low <= level <= first.ratio.ci_high)
        return (f"under {pct} at every measured {along} (from "
                f"{_at_x(ba, along, first)})", sure)
    c = _crossings(ba, along, sides[k - 1:k + 1], level)[0]
    if not c.confident:
        return (f"under {pct}: not settled (the ratio passes {level:g} between "
                f"{swept_label(ba.info, along, c.low)} and {swept_label(ba.info, along, c.high)}"
                f", but a CI there includes {level:g})", False)
    return (f"under {pct} from ≈ {param_estimate_label(ba.info, along, c.estimate)} (between "
            f"{swept_label(ba.info, along, c.low)} and {swept_label(ba.info, along, c.high)})",
            True)


def _fit_of(ba: BenchmarkAnalysis, variant: str, along: str, metric: str,
            fixed: Params) -> SweepFit | None:
    return next((sf for sf in ba.fits if sf.variant == variant and sf.param == along
                 and sf.metric == metric
                 and all(_same(v, dict(fixed).get(k, v)) for k, v in sf.fixed.items())), None)


def _overhead_answer(ba: BenchmarkAnalysis, q: dict[str, Any]) -> Answer | None:
    metric = _metric(ba, q)
    along = str(q["along"])
    unit = str(ba.info.metric(metric)["unit"])
    levels = [lv for lv in ba.info.crossover_ratios if lv != 1.0]
    full, short, tentative, results = [], [], [], []
    # level -> what is said of it -> the variants it is said of, for the short form
    reached: dict[str, dict[str, list[str]]] = {}
    figures: list[Figure] = []
    lines = _lines(ba, q, metric)
    for name, fixed, sides in sorted(lines, key=lambda x: _cost(ba, x, along, metric)):
        where = _where(ba, fixed)
        at = f" at {where}" if where else ""
        sf = _fit_of(ba, sides[0].result.case.variant, along, metric, fixed)
        why: list[str] = []
        if sf is not None:
            f = sf.fit
            added = (f"{name} adds {fmt_value(f.a, unit)} per operation{at} (the fit's a, 95% "
                     f"CI {fmt_range(f.a_low, f.a_high, unit)}; {metric} − "
                     f"{_against_name(ba, q)} = a + b·{along} over {f.n_points} points)")
            if f.a_low <= 0 <= f.a_high:
                why.append("a's CI includes 0")
            brief = f"{name} +{fmt_value(f.a, unit)} ({fmt_range(f.a_low, f.a_high, unit)})"
            figures.append(Figure(f"{name}: added per operation{at}", f.a, f.a_low, f.a_high,
                                  f"{fmt_value(f.a, unit)} (95% CI "
                                  f"{fmt_range(f.a_low, f.a_high, unit)})"))
        else:
            added = f"{name}{at}: no fit of {metric} along {along} declared"
            brief = name
        said = [_level_words(ba, along, sides, lv) for lv in levels]
        figures += [Figure(f"{name}: overhead under {abs(lv - 1) * 100:g}%{at}", math.nan,
                           math.nan, math.nan, w.split(" (")[0])
                    for lv, (w, _) in zip(levels, said, strict=True)]
        why += [f"{name}'s level not settled" for _, sure in said if not sure]
        trials = min(min(trials_of(s.result), trials_of(s.against)) for s in sides)
        full.append(added + ("; overhead " + ", ".join(w for w, _ in said) if said else "")
                    + f"; at least {trials} trials a point")
        short.append(brief)
        for level, (w, _) in zip(levels, said, strict=True):
            pct = f"{abs(level - 1) * 100:g}%"
            reached.setdefault(pct, {}).setdefault(
                w.split(" (")[0].removeprefix(f"under {pct}").removeprefix(":").strip(), []).append(name)
        tentative += why + _tentative(sides)
        results += [x for s in sides for x in (s.result, s.against)]
    if not full:
        return None
    text = _with_tentative("; ".join(full), tentative)
    # Why the dearest variant costs what it does: its counters against the reference's where
    # the work per operation is least (the added cost is the largest share there).
    dearest = max(lines, key=lambda x: _cost(ba, x, along, metric) if
                  math.isfinite(_cost(ba, x, along, metric)) else -math.inf, default=None)
    why_short = ""
    if dearest is not None:
        least = dearest[2][0]
        where = _where(ba, least.result.case.params)
        why_text, more = _why(ba, q, where, least)
        tentative += more
        if why_text:
            text += " Why: " + why_text
            why_short = _short_why(ba, q, least).replace(
                "per op, counted):", f"per op at {where}, counted):" if where
                else "per op, counted):")
    n = min((trials_of(r) for r in results), default=0)
    # Levels of which the same is said of the same variants are said together.
    together: dict[str, list[str]] = {}
    for pct, by_words in reached.items():
        together.setdefault(", ".join(f"{words} ({', '.join(names)})"
                                      for words, names in by_words.items()), []).append(pct)
    levels_said = "; ".join(f"under {' and '.join(pcts)}: {words}"
                            for words, pcts in together.items())
    brief = _with_tentative(f"Per call, over {_against_name(ba, q)} (95% CI; ≥ {n} trials): "
                            + "; ".join(short)
                            + (f". Overhead {levels_said}" if levels_said else ""), tentative)
    return Answer(q["ask"], "overhead", text, brief, "; ".join(dict.fromkeys(tentative)),
                  tuple(results), tuple(figures), why_short)


def _cost(ba: BenchmarkAnalysis, line: tuple[str, Params, list[Side]], along: str,
          metric: str) -> float:
    sf = _fit_of(ba, line[2][0].result.case.variant, along, metric, line[1])
    return sf.fit.a if sf is not None else math.inf


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


def _added(ba: BenchmarkAnalysis, q: dict[str, Any], r: CaseResult) -> _Added | None:
    s = _side(ba, q, r)
    if s is not None and s.shift is not None:
        return _Added(r, s.against, s.shift.estimate, s.shift.ci_low, s.shift.ci_high)
    pair = _pair(ba, q, r)  # a reference whose median is 0 has no ratio, but a shift
    ref = next((b for b in ba.for_metric(r.metric) if pair and b.case == pair.against), None)
    if pair is not None and ref is not None:
        return _Added(r, ref, pair.shift.estimate, pair.shift.ci_low, pair.shift.ci_high)
    param, against = q.get("param"), str(q.get("against") or "")
    reference = [b for b in ba.for_metric(r.metric) if b.summary is not None and (
        b.case.variant == r.case.variant and str(b.case.param(param)) == against
        and all(v == r.case.param(k) for k, v in b.case.params if k != param) if param
        else b.case.variant == against and b.case.params == r.case.params)]
    if reference or r.summary is None:
        return None
    return _Added(r, None, r.summary.median, r.summary.ci_low, r.summary.ci_high)


def _added_answer(ba: BenchmarkAnalysis, q: dict[str, Any]) -> Answer | None:
    metric = _metric(ba, q)
    unit = str(ba.info.metric(metric)["unit"])
    against = _against_name(ba, q)
    at = resolve_at(ba, q, metric)
    by: dict[Params, list[_Added]] = {}
    for r in _compared(ba, q, metric):
        if _matches(r.case.params, at, skip=q.get("param")) and \
                (a := _added(ba, q, r)) is not None:
            by.setdefault(tuple((k, v) for k, v in r.case.params if k != q.get("param")),
                          []).append(a)
    order = {p.params: i for i, p in enumerate(grid(ba, metric).points)}
    clauses, tentative, results, shorts = [], [], [], []
    figures: list[Figure] = []
    skip = [q["param"]] if q.get("param") else []
    fixed = _fixed(q)
    for params, added in sorted(by.items(), key=lambda item: order.get(
            item[1][0].result.case.params, len(order))):
        where = _where(ba, params, skip=skip)
        brief_where = _where(ba, params, skip=[*skip, *fixed])
        shorts.append((f"{brief_where}: " if brief_where else "") + ", ".join(
            f"{_name(q, a.result)} {fmt_value(a.estimate, unit)} "
            f"({fmt_range(a.low, a.high, unit)})" for a in sorted(added, key=lambda a: a.estimate)))
        parts = []
        for a in sorted(added, key=lambda a: a.estimate):
            name = _name(q, a.result)
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
    text = _with_tentative(text[0].upper() + text[1:], tentative)
    # The top of a report: the metric and the reference once, the question's fixed params
    # once, each point's figures with their CIs, the trials once.
    first = next(iter(by))
    fixed_where = _where(ba, tuple((k, v) for k, v in first if k in fixed))
    counts = {a.trials for added in by.values() for a in added}
    trials = (f"{next(iter(counts))} each" if len(counts) == 1 else
              f"≥ {min(trials_of(r) for r in results)} trials a side")
    # A metric's name keeps its case, as names are written.
    short = _with_tentative((f"At {fixed_where}, " if fixed_where else "") +
                            f"{metric} over {against} (95% CI; {trials}): " + "; ".join(shorts),
                            tentative)
    return Answer(q["ask"], "added", text, short, "; ".join(dict.fromkeys(tentative)),
                  tuple(results), tuple(figures))


def _fixed(q: dict[str, Any]) -> list[str]:
    """Params the question fixes to one value: said once at the top of a report."""
    return [k for k, vs in (q.get("at") or {}).items()
            if len(vs) == 1 and vs[0] not in (LARGEST, SMALLEST)]


def _error_answer(ba: BenchmarkAnalysis, q: dict[str, Any]) -> Answer | None:
    metrics = [str(m) for m in q.get("metrics") or ()]
    shorts: list[str] = []
    names = set(answering_variants(ba, q)) if q.get("variants") else {
        str(v["name"]) for v in ba.info.variants if v["name"] != ba.info.baseline
        and not ba.info.is_diagnostic(str(v["name"])) and not ba.info.is_control(str(v["name"]))}
    clauses, tentative, results = [], [], []
    figures: list[Figure] = []
    for metric in metrics:
        at = resolve_at(ba, q, metric)
        unit = str(ba.info.metric(metric)["unit"])
        rows = [r for r in ba.for_metric(metric) if r.signed is not None
                and r.case.variant in names and _matches(r.case.params, at)]
        if not rows:
            continue
        parts = []
        shorts.append(_error_range(ba, metric, rows))
        for r in rows:
            e = r.signed
            assert e is not None
            where = _where(ba, r.case.params)
            figures.append(Figure(f"RMS of {metric}: {r.case.variant}"
                                  + (f" at {where}" if where else ""), e.rms, e.rms_ci_low,
                                  e.rms_ci_high, f"{fmt_value(e.rms, unit)} (95% CI "
                                  f"{fmt_range(e.rms_ci_low, e.rms_ci_high, unit)}; "
                                  f"{trials_of(r)} trials)"))
            parts.append(f"{r.case.variant}{' at ' + where if where else ''} "
                         f"{fmt_value(e.rms, unit)} (95% CI {fmt_range(e.rms_ci_low, e.rms_ci_high, unit)}"
                         f"; {trials_of(r)} trials)")
            if trials_of(r) < MIN_TRIALS_FOR_VERDICT:
                tentative.append(f"fewer than {MIN_TRIALS_FOR_VERDICT} trials")
            results.append(r)
        clauses.append(f"RMS of {metric}: " + "; ".join(parts))
    if not clauses:
        return None
    text = _with_tentative("; ".join(clauses), tentative)
    n = {trials_of(r) for r in results}
    trials = f"{next(iter(n))} trials each" if len(n) == 1 else f"≥ {min(n)} trials each"
    short = _with_tentative(f"RMS (95% CI; {trials}): " + "; ".join(shorts), tentative)
    return Answer(q["ask"], "error", text, short, "; ".join(dict.fromkeys(tentative)),
                  tuple(results), tuple(figures))


def _error_range(ba: BenchmarkAnalysis, metric: str, rows: Sequence[CaseResult]) -> str:
    """One metric's RMS per variant for the top of a report: at its one or two points, or
    from its lowest to its highest over three or more (each with its CI and where)."""
    unit = str(ba.info.metric(metric)["unit"])

    def said(r: CaseResult) -> str:
        e = r.signed
        assert e is not None
        where = _where(ba, r.case.params)
        return (f"{fmt_value(e.rms, unit)} ({fmt_range(e.rms_ci_low, e.rms_ci_high, unit)})"
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


_FORMS = {"ratio": _ratio_answer, "crossover": _crossover_answer,
          "overhead": _overhead_answer, "added": _added_answer, "error": _error_answer}


def answers(ba: BenchmarkAnalysis) -> list[tuple[dict[str, Any], Answer | None]]:
    """Each declared question with its answer; None when the run measured nothing it reads
    (its variants skipped, or its points not in the profile run)."""
    return [(q, _FORMS[q["form"]](ba, q) if q.get("form") in _FORMS else None)
            for q in ba.info.questions]


def unanswered(q: dict[str, Any]) -> str:
    return (f"Not answered by this run: it measured none of the cases \"{q['ask']}\" reads "
            "(skipped, or not in the profile run).")
