"""The one table a benchmark gets in report.md and at the top of its HTML section.

Its primary metric only: a row per point of the sweep (the params that vary), a column per
variant, each cell the ratio to the baseline with its 95% CI and a verdict glyph, and the
trials behind the row. Without a ratio (the baseline does not report the metric) a cell is
the median with its CI. Cells hold raw text; each renderer escapes it.
"""

from __future__ import annotations

from dataclasses import dataclass

from bakeoff.analysis.within_run import BenchmarkAnalysis, CaseResult
from bakeoff.declare.model import Case
from bakeoff.report.contention import CONTENDED_MARK
from bakeoff.report.contention import legend as contention_legend
from bakeoff.report.format import MISSING, fmt_ratio, params_label
from bakeoff.report.grid import Grid, Params, Point, grid, trials_of
from bakeoff.report.tables import below_resolution_text, median_figure
from bakeoff.report.words import better_phrase
from bakeoff.stats.estimates import MIN_TRIALS_FOR_CI

# Better than the baseline beyond the threshold, worse, or no difference of that size shown.
GLYPHS = {"faster": "✓", "slower": "✗", "equivalent": "=", "inconclusive": "?"}


@dataclass(frozen=True)
class CompactCell:
    text: str
    verdict: str | None = None  # faster / slower / equivalent / inconclusive, for a renderer's colour


@dataclass(frozen=True)
class CompactRow:
    label: str
    cells: list[CompactCell]
    trials: str


@dataclass(frozen=True)
class CompactTable:
    label_header: str
    variants: list[str]
    rows: list[CompactRow]
    legend: str
    # Params with one value in every case, said once under the table.
    constant: str


def _cell(ba: BenchmarkAnalysis, g: Grid, point: Point, variant: str,
          skipped: set[tuple[str, Params]], contended: frozenset[Case]) -> CompactCell:
    cell = _figure(ba, g, point, variant, skipped)
    base = point.of(ba.info.baseline)
    cases = {r.case for r in (point.of(variant), base if g.with_ratios else None) if r}
    if cases & contended:  # its own trials, or the baseline's its ratio stands on
        return CompactCell(f"{cell.text} {CONTENDED_MARK}", cell.verdict)
    return cell


def _figure(ba: BenchmarkAnalysis, g: Grid, point: Point, variant: str,
            skipped: set[tuple[str, Params]]) -> CompactCell:
    r: CaseResult | None = point.of(variant)
    if r is None:
        return CompactCell("skipped" if (variant, point.params) in skipped else MISSING)
    if r.summary is None:
        return CompactCell(f"failed ({r.n_failed} trials)" if r.n_failed else MISSING)
    if g.with_ratios:
        ratio, verdict = r.vs_baseline, r.verdict
        if ratio is None or verdict is None:
            return CompactCell(MISSING)
        sides = (trials_of(r), trials_of(point.of(ba.info.baseline)))
        if min(sides) < MIN_TRIALS_FOR_CI:  # 1 degree of freedom: a CI spanning decades
            shown = fmt_ratio(ratio.ratio, ratio.ratio, ratio.ratio).removesuffix(
                " (the same in every trial)")
            return CompactCell(f"{shown} ({sides[0]} + {sides[1]} trials: too few for a CI) "
                               f"{GLYPHS[verdict]}", verdict)
        return CompactCell(f"{fmt_ratio(ratio.ratio, ratio.ci_low, ratio.ci_high)} "
                           f"{GLYPHS[verdict]}", verdict)
    s = r.summary
    if r.below_resolution:  # said as such: its CI reaches 0 once the start-up is taken off
        return CompactCell(below_resolution_text(s, r.unit, r.below_resolution))
    return CompactCell(median_figure(s, r.unit, ba.info.is_net(r.metric)).said())


def _trials(point: Point) -> str:
    counts = sorted({trials_of(r) for r in point.results if r.summary is not None})
    if not counts:
        return "0"
    return str(counts[0]) if len(counts) == 1 else f"{counts[0]}–{counts[-1]}"


def compact_table(ba: BenchmarkAnalysis,
                  contended: frozenset[Case] = frozenset()) -> CompactTable | None:
    """contended: the cases to mark (report/contention.py), said in the legend."""
    g = grid(ba)
    if not g.points:
        return None
    info, base = ba.info, ba.info.baseline
    seen = {r.case.variant for p in g.points for r in p.results}
    variants = [str(v["name"]) for v in info.variants if v["name"] in seen
                and not (g.with_ratios and v["name"] == base)]
    constant = dict(g.constant)
    varying = [str(p["name"]) for p in info.params if p["name"] not in constant]
    skipped = {(s.case.variant, s.case.params) for s in ba.skips}
    rows = []
    for point in g.points:
        labels = [info.param_label(k, v) for k, v in point.params if k not in constant]
        rows.append(CompactRow(", ".join(labels) or "(all)",
                               [_cell(ba, g, point, v, skipped, contended) for v in variants],
                               _trials(point)))
    metric = g.metric
    shown = f"|{metric}|" if info.is_signed(metric) else metric
    better = better_phrase(ba, metric).split(":")[0]
    unit = str(info.metric(metric)["unit"])
    if g.with_ratios:
        legend = (f"Primary metric {shown} ({unit}, {better}); baseline {base}. Table: "
                  f"{shown} of each variant / {base}'s (ratio of trial medians, 95% CI; "
                  f"{GLYPHS['faster']} better beyond ±{ba.threshold * 100:g}%, "
                  f"{GLYPHS['slower']} worse, {GLYPHS['equivalent']} equivalent: the whole CI "
                  f"within ±{ba.threshold * 100:g}%, {GLYPHS['inconclusive']} inconclusive: "
                  "neither shown), "
                  "trials per case.")
    else:
        legend = (f"Primary metric {shown} ({unit}, {better}); {base}, the baseline, reports "
                  f"no {metric}, so there is no ratio to it. Table: median of {shown} with "
                  "its 95% CI, trials per case.")
    if any(CONTENDED_MARK in c.text for r in rows for c in r.cells):
        legend += f" {contention_legend()}."
    return CompactTable(", ".join(varying) or "case", variants, rows, legend,
                        params_label(info, g.constant) if g.constant else "")
