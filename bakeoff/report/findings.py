"""Findings: the answer of a run in a handful of sentences, each with its figure, CI and n.

Generated from the analysis alone, from what a benchmark declares (baseline, primary metric,
params, crossover levels, fits): nothing here knows a benchmark by name. The rules:
- no finding without a number from the run, and no number without its 95% CI and its n;
- a finding says why it is tentative: too few trials for a verdict, a CI that touches the
  verdict's threshold, a crossover whose CIs include the level crossed, a fitted constant
  whose CI includes 0;
- no ranking that noise could reverse: a case is named the lowest (best, closest) only where
  the next is told apart from it (report/apart.py, Bonferroni over the benchmark's points);
  otherwise the two "cannot be told apart", with the CI of their ratio or difference; and
  where no case's CI excludes 0, no cost is resolved, ranked or quoted as one.
A benchmark that declares questions (BenchmarkInfo.questions) is answered first, one finding
per question (report/answers/); those answers are its headline, and the generic contrasts
below follow under their own heading. Diagnostic and control variants never win one.
A crossover whose CI at an end includes its level is not stated: details.md lists it.
After the headline's winner finding, a benchmark that declares why_counters gets a "why"
finding: those kernel counters per operation (counted samples) of the best variant and the
baseline at each point it names where a difference is shown, only those the dearer case
makes more of, the one furthest apart first (report/counted.py), or none.

Sentences are raw text; each renderer escapes them for its own format.
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from bakeoff.analysis.within_run import (
    MIN_TRIALS_FOR_VERDICT,
    Analysis,
    BenchmarkAnalysis,
    CaseResult,
    SweepCrossover,
    SweepFit,
)
from bakeoff.declare.model import ParamValue
from bakeoff.report.answers import answers, unanswered
from bakeoff.report.apart import apart, resolved_from_zero
from bakeoff.report.counted import why_sentence
from bakeoff.report.format import (
    fmt_number,
    fmt_value,
    is_time_unit,
    param_estimate_label,
    params_label,
    ratio_with_ci,
    swept_label,
)
from bakeoff.report.grid import Grid, Params, Point, grid, point_label, trials_of
from bakeoff.report.tables import median_figure
from bakeoff.report.words import change_phrase, lower_is_better, shown_metric
from bakeoff.stats.estimates import MIN_TRIALS_FOR_CI, NO_DIFFERENCE, Ratio, Summary

FindingKind = Literal["answer", "unanswered", "winner", "ranking", "why", "crossover", "fit",
                      "skipped", "failed", "no-data"]

# A ratio this far from 1 (either way) reads as a factor ("12.3× faster"); closer, as a
# percentage ("12% faster"), where a factor such as 1.12× is easy to misread.
MAX_SKIP_REASONS = 3  # per benchmark; details.md lists every skipped case


@dataclass(frozen=True)
class Finding:
    kind: FindingKind
    text: str
    # Why it is not settled ('' when it is): the text says it too, this is for renderers.
    tentative: str = ""
    # What the sentence quotes, so a reader (or a test) can trace every figure to the analysis.
    results: tuple[CaseResult, ...] = ()
    crossovers: tuple[SweepCrossover, ...] = ()
    fit: SweepFit | None = None
    # For a winner finding: how far from 1 its strongest ratio is (|log ratio|), to pick
    # the headline of a benchmark, and that clause alone, as the headline says it.
    strength: float = 0.0
    short: str = ""
    wins: bool = False
    # For a winner finding: each point it names (where, the best variant and the baseline
    # there), whose counters a "why" finding quotes.
    points: tuple[tuple[str, CaseResult, CaseResult], ...] = ()
    # For an answer: the question it answers (Question.ask) and its form; `brief`, the short
    # form without its why (the HTML's first screen, which must also show a chart).
    question: str = ""
    form: str = ""
    brief: str = ""

    @property
    def headline_text(self) -> str:
        return self.short or self.text


@dataclass
class BenchmarkFindings:
    analysis: BenchmarkAnalysis
    # The generic contrasts (largest ratios, crossovers, fits, skips, failures).
    findings: list[Finding] = field(default_factory=list)
    # One per declared question, in declaration order: what the benchmark exists to answer.
    answers: list[Finding] = field(default_factory=list)

    @property
    def every(self) -> list[Finding]:
        """Answers first, then the generic contrasts."""
        return [*self.answers, *self.findings]

    @property
    def headline(self) -> list[Finding]:
        """The answers to the declared questions; without any, at most two findings for the
        top of the report: the most decisive winner (settled first) and where a winner
        changes (settled first); else what there is."""
        answered = [f for f in self.answers if f.kind == "answer"]
        if answered:
            return answered
        winners = [f for f in self.findings if f.kind in ("winner", "ranking")]
        picked: list[Finding] = []
        if winners:
            picked.append(max(winners, key=lambda f: (not f.tentative, f.wins, f.strength)))
        # Where the winner changes (a crossing of 1), settled ones first.
        crossings = [f for f in self.findings if f.kind == "crossover"
                     and any(sc.crossover.level == 1.0 for sc in f.crossovers)]
        if crossings:
            picked.append(min(crossings, key=lambda f: bool(f.tentative)))
        # A benchmark of one variant has no winner to name; how it grows along a scan is
        # its answer.
        if len(self.analysis.info.variants) == 1:
            picked += [f for f in self.findings if f.kind == "fit"][:1]
        if not picked:
            picked = self.findings[:1]
        return picked


# ---- how a ratio reads -------------------------------------------------------------------


def _better(ba: BenchmarkAnalysis, metric: str, ratio: float) -> bool:
    return ratio < 1 if lower_is_better(ba, metric) else ratio > 1


def ratio_figure(r: Ratio) -> str:
    """'ratio 0.0285, 95% CI 0.0192–0.0410': the figure every ratio finding quotes."""
    return ratio_with_ci(r.ratio, r.ci_low, r.ci_high)


def _touches_threshold(r: Ratio, threshold: float) -> bool:
    """The CI reaches over an edge of the verdict's band (1 ± threshold): a few more trials
    could change the verdict."""
    return any(r.ci_low <= edge <= r.ci_high for edge in (1 - threshold, 1 + threshold))


def _named_best(g: Grid, ranked: list[CaseResult],
                which: str) -> tuple[str, str, tuple[CaseResult, ...]]:
    """How the best of `ranked` is named, and what follows its figure: 'the best, X,' only
    where the next is told apart from it (report/apart.py, Bonferroni over the grid's
    points); else 'X' and ', and cannot be told apart from Y (X / Y …)', the runner-up
    joining the cases quoted."""
    best = ranked[0]
    if len(ranked) < 2:
        return best.case.variant, "", ()
    told = apart(best, ranked[1], comparisons=len(g.points))
    if told is not None and told.shown:
        return f"the {which}, {best.case.variant},", "", ()
    if told is None:
        # Too few trials for an interval worth printing: the test alone (at its own t) may
        # still show the two apart; else no claim either way.
        tested = apart(best, ranked[1], comparisons=len(g.points), min_trials=2)
        if tested is not None and tested.shown:
            return f"the {which}, {best.case.variant},", "", ()
        return (best.case.variant, f", and too few trials tell it from {ranked[1].case.variant}",
                (ranked[1],))
    how = f" ({told.words(best.unit)})" if told is not None else ""
    return (best.case.variant, f", and cannot be told apart from {ranked[1].case.variant}{how}",
            (ranked[1],))


# ---- winner at a point -------------------------------------------------------------------


def _never_wins(ba: BenchmarkAnalysis, variant: str) -> bool:
    """A control checks the method and a diagnostic variant explains another: neither is a
    choice, so neither is named the best."""
    return ba.info.is_control(variant) or ba.info.is_diagnostic(variant)


@dataclass(frozen=True)
class Clause:
    where: str  # '16 MiB' (on the axis) or 'map=hash' (a point without an axis)
    body: str  # what happens there: 'mremap wins, 35.1× faster than memcpy (ratio …)'
    tentative: list[str]
    results: tuple[CaseResult, ...]
    strength: float
    wins: bool = False  # a variant beats the baseline here: the news a headline leads with
    named_first: bool = True  # the body opens on a name, whose case a sentence keeps
    # Whom the best case is set against: the baseline (a winner), the runner-up (a ranking).
    foil: CaseResult | None = None

    @property
    def text(self) -> str:
        # No where: every case has the same params (said once, beside the table).
        return f"at {self.where} {self.body}" if self.where else self.body


def _where(ba: BenchmarkAnalysis, g: Grid, point: Point) -> str:
    if g.axis is None:
        return point_label(ba, g, point.params) if len(g.points) > 1 else ""
    return swept_label(ba.info, g.axis, float(dict(point.params)[g.axis]))


def _winner_clause(ba: BenchmarkAnalysis, g: Grid, point: Point) -> Clause | None:
    """Who wins at one point, by the ratio to the baseline, with its CI and trials."""
    base_name = ba.info.baseline
    base = point.of(base_name)
    compared = [r for r in point.results
                if r.vs_baseline is not None and not _never_wins(ba, r.case.variant)]
    if not compared or base is None:
        return None
    lower = lower_is_better(ba, g.metric)
    ranked = sorted(compared, key=lambda r: r.vs_baseline.ratio if r.vs_baseline else 0.0,
                    reverse=not lower)
    best = ranked[0]
    assert best.vs_baseline is not None and best.comparison is not None
    ratio = best.vs_baseline
    n = f"{trials_of(best)} + {trials_of(base)} trials"
    where = _where(ba, g, point)
    figure = f"({ratio_figure(ratio)}; {n})"
    if min(trials_of(best), trials_of(base)) < 2:
        # One trial shows no spread: its CI is a point, which would read as certainty.
        figure = f"(ratio {fmt_number(ratio.ratio)}, no CI from one trial; {n})"
    elif min(trials_of(best), trials_of(base)) < MIN_TRIALS_FOR_CI:
        # Two: a CI on one degree of freedom spans decades (estimates.MIN_TRIALS_FOR_CI).
        figure = f"(ratio {fmt_number(ratio.ratio)}; {n}: too few for a CI)"
    verdict = best.comparison.verdict
    why: list[str] = []
    if min(trials_of(best), trials_of(base)) < MIN_TRIALS_FOR_VERDICT:
        why.append(f"fewer than {MIN_TRIALS_FOR_VERDICT} trials")
    if _touches_threshold(ratio, ba.threshold):
        why.append(f"its CI touches the ±{ba.threshold * 100:g}% threshold")
    elif verdict == "inconclusive":
        why.append(f"not significant after Holm correction (p = {best.comparison.p_holm:.2g})")
    involved: tuple[CaseResult, ...] = (best, base)
    which = "best" if _better(ba, g.metric, ratio.ratio) else "closest"
    named_best, level, runner = _named_best(g, ranked, which)
    involved += runner
    phrase = change_phrase(ba, g.metric, ratio.ratio)
    if verdict == "faster":
        text = (f"{best.case.variant} wins, {phrase} than {base_name} {figure}{level}" if not
                runner else f"{best.case.variant} beats {base_name}, {phrase} {figure}{level}, "
                f"which beats it too")
    elif verdict == "slower":
        named = base_name if base_name == "baseline" else f"{base_name} (the baseline)"
        text = f"{named} wins: {named_best} is {phrase} {figure}{level}"
    elif verdict == "equivalent":
        # A claim: the whole CI lies within the band, so any difference is smaller than it.
        band = f"±{ba.threshold * 100:g}%"
        text = (f"every variant is equivalent to {base_name} within {band}: {named_best} is "
                f"{phrase} {figure}{level}"
                if all(r.verdict == "equivalent" for r in compared) else
                f"{named_best} is equivalent to {base_name} within {band}: "
                f"{phrase} {figure}{level}")
    else:
        # "shown": an "inconclusive" verdict is a CI that reaches the threshold, which may be
        # a wide one (noise), not a proof that the variants are level.
        band = f"±{ba.threshold * 100:g}%"
        if all(r.verdict == "inconclusive" for r in compared):
            text = (f"no variant is shown to differ from {base_name} by more than {band}: "
                    f"{named_best} is {phrase} {figure}{level}")
        else:
            # Others are shown to differ (the table's ✓ or ✗): "no variant" would deny them.
            text = (f"{named_best} is not shown to differ from {base_name} by more than "
                    f"{band}: {phrase} {figure}{level}")
    return Clause(where, text, why, involved,
                  abs(math.log(ratio.ratio)) if ratio.ratio > 0 else 0.0, verdict == "faster",
                  named_first=verdict not in NO_DIFFERENCE,
                  # A "why" explains a difference shown, never one the verdict did not find.
                  foil=base if verdict not in NO_DIFFERENCE else None)


def _ranking_clause(ba: BenchmarkAnalysis, g: Grid, point: Point) -> Clause | None:
    """Without a ratio (the baseline does not report the metric): the best median with its
    CI, named the lowest (highest) only where the runner-up is told apart from it
    (report/apart.py, Bonferroni over the grid's points); otherwise the two cannot be told
    apart, said with their difference. Where no case's CI excludes 0, no cost is resolved,
    and none is ranked or quoted as one."""
    measured = [r for r in point.results
                if r.summary is not None and not _never_wins(ba, r.case.variant)]
    if not measured:
        return None
    lower = lower_is_better(ba, g.metric)
    ranked = sorted(measured, key=lambda r: r.summary.median if r.summary else 0.0,
                    reverse=not lower)
    best = ranked[0]
    assert best.summary is not None
    s, unit = best.summary, best.unit
    word = "lowest" if lower else "highest"
    metric = shown_metric(ba, g.metric)
    n = min(trials_of(r) for r in ranked)
    why: list[str] = []
    if n < MIN_TRIALS_FOR_VERDICT:
        why.append(f"fewer than {MIN_TRIALS_FOR_VERDICT} trials")
    where = _where(ba, g, point)
    net = ba.info.is_net(g.metric)
    unresolved: list[CaseResult] = []
    if net and any(resolved_from_zero(r) for r in ranked):
        # A net difference whose CI includes 0 is no cost to rank, nor to set beside one:
        # it is said with its interval, after what can be ranked.
        unresolved = [r for r in ranked if not resolved_from_zero(r)]
        ranked = [r for r in ranked if resolved_from_zero(r)]
        best = ranked[0]
        assert best.summary is not None
        s = best.summary
    if len(ranked) > 1 and not any(resolved_from_zero(r) for r in ranked):
        # Every CI includes 0: the timer does not resolve these costs; a ranking of them,
        # or a negative one quoted as a cost, would be noise said as a finding.
        text = (f"no variant's {metric} is resolved from 0: every 95% CI includes 0 "
                f"(≥ {n} trials each)")
        return Clause(where, text, why, tuple(ranked), 0.0, named_first=False)
    figure = _case_figure(s, unit, net)
    rest = "".join(f"; {r.case.variant} {_case_figure(r.summary, unit, net)}"
                   for r in unresolved if r.summary is not None)
    if lower and s.median < 0 and is_time_unit(unit):
        # A time below zero is a difference the program measured, not a cost to rank; its
        # figure is said as how far below 0, or as the interval alone where that holds 0.
        ci = (f"95% CI {fmt_value(s.ci_low, unit)} to {fmt_value(s.ci_high, unit)}; "
              f"{s.n_trials} trials")
        said = (f"is not resolved from 0 ({ci})" if s.ci_low <= 0 <= s.ci_high else
                f"lies {fmt_value(-s.median, unit)} below 0 ({ci})")
        return Clause(where, f"{best.case.variant}'s {metric} {said}: no cost to rank", why,
                      (best,), 0.0, named_first=False)
    if len(ba.info.variants) == 1 or len(ranked) == 1:
        # Alone (one command under `bakeoff cmd`), a variant ranks against nothing.
        return Clause(where, f"{best.case.variant}'s {metric} is {figure}{rest}", why,
                      (best, *unresolved), 0.0, named_first=False)
    runner = ranked[1]
    told = apart(best, runner, comparisons=len(g.points), net=net)
    if told is None or not told.shown:
        t = runner.summary
        assert t is not None
        other = _case_figure(t, unit, net)
        diff = f"; {told.words(unit)}" if told is not None else ""
        few = "" if told is not None else " from so few trials"
        text = (f"{best.case.variant} and {runner.case.variant} cannot be told apart on "
                f"{metric}{few}: {figure} against {other}{diff}{rest}")
        # No foil: a "why" would explain a difference that is not shown.
        return Clause(where, text, why, (best, runner), 0.0, named_first=True)
    text = (f"the {word} {metric} is {best.case.variant}'s, {figure}; "
            f"against the next, {runner.case.variant}, {told.words(unit)}{rest}")
    return Clause(where, text, why, (best, runner), 0.0, named_first=False, foil=runner)


def _case_figure(s: Summary, unit: str, net: bool) -> str:
    """'1.41 ns (95% CI 1.26–1.59 ns; 15 trials)', 'not resolved from 0 (95% CI -2.93 to
    +3.27 ns; 5 trials)', '12.4 ns (2 trials: too few for a CI)' (tables.median_figure)."""
    f = median_figure(s, unit, net)
    if s.n_trials < 2:
        return f"{f.point} (no CI from one trial)"
    if f.interval.endswith("too few for a CI"):
        return f.said()
    if f.interval == "the same in every trial":
        return f"{f.point} (the same in all {s.n_trials} trials)"
    return f"{f.point} (95% CI {f.interval}; {s.n_trials} trials)"


