"""Findings: every sentence carries a figure of the analysis with its 95% CI and its n, says
why it is tentative when it is, and report.md (findings and compact tables) stays short.

The synthetic runs have known answers (test_report.make_run: mremap loses at 16 and 64 KiB,
wins from 256 KiB); the figures each test expects are recomputed here from the analysis, not
copied from the sentence. The last tests read a real run of every benchmark.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import plotly.offline  # type: ignore[import-untyped]
import pytest
from report_claims import flaws
from test_report import METRIC, SIZES, TRIALS, XSS, make_run

from bakeoff.analysis.within_run import MIN_TRIALS_FOR_VERDICT, Analysis, CaseResult, analyze
from bakeoff.declare import registry
from bakeoff.declare.model import (
    Benchmark,
    BenchmarkInfo,
    Case,
    Fit,
    Metric,
    Param,
    RunRecord,
    Trial,
    Variant,
)
from bakeoff.report.compact import GLYPHS, compact_table
from bakeoff.report.findings import (
    BenchmarkFindings,
    Finding,
    all_findings,
    benchmark_findings,
    fit_constant,
    ratio_figure,
)
from bakeoff.report.format import (
    fmt_estimate,
    fmt_number,
    fmt_ratio,
    fmt_value,
    fmt_with_ci,
    param_estimate_label,
    swept_label,
)
from bakeoff.report.grid import trials_of
from bakeoff.report.markdown import md_escape, render_markdown
from bakeoff.store import results as store

# What a ratio finding quotes: 'ratio 0.0941, 95% CI 0.0927–0.0960; 5 + 5 trials'.
RATIO_FIGURE = re.compile(r"ratio ([^,\s]+), 95% CI ([^–\s]+)–([^;\s)]+); (\d+) \+ (\d+) trials")
# report.md's length in lines: what every report has (title, links, the findings' heading,
# the warnings), and per room (its findings line, its section with the answers, the other
# contrasts and one compact table). For the five rooms of the findings issue, its "~150";
# a room added grows it by its share, so the budget names no set of rooms.
REPORT_MD_SHARED_LINES = 25
REPORT_MD_LINES_PER_ROOM = 25


def report_md_budget(rooms: int) -> int:
    return REPORT_MD_SHARED_LINES + REPORT_MD_LINES_PER_ROOM * rooms


def _findings(run: RunRecord) -> tuple[Analysis, BenchmarkFindings]:
    analysis = analyze(run)
    return analysis, benchmark_findings(analysis.benchmarks[0])


def _at(analysis: Analysis, variant: str, size: int) -> CaseResult:
    return next(r for r in analysis.benchmarks[0].for_metric(METRIC)
                if r.case.variant == variant and r.case.param("size") == size)


def _trials_cut(run: RunRecord, keep: int) -> RunRecord:
    """The same run with each case's first `keep` trials only."""
    run.trials = [t for t in run.trials if t.index < keep]
    return run


# ---- the known answer ----------------------------------------------------------------------

def test_findings_of_the_known_answer() -> None:
    analysis, bf = _findings(make_run())
    kinds = [f.kind for f in bf.findings]
    assert kinds == ["winner", "crossover", "skipped", "failed"]
    winner, crossover, skipped, failed = bf.findings
    # At each end of the sweep, the best variant by its ratio, with that ratio's CI and trials.
    for size in (SIZES[0], SIZES[-1]):
        compared = [r for r in analysis.benchmarks[0].for_metric(METRIC)
                    if r.case.param("size") == size and r.vs_baseline is not None]
        best = min(compared, key=lambda r: r.vs_baseline.ratio if r.vs_baseline else 0)
        assert best.vs_baseline is not None
        base = _at(analysis, "memcpy", size)
        figure = f"{ratio_figure(best.vs_baseline)}; {trials_of(best)} + {trials_of(base)} trials"
        assert figure in winner.text, (figure, winner.text)
    # 16 KiB: the variant replaying memcpy's samples is level with it, and its CI lies within
    # ±2% (a claim of equivalence, not just no difference shown); 1 MiB: mremap wins.
    assert f"at 16 KiB the closest, {XSS}, is equivalent to memcpy within ±2%: " \
           "level with memcpy" in winner.text
    mremap = _at(analysis, "mremap", SIZES[-1]).vs_baseline
    assert mremap is not None
    assert f"at 1 MiB mremap wins, {fmt_number(1 / mremap.ratio)}× faster than memcpy" in winner.text
    assert not winner.tentative and "tentative" not in winner.text  # 5 trials, clear CIs
    # The crossover with its interval, from the analysis.
    (sc,) = analysis.benchmarks[0].crossovers
    assert sc.crossover.confident
    info = analysis.benchmarks[0].info
    assert crossover.text == (
        "mremap against memcpy along size: starts winning between 64 KiB and 256 KiB "
        f"(≈ {param_estimate_label(info, 'size', sc.crossover.estimate)}); every CI excludes "
        "its level.")
    assert crossover.crossovers == (sc,) and not crossover.tentative
    # What was skipped and why; what failed, counted.
    assert skipped.text == f"Skipped 1 case(s): 1 ({XSS}): needs THP: set it to madvise."
    assert failed.text.startswith("1 trial(s) failed, in 1 case(s): mremap at size=1 MiB")
    # The headline leads with a variant's win, then where the winner changes.
    assert [f.kind for f in bf.headline] == ["winner", "crossover"]
    assert bf.headline[0].headline_text.startswith("At size=1 MiB mremap wins, ")


