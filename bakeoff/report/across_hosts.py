"""The report across hosts: report.html and report.md with the host as an axis.

Every table has a column (or row) per host, every chart a trace per host. Built from
HostsAnalysis alone; write_host_reports is the one place that writes files.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import plotly.graph_objects as go

from bakeoff.analysis.across_hosts import DIFFERS, HostRun, HostsAnalysis, to_json
from bakeoff.analysis.within_run import BenchmarkAnalysis, CaseResult
from bakeoff.declare.model import BenchmarkInfo, Case
from bakeoff.report.across_hosts_answers import questions_html, questions_markdown
from bakeoff.report.across_hosts_counters import counters_sentence, render_hosts_details
from bakeoff.report.across_hosts_counters import differing_table as counters_table
from bakeoff.report.across_hosts_counters import html_section as counters_html
from bakeoff.report.across_hosts_counters import markdown_section as counters_markdown
from bakeoff.report.across_hosts_findings import all_findings_across
from bakeoff.report.charts import (
    Chart,
    Sweep,
    apply_layout,
    chart_text,
    new_figure,
    sweep_x,
    sweep_x_axis,
    sweeps,
)
from bakeoff.report.colors import PALETTE, with_alpha
from bakeoff.report.facts import machine
from bakeoff.report.findings import Finding
from bakeoff.report.format import (
    case_params_label,
    fmt_p,
    fmt_range,
    fmt_ratio,
    fmt_value,
    params_label,
)
from bakeoff.report.html_page import CSS, INIT_JS, Figures, esc, plotly_script, script_json
from bakeoff.report.md_text import md_escape
from bakeoff.report.words import crossover_sentence, fit_sentence, lower_is_better
from bakeoff.store.results import write_atomic


def host_colors(labels: list[str]) -> dict[str, str]:
    return {h: PALETTE[i % len(PALETTE)] for i, h in enumerate(labels)}


def _bench(h: HostRun, name: str) -> BenchmarkAnalysis | None:
    return next((b for b in h.analysis.benchmarks if b.info.name == name), None)


def _info(a: HostsAnalysis, name: str) -> BenchmarkInfo:
    return next(h.run.benchmarks[name] for h in a.hosts if name in h.run.benchmarks)


# ---- tables as text cells, shared by html and markdown ----

def ratio_table(a: HostsAnalysis, bench: str) -> tuple[list[str], list[list[str]], list[str]]:
    """Headers, rows and verdicts: a row per case, a column per host (ratio and CI)."""
    info = _info(a, bench)
    headers = ["variant", "params", *(f"{h}: ratio vs {info.baseline} (95% CI)" for h in a.labels),
               "across hosts", "Cochran's Q (df), p after Holm", "furthest apart"]
    rows, verdicts = [], []
    for c in a.cases.get(bench, []):
        cells = [c.case.variant, case_params_label(info, c.case)]
        for h in a.labels:
            r = c.ratios().get(h)
            res = c.results.get(h)
            verdict = f", {res.verdict}" if res is not None and res.verdict else ""
            cells.append(fmt_ratio(r.ratio, r.ci_low, r.ci_high) + verdict if r else "—")
        q = "—" if math.isnan(c.test.q) else f"{c.test.q:.2f} ({c.test.df}), {fmt_p(c.p_holm)}"
        rows.append([*cells, c.verdict, q, c.spread or "—"])
        verdicts.append(c.verdict)
    return headers, rows, verdicts


def median_table(a: HostsAnalysis, bench: str) -> tuple[list[str], list[list[str]]]:
    """The primary metric's median per case and host, the baseline's too."""
    info = _info(a, bench)
    metric = info.primary_metric
    unit = str(info.metric(metric)["unit"])
    per_host: dict[str, dict[Case, str]] = {}
    cases: list[Case] = []
    for h in a.hosts:
        ba = _bench(h, bench)
        if ba is None:
            continue
        for r in ba.for_metric(metric):
            if r.case not in cases:
                cases.append(r.case)
            s = r.summary
            per_host.setdefault(h.label, {})[r.case] = (
                f"{fmt_value(s.median, unit)} ({fmt_range(s.ci_low, s.ci_high, unit)}), "
                f"{s.n_trials} trials" if s else "no data")
    headers = ["variant", "params", *(f"{h}: median {metric} (95% CI)" for h in a.labels)]
    rows = [[c.variant + (" (baseline)" if c.variant == info.baseline else ""),
             case_params_label(info, c), *(per_host.get(h, {}).get(c, "—") for h in a.labels)]
            for c in sorted(cases, key=lambda c: c.key)]
    return headers, rows


def skip_rows(a: HostsAnalysis, bench: str) -> list[list[str]]:
    info = _info(a, bench)
    return [[h.label, s.case.variant, case_params_label(info, s.case), s.reason]
            for h in a.hosts for s in h.run.skips if s.case.benchmark == bench]


def failure_rows(a: HostsAnalysis, bench: str) -> list[list[str]]:
    return [[h.label, t.case.key, (t.error or t.status).strip().splitlines()[-1:][0]
             if (t.error or t.status).strip() else t.status]
            for h in a.hosts for t in h.run.trials if t.case.benchmark == bench and not t.ok]


def per_host_sentences(a: HostsAnalysis, bench: str) -> list[tuple[str, list[str]]]:
    """Crossovers and fitted lines, host by host."""
    out = []
    for h in a.hosts:
        ba = _bench(h, bench)
        if ba is None:
            out.append((h.label, ["did not run this benchmark"]))
            continue
        lines = [crossover_sentence(ba, sc) for sc in ba.crossovers]
        lines += [fit_sentence(ba, sf) for sf in ba.fits]
        out.append((h.label, lines or ["no crossover along any swept param"]))
    return out


def fleet_rows(a: HostsAnalysis) -> tuple[list[str], list[list[str]]]:
    phases = ("connect", "push", "setup", "run", "fetch")
    headers = ["host", "status", "reachable", "exit", "reason", "run IDs",
               *(f"{p} (s)" for p in phases), "results size"]
    rows = []
    fleet = a.fleet
    for h in (fleet.hosts.values() if fleet else []):
        secs = h.phase_seconds()
        rows.append([h.host, h.status, {True: "yes", False: "no", None: "—"}[h.reachable],
                     "—" if h.exit_status is None else str(h.exit_status), h.reason or "—",
                     ", ".join(h.run_ids) or "—",
                     *("—" if secs.get(p) is None else f"{secs[p]:.1f}" for p in phases),
                     f"{h.results_bytes / 1e6:.1f} MB"])
    return headers, rows


def host_rows(a: HostsAnalysis) -> tuple[list[str], list[list[str]]]:
    headers = ["host", "machine", "run", "status", "seed", "started", "results"]
    rows = [[h.label, machine(h.run.host).sentence(), h.run.run_id, h.run.status,
             str(h.run.seed), h.run.started_at, str(h.run_dir)] for h in a.hosts]
    return headers, rows


def terminal_lines(a: HostsAnalysis) -> list[tuple[str, str]]:
    """What the terminal says after the report across hosts, as (text, rich style): each case
    whose ratio differs and the counters that differ with it, then every host's warnings."""
    out = []
    for bench, cases in a.cases.items():
        out += [(f"differs across hosts: {c.case.key}: {c.spread}", "")
                for c in cases if c.verdict == DIFFERS]
        sentence = counters_sentence(a, bench)
        if sentence is not None and a.counters is not None and a.counters.differing(bench):
            out.append((f"{bench}: {sentence}", ""))
    return out + [(f"warning: {w}", "yellow") for w in a.warnings]