def _with_why(clause: Clause) -> str:
    return clause.text + (f" [tentative: {', '.join(clause.tentative)}]"
                          if clause.tentative else "")


def _sentence(text: str, named_first: bool) -> str:
    """A clause as a sentence: 'At 16 MiB …'; one that opens on a variant's name keeps its
    case ('mremap wins …'), as names are written."""
    opens_on_name = named_first and not text.startswith("at ")
    return (text if opens_on_name else text[0].upper() + text[1:]) + "."


def _group_finding(ba: BenchmarkAnalysis, g: Grid, fixed: Params,
                   points: list[Point]) -> Finding | None:
    """One sentence per group: the winner at each end of the axis (at every point when
    nothing numeric is swept)."""
    ends = [points[0], points[-1]] if g.axis and len(points) > 1 else points
    make = _winner_clause if g.with_ratios else _ranking_clause
    clauses = [c for p in ends if (c := make(ba, g, p)) is not None]
    if not clauses:
        return None
    if g.axis is not None:
        lead = f"Along {g.axis}" + (f" with {params_label(ba.info, fixed)}" if fixed else "")
        text = f"{lead}: " + "; ".join(_with_why(c) for c in clauses) + "."
    else:
        text = _sentence("; ".join(_with_why(c) for c in clauses), clauses[0].named_first)
    why = sorted({w for c in clauses for w in c.tentative})
    top = max(clauses, key=lambda c: (c.wins, c.strength))
    where = top.where
    if g.axis is not None:
        where = ", ".join([f"{g.axis}={top.where}",
                           *([params_label(ba.info, fixed)] if fixed else [])])
    short = _with_why(dataclasses.replace(top, where=where))
    fixed_label = [params_label(ba.info, fixed)] if fixed else []
    # Where the finding names a best case, and whom it is set against (Clause.foil); the
    # "why" finding reads them.
    quoted = tuple((", ".join([f"{g.axis}={c.where}", *fixed_label]) if g.axis else c.where,
                    c.results[0], c.foil) for c in clauses if c.foil is not None)
    return Finding("winner" if g.with_ratios else "ranking", text, "; ".join(why),
                   results=tuple(r for c in clauses for r in c.results),
                   strength=top.strength, wins=any(c.wins for c in clauses),
                   short=_sentence(short, top.named_first), points=quoted)