def test_every_figure_carries_its_ci_and_its_trials() -> None:
    """Each ratio quoted has its CI and both sides' trials, and is the analysis's own."""
    analysis, bf = _findings(make_run())
    ratios = {(e.point, *(e.interval or "–").split("–"), str(trials_of(r)))
              for r in analysis.benchmarks[0].for_metric(METRIC) if r.vs_baseline
              for e in [fmt_estimate(r.vs_baseline.ratio, r.vs_baseline.ci_low,
                                     r.vs_baseline.ci_high, "")]}
    quoted = [m for f in bf.findings for m in RATIO_FIGURE.findall(f.text)]
    # The other end's ratio is 1 in every trial (a variant replaying memcpy's samples): said
    # so, with no interval of one value.
    assert len(quoted) == 1
    assert all("ratio 1.00, the same in every trial; 5 + 5 trials" in f.text
               for f in bf.findings if f.kind == "winner")
    for ratio, low, high, n_variant, n_base in quoted:
        assert (ratio, low, high, n_variant) in ratios
        assert int(n_base) == TRIALS
    # No bare 'ratio' without its CI anywhere.
    for f in bf.findings:
        assert len(re.findall(r"\bratio \d", f.text)) == len(RATIO_FIGURE.findall(f.text)) + \
            len(re.findall(r"\bratio [\d.]+, the same in every trial", f.text)), f.text


def test_too_few_trials_make_every_finding_tentative() -> None:
    _, bf = _findings(_trials_cut(make_run(), 3))
    for f in bf.findings:
        if f.kind in ("winner", "crossover"):
            assert f"fewer than {MIN_TRIALS_FOR_VERDICT} trials" in f.tentative, f.text
            assert "[tentative: " in f.text
    assert "3 + 3 trials" in bf.findings[0].text


def test_one_trial_quotes_no_ci() -> None:
    """One trial is one cluster: its bootstrap CI is a point; a finding says there is none
    rather than print 'CI 0.103–0.103'."""
    _, bf = _findings(_trials_cut(make_run(), 1))
    winners = [f for f in bf.findings if f.kind == "winner"]
    assert winners
    for f in winners:
        assert "no CI from one trial; 1 + 1 trials" in f.text, f.text
        assert "95% CI" not in f.text, f.text


def _two_variant_run(per_trial: dict[str, list[float]], *, control: str | None = None,
                     metric_of: dict[str, str] | None = None,
                     sizes: tuple[int, ...] = (4096,)) -> RunRecord:
    """A run whose every trial of variant v at every size has the constant samples given
    (one value per trial), so each per-trial median, and so each bootstrap, is chosen."""
    names = list(per_trial)
    bench = Benchmark(
        name="chosen", title="Chosen values", summary="s",
        variants=tuple(Variant(v, v, baseline=i == 0, control=v == control)
                       for i, v in enumerate(names)),
        params=(Param("size", "bytes", "s"),),
        metrics=(Metric("ns", "ns", "time"), Metric("other", "ns", "another time")),
        profiles={}, program="x")
    cases, trials = [], []
    for size in sizes:
        for v in names:
            case = Case("chosen", v, (("size", size),))
            cases.append(case)
            metric = (metric_of or {}).get(v, "ns")
            for i, value in enumerate(per_trial[v]):
                samples = {metric: [value * size / sizes[0]] * 4, "other": [1.0] * 4}
                trials.append(Trial(case, i, i, "ok", "t", 0.1, 0, samples, {}, {}, None))
    return RunRecord(store.SCHEMA_VERSION, "chosen", "complete", "t", "t", ["bakeoff"], "quick",
                     3, {"hostname": "h"}, [], {"chosen": bench.info()}, cases, [], trials)


