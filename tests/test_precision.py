"""Precision where the answer needs it: which cases a Question reads (bakeoff/declare/questions.py),
the trials allocation gives them until their answer is as narrow as asked
(allocation.answer_cases_needing_trials), and the half-width the analysis reports."""

from __future__ import annotations

import dataclasses
import itertools
import math
from pathlib import Path

import numpy as np
import pytest
from test_report import make_run

from bakeoff.analysis import within_run as analysis
from bakeoff.core.errors import UsageError
from bakeoff.declare import questions, registry
from bakeoff.declare.model import (
    LARGEST,
    SMALLEST,
    Case,
    ParamValue,
    Question,
    RunContext,
    RunSettings,
)
from bakeoff.machine import host
from bakeoff.plan import cases as plan
from bakeoff.report.format import fmt_number
from bakeoff.report.markdown import render_details
from bakeoff.run import allocation, runner
from bakeoff.stats import estimates as stats

B = "b"


def _cases(variants: tuple[str, ...], **params: tuple[ParamValue, ...]) -> list[Case]:
    """Every variant at every point of the grid, as plan.plan_benchmark makes them."""
    return [Case(B, v, tuple(zip(params, combo, strict=True)))
            for v in variants for combo in itertools.product(*params.values())]


# ---- questions.py ----------------------------------------------------------------------------


def test_a_ratio_question_reads_its_points_with_largest_resolved_against_the_grid() -> None:
    cases = _cases(("iterate", "batch", "mmap", "diag"), map=("hash", "array"),
                   entries=(1000, 500_000))
    q = Question("per element or batched?", "ratio", against="iterate",
                 at={"map": ("hash",), "entries": (LARGEST,)})
    reads = questions.question_readings(q, 0, cases, "iterate", not_answers=("diag",))
    assert {(r.case.variant, r.case.params) for r in reads} == {
        ("batch", (("map", "hash"), ("entries", 500_000))),
        ("mmap", (("map", "hash"), ("entries", 500_000)))}
    assert all(r.kind == "ratio" and r.reference == Case(B, "iterate", r.case.params)
               and r.target_ci == 0.05 for r in reads)
    # SMALLEST, and a grid without the largest value the profile had: the run's decides.
    q_small = dataclasses.replace(q, at={"map": ("hash",), "entries": (SMALLEST,)})
    assert {r.case.param("entries") for r in
            questions.question_readings(q_small, 0, cases, "iterate")} == {1000}
    fewer = [c for c in cases if c.param("entries") == 1000]
    assert {r.case.param("entries") for r in
            questions.question_readings(q, 0, fewer, "iterate")} == {1000}


def test_a_missing_reference_or_point_reads_nothing() -> None:
    cases = _cases(("batch",), entries=(10, 20))  # no "iterate" case ran (skipped)
    q = Question("?", "ratio", against="iterate", variants=("batch",), at={"entries": (10,)})
    assert questions.question_readings(q, 0, cases, "iterate") == []
    q2 = dataclasses.replace(q, at={"entries": (999,)})
    assert questions.question_readings(q2, 0, cases + _cases(("iterate",), entries=(10, 20)),
                                       "iterate") == []


def test_a_param_question_compares_values_within_a_variant() -> None:
    cases = _cases(("held", "cat"), content=("legacy-parse", "bpf-iter"), fields=(3, 16, 40))
    q = Question("iterator vs text?", "ratio", param="content", against="legacy-parse",
                 variants=("bpf-iter",), within=("held",), at={"fields": (3, LARGEST)})
    reads = questions.question_readings(q, 1, cases, "held")
    assert sorted((r.case.variant, r.case.param("fields")) for r in reads) == [
        ("held", 3), ("held", 40)]
    for r in reads:
        assert r.question == 1 and r.case.param("content") == "bpf-iter"
        assert r.reference == Case(B, "held", (("content", "legacy-parse"),
                                              ("fields", r.case.param("fields"))))


