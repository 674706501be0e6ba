"""The repository under test, asked through `git`: revisions, ancestry, the commits between.

Every question that can be answered wrongly by the user's input (not a repository, an unknown
revision, good not before bad) is a UsageError naming the fix.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from bakeoff.core.errors import UsageError


@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str

    @property
    def short(self) -> str:
        return self.sha[:10]


def git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """git in repo, its output captured; a git that fails (check) is the caller's to word."""
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=False, timeout=120)
    if check and proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise UsageError(f"git {' '.join(args)} failed in {repo}: {last}")
    return proc


def check_repo(repo: Path) -> Path:
    """The repository's top directory; one line if repo is none."""
    if not repo.is_dir():
        raise UsageError(f"--repo {repo}: no such directory; give the program's git repository")
    proc = git(repo, "rev-parse", "--show-toplevel", check=False)
    if proc.returncode != 0:
        raise UsageError(f"--repo {repo}: not a git repository (or a bare one); give the "
                         "work tree of the program's repository")
    return Path(proc.stdout.strip())


def resolve(repo: Path, flag: str, rev: str) -> Commit:
    """A revision as the commit it names."""
    if not rev.strip() or rev.startswith("-"):
        raise UsageError(f"{flag} {rev!r}: give a commit, branch or tag of {repo}")
    proc = git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}",
               check=False)
    if proc.returncode != 0:
        raise UsageError(f"{flag} {rev}: no such commit in {repo}; see git log there")
    sha = proc.stdout.strip()
    return Commit(sha, subject(repo, sha))


def subject(repo: Path, sha: str) -> str:
    return git(repo, "log", "-1", "--format=%s", sha).stdout.strip()


def first_parent_range(repo: Path, good: Commit, bad: Commit) -> list[Commit]:
    """The commits after good up to bad (bad last) along bad's first-parent line: the
    candidates for the first bad commit. A merge is one candidate (the change it brought in),
    as `git bisect --first-parent` takes it."""
    if good.sha == bad.sha:
        raise UsageError(f"--good and --bad are the same commit ({good.short}); give a good "
                         "commit before the bad one")
    if git(repo, "merge-base", "--is-ancestor", good.sha, bad.sha, check=False).returncode != 0:
        raise UsageError(f"--good {good.short} is not an ancestor of --bad {bad.short}; give "
                         "a good commit that bad was built on (git merge-base --is-ancestor)")
    out = git(repo, "log", "--first-parent", "--reverse", "--format=%H%x00%s",
              f"{good.sha}..{bad.sha}").stdout
    commits = [Commit(*line.split("\x00", 1)) for line in out.splitlines() if line]
    if not commits or commits[-1].sha != bad.sha:
        raise UsageError(f"no commits between --good {good.short} and --bad {bad.short} on "
                         "bad's first-parent line; give a good commit on it")
    return commits