def test_a_ci_that_touches_the_threshold_is_tentative() -> None:
    """About 2% faster, its CI reaching over 0.98: 'inconclusive', and said to be unsettled."""
    run = _two_variant_run({"base": [100.0] * 8,
                            "v": [96.0, 97.0, 97.5, 98.0, 98.0, 98.5, 99.0, 100.0]})
    analysis, bf = _findings(run)
    r = analysis.benchmarks[0].results[2]
    assert r.case.variant == "v" and r.verdict == "inconclusive" and r.vs_baseline is not None
    assert r.vs_baseline.ci_low <= 0.98 <= r.vs_baseline.ci_high
    (winner,) = [f for f in bf.findings if f.kind == "winner"]
    q = r.vs_baseline
    assert winner.text == (
        f"No variant is shown to differ from base by more than ±2%: v is "
        f"{fmt_number((1 - q.ratio) * 100)}% faster ({ratio_figure(q)}; 8 + 8 trials) "
        "[tentative: its CI touches the ±2% threshold].")
    assert winner.tentative == "its CI touches the ±2% threshold"
    assert winner.text.endswith("[tentative: its CI touches the ±2% threshold].")


def test_a_control_is_never_named_the_winner() -> None:
    run = _two_variant_run({"base": [100.0] * 6, "aa-check": [50.0] * 6, "fast": [70.0] * 6},
                           control="aa-check")
    analysis, bf = _findings(run)
    (winner,) = [f for f in bf.findings if f.kind == "winner"]
    assert "fast wins, 30.0% faster than base (ratio 0.700, the same in every trial" in winner.text
    assert "aa-check" not in winner.text
    # It is still measured and shown: the compact table has its column.
    table = compact_table(analysis.benchmarks[0])
    assert table is not None and table.variants == ["aa-check", "fast"]
    assert table.rows[0].cells[0].text == f"{fmt_ratio(0.5, 0.5, 0.5)} {GLYPHS['faster']}"


def test_without_a_ratio_the_best_median_is_named_with_its_ci() -> None:
    """The baseline does not report the primary metric (as heap-sampling's added cost):
    no ratio exists, so the finding ranks medians, each with its CI and trials."""
    run = _two_variant_run({"base": [1.0] * 5, "a": [12.0, 12.5, 13.0, 13.0, 14.0],
                            "b": [6.0, 6.1, 6.2, 6.3, 6.4]},
                           metric_of={"base": "other"})
    analysis, bf = _findings(run)
    (ranking,) = [f for f in bf.findings if f.kind == "ranking"]
    b = next(r for r in analysis.benchmarks[0].for_metric("ns") if r.case.variant == "b")
    assert b.summary is not None
    s = b.summary
    # b is told apart from the next (a): its ratio to a, paired by round, excludes 1.
    assert ranking.text.startswith(
        f"The lowest ns is b's, {fmt_with_ci(s.median, s.ci_low, s.ci_high, 'ns')[:-1]}; "
        "5 trials); against the next, a, b / a "), ranking.text
    table = compact_table(analysis.benchmarks[0])
    assert table is not None and "there is no ratio to it" in table.legend
    assert table.variants == ["a", "b"]  # the baseline has no ns: no column
    assert table.rows[0].cells[1].text == fmt_with_ci(s.median, s.ci_low, s.ci_high, "ns", "")