def test_crossover_and_overhead_read_the_axis() -> None:
    cases = _cases(("memcpy", "mremap", "mremap-after-munmap"), size=(4, 64, 1024))
    cross = Question("from what size?", "crossover", against="memcpy", variants=("mremap",),
                     along="size")
    reads = questions.question_readings(cross, 0, cases, "memcpy",
                                        not_answers=("mremap-after-munmap",))
    assert [(r.kind, r.case.param("size"), r.levels) for r in reads] == [
        ("level", 4, (1.0,)), ("level", 64, (1.0,)), ("level", 1024, (1.0,))]
    assert all(r.target_ci is None for r in reads)
    over = Question("ns added?", "overhead", against="memcpy", along="size")
    reads = questions.question_readings(over, 0, cases, "memcpy",
                                        not_answers=("mremap-after-munmap",),
                                        crossover_ratios=(1.05, 1.01), primary_metric="ns")
    levels = [r for r in reads if r.kind == "level"]
    added = [r for r in reads if r.kind == "difference"]
    assert {r.case.variant for r in reads} == {"mremap"}  # the diagnostic one never answers
    assert all(r.levels == (1.05, 1.01) and r.metric == "ns" for r in levels)
    assert [(r.case.param("size"), r.target_ci) for r in added] == [(4, 0.05)]


def test_an_error_question_reads_each_metric_without_reference() -> None:
    cases = _cases(("none", "poisson", "hash"), mean=(4096, 2 << 20))
    q = Question("how wrong?", "error", metrics=("err_a", "err_b"), at={"mean": (LARGEST,)})
    reads = questions.question_readings(q, 2, cases, "none")
    assert sorted((r.case.variant, r.metric) for r in reads) == [
        ("hash", "err_a"), ("hash", "err_b"), ("poisson", "err_a"), ("poisson", "err_b")]
    assert all(r.reference is None and r.kind == "error" for r in reads)


def test_every_room_question_reads_cases_of_its_default_grid() -> None:
    """Each declared question, on its room's default profile's grid, reads at least one
    case; and a question round-trips through results.json's dict."""
    for bench in registry.discover().values():
        profile = bench.profiles["default"]
        cases = _cases(tuple(v.name for v in bench.variants), **dict(profile.params))
        cases = [dataclasses.replace(c, benchmark=bench.name) for c in cases]
        for i, q in enumerate(bench.questions):
            assert questions.question_from_dict(q.to_dict()) == q
            reads = questions.question_readings(
                q, i, cases, bench.baseline.name,
                [v.name for v in bench.variants if v.control or v.diagnostic],
                bench.crossover_ratios, bench.primary_metric.name)
            assert reads, f"{bench.name}: {q.ask} reads no case of the default grid"


# ---- allocation: trials until the answer is precise ------------------------------------------


def _trial(rng: np.random.Generator, centre: float, spread: float) -> list[float]:
    level = centre * math.exp(spread * rng.standard_normal())
    return list(level * np.exp(0.01 * rng.standard_normal(5)))


def _run(rng: np.random.Generator, spread: float, rule: allocation.Rule,
         precision: allocation.Precision | None,
         cases: list[Case], ratios: dict[Case, float],
         others: allocation.Others | None = None) -> dict[Case, list[list[float]]]:
    data: dict[Case, list[list[float]]] = {c: [] for c in cases}
    while todo := allocation.cases_needing_trials(
            cases, {c: len(d) for c, d in data.items()}, lambda c: data[c], "base", rule,
            precision, lambda c, _m: data[c], others):
        for case in todo:
            data[case].append(_trial(rng, 100.0 * ratios[case], spread))
    return data


ASKED = Case(B, "v", (("n", 2),))
ASKED_BASE = Case(B, "base", (("n", 2),))
OTHER = Case(B, "v", (("n", 1),))
OTHER_BASE = Case(B, "base", (("n", 1),))
ALL = [OTHER_BASE, OTHER, ASKED_BASE, ASKED]
RATIOS = {OTHER_BASE: 1.0, OTHER: 0.5, ASKED_BASE: 1.0, ASKED: 0.5}


def _precision(target: float = 0.05, most: int = 40) -> allocation.Precision:
    reading = questions.Reading(0, "ratio", ASKED, ASKED_BASE, "ns", target)
    return allocation.Precision((reading,), most)


