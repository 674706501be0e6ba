"""`python -m bakeoff` and the `bakeoff` command.

bakeoff.cli.main is imported inside main() so that a Ctrl-C while bakeoff itself loads (typer and
rich, a few tenths of a second) ends it as a Ctrl-C anywhere else does: status 130 and no
traceback. Only the interpreter's own start-up, before this file runs, is out of reach.
"""

import signal
import sys
from types import FrameType

_interrupted: list[int] = []


def _interrupt(signum: int, _frame: FrameType | None) -> None:
    """Python's own SIGINT handler, but noted: a KeyboardInterrupt raised where Python prints
    and drops it (an import lock's weakref callback, under load) must still stop bakeoff."""
    _interrupted.append(signum)
    raise KeyboardInterrupt


def _unraisable(unraisable: "sys.UnraisableHookArgs") -> None:
    """Python prints an exception it had to drop ("Exception ignored in: ...", with its
    traceback); the KeyboardInterrupt _interrupt raised is noted, and ends bakeoff with 130."""
    if not (_interrupted and isinstance(unraisable.exc_value, KeyboardInterrupt)):
        sys.__unraisablehook__(unraisable)


def main() -> None:
    signal.signal(signal.SIGINT, _interrupt)
    sys.unraisablehook = _unraisable
    try:
        from bakeoff.cli.main import main as cli_main
    except KeyboardInterrupt:
        sys.exit(128 + signal.SIGINT)
    if _interrupted:
        sys.exit(128 + signal.SIGINT)
    cli_main()


if __name__ == "__main__":
    main()
