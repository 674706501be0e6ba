"""`bakeoff compare OLD NEW`: case by case, ratio new/old with a CI that allows for run-to-run
drift (measured for the benchmark and kept with the runs, or runs as the unit) and one of the
three verdicts; `--rerun` measures two `bakeoff cmd` runs' commands again, interleaved in one
run. The gate decides by the table's own verdict."""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from bakeoff.app.console import err_console, out_console
from bakeoff.app.request import RunRequest
from bakeoff.core import lazy
from bakeoff.core.errors import UsageError
from bakeoff.declare.model import RunRecord


def cmd_compare(
    old: Annotated[Path, typer.Argument(help="Results directory before the change.")],
    new: Annotated[Path, typer.Argument(help="Results directory after the change.")],
    threshold: Annotated[float, typer.Option(
        help="Smallest difference a verdict calls faster/slower, in %.")] = 2.0,
    fail_on_regression: Annotated[float | None, typer.Option(
        help="Exit 1 when a case's verdict is slower (Holm-corrected, as the table) and its "
             "whole CI is more than PCT % slower; never on an inconclusive case.")] = None,
    format: Annotated[str, typer.Option(help="text | md")] = "text",
    more_old: Annotated[list[Path] | None, typer.Option(
        "--old", help="Another run before the change (repeatable): with two or more runs a "
        "side, each run is one observation, so run-to-run drift is in the CI.")] = None,
    more_new: Annotated[list[Path] | None, typer.Option(
        "--new", help="Another run after the change (repeatable).")] = None,
    rerun: Annotated[bool, typer.Option(
        "--rerun", help="Two `bakeoff cmd` runs: measure their commands again, old and new "
        "interleaved in one run, and compare within it.")] = False,
    out: Annotated[Path | None, typer.Option(
        help="With --rerun: the rerun's results directory (default: results/<time>-cmd).")]
        = None,
    target_ratio_ci: Annotated[float | None, typer.Option(
        help="With --rerun: measure until each new/old ratio's CI half-width is within PCT % "
             "(default 3: a 10% change is then called, docs/STATISTICS.md).")] = None,
    time_budget: Annotated[float | None, typer.Option(
        help="With --rerun: stop measuring after this many seconds (default 600); a target "
             "not reached by then is said.")] = None,
    metric: Annotated[str | None, typer.Option(
        help="Compare this metric instead of each benchmark's primary one (e.g. cpu_time, "
             "or instructions for `cmd --instructions` runs); see docs/STATISTICS.md, "
             "\"Measured beside two CPU hogs\", for which decides best on a busy machine.")]
        = None,
) -> None:
    """Compare runs case by case: ratio new/old with a CI that allows for run-to-run drift."""
    from bakeoff.store import results as store

    if format not in ("text", "md"):
        raise UsageError(f"--format '{format}' is unknown; use text or md")
    if not 0 <= threshold < 100:
        raise UsageError("--threshold is a percentage from 0 to 100, e.g. --threshold 2")
    if fail_on_regression is not None and not 0 <= fail_on_regression < math.inf:
        raise UsageError("--fail-on-regression is a percentage of 0 or more, e.g. 5")
    olds, news = [old, *(more_old or [])], [new, *(more_new or [])]
    if len({p.resolve() for p in olds}) < len(olds) or len({p.resolve() for p in news}) < len(news):
        raise UsageError("a run directory is given twice on one side; give each run once")
    if rerun and (more_old or more_new):
        raise UsageError("--rerun measures one old and one new run again; drop --old/--new")
    if time_budget is not None and not 0 < time_budget < math.inf:
        raise UsageError("--time-budget is a number of seconds above 0, e.g. --time-budget 120")
    for given, name in ((out, "--out"), (target_ratio_ci, "--target-ratio-ci"),
                        (time_budget, "--time-budget")):
        if given is not None and not rerun:
            raise UsageError(f"{name} goes with --rerun (the run it measures); add --rerun or "
                             f"drop {name}")
    before, after = [store.load(p) for p in olds], [store.load(p) for p in news]
    # Runs that counted instructions are decided on them, as `history` decides (a rerun
    # counts them again when either side did): the metric a busy machine does not move.
    instead = None if metric is not None else _counted_instead([*before, *after], rerun)
    if instead is not None:
        metric = "instructions"
    with lazy.signals_held():  # imported only when comparing (bakeoff/core/lazy.py says why)
        from bakeoff.analysis.across_runs import compare_runs
        from bakeoff.report.compare import print_comparison, render_comparison_markdown
        from bakeoff.stats import drift

    if rerun:
        again = _rerun(before[0], after[0], threshold, out, target_ratio_ci,
                       quiet=format == "md", time_budget=time_budget, primary=metric)
        cmp = compare_runs(*again, threshold / 100, interleaved=True, metric=metric)
    else:
        # Drift is kept with the runs it was measured for (bakeoff selftest --of DIR).
        kept = [d for p in [*olds, *news] for d in drift.load_drifts(p)]
        cmp = compare_runs(before, after, threshold / 100, kept, metric=metric)
    if not cmp.changes:
        raise UsageError(f"{old} and {new} share no measured case; compare runs of the same "
                         "benchmarks and params")
    said_instead = None if instead is None else _counted_instead_text(instead)
    if format == "md":
        sys.stdout.write(render_comparison_markdown(cmp, threshold / 100))
        if said_instead is not None:
            sys.stdout.write(f"\n{said_instead}\n")
    else:
        print_comparison(cmp, out_console, threshold / 100)
        if said_instead is not None:
            out_console.print(said_instead, highlight=False, soft_wrap=True)
        _say_what_differs(cmp, threshold)
    if fail_on_regression is not None:
        _gate(cmp, fail_on_regression)


