"""Plotly figures for one benchmark: metric and ratio along each sweep, distributions, resources.

Plotly renders text as a small HTML subset and decodes entities, so every string from the data
goes through `chart_text` (html.escape without quotes, which plotly does not decode): a variant named
'<b>x' then reads as '<b>x' in legends and hovers instead of becoming markup.
"""

from __future__ import annotations

import functools
import html
import json
import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import plotly.graph_objects as go
import plotly.io as pio
from plotly.subplots import make_subplots

from bakeoff.analysis.within_run import BenchmarkAnalysis, CaseResult
from bakeoff.declare.model import Case, ParamValue, RunRecord
from bakeoff.report.format import (
    case_params_label,
    fmt_count,
    fmt_range,
    fmt_value,
    params_label,
    scale_for,
    spans_decades,
)
from bakeoff.report.tables import case_sort_key, measured_results
from bakeoff.report.words import lower_is_better

ChartKind = Literal["metric", "overhead", "ratio", "counter", "distribution", "resources"]

MAX_POINTS = 5000  # per distribution chart: more makes the page slow and hides nothing extra
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"


def new_figure() -> go.Figure:
    """A figure that does not check what is set on it. plotly checks every property against
    its schema as it is set: that was half of what rendering report.html took
    (docs/notes/profile-choices-20261125-vm.md); what the report sets is fixed by this code
    and drawn by the tests. (make_subplots takes it as `figure=`.)"""
    return go.Figure(_validate=False)


def figure_json(fig: go.Figure) -> dict[str, Any]:
    """The figure as plotly.js takes it. An unchecked figure keeps a template's name
    (layout.template = "plotly_white"), which plotly.js does not know: it is expanded here
    into the template itself, as a checked figure would have been, once per name."""
    out: dict[str, Any] = json.loads(pio.to_json(fig, validate=False))
    layout = out.setdefault("layout", {})
    if isinstance(layout.get("template"), str):
        layout["template"] = _template(layout["template"])
    return out


@functools.cache
def _template(name: str) -> dict[str, Any]:
    """One object per name, shared by every figure (serialised, never changed)."""
    template: dict[str, Any] = pio.templates[name].to_plotly_json()
    return template


@dataclass(frozen=True)
class Chart:
    kind: ChartKind
    title: str  # raw text; the html layer escapes it
    note: str  # one sentence under the title: what is drawn and from how much data
    figure: go.Figure


@dataclass(frozen=True)
class Sweep:
    """One line of cases: `param` varies, `fixed` holds the others. param None: no numeric
    axis, so the cases are categories."""

    param: str | None
    fixed: tuple[tuple[str, ParamValue], ...]
    results: list[CaseResult]


def chart_text(text: str) -> str:
    return html.escape(text, quote=False)


def apply_layout(fig: go.Figure, title: str, height: int = 460) -> None:
    fig.update_layout(
        title={"text": chart_text(title), "x": 0, "xanchor": "left"},
        template="plotly_white", height=height, font={"family": FONT, "size": 13},
        margin={"l": 70, "r": 30, "t": 60, "b": 60}, hovermode="closest",
        legend={"title": {"text": "variant"}},
    )


def sweeps(ba: BenchmarkAnalysis, metric: str) -> list[Sweep]:
    rows = [r for r in measured_results(ba, metric) if r.summary is not None]
    swept = [
        p["name"] for p in ba.info.params
        if ba.info.param_is_numeric(p["name"])
        and len({r.case.param(p["name"]) for r in rows if p["name"] in dict(r.case.params)}) >= 2
    ]
    if not swept:
        return [Sweep(None, (), rows)] if rows else []
    out: list[Sweep] = []
    for name in swept:
        groups: dict[tuple[tuple[str, ParamValue], ...], list[CaseResult]] = defaultdict(list)
        for r in rows:
            groups[tuple((k, v) for k, v in r.case.params if k != name)].append(r)
        for fixed, group in groups.items():
            out.append(Sweep(name, fixed, group))
    return out


def sweep_x(ba: BenchmarkAnalysis, sweep: Sweep, case: Case) -> float | str:
    if sweep.param is None:
        return chart_text(case_params_label(ba.info, case))
    return float(case.param(sweep.param))


def _sweep_title(ba: BenchmarkAnalysis, sweep: Sweep, what: str) -> str:
    axis = f" vs {sweep.param}" if sweep.param else " per case"
    fixed = f" at {params_label(ba.info, sweep.fixed)}" if sweep.fixed else ""
    # The benchmark's own title heads its section: repeating it made titles overflow.
    return f"{what}{axis}{fixed}"


