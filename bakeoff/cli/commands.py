"""Every built-in command and command group, in the order `bakeoff --help` lists them.

To add a command, write its module (one per command or group, parsing words only and
handing them to bakeoff/app/ or its feature package) and add a line here: a function to
COMMANDS, or a typer.Typer of subcommands to GROUPS (`bakeoff fleet run`, ...).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import typer

from bakeoff.cli import (
    bisect,
    cmd,
    compare,
    doctor,
    fleet,
    history,
    listing,
    new,
    profile,
    report,
    run,
    selftest,
)

COMMANDS: list[tuple[str, Callable[..., Any]]] = [
    ("list", listing.cmd_list),
    ("run", run.cmd_run),
    ("report", report.cmd_report),
    ("compare", compare.cmd_compare),
    ("profile", profile.cmd_profile),
    ("doctor", doctor.cmd_doctor),
    ("new", new.cmd_new),
    ("cmd", cmd.cmd_cmd),
    ("selftest", selftest.cmd_selftest),
    ("bisect", bisect.cmd_bisect),
]

GROUPS: list[tuple[str, typer.Typer]] = [
    ("fleet", fleet.fleet_app),
    ("history", history.app),
]


def names() -> set[str]:
    """The built-in words: a first argument among them loads no room."""
    return {name for name, _ in (*COMMANDS, *GROUPS)}