def test_a_fit_finding_quotes_both_constants_with_their_cis() -> None:
    """A tracer costing a flat 500 ns per call over work of 0 to 100 µs: a ~ 500 ns, b ~ 0."""
    bench = Benchmark(
        name="fitted", title="Fitted", summary="s",
        variants=(Variant("none", "n", baseline=True), Variant("tracer", "t")),
        params=(Param("duration_us", "int", "work per call", unit="µs"),),
        metrics=(Metric("per_call_ns", "ns", "time per call"),), profiles={}, program="x",
        fits=(Fit("per_call_ns", "duration_us", "overhead = a + b x duration"),))
    rng = np.random.default_rng(5)
    cases, trials = [], []
    for d in (0, 10, 50, 100):
        for v, add in (("none", 0.0), ("tracer", 500.0)):
            case = Case("fitted", v, (("duration_us", d),))
            cases.append(case)
            for i in range(6):
                values = [float(x) for x in d * 1000 + add + 5 * rng.standard_normal(8)]
                trials.append(Trial(case, i, i, "ok", "t", 0.1, 0, {"per_call_ns": values},
                                    {}, {}, None))
    run = RunRecord(store.SCHEMA_VERSION, "fit", "complete", "t", "t", ["bakeoff"], "quick", 3,
                    {"hostname": "h"}, [], {"fitted": bench.info()}, cases, [], trials)
    analysis, bf = _findings(run)
    (sf,) = analysis.benchmarks[0].fits
    (fit,) = [f for f in bf.findings if f.kind == "fit"]
    assert fit.fit is sf and sf.fit.a == pytest.approx(500, abs=10)
    assert (f"a = {fmt_value(sf.fit.a, 'ns')} (95% CI {fmt_value(sf.fit.a_low, 'ns')} to "
            f"{fmt_value(sf.fit.a_high, 'ns')})") in fit.text
    assert (f"b = {fmt_number(sf.fit.b)} ns per µs (95% CI {fmt_number(sf.fit.b_low)} to "
            f"{fmt_number(sf.fit.b_high)})") in fit.text
    assert "over 4 points, at least 6 trials each" in fit.text and not fit.tentative


@pytest.mark.slow(live=False)
def test_report_md_leads_with_the_findings_and_one_compact_table() -> None:
    run = make_run()
    analysis = analyze(run)
    md = render_markdown(run, analysis)
    lines = md.splitlines()
    assert lines[0].startswith("# bakeoff results: ")
    assert lines.index("## Findings") < 6
    assert lines.index("## Findings") < next(i for i, ln in enumerate(lines)
                                             if ln.startswith("## Warnings"))
    # One table: a row per size, a column per variant compared, ratio + CI + glyph, trials.
    header = next(ln for ln in lines if ln.startswith("| size |"))
    assert header == f"| size | mremap | {md_escape(XSS)} | trials |"
    rows = [ln for ln in lines if ln.startswith("| ") and ln != header]
    assert [r.split(" | ")[0] for r in rows] == ["| 16 KiB", "| 64 KiB", "| 256 KiB", "| 1 MiB"]
    small = _at(analysis, "mremap", SIZES[0]).vs_baseline
    assert small is not None
    same = _at(analysis, XSS, SIZES[0]).vs_baseline
    assert same is not None
    assert rows[0] == (f"| 16 KiB | {fmt_ratio(small.ratio, small.ci_low, small.ci_high)} "
                       f"{GLYPHS['slower']} | {fmt_ratio(same.ratio, same.ci_low, same.ci_high)} "
                       f"{GLYPHS['equivalent']} | 5 |")  # its CI within ±2%
    assert rows[-1].endswith("| skipped | 5 |")  # the variant skipped at 1 MiB, 5 trials
    assert "### Cases" not in md and "Mann-Whitney" not in md.split("## Warnings")[0]
    assert "details.md" in lines[2]


# ---- a real run of every benchmark ---------------------------------------------------------

