"""What every HTML page of bakeoff shares: the style sheet, the script that draws the
charts, escaping, and the figures a page collects.

Safety rules, because names, params, host facts and error text come from outside:
- every string from the data goes through `esc` (html.escape) before it touches markup;
- figures travel as JSON inside <script type="application/json">, with '<', '>' and '&'
  written as \\u escapes, so no data can close the script element or open a comment;
- nothing is loaded by URL: no <script src>, <link>, <img> or web font.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

import plotly.offline

from bakeoff.report.charts import Chart, figure_json

CSS = """
:root { --fg: #1d232a; --muted: #5f6b76; --line: #dde3e8; --warn-bg: #fff4d6;
  --warn-line: #e0a800; --faster: #1a7f37; --slower: #c62828; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1280px; padding: 1.5rem 2rem 4rem; color: var(--fg);
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial,
  sans-serif; }
h1 { font-size: 1.6rem; margin: 0 0 .25rem; }
h2 { font-size: 1.3rem; margin: 2.5rem 0 .5rem; padding-top: .5rem;
  border-top: 2px solid var(--line); }
h3 { font-size: 1.05rem; margin: 1.75rem 0 .25rem; }
.muted, .note { color: var(--muted); }
.note { margin: 0 0 .5rem; font-size: .9rem; }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  font-size: .85rem; }
nav ul { display: flex; flex-wrap: wrap; gap: .25rem 1.25rem; padding: 0; list-style: none; }
.warnings { background: var(--warn-bg); border-left: 5px solid var(--warn-line);
  padding: .75rem 1rem; margin: 1rem 0; }
.warnings h2 { border: 0; margin: 0 0 .25rem; padding: 0; font-size: 1.1rem; }
.warnings ul { margin: .25rem 0; padding-left: 1.25rem; }
.ok { color: var(--faster); }
.chart { width: 100%; min-height: 460px; }
.chart.tall { min-height: 680px; }
.table-wrap { overflow-x: auto; max-height: 80vh; border: 1px solid var(--line); }
table { border-collapse: collapse; width: 100%; font-size: .88rem; }
th, td { padding: .3rem .6rem; border-bottom: 1px solid var(--line); text-align: left;
  vertical-align: top; }
