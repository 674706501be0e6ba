"""Every built-in command and command group, in the order `bakeoff --help` lists them.

To add a command, write its module (one per command or group, parsing words only and
handing them to bakeoff/app/ or its feature package) and add a line here: a function to
COMMANDS, or a typer.Typer of subcommands to GROUPS (`bakeoff fleet run`, ...), each named
as "module:attribute" of bakeoff.cli.

A command's module is imported only when it is registered: `bakeoff run ...` loads the run
command alone, not the fleet's, bisect's and cmd's modules and what they import (about a
quarter of the command line's start-up, paid by every bakeoff process; docs/ARCHITECTURE.md,
"Start-up"); `bakeoff --help` and an unknown word load them all.
"""

from __future__ import annotations

import importlib
from typing import Any

import typer

COMMANDS: list[tuple[str, str]] = [
    ("list", "listing:cmd_list"),
    ("run", "run:cmd_run"),
    ("report", "report:cmd_report"),
    ("compare", "compare:cmd_compare"),
    ("profile", "profile:cmd_profile"),
    ("doctor", "doctor:cmd_doctor"),
    ("new", "new:cmd_new"),
    ("cmd", "cmd:cmd_cmd"),
    ("selftest", "selftest:cmd_selftest"),
    ("bisect", "bisect:cmd_bisect"),
]

GROUPS: list[tuple[str, str]] = [
    ("fleet", "fleet:fleet_app"),
    ("history", "history:app"),
]


def names() -> set[str]:
    """The built-in words: a first argument among them loads no room."""
    return {name for name, _ in (*COMMANDS, *GROUPS)}


def _load(where: str) -> Any:
    module, attribute = where.split(":")
    return getattr(importlib.import_module(f"bakeoff.cli.{module}"), attribute)


def register(app: typer.Typer, only: str | None = None) -> None:
    """Add the built-in commands and groups to app: only the one named `only`, or all."""
    for name, where in COMMANDS:
        if only in (None, name):
            app.command(name)(_load(where))
    for name, where in GROUPS:
        if only in (None, name):
            app.add_typer(_load(where), name=name)