def test_the_asked_cases_get_trials_until_their_answer_is_narrow_and_no_other_does() -> None:
    rule = allocation.Rule.for_benchmark(3, 5, 0.02, ())
    data = _run(np.random.default_rng(1), 0.06, rule, _precision(), ALL, RATIOS)
    # Far from every level, the other case stops at the minimum; the asked one goes on.
    assert len(data[OTHER]) == len(data[OTHER_BASE]) == 3
    assert 3 < len(data[ASKED]) < 40 and len(data[ASKED_BASE]) == len(data[ASKED])
    reading = _precision().readings[0]
    assert allocation.reading_half_width(reading, lambda c, _m: data[c], _precision().rng) <= 0.05
    # Without precision, the same rule stops both at the minimum.
    plain = _run(np.random.default_rng(1), 0.06, rule, None, ALL, RATIOS)
    assert len(plain[ASKED]) == 3


def test_an_answer_that_cannot_be_narrow_stops_at_its_share() -> None:
    rule = allocation.Rule.for_benchmark(None, 4, 0.02, ())  # a fixed design: 4 each
    data = _run(np.random.default_rng(2), 0.5, rule, _precision(0.001, most=9), ALL, RATIOS)
    assert len(data[ASKED]) == len(data[ASKED_BASE]) == 9
    assert len(data[OTHER]) == 4


@pytest.mark.slow(live=False)
def test_cases_no_question_reads_get_their_own_count_and_no_more() -> None:
    """Profile.other_trials: the unread cases get exactly that many, though the levels
    (a ratio level with the baseline) would give them more; the asked ones go on, in a
    sequential and in a fixed design."""
    others = allocation.Others(frozenset({OTHER, OTHER_BASE}), 2)
    level = {**RATIOS, OTHER: 1.0}  # its ratio's interval holds 1 +- 2%: open by the levels
    for low, high in ((3, 8), (None, 5)):
        rule = allocation.Rule.for_benchmark(low, high, 0.02, ())
        data = _run(np.random.default_rng(5), 0.06, rule, _precision(), ALL, level, others)
        assert len(data[OTHER]) == len(data[OTHER_BASE]) == 2
        assert len(data[ASKED]) > rule.min_trials and len(data[ASKED_BASE]) == len(data[ASKED])
        # Without it, the levels keep the unread pair going to the rule's most.
        if rule.sequential:
            plain = _run(np.random.default_rng(5), 0.06, rule, _precision(), ALL, level)
            assert len(plain[OTHER]) == high


def test_an_unread_variant_does_not_open_the_baseline_an_answer_shares() -> None:
    """A variant no question reads, level with the baseline at an asked point, gives that
    baseline case no trial beyond what the asked variant's answer needs."""
    unread = Case(B, "w", ASKED.params)
    cases = [ASKED_BASE, ASKED, unread]
    ratios = {ASKED_BASE: 1.0, ASKED: 0.5, unread: 1.0}
    rule = allocation.Rule.for_benchmark(3, 10, 0.02, ())
    others = allocation.Others(frozenset({unread}), 2)
    data = _run(np.random.default_rng(6), 0.03, rule, None, cases, ratios, others)
    assert len(data[unread]) == 2 and len(data[ASKED_BASE]) == len(data[ASKED]) == 3
    plain = _run(np.random.default_rng(6), 0.03, rule, None, cases, ratios)
    assert len(plain[ASKED_BASE]) == 10


@pytest.mark.slow(live=False)
def test_every_room_default_gives_the_unread_cases_fewer_trials(tmp_path: Path) -> None:
    """Each room's default profile names other_trials, below its trials; the runner's set
    of unread cases is exactly the cases no reading of its questions touches."""
    caps = host.capabilities()
    ctx = RunContext(build_dir=tmp_path, scratch_dir=tmp_path,
                     capabilities={k: c.available for k, c in caps.items()}, host=host.HostFacts())
    for bench in registry.discover().values():
        profile = bench.profiles["default"]
        assert profile.other_trials is not None and 2 <= profile.other_trials < profile.trials
        # Every variant's case, whether or not this machine can run it.
        cases = [dataclasses.replace(c, benchmark=bench.name) for c in
                 _cases(tuple(v.name for v in bench.variants), **dict(profile.params))]
        bp = plan.BenchmarkPlan(benchmark=bench, profile=profile, cases=cases, skips=[])
        others = runner._others(bp, RunSettings())
        assert others is not None and others.trials == profile.other_trials
        readings = questions.benchmark_readings(
            bench.questions, cases, bench.baseline.name,
            [v.name for v in bench.variants if v.control or v.diagnostic],
            bench.crossover_ratios, bench.primary_metric.name)
        assert others.cases == set(cases) - questions.answer_cases(readings)
        # --target-ci decides alone; --trials asks every case for its count.
        assert runner._others(bp, RunSettings(target_ci=0.05)) is None
        assert plan.plan_benchmark(bench, "default", [], {}, 7, None, caps,
                                   ctx).profile.other_trials is None