def _why_finding(ba: BenchmarkAnalysis, winner: Finding) -> tuple[Finding, bool] | None:
    """The counters behind a winner (or ranking) finding (BenchmarkInfo.why_counters), at
    each point it names: one sentence per point; and whether any shows a difference."""
    # Against the case the finding sets the winner against (its foil: the closest, or the
    # baseline), as an answer's why is set against its reference: a why explains the
    # difference the finding states, not another variant's (cgroup-stat-read's said why
    # held beats reopen with cat's clone count, issue 33 point 9).
    said = [(s, best, base) for where, best, base in winner.points
            if (s := why_sentence(ba, where, best, base, rival=base)) is not None]
    if not said:
        return None
    why = sorted({w for s, _, _ in said if s.tentative for w in s.tentative.split("; ")})
    return (Finding("why", " ".join(s.text for s, _, _ in said), "; ".join(why),
                    results=tuple(r for s, best, _ in said for r in (best, s.rival))),
            any(s.differs for s, _, _ in said))


# ---- crossovers, fits, skips, failures ---------------------------------------------------


def _crossing(ba: BenchmarkAnalysis, sc: SweepCrossover) -> str:
    """'starts winning between 128 KiB and 256 KiB (≈ 173 KiB)'; 'falls under 5% …' for a
    declared level; an unsure crossing says which level a CI includes."""
    c, info = sc.crossover, ba.info
    if c.level == 1.0:
        what = "starts winning" if c.direction == "starts_winning" else "stops winning"
    else:
        pct = f"{abs(c.level - 1) * 100:g}%"
        what = f"falls under {pct}" if c.direction == "starts_winning" else f"rises over {pct}"
    unsure = "" if c.confident else f"; a CI at an end includes {c.level:g}"
    return (f"{what} between {swept_label(info, sc.param, c.low)} and "
            f"{swept_label(info, sc.param, c.high)} "
            f"(≈ {param_estimate_label(info, sc.param, c.estimate)}{unsure})")


