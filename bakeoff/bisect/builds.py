"""Builds of the program under test, one per commit, cached across steps and invocations.

A commit is checked out with `git worktree add --detach` into the cache, keyed by the build
command (a digest) and the commit's hash, and the build command runs there. Once it has
succeeded the tree is unregistered from the repository (its `.git` file and the
repository's `worktrees/<id>` entry removed, which is what `git worktree prune` does for a
tree whose directory is gone), so the user's repository keeps no registration of ours
whatever happens after: only a build under way is registered, and `BuildCache.close()`
(called on success, failure, Ctrl-C and SIGTERM) unregisters and removes it. A `built`
stamp, written last, marks a build as whole: a tree without it (a build cut short) is built
again. The build's output is kept beside it in `build.log`.

Where: `$XDG_CACHE_HOME/bakeoff/bisect` (default `~/.cache/bakeoff/bisect`); deleting it
is always safe.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

from bakeoff.bisect.repo import Commit, git
from bakeoff.core.errors import Interrupted, UsageError
from bakeoff.run import interrupts

BUILD_TIMEOUT_S = 3600.0
LAST_LINES = 5  # of a failed build's output, in its error
STAMP = "built"


def default_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "bakeoff" / "bisect"


def command_key(build_command: str) -> str:
    """Builds by another command are other builds: the cache is keyed by a digest of it."""
    return hashlib.sha256(build_command.encode()).hexdigest()[:12]


class BuildFailed(UsageError):
    """A commit that did not build: the whole message, and what a skipped step records."""

    def __init__(self, message: str, first_error: str, log: Path) -> None:
        super().__init__(message)
        self.first_error = first_error  # the build output's first error line (or its last)
        self.log = log


# What a compiler, make or a linker prints on the line that says what went wrong.
_ERROR_LINE = re.compile(r"\berror\b|\*\*\*|undefined reference|not found|fatal",
                         re.IGNORECASE)


def first_error_line(lines: list[str]) -> str:
    """The first line of a build's output that reads as an error; the last line when none
    does; "no output" for none."""
    found = next((ln for ln in lines if _ERROR_LINE.search(ln)), None)
    return found or (lines[-1] if lines else "no output")


class BuildCache:
    """Checked-out, built trees of one repository by one build command."""

    def __init__(self, repo: Path, build_command: str, root: Path | None = None) -> None:
        self.repo = repo
        self.command = build_command
        self.dir = (root or default_root()) / command_key(build_command)
        self.built_now: set[str] = set()  # commits this invocation built (not from the cache)
        self._registered: set[Path] = set()  # trees registered in the repository right now
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"cannot create the build cache {self.dir} ({exc.strerror}); "
                             "set XDG_CACHE_HOME to a writable directory") from None
        common = git(repo, "rev-parse", "--path-format=absolute", "--git-common-dir").stdout
        self._admin = Path(common.strip()) / "worktrees"

    def tree(self, commit: Commit) -> Path:
        """Where commit's build is (built as this returns)."""
        return self.dir / commit.sha / "tree"

    def build(self, commit: Commit) -> Path:
        """commit built: from the cache, or checked out and built now. BuildFailed names the
        commit and shows the build's last lines."""
        home = self.dir / commit.sha
        home.mkdir(exist_ok=True)
        tree = home / "tree"
        # One builder of a commit at a time, across invocations sharing the cache.
        with open(home / "lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if (home / STAMP).is_file() and tree.is_dir():
                return tree
            self._discard(tree)
            self._checkout(commit, tree)
            log = home / "build.log"
            status = self._run_build(tree, log)
            if status != 0:
                self._discard(tree)
                raise self._failure(commit, status, log)
            self._unregister(tree)
            (home / STAMP).write_text(f"{self.command}\n")
            self.built_now.add(commit.sha)
            return tree

    def close(self) -> None:
        """Every tree still registered (a build cut short): unregistered and removed."""
        for tree in list(self._registered):
            self._discard(tree)

    # ---- worktrees -----------------------------------------------------------------------

    def _checkout(self, commit: Commit, tree: Path) -> None:
        self._registered.add(tree)
        # --force: a registration of this path left by a build that was SIGKILLed (its tree
        # is gone by now) is no obstacle.
        proc = git(self.repo, "worktree", "add", "--force", "--detach", str(tree), commit.sha,
                   check=False)
        if proc.returncode != 0:
            self._discard(tree)
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise UsageError(f"git worktree add of {commit.short} into {tree} failed: {last}")

    def _unregister(self, tree: Path) -> None:
        """The repository forgets tree; the files stay. Only an entry under the repository's
        own worktrees/ that points back at this tree is removed."""
        dot_git = tree / ".git"
        with contextlib.suppress(OSError):
            text = dot_git.read_text()
            if text.startswith("gitdir: "):
                admin = Path(text[len("gitdir: "):].strip()).resolve()
                if admin.parent == self._admin.resolve() and (admin / "gitdir").is_file() \
                        and Path((admin / "gitdir").read_text().strip()).resolve() \
                        == dot_git.resolve():
                    shutil.rmtree(admin, ignore_errors=True)
            dot_git.unlink()
        self._registered.discard(tree)

    def _discard(self, tree: Path) -> None:
        self._unregister(tree)
        shutil.rmtree(tree, ignore_errors=True)

    # ---- the build -----------------------------------------------------------------------

    def _run_build(self, tree: Path, log: Path) -> int:
        """The build command in tree, its output to log; stopped (its whole process group)
        on a signal, which is then raised."""
        with open(log, "w") as out:
            proc = subprocess.Popen(["sh", "-c", self.command], cwd=tree, stdout=out,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True)
        deadline = time.monotonic() + BUILD_TIMEOUT_S
        try:
            while True:
                try:
                    return proc.wait(timeout=0.2)
                except subprocess.TimeoutExpired:
                    pass
                signum = interrupts.received()
                if signum is not None:
                    raise Interrupted(signum)
                if time.monotonic() > deadline:
                    _stop_group(proc)
                    return 124
        except BaseException:
            _stop_group(proc)
            raise

    def _failure(self, commit: Commit, status: int, log: Path) -> BuildFailed:
        lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
        last = " | ".join(lines[-LAST_LINES:]) or "no output"
        why = (f"timed out after {BUILD_TIMEOUT_S:g} s" if status == 124
               else f"exit {status}" if status >= 0 else f"killed by signal {-status}")
        return BuildFailed(f"the build of {commit.short} ({commit.subject}) failed ({why}); its "
                           f"last lines: {last}; the whole output: {log}; fix the build "
                           "command or the commit range", first_error_line(lines), log)


def _stop_group(proc: subprocess.Popen[bytes]) -> None:
    """The build and everything it started: SIGTERM, 5 s, SIGKILL."""
    if proc.poll() is not None:
        return
    for sig, wait_s in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 30.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue
