"""report.md and details.md say nothing a reviewer would refuse (tests/report_claims.py): no
interval ending at its point, no ranking of cases whose CIs overlap, no negative cost or
count, no two figures for one cell. Read on the two recorded runs of tests/fixtures/fleet_runs,
on synthetic runs made to tempt each flaw (costs that noise cannot resolve, two variants level
with each other, counters from two trials), and on a fresh `bakeoff run` (the session's
mremap quick run). The scanner itself is shown to find each flaw in text the code before
this check printed (the reports retired from docs/runs are such text)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from report_claims import flaws
from test_findings import _two_variant_run

from bakeoff.analysis.within_run import analyze
from bakeoff.declare.model import Metric, RunRecord, Trial
from bakeoff.report.format import fmt_ratio, fmt_with_ci
from bakeoff.report.markdown import render_details, render_markdown
from bakeoff.stats import estimates as stats
from bakeoff.store import results as store

RECORDED = Path(__file__).parent / "fixtures" / "fleet_runs"
COMMITTED = Path(__file__).resolve().parents[1] / "docs" / "runs"


def _said(run: RunRecord) -> dict[str, str]:
    analysis = analyze(run)
    return {"report.md": render_markdown(run, analysis),
            "details.md": render_details(run, analysis)}


def _flaws(said: dict[str, str]) -> list[str]:
    return [str(f) for name, text in said.items() for f in flaws(text, name)]


@pytest.mark.parametrize("recorded", ["a", "b"])
@pytest.mark.slow(live=False)
def test_the_recorded_runs_reports_say_nothing_refused(recorded: str) -> None:
    said = _said(store.load(RECORDED / recorded))
    assert _flaws(said) == []


def _noisy(values: dict[str, tuple[float, float]], seed: int, trials: int = 6) -> RunRecord:
    """Per variant (mean, sd) of its per-trial values, drawn: a cost at the timer's floor
    (0.4 ns each, noise 0.2 ns) is the case that tempts a ranking, and a negative cost."""
    rng = np.random.default_rng(seed)
    run = _two_variant_run({v: [float(x) for x in rng.normal(m, sd, trials)]
                            for v, (m, sd) in values.items()},
                           metric_of={next(iter(values)): "other"}, sizes=(4096, 65536))
    for info in run.benchmarks.values():  # a decision minus NONE's: a net difference
        info.metrics = [{**m, "net": True} if m["name"] == "ns" else m for m in info.metrics]
    return run


@pytest.mark.slow(live=False)
def test_costs_noise_cannot_resolve_are_neither_ranked_nor_said_as_costs() -> None:
    """heap-sampling's pattern: the reference reports no cost; schemes at 0.4 ns whose CIs
    overlap, and a mode where every figure is noise around 0 (medians below 0)."""
    for seed in range(4):
        level = _said(_noisy({"base": (0, 1), "poisson": (0.45, 0.2), "hash": (0.43, 0.2)},
                             seed))
        assert _flaws(level) == [], seed
        noise = _said(_noisy({"base": (0, 1), "poisson": (-20, 80), "hash": (-5, 80)}, seed))
        assert _flaws(noise) == [], seed
        assert "resolved from 0" in noise["report.md"] or \
            "cannot be told apart" in noise["report.md"], noise["report.md"]
    told = _said(_noisy({"base": (0, 1), "poisson": (0.45, 0.2), "hash": (0.43, 0.2)}, 0))
    assert "cannot be told apart" in told["report.md"]


def test_two_variants_level_with_each_other_are_not_ranked() -> None:
    """Both 30% faster than the baseline, within noise of each other: no 'wins' alone."""
    rng = np.random.default_rng(5)
    run = _two_variant_run({"base": [float(x) for x in rng.normal(100, 2, 6)],
                            "a": [float(x) for x in rng.normal(70, 2, 6)],
                            "b": [float(x) for x in rng.normal(70, 2, 6)]})
    said = _said(run)
    assert _flaws(said) == []
    assert "cannot be told apart" in said["report.md"]


def test_counters_from_two_trials_get_no_interval() -> None:
    """A page-fault count of 1.25 and 17.0 in two counted trials: the t interval from 2
    (2.88e-13–73.8 M) is refused, its trial count said; a count from more trials never
    reaches below 0."""
    run = _two_variant_run({"base": [100.0] * 3, "v": [50.0] * 3})
    faults = {("base", 0): 1.25, ("base", 1): 17.0, ("v", 0): 0.0, ("v", 1): 3.0, ("v", 2): 0.0}
    trials = []
    for t in run.trials:
        count = faults.get((t.case.variant, t.index))
        if count is not None:
            t = Trial(t.case, t.index, t.round, t.status, t.started_at, t.wall_s, t.exit_code,
                      {**t.samples, "per_op.page_faults_minor": [count]}, t.counters, t.meta,
                      t.rusage)
        trials.append(t)
    run.trials = trials
    said = _said(run)
    assert _flaws(said) == []
    assert "2 counted trials: too few for a CI" in said["details.md"]
    assert "e-13" not in said["details.md"]


def test_a_fresh_runs_reports_say_nothing_refused(mremap_quick_run: Path) -> None:
    said = {name: (mremap_quick_run / name).read_text() for name in ("report.md", "details.md")}
    assert _flaws(said) == []


# Reports the code before this check wrote for runs once committed in docs/runs (their
# results.json were not kept, so they cannot be rendered again): retired from docs/runs, whose
# figures the docs quote, and kept here as text the check must refuse.
BEFORE_THE_CHECK = Path(__file__).parent / "fixtures" / "reports-before-the-check"


def test_the_committed_reports_say_nothing_refused() -> None:
    """docs/runs' reports, the runs the docs quote, say nothing refused; and every report
    retired for saying something refused still does (else it belongs back in docs/runs)."""
    reports = sorted(p for p in COMMITTED.glob("*.md") if p.name != "README.md")
    assert reports
    for p in reports:
        assert [str(f) for f in flaws(p.read_text(), p.name)] == [], p.name
    retired = sorted(BEFORE_THE_CHECK.glob("*.md"))
    assert retired
    for p in retired:
        assert flaws(p.read_text(), p.name), f"{p.name} says nothing refused: it may go back"


# What the committed default run of 2026-11-29 printed before Metric.net and the trial-count
# rule for intervals (docs/runs/default-20261129-epyc.md as first committed), one of each.
PRINTED_BEFORE_NET = (
    "| workload, mean | none | poisson-tagged | trials |\n|---|---:|---:|---:|\n"
    "| inline-4096, 2 MiB | 0.00265 ns (-0.141–0.146 ns) | 6.81e-05 µs (1.77e-11–262 µs) "
    "| 2–15 |\n"
    "| mode1, 4 KiB | -34.9 ns (-358–288 ns) | -19.3 ns (-307–268 ns) | 2–6 |\n\n"
    "- Along mean with workload=inline-64: at 4 KiB poisson and poisson-tagged cannot be told "
    "apart on decide_ns_per_alloc: 0.528 ns (95% CI 0.386–0.721 ns; 15 trials) against "
    "0.568 ns (95% CI 0.0535–6.02 ns; 2 trials); poisson / poisson-tagged 1.15e-12 T, 99.7% "
    "CI 1.95e-51–6.79e+26 T, Bonferroni over 18.\n"
    "- Along mean with workload=mode4: at 2 MiB poisson-tagged and poisson cannot be told "
    "apart on decide_ns_per_alloc: 0.169 ns (95% CI -2.93–3.27 ns; 2 trials) against 0.480 ns "
    "(95% CI 0.195–0.766 ns; 5 trials).\n")


def test_the_check_finds_each_flaw_in_what_was_printed_before() -> None:
    """The committed reports written before this check, and what the default run printed
    before Metric.net: the check finds in them each kind of flaw the issue quotes (so a test
    above that passes is no check that cannot fail)."""
    text = "\n".join(p.read_text() for p in sorted(BEFORE_THE_CHECK.glob("*.md")))
    kinds = {f.kind for f in flaws(text, "docs/runs")}
    assert {"interval ends at its point", "ranking of overlapping cases",
            "negative cost"} <= kinds, kinds
    before = [f.kind for f in flaws(PRINTED_BEFORE_NET, "before")]
    assert set(before) == {"interval spans decades", "ratio with an SI prefix", "negative cost",
                           "comparison with a figure not resolved from 0"}, before
    assert before.count("negative cost") == 2, before  # the two cells below 0, not the CIs
    quoted = ("- **x**: batch-256 3.94× faster (95% CI 3.94–8.24×); poisson 1.22 ns "
              "(95% CI 0.880–1.57 ns).\n- At n=2, a makes 0.500 (95% CI -5.85–6.85) context "
              "switches per op against 1.00 for b.\n")
    assert [f.kind for f in flaws(quoted, "quoted")] == ["interval ends at its point",
                                                         "count below zero"]
    cell = ("## x\n\n- At 4 KiB memcpy (the baseline) wins: the closest, m, is 58.8× slower "
            "(ratio 58.8, 95% CI 57.2–61.5; 5 + 5 trials).\n\n| size | m |\n|---|---:|\n"
            "| 4 KiB | 59.3 (57.2–61.5) ✗ |\n")
    assert [f.kind for f in flaws(cell, "cell")] == ["two figures for one cell"]
    # A contended cell (its mark after the glyph) is the same cell: still caught.
    assert [f.kind for f in flaws(cell.replace("✗ |", "✗ † |"), "cell")] == \
        ["two figures for one cell"]
    pair = ("## x\n\n- At y, a and b cannot be told apart (a / b 0.910, 95% CI 0.723–1.15).\n"
            "- At y, a beats c, and cannot be told apart from b (a / b 0.910, 97.5% CI "
            "0.653–1.27, Bonferroni over 2).\n")
    assert [f.kind for f in flaws(pair, "pair")] == ["two figures for one cell"]
    # The same pair on another metric, said so, is another comparison (the first-dump
    # answer of bpf-map-dump beside its ns_per_entry answer), not a second figure.
    other = pair.replace("- At y, a beats c", "- On first_ns: at y, a beats c")
    assert flaws(other, "other") == []


def test_a_ratio_on_another_metric_or_against_a_median_is_no_second_figure() -> None:
    """A sentence that says it reads a metric other than the table's quotes that metric's
    ratio, and a median cell ("13.4 ns (…)") is no ratio: neither is the cell told twice;
    the same sentence on the table's metric still is."""
    table = ("| map | a | b |\n|---|---:|---:|\n"
             "| hash | 0.119 (0.0494–0.287) ✓ † | 13.4 ns (12.1–14.9 ns) |\n")
    said = ("## x\n\nTable: ns_per_entry of each variant / b's (ratio of trial medians).\n\n"
            "- **Which is fastest?** On {metric}: at map=hash, a is 10.0× faster than c (ratio "
            "0.0999, 95% CI 0.0535–0.187; 3 + 3 trials).\n"
            "- At map=hash, c is 5.06× faster than b (ratio 0.198, 95% CI 0.0600–0.650).\n\n"
            + table)
    assert flaws(said.format(metric="first_ns_per_entry"), "other") == []
    assert [f.kind for f in flaws(said.format(metric="ns_per_entry"), "same")] == \
        ["two figures for one cell"]


