"""`bakeoff report DIR...`: a run's reports again from results.json alone (no room's spec is
needed), a redacted copy for sharing, or one report across hosts."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from bakeoff.app.console import out_console
from bakeoff.core import lazy
from bakeoff.core.errors import UsageError


def cmd_report(
    run_dirs: Annotated[list[Path], typer.Argument(
        help="A results directory; a fleet directory; or several hosts' results directories.")],
    out: Annotated[Path | None, typer.Option(
        help="Where the report across hosts goes (default: the fleet directory, or "
             "results/<time>-hosts); with --redact, where the redacted copy goes (default: "
             "DIR-redacted).")] = None,
    redact: Annotated[bool, typer.Option(
        "--redact", help="Write a copy for sharing: host names, user names, home paths and "
                         "fleet addresses replaced by host-1, user-1, ~, addr-1 (DIR is not "
                         "touched; every file is checked before it is kept; a fleet's copy "
                         "holds every host's results and reports again).")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q")] = False,
) -> None:
    """Regenerate a run's reports from results.json alone; or one report across hosts."""
    from bakeoff.app import runs
    from bakeoff.cli import redacted
    from bakeoff.fleet.record import is_fleet_dir
    from bakeoff.store import results as store

    if redact and any(_is_kernel_run(d) for d in run_dirs):
        raise UsageError("--redact: a --kernel run's tables (kernels.md) have no redacted copy "
                         "yet; share kernels.md after reading it, or redact a run without "
                         "--kernel")
    if len(run_dirs) == 1 and (run_dirs[0] / "kernels.json").is_file() and not redact \
            and out is None:
        # A run with the kernel as an axis (`run --kernel`): its kernels.md again.
        from bakeoff.kernels.command import report_again

        status = report_again(run_dirs[0])
        if status:
            raise typer.Exit(status)
        return
    if len(run_dirs) == 1 and is_fleet_dir(run_dirs[0]) and not redact and out is None:
        from bakeoff.fleet import driver, kernel_index, record

        rec = record.load(run_dirs[0])
        if driver.is_kernel_run(rec.run_args):
            # A fleet's --kernel run: its kernels.md again, the table across hosts and
            # kernels made from each host's files (docs/KERNELS.md, "On a fleet").
            from bakeoff.kernels.across_hosts import report as kernel_table

            page = kernel_index.write(rec, run_dirs[0], kernel_table)
            if not quiet:
                out_console.print(page.read_text(), markup=False, highlight=False,
                                  soft_wrap=True)
            out_console.print(f"wrote {page}", highlight=False)
            return
    if len(run_dirs) == 1 and not is_fleet_dir(run_dirs[0]):
        if redact:
            redacted.export_run(run_dirs[0], out)
            return
        if out is not None:
            raise UsageError("--out is for a report across hosts or a redacted copy; a run's "
                             "reports go in its own directory")
        run = store.load(run_dirs[0])
        runs.export(run, run_dirs[0], quiet)
        return
    export_hosts(run_dirs, out, redact)


def _is_kernel_run(run_dir: Path) -> bool:
    """A run with the kernel as an axis (kernels.json), or a fleet of them."""
    from bakeoff.fleet.record import is_fleet_dir

    if (run_dir / "kernels.json").is_file():
        return True
    if not is_fleet_dir(run_dir):
        return False
    from bakeoff.fleet import driver, record

    return driver.is_kernel_run(record.load(run_dir).run_args)


def export_hosts(run_dirs: list[Path], out: Path | None, redact: bool = False) -> None:
    from bakeoff.cli import redacted
    from bakeoff.declare import registry

    with lazy.signals_held():
        from bakeoff.analysis.across_hosts import analyze_hosts
        from bakeoff.report.across_hosts import terminal_lines, write_host_reports

    analysis = analyze_hosts(run_dirs)
    if redact:
        target = redacted.out_dir(run_dirs, out)
        redactor = redacted.hosts_redactor(analysis, run_dirs[0] if analysis.fleet else None)
        with redacted.removed_unless_checked(target):
            copies, left_out = redacted.copy_hosts(analysis, run_dirs, target, redactor)
            # The report across hosts from the copies, as `bakeoff report` on the copy gives
            # it: the figures are the same (same records, same seeds), the names redacted.
            write_host_reports(analyze_hosts(copies), target, postprocess=redactor.hook)
            redacted.check(redactor, target)
        redacted.say(redactor, target, left_out)
        return
    if out is None:
        from datetime import UTC, datetime

        stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
        out = run_dirs[0] if analysis.fleet else registry.REPO_ROOT / "results" / f"{stamp}-hosts"
    try:
        paths = write_host_reports(analysis, out)
    except OSError as exc:
        raise UsageError(f"cannot write the report to {out}: {exc.strerror or exc} "
                         "(choose a writable --out)") from None
    for text, style in terminal_lines(analysis):
        out_console.print(Text(text, style=style), highlight=False, soft_wrap=True)
    for p in paths:
        out_console.print(f"wrote {p}", highlight=False)
