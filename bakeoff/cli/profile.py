"""`bakeoff profile DIR --case ...`: where a case's time goes, under perf record (the run's
trials are not touched; bakeoff/perf/record.py)."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Annotated

import typer

from bakeoff.app.console import out_console
from bakeoff.core import lazy
from bakeoff.core.errors import UsageError, one_line


def cmd_profile(
    run_dir: Annotated[Path, typer.Argument(help="A results directory written by bakeoff run.")],
    case: Annotated[str, typer.Option(
        help="The case: 'variant=V,PARAM=VALUE,...' (params may be left out while one case "
             "still fits).")],
    benchmark: Annotated[str | None, typer.Option(
        help="The benchmark, when the run has several with such a case.")] = None,
    seconds: Annotated[float, typer.Option(
        help="Seconds of trials to sample per case (whole trials, lengthened to fill it).")]
        = 3.0,
    repeat: Annotated[int | None, typer.Option(
        help="Repeat the timed operation N times in each timed section (--profile-repeat; "
             "default: the room's profile_repeat; 1 profiles trials as measured).")] = None,
) -> None:
    """Where a case's time goes: the case and its baseline run again under perf record -g,
    through the room's own session and trial preparation; flame graphs (each, and the
    difference) go into the report. The run's trials are not touched."""
    from bakeoff.app import runs
    from bakeoff.run import cleanup, interrupts
    from bakeoff.store import results as store

    cleanup.mark_run()
    if not (0 < seconds <= 600 and math.isfinite(seconds)):
        raise UsageError("--seconds is a number of seconds above 0 and up to 600, e.g. "
                         "--seconds 3")
    if repeat is not None and not 1 <= repeat <= 1_000_000:
        raise UsageError("--repeat is a whole number from 1 to 1000000, e.g. --repeat 1")
    run = store.load(run_dir)
    with lazy.signals_held():
        from bakeoff.perf.record import ProfileFailed, find_case

    plan, found = find_case(runs.recorded_plans(run), case, benchmark)
    try:
        pair = runs.profile(run, run_dir, plan, found, seconds, repeat)
    except ProfileFailed as exc:
        print(f"bakeoff: error: {one_line(str(exc))}", file=sys.stderr)
        raise typer.Exit(1) from None
    interrupts.tell(lambda: f"the profile is saved in {run_dir}/profiles; `bakeoff report "
                    f"{run_dir}` draws it")
    from bakeoff.perf import flamegraph
    from bakeoff.perf import store as profile_store

    for cp in (pair.case, pair.baseline):
        if cp is None:
            continue
        path = run_dir / profile_store.PROFILES_DIR / cp.file
        top = ", ".join(f"{frame} {share:.0%}" for frame, share in
                        flamegraph.top_frames(profile_store.load_folded(path), n=3))
        out_console.print(f"{cp.case.key}: {cp.samples} samples of {pair.event} in "
                          f"{cp.trials} trial(s), {cp.wall_s:.1f} s; most self time: {top}",
                          highlight=False, soft_wrap=True)
        note = profile_store.timed_share_note(cp)
        if note:
            out_console.print(f"{cp.case.key}: {note}", highlight=False, soft_wrap=True)
        out_console.print(f"wrote {path}", highlight=False)
    for p in runs.write_exports(run, run_dir)[1]:
        out_console.print(f"wrote {p}", highlight=False)