def test_a_contended_note_is_no_point_of_its_own() -> None:
    """"for at least 10% of their wall time" in a finding's contended note names no point:
    two pairs at two workloads, each with that note, are two comparisons (a run beside two
    CPU hogs printed these; the scan called them one cell said twice), while the same pair
    said twice at one workload still is."""
    note = ("† Contended: the trials of a, b waited for a CPU for at least 10% of their wall "
            "time; the figure is partly other work's.")
    line = ("- At workload={w} a and b cannot be told apart on d: 1.01 ns (95% CI 0.5–1.9 ns; 3 "
            "trials) against 1.55 ns (95% CI 1.09–2.02 ns; 3 trials); a / b {r}, 99% CI "
            "0.0764–4.96, Bonferroni over 5. " + note + "\n")
    text = "## x\n\n" + line.format(w="i64", r="0.615") + line.format(w="m64", r="0.545")
    assert flaws(text, "two points") == []
    text = "## x\n\n" + line.format(w="i64", r="0.615") + line.format(w="i64", r="0.545")
    assert [f.kind for f in flaws(text, "one point")] == ["two figures for one cell"]


def test_an_interval_narrower_than_six_digits_is_said_as_a_share() -> None:
    """A TSC-tick ratio whose CI is a millionth of its point (heap-sampling's `none` against
    `no-preload` in a fresh all-rooms run: 1.405770, 1.405766–1.405772) printed as
    "1.41 (1.41–1.41)" once six digits could not part its ends."""
    said = fmt_ratio(1 / 0.711354, 1 / 0.711356, 1 / 0.711353)
    assert said == "1.40577 (±0.0003%)"
    assert flaws(f"| none | {said} |", "details.md") == []
    assert flaws("| none | 1.41 (1.41–1.41) |", "details.md") != []
    # An end that is the point itself stays visible as such, for the scanner to find.
    assert fmt_with_ci(1.05, 1.05, 1.34, "ns") == "1.05 ns (95% CI 1.05–1.34 ns)"


