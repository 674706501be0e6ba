"""`bakeoff selftest`: the A/A experiment of bakeoff/selftest/aa_runs.py on this host, its figures
printed; `--of DIR`: the run-to-run drift of a `cmd` run's own commands, measured and kept
with that run (DIR/drift.json) for `bakeoff compare`."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated

import typer

from bakeoff.app.console import err_console, out_console
from bakeoff.app.request import RunRequest
from bakeoff.core.errors import UsageError


def cmd_selftest(
    runs: Annotated[int, typer.Option(
        help="Back-to-back A/A runs (at least 3; more pairs, a firmer spread).")] = 6,
    trials: Annotated[int, typer.Option(help="Trials per command and size in each run.")] = 5,
    runs_per_trial: Annotated[int, typer.Option(
        "--executions", help="Executions of the command per trial.")] = 5,
    sizes: Annotated[str, typer.Option(
        help="Work sizes (awk loop counts), comma-separated.")] = "300000,1200000",
    threshold: Annotated[float, typer.Option(
        help="Smallest difference a verdict calls faster/slower, in %.")] = 2.0,
    seed: Annotated[int, typer.Option(help="Seed of the first run (then +1 per run).")] = 1,
    of: Annotated[Path | None, typer.Option(
        "--of", help="A `bakeoff cmd` results directory: run its commands again --runs times "
        "back to back and keep the drift measured with it (DIR/drift.json), where `bakeoff "
        "compare` of that run finds it.")] = None,
) -> None:
    """Measure this host's false-alarm rate: back-to-back runs of identical commands; prints
    interval coverage and false alarms within and across runs and the run-to-run spread
    (about 2 minutes at the defaults on a 2-CPU VM at load 4, longer under more load).
    With --of DIR: the drift of DIR's own commands, recorded with DIR for `bakeoff compare`."""
    from bakeoff.run import cleanup
    from bakeoff.selftest import aa_runs as selftest

    if runs < 3:
        raise UsageError("--runs must be at least 3 (two run pairs), e.g. --runs 6")
    if trials < 2 or runs_per_trial < 1:
        raise UsageError("--trials must be at least 2 and --executions at least 1, e.g. "
                         "--trials 5 --executions 5")
    if not 0 <= threshold < 100:
        raise UsageError("--threshold is a percentage from 0 to 100, e.g. --threshold 2")
    try:
        work = [int(s) for s in sizes.split(",")]
    except ValueError:
        work = []
    if not work or any(s < 1 for s in work):
        raise UsageError(f"--sizes {sizes!r}: give loop counts of 1 or more, e.g. "
                         "--sizes 300000,1200000")
    RunRequest(seed=seed).check()
    if of is not None and not (of / "results.json").is_file():
        raise UsageError(f"--of {of}: no results.json there; give a `bakeoff cmd` results "
                         "directory")
    cleanup.mark_run()

    def say(text: str) -> None:
        err_console.print(text, highlight=False)

    if of is not None:
        from bakeoff.selftest import drift_of

        found = drift_of.measure(of, runs, threshold / 100, say, seed)
        out_console.print(f"drift of {found.benchmark} {found.metric} on this host: "
                          f"{found.words()}; recorded in {of / 'drift.json'}, where `bakeoff "
                          f"compare {of} NEW` finds it", highlight=False, soft_wrap=True)
        return

    figs, spread = selftest.measure(runs, trials, runs_per_trial, work, seed, threshold / 100,
                                    say)
    out = out_console
    out.print(f"within a run (A' against A): {figs.within.words()}", highlight=False)
    out.print(f"across runs, one run a side, the run's own CI: {figs.across_raw.words()}",
              highlight=False)
    out.print(f"across runs, widened by the run-to-run spread (leave-one-pair-out): "
              f"{figs.across_widened.words()}", highlight=False)
    if spread is None or math.isnan(spread.sigma):
        out.print("run-to-run spread: not measured (no run pair had a ratio)", highlight=False)
        return
    out.print(f"run-to-run spread of these awk commands: ±{spread.sigma * 100:.1f}% per run "
              f"(log-scale SD, from {spread.pairs} run pairs); not recorded: it is this "
              "command's, now. For a comparison's drift, `bakeoff selftest --of DIR` measures "
              "that run's own commands and keeps it with the run", highlight=False,
              soft_wrap=True)
