"""Signed metrics (closer to zero is better) and tail quantiles backed by too few values.

A synthetic run whose answer is known: an estimator `exact` (the baseline) is off by about
+1%, `rough` by about -50%. Read as a plain lower-is-better number, -50% would look "faster";
read as an error, it is 50 times worse. Every layer (analysis, verdicts, compare, the three
report formats) must say the second.
"""

from __future__ import annotations

import html
import io
import re
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from bakeoff.analysis.across_runs import compare_runs
from bakeoff.analysis.within_run import analyze
from bakeoff.declare.model import Benchmark, Case, Metric, Param, Profile, RunRecord, Trial, Variant
from bakeoff.report.compare import render_comparison_markdown
from bakeoff.report.format import fmt_number
from bakeoff.report.html import render_html
from bakeoff.report.markdown import md_escape, render_details, render_markdown
from bakeoff.report.terminal import print_summary
from bakeoff.stats import drift
from bakeoff.stats.estimates import MIN_VALUES_FOR_TAIL_QUANTILES
from bakeoff.store import results as store

ERROR = "error_pct"
TRIALS, VALUES = 8, 5  # 40 values per case: enough for p5/p95


def _benchmark(signed: bool) -> Benchmark:
    return Benchmark(
        name="estimators", title="Estimators", summary="synthetic signed errors",
        variants=(Variant("exact", "about +1%", baseline=True), Variant("rough", "about -50%")),
        params=(Param("n", "int", "how many values a case has"),),
        metrics=(Metric(ERROR, "%", "signed estimation error", signed=signed),),
        profiles={"quick": Profile("quick", {"n": (1,)}, TRIALS, VALUES)},
        program="fake",
    )


def _run(signed: bool, centers: dict[str, float], seed: int = 1,
         trials: int = TRIALS) -> RunRecord:
    bench = _benchmark(signed)
    rng = np.random.default_rng(seed)
    cases, records = [], []
    for variant, center in centers.items():
        case = Case(bench.name, variant, (("n", trials * VALUES),))
        cases.append(case)
        for i in range(trials):
            values = [float(v) for v in center + 0.2 * rng.standard_normal(VALUES)]
            records.append(Trial(case, i, i, "ok", "2026-11-23T00:00:00Z", 0.1, 0,
                                 {ERROR: values}, {}, {}, None))
    return RunRecord(store.SCHEMA_VERSION, f"signed-{seed}", "complete", "2026-11-23T00:00:00Z",
                     "2026-11-23T00:01:00Z", ["bakeoff"], "quick", seed,
                     {"hostname": "h", "kernel": "6.18", "cpu_model": "cpu"}, [],
                     {bench.name: bench.info()}, cases, [], records)


def _result(run: RunRecord, variant: str):  # type: ignore[no-untyped-def]
    ba = analyze(run).benchmarks[0]
    return next(r for r in ba.for_metric(ERROR) if r.case.variant == variant)


def test_minus_fifty_percent_ranks_worse_than_plus_one() -> None:
    rough = _result(_run(True, {"exact": 1.0, "rough": -50.0}), "rough")
    assert rough.verdict == "slower"  # worse than the baseline, beyond doubt
    assert rough.vs_baseline is not None and rough.vs_baseline.ratio == pytest.approx(50, rel=0.05)
    assert rough.summary is not None and rough.summary.median == pytest.approx(50, abs=0.5)
    # The sign is not lost: the bias says which way, the RMS how far, each with a CI.
    assert rough.signed is not None
    assert rough.signed.bias == pytest.approx(-50, abs=0.5)
    assert rough.signed.bias_ci_low <= rough.signed.bias <= rough.signed.bias_ci_high
    assert rough.signed.rms == pytest.approx(50, abs=0.5)
    assert rough.signed.rms_ci_low <= rough.signed.rms <= rough.signed.rms_ci_high
    # The same numbers declared as a plain lower-is-better metric rank -50 "faster": the
    # very mistake the signed declaration exists to prevent.
    plain = _result(_run(False, {"exact": 1.0, "rough": -50.0}), "rough")
    assert plain.signed is None and plain.verdict != "slower"