# ---- charts: one trace per host ----

def _reference(a: HostsAnalysis, bench: str) -> BenchmarkAnalysis:
    """The host with the most measured cases decides the sweeps the charts draw."""
    present = [b for b in (_bench(h, bench) for h in a.hosts) if b is not None]
    return max(present, key=lambda b: len(b.results))


def _results_by_host(a: HostsAnalysis, bench: str, metric: str) -> dict[str, dict[Case, CaseResult]]:
    out: dict[str, dict[Case, CaseResult]] = {}
    for h in a.hosts:
        ba = _bench(h, bench)
        out[h.label] = {r.case: r for r in ba.for_metric(metric)} if ba else {}
    return out


def host_charts(a: HostsAnalysis, bench: str) -> list[Chart]:
    ref = _reference(a, bench)
    info = ref.info
    metric = info.primary_metric
    colors = host_colors(a.labels)
    per_host = _results_by_host(a, bench, metric)
    charts: list[Chart] = []
    for sweep in sweeps(ref, metric):
        variants = list(dict.fromkeys(r.case.variant for r in sweep.results))
        for variant in variants:
            if variant == info.baseline:
                continue
            chart = _ratio_by_host(a, ref, sweep, variant, per_host, colors)
            if chart is not None:
                charts.append(chart)
        charts.append(_medians_by_host(a, ref, sweep, per_host, colors))
    return charts