def sweep_x_axis(fig: go.Figure, ba: BenchmarkAnalysis, sweep: Sweep, **kw: Any) -> None:
    if sweep.param is None:
        fig.update_xaxes(type="category", title={"text": "case"}, **kw)
        return
    xs = sorted({float(r.case.param(sweep.param)) for r in sweep.results})
    # Label the swept values as people wrote them ('16 MiB'), not plotly's '16.777M'.
    fig.update_xaxes(
        type="log" if spans_decades(xs) else "linear",
        tickmode="array" if len(xs) <= 16 else "auto", tickvals=xs,
        ticktext=[chart_text(ba.info.param_label(sweep.param, x)) for x in xs],
        title={"text": chart_text(sweep.param)}, **kw,
    )


def _by_variant(
    ba: BenchmarkAnalysis, results: Sequence[CaseResult]
) -> dict[str, list[CaseResult]]:
    out: dict[str, list[CaseResult]] = {str(v["name"]): [] for v in ba.info.variants}
    for r in sorted(results, key=lambda r: case_sort_key(ba, r.case)):
        out.setdefault(r.case.variant, []).append(r)
    return {k: v for k, v in out.items() if v}


def metric_chart(ba: BenchmarkAnalysis, sweep: Sweep, metric: str,
                 colors: dict[str, str]) -> Chart:
    unit = sweep.results[0].unit
    medians = [r.summary.median for r in sweep.results if r.summary]
    div, shown = scale_for(statistics.median(medians), unit)
    fig = new_figure()
    for variant, rows in _by_variant(ba, sweep.results).items():
        ss = [r.summary for r in rows if r.summary]
        fig.add_trace(go.Scatter(
            x=[sweep_x(ba, sweep, r.case) for r in rows], y=[s.median / div for s in ss],
            error_y={"type": "data", "symmetric": False,
                     "array": [(s.ci_high - s.median) / div for s in ss],
                     "arrayminus": [(s.median - s.ci_low) / div for s in ss]},
            mode="lines+markers" if sweep.param else "markers", name=chart_text(variant),
            line={"color": colors.get(variant)}, marker={"color": colors.get(variant), "size": 8},
            text=[chart_text(f"{variant}, {case_params_label(ba.info, r.case)}")
                  + f"<br>median {fmt_value(s.median, unit)}"
                  + f"<br>95% CI {fmt_range(s.ci_low, s.ci_high, unit)}"
                  + f"<br>n = {fmt_count(s.n)} samples / {s.n_trials} trials"
                  for r, s in zip(rows, ss, strict=True)],
            hovertemplate="%{text}<extra></extra>",
        ))
    shown_metric = f"|{metric}|" if ba.info.is_signed(metric) else metric
    title = _sweep_title(ba, sweep, f"{shown_metric} (median, 95% CI)")
    apply_layout(fig, title)
    sweep_x_axis(fig, ba, sweep)
    ends = [v for r in sweep.results if r.summary for v in (r.summary.ci_low, r.summary.ci_high)]
    better = "closer to zero" if ba.info.is_signed(metric) else (
        "lower" if lower_is_better(ba, metric) else "higher")
    fig.update_yaxes(type="log" if spans_decades(ends) else "linear",
                     title={"text": chart_text(f"{shown_metric} ({shown}), {better} is better")})
    note = "Median of all samples per case; error bars are the 95% CI (t over trials, trial-t)."
    return Chart("metric", title, note, fig)


