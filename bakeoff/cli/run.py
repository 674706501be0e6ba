"""`bakeoff run`: measure benchmarks, write results.json and the reports."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bakeoff.app.request import RunRequest
from bakeoff.cli.options import request_options
from bakeoff.core.errors import UsageError
from bakeoff.kernels.plan import DEFAULT_BLOCKS

# Every RunRequest field is an option of `run` but cmd's --target-ratio-ci.
WITHOUT = ("target_ratio_ci",)


@request_options(WITHOUT)
def cmd_run(
    request: RunRequest,
    resume: Annotated[Path | None, typer.Option(
        help="Finish an interrupted run in DIR, without repeating its finished trials.")] = None,
    kernel: Annotated[list[str] | None, typer.Option(
        help="NAME=SPEC: run on this kernel, booted in a guest (repeatable; SPEC an image, a "
        ".deb or a Debian package name; docs/KERNELS.md).")] = None,
    functional: Annotated[bool, typer.Option(
        "--functional", help="With --kernel: one short trial per variant on each kernel, and a "
        "table of what runs (any machine; no timing).")] = False,
    blocks: Annotated[int, typer.Option(
        help="With a timed --kernel run: blocks of boots (each boots every kernel once and the "
        "first twice).")] = DEFAULT_BLOCKS,
) -> None:
    """Run benchmarks and write results.json, samples.csv, report.html, report.md and
    details.md."""
    from bakeoff.app import runs
    from bakeoff.run import cleanup

    cleanup.mark_run()
    if kernel:
        if resume is not None:
            raise UsageError("--resume goes on with one kernel's run; drop --kernel")
        # Loaded only for a kernel run: it brings the analysis across runs (numpy) with it.
        from bakeoff.kernels.command import KernelsRequest, run_kernels

        status = run_kernels(request, KernelsRequest(tuple(kernel), functional, blocks))
        if status:
            raise typer.Exit(status)
        return
    if functional or blocks != DEFAULT_BLOCKS:
        raise UsageError("--functional and --blocks go with --kernel NAME=SPEC; e.g. "
                         "--kernel a=linux-image-6.1.0-*-amd64 --functional")
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
