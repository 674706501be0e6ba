"""The report layer on a synthetic run whose answer is known.

The run: memcpy (baseline) costs 70 ns + 0.06 ns/B, mremap a flat 6 µs, so mremap loses at
16 and 64 KiB and wins at 256 KiB and 1 MiB (one crossover between 64 and 256 KiB); a third
variant, named like an XSS payload, replays memcpy's samples exactly (ratio 1, its CI a point:
"equivalent").
"""

from __future__ import annotations

import html
import io
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import plotly.offline  # type: ignore[import-untyped]
import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from bakeoff.analysis.within_run import Analysis, analyze
from bakeoff.declare.model import (
    Benchmark,
    Case,
    Metric,
    Param,
    Profile,
    RunRecord,
    Rusage,
    Skip,
    Trial,
    Variant,
)
from bakeoff.report import write_reports
from bakeoff.report.colors import BASELINE_COLOR, PALETTE, variant_colors
from bakeoff.report.format import fmt_number, fmt_ratio, fmt_value
from bakeoff.report.html import render_html, script_json
from bakeoff.report.markdown import md_escape, render_details, render_markdown
from bakeoff.report.terminal import print_summary

XSS = "<script>alert(1)</script>"
HOST_CPU = 'Intel "Xeon" </script><script>alert("host")</script>'
KIB = 1024
SIZES = [16 * KIB, 64 * KIB, 256 * KIB, 1024 * KIB]
METRIC = "ns_per_op"
TRIALS, SAMPLES = 5, 20


def _benchmark() -> Benchmark:
    return Benchmark(
        name="fake-move",
        title="Fake move vs copy",
        summary="A synthetic benchmark for the report tests.",
        variants=(
            Variant("memcpy", "copy the bytes", baseline=True),
            Variant("mremap", "move the page tables"),
            Variant(XSS, "a name that must stay text"),
        ),
        params=(Param("size", "bytes", "bytes moved"),),
        metrics=(Metric(METRIC, "ns", "time per operation"),),
        profiles={"quick": Profile("quick", {"size": tuple(SIZES)}, TRIALS, SAMPLES)},
        program="fake",
    )


def _true_ns(variant: str, size: int) -> float:
    return 6000.0 if variant == "mremap" else 70.0 + 0.06 * size


