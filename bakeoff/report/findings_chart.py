"""The chart a benchmark's findings stand on: its primary metric's ratio to the baseline along
the sweep, one panel per group of the other params, the 95% CI as a band, the line at 1 (and
the declared levels), and each crossover marked where it lies. Without a ratio (the baseline
does not report the metric), the medians with their CIs instead.
"""

from __future__ import annotations

import math

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from bakeoff.analysis.within_run import BenchmarkAnalysis, CaseResult, SweepCrossover
from bakeoff.report.charts import FONT, Chart, chart_text, new_figure
from bakeoff.report.colors import with_alpha
from bakeoff.report.format import fmt_ratio, fmt_value, scale_for, spans_decades
from bakeoff.report.grid import Grid, Params, Point, grid, point_label, trials_of
from bakeoff.report.words import crossover_label, lower_is_better

MAX_COLUMNS = 3  # panels side by side; the chart shares its row with the findings
PANEL_HEIGHT = 300


def _x(g: Grid, point: Point, variant: str) -> float | str:
    """The swept value; with nothing swept, the variant itself, one column each."""
    if g.axis is None:
        return chart_text(variant)
    return float(dict(point.params)[g.axis])


def _y(g: Grid, r: CaseResult, divisor: float) -> tuple[float, float, float] | None:
    """(point, low, high) drawn for one case: its ratio, or its median when there is none."""
    if g.with_ratios:
        q = r.vs_baseline
        return (q.ratio, q.ci_low, q.ci_high) if q else None
    s = r.summary
    return (s.median / divisor, s.ci_low / divisor, s.ci_high / divisor) if s else None


def _hover(ba: BenchmarkAnalysis, g: Grid, r: CaseResult) -> str:
    where = point_label(ba, g, r.case.params) or "every case"
    if g.with_ratios and r.vs_baseline is not None:
        q = r.vs_baseline
        what = (f"ratio to {ba.info.baseline}: {fmt_ratio(q.ratio, q.ci_low, q.ci_high)}"
                f"<br>verdict: {r.verdict or 'n/a'}")
    elif r.summary is not None:
        s = r.summary
        what = (f"median {fmt_value(s.median, r.unit)} "
                f"(95% CI {fmt_value(s.ci_low, r.unit)} to {fmt_value(s.ci_high, r.unit)})")
    else:
        what = "no data"
    return f"{chart_text(r.case.variant)}, {chart_text(where)}<br>{what}<br>{trials_of(r)} trials"


def _crossovers_in(ba: BenchmarkAnalysis, g: Grid, fixed: Params) -> list[SweepCrossover]:
    constant = dict(g.constant)
    return [sc for sc in ba.crossovers if sc.param == g.axis
            and tuple((k, v) for k, v in sc.fixed.items() if k not in constant) == fixed]