def _varying(g: Grid, fixed: dict[str, ParamValue]) -> list[tuple[str, ParamValue]]:
    return [(k, v) for k, v in fixed.items() if k not in dict(g.constant)]


def _crossover_findings(ba: BenchmarkAnalysis, g: Grid) -> list[Finding]:
    """One sentence per variant and sweep, with each place its ratio to the baseline crosses
    1 (it starts or stops winning) or a declared level (its difference falls under 5%)."""
    lines: dict[tuple[str, str, str], list[SweepCrossover]] = defaultdict(list)
    # Only settled crossings: one whose CI at an end includes the level may be noise, and
    # stated as a crossover it would read as a fact (details.md lists every crossing).
    for sc in ba.crossovers:
        if not sc.crossover.confident or _never_wins(ba, sc.variant):
            continue
        lines[(sc.variant, sc.param, repr(sorted(sc.fixed.items())))].append(sc)
    out = []
    for (variant, param, _), found in lines.items():
        fixed = found[0].fixed
        line = [r for r in ba.for_metric(found[0].metric) if r.case.variant in
                (variant, ba.info.baseline)
                and all(r.case.param(k) == v for k, v in fixed.items())]
        why = []
        if any(not sc.crossover.confident for sc in found):
            why.append("a CI at an end includes the level crossed")
        if min((trials_of(r) for r in line), default=0) < MIN_TRIALS_FOR_VERDICT:
            why.append(f"fewer than {MIN_TRIALS_FOR_VERDICT} trials")
        varying = _varying(g, fixed)
        where = f" with {params_label(ba.info, varying)}" if varying else ""
        text = (f"{variant} against {ba.info.baseline} along {param}{where}: "
                + "; ".join(_crossing(ba, sc) for sc in found))
        text += f" [tentative: {', '.join(why)}]." if why else "; every CI excludes its level."
        out.append(Finding("crossover", text, "; ".join(why), crossovers=tuple(found)))
    return out