def _counted_instead(runs: list[RunRecord], either: bool) -> str | None:
    """The primary metric the instruction count replaces in this comparison
    (stats/load_metrics.counted_instead), or None. either: a --rerun, which counts again
    when either side counted."""
    from bakeoff.stats import load_metrics

    infos = [info for r in runs for info in r.benchmarks.values()]
    primaries = {info.primary_metric for info in infos}
    if len(primaries) != 1:
        return None
    recorded = [{m["name"] for m in info.metrics} for info in infos]
    if either:
        recorded = [set().union(*recorded)]
    primary = primaries.pop()
    return primary if load_metrics.counted_instead(primary, recorded) else None


def _counted_instead_text(primary: str) -> str:
    from bakeoff.stats import load_metrics

    return load_metrics.counted_instead_text(
        primary, f"`bakeoff compare … --metric {primary}` compares {primary}")


def _rerun(old: RunRecord, new: RunRecord, threshold: float, out: Path | None,
           target_ratio_ci: float | None, quiet: bool,
           time_budget: float | None = None,
           primary: str | None = None) -> tuple[RunRecord, RunRecord]:
    """`compare --rerun`: one `cmd` run of both runs' commands, split back into the sides.
    primary: the metric the comparison decides on, which the rerun's target is set for."""
    from bakeoff.analysis.within_run import MIN_TRIALS_FOR_VERDICT
    from bakeoff.app import runs
    from bakeoff.cmd import definition as adhoc
    from bakeoff.cmd import rerun
    from bakeoff.run import cleanup

    target = rerun.TARGET_RATIO_CI_PCT if target_ratio_ci is None else target_ratio_ci
    budget = rerun.TIME_BUDGET_S if time_budget is None else time_budget

    defn, p = rerun.definition(old, new)
    adhoc.check(defn)
    # They come from results.json files: say what will run before it runs.
    for c in defn.commands:
        err_console.print(f"--rerun runs {c.name!r}: {c.command}", highlight=False,
                          soft_wrap=True)
    cleanup.mark_run()
    floor = MIN_TRIALS_FOR_VERDICT if primary == "instructions" else rerun.MIN_TRIALS
    trials = max(int(str(p.get("trials", 10))), floor)
    bench = adhoc.benchmark(defn, trials, int(str(p.get("samples", 10))),
                            int(str(p.get("warmup_samples", 1))),
                            int(str(p.get("warmup_trials", 1))),
                            float(str(p.get("timeout_s", 600))), primary=primary)
    # No --max-trials: the cap is fitted to what the target needs at the measured spread
    # (bakeoff/run/target.py), and a target the budget cannot reach is said as soon as seen.
    request = RunRequest(out=out, quiet=quiet, threshold=threshold,
                         time_budget=budget, target_ratio_ci=target)
    started = time.monotonic()
    run, run_dir = runs.start(request, [bench])
    rounds = len({t.round for t in run.trials})
    outcome = (f"not to its target: {run.stop_reason}" if run.stop_reason else
               f"until each ratio's CI was within ±{target:g}%")
    err_console.print(
        f"--rerun measured {rounds} rounds of old and new in {time.monotonic() - started:.0f} s, "
        f"{outcome} (at least {trials} rounds, at most {budget:g} s)",
        highlight=False, soft_wrap=True)
    runs.report_run(run, run_dir, True)
    if runs.say_failed(run):
        raise typer.Exit(1)
    return rerun.split(run)