def _sweep_words(ref: BenchmarkAnalysis, sweep: Sweep) -> str:
    axis = f" vs {sweep.param}" if sweep.param else " per case"
    return axis + (f" at {params_label(ref.info, sweep.fixed)}" if sweep.fixed else "")


def _ratio_by_host(a: HostsAnalysis, ref: BenchmarkAnalysis, sweep: Sweep, variant: str,
                   per_host: dict[str, dict[Case, CaseResult]], colors: dict[str, str]) -> Chart | None:
    fig = new_figure()
    cases = [r.case for r in sweep.results if r.case.variant == variant]
    drawn = 0
    for host in a.labels:
        pts = [(c, q) for c in cases
               if (res := per_host[host].get(c)) is not None and (q := res.vs_baseline) is not None]
        if not pts:
            continue
        drawn += 1
        xs = [sweep_x(ref, sweep, c) for c, _ in pts]
        rs = [q for _, q in pts]
        color = colors[host]
        if sweep.param is not None:
            fig.add_trace(go.Scatter(
                x=xs + xs[::-1], y=[q.ci_high for q in rs] + [q.ci_low for q in rs][::-1],
                fill="toself", fillcolor=with_alpha(color, 0.18), line={"width": 0},
                hoverinfo="skip", showlegend=False, legendgroup=chart_text(host)))
        fig.add_trace(go.Scatter(
            x=xs, y=[q.ratio for q in rs], name=chart_text(host), legendgroup=chart_text(host),
            mode="lines+markers" if sweep.param else "markers",
            line={"color": color}, marker={"color": color, "size": 8},
            error_y=None if sweep.param else {
                "type": "data", "symmetric": False, "array": [q.ci_high - q.ratio for q in rs],
                "arrayminus": [q.ratio - q.ci_low for q in rs]},
            text=[chart_text(f"{host}: {variant} vs {ref.info.baseline}, "
                     f"{case_params_label(ref.info, c)}") + "<br>ratio (95% CI): "
                  + fmt_ratio(q.ratio, q.ci_low, q.ci_high) for (c, _), q in zip(pts, rs, strict=True)],
            hovertemplate="%{text}<extra></extra>"))
    if not drawn:
        return None
    fig.add_hline(y=1, line={"dash": "dash", "color": "#555555", "width": 1})
    title = f"{variant} / {ref.info.baseline} per host{_sweep_words(ref, sweep)}"
    apply_layout(fig, title)
    fig.update_layout(legend={"title": {"text": "host"}})
    sweep_x_axis(fig, ref, sweep)
    ends = [q for host in a.labels for c in cases
            if (res := per_host[host].get(c)) is not None and (r := res.vs_baseline) is not None
            for q in (r.ci_low, r.ci_high)]
    span = [v for v in ends if v > 0]
    log_y = bool(span) and max(span) / min(span) > 30
    fig.update_yaxes(type="log" if log_y else "linear",
                     title={"text": chart_text(f"ratio to {ref.info.baseline}")})
    better = "below 1 the variant is faster" if lower_is_better(ref, ref.info.primary_metric) \
        else "above 1 the variant is better"
    note = (f"One trace per host: the ratio of medians ({variant} / {ref.info.baseline}) within "
            f"that host's run, with its 95% CI; {better}.")
    return Chart("ratio", title, note, fig)


_DASHES = ("solid", "dot", "dash", "longdash", "dashdot", "longdashdot")


