"""One self-contained HTML report: plotly.js inlined, no network access of any kind.

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
from collections.abc import Sequence
from typing import Any

import plotly.offline

from bakeoff.analysis.within_run import Analysis, BenchmarkAnalysis
from bakeoff.declare.model import RunRecord
from bakeoff.perf.store import LoadedPair
from bakeoff.report.charts import Chart, benchmark_charts, figure_json
from bakeoff.report.colors import variant_colors
from bakeoff.report.compact import CompactTable, compact_table
from bakeoff.report.counted import (
    counter_words,
    counting_cost_line,
    counting_cost_table,
    per_op_tables,
)
from bakeoff.report.facts import flatten_facts, machine, run_rows
from bakeoff.report.findings import BenchmarkFindings, Finding, all_findings, tentative_count
from bakeoff.report.findings_chart import findings_chart
from bakeoff.report.format import case_params_label
from bakeoff.report.profiles_html import profiles_section
from bakeoff.report.tables import (
    case_columns,
    case_rows,
    counter_tables,
    failed_trials,
    failure_heading,
    failure_text,
)
from bakeoff.report.words import (
    better_phrase,
    crossover_sentence,
    fit_sentence,
    verdict_rule,
)

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
.baseline-tag { color: var(--muted); font-size: .8em; }
details pre { background: #f6f8fa; padding: .5rem .75rem; overflow-x: auto;
  white-space: pre-wrap; }
header p { margin: 0; }
#findings { margin: .75rem 0 0; }
#findings h2 { border: 0; margin: 0 0 .25rem; padding: 0; }
#findings ul, .lead ul { margin: .25rem 0; padding-left: 1.1rem; }
#findings li, .lead li { margin: .2rem 0; }
/* The answers on the first screen, a benchmark a line or two, above its first chart. */
#findings ul { font-size: .9em; line-height: 1.35; }
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
details.warnings { padding: .35rem 1rem; margin: .75rem 0; }
details.warnings > summary { cursor: pointer; font-weight: 600; }
nav { margin: .5rem 0 0; font-size: .9rem; }
nav ul { margin: 0; }
section > h2 { margin-top: 1.5rem; }
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


_VERDICT_CLASS = {"faster": "faster", "slower": "slower", "same": "same", "equivalent": "same",
                  "—": "", "n/a": "na"}


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


def html_table(headers: list[tuple[str, bool]], rows: list[list[tuple[str, str]]]) -> str:
    """headers: (text, numeric); rows: cells of (already-escaped html, css class)."""
    head = "".join(f'<th class="{"num" if num else ""}">{esc(h)}</th>' for h, num in headers)
    body = "".join(
        "<tr>" + "".join(f'<td class="{cls}">{cell}</td>' for cell, cls in row) + "</tr>"
        for row in rows
    )
    return (f'<div class="table-wrap"><table><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>")


def _facts_table(rows: list[tuple[str, str]]) -> str:
    return html_table([("fact", False), ("value", False)],
                  [[(f"<code>{esc(k)}</code>", ""), (esc(v), "fact")] for k, v in rows])


def _variant_cell(name: str, color: str, is_baseline: bool) -> str:
    tag = ' <span class="baseline-tag">(baseline)</span>' if is_baseline else ""
    return f'<span class="swatch" style="background:{esc(color)}"></span>{esc(name)}{tag}'


def _case_tables(ba: BenchmarkAnalysis, colors: dict[str, str]) -> str:
    parts: list[str] = []
    for metric in ba.metrics:
        rows = case_rows(ba, metric)
        if not rows:
            continue
        cols = case_columns(ba, signed=ba.info.is_signed(metric))
        unit = str(ba.info.metric(metric)["unit"])
        better = better_phrase(ba, metric)
        body: list[list[tuple[str, str]]] = []
        for r in rows:
            cells: list[tuple[str, str]] = []
            for c in cols:
                if c.key == "variant":
                    color = colors.get(r.result.case.variant, "#000")
                    cells.append((_variant_cell(r.cells["variant"], color, r.is_baseline), ""))
                elif c.key == "verdict":
                    cells.append((esc(r.cells["verdict"]), _VERDICT_CLASS[r.verdict]))
                else:
                    cells.append((esc(r.cells[c.key]), "num" if c.numeric else ""))
            body.append(cells)
        parts.append(f"<h3>Cases: {esc(metric)} ({esc(unit)}, {esc(better)})</h3>")
        parts.append(html_table([(c.header, c.numeric) for c in cols], body))
    return "".join(parts)


def _counter_tables(ba: BenchmarkAnalysis) -> str:
    tables = counter_tables(ba)
    if not tables:
        return ""
    parts = [f"<h3>Counters ({len(tables)}): median over each case's successful trials</h3>"]
    for t in tables:
        rows = [[(esc(label), ""), *((esc(c), "num") for c in cells)] for label, cells in t.rows]
        parts.append(f"<h4>{esc(t.name)}</h4>"
                     f"{html_table([('params', False), *((v, True) for v in t.variants)], rows)}")
    return "".join(parts)


def _counted(ba: BenchmarkAnalysis) -> str:
    """What the counted samples say (report/counted.py): the cost of counting, and the
    counters per operation of every case, collapsed. Empty for a run without them."""
    cost = counting_cost_line(ba)
    tables = per_op_tables(ba)
    if cost is None and not tables:
        return ""
    out = f'<p class="note">{esc(cost[0].upper() + cost[1:])}.</p>' if cost else ""
    costs = counting_cost_table(ba)
    if costs is not None:
        out += (f'<details class="more"><summary>Cost of counting per case: '
                f"{esc(ba.info.primary_metric)} of the counted samples over the measured ones"
                "</summary>" + html_table([(h, i >= 2) for i, h in enumerate(costs[0])],
                                      [[(esc(c), "num" if i >= 2 else "") for i, c in enumerate(row)]
                                       for row in costs[1]]) + "</details>")
    if tables:
        parts = [f"<h4>{esc(counter_words(t.name))}</h4>"
                 + html_table([(h, i >= 2) for i, h in enumerate(t.headers)],
                          [[(esc(c), "num" if i >= 2 else "") for i, c in enumerate(row)]
                           for row in t.rows]) for t in tables]
        out += (f'<details class="more"><summary>Counters per operation ({len(tables)}, from '
                "the counted samples): median and 95% CI over trials, and the ratio to "
                f"{esc(ba.info.baseline)} at the same params</summary>{''.join(parts)}</details>")
    return out


def _crossovers(ba: BenchmarkAnalysis) -> str:
    if not ba.crossovers:
        return ('<p class="muted">No crossover: along every swept param each variant stays on '
                "one side of the baseline.</p>")
    items = "".join(f"<li>{esc(crossover_sentence(ba, sc))}</li>" for sc in ba.crossovers)
    return f"<ul>{items}</ul>"


def _fits(ba: BenchmarkAnalysis) -> str:
    if not ba.fits:
        return ""
    items = "".join(f"<li>{esc(fit_sentence(ba, sf))}</li>" for sf in ba.fits)
    return f"<h3>Fitted lines</h3><ul>{items}</ul>"


def _verdict_rule(ba: BenchmarkAnalysis) -> str:
    return esc(verdict_rule(ba.threshold))


def _skips_and_failures(run: RunRecord, ba: BenchmarkAnalysis) -> str:
    parts: list[str] = []
    if ba.skips:
        items = "".join(
            f"<li><b>{esc(s.case.variant)}</b>, {esc(case_params_label(ba.info, s.case))}: "
            f"{esc(s.reason)}</li>" for s in ba.skips
        )
        parts.append(f"<h3>Skipped cases ({len(ba.skips)})</h3><ul>{items}</ul>")
    failed = failed_trials(run, ba)
    if failed:
        items = "".join(
            f"<details open><summary>{esc(failure_heading(ba, t))}</summary>"
            f"<pre>{esc(failure_text(t))}</pre></details>" for t in failed
        )
        parts.append(f"<h3>Failed trials ({len(failed)})</h3>{items}")
    return "".join(parts)


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


_WHY = re.compile(r" (\[tentative: [^\]]*\])")


def _finding_html(text: str) -> str:
    """The sentence, its '[tentative: …]' set in a quieter type so the figures stand out."""
    return _WHY.sub(r' <span class="why">\1</span>', esc(text))


def _finding_item(f: Finding) -> str:
    asked = f"<b>{esc(f.question)}</b> " if f.question else ""
    return (f'<li class="{"tentative" if f.tentative else ""}">{asked}'
            f"{_finding_html(f.text)}</li>")


def _findings_lists(bf: BenchmarkFindings) -> str:
    """The answers to the benchmark's questions, then the generic contrasts under their own
    heading (only the latter, unheaded, for a benchmark that declares no question)."""
    answers = "".join(_finding_item(f) for f in bf.answers)
    others = "".join(_finding_item(f) for f in bf.findings)
    if not answers:
        return f"<ul>{others}</ul>"
    return (f'<ul class="answers">{answers}</ul>'
            + (f"<h3>Other contrasts</h3><ul>{others}</ul>" if others else ""))


def _compact(table: CompactTable | None, colors: dict[str, str]) -> str:
    """The compact table: each variant's column headed by its colour, as in the charts."""
    if table is None:
        return ""
    head = (f"<th>{esc(table.label_header)}</th>"
            + "".join(f'<th class="num">{_variant_cell(v, colors.get(v, "#000"), False)}</th>'
                      for v in table.variants)
            + '<th class="num">trials</th>')
    body = "".join(
        f"<tr><td>{esc(r.label)}</td>"
        + "".join(f'<td class="num {_VERDICT_CLASS.get(c.verdict or "", "")}">{esc(c.text)}</td>'
                  for c in r.cells)
        + f'<td class="num">{esc(r.trials)}</td></tr>' for r in table.rows)
    return (f'<div class="compact table-wrap"><table><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>")


def _benchmark(run: RunRecord, bf: BenchmarkFindings, index: int, figs: Figures) -> str:
    ba = bf.analysis
    info = ba.info
    colors = variant_colors(info)
    metric = info.metric(info.primary_metric)
    better = better_phrase(ba, str(metric["name"]))
    variants = "".join(
        f"<li>{_variant_cell(name, colors.get(name, '#000'), name == info.baseline)}: "
        f"{esc(v.get('description', ''))}</li>"
        for v in info.variants for name in [str(v["name"])]
    )
    table = compact_table(ba)
    intro = table.legend if table else f"Baseline {info.baseline}."
    if table and table.constant:
        intro += f" Every case at {table.constant}."
    headline = findings_chart(ba, colors)
    chart = figs.place(headline, info.name, heading=False) if headline else ""
    charts = "".join(figs.place(c, info.name) for c in benchmark_charts(run, ba, colors))
    details = (
        f"<p>{esc(info.summary)}</p>"
        f"<p>Baseline: <b>{esc(info.baseline)}</b>. Primary metric: <b>{esc(metric['name'])}</b> "
        f"({esc(metric['unit'])}, {esc(better)}) — {esc(metric.get('description', ''))}. "
        "Ratios are variant median / baseline median.</p>"
        f"<ul>{variants}</ul><p class=\"note\">{_verdict_rule(ba)}</p>"
        f"<h3>Crossovers</h3>{_crossovers(ba)}{_fits(ba)}"
        f"{charts}{_case_tables(ba, colors)}{_counter_tables(ba)}"
        f"{_skips_and_failures(run, ba)}"
    )
    return (
        f'<section id="bench-{index}"><h2>{esc(info.title)} <span class="muted mono">'
        f"{esc(info.name)}</span></h2>"
        f'<div class="lead"><div><p class="note">{esc(intro)}</p>'
        f"{_findings_lists(bf)}</div>"
        f"<div>{chart}</div></div>{_compact(table, colors)}{_counted(ba)}"
        f'<details class="more"><summary>Details of {esc(info.name)}: every metric, its '
        "charts and full tables, counters, skipped cases, failed trials</summary>"
        f"{details}</details></section>"
    )


def _warnings(run: RunRecord, analysis: Analysis) -> str:
    """Collapsed under a line that counts them; an incomplete run is said in the open."""
    items = [f"<li>{esc(w)}</li>" for w in [*run.warnings, *analysis.warnings]]
    banner = ""
    if run.status != "complete":
        banner = (f'<p class="warnings">This run is <b>{esc(run.status)}</b>: the figures cover '
                  "only the trials recorded before it stopped.</p>")
    if not items:
        return banner + '<p class="ok">No noise warnings for this run.</p>'
    return (f'{banner}<details class="warnings" id="warnings"><summary>⚠ Warnings '
            f"({len(items)}): conditions that widen intervals or bias figures</summary>"
            f"<ul>{''.join(items)}</ul></details>")


def _top_findings(found: list[BenchmarkFindings]) -> str:
    items = "".join(
        f'<li><a href="#bench-{i}"><b>{esc(bf.analysis.info.name)}</b></a>: '
        f"{' '.join(_finding_html(f.brief or f.headline_text) for f in bf.headline)}</li>"
        for i, bf in enumerate(found))
    total = sum(len(bf.every) for bf in found)
    unsure = sum(tentative_count(bf.every) for bf in found)
    note = (f"{unsure} of the {total} findings are tentative, each saying why in grey brackets; "
            "more trials (--trials 10) settle those held back by too few."
            if unsure else "Every finding is settled: enough trials, and no CI reaches a "
            "verdict's threshold.")
    # Each answer's why is in its benchmark's section, beside its chart.
    return (f'<section id="findings"><h2>Findings</h2><ul>{items}</ul>'
            f'<p class="note">{esc(note)} Every figure is a ratio of medians to the baseline (or '
            "a median) with its 95% CI and its trials.</p></section>")


def render_html(run: RunRecord, analysis: Analysis, profiles: Sequence[LoadedPair] = ()) -> str:
    """Opens on the findings and, per benchmark, the chart they stand on; the rest of the
    figures, tables and facts are in collapsed <details> below; then the flame graphs of
    `bakeoff profile`, when there are any."""
    figs = Figures()
    found = all_findings(analysis)
    sections = "".join(_benchmark(run, bf, i, figs) for i, bf in enumerate(found))
    sections += profiles_section(profiles, run.benchmarks, figs.place_figure)
    nav = "".join(f'<li><a href="#bench-{i}" title="{esc(ba.info.title)}">{esc(ba.info.name)}'
                  "</a></li>" for i, ba in enumerate(analysis.benchmarks))
    if profiles:
        nav += '<li><a href="#profiles">Profiles</a></li>'
    m = machine(run.host)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>bakeoff report {esc(run.run_id)}</title><style>{CSS}</style></head><body>"
        f"<header><h1>bakeoff report</h1><p class=\"muted\">Run <code>{esc(run.run_id)}</code> "
        f"on <b>{esc(m.sentence())}</b>; profile {esc(run.profile)}, started "
        f"{esc(run.started_at)}. Every figure below is from this run.</p></header>"
        f"{_top_findings(found)}{_warnings(run, analysis)}"
        f'<nav><ul>{nav}<li><a href="#environment">Environment</a></li></ul></nav>'
        f"{sections}"
        '<details class="more" id="environment"><summary>Environment: the run and the host'
        f"</summary><h3>Run</h3>{_facts_table(run_rows(run))}<h3>Host facts</h3>"
        f"{_facts_table(flatten_facts(run.host))}</details>"
        f'<script id="plotly-js">{plotly_script()}</script>'
        f'<script type="application/json" id="bakeoff-figures">{script_json(figs.entries)}'
        f"</script><script>{INIT_JS}</script></body></html>\n"
    )
