"""The search: the ends measured first, then a binary search over bad's first-parent line.

Every step compares the candidate with the known-good end given (`--good`), never with the
good end the search has moved to: one reference for every step, built once, so each step's
ratio reads on one scale (how much slower than good) and the boundary measured at the start
holds for all; and where the slowdown creeps in over several commits, a moving reference
would see only each commit's share of it and could call every step SAME. (Against the bad
end instead, the same holds mirrored; good is the end a user trusts.)

Each step prints its commits, the ratio with its CI, the rounds, the looks and the verdict.
A step still UNKNOWN when its budget is spent ends the search there, honestly: the first bad
commit is then only known to lie in the range left, which is printed. A candidate that does not
build is skipped, as `git bisect skip` does: the step is recorded (SKIPPED, with the build's
first error line) and the search measures a neighbour instead (next_candidate); when only
commits that do not build are left in the range, the search ends with that range.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

from bakeoff.bisect import verdict as rule
from bakeoff.bisect.builds import BuildCache, BuildFailed
from bakeoff.bisect.measure import Measurer
from bakeoff.bisect.repo import Commit
from bakeoff.core.errors import Interrupted, UsageError
from bakeoff.run import interrupts

SUMMARY = "bisect.json"


StepVerdict = rule.Verdict | Literal["SKIPPED"]


@dataclass
class Step:
    number: int  # 0: the ends
    candidate: Commit
    index: int  # in the candidate list (the ends: bad's)
    ci: rule.RatioCI | None  # None: not measured (SKIPPED)
    looks: int
    verdict: StepVerdict
    seconds: float
    built: bool  # built by this step (not from the cache)
    build_error: str | None = None  # SKIPPED: the build output's first error line
    build_log: str | None = None  # SKIPPED: where the build's whole output is
    build_s: float = 0.0  # the step's build (checkout and build command; 0 from the cache)


@dataclass
class Outcome:
    good: Commit
    bad: Commit
    candidates: int  # commits after good up to bad
    threshold: float
    metric: str
    boundary: float | None = None
    steps: list[Step] = field(default_factory=list)
    first_bad: Commit | None = None
    last_good: Commit | None = None  # the last commit known on the good side
    known_bad: Commit | None = None  # the earliest commit known on the bad side
    # found | no-step | unknown | skipped (only commits that do not build are left between
    # last_good and known_bad) | failed | interrupted; "running" only while the process runs
    status: str = "running"
    error: str | None = None  # failed / interrupted: why
    skipped: list[Commit] = field(default_factory=list)  # commits that did not build
    # The commits the first bad one may still be: after last_good, up to known_bad
    left: list[Commit] = field(default_factory=list)

    @property
    def measurement_steps(self) -> int:
        return sum(1 for s in self.steps if s.verdict != "SKIPPED")

    def to_json(self) -> dict[str, object]:
        return {**asdict(self), "measurement_steps": self.measurement_steps}


def next_candidate(lo: int, hi: int, skipped: set[int]) -> int | None:
    """The index to measure between lo (known good; -1: good itself) and hi (known bad): the
    middle, or where the middle did not build, the nearest that may (the middle's neighbours
    by distance, the later first), as `git bisect skip` moves to a commit near the one it
    skips. None when every commit strictly between is skipped: the search cannot narrow."""
    mid = (lo + hi) // 2
    for distance in range(hi - lo):
        for index in (mid + distance, mid - distance):
            if lo < index < hi and index not in skipped:
                return index
    return None


def bisect(commits: list[Commit], good: Commit, builds: BuildCache, measurer: Measurer,
           out: Path, say: Callable[[str], None]) -> Outcome:
    """The first commit of `commits` (bad last) where the program is slower than at good.
    Whatever ends the search (an answer, an error, a signal), a bisect.json already written
    says how it ended, never "running"."""
    req = measurer.request
    outcome = Outcome(good, commits[-1], len(commits), req.threshold, req.metric)
    try:
        _search(commits, good, builds, measurer, out, say, outcome)
    except Interrupted as exc:
        outcome.status, outcome.error = "interrupted", str(exc)
        raise
    except BaseException as exc:
        outcome.status, outcome.error = "failed", str(exc) or type(exc).__name__
        raise
    finally:
        outcome.steps.sort(key=lambda s: s.number)
        if (out / SUMMARY).exists():
            _save(outcome, out)
    return outcome


def _search(commits: list[Commit], good: Commit, builds: BuildCache, measurer: Measurer,
            out: Path, say: Callable[[str], None], outcome: Outcome) -> None:
    req = measurer.request
    bad = commits[-1]
    say(f"bisect: {len(commits)} commits after good {good.short} up to bad {bad.short}; "
        f"metric {req.metric}, threshold {req.threshold * 100:g}%")
    _story(out)
    _save(outcome, out)  # from here on, however the bisect ends, the record says how
    good_tree = _build(builds, good, say)
    ends_boundary = rule.ends_boundary(req.threshold)
    ends = _step(0, bad, len(commits) - 1, builds, measurer, good_tree, out, req.threshold / 2,
                 ends_boundary, say)
    outcome.steps.append(ends)
    _save(outcome, out)
    if ends.verdict != "DIFFERENT":
        outcome.status = "no-step"
        return
    assert ends.ci is not None  # the ends are built or the bisect has ended (BuildFailed)
    boundary = rule.step_boundary(ends.ci, req.threshold)
    outcome.boundary = boundary
    target = rule.first_target(boundary, ends.ci.ratio)
    say(f"bisect: a candidate is DIFFERENT when its CI lies wholly above {boundary:.4f} "
        f"(log-midway between good and bad), SAME when wholly below; steps measure to a "
        f"CI half-width of {target * 100:.2f}% first")
    lo, hi = -1, len(commits) - 1  # lo: known good (-1: good itself); hi: known bad
    skipped: set[int] = set()
    while hi - lo > 1:
        index = next_candidate(lo, hi, skipped)
        if index is None:
            outcome.status = "skipped"
            break
        try:
            step = _step(len(outcome.steps), commits[index], index, builds, measurer,
                         good_tree, out, target, boundary, say)
        except BuildFailed as exc:
            step = _skipped(len(outcome.steps), commits[index], index, exc, say)
            skipped.add(index)
            outcome.skipped.append(commits[index])
        outcome.steps.append(step)
        _save(outcome, out)
        if step.verdict == "UNKNOWN":
            outcome.status = "unknown"
            break
        if step.verdict == "DIFFERENT":
            hi = index
        elif step.verdict == "SAME":
            lo = index
    outcome.last_good = good if lo < 0 else commits[lo]
    outcome.known_bad = commits[hi]
    outcome.left = commits[lo + 1:hi + 1]
    if hi - lo == 1:
        outcome.first_bad = commits[hi]
        outcome.status = "found"


def _skipped(number: int, candidate: Commit, index: int, exc: BuildFailed,
             say: Callable[[str], None]) -> Step:
    say(f"step {number}: #{index + 1} {candidate.short} does not build -> SKIPPED "
        f"({exc.first_error}; the whole output: {exc.log})  ({candidate.subject})")
    return Step(number, candidate, index, None, 0, "SKIPPED", 0.0, False,
                build_error=exc.first_error, build_log=str(exc.log))


def _story(out: Path) -> None:
    """What a signal's message says from now on (a step's runs say their own while they
    measure): where the bisect's record is. It does not resume: a new bisect reuses the
    cached builds."""
    interrupts.tell(lambda: f"the bisect's steps so far are in {out / SUMMARY}; its builds "
                    "stay cached for the next bisect")


def _build(builds: BuildCache, commit: Commit, say: Callable[[str], None]) -> Path:
    interrupts.checkpoint("bisect-build")
    started = time.monotonic()
    tree = builds.build(commit)
    if commit.sha in builds.built_now:
        say(f"  built {commit.short} in {time.monotonic() - started:.1f} s")
    return tree


def _step(number: int, candidate: Commit, index: int, builds: BuildCache, measurer: Measurer,
          good_tree: Path, out: Path, target: float, boundary: float,
          say: Callable[[str], None]) -> Step:
    good_short = good_tree.parent.name[:10]
    fresh = candidate.sha not in builds.built_now
    build_started = time.monotonic()
    tree = _build(builds, candidate, say)
    build_s = time.monotonic() - build_started
    interrupts.checkpoint("bisect-measure")
    started = time.monotonic()
    step_dir = out / f"step-{number:02d}-{candidate.short}"
    try:
        ci, looks = measurer.step(step_dir, good_tree, tree, target, boundary,
                                  measurer.request.seed + 1000 * number)
    finally:
        _story(out)  # the step's run told its own (`bakeoff run --resume`), not the bisect's
    verdict = rule.classify(ci, boundary)
    step = Step(number, candidate, index, ci, looks, verdict, time.monotonic() - started,
                fresh and candidate.sha in builds.built_now, build_s=round(build_s, 3))
    what = "ends: bad" if number == 0 else f"step {number}: #{index + 1}"
    say(f"{what} {candidate.short} vs good {good_short}: {measurer.request.metric} ratio "
        f"{ci.words()}, "
        f"{looks} look(s), {step.seconds:.0f} s -> {verdict}  ({candidate.subject})")
    return step


def _save(outcome: Outcome, out: Path) -> None:
    try:
        (out / SUMMARY).write_text(json.dumps(outcome.to_json(), indent=1) + "\n")
    except OSError as exc:
        raise UsageError(f"cannot write {out / SUMMARY} ({exc.strerror}); choose another "
                         "--out") from None