def fit_constant(a: float, low: float, high: float, unit: str) -> str:
    """'a = 1.2 µs (95% CI 1.1 µs to 1.3 µs)'; a constant whose CI includes 0 is not resolved
    from 0 (the interval alone), and one below 0 is said as how far below: a fitted cost is
    never printed as a negative one."""
    ci = f"95% CI {fmt_value(low, unit)} to {fmt_value(high, unit)}"
    if low <= 0 <= high and low < high:
        return f"a not resolved from 0 ({ci})"
    if a < 0:
        return f"a {fmt_value(-a, unit)} below 0 ({ci})"
    return f"a = {fmt_value(a, unit)} ({ci})"


def _fit_finding(ba: BenchmarkAnalysis, g: Grid, sf: SweepFit) -> Finding:
    f, unit = sf.fit, str(ba.info.metric(sf.metric)["unit"])
    param_unit = next((str(p["unit"]) for p in ba.info.params if p["name"] == sf.param), "")
    line = [r for r in ba.for_metric(sf.metric) if r.case.variant == sf.variant
            and all(r.case.param(k) == v for k, v in sf.fixed.items())]
    trials = min((trials_of(r) for r in line), default=0)
    why = []
    if f.a_low <= 0 <= f.a_high:
        why.append("its constant term cannot be told from 0")
    if trials < MIN_TRIALS_FOR_VERDICT:
        why.append(f"fewer than {MIN_TRIALS_FOR_VERDICT} trials")
    varying = _varying(g, sf.fixed)
    fixed = f" ({params_label(ba.info, varying)})" if varying else ""
    # Fitted alone (a benchmark of one variant): the metric itself, not a difference.
    minus = "" if sf.variant == ba.info.baseline else f" − {ba.info.baseline}"
    text = (f"Fit for {sf.variant}{fixed}: {sf.metric}{minus} = a + b·{sf.param}, "
            f"{fit_constant(f.a, f.a_low, f.a_high, unit)}, b = {fmt_number(f.b)} {unit} per "
            f"{param_unit or sf.param} (95% CI {fmt_number(f.b_low)} to {fmt_number(f.b_high)}); "
            f"R² = {f.r2:.2f} over {f.n_points} points, at least {trials} trials each")
    text += f" [tentative: {', '.join(why)}]." if why else "."
    return Finding("fit", text, "; ".join(why), fit=sf)