def findings_chart(ba: BenchmarkAnalysis, colors: dict[str, str]) -> Chart | None:
    g = grid(ba)
    groups = [(fixed, points) for fixed, points in g.groups
              if any(_y(g, r, 1.0) for p in points for r in p.results)]
    if not groups:
        return None
    base, metric = ba.info.baseline, g.metric
    unit = str(ba.info.metric(metric)["unit"])
    medians = [r.summary.median for _, ps in groups for p in ps for r in p.results if r.summary]
    divisor, shown_unit = (1.0, unit) if g.with_ratios else scale_for(
        sorted(medians)[len(medians) // 2], unit)
    cols = min(MAX_COLUMNS, len(groups))
    rows = math.ceil(len(groups) / cols)
    titles = [chart_text(point_label(ba, g, fixed)) if fixed else "" for fixed, _ in groups]
    fig = make_subplots(figure=new_figure(), rows=rows, cols=cols,
                        subplot_titles=titles if len(groups) > 1 else None,
                        horizontal_spacing=0.08, vertical_spacing=0.18 if rows > 1 else 0.1)
    legend_done: set[str] = set()
    all_y: list[float] = []
    panel_y: list[list[float]] = []
    for i, (fixed, points) in enumerate(groups):
        row, col = i // cols + 1, i % cols + 1
        panel_y.append([])
        for v in ba.info.variants:
            name = str(v["name"])
            drawn = [(p, r, y) for p in points if (r := p.of(name)) is not None
                     and (y := _y(g, r, divisor)) is not None]
            if not drawn:
                continue
            color = colors.get(name, "#000000")
            xs = [_x(g, p, name) for p, _, _ in drawn]
            all_y += [b for _, _, y in drawn for b in y[1:]]
            panel_y[-1] += [b for _, _, y in drawn for b in y[1:]]
            if g.axis is not None and len(drawn) > 1:
                # The CI as a band: upper edge left to right, lower edge back.
                fig.add_trace(go.Scatter(
                    x=xs + xs[::-1], y=[y[2] for *_, y in drawn] + [y[1] for *_, y in drawn][::-1],
                    fill="toself", fillcolor=with_alpha(color, 0.18), line={"width": 0},
                    mode="lines",  # plotly's default adds markers at the band's corners
                    hoverinfo="skip", showlegend=False, legendgroup=chart_text(name)), row=row, col=col)
            fig.add_trace(go.Scatter(
                x=xs, y=[y[0] for *_, y in drawn], name=chart_text(name), legendgroup=chart_text(name),
                showlegend=name not in legend_done,
                mode="lines+markers" if g.axis is not None else "markers",
                line={"color": color}, marker={"color": color, "size": 7},
                error_y=None if g.axis is not None and len(drawn) > 1 else {
                    "type": "data", "symmetric": False,
                    "array": [y[2] - y[0] for *_, y in drawn],
                    "arrayminus": [y[0] - y[1] for *_, y in drawn]},
                text=[_hover(ba, g, r) for _, r, _ in drawn],
                hovertemplate="%{text}<extra></extra>"), row=row, col=col)
            legend_done.add(name)
        if g.with_ratios:
            for level in (1.0, *ba.info.crossover_ratios):
                fig.add_hline(y=level, row=row, col=col, line={
                    "dash": "dash" if level == 1.0 else "dot", "width": 1,
                    "color": "#555555" if level == 1.0 else "#999999"})
            found = _crossovers_in(ba, g, fixed)
            if found:
                fig.add_trace(go.Scatter(
                    x=[sc.crossover.estimate for sc in found],
                    y=[sc.crossover.level for sc in found], mode="markers",
                    name="crossover", legendgroup="crossover",
                    showlegend="crossover" not in legend_done,
                    marker={"symbol": "diamond-open", "size": 13, "line": {"width": 2},
                            "color": [colors.get(sc.variant, "#000000") for sc in found]},
                    text=[chart_text(f"{sc.variant}: {crossover_label(ba, sc)}") for sc in found],
                    hovertemplate="%{text}<extra></extra>"), row=row, col=col)
                legend_done.add("crossover")
        if g.axis is not None:
            xs_all = sorted({float(dict(p.params)[g.axis]) for p in points})
            fig.update_xaxes(
                type="log" if spans_decades(xs_all) else "linear", row=row, col=col,
                tickmode="array" if len(xs_all) <= 8 else "auto", tickvals=xs_all,
                ticktext=[chart_text(ba.info.param_label(g.axis, x)) for x in xs_all],
                title={"text": chart_text(g.axis) if row == rows else ""})
        else:
            fig.update_xaxes(type="category", row=row, col=col, showticklabels=False)
    positive = [y for y in all_y if y > 0]
    log_y = len(positive) == len(all_y) and spans_decades([*positive, 1.0])
    better = "lower" if lower_is_better(ba, metric) else "higher"
    shown = f"|{metric}|" if ba.info.is_signed(metric) else metric
    y_title = (f"ratio to {base}" if g.with_ratios else f"{shown} ({shown_unit})")
    if log_y:
        fig.update_yaxes(type="log", exponentformat="e")  # 1e-04, not 100µ
        for i, ys in enumerate(panel_y):
            # A label per decade where a panel spans decades (plotly's 2 and 5 between them
            # crowd a short panel); within one decade plotly's own labels, or there'd be none.
            if spans_decades([*ys, 1.0], 1.0):
                fig.update_yaxes(dtick=1, row=i // cols + 1, col=i % cols + 1)
    else:
        fig.update_yaxes(type="linear")
    fig.update_yaxes(title={"text": chart_text(y_title)}, col=1)
    title = (f"{shown} ratio to {base} ({better} is better)" if g.with_ratios
             else f"{shown}, median ({better} is better)")
    fig.update_layout(
        title={"text": chart_text(title), "x": 0, "xanchor": "left"}, template="plotly_white",
        height=PANEL_HEIGHT * rows + 90, font={"family": FONT, "size": 12},
        margin={"l": 60, "r": 20, "t": 60, "b": 50}, hovermode="closest",
        legend={"orientation": "h", "y": -0.12 if rows == 1 else -0.06, "x": 0,
                "yanchor": "top"})
    band = "bands" if g.axis is not None else "bars"
    note = (f"Ratio of medians, variant / {base}; {band} are its 95% CI (trial-t: t over "
            f"trials). The dashed line is 1 (no difference); ◇ marks a crossover."
            if g.with_ratios else
            f"Median per case; {band} are its 95% CI. {base} reports no {metric}, so there "
            "is no ratio to it.")
    return Chart("ratio", title, note, fig)
