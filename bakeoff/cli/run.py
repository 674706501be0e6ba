"""`bakeoff run`: measure benchmarks, write results.json and the reports."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bakeoff.app import runs
from bakeoff.app.request import RunRequest
from bakeoff.cli.options import request_options
from bakeoff.core.errors import UsageError
from bakeoff.run import cleanup

# Every RunRequest field is an option of `run` but cmd's --target-ratio-ci.
WITHOUT = ("target_ratio_ci",)


@request_options(WITHOUT)
def cmd_run(
    request: RunRequest,
    resume: Annotated[Path | None, typer.Option(
        help="Finish an interrupted run in DIR, without repeating its finished trials.")] = None,
) -> None:
    """Run benchmarks and write results.json, samples.csv, report.html, report.md and
    details.md."""
    cleanup.mark_run()
    if resume is not None:
        given = request.refused_with_resume()
        if given:
            raise UsageError(f"--resume goes on as the run was started; drop {', '.join(given)}")
        run, run_dir = runs.resume(resume, request.quiet)
    else:
        request.check()
        run, run_dir = runs.start(request, runs.benchmarks(request))
    runs.report_run(run, run_dir, request.quiet, request)
    if runs.say_failed(run):
        raise typer.Exit(1)
