"""`bakeoff history page`: one self-contained HTML page of the history. plotly.js is inlined
(as report.html does, bakeoff/report/html.py): the page opens offline, from a file or a mail.

Per series a trend: each run's median, a band of each run's 95% CI, the change points as
vertical lines with the labels of the runs on each side and the levels before and after. Two
selectors filter the series by benchmark and by machine.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bakeoff.history.changes import Level
from bakeoff.history.listing import DRIFT_NOTE, SeriesHistory, format_value, labels_between
from bakeoff.report.html_page import esc, plotly_script, script_json
from bakeoff.store.results import utc_now, write_atomic


def _when(iso: str) -> str:
    """An ISO time as plotly reads a date axis (no offset: every run records UTC)."""
    return iso[:23].replace("T", " ")


def figure(sh: SeriesHistory) -> dict[str, Any]:
    """The trend of one series as a plotly figure (a dict)."""
    s, runs = sh.series, sh.runs
    x = [_when(r.when) for r in runs]
    hover = [f"{esc(r.when[:19])}<br>{esc(r.label_text)}<br>median "
             f"{esc(format_value(r.median, sh.unit))} [{esc(format_value(r.ci_low, sh.unit))}, "
             f"{esc(format_value(r.ci_high, sh.unit))}], n={r.n_trials}" for r in runs]
    data: list[dict[str, Any]] = [
        {"x": x, "y": [r.ci_high for r in runs], "mode": "lines", "line": {"width": 0},
         "hoverinfo": "skip", "showlegend": False, "name": "95% CI high"},
        {"x": x, "y": [r.ci_low for r in runs], "mode": "lines", "line": {"width": 0},
         "fill": "tonexty", "fillcolor": "rgba(31,119,180,0.2)", "hoverinfo": "skip",
         "name": "95% CI of each run"},
        {"x": x, "y": [r.median for r in runs], "mode": "lines+markers", "name": "median",
         "line": {"color": "#1f77b4"}, "text": hover, "hovertemplate": "%{text}<extra></extra>"},
    ]
    shapes: list[dict[str, Any]] = []
    notes: list[dict[str, Any]] = []
    drift = "" if sh.relative_to else f"{DRIFT_NOTE}: "
    for c in sh.changes:
        if not 0 < c.index < len(runs):
            continue
        at = x[c.index]
        shapes.append({"type": "line", "xref": "x", "yref": "paper", "x0": at, "x1": at,
                       "y0": 0, "y1": 1, "line": {"color": "#d62728", "dash": "dash"}})
        before_from = c.index - c.before.runs
        for lo, hi, level in ((before_from, c.index, c.before),
                              (c.index, c.index + c.after.runs, c.after)):
            shapes.append({"type": "line", "xref": "x", "yref": "y", "x0": x[lo], "x1": x[hi - 1],
                           "y0": level.median, "y1": level.median,
                           "line": {"color": "#d62728", "width": 1}})
        notes.append({"x": at, "y": 1, "xref": "x", "yref": "paper", "yanchor": "bottom",
                      "showarrow": False, "font": {"color": "#d62728", "size": 11},
                      "text": esc(f"{drift}×{c.ratio:.3f} [{c.ratio_ci_low:.3f}, "
                                 f"{c.ratio_ci_high:.3f}]: "
                                 f"{labels_between(sh, c.index - 1, c.index)} → "
                                 f"{labels_between(sh, c.index, c.index + 1)}")})
    layout = {"margin": {"l": 70, "r": 20, "t": 30, "b": 40}, "height": 320,
              "yaxis": {"title": {"text": esc(sh.unit_text or s.metric)}, "rangemode": "tozero"},
              "xaxis": {"type": "date"}, "shapes": shapes, "annotations": notes,
              "legend": {"orientation": "h", "y": -0.2}}
    return {"data": data, "layout": layout,
            "config": {"displaylogo": False, "responsive": True}}


def _changes_table(sh: SeriesHistory) -> str:
    return _changes_found(sh) + "".join(
        f'<p class="none">{esc(said)}</p>' for said in (sh.decided_instead, sh.better_hint)
        if said)


def _changes_found(sh: SeriesHistory) -> str:
    if not sh.changes:
        return f'<p class="none">no change of level found on {esc(sh.series.metric)}</p>'
    unit, rows = sh.unit, []
    drift = "" if sh.relative_to else f" ({esc(DRIFT_NOTE)})"
    for c in sh.changes:
        def level(v: Level) -> str:
            return (f"{format_value(v.median, unit)} [{format_value(v.ci_low, unit)}, "
                    f"{format_value(v.ci_high, unit)}]")
        rows.append(
            f"<tr><td>{esc(sh.runs[c.index].when[:19].replace('T', ' '))}</td>"
            f"<td>{esc(labels_between(sh, c.index - c.before.runs, c.index))}</td>"
            f"<td>{esc(level(c.before))}</td>"
            f"<td>{esc(labels_between(sh, c.index, c.index + c.after.runs))}</td>"
            f"<td>{esc(level(c.after))}</td>"
            f"<td>×{c.ratio:.3f} [{c.ratio_ci_low:.3f}, {c.ratio_ci_high:.3f}]{drift}</td></tr>")
    return ('<table class="changes"><tr><th>changed at</th><th>labels before</th>'
            "<th>level before (95% CI)</th><th>labels after</th><th>level after (95% CI)</th>"
            f"<th>ratio after/before (95% CI)</th></tr>{''.join(rows)}</table>")


def _runs_table(sh: SeriesHistory) -> str:
    unit = sh.unit
    rows = "".join(
        f"<tr><td>{esc(r.when[:19].replace('T', ' '))}</td><td>{esc(r.run_id)}</td>"
        f"<td>{esc(r.label_text)}</td><td>{esc(format_value(r.median, unit))}</td>"
        f"<td>[{esc(format_value(r.ci_low, unit))}, {esc(format_value(r.ci_high, unit))}]</td>"
        f"<td>{r.n_trials}</td></tr>" for r in sh.runs)
    return ('<details><summary>runs</summary><table><tr><th>when (UTC)</th><th>run</th>'
            "<th>labels</th><th>median</th><th>95% CI</th><th>trials</th></tr>"
            f"{rows}</table></details>")


def _options(values: list[str]) -> str:
    return '<option value="">all</option>' + "".join(
        f'<option value="{esc(v)}">{esc(v)}</option>' for v in values)


_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5rem; color: #222; }
h1 { font-size: 1.4rem; } h2 { font-size: 1.05rem; margin: 1.5rem 0 .25rem; }
.filters { position: sticky; top: 0; background: #fff; padding: .5rem 0; z-index: 2; }
.filters label { margin-right: 1.25rem; }
table { border-collapse: collapse; margin: .25rem 0; }
td, th { border: 1px solid #ddd; padding: .15rem .5rem; text-align: left; }
.chart { min-height: 320px; }
.none { color: #666; }
.hidden { display: none; }
"""