def _trial(case: Case, index: int, samples: list[float]) -> Trial:
    return Trial(
        case=case, index=index, round=index, status="ok", started_at="2026-11-01T10:00:00Z",
        wall_s=0.01 + sum(samples) / 1e9, exit_code=0, samples={METRIC: samples},
        counters={"events_lost": 0.0}, meta={"timer_overhead_ns": 18.5},
        rusage=Rusage(user_s=sum(samples) / 1e9, sys_s=0.002,
                      max_rss_kib=2000 + int(case.param("size")) // KIB),
    )


def make_run() -> RunRecord:
    bench = _benchmark()
    rng = np.random.default_rng(7)
    cases: list[Case] = []
    trials: list[Trial] = []
    memcpy_samples: dict[int, list[list[float]]] = {}
    for size in SIZES:
        for variant in ("memcpy", "mremap", XSS):
            case = Case(bench.name, variant, (("size", size),))
            cases.append(case)
            if variant == XSS and size == SIZES[-1]:
                continue  # skipped below: listed as a case, never run
            for i in range(TRIALS):
                if variant == XSS:
                    samples = memcpy_samples[size][i]
                else:
                    drift = 1 + 0.02 * rng.standard_normal()
                    noise = 1 + 0.01 * rng.standard_normal(SAMPLES)
                    samples = [float(x) for x in _true_ns(variant, size) * drift * noise]
                    if variant == "memcpy":
                        memcpy_samples.setdefault(size, []).append(samples)
                trials.append(_trial(case, i, samples))
    failed_case = Case(bench.name, "mremap", (("size", SIZES[-1]),))
    trials.append(Trial(
        case=failed_case, index=TRIALS, round=TRIALS, status="failed",
        started_at="2026-11-01T10:01:00Z", wall_s=0.5, exit_code=1, samples={}, counters={},
        meta={}, rusage=None, error="fake exited with status 1: mremap: Cannot allocate memory",
        stderr_tail="mremap: Cannot allocate memory",
    ))
    skip = Skip(Case(bench.name, XSS, (("size", SIZES[-1]),)), "needs THP: set it to madvise")
    return RunRecord(
        schema_version=1, run_id="20261101-100000-fake-move", status="complete",
        started_at="2026-11-01T10:00:00Z", finished_at="2026-11-01T10:02:00Z",
        argv=["bakeoff", "run", "fake-move", "--profile", "quick"], profile="quick", seed=42,
        host={"hostname": "kvm-bench-1", "kernel": "6.18.0-test", "cpu_model": HOST_CPU,
              "cpus": 2, "thp": {"enabled": "madvise", "defrag": "never"},
              "loadavg": [0.12, 0.3, 0.25], "cmdline": "quiet | mitigations=off"},
        warnings=["cpufreq governor is powersave: expect noise (cpupower frequency-set -g "
                  "performance)"],
        benchmarks={bench.name: bench.info()}, cases=cases, skips=[skip], trials=trials,
    )


@pytest.fixture(scope="module")
def run() -> RunRecord:
    return make_run()


@pytest.fixture(scope="module")
def analysis(run: RunRecord) -> Analysis:
    return analyze(run)


@pytest.fixture(scope="module")
def report_html(run: RunRecord, analysis: Analysis) -> str:
    return render_html(run, analysis)


@pytest.fixture(scope="module")
def figures(report_html: str) -> dict[str, Any]:
    m = re.search(r'<script type="application/json" id="bakeoff-figures">(.*?)</script>',
                  report_html, re.S)
    assert m, "figure JSON block missing"
    figs: dict[str, Any] = json.loads(m.group(1))
    return figs


def _pooled_median(run: RunRecord, variant: str, size: int) -> float:
    pooled = [v for t in run.trials if t.ok and t.case.variant == variant
              and t.case.param("size") == size for v in t.samples[METRIC]]
    return float(np.median(pooled))


def _without_plotly(text: str) -> str:
    js = plotly.offline.get_plotlyjs()
    assert js in text, "plotly.js must be inlined verbatim"
    return text.replace(js, "")


# ---- files ---------------------------------------------------------------------------------

def test_write_reports_writes_the_three_files_and_leaves_no_temp(
    run: RunRecord, analysis: Analysis, tmp_path: Path
) -> None:
    (tmp_path / "report.md").write_text("stale")
    paths = write_reports(run, analysis, tmp_path)
    assert paths == [tmp_path / "report.html", tmp_path / "report.md", tmp_path / "details.md"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["details.md", "report.html", "report.md"]
    assert paths[1].read_text(encoding="utf-8").startswith("# bakeoff results: ")
    assert paths[2].read_text(encoding="utf-8").startswith("# bakeoff details: ")
    assert "<!DOCTYPE html>" in paths[0].read_text(encoding="utf-8")


# ---- html ----------------------------------------------------------------------------------

def test_html_loads_nothing_from_the_network(report_html: str) -> None:
    rest = _without_plotly(report_html)
    for forbidden in ("<script src", "<link", "<img", "@import", "url(", "http://", "https://"):
        assert forbidden not in rest.lower(), forbidden
    # Every script element opened is closed exactly once: no data ended one early.
    assert rest.count("<script") == rest.count("</script>") == 3


def test_html_has_a_div_and_a_figure_per_chart(
    report_html: str, figures: dict[str, Any]
) -> None:
    divs = re.findall(r'<div class="chart plotly-chart[^"]*" id="(chart-\d+)"></div>', report_html)
    # The findings chart (the ratio along size), then in the details: metric, distribution,
    # resources.
    assert divs == ["chart-1", "chart-2", "chart-3", "chart-4"]
    details = report_html.index('<details class="more"><summary>Details of fake-move')
    assert report_html.index('id="chart-1"') < details < report_html.index('id="chart-2"')
    assert sorted(figures) == divs
    for fig in figures.values():
        assert fig["config"]["displaylogo"] is False
        assert fig["data"]  # every chart has traces


def test_html_opens_on_the_findings_then_each_benchmark_leads_with_its_own(
    analysis: Analysis, report_html: str
) -> None:
    text = _without_plotly(report_html)
    top = text.index('<section id="findings">')
    section = text.index('<section id="bench-0">')
    details = text.index('<details class="more"><summary>Details of fake-move')
    assert top < text.index('id="warnings"') < section < details
    big = _at_size(analysis, "mremap", SIZES[-1])
    assert big.vs_baseline is not None
    win = (f"mremap wins, {fmt_number(1 / big.vs_baseline.ratio)}× faster than memcpy "
           f"(ratio {fmt_number(big.vs_baseline.ratio)}")
    assert top < text.index(win) < section  # the headline at the top
    assert section < text.index(win, section) < details  # and the benchmark's own finding
    # The compact table, before the details: the verdict as a glyph and a colour.
    q = big.vs_baseline
    cell = f'<td class="num faster">{fmt_ratio(q.ratio, q.ci_low, q.ci_high)} ✓</td>'
    assert section < text.index(cell) < details


def _at_size(analysis: Analysis, variant: str, size: int):  # type: ignore[no-untyped-def]
    return next(r for r in analysis.benchmarks[0].for_metric(METRIC)
                if r.case.variant == variant and r.case.param("size") == size)


def test_ratio_chart_marks_the_line_at_one_and_the_crossover(
    analysis: Analysis, figures: dict[str, Any]
) -> None:
    ratio = figures["chart-1"]  # the findings chart: the first thing the section shows
    layout = ratio["layout"]
    assert "ratio to memcpy" in layout["title"]["text"]
    assert layout["yaxis"]["title"]["text"] == "ratio to memcpy"
    shapes = layout["shapes"]
    assert any(s.get("y0") == 1 and s["line"]["dash"] == "dash" for s in shapes)
    # The crossover is marked where the analysis places it, named in its hover text.
    (sc,) = analysis.benchmarks[0].crossovers
    marks = [tr for tr in ratio["data"] if tr.get("name") == "crossover"]
    assert len(marks) == 1 and marks[0]["x"] == [sc.crossover.estimate] and marks[0]["y"] == [1]
    (note,) = marks[0]["text"]
    assert "crossover ≈" in note and "between 64 KiB and 256 KiB" in note, note
    assert marks[0]["marker"]["color"] == [PALETTE[0]]  # mremap's colour
    # The CI is drawn as a filled band for each variant compared, without corner markers.
    bands = [tr for tr in ratio["data"] if tr.get("fill") == "toself"]
    assert len(bands) == 2 and all(tr["mode"] == "lines" for tr in bands)
    # Its points are the analysis's ratios, in size order.
    mremap = next(tr for tr in ratio["data"] if tr.get("name") == "mremap")
    expected = [r.vs_baseline.ratio for r in sorted(
        analysis.benchmarks[0].for_metric(METRIC), key=lambda r: r.case.param("size"))
        if r.case.variant == "mremap" and r.vs_baseline is not None]
    assert mremap["y"] == pytest.approx(expected) and len(expected) == 4


def test_metric_chart_uses_log_axes_and_asymmetric_ci_bars(
    figures: dict[str, Any]
) -> None:
    fig = figures["chart-2"]
    assert fig["layout"]["xaxis"]["type"] == "log"
    assert fig["layout"]["xaxis"]["ticktext"] == ["16 KiB", "64 KiB", "256 KiB", "1 MiB"]
    memcpy = next(t for t in fig["data"] if t["name"] == "memcpy")
    assert memcpy["error_y"]["symmetric"] is False
    assert len(memcpy["error_y"]["array"]) == len(memcpy["error_y"]["arrayminus"]) == 4


def test_each_variant_has_one_colour_in_every_chart(
    figures: dict[str, Any]
) -> None:
    seen: dict[str, set[str]] = {}
    for fig in figures.values():
        for tr in fig["data"]:
            if "name" in tr and "marker" in tr and tr["name"] != "crossover":
                seen.setdefault(tr["name"], set()).add(tr["marker"]["color"])
    assert seen["memcpy"] == {BASELINE_COLOR}
    assert seen["mremap"] == {PALETTE[0]}
    assert seen[html.escape(XSS, quote=False)] == {PALETTE[1]}


def test_data_strings_are_escaped_everywhere(
    report_html: str, figures: dict[str, Any]
) -> None:
    for raw in (XSS, HOST_CPU, "alert(\"host\")"):
        assert raw not in report_html
    assert html.escape(XSS) in report_html  # the table and variant list show it as text
    assert html.escape(HOST_CPU) in report_html
    # In the charts the name is escaped once for plotly, which decodes it back to the text.
    names = {tr.get("name") for fig in figures.values() for tr in fig["data"]}
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in names


def test_html_lists_table_skips_failures_environment(run: RunRecord, report_html: str) -> None:
    text = _without_plotly(report_html)
    assert fmt_value(_pooled_median(run, "mremap", SIZES[-1]), "ns") in text
    assert "needs THP: set it to madvise" in text
    assert "mremap: Cannot allocate memory" in text
    assert '<td class="faster">faster</td>' in text and '<td class="slower">slower</td>' in text
    assert "kvm-bench-1" in text and "thp.enabled" in text and "0.12, 0.3, 0.25" in text
    assert "cpufreq governor is powersave" in text
    assert "mremap starts winning over memcpy between 64 KiB and 256 KiB" in text


# ---- markdown ------------------------------------------------------------------------------

def _md_row(md: str, variant: str, size: str) -> list[str]:
    rows = [line for line in md.splitlines()
            if line.startswith(f"| {variant}") and f"| size={size} |" in line]
    assert len(rows) == 1, (variant, size, rows)
    return [c.strip() for c in rows[0].strip("|").split(" | ")]


def test_details_rows_carry_the_right_medians_and_verdicts(
    run: RunRecord, analysis: Analysis
) -> None:
    md = render_details(run, analysis)
    base = _md_row(md, "memcpy (baseline)", "16 KiB")
    assert base[3] == fmt_value(_pooled_median(run, "memcpy", 16 * KIB), "ns")
    assert base[2] == f"{TRIALS * SAMPLES} / {TRIALS}"
    assert base[8] == "—"
    small = _md_row(md, "mremap", "16 KiB")
    assert small[3] == fmt_value(_pooled_median(run, "mremap", 16 * KIB), "ns")
    assert small[8] == "slower"
    big = _md_row(md, "mremap", "1 MiB")
    assert big[8] == "faster" and big[13] == "1"  # the one failed trial
    same = _md_row(md, md_escape(XSS), "64 KiB")
    assert same[8] == "equivalent" and same[6].startswith("1.00 (")
    assert XSS not in md
    assert f"| {md_escape(XSS)} | size=1 MiB |" not in md  # skipped: listed, not tabulated


def test_markdown_has_machine_crossovers_skips_failures_facts(
    run: RunRecord, analysis: Analysis
) -> None:
    md = render_markdown(run, analysis)
    details = render_details(run, analysis)
    for text in (md, details):
        assert "Machine: **kvm-bench-1**, Linux **6.18.0-test**" in text
        assert "needs THP: set it to madvise" in text
        assert "- ⚠ cpufreq governor is powersave" in text
    # report.md: the crossover as a finding; details.md: as the analysis words it.
    assert re.search(r"- mremap against memcpy along size: starts winning between 64 KiB and "
                     r"256 KiB \(≈ \d+(\.\d+)? KiB\); every CI excludes its level\.", md)
    assert re.search(r"- mremap starts winning over memcpy between 64 KiB and 256 KiB "
                     r"\(≈ \d+(\.\d+)? KiB; confident: CIs exclude 1 on both sides\)", details)
    # The failure: counted among the findings, its error text in details.md.
    assert "1 trial(s) failed, in 1 case(s): mremap at size=1 MiB" in md
    assert "```text\nfake exited with status 1: mremap: Cannot allocate memory\n```" in details
    assert "Cannot allocate memory" not in md
    # The counters: a narrow table each, a column per variant (none run at 1 MiB: —).
    assert "### Counters (1): median over each case's successful trials" in details
    assert f"| params | memcpy | mremap | {md_escape(XSS)} |" in details
    assert "| size=16 KiB | 0 | 0 | 0 |" in details and "| size=1 MiB | 0 | 0 | — |" in details
    assert "events_lost=" not in details  # no longer a list in one cell
    assert "| cmdline | quiet \\| mitigations=off |" in details
    assert "| thp.defrag | never |" in details


# ---- terminal ------------------------------------------------------------------------------

def test_terminal_summary_has_verdicts_crossover_and_warnings(
    run: RunRecord, analysis: Analysis
) -> None:
    console = Console(record=True, width=200)
    print_summary(run, analysis, console)
    text = console.export_text()
    lines = text.splitlines()

    def line_of(variant: str, size: str) -> str:
        return next(line for line in lines if variant in line and f" {size} " in line)

    assert "faster" in line_of("mremap", "1 MiB")
    assert "slower" in line_of("mremap", "16 KiB")
    assert "equivalent" in line_of(XSS, "64 KiB")  # printed as text, not parsed as markup
    assert "—" in line_of("memcpy", "16 KiB")
    assert fmt_value(_pooled_median(run, "memcpy", 256 * KIB), "ns") in line_of("memcpy", "256 KiB")
    assert "• mremap against memcpy along size: starts winning between 64 KiB and 256 KiB" in text
    # Last, the answer: a line per benchmark, the win first.
    tail = text[text.index("\nFindings\n"):]
    assert "• fake-move: At size=1 MiB mremap wins, " in tail
    assert "warning: cpufreq governor is powersave" in text


def test_terminal_colours_verdicts_only_on_a_terminal(run: RunRecord, analysis: Analysis) -> None:
    colour = Console(record=True, width=200, force_terminal=True, color_system="standard")
    print_summary(run, analysis, colour)
    styled = colour.export_text(styles=True)
    assert "\x1b[32mfaster" in styled and "\x1b[31mslower" in styled
    plain_out = io.StringIO()
    print_summary(run, analysis, Console(file=plain_out, width=200))
    assert "\x1b[" not in plain_out.getvalue() and "faster" in plain_out.getvalue()


# ---- helpers -------------------------------------------------------------------------------

@pytest.mark.parametrize(("value", "unit", "text"), [
    (7084.0, "ns", "7.08 µs"),
    (999.6, "ns", "1.000 µs"),
    (2.5e9, "ns", "2.50 s"),
    (0.5, "ns", "0.500 ns"),
    (16 * 1024**2, "B", "16.0 MiB"),
    (1536, "B/s", "1.50 KiB/s"),
    (2048, "KiB", "2.00 MiB"),
    (123456, "ops/s", "123,456 ops/s"),
    (1234567, "ops/s", "1.23 M ops/s"),
    (0.0123, "", "0.0123"),
    (float("nan"), "ns", "—"),
])
def test_fmt_value(value: float, unit: str, text: str) -> None:
    assert fmt_value(value, unit) == text


@given(st.floats(allow_nan=False, allow_infinity=False), st.sampled_from(["ns", "B", "ops", "s"]))
def test_fmt_value_always_names_a_unit(value: float, unit: str) -> None:
    out = fmt_value(value, unit)
    assert out.split(" ")[-1] in {"ns", "µs", "ms", "s", "B", "KiB", "MiB", "GiB", "TiB", "ops"}


def test_variant_colors_baseline_grey_preferred_first(run: RunRecord) -> None:
    info = run.benchmarks["fake-move"]
    assert variant_colors(info) == {"memcpy": BASELINE_COLOR, "mremap": PALETTE[0], XSS: PALETTE[1]}
    chosen = variant_colors(info, {"memcpy": "#ff0000", "mremap": PALETTE[0], XSS: "red;url(x)"})
    assert chosen["memcpy"] == BASELINE_COLOR  # the baseline is always grey
    assert chosen["mremap"] == PALETTE[0]
    assert chosen[XSS] == PALETTE[1]  # not CSS-safe hex: ignored, next free palette colour


@given(st.text())
def test_md_escape_keeps_a_cell_one_cell_on_one_line(text: str) -> None:
    out = md_escape(text)
    assert "\n" not in out and "\r" not in out
    for m in re.finditer(r"(\\*)\|", out):
        assert len(m.group(1)) % 2 == 1, out  # every pipe is escaped


@given(st.recursive(st.text() | st.integers() | st.booleans(),
                    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner)))
@pytest.mark.slow(live=False)
def test_script_json_cannot_close_a_script_and_round_trips(obj: object) -> None:
    out = script_json(obj)
    assert "<" not in out and ">" not in out
    assert json.loads(out) == obj


# ---- shapes of data other than the fixture's ----------------------------------------------

def _two_param_run() -> RunRecord:
    """size x mode, a throughput (higher is better), no rusage, one case whose trials all
    time out: 'fast' doubles the baseline's rate from 1 MiB on, in both modes."""
    bench = Benchmark(
        name="tput", title="Throughput", summary="s",
        variants=(Variant("base", "b", baseline=True), Variant("fast", "f")),
        params=(Param("size", "bytes", "s"), Param("mode", "str", "m")),
        metrics=(Metric("ops", "ops/s", "rate", lower_is_better=False),),
        profiles={}, program="x",
    )
    rng = np.random.default_rng(3)
    cases, trials = [], []
    for mode in ("rand", "seq"):
        for size in (4 * KIB, 64 * KIB, 1024 * KIB):
            for variant in ("base", "fast"):
                case = Case("tput", variant, (("size", size), ("mode", mode)))
                cases.append(case)
                # 6 trials: with fewer, no rank test survives Holm correction over 5 cells.
                for i in range(6):
                    if variant == "fast" and size == 4 * KIB and mode == "seq":
                        trials.append(Trial(case, i, i, "timeout", "t", 120.0, None, {}, {}, {},
                                            None, error="timed out after 120 s"))
                        continue
                    rate = 2e6 if variant == "fast" and size >= 1024 * KIB else 1e6
                    if variant == "fast" and size < 1024 * KIB:
                        rate = 5e5
                    values = [float(v) for v in rate * (1 + 0.01 * rng.standard_normal(10))]
                    trials.append(Trial(case, i, i, "ok", "t", 0.1, 0, {"ops": values}, {}, {},
                                        None))
    return RunRecord(1, "r2", "interrupted", "t", None, ["bakeoff"], "quick", 1,
                     {"hostname": "h"}, [], {"tput": bench.info()}, cases, [], trials)


def test_other_params_split_the_charts_and_name_the_crossovers() -> None:
    run = _two_param_run()
    analysis = analyze(run)
    page = render_html(run, analysis)
    m = re.search(r'id="bakeoff-figures">(.*?)</script>', page, re.S)
    assert m
    figs = list(json.loads(m.group(1)).values())
    titles = [f["layout"]["title"]["text"] for f in figs]
    # The ratio once, a panel per mode; then in the details the metric once per mode, the
    # distribution, and resources (no rusage recorded, but wall time is).
    assert titles == [
        "ops ratio to base (higher is better)",
        "ops (median, 95% CI) vs size at mode=rand",
        "ops (median, 95% CI) vs size at mode=seq",
        "distribution of ops per case",
        "resource usage per case",
    ]
    panels = [a["text"] for a in figs[0]["layout"]["annotations"]]
    assert panels == ["mode=rand", "mode=seq"]
    assert [tr["x"] for tr in figs[0]["data"] if tr.get("name") == "crossover"] == [
        [sc.crossover.estimate] for sc in analysis.benchmarks[0].crossovers]
    md = render_details(run, analysis)
    for mode in ("rand", "seq"):
        assert re.search(r"fast starts winning over base between 64 KiB and 1 MiB of size "
                         r"\(≈ [\d.]+ KiB; confident: CIs exclude 1 on both sides; "
                         rf"with mode={mode}\)", md)
    timed_out = _md_row(md, "fast", "4 KiB, mode=seq")
    assert timed_out[2:5] == ["0 / 0", "—", "—"] and timed_out[13] == "6 (all)"
    assert _md_row(md, "fast", "1 MiB, mode=rand")[8] == "faster"  # higher rate wins
    assert _md_row(md, "base", "1 MiB, mode=rand")[3].endswith(" M ops/s")
    assert "this run is interrupted" in md


def test_terminal_on_a_narrow_pipe_wraps_instead_of_cutting(
    run: RunRecord, analysis: Analysis
) -> None:
    out = io.StringIO()
    print_summary(run, analysis, Console(file=out, width=80))
    text = out.getvalue()
    assert "…" not in text
    assert "faster" in text and "slower" in text


def test_a_warning_every_benchmark_gave_is_said_once_naming_them() -> None:
    """On a busy machine each room gives the same few warnings; report.md says each once,
    naming the rooms, where the first stood, and keeps the others as they are."""
    import dataclasses

    from bakeoff.report.run_content import warnings_list
    from bakeoff.store import results as store

    run = store.load(Path(__file__).parent / "fixtures" / "busy" / "pool-run")
    info = next(iter(run.benchmarks.values()))
    run = dataclasses.replace(run, benchmarks={"a": info, "b": info, "c": info}, warnings=[
        "load average 9 is above 0.5 per core", "a: retakes stopped", "b: retakes stopped"])
    analysis = dataclasses.replace(analyze(run), warnings=[
        "c: few trials", "a: few trials", "b: retakes stopped", "d: not a benchmark",
        "c: retakes stopped"])
    assert warnings_list(run, analysis) == [
        "load average 9 is above 0.5 per core", "a, b and c: retakes stopped",
        "c and a: few trials", "d: not a benchmark"]