def _medians_by_host(a: HostsAnalysis, ref: BenchmarkAnalysis, sweep: Sweep,
                     per_host: dict[str, dict[Case, CaseResult]], colors: dict[str, str]) -> Chart:
    metric = ref.info.primary_metric
    unit = str(ref.info.metric(metric)["unit"])
    fig = new_figure()
    variants = list(dict.fromkeys(r.case.variant for r in sweep.results))
    for host in a.labels:
        for i, variant in enumerate(variants):
            pts = [(r.case, s) for r in sweep.results if r.case.variant == variant
                   if (res := per_host[host].get(r.case)) is not None
                   and (s := res.summary) is not None]
            if not pts:
                continue
            fig.add_trace(go.Scatter(
                x=[sweep_x(ref, sweep, c) for c, _ in pts], y=[s.median for _, s in pts],
                name=chart_text(f"{host} · {variant}"), legendgroup=chart_text(host),
                mode="lines+markers" if sweep.param else "markers",
                line={"color": colors[host], "dash": _DASHES[i % len(_DASHES)]},
                marker={"color": colors[host], "size": 7, "symbol": i % 20},
                error_y={"type": "data", "symmetric": False,
                         "array": [s.ci_high - s.median for _, s in pts],
                         "arrayminus": [s.median - s.ci_low for _, s in pts]},
                text=[chart_text(f"{host}: {variant}, {case_params_label(ref.info, c)}")
                      + f"<br>median {fmt_value(s.median, unit)}" for c, s in pts],
                hovertemplate="%{text}<extra></extra>"))
    title = f"{metric} median per host and variant{_sweep_words(ref, sweep)}"
    apply_layout(fig, title)
    fig.update_layout(legend={"title": {"text": "host · variant"}})
    sweep_x_axis(fig, ref, sweep)
    fig.update_yaxes(type="log", title={"text": chart_text(f"{metric} ({unit})")})
    note = ("One colour per host, one dash per variant: each host's median with its 95% CI. "
            "Absolute times differ between machines; the ratios above are what compares.")
    return Chart("metric", title, note, fig)


# ---- html ----

_HOST_CSS = """
td.differs, tr.differs td { background: #fff4d6; }
td.verdict-differs { color: var(--slower); font-weight: 600; }
td.verdict-holds { color: var(--faster); }
"""


def _html_table(headers: list[str], rows: list[list[str]],
                row_class: Callable[[int, int], str] | None = None) -> str:
    body = [[(esc(cell), row_class(i, j) if row_class else "") for j, cell in enumerate(row)]
            for i, row in enumerate(rows)]
    return html_table([(h, False) for h in headers], body)


def _findings_list(found: list[Finding]) -> str:
    return "<ul>" + "".join(f'<li class="{"tentative" if f.tentative else ""}">{esc(f.text)}</li>'
                            for f in found) + "</ul>"


def _html_bench(a: HostsAnalysis, bench: str, index: int, figs: Figures,
                found: list[Finding]) -> str:
    info = _info(a, bench)
    headers, rows, verdicts = ratio_table(a, bench)
    vcol = len(headers) - 3

    def vclass(i: int, j: int) -> str:
        if j != vcol:
            return ""
        return "verdict-differs" if verdicts[i] == DIFFERS else (
            "verdict-holds" if verdicts[i].startswith("holds") else "")

    differs = sum(v == DIFFERS for v in verdicts)
    parts = [f'<section id="bench-{index}"><h2>{esc(info.title)} <span class="muted mono">'
             f"{esc(info.name)}</span></h2>", _findings_list(found),
             f"<p>{esc(info.summary)}</p>",
             f"<p><b>{differs}</b> of {len(verdicts)} cases differ between hosts; the others hold "
             "on every host that measured them.</p>",
             f"<h3>Ratio to {esc(info.baseline)}, per host</h3>",
             f'<p class="note">{esc(verdict_rule_hosts(a.threshold))}</p>',
             _html_table(headers, rows, vclass)]
    mh, mrows = median_table(a, bench)
    parts += [f"<h3>Medians per host ({esc(info.primary_metric)})</h3>", _html_table(mh, mrows)]
    if a.counters is not None and a.counters.by_benchmark.get(bench):
        ch, crows, _ = counters_table(a, bench)
        parts.append(counters_html(a, bench, _html_table(ch, crows) if crows else ""))
    parts.append("<h3>Crossovers and fits, per host</h3><ul>")
    for host, lines in per_host_sentences(a, bench):
        parts.append(f"<li><b>{esc(host)}</b><ul>"
                     + "".join(f"<li>{esc(x)}</li>" for x in lines) + "</ul></li>")
    parts.append("</ul>")
    parts += [figs.place(c, info.name) for c in host_charts(a, bench)]
    skips = skip_rows(a, bench)
    if skips:
        parts += [f"<h3>Skipped cases, per host ({len(skips)})</h3>",
                  _html_table(["host", "variant", "params", "why"], skips)]
    fails = failure_rows(a, bench)
    if fails:
        parts += [f"<h3>Failed trials, per host ({len(fails)})</h3>",
                  _html_table(["host", "case", "error"], fails)]
    parts.append("</section>")
    return "".join(parts)


