"""The case table as formatted text cells, built once and rendered by html and markdown.

Cells hold raw text (variant names and params straight from the data); each renderer escapes
for its own format, so escaping cannot be forgotten in one place and doubled in another.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from bakeoff.analysis.within_run import BenchmarkAnalysis, CaseResult
from bakeoff.declare.model import Case, ParamValue, RunRecord, Trial
from bakeoff.report.format import (
    MISSING,
    case_params_label,
    fmt_count,
    fmt_estimate,
    fmt_number,
    fmt_p,
    fmt_ratio,
    fmt_value,
    fmt_with_ci,
    interval_words,
    params_label,
)
from bakeoff.report.words import Verdict, lower_is_better, speedup, verdict, verdict_cell
from bakeoff.stats.estimates import MIN_TRIALS_FOR_CI, MIN_VALUES_FOR_TAIL_QUANTILES, Summary


@dataclass(frozen=True)
class Column:
    key: str
    header: str
    numeric: bool  # right-aligned, so digits line up


@dataclass(frozen=True)
class CaseRow:
    result: CaseResult
    is_baseline: bool
    verdict: Verdict
    cells: dict[str, str]


def case_columns(ba: BenchmarkAnalysis, signed: bool = False) -> list[Column]:
    """signed: the metric is closer-to-zero-is-better; its bias and RMS get columns.
    Counters are not a column: they get tables of their own (counter_names)."""
    cols = [
        Column("variant", "variant", False),
        Column("params", "params", False),
        Column("n", "n samples / trials", True),
        Column("median", "median", True),
        Column("ci", "95% CI", True),
        Column("p5_p95", "p5 / p95", True),
        *([Column("bias", "bias: mean signed (95% CI)", True),
           Column("rms", "RMS (95% CI)", True)] if signed else []),
        Column("ratio", f"ratio vs {ba.info.baseline} (95% CI)", True),
        Column("speedup", "speed-up", True),
        Column("verdict", "verdict", False),
        Column("p", "Mann-Whitney p; the CI's t-test p after Holm", True),
        Column("shift", "Hodges-Lehmann shift (95% CI)", True),
        Column("cliff", "Cliff's δ", True),
        Column("outliers", "outliers (Tukey low/high, MAD)", True),
        Column("failed", "failed trials", True),
    ]
    return cols


@dataclass(frozen=True)
class CounterTable:
    """One counter as a narrow table: a row per param combination, a column per variant, each
    cell the median over the case's successful trials."""

    name: str
    variants: list[str]
    rows: list[tuple[str, list[str]]]  # (params label, a cell per variant)


def counter_tables(ba: BenchmarkAnalysis) -> list[CounterTable]:
    results = [r for r in ba.for_metric(ba.info.primary_metric) if r.counters]
    variants = [str(v["name"]) for v in ba.info.variants
                if any(r.case.variant == v["name"] for r in results)]
    points = list(dict.fromkeys(r.case.params for r in
                                sorted(results, key=lambda r: case_sort_key(ba, r.case))))
    by_case = {(r.case.variant, r.case.params): r for r in results}
    tables = []
    for name in counter_names(ba):
        rows = [(params_label(ba.info, params),
                 [fmt_number(r.counters[name]) if (r := by_case.get((v, params))) is not None
                  and name in r.counters else MISSING for v in variants]) for params in points]
        tables.append(CounterTable(name, variants, rows))
    return tables


def counter_names(ba: BenchmarkAnalysis) -> list[str]:
    """Every counter some case of the benchmark reported: the declared ones first (in their
    order), then the others by name."""
    found = {n for r in ba.for_metric(ba.info.primary_metric) for n in r.counters}
    declared = [str(c["name"]) for c in ba.info.counters if c["name"] in found]
    return declared + sorted(found - set(declared))


def _param_sort_key(
    params: tuple[tuple[str, ParamValue], ...]
) -> tuple[tuple[int, float, str], ...]:
    # Numbers sort as numbers (4 KiB before 16 KiB), strings after them as text.
    return tuple(
        (0, float(v), "") if isinstance(v, int | float) else (1, 0.0, str(v)) for _, v in params
    )


def case_sort_key(ba: BenchmarkAnalysis, case: Case) -> tuple[object, ...]:
    order = {str(v["name"]): i for i, v in enumerate(ba.info.variants)}
    return (_param_sort_key(case.params), order.get(case.variant, len(order)), case.variant)


