"""Findings: the answer of a run in a handful of sentences, each with its figure, CI and n.

Generated from the analysis alone, from what a benchmark declares (baseline, primary metric,
params, crossover levels, fits): nothing here knows a benchmark by name. The rules:
- no finding without a number from the run, and no number without its 95% CI and its n;
- a finding says why it is tentative: too few trials for a verdict, a CI that touches the
  verdict's threshold, a runner-up whose CI overlaps the winner's, a crossover whose CIs
  include the level crossed, a fitted constant whose CI includes 0.
A benchmark that declares questions (BenchmarkInfo.questions) is answered first, one finding
per question (report/answers/); those answers are its headline, and the generic contrasts
below follow under their own heading. Diagnostic and control variants never win one.
A crossover whose CI at an end includes its level is not stated: details.md lists it.
After the headline's winner finding, a benchmark that declares why_counters gets a "why"
finding: those kernel counters per operation (counted samples) of the best variant and the
baseline at each point it names, the one furthest from the baseline first (report/counted.py).

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
from bakeoff.report.counted import why_sentence
from bakeoff.report.format import (
    fmt_number,
    fmt_range,
    fmt_value,
    param_estimate_label,
    params_label,
    swept_label,
)
from bakeoff.report.grid import Grid, Params, Point, grid, point_label, trials_of
from bakeoff.report.words import change_phrase, lower_is_better, shown_metric
from bakeoff.stats.estimates import NO_DIFFERENCE, Ratio

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
    return f"ratio {fmt_number(r.ratio)}, 95% CI {fmt_number(r.ci_low)}–{fmt_number(r.ci_high)}"


def _touches_threshold(r: Ratio, threshold: float) -> bool:
    """The CI reaches over an edge of the verdict's band (1 ± threshold): a few more trials
    could change the verdict."""
    return any(r.ci_low <= edge <= r.ci_high for edge in (1 - threshold, 1 + threshold))


def _overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


def _runner_up(why: list[str], runner_up: CaseResult, best_ci: tuple[float, float],
               its_ci: tuple[float, float], shown: str) -> tuple[CaseResult, ...]:
    """The runner-up, if its CI overlaps the best's: the reason is added to why, and the
    runner-up is returned to join the cases the finding involves."""
    if not _overlap(best_ci, its_ci):
        return ()
    why.append(f"runner-up {runner_up.case.variant}'s CI overlaps ({shown})")
    return (runner_up,)


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
    verdict = best.comparison.verdict
    why: list[str] = []
    if min(trials_of(best), trials_of(base)) < MIN_TRIALS_FOR_VERDICT:
        why.append(f"fewer than {MIN_TRIALS_FOR_VERDICT} trials")
    if _touches_threshold(ratio, ba.threshold):
        why.append(f"its CI touches the ±{ba.threshold * 100:g}% threshold")
    elif verdict == "inconclusive":
        why.append(f"not significant after Holm correction (p = {best.comparison.p_holm:.2g})")
    involved: tuple[CaseResult, ...] = (best, base)
    if verdict == "faster":
        text = (f"{best.case.variant} wins, "
                f"{change_phrase(ba, g.metric, ratio.ratio)} than {base_name} {figure}")
        if len(ranked) > 1 and (second := ranked[1].vs_baseline) is not None:
            involved += _runner_up(why, ranked[1], (ratio.ci_low, ratio.ci_high),
                                   (second.ci_low, second.ci_high),
                                   f"{fmt_number(second.ci_low)}–{fmt_number(second.ci_high)}")
    elif verdict == "slower":
        named = base_name if base_name == "baseline" else f"{base_name} (the baseline)"
        text = (f"{named} wins: the closest, "
                f"{best.case.variant}, is {change_phrase(ba, g.metric, ratio.ratio)} {figure}")
    elif verdict == "equivalent":
        # A claim: the whole CI lies within the band, so any difference is smaller than it.
        which = "best" if _better(ba, g.metric, ratio.ratio) else "closest"
        text = (f"every variant is equivalent to {base_name} within "
                f"±{ba.threshold * 100:g}%: the {which}, {best.case.variant}, is "
                f"{change_phrase(ba, g.metric, ratio.ratio)} {figure}"
                if all(r.verdict == "equivalent" for r in compared) else
                f"the {which}, {best.case.variant}, is equivalent to {base_name} within "
                f"±{ba.threshold * 100:g}%: {change_phrase(ba, g.metric, ratio.ratio)} "
                f"{figure}")
    else:
        which = "best" if _better(ba, g.metric, ratio.ratio) else "closest"
        # "shown": an "inconclusive" verdict is a CI that reaches the threshold, which may be a wide
        # one (noise), not a proof that the variants are level.
        text = (f"no variant is shown to differ from {base_name} by more than "
                f"±{ba.threshold * 100:g}%: the {which}, {best.case.variant}, is "
                f"{change_phrase(ba, g.metric, ratio.ratio)} {figure}")
    return Clause(where, text, why, involved,
                  abs(math.log(ratio.ratio)) if ratio.ratio > 0 else 0.0, verdict == "faster",
                  named_first=verdict not in NO_DIFFERENCE, foil=base)


def _ranking_clause(ba: BenchmarkAnalysis, g: Grid, point: Point) -> Clause | None:
    """Without a ratio (the baseline does not report the metric): the best median with its
    CI, and the runner-up's when their CIs overlap."""
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
    # Alone (one command under `bakeoff cmd`), a variant ranks against nothing: its figure.
    lead = (f"{best.case.variant}'s {shown_metric(ba, g.metric)} is"
            if len(ba.info.variants) == 1 else
            f"the {word} {shown_metric(ba, g.metric)} is {best.case.variant}'s,")
    text = (f"{lead} {fmt_value(s.median, unit)} "
            + (f"(95% CI {fmt_range(s.ci_low, s.ci_high, unit)}; {s.n_trials} trials)"
               if s.n_trials > 1 else "(no CI from one trial)"))
    why: list[str] = []
    if s.n_trials < MIN_TRIALS_FOR_VERDICT:
        why.append(f"fewer than {MIN_TRIALS_FOR_VERDICT} trials")
    involved: tuple[CaseResult, ...] = (best,)
    if len(ranked) > 1 and (t := ranked[1].summary) is not None:
        involved += _runner_up(why, ranked[1], (s.ci_low, s.ci_high), (t.ci_low, t.ci_high),
                               fmt_range(t.ci_low, t.ci_high, unit))
    return Clause(_where(ba, g, point), text, why, involved, 0.0, named_first=False,
                  foil=ranked[1] if len(ranked) > 1 else None)


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
    said = [(s, best, base) for where, best, base in winner.points
            if (s := why_sentence(ba, where, best, base)) is not None]
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