def verdict_rule_hosts(threshold: float) -> str:
    return ("Across hosts: Cochran's Q on the hosts' log ratios (each weighted by its bootstrap "
            "CI), Holm-corrected across the benchmark's cases. A case differs when that p is "
            f"below 0.05, the hosts' ratios lie more than {threshold * 100:g}% apart and the "
            "CIs of the two furthest apart do not overlap; can't tell when a host has fewer "
            "than 5 trials of the case or its baseline; otherwise it holds on every host (no "
            "difference of that size shown). A host's own "
            "verdict (faster/slower/same) follows its ratio.")


def _facts_html(a: HostsAnalysis) -> str:
    n = sum(r.differs for r in a.facts)
    headers = ["fact", *a.labels]
    rows = [[r.fact, *(r.values[h] for h in a.labels)] for r in a.facts]
    return (f"<p><b>{n}</b> facts differ between the hosts; they come first, highlighted.</p>"
            + _html_table(headers, rows,
                          lambda i, j: "differs" if a.facts[i].differs and j > 0 else "fact"))


def render_hosts_html(a: HostsAnalysis) -> str:
    figs = Figures()
    benches = list(a.cases)
    found = all_findings_across(a)
    sections = "".join(_html_bench(a, b, i, figs, found.get(b, []))
                       for i, b in enumerate(benches))
    top = "".join(f'<li><a href="#bench-{i}"><b>{esc(b)}</b></a>: {esc(found[b][0].text)}</li>'
                  for i, b in enumerate(benches) if found.get(b))
    findings = (f'<section id="findings"><h2>Findings</h2><ul>{top}</ul><p class="note">Each '
                "benchmark's section opens with the winner at the points its findings speak of, "
                "with every host's ratio and 95% CI.</p></section>")
    nav = "".join(f'<li><a href="#bench-{i}">{esc(_info(a, b).title)}</a></li>'
                  for i, b in enumerate(benches))
    warnings = "".join(f"<li>{esc(w)}</li>" for w in a.warnings)
    warn = (f'<section class="warnings" id="warnings"><h2>⚠ Warnings ({len(a.warnings)})</h2>'
            f"<ul>{warnings}</ul></section>" if a.warnings else "")
    fh, frows = fleet_rows(a)
    fleet = (f"<h3>Fleet run {esc(a.fleet.fleet_run)} at commit <code>{esc(a.fleet.commit[:12])}"
             f"</code></h3>{_html_table(fh, frows)}" if a.fleet else "")
    hh, hrows = host_rows(a)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>bakeoff report across hosts: {esc(', '.join(a.labels))}</title>"
        f"<style>{CSS}{_HOST_CSS}</style></head><body>"
        f"<header><h1>bakeoff across {len(a.hosts)} hosts</h1><p class=\"muted\">Hosts: "
        f"<b>{esc(', '.join(a.labels))}</b>. Each host's ratios come from its own run; the "
        "columns put them side by side and a test across hosts says whether they agree.</p>"
        f"</header>{questions_html(a)}{findings}{warn}"
        f'<nav><ul>{nav}<li><a href="#hosts">Hosts and their facts</a></li></ul></nav>'
        f"{sections}"
        f'<section id="hosts"><h2>Hosts and their facts</h2>{_html_table(hh, hrows)}{fleet}'
        f"<h3>Host facts side by side</h3>{_facts_html(a)}</section>"
        f'<script id="plotly-js">{plotly_script()}</script>'
        f'<script type="application/json" id="bakeoff-figures">{script_json(figs.entries)}'
        f"</script><script>{INIT_JS}</script></body></html>\n")