def measured_results(ba: BenchmarkAnalysis, metric: str) -> list[CaseResult]:
    """Rows of one metric in table order, without skipped cases that never ran a trial."""
    skipped = {s.case for s in ba.skips}
    rows = [
        r for r in ba.for_metric(metric)
        if not (r.case in skipped and r.summary is None and r.n_failed == 0)
    ]
    return sorted(rows, key=lambda r: case_sort_key(ba, r.case))


def tail_quantiles(s: Summary, unit: str) -> str:
    """p5 / p95, or why not: from fewer than 20 values they are the extremes, interpolated."""
    if s.n < MIN_VALUES_FOR_TAIL_QUANTILES:
        return f"{MISSING} (n = {s.n} < {MIN_VALUES_FOR_TAIL_QUANTILES})"
    return f"{fmt_value(s.p5, unit)} / {fmt_value(s.p95, unit)}"


def below_resolution_text(s: Summary, unit: str, what: str) -> str:
    """A figure that cannot be told from 0 once `what` was subtracted: its median ± the
    farther end of its CI (Metric.subtracted)."""
    spread = max(s.median - s.ci_low, s.ci_high - s.median)
    return (f"below {what}'s resolution: {fmt_value(s.median, unit)} ± "
            f"{fmt_value(spread, unit)}")


@dataclass(frozen=True)
class MedianFigure:
    """A case's median as a report prints it: `point` '12.4 ns', or the words that stand
    in for one ('not resolved from 0'); `interval` its CI, or what stands in for one."""

    point: str
    interval: str

    def said(self) -> str:
        """'12.4 ns (12.1–12.6 ns)', 'not resolved from 0 (-358 to +288 ns)', '0.568 ns
        (2 trials: too few for a CI)'."""
        return f"{self.point} ({self.interval})"


def median_figure(s: Summary, unit: str, net: bool = False) -> MedianFigure:
    """One case's median with its CI, honest where the CI cannot be read as one: a net
    difference (Metric.net) whose CI includes 0 is said so, with its interval and no point
    that would read as a cost; one whose whole CI is below 0 as how much less it takes;
    from fewer than MIN_TRIALS_FOR_CI trials, the median with its trial count."""
    if s.n_trials < 2:
        return MedianFigure(fmt_value(s.median, unit), "one trial")
    if net and s.ci_low <= 0 <= s.ci_high and s.ci_low < s.ci_high:
        return MedianFigure("not resolved from 0", interval_words(s.ci_low, s.ci_high, unit))
    if s.n_trials < MIN_TRIALS_FOR_CI and not s.ci_low == s.ci_high == s.median:
        return MedianFigure(fmt_value(abs(s.median), unit) + (" less" if net and s.median < 0
                                                              else ""),
                            f"{s.n_trials} trials: too few for a CI")
    if net and s.ci_high < 0:
        e = fmt_estimate(-s.median, -s.ci_high, -s.ci_low, unit)
        return MedianFigure(f"{e.point} less", e.interval or "the same in every trial")
    e = fmt_estimate(s.median, s.ci_low, s.ci_high, unit)
    return MedianFigure(e.point, e.interval or "the same in every trial")


def _few_or_ci(point: float, low: float, high: float, unit: str, s: Summary | None) -> str:
    """A figure with its CI, or with its trial count where they are too few for one (an RMS
    from 2 trials, on log scale, spans decades)."""
    if s is not None and 1 < s.n_trials < MIN_TRIALS_FOR_CI:
        return f"{fmt_value(point, unit)} ({s.n_trials} trials: too few for a CI)"
    return fmt_with_ci(point, low, high, unit, "")


def _ratio_trials(ba: BenchmarkAnalysis, r: CaseResult) -> tuple[int, int]:
    """The trials behind a case's ratio to its baseline case: (its own, the baseline's)."""
    base = next((b for b in ba.for_metric(r.metric) if b.case.variant == ba.info.baseline
                 and b.case.params == r.case.params and b.summary is not None), None)
    mine = r.summary.n_trials if r.summary is not None else 0
    return mine, base.summary.n_trials if base is not None and base.summary else 0