def _skip_finding(ba: BenchmarkAnalysis) -> Finding | None:
    if not ba.skips:
        return None
    reasons: dict[str, set[str]] = defaultdict(set)
    counts: dict[str, int] = defaultdict(int)
    for s in ba.skips:
        reasons[s.reason].add(s.case.variant)
        counts[s.reason] += 1
    shown = sorted(counts, key=lambda k: -counts[k])[:MAX_SKIP_REASONS]
    parts = [f"{counts[r]} ({', '.join(sorted(reasons[r]))}): {r.rstrip('.')}" for r in shown]
    rest = sum(counts[r] for r in counts if r not in shown)
    more = (f"; {rest} for {len(counts) - len(shown)} other reason(s), listed in details"
            if rest else "")
    return Finding("skipped", f"Skipped {len(ba.skips)} case(s): " + "; ".join(parts)
                   + more + ".")


def _failure_finding(ba: BenchmarkAnalysis) -> Finding | None:
    rows = [r for r in ba.for_metric(ba.info.primary_metric) if r.n_failed]
    if not rows:
        return None
    failed = sum(r.n_failed for r in rows)
    cases = ", ".join(f"{r.case.variant} at {params_label(ba.info, r.case.params)}"
                      for r in rows[:3])
    more = f" and {len(rows) - 3} more" if len(rows) > 3 else ""
    return Finding("failed", f"{failed} trial(s) failed, in {len(rows)} case(s): {cases}{more}; "
                   "their errors are in the details.", results=tuple(rows))


