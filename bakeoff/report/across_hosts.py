"""The report across hosts: report.html and report.md with the host as an axis.

Every table has a column (or row) per host, every chart a trace per host. Built from
HostsAnalysis alone, once, as sections (hosts_page) that report.html and report.md render
through the exporters; write_host_reports hands them to the one writer (report/writer.py).
"""

from __future__ import annotations

import math
from pathlib import Path

import plotly.graph_objects as go

from bakeoff.analysis.across_hosts import DIFFERS, HostRun, HostsAnalysis, to_json
from bakeoff.analysis.within_run import BenchmarkAnalysis, CaseResult
from bakeoff.declare.model import BenchmarkInfo, Case
from bakeoff.report.across_hosts_answers import questions_section
from bakeoff.report.across_hosts_counters import (
    counters_section,
    counters_sentence,
    render_hosts_details,
)
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
from bakeoff.report.exporters import HtmlExporter, MarkdownExporter
from bakeoff.report.facts import machine
from bakeoff.report.findings import Finding
from bakeoff.report.format import (
    case_params_label,
    fmt_p,
    fmt_ratio,
    fmt_value,
    fmt_with_ci,
    params_label,
)
from bakeoff.report.sections import (
    Block,
    Figure,
    Item,
    Items,
    Page,
    Paragraph,
    Section,
    Table,
    strong,
    table,
)
from bakeoff.report.words import crossover_sentence, fit_sentence, lower_is_better
from bakeoff.report.writer import Postprocess, write_outputs


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
                f"{fmt_with_ci(s.median, s.ci_low, s.ci_high, unit, '')}, "
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


def _findings_list(found: list[Finding]) -> Items:
    return Items(tuple(Item((f.text,), style="tentative" if f.tentative else "") for f in found))


def _ratio_table(a: HostsAnalysis, bench: str) -> tuple[Table, list[str]]:
    headers, rows, verdicts = ratio_table(a, bench)
    vcol = len(headers) - 3
    styles = {(i, vcol): "verdict-differs" if v == DIFFERS else
              "verdict-holds" if v.startswith("holds") else "" for i, v in enumerate(verdicts)}
    return table(headers, rows, styles), verdicts


def _cases_across(a: HostsAnalysis, verdicts: list[str]) -> Paragraph:
    """How many cases differ and hold: said only of what two hosts or more measured."""
    if len(a.hosts) < 2:
        return Paragraph((f"One host's results: its {len(verdicts)} cases are not compared "
                          "across hosts.",))
    differs = sum(v == DIFFERS for v in verdicts)
    holds = sum(v.startswith("holds") for v in verdicts)
    rest = len(verdicts) - differs - holds
    return Paragraph((strong(differs), f" of {len(verdicts)} cases differ between hosts, "
                      f"{holds} hold on every host that measured them"
                      + (f", {rest} are not compared (one host) or can't tell" if rest else "")
                      + "."))


def _bench_section(a: HostsAnalysis, bench: str, index: int, found: list[Finding]) -> Section:
    info = _info(a, bench)
    ratios, verdicts = _ratio_table(a, bench)
    mh, mrows = median_table(a, bench)
    rule = (Paragraph((verdict_rule_hosts(a.threshold),), "note"),) if len(a.hosts) >= 2 else ()
    blocks: list[Block] = [
        _findings_list(found),
        Paragraph((info.summary,)),
        _cases_across(a, verdicts),
        Section(f"Ratio to {info.baseline}, per host", (*rule, ratios), level=3),
        Section(f"Medians per host ({info.primary_metric})", (table(mh, mrows),), level=3),
        *counters_section(a, bench),
        Section("Crossovers and fits, per host", (Items(tuple(
            Item((strong(host),), children=tuple(Item((x,)) for x in lines))
            for host, lines in per_host_sentences(a, bench))),), level=3),
        *(Figure(c, info.name) for c in host_charts(a, bench)),
    ]
    skips = skip_rows(a, bench)
    if skips:
        blocks.append(Section(f"Skipped cases, per host ({len(skips)})",
                              (table(["host", "variant", "params", "why"], skips),), level=3))
    fails = failure_rows(a, bench)
    if fails:
        blocks.append(Section(f"Failed trials, per host ({len(fails)})",
                              (table(["host", "case", "error"], fails),), level=3))
    return Section(info.title, tuple(blocks), anchor=f"bench-{index}", aside=info.name)