def case_rows(ba: BenchmarkAnalysis, metric: str) -> list[CaseRow]:
    lower_better = lower_is_better(ba, metric)
    net = ba.info.is_net(metric)
    rows: list[CaseRow] = []
    for r in measured_results(ba, metric):
        s, vs, cmp = r.summary, r.vs_baseline, r.comparison
        is_base = r.case.variant == ba.info.baseline
        cells = {
            "variant": r.case.variant,
            "params": case_params_label(ba.info, r.case),
            "n": f"{fmt_count(s.n)} / {s.n_trials}" if s else "0 / 0",
            "median": median_figure(s, r.unit, net).point if s else (
                MISSING if r.n_failed else f"{MISSING} (not run)"),
            "ci": (median_figure(s, r.unit, net).interval if s.n_trials > 1
                   else "no CI from one trial") if s else MISSING,
            "p5_p95": tail_quantiles(s, r.unit) if s else MISSING,
            "bias": (_few_or_ci(r.signed.bias, r.signed.bias_ci_low, r.signed.bias_ci_high,
                                r.unit, s) if r.signed else MISSING),
            "rms": (_few_or_ci(r.signed.rms, r.signed.rms_ci_low, r.signed.rms_ci_high,
                               r.unit, s) if r.signed else MISSING),
            "ratio": fmt_ratio(vs.ratio, vs.ci_low, vs.ci_high) if vs else MISSING,
            "speedup": MISSING,
            "verdict": verdict_cell(r, ba.info.baseline),
            "p": f"{fmt_p(cmp.ratio.p_value)} ({fmt_p(cmp.p_holm)})" if cmp else MISSING,
            "shift": (fmt_with_ci(cmp.shift.estimate, cmp.shift.ci_low, cmp.shift.ci_high,
                                  r.unit, "") if cmp else MISSING),
            "cliff": f"{cmp.cliffs_delta:+.2f}" if cmp else MISSING,
            "outliers": (f"{r.outliers.tukey_low}/{r.outliers.tukey_high}, {r.outliers.mad}"
                         if r.outliers else MISSING),
            "failed": str(r.n_failed) + (" (all)" if r.n_failed and s is None else ""),
        }
        if s is not None and r.below_resolution:
            cells["median"] = below_resolution_text(s, r.unit, r.below_resolution)
            cells["ratio"] = f"{MISSING} (below resolution)"
        sides = _ratio_trials(ba, r)
        if vs and min(sides) < MIN_TRIALS_FOR_CI:
            # From 2 trials a side the ratio's CI spans decades: its point and trial counts.
            few = f"{sides[0]} + {sides[1]} trials: too few for a CI"
            cells["ratio"] = f"{fmt_number(vs.ratio)} ({few})"
            point = speedup(vs, lower_better)[0]
            cells["speedup"] = f"{fmt_number(point)}× ({few})" if math.isfinite(point) else \
                MISSING
        elif vs:
            point, lo, hi = speedup(vs, lower_better)
            cells["speedup"] = (fmt_estimate(point, lo, hi, "×", si=False).said("")
                                .replace(" ×", "×")
                                if math.isfinite(point) else MISSING)
        elif not is_base and s is not None and not r.below_resolution:
            below = any(b.below_resolution for b in ba.for_metric(metric)
                        if b.case.variant == ba.info.baseline and b.case.params == r.case.params)
            cells["ratio"] = f"{MISSING} ({'baseline below resolution' if below else 'no baseline data'})"
        rows.append(CaseRow(r, is_base, verdict(r, ba.info.baseline), cells))
    return rows


def failed_trials(run: RunRecord, ba: BenchmarkAnalysis) -> list[Trial]:
    trials = [t for t in run.trials if t.case.benchmark == ba.info.name and not t.ok]
    return sorted(trials, key=lambda t: (case_sort_key(ba, t.case), t.index))


def failure_text(t: Trial) -> str:
    """The error with the program's stderr tail, unless the error already quotes it."""
    text = t.error or f"trial {t.status}"
    tail = t.stderr_tail.strip()
    if tail and tail not in text:
        text = f"{text}\n--- stderr (tail) ---\n{tail}"
    return text


def failure_heading(ba: BenchmarkAnalysis, t: Trial) -> str:
    code = f", exit {t.exit_code}" if t.exit_code is not None else ""
    return (
        f"{t.case.variant}, {case_params_label(ba.info, t.case)}: trial {t.index} "
        f"{t.status}{code}"
    )