# ---- markdown ----

def render_hosts_markdown(a: HostsAnalysis) -> str:
    out = [f"# bakeoff across {len(a.hosts)} hosts: {md_escape(', '.join(a.labels))}", "",
           "Each host's ratios come from its own run; the tables put them side by side and a "
           "test across hosts says whether they agree.", ""]
    found = all_findings_across(a)
    out += questions_markdown(a)
    out += ["## Findings", ""]
    out += [f"- **{md_escape(b)}**: {md_escape(fs[0].text)}" for b, fs in found.items() if fs]
    out += [""]
    if a.warnings:
        out += [f"## Warnings ({len(a.warnings)})", ""]
        out += [f"- ⚠ {md_escape(w)}" for w in a.warnings] + [""]
    for bench in a.cases:
        info = _info(a, bench)
        headers, rows, verdicts = ratio_table(a, bench)
        out += [f"## {md_escape(info.title)} ({md_escape(info.name)})", ""]
        out += [f"- {md_escape(f.text)}" for f in found.get(bench, [])] + [""]
        out += [f"**{sum(v == DIFFERS for v in verdicts)}** of {len(verdicts)} cases differ "
                "between hosts.", "", md_escape(verdict_rule_hosts(a.threshold)), "",
                f"### Ratio to {md_escape(info.baseline)}, per host", ""]
        out += md_table([(h, False) for h in headers], rows)
        mh, mrows = median_table(a, bench)
        out += ["", f"### Medians per host ({md_escape(info.primary_metric)})", ""]
        out += md_table([(h, False) for h in mh], mrows)
        out += counters_markdown(a, bench)
        out += ["", "### Crossovers and fits, per host", ""]
        for host, lines in per_host_sentences(a, bench):
            out += [f"- **{md_escape(host)}**"] + [f"  - {md_escape(x)}" for x in lines]
        skips = skip_rows(a, bench)
        if skips:
            out += ["", f"### Skipped cases, per host ({len(skips)})", ""]
            out += md_table([(h, False) for h in ("host", "variant", "params", "why")], skips)
        fails = failure_rows(a, bench)
        if fails:
            out += ["", f"### Failed trials, per host ({len(fails)})", ""]
            out += md_table([(h, False) for h in ("host", "case", "error")], fails)
        out.append("")
    out += ["## Hosts and their facts", ""]
    hh, hrows = host_rows(a)
    out += md_table([(h, False) for h in hh], hrows)
    if a.fleet:
        fh, frows = fleet_rows(a)
        out += ["", f"### Fleet run {md_escape(a.fleet.fleet_run)} at commit "
                    f"{md_escape(a.fleet.commit[:12])}", ""]
        out += md_table([(h, False) for h in fh], frows)
    n = sum(r.differs for r in a.facts)
    out += ["", "### Host facts side by side", "",
            f"**{n}** facts differ between the hosts; they come first, marked ≠.", ""]
    out += md_table([(h, False) for h in ["fact", *a.labels]],
                    [[("≠ " if r.differs else "") + r.fact, *(r.values[h] for h in a.labels)]
                     for r in a.facts])
    return "\n".join(out) + "\n"


def write_host_reports(a: HostsAnalysis, out_dir: Path,
                       postprocess: Callable[[str, str], str] | None = None) -> list[Path]:
    """report.html, report.md, details.md (every counter per host) and hosts.json into out_dir.

    postprocess(name, text) -> text is applied to each file's text before it is written:
    the hook for a redactor (bakeoff report --redact) to scrub what leaves the machine.
    """
    outputs = [("report.html", render_hosts_html(a)), ("report.md", render_hosts_markdown(a)),
               ("details.md", render_hosts_details(a)), ("hosts.json", to_json(a))]
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in outputs:
        path = out_dir / name
        write_atomic(path, postprocess(name, text) if postprocess else text)
        paths.append(path)
    return paths