_INIT_JS = """
(function () {
  var figs = JSON.parse(document.getElementById("history-figures").textContent);
  Object.keys(figs).forEach(function (id) {
    Plotly.newPlot(id, figs[id].data, figs[id].layout, figs[id].config);
  });
  var bench = document.getElementById("filter-benchmark");
  var machine = document.getElementById("filter-machine");
  function apply() {
    var shown = 0;
    document.querySelectorAll("section.series").forEach(function (s) {
      var ok = (!bench.value || s.dataset.benchmark === bench.value) &&
               (!machine.value || s.dataset.machine === machine.value);
      s.classList.toggle("hidden", !ok);
      if (ok) { shown++; var c = s.querySelector(".plotly-chart"); Plotly.Plots.resize(c); }
    });
    document.getElementById("shown").textContent = shown;
  }
  bench.addEventListener("change", apply);
  machine.addEventListener("change", apply);
  apply();
})();
"""


def render(found: list[SeriesHistory], source: str) -> str:
    figs: dict[str, Any] = {}
    sections = []
    for i, sh in enumerate(found):
        chart_id = f"series-{i}"
        figs[chart_id] = figure(sh)
        s = sh.series
        sections.append(
            f'<section class="series" data-benchmark="{esc(s.benchmark)}" '
            f'data-machine="{esc(s.machine_name)}"><h2>{esc(sh.title)}</h2>'
            f'<p>{len(sh.runs)} runs; {esc(sh.unit_text or "no unit")}, '
            f'{"lower" if s.lower_is_better else "higher"} is better</p>'
            f'<div class="chart plotly-chart" id="{chart_id}"></div>'
            f"{_changes_table(sh)}{_runs_table(sh)}</section>")
    benches = sorted({sh.series.benchmark for sh in found})
    machines = sorted({sh.series.machine_name for sh in found})
    return (
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
        "script-src 'unsafe-inline' 'unsafe-eval'; style-src 'unsafe-inline'; img-src data:\">"
        f"<title>bakeoff history</title><style>{_CSS}</style></head><body>"
        f"<h1>bakeoff history</h1><p>{len(found)} series from {esc(source)}, written "
        f"{esc(utc_now()[:19].replace('T', ' '))} UTC. The line is each run's median, the band "
        "each run's 95% CI; a dashed red line is a change of level, with the ratio after/"
        "before (95% CI) and the labels of the runs on each side. A variant with a baseline is "
        "drawn as its per-round ratio to the baseline measured in the same run; a baseline (or "
        "a series without one) as its absolute level, whose changes include the machine's "
        "drift.</p>"
        '<div class="filters"><label>benchmark <select id="filter-benchmark">'
        f"{_options(benches)}</select></label><label>machine <select id=\"filter-machine\">"
        f"{_options(machines)}</select></label><span><span id=\"shown\">{len(found)}</span> "
        f"series shown</span></div>{''.join(sections)}"
        f'<script id="history-figures" type="application/json">{script_json(figs)}</script>'
        f'<script id="plotly-js">{plotly_script()}</script><script>{_INIT_JS}</script>'
        "</body></html>")


def write_page(found: list[SeriesHistory], source: str, out: Path) -> None:
    write_atomic(out, render(found, source))