@pytest.mark.slow
def test_real_run_report_md_is_short_and_every_figure_is_the_analysis(
        all_rooms_quick_run: Path) -> None:
    out = all_rooms_quick_run
    md = (out / "report.md").read_text()
    lines = md.splitlines()
    print(f"report.md: {len(lines)} lines, {len(md.encode())} bytes; "
          f"details.md: {len((out / 'details.md').read_text().splitlines())} lines")
    run = store.load(out)
    analysis = analyze(run, run.settings.threshold)
    assert len(lines) <= report_md_budget(len(analysis.benchmarks))
    # As many benchmarks as rooms: the test does not name the set of rooms.
    assert len(analysis.benchmarks) == len(registry.discover())
    # Every ratio quoted is a case's own ratio, CI and trials, against its baseline's trials
    # on the same metric (or, for a question's reference other than the baseline, that
    # pair's: question_pairs).
    known: dict[tuple[str, ...], object] = {}
    for ba in analysis.benchmarks:
        for p in ba.pairs.values():
            if p.ratio is None:
                continue
            known[(fmt_number(p.ratio.ratio), fmt_number(p.ratio.ci_low),
                   fmt_number(p.ratio.ci_high), str(p.n_trials), str(p.n_against))] = p
        # Every metric's: a question may read one other than the primary (it says which).
        for r in ba.results:
            if r.vs_baseline is not None:
                base = next(b for b in ba.for_metric(r.metric)
                            if b.case.variant == ba.info.baseline and b.case.params == r.case.params)
                q = r.vs_baseline
                e = fmt_estimate(q.ratio, q.ci_low, q.ci_high, "")
                known[(e.point, *(e.interval or "–").split("–"),
                       str(trials_of(r)), str(trials_of(base)))] = r
    quoted = RATIO_FIGURE.findall(md)
    assert quoted, "no ratio quoted"
    assert [q for q in quoted if tuple(q) not in known] == []
    # Every fit's constants with their CIs; every crossover's interval.
    for ba in analysis.benchmarks:
        for sf in ba.fits:
            unit = str(ba.info.metric(sf.metric)["unit"])
            assert fit_constant(sf.fit.a, sf.fit.a_low, sf.fit.a_high, unit) in md
        # A crossover is stated only when settled (each end's CI excludes its level).
        for sc in ba.crossovers:
            if not sc.crossover.confident or ba.info.is_diagnostic(sc.variant) or \
                    ba.info.is_control(sc.variant):
                continue
            low = swept_label(ba.info, sc.param, sc.crossover.low)
            high = swept_label(ba.info, sc.param, sc.crossover.high)
            assert md_escape(f"{sc.variant} against {ba.info.baseline} along {sc.param}") in md
            assert md_escape(f"between {low} and {high}") in md
    # With 3 trials a case, every winner is tentative, and says so.
    found = all_findings(analysis)
    winners: list[Finding] = [f for bf in found for f in bf.findings if f.kind == "winner"]
    assert winners and all("fewer than 5 trials" in f.tentative for f in winners)
    # A room that names why_counters (optional: the skeleton of `bakeoff new` names none)
    # counts them: it says why, with the counters per op of a case it names (a winner's, or
    # with no ratio a ranking's), where a counter the dearer case makes more of is shown
    # apart, and says nothing otherwise; a room that names none says no "why".
    for bf in found:
        why = [f for f in bf.findings if f.kind == "why"]
        if not bf.analysis.info.why_counters:
            assert not why, (bf.analysis.info.name, [f.text for f in why])
            continue
        assert len(why) <= 1 and all("per op" in f.text and "counted samples" in f.text
                                     for f in why), [f.kind for f in bf.findings]
    # One compact table per benchmark in report.md; the full ones, with counters, in details.
    assert len(re.findall(r"^\|---", md, re.M)) == len(analysis.benchmarks)
    details = (out / "details.md").read_text()
    for ba in analysis.benchmarks:
        for metric in ba.metrics:
            assert f"### Cases: {md_escape(metric)} (" in details, metric
    counters = re.findall(r"^### Counters \((\d+)\)", details, re.M)
    assert counters and "counters (median)" not in details
    # A counter table is narrow: a params column, a column per variant, short numbers.
    for block in re.findall(r"^\*\*[^\n]+\*\*\n\n((?:\|[^\n]*\n)+)", details, re.M):
        for row in block.splitlines()[2:]:
            cells = row.strip("|").split(" | ")
            assert all(len(c) <= 40 for c in cells[1:]), row


@pytest.mark.slow
def test_real_run_html_holds_one_plotly_and_one_findings_chart_per_benchmark(
        all_rooms_quick_run: Path) -> None:
    page = (all_rooms_quick_run / "report.html").read_text()
    js = plotly.offline.get_plotlyjs()
    assert page.count(js) == 1
    size = len(page.encode())
    print(f"report.html: {size / 1e6:.2f} MB, of which plotly.js {len(js.encode()) / 1e6:.2f} MB")
    sections = re.findall(r'<section id="bench-\d+">(.*?)</section>', page, re.S)
    assert len(sections) == len(registry.discover())
    for section in sections:
        before_details = section.split('<details class="more">')[0]
        assert before_details.count('class="chart plotly-chart') == 1
        assert "<ul>" in before_details and "95% CI" in before_details