def test_a_metric_the_case_does_not_report_gets_it_no_trials() -> None:
    """An error question names each scheme's metric, and every variant it asks is read on
    each (heap-sampling: poisson's error and the hash's); a variant whose trials report none
    of one would otherwise take trials up to the share, in vain."""
    wide = questions.Reading(0, "error", ASKED, None, "their_err", 0.05)
    narrow = questions.Reading(0, "error", ASKED, None, "my_err", 10.0)
    precision = allocation.Precision((wide, narrow), 9)
    mine = [[1.0, -1.0, 2.0], [1.5, -0.5, 1.0], [0.5, 1.0, -2.0]]

    def values(_case: Case, metric: str) -> list[list[float]]:
        return mine if metric == "my_err" else [[], [], []]

    assert allocation.answer_cases_needing_trials({ASKED: 3}, values, precision) == set()
    # Before any trial ran, a reading with no values yet still asks for one.
    assert allocation.answer_cases_needing_trials({ASKED: 0}, lambda _c, _m: [], precision) \
        == {ASKED}


@pytest.mark.slow(live=False)
def test_stopping_at_the_target_leaves_the_reported_interval_within_it() -> None:
    """By simulation: where the rule stopped because the answer was narrow enough, the
    report's bootstrap CI half-width is within the target in nearly every draw."""
    rule = allocation.Rule.for_benchmark(3, 3, 0.02, ())
    rng = np.random.default_rng(3)
    within = stopped = 0
    for _ in range(60):
        data = _run(rng, 0.05, rule, _precision(0.05, most=30), [ASKED_BASE, ASKED], RATIOS)
        if len(data[ASKED]) >= 30:
            continue
        stopped += 1
        r = stats.ratio_of_medians(data[ASKED], data[ASKED_BASE], rng, n_boot=1000)
        within += allocation.relative_half_width(r.ci_low, r.ci_high, r.ratio) <= 0.05
    assert stopped >= 50 and within / stopped >= 0.95


def test_a_crossover_spends_on_the_points_next_to_the_crossing_only() -> None:
    line = [Case(B, v, (("n", n),)) for n in (1, 2, 3, 4) for v in ("base", "v")]
    ratios = {c: 1.0 if c.variant == "base" else r for c, r in
              zip(line, [1, 0.3, 1, 0.97, 1, 1.03, 1, 3.0], strict=True)}
    reads = tuple(questions.Reading(0, "level", c, Case(B, "base", c.params), "ns", None,
                                    (1.0,), "n") for c in line if c.variant == "v")
    rule = allocation.Rule.for_benchmark(None, 3, 0.02, ())
    data = _run(np.random.default_rng(4), 0.03, rule, allocation.Precision(reads, 12), line,
                ratios)
    counts = {c.params[0][1]: len(data[c]) for c in line if c.variant == "v"}
    assert counts[1] == counts[4] == 3  # far from 1 on both sides of no crossing
    assert counts[2] > 3 and counts[3] > 3


# ---- analysis ----------------------------------------------------------------------------------


def test_the_analysis_reports_each_answers_half_width() -> None:
    run = make_run()
    info = next(iter(run.benchmarks.values()))
    info.questions = [Question("move or copy?", "ratio", against="memcpy",
                               variants=("mremap",), at={"size": (LARGEST, 16 * 1024)}).to_dict()]
    answers = analysis.analyze(run).benchmarks[0].answers
    assert [a.case.param("size") for a in answers] == [16 * 1024, 1024 * 1024]
    for a in answers:
        assert a.kind == "ratio" and a.reference is not None
        assert a.ci_low <= a.value <= a.ci_high
        assert a.half_width == pytest.approx((a.ci_high - a.ci_low) / 2 / a.value)
        assert a.n_trials == a.n_reference_trials == 5 and a.target == 0.05
        assert a.met == (a.half_width <= 0.05)