def test_ends_that_print_as_the_point_in_other_digits_get_more() -> None:
    """A speed-up of 1/ratio (an all-rooms run's cgroup-stat-read, CI 2026-11-29): 0.99996 with
    CI 0.99502-1.00499 printed "1.000× (0.995–1.00×)", its high end the point's value in
    fewer digits, which the scanner refuses. Digits are added until the values differ."""
    said = fmt_with_ci(0.99996, 0.99502, 1.00499, "×", "").replace(" ×", "×")
    assert said == "1.0000× (0.9950–1.005×)"
    assert flaws(f"| reopen | {said} |", "details.md") == []
    assert flaws("| reopen | 1.000× (0.995–1.00×) |", "details.md") != []


def test_a_net_difference_is_never_on_log_scale_nor_a_ratio_unless_resolved() -> None:
    """heap-sampling's decide_ns_per_alloc at 2 MiB: two trials near 0, both positive. On log
    scale its CI was 1.77e-11–262 µs; declared net (Metric.net) it is linear, not floored at
    0, and the report says it is not resolved from 0; no ratio is formed from it."""
    with pytest.raises(ValueError, match="net difference"):
        Metric("d", "ns", "a difference", signed=True, net=True)
    two = [[6.8e-5] * 4, [0.6] * 4]
    assert stats.median_ci(two).low < 1e-6  # what log scale gave: decades
    net = stats.median_ci(two, log=False)
    assert net.low < 0 < net.high
    run = _noisy({"base": (0, 1), "poisson": (0.45, 0.2), "hash": (0.43, 0.2)}, 0)
    assert all(m.get("net") for info in run.benchmarks.values() for m in info.metrics
               if m["name"] == "ns")
    trials, k = [], 0
    for t in run.trials:  # hash's trials straddle 0 at the first size: not resolved
        if t.case.variant == "hash" and dict(t.case.params)["size"] == 4096:
            k += 1
            t = dataclasses.replace(t, samples={**t.samples, "ns": [
                (-1.0 if k % 2 else 1.0) * 0.5 * k] * 4})
        trials.append(t)
    run.trials = trials
    analysis = analyze(run)
    said = {"report.md": render_markdown(run, analysis),
            "details.md": render_details(run, analysis)}
    assert _flaws(said) == []
    assert "not resolved from 0" in said["report.md"]
    hash_small = [r for ba in analysis.benchmarks for r in ba.results
                  if r.case.variant == "hash" and r.metric == "ns"
                  and dict(r.case.params)["size"] == 4096]
    assert hash_small and all(r.vs_baseline is None for r in hash_small)
    assert not any("hash / " in line or " / hash" in line
                   for line in said["report.md"].splitlines() if "4 KiB" in line)


def test_a_ratio_takes_no_si_prefix_and_two_trials_give_no_interval() -> None:
    """'poisson / poisson-tagged 1.15e-12 T' was a ratio of 1.15 scaled by its CI's end."""
    said = fmt_ratio(1.15, 0.95, 1.3e12)  # an end at a trillion: no prefix for the factor
    assert " T" not in said and flaws(f"- a / b {said}", "r") == [], said
    assert [f.kind for f in flaws("- a / b 1.15 T, 99.7% CI 0.95–1.3 T", "r")] == \
        ["ratio with an SI prefix"]
    assert stats.MIN_TRIALS_FOR_CI == 3
    # 3 trials of a whole-app wall time on a busy machine: "0.128 s (4.93e-07–33,016 s)".
    wide = fmt_with_ci(0.128e9, 4.93e-07 * 1e9, 33_016e9, "ns", "")
    assert wide == "128 ms (over three decades wide)", wide
    assert flaws(f"| x | {wide} |", "details.md") == []
    assert flaws("| x | 128 ms (4.93e-07–33,016 s) |", "details.md") != []
