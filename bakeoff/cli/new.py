"""`bakeoff new NAME`: a room skeleton that builds, runs and passes the conformance test."""

from __future__ import annotations

from typing import Annotated

import typer

from bakeoff.app.console import out_console


def cmd_new(
    name: Annotated[str, typer.Argument(help="The benchmark's name, e.g. ipc-ping-pong; its "
                                        "folder is benchmarks/ipc_ping_pong.")],
    title: Annotated[str | None, typer.Option(help="One line for the report's heading.")] = None,
) -> None:
    """Write a room skeleton that builds, runs and passes the conformance test as it is."""
    from bakeoff.declare import scaffold  # only this command needs it

    room = scaffold.new_room(name, title)
    out_console.print(f"wrote {room}/: {', '.join(sorted(p.name for p in room.iterdir()))}",
                      highlight=False, soft_wrap=True)
    out_console.print(f"next: make -C {room.parent} && bakeoff run {name} --profile quick; "
                      "docs/ADDING-A-BENCHMARK.md says what to change", highlight=False,
                      soft_wrap=True)
