"""What a fleet pushes: the committed tree at one commit, never uncommitted edits.

Hosts must run the same code, and a result must name the code it came from: a commit does
both, a dirty working tree neither.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from bakeoff.core.errors import UsageError


def _git(repo: Path, *args: str) -> str:
    try:
        res = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                             check=False, timeout=120)
    except FileNotFoundError:
        raise UsageError("git is not installed; a fleet pushes a git commit "
                         "(apt-get install git)") from None
    if res.returncode != 0:
        raise UsageError(f"{repo} is not a git checkout ({res.stderr.strip() or 'git failed'}); "
                         "a fleet pushes a committed tree: run it from a clone")
    return res.stdout


def head_commit(repo: Path) -> str:
    return _git(repo, "rev-parse", "--verify", "HEAD^{commit}").strip()


def refuse_dirty(repo: Path) -> None:
    """One line naming what differs from HEAD (untracked files too: they would be missing
    on the hosts)."""
    lines = [ln for ln in _git(repo, "status", "--porcelain").splitlines() if ln.strip()]
    if lines:
        names = ", ".join(ln[3:] for ln in lines[:3]) + (f" and {len(lines) - 3} more"
                                                         if len(lines) > 3 else "")
        raise UsageError(f"the checkout has uncommitted changes ({names}); a fleet runs what is "
                         "committed: commit or stash them first")


def archive(repo: Path, commit: str, cache: Path) -> Path:
    """`git archive` of the commit as .tar.gz, made once per commit."""
    path = cache / f"checkout-{commit}.tar.gz"
    if not path.exists():
        cache.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")  # two fleet runs at once: one each
        try:
            _git(repo, "archive", "--format=tar.gz", "-o", str(tmp), commit)
            tmp.rename(path)
        finally:
            tmp.unlink(missing_ok=True)
    return path
