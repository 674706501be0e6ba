"""`bakeoff doctor`: what this machine can run, its facts, and what makes numbers noisy."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from bakeoff.app.console import out_console


def cmd_doctor(
    clean: Annotated[bool, typer.Option(
        "--cleanup", help="Only remove what killed runs left behind (cgroups, tracing "
        "sessions and daemons, processes, temp directories) and say what.")] = False,
) -> None:
    """What this machine can run, its facts, and what will make numbers noisy."""
    from bakeoff.app.runs import say_broken
    from bakeoff.declare import registry
    from bakeoff.machine import host as hostmod
    from bakeoff.run import cleanup

    if clean:
        rooms = registry.load_rooms()
        say_broken(rooms)
        removed = cleanup.sweep(rooms.benchmarks.values())
        for line in removed:
            out_console.print(line, highlight=False, soft_wrap=True)
        if not removed:
            out_console.print("nothing to clean up")
        return
    caps = hostmod.capabilities()
    table = Table("capability", "available", "detail", "fix")
    for c in caps.values():
        table.add_row(c.name, Text("yes", style="green") if c.available else Text("no", style="red"),
                      c.detail, c.fix if not c.available else "")
    out_console.print(table)
    facts = hostmod.facts(registry.build_dir())
    ft = Table("host fact", "value")
    for k, v in facts.to_json().items():
        ft.add_row(k, str(v))
    out_console.print(ft)
    for w in hostmod.noise_warnings(facts):
        out_console.print(Text("warning: ", style="yellow") + Text(w))