def overhead_chart(ba: BenchmarkAnalysis, sweep: Sweep, metric: str,
                   colors: dict[str, str]) -> Chart | None:
    """(ratio - 1) x 100: what each variant adds over the baseline, in %, with its CI."""
    rows = [r for r in sweep.results if r.vs_baseline is not None]
    if not rows:
        return None
    base = ba.info.baseline
    fig = new_figure()
    for variant, vrows in _by_variant(ba, rows).items():
        rs = [r.vs_baseline for r in vrows if r.vs_baseline]
        pct = [(q.ratio - 1) * 100 for q in rs]
        fig.add_trace(go.Scatter(
            x=[sweep_x(ba, sweep, r.case) for r in vrows], y=pct, name=chart_text(variant),
            mode="lines+markers" if sweep.param else "markers",
            line={"color": colors.get(variant)}, marker={"color": colors.get(variant), "size": 8},
            error_y={"type": "data", "symmetric": False,
                     "array": [(q.ci_high - q.ratio) * 100 for q in rs],
                     "arrayminus": [(q.ratio - q.ci_low) * 100 for q in rs]},
            text=[chart_text(f"{variant}, {case_params_label(ba.info, r.case)}")
                  + f"<br>overhead {p:+.2f}% (95% CI {(q.ci_low - 1) * 100:+.2f}% to "
                  f"{(q.ci_high - 1) * 100:+.2f}%)" for r, q, p in zip(vrows, rs, pct, strict=True)],
            hovertemplate="%{text}<extra></extra>",
        ))
    fig.add_hline(y=0, line={"dash": "dash", "color": "#555555", "width": 1})
    for level in ba.info.crossover_ratios:
        fig.add_hline(y=(level - 1) * 100, line={"dash": "dot", "color": "#999999", "width": 1},
                      annotation_text=f"{(level - 1) * 100:g}%", annotation_position="right")
    title = _sweep_title(ba, sweep, f"{metric} overhead over {base} (%)")
    apply_layout(fig, title)
    sweep_x_axis(fig, ba, sweep)
    ends = [(v - 1) * 100 for r in rows if r.vs_baseline
            for v in (r.vs_baseline.ci_low, r.vs_baseline.ci_high)]
    # A log axis when every overhead is positive and they span decades (0.5% next to
    # 100,000%); else linear, where 0 and negative values can be drawn.
    log_y = all(e > 0 for e in ends) and spans_decades(ends)
    fig.update_yaxes(type="log" if log_y else "linear", title={"text": chart_text(f"% over {base}")})
    note = ("(variant median / baseline median − 1) × 100; error bars are the 95% CI of the "
            "ratio (trial-t: t over trials, paired by round).")
    return Chart("overhead", title, note, fig)


def counter_chart(ba: BenchmarkAnalysis, sweep: Sweep, counter: dict[str, Any],
                  colors: dict[str, str]) -> Chart | None:
    """A declared counter along a sweep: the median over each case's trials."""
    name, unit = str(counter["name"]), str(counter["unit"])
    rows = [r for r in sweep.results if name in r.counters]
    if not rows:
        return None
    div, shown = scale_for(statistics.median(r.counters[name] for r in rows) or 1.0, unit)
    fig = new_figure()
    for variant, vrows in _by_variant(ba, rows).items():
        fig.add_trace(go.Scatter(
            x=[sweep_x(ba, sweep, r.case) for r in vrows], y=[r.counters[name] / div for r in vrows],
            name=chart_text(variant), mode="lines+markers" if sweep.param else "markers",
            line={"color": colors.get(variant)}, marker={"color": colors.get(variant), "size": 8},
            text=[chart_text(f"{variant}, {case_params_label(ba.info, r.case)}")
                  + f"<br>{chart_text(name)} {fmt_value(r.counters[name], unit)} (median over trials)"
                  for r in vrows],
            hovertemplate="%{text}<extra></extra>",
        ))
    title = _sweep_title(ba, sweep, f"{name} (median over trials)")
    apply_layout(fig, title)
    sweep_x_axis(fig, ba, sweep)
    values = [r.counters[name] for r in rows if r.counters[name] > 0]
    better = "lower" if counter.get("lower_is_better", True) else "higher"
    fig.update_yaxes(type="log" if values and spans_decades(values) else "linear",
                     title={"text": chart_text(f"{name} ({shown}), {better} is better")})
    return Chart("counter", title, str(counter.get("description", "")) or
                 "Median over the case's successful trials.", fig)


def _samples(run: RunRecord, metric: str) -> dict[Case, list[list[float]]]:
    out: dict[Case, list[list[float]]] = defaultdict(list)
    for t in run.trials:
        if t.ok and t.samples.get(metric):
            out[t.case].append(list(t.samples[metric]))
    return out


