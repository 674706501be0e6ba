"""`bakeoff fleet run`: the same run on many hosts through Ansible (docs/FLEET.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bakeoff.app.console import err_console, out_console
from bakeoff.app.request import RunRequest
from bakeoff.cli.options import Words, request_options
from bakeoff.core.errors import UsageError
from bakeoff.kernels.plan import DEFAULT_BLOCKS

fleet_app = typer.Typer(help="Run a bakeoff on many hosts through Ansible (docs/FLEET.md).",
                        no_args_is_help=True)

# Every RunRequest field is passed on to each host's `bakeoff run`, "As for bakeoff run." in
# --help, but its --out and --quiet (the fleet has its own) and cmd's --target-ratio-ci.
WITHOUT = ("out", "quiet", "target_ratio_ci")


@fleet_app.command("run")
@request_options(WITHOUT, same_help="As for bakeoff run.", words={
    "names": Words(help="Benchmarks to run (default: all)."),
    "profile": Words(help="quick | default | full"),
    "seed": Words(help="The seed every host runs with (default: one chosen here for all)."),
})
def cmd_fleet_run(
    request: RunRequest,
    inventory: Annotated[Path | None, typer.Option(
        "--inventory", "-i", help="Ansible inventory of the hosts.")] = None,
    serial: Annotated[bool, typer.Option(
        "--serial", help="One host at a time (hosts that share hardware).")] = False,
    forks: Annotated[int, typer.Option(help="Hosts worked on at once.")] = 20,
    host_timeout: Annotated[int, typer.Option(
        help="Seconds a host's bakeoff run may take.")] = 6 * 3600,
    connect_timeout: Annotated[int, typer.Option(help="SSH connect timeout, seconds.")] = 10,
    stall_after: Annotated[int, typer.Option(
        help="A host whose run records no trial for 10x its slowest trial, and at least this "
             "many seconds, is stalled: its run is stopped, its trials fetched.")] = 180,
    out: Annotated[Path | None, typer.Option(
        help="Fleet directory (default: results/<time>-fleet-<names>).")] = None,
    wheelhouse: Annotated[bool, typer.Option(
        help="Push wheels of the pinned Python deps (hosts need no PyPI).")] = True,
    resume: Annotated[Path | None, typer.Option(
        help="Finish only what a fleet run in DIR left undone.")] = None,
    kernel: Annotated[list[str] | None, typer.Option(
        help="NAME=SPEC: each host runs on this kernel, booted in a guest (repeatable; SPEC a "
        "Debian package name or an absolute path on the hosts; each host chooses timed or "
        "refuses as `bakeoff run --kernel` does; docs/KERNELS.md).")] = None,
    functional: Annotated[bool, typer.Option(
        "--functional", help="With --kernel: each host checks what runs on each kernel "
        "(no timing).")] = False,
    blocks: Annotated[int, typer.Option(
        help="With a timed --kernel run: as for bakeoff run.")] = DEFAULT_BLOCKS,
) -> None:
    """Push the committed checkout to every host, set it up, run, fetch; one record per host."""
    from bakeoff.cli.report import export_hosts
    from bakeoff.fleet.command import FleetRequest, run_fleet
    from bakeoff.kernels.across_hosts import report as kernel_table
    from bakeoff.kernels.specs import host_words

    request.check()
    # Checked here, before any host is touched, as `bakeoff run --kernel` checks them.
    kernel_args = host_words(list(kernel or []), functional, blocks)
    if kernel_args and request.history is not None:
        raise UsageError("--history records a run's trials; a --kernel run records boots, "
                         "which the history does not take yet: drop --history")
    req = FleetRequest(
        inventory=inventory, run=request, serial=serial, forks=forks,
        host_timeout_s=host_timeout, connect_timeout_s=connect_timeout,
        stall_after_s=stall_after, out=out,
        wheelhouse=wheelhouse, resume=resume, kernel_args=kernel_args)
    # The report across hosts at the end, as `bakeoff run` writes its own.
    code = run_fleet(req, out_console, err_console,
                     report=lambda fleet_dir: export_hosts([fleet_dir], None),
                     kernel_table=kernel_table)
    if code:
        raise typer.Exit(code)
