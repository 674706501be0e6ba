"""Commands rooms add (Benchmark.commands, e.g. `bakeoff sample -- CMD`), found only when asked.

A built-in command never imports a room's spec for them; a word that is no built-in
command, or `bakeoff --help`, loads the rooms, and a room that fails to load is one line.
"""

from __future__ import annotations

from collections.abc import Callable

import typer

RoomCommand = tuple[str, Callable[[list[str]], int]]  # (its benchmark, the function)


def find() -> dict[str, RoomCommand]:
    """Every loaded room's commands by name; each room that did not load said in one line."""
    from bakeoff.app.runs import say_broken
    from bakeoff.declare import registry

    rooms = registry.load_rooms()
    say_broken(rooms)
    return {name: (bench.name, func) for bench in rooms.benchmarks.values()
            for name, func in bench.commands.items()}


def list_in_help(app: typer.Typer, commands: dict[str, RoomCommand]) -> None:
    """Show room commands in --help; running them bypasses typer (see main)."""
    for name, (bench, func) in commands.items():
        summary = " ".join((func.__doc__ or "").strip().splitlines()[:1])
        app.command(name, help=f"From {bench}: {summary}",
                    context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(
            lambda: None)