def distribution_chart(run: RunRecord, ba: BenchmarkAnalysis, metric: str,
                       colors: dict[str, str]) -> Chart | None:
    rows = [r for r in measured_results(ba, metric) if r.summary is not None]
    per_case = _samples(run, metric)
    total = sum(len(s) for r in rows for s in per_case.get(r.case, []))
    if not rows or total == 0:
        return None
    measured = sum(r.summary.n for r in rows if r.summary)
    # All samples when they fit; else one point per trial (the unit the statistics resample).
    # A trial kept as quantiles (more samples than stats.SKETCH_POINTS) is never drawn whole.
    use_all = total <= MAX_POINTS and measured == total
    points = {r.case: [v for s in per_case.get(r.case, []) for v in s] if use_all
              else [statistics.median(s) for s in per_case.get(r.case, [])] for r in rows}
    n_points = sum(len(v) for v in points.values())
    stride = max(1, math.ceil(n_points / MAX_POINTS))
    unit = rows[0].unit
    div, shown = scale_for(statistics.median([r.summary.median for r in rows if r.summary]), unit)
    fig = new_figure()
    for variant, vrows in _by_variant(ba, rows).items():
        xs: list[str] = []
        ys: list[float] = []
        for r in vrows:
            vals = points[r.case][::stride]
            xs += [chart_text(case_params_label(ba.info, r.case))] * len(vals)
            ys += [v / div for v in vals]
        fig.add_trace(go.Box(
            x=xs, y=ys, name=chart_text(variant), boxpoints="all", jitter=0.4, pointpos=0,
            marker={"color": colors.get(variant), "size": 3, "opacity": 0.6},
            line={"color": colors.get(variant)}, offsetgroup=chart_text(variant),
        ))
    title = f"distribution of {metric} per case"
    apply_layout(fig, title)
    fig.update_layout(boxmode="group")
    order = [chart_text(case_params_label(ba.info, r.case)) for r in rows]
    fig.update_xaxes(type="category", categoryorder="array",
                     categoryarray=list(dict.fromkeys(order)), title={"text": "case"})
    all_y = [v for tr in fig.data for v in tr.y]
    fig.update_yaxes(type="log" if spans_decades(all_y) else "linear",
                     title={"text": chart_text(f"{metric} ({shown})")})
    what = (f"all {fmt_count(total)} samples" if use_all else
            f"per-trial medians ({fmt_count(measured)} samples are too many to draw)")
    if stride > 1:
        what += f", every {stride}th shown"
    return Chart("distribution", title, f"Box plots with points: {what}.", fig)


def resources_chart(run: RunRecord, ba: BenchmarkAnalysis,
                    colors: dict[str, str]) -> Chart | None:
    rows = [r for r in measured_results(ba, ba.info.primary_metric) if r.summary is not None]
    panels: list[tuple[str, str, Callable[[CaseResult], float | None]]] = [
        ("user CPU (s)", "s", lambda r: r.user_s),
        ("system CPU (s)", "s", lambda r: r.sys_s),
        ("max RSS (MiB)", "MiB", lambda r: None if r.max_rss_kib is None else r.max_rss_kib / 1024),
        ("trial wall time (s)", "s", lambda r: r.wall_s),
    ]
    if not any(get(r) is not None for _, _, get in panels for r in rows):
        return None
    fig = make_subplots(figure=new_figure(), rows=2, cols=2, subplot_titles=[p[0] for p in panels],
                        vertical_spacing=0.3, horizontal_spacing=0.1)
    for i, (_, unit, get) in enumerate(panels):
        row, col = i // 2 + 1, i % 2 + 1
        values: list[float] = []
        for variant, vrows in _by_variant(ba, rows).items():
            have = [(r, v) for r in vrows if (v := get(r)) is not None]
            values += [v for _, v in have]
            fig.add_trace(go.Bar(
                x=[chart_text(case_params_label(ba.info, r.case)) for r, _ in have],
                y=[float(v) for _, v in have], name=chart_text(variant), legendgroup=chart_text(variant),
                showlegend=i == 0, marker={"color": colors.get(variant)},
                text=[chart_text(variant) + f": {fmt_value(v, unit)}" for _, v in have],
                hovertemplate="%{x}<br>%{text}<extra></extra>", textposition="none",
            ), row=row, col=col)
        fig.update_yaxes(type="log" if spans_decades(values) else "linear", row=row, col=col)
    title = "resource usage per case"
    apply_layout(fig, title, height=680)
    fig.update_layout(barmode="group")
    note = ("Median over successful trials of the measured process's CPU time and peak RSS "
            "(getrusage), and of each trial's wall time.")
    return Chart("resources", title, note, fig)


def benchmark_charts(run: RunRecord, ba: BenchmarkAnalysis, colors: dict[str, str]) -> list[Chart]:
    """The detail charts in reading order: for each metric its value along each sweep (and,
    where the metric asks, its % overhead); then the declared counters, the primary metric's
    distribution, and resources."""
    primary = ba.info.primary_metric
    charts: list[Chart | None] = []
    for metric in ba.metrics:
        lines = sweeps(ba, metric)
        charts += [metric_chart(ba, s, metric, colors) for s in lines]
        if ba.info.metric(metric).get("overhead_pct"):
            charts += [overhead_chart(ba, s, metric, colors) for s in lines]
    # The primary metric's ratio to the baseline is the findings chart (findings_chart.py),
    # drawn once at the top of the benchmark's section, not again here.
    for counter in ba.info.counters:
        charts += [counter_chart(ba, s, counter, colors) for s in sweeps(ba, primary)]
    charts.append(distribution_chart(run, ba, primary, colors))
    charts.append(resources_chart(run, ba, colors))
    return [c for c in charts if c is not None]
