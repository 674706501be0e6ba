"""The search: the ends measured first, then a binary search over bad's first-parent line.

Every step compares the candidate with the known-good end given (`--good`), never with the
good end the search has moved to: one reference for every step, built once, so each step's
ratio reads on one scale (how much slower than good) and the boundary measured at the start
holds for all; and where the slowdown creeps in over several commits, a moving reference
would see only each commit's share of it and could call every step SAME. (Against the bad
end instead, the same holds mirrored; good is the end a user trusts.)

Each step prints its commits, the ratio with its CI, the rounds, the looks and the verdict.
A step still UNKNOWN when its budget is spent ends the search there, honestly: the first bad
commit is then only known to lie in the range left, which is printed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bakeoff.bisect import verdict as rule
from bakeoff.bisect.builds import BuildCache
from bakeoff.bisect.measure import Measurer
from bakeoff.bisect.repo import Commit
from bakeoff.core.errors import UsageError
from bakeoff.run import interrupts

SUMMARY = "bisect.json"


@dataclass
class Step:
    number: int  # 0: the ends
    candidate: Commit
    index: int  # in the candidate list (the ends: bad's)
    ci: rule.RatioCI
    looks: int
    verdict: rule.Verdict
    seconds: float
    built: bool  # built by this step (not from the cache)


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
    status: str = "running"  # found | no-step | unknown | running

    @property
    def measurement_steps(self) -> int:
        return len(self.steps)

    def to_json(self) -> dict[str, object]:
        return {**asdict(self), "measurement_steps": self.measurement_steps}


def bisect(commits: list[Commit], good: Commit, builds: BuildCache, measurer: Measurer,
           out: Path, say: Callable[[str], None]) -> Outcome:
    """The first commit of `commits` (bad last) where the program is slower than at good."""
    req = measurer.request
    bad = commits[-1]
    outcome = Outcome(good, bad, len(commits), req.threshold, req.metric)
    say(f"bisect: {len(commits)} commits after good {good.short} up to bad {bad.short}; "
        f"metric {req.metric}, threshold {req.threshold * 100:g}%")
    _story(out)
    good_tree = _build(builds, good, say)
    ends_boundary = rule.ends_boundary(req.threshold)
    ends = _step(0, bad, len(commits) - 1, builds, measurer, good_tree, out, req.threshold / 2,
                 ends_boundary, say)
    outcome.steps.append(ends)
    _save(outcome, out)
    if ends.verdict != "DIFFERENT":
        outcome.status = "no-step"
        return outcome
    boundary = rule.step_boundary(ends.ci, req.threshold)
    outcome.boundary = boundary
    target = rule.first_target(boundary, ends.ci.ratio)
    say(f"bisect: a candidate is DIFFERENT when its CI lies wholly above {boundary:.4f} "
        f"(log-midway between good and bad), SAME when wholly below; steps measure to a "
        f"CI half-width of {target * 100:.2f}% first")
    lo, hi = -1, len(commits) - 1  # lo: known good (-1: good itself); hi: known bad
    while hi - lo > 1:
        mid = (lo + hi) // 2
        step = _step(len(outcome.steps), commits[mid], mid, builds, measurer, good_tree, out,
                     target, boundary, say)
        outcome.steps.append(step)
        _save(outcome, out)
        if step.verdict == "UNKNOWN":
            outcome.status = "unknown"
            break
        if step.verdict == "DIFFERENT":
            hi = mid
        else:
            lo = mid
    outcome.last_good = good if lo < 0 else commits[lo]
    outcome.known_bad = commits[hi]
    if hi - lo == 1:
        outcome.first_bad = commits[hi]
        outcome.status = "found"
    outcome.steps.sort(key=lambda s: s.number)
    _save(outcome, out)
    return outcome


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
    tree = _build(builds, candidate, say)
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
                fresh and candidate.sha in builds.built_now)
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
