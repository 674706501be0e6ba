"""Errors a user can fix. The CLI prints them as one line and exits 2, never a traceback."""

import re

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def one_line(text: str) -> str:
    """Control characters (a newline typed into --param, an escape sequence in a path) shown
    as escapes, so an error stays one line and cannot repaint the user's terminal."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


class UsageError(Exception):
    """Bad input: an unknown name, a malformed value, a path we cannot write. Exit status 2."""

    def __init__(self, message: str) -> None:
        super().__init__(one_line(message))


class Interrupted(Exception):
    """The run was stopped by SIGINT or SIGTERM; everything measured so far is saved."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"interrupted by signal {signum}")
        self.signum = signum