def test_a_signed_metric_cannot_prefer_higher() -> None:
    with pytest.raises(ValueError, match="closer to zero"):
        Metric(ERROR, "%", "x", signed=True, lower_is_better=False)


def test_compare_calls_a_larger_error_a_regression_whatever_its_sign() -> None:
    old = _run(True, {"exact": 1.0, "rough": 1.0}, seed=1)
    new = _run(True, {"exact": 1.0, "rough": -50.0}, seed=2)
    # A spread of the runs' host measured (bakeoff selftest): one run a side can be judged.
    keys = tuple(c.key for c in old.cases)
    measured = drift.Drift(0.01, 10, drift.host_key(old.host), "2026-01-01", "test",
                           next(iter(old.benchmarks)), ERROR, keys)
    cmp = compare_runs(old, new, threshold=0.02, drifts=[measured])
    change = next(c for c in cmp.changes if c.case.variant == "rough")
    assert change.signed and change.verdict == "slower" and change.regressed_beyond(0.05)
    assert next(c for c in cmp.changes if c.case.variant == "exact").verdict in ("inconclusive", "equivalent")
    assert md_escape("|value| 50.0 %") in render_comparison_markdown(cmp)


def test_signed_metric_round_trips_through_results_json(tmp_path: Path) -> None:
    store.save(_run(True, {"exact": 1.0, "rough": -50.0}), tmp_path)
    loaded = store.load(tmp_path)
    assert loaded.benchmarks["estimators"].is_signed(ERROR)
    assert _result(loaded, "rough").verdict == "slower"


def test_reports_say_what_a_signed_figure_is_of() -> None:
    run = _run(True, {"exact": 1.0, "rough": -50.0})
    analysis = analyze(run)
    md = render_details(run, analysis)
    assert "closer to zero is better: median, CI, p5/p95, ratio and verdict of \\|value\\|" in md
    assert "bias: mean signed (95% CI)" in md and "RMS (95% CI)" in md
    rough_row = next(line for line in md.splitlines() if line.startswith("| rough |"))
    assert "-50" in rough_row and "slower" in rough_row
    # report.md's finding and compact table: rough is the worse estimator, by |value|.
    rough = _result(run, "rough")
    assert rough.vs_baseline is not None
    summary = render_markdown(run, analysis)
    assert (f"exact (the baseline) wins: rough is "
            f"{fmt_number(rough.vs_baseline.ratio)}× higher \\|error_pct\\|") in summary
    assert re.search(r"^\| \(all\) \| [\d.]+ \([\d.]+–[\d.]+\) ✗ \| 8 \|$", summary, re.M)
    page = render_html(run, analysis)
    assert "bias: mean signed (95% CI)" in page and "|error_pct| (median, 95% CI)" in page
    out = io.StringIO()
    print_summary(run, analysis, Console(file=out, width=200))
    assert "closer to zero is better" in out.getvalue()


@pytest.mark.parametrize("trials", [1, 3])
def test_tail_quantiles_from_too_few_values_are_not_shown(trials: int) -> None:
    """5 or 15 values cannot place a p5 or p95; 40 can. Markdown, html and the terminal."""
    few = _run(True, {"exact": 1.0, "rough": -50.0}, trials=trials)
    n = trials * VALUES
    assert n < MIN_VALUES_FOR_TAIL_QUANTILES
    analysis = analyze(few)
    flag = f"— (n = {n} < {MIN_VALUES_FOR_TAIL_QUANTILES})"
    md = render_details(few, analysis)
    rows = [line for line in md.splitlines() if line.startswith(("| exact", "| rough"))]
    assert len(rows) == 2 and all(md_escape(flag) in row for row in rows)
    assert html.escape(flag) in render_html(few, analysis)
    out = io.StringIO()
    print_summary(few, analysis, Console(file=out, width=200))
    assert "p5 / p95" not in out.getvalue()  # the terminal table has no quantile columns
    # Enough values: the quantiles are shown, not flagged.
    enough = _run(True, {"exact": 1.0, "rough": -50.0})
    md = render_details(enough, analyze(enough))
    rough_row = next(line for line in md.splitlines() if line.startswith("| rough |"))
    assert "< 20" not in rough_row and " / 50" in rough_row
