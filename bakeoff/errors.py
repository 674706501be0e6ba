"""Errors a user can fix. The CLI prints them as one line and exits 2, never a traceback."""


class UsageError(Exception):
    """Bad input: an unknown name, a malformed value, a path we cannot write. Exit status 2."""


class Interrupted(Exception):
    """The run was stopped by SIGINT or SIGTERM; everything measured so far is saved."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"interrupted by signal {signum}")
        self.signum = signum