def _gate(cmp: Any, fail_on_regression: float) -> None:
    """--fail-on-regression: exit 1 on a case the table calls slower (the same Holm-corrected
    verdict) whose whole CI lies beyond PCT worse. A case that reads beyond PCT but is not
    called (inconclusive: drift not measured, or not significant after Holm) is named with
    what would settle it, and does not fail."""
    fraction = fail_on_regression / 100
    worse = [c for c in cmp.changes if c.regressed_beyond(fraction)]
    for c in worse:
        err_console.print(
            f"regression: {c.case.key}: new/old = {c.ratio.ratio:.3f} "
            f"(95% CI {c.ratio.ci_low:.3f}–{c.ratio.ci_high:.3f}, {c.basis}, p Holm "
            f"{c.p_holm:.2g}), slower and wholly beyond {fail_on_regression:g}%",
            highlight=False)
    untold = [c for c in cmp.changes if c.verdict != "slower" and c.looks_beyond(fraction)]
    if untold:
        err_console.print(
            f"not failed: {len(untold)} case(s) read more than {fail_on_regression:g}% slower "
            "but the verdict is not slower (" + "; ".join(
                f"{c.case.key} {(c.ratio.ratio - 1) * 100:+.1f}%, {c.verdict}"
                for c in untold[:5]) + ("; ..." if len(untold) > 5 else "") + "); "
            + (untold[0].settle or "more trials would settle it"), highlight=False,
            soft_wrap=True)
    if worse:
        raise typer.Exit(1)


def _say_what_differs(cmp: Any, threshold: float) -> None:
    """The answer in a few lines: how many cases each verdict has, which differ beyond the
    threshold, and, for runs from two hosts, which host facts differ."""
    from bakeoff.stats import verdicts

    differ = [c for c in cmp.changes if verdicts.is_called(c.verdict)]
    counts = {v: sum(c.verdict == v for c in cmp.changes) for v in verdicts.VERDICTS}
    out_console.print(f"{len(cmp.changes)} cases: " + ", ".join(
        f"{n} {v}" for v, n in counts.items()), highlight=False, soft_wrap=True)
    out_console.print(f"{len(differ)} of {len(cmp.changes)} cases differ beyond ±{threshold:g}%"
                      + (": " + "; ".join(f"{c.case.key} {(c.ratio.ratio - 1) * 100:+.1f}%"
                                          for c in differ) if differ else ""),
                      highlight=False, soft_wrap=True)
    _say_better_metric(cmp)
    from bakeoff.analysis.across_hosts import HostRun, fact_rows
    from bakeoff.report.facts import fact_text

    rows = [r for r in fact_rows([HostRun("old", Path(), cmp.old, None),  # type: ignore[arg-type]
                                  HostRun("new", Path(), cmp.new, None)])  # type: ignore[arg-type]
            if r.differs]
    if cmp.old.host.get("hostname") != cmp.new.host.get("hostname") or rows:
        shown = "; ".join(f"{r.fact}: {r.values['old']} → {r.values['new']}" for r in rows[:12])
        more = f" and {len(rows) - 12} more" if len(rows) > 12 else ""
        out_console.print(f"host facts that differ (old → new): {shown or 'none'}{more}"
                          + ("" if shown else f" ({fact_text(cmp.old.host.get('hostname'))} → "
                             f"{fact_text(cmp.new.host.get('hostname'))})"),
                          highlight=False, soft_wrap=True)


def _say_better_metric(cmp: Any) -> None:
    """Name the metric that decided, and a better one the runs also recorded, when a case
    left inconclusive decided on a metric a busy machine moves (stats/load_metrics.py)."""
    from bakeoff.stats import load_metrics, verdicts

    untold = [c for c in cmp.changes if c.verdict == verdicts.INCONCLUSIVE]
    for decided in dict.fromkeys(c.metric for c in untold):  # each benchmark's, in order
        better = load_metrics.better_metric(
            decided, [{m["name"] for m in c.info.metrics} for c in untold if c.metric == decided])
        if better is not None:
            break
    else:
        return
    out_console.print(load_metrics.better_metric_text(
        decided, better, "these runs also recorded",
        f"compare again with --rerun --metric {better}, or with --metric {better} after "
        "`bakeoff selftest --of OLD` (it keeps that metric's drift too)"),
        highlight=False, soft_wrap=True)