th { background: #f4f6f8; position: sticky; top: 0; white-space: nowrap; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.fact { white-space: pre-wrap; word-break: break-word; }
.swatch { display: inline-block; width: .75em; height: .75em; border-radius: 2px;
  margin-right: .35em; vertical-align: baseline; }
.faster { color: var(--faster); font-weight: 600; }
.slower { color: var(--slower); font-weight: 600; }
.same, .na { color: var(--muted); }
.inconclusive { color: var(--muted); font-style: italic; }
.baseline-tag { color: var(--muted); font-size: .8em; }
details pre { background: #f6f8fa; padding: .5rem .75rem; overflow-x: auto;
  white-space: pre-wrap; }
header p { margin: 0; }
#findings { margin: .75rem 0 0; }
#findings h2 { border: 0; margin: 0 0 .25rem; padding: 0; }
#findings ul, .lead ul { margin: .25rem 0; padding-left: 1.1rem; }
#findings li { margin: .1rem 0; }
.lead li { margin: .2rem 0; }
/* The answers on the first screen, a benchmark a line or two, above its first chart. */
#findings ul { font-size: .85em; line-height: 1.3; }
#findings .note { font-size: .85rem; }
.tentative { color: #3d4852; }
.why { color: var(--muted); font-size: .85em; }
h1 { margin: 0; }
.lead { display: grid; grid-template-columns: minmax(0, 5fr) minmax(0, 7fr); gap: 1.25rem;
  align-items: start; }
.lead .chart { min-height: 0; }
@media (max-width: 1000px) { .lead { grid-template-columns: 1fr; } }
.compact { margin-top: .75rem; }
.compact td { white-space: nowrap; }
details.more { margin: 1rem 0; border: 1px solid var(--line); border-radius: 4px;
  padding: .25rem .75rem; }
details.more > summary { cursor: pointer; font-weight: 600; padding: .25rem 0; }
details.warnings { padding: .35rem 1rem; margin: .5rem 0; }
details.warnings > summary { cursor: pointer; font-weight: 600; }
nav { margin: .5rem 0 0; font-size: .9rem; }
nav ul { margin: 0; }
section > h2 { margin-top: 1rem; }
/* The first screen: the findings and most of the first chart at 1400x900. The title and
   the links share a row, the run's lines are set small (the findings' too, above). */
.masthead { display: flex; flex-wrap: wrap; align-items: baseline; gap: .25rem 2rem; }
.masthead nav { margin: 0; }
header .warnings { padding: .3rem .75rem; margin: .5rem 0; font-size: .9rem; }
header p.muted { font-size: .9rem; }
"""

# Runs after plotly.js: draws every figure from the JSON block.
INIT_JS = """
(function () {
  var figs = JSON.parse(document.getElementById("bakeoff-figures").textContent);
  function draw(id) { var f = figs[id]; return Plotly.newPlot(id, f.data, f.layout, f.config); }
  var ids = Object.keys(figs);
  var first = ids.filter(function (id) { return !document.getElementById(id).closest("details"); });
  var rest = ids.filter(function (id) { return first.indexOf(id) < 0; });
  first.forEach(draw);
  (function next() {
    if (!rest.length) return;
    draw(rest.shift());
    setTimeout(next, 0);
  })();
  document.querySelectorAll("details").forEach(function (d) {
    d.addEventListener("toggle", function () {
      if (d.open) d.querySelectorAll(".plotly-chart").forEach(function (c) {
        if (c.querySelector(".main-svg")) Plotly.Plots.resize(c);
      });
    });
  });
})();
"""


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def script_json(obj: Any) -> str:
    """JSON that is safe as the text of a <script> element and still valid JSON."""
    text = json.dumps(obj, separators=(",", ":"), allow_nan=False, ensure_ascii=False)
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                          ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(char, escaped)
    return text


def plotly_script() -> str:
    """plotly.js from the installed package, as the body of one inline <script>."""
    js = str(plotly.offline.get_plotlyjs())
    # Defensive: the bundle holds neither today, but either would end the element early.
    return js.replace("</script", "<\\/script").replace("<!--", "<\\!--")


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-") or "chart"


class Figures:
    """Collects figures as they are placed, so each div and its JSON share one id."""

    def __init__(self) -> None:
        self.entries: dict[str, Any] = {}

    def place(self, chart: Chart, bench: str, heading: bool = True) -> str:
        chart_id = self._add(figure_json(chart.figure), f"{bench}-{chart.kind}")
        tall = " tall" if chart.kind == "resources" else ""
        div = f'<div class="chart plotly-chart{tall}" id="{chart_id}"></div>'
        if not heading:  # the figure's own title heads it; the note goes under it
            return f'{div}<p class="note">{esc(chart.note)}</p>'
        return f"<h3>{esc(chart.title)}</h3><p class=\"note\">{esc(chart.note)}</p>{div}"

    def place_figure(self, fig: dict[str, Any], name: str) -> str:
        """A figure already a plotly dict (a flame graph), drawn tall, its title its own."""
        return f'<div class="chart plotly-chart tall" id="{self._add(fig, name)}"></div>'

    def _add(self, fig: dict[str, Any], name: str) -> str:
        chart_id = f"chart-{len(self.entries) + 1}"
        fig["config"] = {
            "displaylogo": False, "responsive": True,
            # The report is offline and private: no button that uploads a chart anywhere.
            "showSendToCloud": False, "showEditInChartStudio": False,
            "modeBarButtonsToRemove": ["sendChartToCloud", "sendDataToCloud", "editInChartStudio"],
            "toImageButtonOptions": {"format": "png", "scale": 2,
                                     "filename": _slug(f"{name}-{chart_id}")},
        }
        self.entries[chart_id] = fig
        return chart_id
