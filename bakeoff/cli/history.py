"""`bakeoff history`: the runs recorded in the history database, per series, and where their
level changed; `history add DIR…` imports results directories; `history page` writes the
trends as one offline HTML page (bakeoff/history/)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated

import typer

from bakeoff.core.errors import UsageError

HISTORY_HELP = ("The history: a file path (SQLite) or postgresql://USER@HOST/DB; default "
                "$BAKEOFF_HISTORY, else history.sqlite in the user's state directory.")

app = typer.Typer(help="Runs over time (docs/HISTORY.md). Without a command: per series, each "
                       "recorded run (time, labels, median with 95% CI, trials) and where the "
                       "level changed. `add` records runs, `page` draws the trends.",
                  no_args_is_help=False, invoke_without_command=True)


@app.callback()
def cmd_history(
    ctx: typer.Context,
    history: Annotated[str | None, typer.Option("--history", help=HISTORY_HELP)] = None,
    benchmark: Annotated[str | None, typer.Option(help="Only this benchmark's series.")] = None,
    machine: Annotated[str | None, typer.Option(
        help="Only this machine's series: its hostname, or its name as listed.")] = None,
    metric: Annotated[str, typer.Option(
        help="A metric's name, 'primary' (each benchmark's first; instructions where every "
             "run of a wall-time series counted them, docs/STATISTICS.md) or 'all'.")]
        = "primary",
) -> None:
    """List per series the recorded runs (time, labels, median with 95% CI, trials) and where
    the level changed."""
    if ctx.invoked_subcommand is not None:
        if history is not None:
            ctx.obj = history  # `bakeoff history --history X add DIR` means X too
        return
    from bakeoff.history.store import open_history

    with open_history(history) as h:
        from bakeoff.history import listing  # numpy and scipy: once the history opened

        again = ["bakeoff", "history", *(["--history", history] if history else []),
                 *(["--machine", machine] if machine else [])]
        found = listing.histories(h, benchmark, machine, metric, shlex.join(again))
        total = h.run_count()
        where = h.location.shown
    if not found:
        what = " that match" if benchmark or machine or metric not in ("primary", "all") else ""
        print(f"no series{what} in {where} ({total} runs recorded); record runs with "
              "`bakeoff history add DIR…`")
        return
    for lines in (listing.series_lines(sh) for sh in found):
        print("\n".join(lines))
        print()


def _history_of(ctx: typer.Context, given: str | None) -> str | None:
    return given if given is not None else ctx.obj if isinstance(ctx.obj, str) else None


@app.command("add")
def cmd_history_add(
    ctx: typer.Context,
    run_dirs: Annotated[list[Path], typer.Argument(
        help="Results directories (written by bakeoff run or bakeoff cmd).")],
    label: Annotated[list[str] | None, typer.Option(
        "--label", help="KEY=VALUE recorded with each run (repeatable), e.g. commit=abc123.")] = None,
    history: Annotated[str | None, typer.Option("--history", help=HISTORY_HELP)] = None,
) -> None:
    """Record existing runs in the history; a run recorded before stays one record (the labels
    given now are merged into it)."""
    from bakeoff.history.record import parse_labels, record_dirs

    labels = parse_labels(label or [])
    for r in record_dirs(run_dirs, _history_of(ctx, history), labels):
        what = "recorded" if r.added else "already recorded (labels merged)"
        print(f"{r.run_dir}: {what}: {r.series} series, {r.trials} trial values")


@app.command("page")
def cmd_history_page(
    ctx: typer.Context,
    out: Annotated[Path, typer.Option(help="The HTML file to write.")] = Path("history.html"),
    history: Annotated[str | None, typer.Option("--history", help=HISTORY_HELP)] = None,
    metric: Annotated[str, typer.Option(
        help="A metric's name, 'primary' (each benchmark's first) or 'all'.")] = "primary",
) -> None:
    """Write one offline HTML page: a trend per series with its band (each run's 95% CI), the
    change points marked with the labels on each side, filterable by benchmark and machine."""
    from bakeoff.history import listing, page
    from bakeoff.history.store import open_history

    if out.is_dir():
        raise UsageError(f"--out {out} is a directory; give a file, e.g. {out / 'history.html'}")
    if not out.parent.is_dir():
        raise UsageError(f"--out {out}: directory {out.parent} does not exist; create it first")
    given = _history_of(ctx, history)
    with open_history(given) as h:
        again = ["bakeoff", "history", *(["--history", given] if given else [])]
        found = listing.histories(h, None, None, metric, shlex.join(again))
        where = h.location.shown
    if not found:
        raise UsageError(f"no series in {where}; record runs first with `bakeoff history add DIR…`")
    page.write_page(found, where, out)
    print(f"wrote {out} ({len(found)} series)")