def verdict_rule_hosts(threshold: float) -> str:
    return ("Across hosts: Cochran's Q on the hosts' log ratios (each weighted by its bootstrap "
            "CI), Holm-corrected across the benchmark's cases. A case differs when that p is "
            f"below 0.05, the hosts' ratios lie more than {threshold * 100:g}% apart and the "
            "CIs of the two furthest apart do not overlap; can't tell when a host has fewer "
            "than 5 trials of the case or its baseline, or when the two furthest apart are one "
            "machine (one boot or machine id); otherwise it holds on every host (no "
            "difference of that size shown). A host's own "
            "verdict (faster/slower/equivalent/inconclusive) follows its ratio.")


def _hosts_section(a: HostsAnalysis) -> Section:
    hh, hrows = host_rows(a)
    blocks: list[Block] = [table(hh, hrows)]
    if a.fleet:
        fh, frows = fleet_rows(a)
        blocks.append(Section(f"Fleet run {a.fleet.fleet_run} at commit {a.fleet.commit[:12]}",
                              (table(fh, frows),), level=3))
    n = sum(r.differs for r in a.facts)
    facts = table(["fact", *a.labels],
                  [[("≠ " if r.differs else "") + r.fact, *(r.values[h] for h in a.labels)]
                   for r in a.facts],
                  {(i, j): "differs" if r.differs and j > 0 else "fact"
                   for i, r in enumerate(a.facts) for j in range(len(a.labels) + 1)})
    blocks.append(Section("Host facts side by side", (
        Paragraph((strong(n), " facts differ between the hosts; they come first, marked ≠ "
                   "(highlighted in report.html).")), facts), level=3))
    return Section("Hosts and their facts", tuple(blocks), anchor="hosts")


def hosts_title(a: HostsAnalysis) -> str:
    """"across N hosts" only where there are hosts to compare."""
    if len(a.hosts) < 2:
        return (f"bakeoff on one host, {a.labels[0] if a.labels else 'none'}: nothing "
                "compared across hosts (one host's results came back)")
    return f"bakeoff across {len(a.hosts)} hosts"


def hosts_page(a: HostsAnalysis) -> Page:
    """report.html and report.md across hosts: the questions per host, the findings, the
    warnings, a section per benchmark, the hosts and their facts."""
    benches = list(a.cases)
    found = all_findings_across(a)
    top = tuple(Item((strong(b), f": {found[b][0].text}"), link=f"bench-{i}")
                for i, b in enumerate(benches) if found.get(b))
    findings = Section("Findings", (Items(top), Paragraph((
        "Each benchmark's section opens with the winner at the points its findings speak of, "
        "with every host's ratio and 95% CI.",), "note")), anchor="findings")
    warnings: list[Block] = [Section(f"Warnings ({len(a.warnings)})",
                                     (Items(tuple(Item((f"⚠ {w}",)) for w in a.warnings)),),
                                     anchor="warnings", style="warnings")] if a.warnings else []
    labels = ", ".join(a.labels)
    return Page(
        title=hosts_title(a),
        html_title=f"bakeoff report across hosts: {labels}",
        intro=(Paragraph(("Hosts: ", strong(labels), ". Each host's ratios come from its own "
                          "run; the tables put them side by side and a test across hosts says "
                          "whether they agree."), "muted"),),
        lead=(*questions_section(a), findings, *warnings),
        nav=(*((f"bench-{i}", _info(a, b).title, "") for i, b in enumerate(benches)),
             ("hosts", "Hosts and their facts", "")),
        body=(*(_bench_section(a, b, i, found.get(b, [])) for i, b in enumerate(benches)),
              _hosts_section(a)),
        css=_HOST_CSS)


def render_hosts_html(a: HostsAnalysis) -> str:
    return HtmlExporter().page(hosts_page(a))


def render_hosts_markdown(a: HostsAnalysis) -> str:
    return MarkdownExporter().page(hosts_page(a))


def write_host_reports(a: HostsAnalysis, out_dir: Path,
                       postprocess: Postprocess | None = None) -> list[Path]:
    """report.html, report.md, details.md (every counter per host) and hosts.json into out_dir.

    postprocess(name, text) -> text is applied to each file's text before it is written:
    the hook for a redactor (bakeoff report --redact) to scrub what leaves the machine.
    """
    page = hosts_page(a)
    return write_outputs(out_dir, [
        ("report.html", HtmlExporter().page(page)), ("report.md", MarkdownExporter().page(page)),
        ("details.md", render_hosts_details(a)), ("hosts.json", to_json(a)),
    ], postprocess)
