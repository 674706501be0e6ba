"""A git repository to bisect: a small C program whose work grows at one chosen commit.

`make_repo(path, commits, step_at, factor, seed)` writes `commits` commits. The first holds
prog.c (a loop of WORK iterations of a multiply-add chain, CPU-bound and not vectorisable,
so its CPU time is proportional to WORK) and a Makefile; commit number `step_at` (1-based,
above 1) multiplies WORK by `factor`; every other commit changes only unrelated text (a line
of NOTES, a comment of prog.c that the compiler drops). Which text each commit touches comes
from the seed. Commits numbered in `broken` do not build (prog.c carries an #error that the
next commit removes), for the search's skip. Used by tests/test_bisect.py and scripts/bisect-selftest.
"""

from __future__ import annotations

import random
import subprocess
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

BUILD = "make -s"
MEASURE = "{build}/prog"
# About 25 ms of CPU a run on this project's VM (AMD EPYC, 2026-11): long against the ~1 ms
# a process's start-up and exit cost, which the larger WORK does not scale.
DEFAULT_WORK = 30_000_000

PROG = """\
/* bisect test program. {comment} */
#include <stdint.h>
#define WORK {work}ULL
int main(void)
{{
    uint64_t x = 1;
    for (uint64_t i = 0; i < WORK; i++)
        x = x * 6364136223846793005ULL + i; /* one chain: no vectorising, no shortcut */
    return x == 1 ? 3 : 0; /* the result used, so the loop stays; exit 0 */
}}
"""
BROKEN = "#error this commit does not build\n"
MAKEFILE = "prog: prog.c\n\tcc -O2 -o prog prog.c\n"


@dataclass(frozen=True)
class BisectRepo:
    path: Path
    shas: list[str]  # oldest first: shas[0] is the good end, shas[-1] the bad end
    step_sha: str  # the commit that grew the work

    @property
    def good(self) -> str:
        return self.shas[0]

    @property
    def bad(self) -> str:
        return self.shas[-1]


def _git(path: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "bisect test", "GIT_AUTHOR_EMAIL": "test@example.invalid",
           "GIT_COMMITTER_NAME": "bisect test", "GIT_COMMITTER_EMAIL": "test@example.invalid",
           "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
           "PATH": "/usr/bin:/bin", "HOME": str(path)}
    return subprocess.run(["git", "-C", str(path), *args], check=True, capture_output=True,
                          text=True, env=env).stdout.strip()


def make_repo(path: Path, commits: int = 64, step_at: int | None = None, factor: float = 1.10,
              seed: int = 0, work: int = DEFAULT_WORK,
              broken: Collection[int] = ()) -> BisectRepo:
    """The repository; step_at None: a seeded choice among commits 2..commits."""
    rng = random.Random(seed)
    if step_at is None:
        step_at = rng.randint(2, commits)
    if not 2 <= step_at <= commits:
        raise ValueError(f"step_at {step_at} outside 2..{commits}")
    path.mkdir(parents=True)
    _git(path, "init", "-q", "-b", "main")
    notes: list[str] = []
    comment = "first"
    shas = []
    for number in range(1, commits + 1):
        if number == step_at:
            work = round(work * factor)
            subject = f"commit {number}: more work per call (WORK {work})"
        elif number > 1 and rng.random() < 0.5:
            comment = f"revision {number}, {rng.choice(['tidy', 'typo', 'wording'])}"
            subject = f"commit {number}: reword a comment"
        else:
            notes.append(f"note {number}: {rng.getrandbits(32):08x}")
            subject = f"commit {number}: add a note"
        if number in broken:
            subject += ", and a typo that does not build"
        text = PROG.format(comment=comment, work=work)
        (path / "prog.c").write_text(text + BROKEN if number in broken else text)
        (path / "Makefile").write_text(MAKEFILE)
        (path / "NOTES").write_text("\n".join(notes) + "\n")
        (path / ".gitignore").write_text("prog\n")
        _git(path, "add", "-A")
        _git(path, "commit", "-q", "--allow-empty", "-m", subject)
        shas.append(_git(path, "rev-parse", "HEAD"))
    return BisectRepo(path, shas, shas[step_at - 1])
