"""An "overhead" answer: what a variant adds per operation, measured where the work is least
(the paired difference against the reference at the smallest value of `along`, and at each
other value), and, for each of the benchmark's crossover_ratios, from which value of `along`
the ratio stays under it. A fit across the axis is not the answer: its intercept borrows
the noise of the points with the most work (issue 32, point 6)."""

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
    short_why,
    tentative_reasons,
    where_label,
    why_of,
    with_tentative,
)
from bakeoff.report.answers.crossover import crossings, lines_along, ratio_at
from bakeoff.report.format import fmt_estimate, fmt_range, param_estimate_label, swept_label
from bakeoff.report.grid import Params, trials_of
from bakeoff.report.words import lower_is_better
from bakeoff.stats import estimates as stats


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
        e = fmt_estimate((s.ratio.ratio - 1) * 100, (s.ratio.ci_low - 1) * 100,
                         (s.ratio.ci_high - 1) * 100, "")
        lo, _, hi = (e.interval or f"{e.point}–{e.point}").partition("–")
        return (f"under {pct}: {'not reached in the measured range' if sure else 'not settled'}"
                f" (at {swept_label(ba.info, along, float(s.result.case.param(along)))}: "
                f"{_plus(e.point)}%, 95% CI {_plus(lo)}% to {_plus(hi)}%)", sure)
    k = len(sides) - 1
    while k > 0 and under(sides[k - 1]):
        k -= 1
    if k == 0:
        first = sides[0]
        sure = not (first.ratio.ci_low <= level <= first.ratio.ci_high)
        return (f"under {pct} at every measured {along} (from "
                f"{ratio_at(ba, along, first)})", sure)
    c = crossings(ba, along, sides[k - 1:k + 1], level)[0]
    if not c.confident:
        return (f"under {pct}: not settled (the ratio passes {level:g} between "
                f"{swept_label(ba.info, along, c.low)} and {swept_label(ba.info, along, c.high)}"
                f", but a CI there includes {level:g})", False)
    return (f"under {pct} from ≈ {param_estimate_label(ba.info, along, c.estimate)} (between "
            f"{swept_label(ba.info, along, c.low)} and {swept_label(ba.info, along, c.high)})",
            True)


def _plus(number: str) -> str:
    return number if number.startswith("-") or number == "0" else "+" + number


def _difference(d: stats.Shift, unit: str) -> str:
    """A difference at a point, never a negative cost: '+1.91 µs (1.70–2.12 µs)', '1.2 µs less
    (0.4–2.0 µs)', or 'not resolved from 0 (−0.3–0.5 µs)'."""
    if d.ci_low <= 0 <= d.ci_high:
        return f"not resolved from 0 ({fmt_range(d.ci_low, d.ci_high, unit)})"
    if d.estimate < 0:
        less = fmt_estimate(-d.estimate, -d.ci_high, -d.ci_low, unit)
        return f"{less.point} less ({less.interval or 'the same in every round'})"
    e = fmt_estimate(d.estimate, d.ci_low, d.ci_high, unit)
    return f"+{e.point} ({e.interval or 'the same in every round'})"


def _added_at(ba: BenchmarkAnalysis, side: Side) -> stats.Shift | None:
    """What the case adds over its reference at its point: the difference paired by round
    when the reference is the baseline (stats.paired_difference), else, or with fewer than
    two rounds in common, the shift between the two cases' trials."""
    cmp = side.result.comparison
    if (side.against.case.variant == ba.info.baseline and cmp is not None
            and cmp.paired is not None):
        return cmp.paired
    return side.shift


def overhead_answer(ba: BenchmarkAnalysis, q: dict[str, Any]) -> Answer | None:
    metric = question_metric(ba, q)
    along = str(q["along"])
    unit = str(ba.info.metric(metric)["unit"])
    levels = [lv for lv in ba.info.crossover_ratios if lv != 1.0]
    full, short, tentative, results = [], [], [], []
    # level -> what is said of it -> the variants it is said of, for the short form
    reached: dict[str, dict[str, list[str]]] = {}
    figures: list[Figure] = []
    lines = lines_along(ba, q, metric)
    for name, fixed, sides in sorted(lines, key=lambda x: _cost(ba, x, along, metric)):
        where = where_label(ba, fixed)
        at = f" at {where}" if where else ""
        why: list[str] = []
        least = sides[0]
        d = _added_at(ba, least)
        point = swept_label(ba.info, along, float(least.result.case.param(along)))
        if d is not None:
            others = [(s, x) for s in sides[1:] if (x := _added_at(ba, s)) is not None]
            rest = "".join(
                f"; at {swept_label(ba.info, along, float(s.result.case.param(along)))} "
                f"{_difference(x, unit)}" for s, x in others)
            e = fmt_estimate(d.estimate, d.ci_low, d.ci_high, unit)
            ci = e.interval or "the same in every round"
            how = f"{name} − {against_name(ba, q)}, paired by round, 95% CI {ci}"
            if d.ci_low <= 0 <= d.ci_high:
                # No cost resolved from 0: the interval alone, never a negative cost.
                added = (f"{name} adds no cost per operation resolved from 0{at} at {point} "
                         f"({how}){rest}")
                brief = f"{name} not resolved from 0 ({ci})"
                why.append(f"{name}'s added cost at {point} cannot be told from 0")
            elif d.estimate < 0:
                less = fmt_estimate(-d.estimate, -d.ci_high, -d.ci_low, unit)
                added = f"{name} takes {less.point} less per operation{at} at {point} ({how}){rest}"
                brief = f"{name} {less.point} less ({less.interval})"
            else:
                added = f"{name} adds {e.point} per operation{at} at {point} ({how}){rest}"
                brief = f"{name} +{e.point} ({ci})"
            figures.append(Figure(f"{name}: added per operation{at}", d.estimate, d.ci_low,
                                  d.ci_high, f"{e.point} at {point} (95% CI {ci})"))
        else:
            added = f"{name}{at}: no difference to {against_name(ba, q)} at {point}"
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
        tentative += why + tentative_reasons(sides)
        results += [x for s in sides for x in (s.result, s.against)]
    if not full:
        return None
    text = with_tentative("; ".join(full), tentative)
    # Why the dearest variant costs what it does: its counters against the reference's where
    # the work per operation is least (the added cost is the largest share there).
    dearest = max(lines, key=lambda x: _cost(ba, x, along, metric) if
                  math.isfinite(_cost(ba, x, along, metric)) else -math.inf, default=None)
    why_short = ""
    if dearest is not None:
        least = dearest[2][0]
        where = where_label(ba, least.result.case.params)
        why_text, more = why_of(ba, q, where, least)
        tentative += more
        if why_text:
            text += " Why: " + why_text
            why_short = short_why(ba, q, least).replace(
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
    brief = with_tentative(f"Per call, over {against_name(ba, q)} (95% CI; ≥ {n} trials): "
                            + "; ".join(short)
                            + (f". Overhead {levels_said}" if levels_said else ""), tentative)
    return Answer(q["ask"], "overhead", text, brief, "; ".join(dict.fromkeys(tentative)),
                  tuple(results), tuple(figures), why_short)


def _cost(ba: BenchmarkAnalysis, line: tuple[str, Params, list[Side]], along: str,
          metric: str) -> float:
    d = _added_at(ba, line[2][0])
    return d.estimate if d is not None else math.inf
