"""Answers to declared questions (report/answers/) on small synthetic runs whose answers are
known: each form (ratio, crossover, overhead, added, error, and a param's values compared
within a variant), diagnostic and control variants kept out, an unsettled crossing never
stated as a crossover, and the answers ahead of the generic contrasts in every report.

Every figure a test expects is read from the analysis, not copied from the sentence.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from bakeoff.analysis.across_hosts import HostRun, HostsAnalysis
from bakeoff.analysis.across_runs import compare_runs
from bakeoff.analysis.within_run import Analysis, BenchmarkAnalysis, CaseResult, analyze
from bakeoff.declare.model import (
    LARGEST,
    SMALLEST,
    Benchmark,
    Case,
    Fit,
    Metric,
    Param,
    Profile,
    Question,
    RunRecord,
    Trial,
    Variant,
)
from bakeoff.declare.registry import question_problem
from bakeoff.report.across_hosts_answers import (
    NOT_SETTLED,
    ONE_HOST,
    across,
    questions_across,
    questions_section,
)
from bakeoff.report.answers.common import Figure, readings
from bakeoff.report.answers.ratio import ratio_answer
from bakeoff.report.compare import question_changes, render_comparison_markdown
from bakeoff.report.exporters import MarkdownExporter
from bakeoff.report.findings import BenchmarkFindings, Finding, benchmark_findings
from bakeoff.report.format import fmt_number, fmt_range, fmt_value, ratio_with_ci, swept_label
from bakeoff.report.html import render_html
from bakeoff.report.markdown import md_escape, render_markdown
from bakeoff.report.terminal import print_summary
from bakeoff.stats import estimates as stats

KIB = 1024
SIZES = (1 * KIB, 2 * KIB, 4 * KIB, 8 * KIB, 16 * KIB)
TRIALS, SAMPLES = 5, 10
METRIC, ERR, ADDED = "ns_per_op", "err_pct", "added_ns"


def _ref_ns(size: int) -> float:
    return 100.0 + 10.0 * size / KIB  # 110, 120, 140, 180, 260 ns


# Each variant's true time at a size, and how much one trial drifts (its spread).
TRUTH: dict[str, tuple[Callable[[int], float], float]] = {
    "ref": (_ref_ns, 0.001),
    "fast": (lambda s: _ref_ns(s) / 4, 0.001),  # 4x faster everywhere
    # A flat 150 ns: slower up to 4 KiB, faster from 8 KiB (a settled crossover).
    "mover": (lambda s: 150.0, 0.001),
    "light": (lambda s: _ref_ns(s) + 2.0, 0.0005),  # +2 ns: under 5% everywhere
    "heavy": (lambda s: _ref_ns(s) + 30.0, 0.0005),  # +30 ns: never under 5%
    # Near 1 on both sides of it with a wide spread: any crossing is unsettled.
    "wobbly": (lambda s: _ref_ns(s) * (1.04 if s <= 2 * KIB else 0.96), 0.25),
    "diag": (lambda s: 1.0, 0.001),  # diagnostic: the fastest, never an answer
    "ctl": (_ref_ns, 0.001),  # control: an A/A copy of ref
}

QUESTIONS = (
    Question("How much faster is each than ref at the largest size?", "ratio", against="ref",
             at={"size": (LARGEST,)}),
    Question("From what size does each beat ref?", "crossover", against="ref",
             variants=("mover", "wobbly"), along="size"),
    Question("What does each add per op, and from what size is it under 5% and 1%?",
             "overhead", against="ref", variants=("light", "heavy"), along="size"),
    Question("What does light add at the smallest size?", "added", against="ref",
             variants=("light",), at={"size": (SMALLEST,)}),
    Question("How large is fast's error?", "error", variants=("fast",), metrics=(ERR,),
             at={"size": (LARGEST,)}),
)


def _bench(questions: tuple[Question, ...] = QUESTIONS,
           modes: tuple[str, ...] = ("a",)) -> Benchmark:
    return Benchmark(
        name="toy", title="Toy", summary="A synthetic benchmark with declared questions.",
        variants=(Variant("ref", "the reference", baseline=True),
                  *(Variant(v, v, diagnostic=v == "diag", control=v == "ctl")
                    for v in TRUTH if v != "ref")),
        params=(Param("size", "bytes", "bytes"), Param("mode", "str", "how")),
        metrics=(Metric(METRIC, "ns", "time per op"),
                 Metric(ERR, "%", "signed estimate error", signed=True),
                 # What a variant adds over ref, measured inside the program: ref has none.
                 Metric(ADDED, "ns", "added over ref, as the program measures it")),
        profiles={p: Profile(p, {"size": SIZES, "mode": modes}, TRIALS, SAMPLES)
                  for p in ("quick", "default", "full")},
        program="toy", crossover_ratios=(1.05, 1.01),
        fits=(Fit(METRIC, "size", "overhead = a + b size"),), questions=questions,
    )


def _run(bench: Benchmark, seed: int = 11,
         mode_factor: Callable[[str], float] = lambda m: 1.0,
         scale: dict[str, float] | None = None, host: str = "toy-host") -> RunRecord:
    rng = np.random.default_rng(seed)
    cases, trials = [], []
    for mode in bench.profiles["quick"].params["mode"]:
        for size in SIZES:
            for v in TRUTH:
                case = Case(bench.name, v, (("size", size), ("mode", mode)))
                cases.append(case)
                true, spread = TRUTH[v]
                for i in range(TRIALS):
                    drift = 1 + spread * rng.standard_normal()
                    ns = true(size) * mode_factor(str(mode)) * (scale or {}).get(v, 1.0) * drift * (
                        1 + 0.0005 * rng.standard_normal(SAMPLES))
                    err = 2.0 + 0.5 * rng.standard_normal(SAMPLES)
                    trials.append(Trial(
                        case=case, index=i, round=i, status="ok",
                        started_at="2026-11-26T10:00:00Z", wall_s=0.01, exit_code=0,
                        samples={METRIC: [float(x) for x in ns],
                                 ERR: [float(x) for x in err],
                                 # The control's added cost is measured as exactly 0.
                                 **({ADDED: [0.0 if v == "ctl" else float(x)
                                             for x in ns - _ref_ns(size)]}
                                    if v != "ref" else {})},
                        counters={}, meta={}, rusage=None))
    return RunRecord(
        schema_version=4, run_id="toy-run", status="complete",
        started_at="2026-11-26T10:00:00Z", finished_at="2026-11-26T10:01:00Z",
        argv=["bakeoff", "run", "toy"], profile="quick", seed=seed,
        host={"hostname": host, "kernel": "6.18", "cpu_model": "toy", "cpus": 2},
        warnings=[], benchmarks={bench.name: bench.info()}, cases=cases, skips=[],
        trials=trials)


@pytest.fixture(scope="module")
def run() -> RunRecord:
    return _run(_bench())


@pytest.fixture(scope="module")
def analysis(run: RunRecord) -> Analysis:
    return analyze(run)


@pytest.fixture(scope="module")
def found(analysis: Analysis) -> BenchmarkFindings:
    return benchmark_findings(analysis.benchmarks[0])


def _answer(found: BenchmarkFindings, form: str) -> Finding:
    return next(f for f in found.answers if f.form == form)


def _at(ba: BenchmarkAnalysis, variant: str, size: int, metric: str = METRIC) -> CaseResult:
    return next(r for r in ba.for_metric(metric)
                if r.case.variant == variant and r.case.param("size") == size)


def test_the_questions_are_valid_declarations() -> None:
    bench = _bench()
    assert [question_problem(bench, q) for q in bench.questions] == [None] * len(QUESTIONS)


def test_a_question_may_not_name_a_diagnostic_or_control_variant() -> None:
    for v in ("diag", "ctl"):
        q = Question("?", "ratio", against="ref", variants=(v,))
        assert question_problem(_bench((q,)), q) == (
            f"variant '{v}' is diagnostic or a control: it never answers a question")


def test_diagnostic_and_control_variants_never_answer(found: BenchmarkFindings) -> None:
    ba = found.analysis
    q = ba.info.questions[0]
    # The variants the question reads (declare/questions.py resolves it for every reader).
    assert {r.case.variant for r in readings(ba, q)} == {"fast", "mover", "light", "heavy",
                                                         "wobbly"}
    # diag is 100x faster than anything: were it eligible it would lead every answer (and
    # win every generic contrast; a fit of its line is a figure, not a claim, and may stay).
    for f in [*found.answers, *(g for g in found.findings if g.kind != "fit")]:
        assert "diag" not in f.text and "ctl" not in f.text, f.text
    assert all(r.case.variant not in ("diag", "ctl") for f in found.answers for r in f.results)


def test_ratio_answer_quotes_the_analysis_at_the_largest_size(found: BenchmarkFindings) -> None:
    ba = found.analysis
    f = _answer(found, "ratio")
    fast = _at(ba, "fast", SIZES[-1]).vs_baseline
    assert fast is not None
    assert f.text.startswith("At size=16 KiB, fast is 4.00× faster than ref"), f.text
    assert (f"{ratio_with_ci(fast.ratio, fast.ci_low, fast.ci_high)}; {TRIALS} + {TRIALS} "
            "trials") in f.text
    assert "size=8 KiB" not in f.text  # only where the question reads it
    assert "more in the table" in f.text  # five variants answer; three are named


def test_a_ratio_answer_on_another_metric_than_the_primary_names_it(
        analysis: Analysis) -> None:
    """Its ratios are that metric's, not the table's (the primary's): it says which it reads,
    in full and at the top of a report; on the primary it names none."""
    ba = analysis.benchmarks[0]
    q = next(q for q in ba.info.questions if q["form"] == "ratio")
    other = ratio_answer(ba, {**q, "metric": ERR})
    assert other is not None
    assert other.text.startswith(f"On {ERR}: at size=16 KiB, "), other.text
    assert other.short.startswith(f"On {ERR}: at size=16 KiB against ref: "), other.short
    primary = ratio_answer(ba, q)
    assert primary is not None and not primary.text.startswith("On ")
    assert METRIC not in primary.short


def test_settled_crossover_is_stated_with_its_interval(found: BenchmarkFindings) -> None:
    ba = found.analysis
    f = _answer(found, "crossover")
    lo, hi = _at(ba, "mover", 4 * KIB).vs_baseline, _at(ba, "mover", 8 * KIB).vs_baseline
    assert lo is not None and hi is not None and lo.ci_low > 1 and hi.ci_high < 1
    assert "mover starts beating ref between 4 KiB and 8 KiB" in f.text, f.text
    assert "mover starts beating ref between 4 KiB and 8 KiB (≈ " in f.short, f.short


def test_crossover_whose_ci_includes_the_level_is_not_stated(found: BenchmarkFindings) -> None:
    ba = found.analysis
    line = [_at(ba, "wobbly", s).vs_baseline for s in SIZES]
    assert all(r is not None for r in line)
    crossings = stats.find_crossovers([float(s) for s in SIZES], [r.ratio for r in line if r],
                                      [r.ci_low for r in line if r],
                                      [r.ci_high for r in line if r])
    assert crossings and not any(c.confident for c in crossings)  # the premise
    f = _answer(found, "crossover")
    wobbly = f.text.split("wobbly", 1)[1]
    assert "starts beating" not in wobbly and "stops beating" not in wobbly
    assert "no settled crossover" in wobbly and "a CI at a crossing includes 1" in f.tentative
    assert "wobbly starts" not in f.short and "wobbly stops" not in f.short
    assert "where wobbly crosses ref is not settled" in f.short, f.short
    # Nor among the generic contrasts: no crossover finding names wobbly.
    assert not [g for g in found.findings if g.kind == "crossover" and "wobbly" in g.text]


def test_overhead_answer_gives_the_paired_difference_and_the_thresholds(
        found: BenchmarkFindings) -> None:
    ba = found.analysis
    f = _answer(found, "overhead")
    for v in ("light", "heavy"):
        cmp = _at(ba, v, SIZES[0]).comparison
        assert cmp is not None and cmp.paired is not None
        d = cmp.paired
        # At the smallest size, paired by round, the point inside its own interval.
        assert (f"{v} adds {fmt_value(d.estimate, 'ns')} per operation at 1 KiB ({v} − ref, "
                f"paired by round, 95% CI {fmt_range(d.ci_low, d.ci_high, 'ns')})") in f.text, \
            f.text
        assert d.ci_low <= d.estimate <= d.ci_high
    # and at every other size of the line, each with its own interval
    assert f.text.count("; at 16 KiB ") == 2, f.text
    # No fit coefficient is named to the reader.
    assert "the fit's a" not in f.text and "a's CI" not in f.text + f.tentative
    light, heavy = f.text.split("heavy adds")[0], f.text.split("heavy adds")[1]
    # light (+2 ns on 110-260 ns) is under 5% everywhere, crosses 1% between 8 and 16 KiB.
    assert "under 5% at every measured size" in light
    assert "under 1% from ≈" in light and "(between 8 KiB and 16 KiB)" in light
    # heavy (+30 ns) never gets under 5%: said with the last point's overhead and CI.
    last = _at(ba, "heavy", SIZES[-1]).vs_baseline
    assert last is not None
    assert (f"under 5%: not reached in the measured range (at 16 KiB: "
            f"{(last.ratio - 1) * 100:+.1f}%, 95% CI {(last.ci_low - 1) * 100:+.1f}%") in heavy
    # The cheapest first, and the short form for the top of the report names both.
    assert f.text.index("light adds") < f.text.index("heavy adds")
    assert "light +" in f.short and "heavy +" in f.short and "not reached" in f.short


def test_added_answer_is_the_shift_with_its_ci(found: BenchmarkFindings) -> None:
    ba = found.analysis
    r = _at(ba, "light", SIZES[0])
    assert r.comparison is not None
    sh = r.comparison.shift
    f = _answer(found, "added")
    assert f.text.startswith("At size=1 KiB, over ref: light adds "
                             f"{fmt_value(sh.estimate, 'ns')} (95% CI "
                             f"{fmt_range(sh.ci_low, sh.ci_high, 'ns')}; 5 + 5 trials)"), f.text
    assert 1.5 < sh.estimate < 2.5


def test_added_of_a_metric_the_reference_lacks_is_its_own_median() -> None:
    """heap-sampling's added_ns_per_alloc is measured inside the program; the baseline has no
    such figure, so what a variant adds is its own median with its CI, said as measured."""
    q = Question("What does heavy add?", "added", against="ref", variants=("heavy",),
                 metric=ADDED, at={"size": (SMALLEST,)})
    ba = analyze(_run(_bench((q,)))).benchmarks[0]
    s = _at(ba, "heavy", SIZES[0], ADDED).summary
    assert s is not None and 29 < s.median < 31
    f = benchmark_findings(ba).answers[0]
    assert f.text == (f"At size=1 KiB, over ref ({ADDED} as measured): heavy adds "
                      f"{fmt_value(s.median, 'ns')} (95% CI {fmt_range(s.ci_low, s.ci_high, 'ns')}"
                      f"; {TRIALS} trials).")


def test_added_over_an_aa_control_is_the_figure_the_table_shows() -> None:
    """heap-sampling asks what each scheme adds over its A/A control, which measures 0, of a
    metric that is itself the addition (measured inside the program); the table shows each
    case's median. The answer quotes that same figure, said as measured: one figure per cell
    (issue 33, point 2), not a shift over the control that takes its noise in again."""
    q = Question("What does light add over the control?", "added", against="ctl",
                 variants=("light",), metric=ADDED, at={"size": (SMALLEST,)})
    ba = analyze(_run(_bench((q,)))).benchmarks[0]
    pair = next(p for (c, ref, _), p in ba.pairs.items()
                if c.variant == "light" and c.param("size") == SIZES[0] and ref.variant == "ctl")
    assert pair.ratio is None  # the control measures 0: no ratio to it
    s = _at(ba, "light", SIZES[0], ADDED).summary
    assert s is not None and 1.5 < s.median < 2.5
    f = benchmark_findings(ba).answers[0]
    assert f.text == (f"At size=1 KiB, over ctl ({ADDED} as measured): light adds "
                      f"{fmt_value(s.median, 'ns')} (95% CI "
                      f"{fmt_range(s.ci_low, s.ci_high, 'ns')}; {TRIALS} trials).")


def test_added_short_form_says_the_metric_and_the_trials_once() -> None:
    """The top of a report: what is added over what once, each point's figures with their
    CIs, the trials once (heap-sampling asks this at two means for three schemes)."""
    q = Question("What do light and heavy add over the control?", "added", against="ctl",
                 variants=("light", "heavy"), metric=ADDED, at={"size": (SMALLEST, LARGEST)})
    ba = analyze(_run(_bench((q,)))).benchmarks[0]
    a = benchmark_findings(ba).answers[0]

    def said(variant: str, size: int) -> str:
        s = _at(ba, variant, size, ADDED).summary
        assert s is not None
        return f"{variant} {fmt_value(s.median, 'ns')} ({fmt_range(s.ci_low, s.ci_high, 'ns')})"

    assert a.short == (f"{ADDED} over ctl (95% CI; {TRIALS} trials each): "
                       f"size=1 KiB: {said('light', SIZES[0])}, {said('heavy', SIZES[0])}; "
                       f"size=16 KiB: {said('light', SIZES[-1])}, {said('heavy', SIZES[-1])}.")
    assert a.text.count("trials") == 4  # the full text keeps each figure's own


def test_error_short_form_gives_each_variants_range() -> None:
    """Over three or more points the top of a report gives each variant's lowest and
    highest RMS, each with its CI and where, not every cell."""
    q = Question("How large is fast's error?", "error", variants=("fast",), metrics=(ERR,))
    ba = analyze(_run(_bench((q,)))).benchmarks[0]
    a = benchmark_findings(ba).answers[0]
    rows = sorted((r for r in ba.for_metric(ERR) if r.case.variant == "fast"),
                  key=lambda r: r.signed.rms if r.signed else 0.0)

    def said(r: CaseResult) -> str:
        e = r.signed
        assert e is not None
        return (f"{fmt_value(e.rms, '%')} ({fmt_range(e.rms_ci_low, e.rms_ci_high, '%')}) at "
                f"size={swept_label(ba.info, 'size', float(r.case.param('size')))}")

    assert a.short == (f"RMS (95% CI; {TRIALS} trials each): {ERR}: fast from {said(rows[0])} "
                       f"to {said(rows[-1])} ({len(SIZES)} points).")
    assert all(f"size={swept_label(ba.info, 'size', float(s))} " in a.text for s in SIZES)


def test_error_answer_is_the_rms_with_its_ci(found: BenchmarkFindings) -> None:
    ba = found.analysis
    e = _at(ba, "fast", SIZES[-1], ERR).signed
    assert e is not None
    f = _answer(found, "error")
    assert f.text == (f"RMS of {ERR}: fast at size=16 KiB {fmt_value(e.rms, '%')} (95% CI "
                      f"{fmt_range(e.rms_ci_low, e.rms_ci_high, '%')}; {TRIALS} trials).")


def test_param_values_compared_within_a_variant() -> None:
    """content=iter against content=text, both through ref: a pair the analysis computes
    (question_pairs.py), not a ratio to the baseline."""
    q = Question("iter or text?", "ratio", param="mode", against="text", variants=("iter",),
                 within=("ref",), at={"size": (SMALLEST, LARGEST)})
    bench = _bench((q,), modes=("text", "iter"))
    assert question_problem(bench, q) is None
    ba = analyze(_run(bench, mode_factor=lambda m: 0.5 if m == "iter" else 1.0)).benchmarks[0]
    f = benchmark_findings(ba).answers[0]
    for size in (SIZES[0], SIZES[-1]):
        pair = next(p for (c, ref, _), p in ba.pairs.items() if c.variant == "ref"
                    and c.param("size") == size and c.param("mode") == "iter")
        assert pair.against.param("mode") == "text" and pair.against.variant == "ref"
        assert pair.ratio is not None and 0.45 < pair.ratio.ratio < 0.55
        label = swept_label(ba.info, "size", size)
        assert (f"at size={label}, iter is {fmt_number(1 / pair.ratio.ratio)}× faster than "
                f"text (ref) (ratio {fmt_number(pair.ratio.ratio)}, 95% CI "
                f"{fmt_number(pair.ratio.ci_low)}–{fmt_number(pair.ratio.ci_high)}").lower() \
            in f.text.lower(), f.text


def test_unmeasured_question_says_so() -> None:
    q = Question("At 1 MiB?", "ratio", against="ref", variants=("fast",),
                 at={"size": (1024 * KIB,)})
    bench = _bench((q,))
    found = benchmark_findings(analyze(_run(bench)).benchmarks[0])
    assert [f.kind for f in found.answers] == ["unanswered"]
    assert found.headline[0].kind != "unanswered"  # the generic winner stands in


def test_answers_lead_every_report(run: RunRecord, analysis: Analysis,
                                   found: BenchmarkFindings) -> None:
    md = render_markdown(run, analysis)
    lines = md.splitlines()
    top = next(i for i, line in enumerate(lines) if line == "## Findings")
    # The line for the benchmark under "## Findings" is its answers, in declared order.
    first = lines[top + 2]
    assert first.startswith("- **toy**: ")
    said = [md_escape(f.headline_text) for f in found.answers]
    assert first == "- **toy**: " + " ".join(said)
    # In its section: each question and its answer, then the generic contrasts.
    section = md.split("## Toy (toy)")[1]
    asked = [section.index(md_escape(q.ask)) for q in QUESTIONS]
    assert asked == sorted(asked) and asked[-1] < section.index("### Other contrasts")
    assert section.index("### Other contrasts") < section.index(
        md_escape(next(f for f in found.findings if f.kind == "winner").text))
    page = render_html(run, analysis)
    answers_at = page.index('<ul class="answers">')
    assert answers_at < page.index("<h3>Other contrasts</h3>", answers_at)
    top_html = page.split('<section id="findings">')[1].split("</section>")[0]
    assert "How much faster" not in top_html
    assert "At size=16 KiB against ref: fast 4.00× faster (95% CI" in top_html
    out = io.StringIO()
    print_summary(run, analysis, Console(file=out, width=400, color_system=None))
    text = out.getvalue()
    assert text.index(QUESTIONS[0].ask) < text.index("Other contrasts")
    last = text.split("\nFindings\n")[1]
    assert re.search(r"• toy: At size=16 KiB against ref: fast 4\.00× faster", last), last


def test_without_questions_the_generic_winner_leads() -> None:
    bench = _bench(())
    found = benchmark_findings(analyze(_run(bench)).benchmarks[0])
    assert found.answers == [] and found.headline[0].kind == "winner"
    # The diagnostic variant (fastest by far) is never named the winner.
    assert "diag" not in found.headline[0].text and "fast" in found.headline[0].text


def _fast_half_as_fast() -> RunRecord:
    """The same run, but fast is 2x (not 4x) faster than ref: one answer changes."""
    return _run(_bench(), scale={"fast": 2.0}, host="other-host")


def _row(rows: list[tuple[str, str, str, bool]], label: str) -> tuple[str, str, str, bool]:
    return next(r for r in rows if r[0] == label)


@pytest.mark.slow(live=False)
def test_compare_sets_each_answer_old_against_new(run: RunRecord) -> None:
    new = _fast_half_as_fast()
    cmp = compare_runs(run, new, 0.02)
    changes = question_changes(cmp)
    assert [c.ask for c in changes] == [q.ask for q in QUESTIONS]
    ratio = changes[0].rows
    _, old, now, holds = _row(ratio, "fast against ref at size=16 KiB")
    assert "ratio 0.25" in old and "ratio 0.5" in now and not holds
    assert _row(ratio, "mover against ref at size=16 KiB")[3]  # unchanged: holds
    md = render_comparison_markdown(cmp)
    assert md.index("**Questions**") < md.index("| benchmark | variant |")
    assert "| toy | How much faster is each than ref at the largest size? | fast against ref " \
        "at size=16 KiB |" in md


@pytest.mark.slow(live=False)
def test_hosts_report_answers_each_question_per_host(run: RunRecord, analysis: Analysis) -> None:
    other = _fast_half_as_fast()
    hosts = HostsAnalysis([HostRun("toy-host", Path("a"), run, analysis),
                           HostRun("other-host", Path("b"), other, analyze(other))],
                          cases={}, facts=[], threshold=0.02)
    found = questions_across(hosts)
    assert [q.ask for q in found] == [q.ask for q in QUESTIONS]
    ratio = found[0]
    assert not ratio.holds
    _, figs, ok = next(r for r in ratio.rows if r[0] == "fast against ref at size=16 KiB")
    assert ok == "differs" and set(figs) == {"toy-host", "other-host"}
    assert next(r for r in ratio.rows if r[0].startswith("mover"))[2] == "holds"
    assert found[2].holds  # overhead: fast is not asked about
    md = MarkdownExporter().fragment(questions_section(hosts))
    assert md.startswith("## Questions, per host")
    assert "differs between hosts in 1 of 5 figures" in md


def test_a_report_of_one_host_compares_nothing(run: RunRecord, analysis: Analysis) -> None:
    """What is left after a host is lost: one host's answers, never "differs" or "holds"
    between hosts, and a title that says nothing is compared (issue 35)."""
    from bakeoff.report.across_hosts import hosts_title, render_hosts_markdown

    one = HostsAnalysis([HostRun("toy-host", Path("a"), run, analysis)], cases={}, facts=[],
                        threshold=0.02)
    assert all(state == ONE_HOST for q in questions_across(one) for _, _, state in q.rows)
    md = MarkdownExporter().fragment(questions_section(one))
    assert md.startswith("## Questions, on one host (nothing compared across hosts)")
    assert "differs" not in md and "holds" not in md and "not compared: only one host" in md
    assert hosts_title(one).startswith("bakeoff on one host, toy-host: nothing compared")
    assert "across 1 hosts" not in render_hosts_markdown(one)


def test_figures_not_settled_on_every_host_neither_hold_nor_differ() -> None:
    unsettled = Figure("ref's overhead under 5%", math.nan, math.nan, math.nan,
                       "under 5%: not settled")
    assert across([unsettled] * 3) == NOT_SETTLED  # three alike: still not "holds"
    settled = Figure("r", 0.5, 0.45, 0.55, "ratio 0.5 (95% CI 0.45–0.55)")
    assert across([settled, unsettled]) == NOT_SETTLED
    assert across([settled, settled]) == "holds" and across([settled]) == ONE_HOST


def test_a_percentage_is_one_figure_in_the_headline_and_in_the_answer() -> None:
    """fast about 5% faster than ref: the first screen's short form and the answer say the
    same percentage, of the ratio itself (5% faster is a ratio of 0.95), not of its inverse
    (a default run's headline said 5.65% where its answer said 5.35%)."""
    found = benchmark_findings(analyze(_run(_bench((QUESTIONS[0],)),
                                            scale={"fast": 3.8})).benchmarks[0])
    (answer,) = found.answers
    short = re.search(r"fast (\d+\.\d+)% faster \(95% CI", answer.headline_text)
    said = re.search(r"fast is (\d+\.\d+)% faster than ref \(ratio (0\.\d+)", answer.text)
    assert short and said, (answer.headline_text, answer.text)
    assert short.group(1) == said.group(1)
    assert abs(float(said.group(1)) - (1 - float(said.group(2))) * 100) < 0.1