@pytest.mark.slow
def _measures_no_point_asked(run: RunRecord, info: BenchmarkInfo) -> bool:
    """Every question names an `at` value of some param that the run measured at no case."""
    measured: dict[str, set[Any]] = {}
    for case in run.cases:
        if case.benchmark == info.name:
            for name, value in case.params:
                measured.setdefault(name, set()).add(value)
    return all(any(not set(values) & measured.get(name, set())
                   for name, values in q.get("at", {}).items()
                   if not set(values) & {"largest", "smallest"})
               for q in info.questions)


@pytest.mark.slow
def test_real_run_reports_say_nothing_a_reviewer_refuses(all_rooms_quick_run: Path) -> None:
    """Every room's report of a fresh run: no interval ending at its point, no ranking of
    overlapping cases, no negative cost or count, no two figures for one cell
    (tests/report_claims.py)."""
    found = [str(f) for name in ("report.md", "details.md")
             for f in flaws((all_rooms_quick_run / name).read_text(), name)]
    assert found == []


def test_real_run_report_md_opens_with_the_answers(all_rooms_quick_run: Path) -> None:
    """report.md's first lines answer each room's declared questions: for every benchmark that
    declares any, its line under "## Findings" is its answers (one per question, each with a
    95% CI and its trials), never a diagnostic or control variant, before any other finding."""
    md = (all_rooms_quick_run / "report.md").read_text()
    run = store.load(all_rooms_quick_run)
    found = all_findings(analyze(run, run.settings.threshold))
    lines = md.splitlines()
    top = lines.index("## Findings")
    asked = [bf for bf in found if bf.analysis.info.questions]
    assert asked, "no room declares a question"
    for bf in asked:
        info = bf.analysis.info
        line = next(x for x in lines[top:] if x.startswith(f"- **{md_escape(info.name)}**: "))
        answered = [f for f in bf.answers if f.kind == "answer"]
        if not answered and _measures_no_point_asked(run, info):
            # The quick grid of this room holds none of the points its questions read (e.g.
            # production means where quick keeps a small one): its section says so for each
            # question, and makes no answer up; the top line keeps the generic finding.
            section = md.split(f"({md_escape(info.name)})\n", 1)[1].split("\n## ", 1)[0]
            for q in info.questions:
                assert f"**{md_escape(q['ask'])}** Not answered by this run" in section, section
            continue
        assert answered, (info.name, [f.text for f in bf.answers])
        assert line == f"- **{md_escape(info.name)}**: " + " ".join(
            md_escape(f.headline_text) for f in answered)
        for f in answered:
            assert "95% CI" in f.headline_text and "trial" in f.headline_text, f.headline_text
            assert not any(info.is_diagnostic(r.case.variant) or info.is_control(r.case.variant)
                           for r in f.results if r.case.variant != info.baseline)
        # In its section: the questions answered first, the generic contrasts below.
        section = md.split(f"({md_escape(info.name)})\n", 1)[1].split("\n## ", 1)[0]
        if bf.findings:
            assert section.index(md_escape(answered[0].question)) < \
                section.index("### Other contrasts")


def test_no_variant_is_said_level_when_another_is_shown_to_differ() -> None:
    """The best, a, within noise of base; b shown 50% slower (the table's ✗): the sentence
    speaks of a alone, never "no variant is shown to differ" (a default run said that beside
    a cat shown 95× slower)."""
    run = _two_variant_run({"base": [100.0] * 6,
                            "a": [96.0, 104.0, 97.0, 103.0, 95.0, 105.0],
                            "b": [150.0, 151.0, 149.0, 150.5, 149.5, 150.0]})
    analysis, bf = _findings(run)
    verdicts = {r.case.variant: r.verdict for r in analysis.benchmarks[0].results
                if r.metric == "ns"}
    assert verdicts["a"] == "inconclusive" and verdicts["b"] == "slower", verdicts
    (winner,) = [f for f in bf.findings if f.kind == "winner"]
    assert "no variant" not in winner.text, winner.text
    assert winner.text.startswith("The best, a, is not shown to differ from base by more "
                                  "than ±2%: "), winner.text
