"""The `bakeoff` command: the typer app, its commands (bakeoff/cli/commands.py), rooms' own
commands (rooms.py), and main(), where every way out gets its exit status.

Each command module only parses words and hands them to the application layer
(bakeoff/app/). Every problem the user can fix surfaces as UsageError and is printed here as
one line, exit status 2, never a traceback.
"""

from __future__ import annotations

import signal
import sys

import typer

from bakeoff.cli import commands, rooms
from bakeoff.cli.cmd import argv_for_typer
from bakeoff.core.errors import Interrupted, UsageError, one_line
from bakeoff.run import interrupts

app = typer.Typer(
    help="Head-to-head benchmarks of Linux systems mechanisms, with honest statistics.",
    no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
)


@app.callback()
def _bakeoff() -> None:
    # A callback keeps the app a group of commands when one command alone is registered
    # (typer runs a lone command without its name); it has nothing to do.
    pass


def _command_named(argv: list[str]) -> str | None:
    """The built-in command the words ask for, when nothing before it is an option; else
    None (help, an unknown word, a room's command: every command is registered)."""
    first = argv[1] if len(argv) > 1 else None
    return first if first in commands.names() else None


def _wants_rooms(argv: list[str]) -> bool:
    """Whether the words may name a room's command: no built-in command is named (`bakeoff`
    and `bakeoff --help` list the rooms' commands too)."""
    first = next((a for a in argv[1:] if not a.startswith("-")), None)
    return first is None or first not in commands.names()


def main() -> None:
    # Until a run latches them (bakeoff/run/interrupts.py), SIGINT and SIGTERM stop bakeoff at
    # once: 130 or 143, no traceback; recorded too, in case Python drops the exception.
    for signum in interrupts.HANDLED:
        signal.signal(signum, interrupts.raise_now)
    interrupts.quiet_dropped_interrupts()
    try:
        commands.register(app, only=_command_named(sys.argv))
        if _wants_rooms(sys.argv):
            found = rooms.find()
            if len(sys.argv) > 1 and sys.argv[1] in found:
                # A room's command parses its own arguments, untouched ("--" included), so
                # that `bakeoff sample -- CMD --help` reaches CMD as typed.
                sys.exit(found[sys.argv[1]][1](sys.argv[2:]))
            rooms.list_in_help(app, found)
        code = app(args=argv_for_typer(sys.argv)[1:], prog_name="bakeoff",
                   standalone_mode=False)
    except typer.TyperException as exc:
        # Typer's own parse errors (unknown option, bad type); it vendors click, and this is
        # the public base class of its usage errors.
        ctx = getattr(exc, "ctx", None)
        cmd = ctx.command_path if ctx is not None else "bakeoff"
        _fail(f"{exc.format_message()} (see {cmd} --help)")
    except UsageError as exc:
        _fail(str(exc))
    except Interrupted as exc:
        interrupts.exit(0, exc.signum)
    except (KeyboardInterrupt, typer.Abort):
        interrupts.exit(0, signal.SIGINT)
    except typer.Exit as exc:
        interrupts.exit(exc.exit_code)
    interrupts.exit(code if isinstance(code, int) else 0)


def _fail(message: str) -> None:
    print(f"bakeoff: error: {one_line(message)}", file=sys.stderr)
    interrupts.exit(2)