@pytest.mark.slow(live=False)
def test_details_show_each_answers_half_width_against_its_target() -> None:
    run = make_run()
    info = next(iter(run.benchmarks.values()))
    info.questions = [Question("move or copy?", "ratio", against="memcpy",
                               variants=("mremap",), at={"size": (LARGEST,)},
                               target_ci=0.0001).to_dict()]
    result = analysis.analyze(run)
    [a] = result.benchmarks[0].answers
    details = render_details(run, result)
    section = details.split("### Answers' precision", 1)[1].split("###", 1)[0]
    assert "Q1: move or copy?" in section
    row = next(line for line in section.splitlines() if line.startswith("| Q1 |"))
    assert "mremap, size=1 MiB" in row and "| memcpy |" in row
    assert f"{fmt_number(a.half_width * 100)}% (over target)" in row  # 0.01% cannot be met
    assert "| 5 + 5 |" in row
    # Without questions, no section.
    info.questions = []
    assert "### Answers' precision" not in render_details(run, analysis.analyze(run))


def test_trials_asks_for_a_count_and_resume_keeps_the_answers_share(tmp_path: Path) -> None:
    """--trials N: every case N trials, the questions' cases too; a recorded answer_trials
    comes back with --resume, so a resumed run spends as the first did."""
    bench = registry.select(["mremap-vs-memcpy"])[0]
    share = bench.profiles["default"].answer_trials
    assert share is not None and share > bench.profiles["default"].trials
    caps = host.capabilities()
    ctx = RunContext(build_dir=tmp_path, scratch_dir=tmp_path,
                     capabilities={k: c.available for k, c in caps.items()}, host=host.HostFacts())
    assert plan.plan_benchmark(bench, "default", [], {}, None, None, caps,
                               ctx).profile.answer_trials == share
    assert plan.plan_benchmark(bench, "default", [], {}, 7, None, caps,
                               ctx).profile.answer_trials is None
    recorded = plan._recorded_profile("default", bench.name, {"trials": 8, "samples": 8,
                                                              "answer_trials": 12})
    assert recorded.answer_trials == 12
    with pytest.raises(UsageError, match="bad 'answer_trials'"):
        plan._recorded_profile("default", bench.name, {"trials": 8, "samples": 8,
                                                      "answer_trials": 0})
    # other_trials too: a resumed run gives the unread cases what the first one did.
    assert plan._recorded_profile("default", bench.name, {"trials": 8, "samples": 8,
                                                          "other_trials": 3}).other_trials == 3
    with pytest.raises(UsageError, match="bad 'other_trials'"):
        plan._recorded_profile("default", bench.name, {"trials": 8, "samples": 8,
                                                      "other_trials": 0})


def test_only_the_first_crossing_of_a_level_gets_trials() -> None:
    """An overhead hovering about the 1% level at the long end (noise crossing it back and
    forth) spends nothing there; the first crossing, where it falls under, does."""
    line = [Case(B, v, (("n", n),)) for n in (1, 2, 3, 4, 5) for v in ("base", "v")]
    ratios = {c: 1.0 if c.variant == "base" else r for c, r in
              zip(line, [1, 1.2, 1, 1.02, 1, 1.004, 1, 1.012, 1, 1.003], strict=True)}
    reads = tuple(questions.Reading(0, "level", c, Case(B, "base", c.params), "ns", None,
                                    (1.01,), "n") for c in line if c.variant == "v")
    rule = allocation.Rule.for_benchmark(None, 3, 0.02, ())
    data = _run(np.random.default_rng(5), 0.004, rule, allocation.Precision(reads, 12), line,
                ratios)
    counts = {c.params[0][1]: len(data[c]) for c in line if c.variant == "v"}
    assert counts[1] == counts[4] == counts[5] == 3, counts
    assert counts[2] > 3 or counts[3] > 3, counts