def _answer_findings(ba: BenchmarkAnalysis) -> list[Finding]:
    """One finding per declared question (report/answers/)."""
    out = []
    whys: set[str] = set()
    for q, a in answers(ba):
        if a is None:
            out.append(Finding("unanswered", unanswered(q, ba), question=str(q["ask"]),
                               form=str(q["form"])))
        else:
            # Two questions read at one point share their why: the top says it once.
            why = "" if a.short_why in whys else a.short_why
            whys.add(a.short_why)
            out.append(Finding("answer", a.text, a.tentative, results=a.results,
                               short=a.short + why, question=a.ask, form=a.form,
                               brief=a.short))
    return out


def benchmark_findings(ba: BenchmarkAnalysis) -> BenchmarkFindings:
    g = grid(ba)
    out = BenchmarkFindings(ba, answers=_answer_findings(ba))
    for fixed, points in g.groups:
        found = _group_finding(ba, g, fixed, points)
        if found is not None:
            out.findings.append(found)
    if not out.findings:
        out.findings.append(Finding(
            "no-data", f"No trial of {ba.info.name} measured {g.metric}: "
            f"{len(ba.skips)} case(s) skipped, "
            f"{sum(r.n_failed for r in ba.for_metric(g.metric))} trial(s) failed."))
    # One "why", for the headline's winner (or, with no ratio, the first ranking whose
    # counters differ): report.md stays short.
    winners = [f for f in out.findings if f.kind == "winner"]
    if winners:
        headline = max(winners, key=lambda f: (not f.tentative, f.wins, f.strength))
        if (said := _why_finding(ba, headline)) is not None:
            out.findings.insert(out.findings.index(headline) + 1, said[0])
    else:
        rankings = [(f, said) for f in out.findings if f.kind == "ranking"
                    if (said := _why_finding(ba, f)) is not None]
        if rankings:
            f, (why, _) = next(((f, s) for f, s in rankings if s[1]), rankings[0])
            out.findings.insert(out.findings.index(f) + 1, why)
    out.findings += _crossover_findings(ba, g)
    out.findings += [_fit_finding(ba, g, sf) for sf in ba.fits]
    for extra in (_skip_finding(ba), _failure_finding(ba)):
        if extra is not None:
            out.findings.append(extra)
    return out


def all_findings(analysis: Analysis) -> list[BenchmarkFindings]:
    return [benchmark_findings(ba) for ba in analysis.benchmarks]


def more_trials_hint(found: Sequence[BenchmarkFindings]) -> str:
    """'; more trials (--trials 10) settle those held back by too few', naming more trials
    than any such finding's cases had (twice the most, at least 2 × MIN_TRIALS_FOR_VERDICT);
    '' when no finding is held back by too few trials (more of them would settle nothing
    that is said to want them)."""
    few = f"fewer than {MIN_TRIALS_FOR_VERDICT} trials"
    had = [trials_of(r) for bf in found for f in bf.every if few in f.tentative
           for r in f.results]
    if not had:
        return ""
    return (f"; more trials (--trials {max(2 * MIN_TRIALS_FOR_VERDICT, 2 * max(had))}) settle "
            "those held back by too few")


def tentative_count(findings: Sequence[Finding]) -> int:
    """Of findings (answers included when passed BenchmarkFindings.every)."""
    return sum(1 for f in findings if f.tentative)