def _fit_finding(ba: BenchmarkAnalysis, g: Grid, sf: SweepFit) -> Finding:
    f, unit = sf.fit, str(ba.info.metric(sf.metric)["unit"])
    param_unit = next((str(p["unit"]) for p in ba.info.params if p["name"] == sf.param), "")
    line = [r for r in ba.for_metric(sf.metric) if r.case.variant == sf.variant
            and all(r.case.param(k) == v for k, v in sf.fixed.items())]
    trials = min((trials_of(r) for r in line), default=0)
    why = []
    if f.a_low <= 0 <= f.a_high:
        why.append("a's CI includes 0")
    if trials < MIN_TRIALS_FOR_VERDICT:
        why.append(f"fewer than {MIN_TRIALS_FOR_VERDICT} trials")
    varying = _varying(g, sf.fixed)
    fixed = f" ({params_label(ba.info, varying)})" if varying else ""
    # Fitted alone (a benchmark of one variant): the metric itself, not a difference.
    minus = "" if sf.variant == ba.info.baseline else f" − {ba.info.baseline}"
    text = (f"Fit for {sf.variant}{fixed}: {sf.metric}{minus} = a + b·{sf.param}, "
            f"a = {fmt_value(f.a, unit)} (95% CI {fmt_value(f.a_low, unit)} to "
            f"{fmt_value(f.a_high, unit)}), b = {fmt_number(f.b)} {unit} per "
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
            out.append(Finding("unanswered", unanswered(q), question=str(q["ask"]),
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


def tentative_count(findings: Sequence[Finding]) -> int:
    """Of findings (answers included when passed BenchmarkFindings.every)."""
    return sum(1 for f in findings if f.tentative)
