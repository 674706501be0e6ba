"""`bakeoff bisect`: the request checked, the builds cached and cleaned, the search run.

Parse and check everything the user typed before anything is built (one line each, exit
2); then build, measure, narrow down (search.py). The build cache's registrations in the
user's repository are removed however this ends (builds.BuildCache.close).
"""

from __future__ import annotations

import dataclasses
import re
import shlex
import shutil
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from bakeoff.bisect import repo as git_repo
from bakeoff.bisect.args import DEFAULT_BUDGET_ROUNDS, METRICS, Args
from bakeoff.bisect.builds import BuildCache
from bakeoff.bisect.measure import Measurer, Request, check_measure
from bakeoff.bisect.search import SUMMARY, Outcome, bisect
from bakeoff.core.errors import UsageError
from bakeoff.declare import registry
from bakeoff.run import cleanup
from bakeoff.stats import load_metrics
from bakeoff.store import results as store


def parse_threshold(text: str) -> float:
    """'5%' or '5' -> 0.05."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*%?\s*", text)
    value = float(m.group(1)) if m else -1.0
    if not 0 < value < 100:
        raise UsageError(f"--threshold {text!r}: give the smallest slowdown to find as a "
                         "percentage above 0, e.g. --threshold 5%")
    return value / 100


def request_of(args: Args) -> Request:
    check_measure(args.measure)
    if not args.build.strip():
        raise UsageError("--build is empty; give the command that builds the program in its "
                         "checkout, e.g. --build 'make'")
    if args.metric not in METRICS:
        raise UsageError(f"--metric {args.metric}: give one of {', '.join(METRICS)}")
    if args.budget < 4:
        raise UsageError(f"--budget {args.budget}: a step needs at least 4 rounds, e.g. "
                         f"--budget {DEFAULT_BUDGET_ROUNDS}")
    if not args.step_time > 0:
        raise UsageError("--step-time is a number of seconds above 0, e.g. --step-time 600")
    if args.runs < 1:
        raise UsageError("--runs must be at least 1, e.g. --runs 3")
    if args.seed < 0:
        raise UsageError(f"--seed {args.seed}: a seed is a whole number of 0 or more")
    return Request(measure=args.measure, metric=args.metric,
                   threshold=parse_threshold(args.threshold), runs=args.runs,
                   budget_rounds=args.budget, step_time_s=args.step_time, shell=args.shell,
                   seed=args.seed)


def run(args: Args, console: Console, say: Callable[[str], None]) -> tuple[Outcome, Path]:
    """The bisect of args; its outcome and the directory holding every step's runs."""
    request = request_of(args)
    top = git_repo.check_repo(args.repo)
    good = git_repo.resolve(top, "--good", args.good)
    bad = git_repo.resolve(top, "--bad", args.bad)
    commits = git_repo.first_parent_range(top, good, bad)
    created = args.out is None or not args.out.exists()
    out = store.prepare_run_dir(args.out, "bisect", registry.REPO_ROOT / "results")
    cleanup.mark_run()
    try:
        builds = BuildCache(top, args.build, args.cache)
        try:
            measurer = Measurer(request, out, console)
            return bisect(commits, good, builds, measurer, out, say), out
        finally:
            builds.close()
    except BaseException:
        # A bisect that ends before anything was measured (a build that fails, a measure
        # command that does, a signal during the first build) leaves no empty record.
        if created and not any(p.is_file() and p.name != SUMMARY for p in out.rglob("*")):
            shutil.rmtree(out, ignore_errors=True)
        raise


def resume_command(args: Args, good: str, bad: str, **changes: object) -> str:
    """The `bakeoff bisect` that goes on from a range left open: args with the range narrowed
    to good..bad (and any flag changed), the cache and the builds it holds reused."""
    a = dataclasses.replace(args, good=good, bad=bad, out=None, **changes)  # type: ignore[arg-type]
    words = ["bakeoff", "bisect", "--repo", str(a.repo), "--good", a.good, "--bad", a.bad,
             "--build", a.build, "--measure", a.measure, "--threshold", a.threshold,
             "--budget", str(a.budget), "--step-time", f"{a.step_time:g}", "--runs",
             str(a.runs), "--metric", a.metric, "--seed", str(a.seed)]
    if a.shell:
        words.append("--shell")
    if a.cache is not None:
        words += ["--cache", str(a.cache)]
    return shlex.join(words)


def better_metric_hint(args: Args, good: str, bad: str) -> str | None:
    """For a step left UNKNOWN: a metric a busy machine moves less than the one that decided,
    which every step recorded (cpu_time, beside wall time) or a step can count (instructions,
    with valgrind installed), and the bisect of good..bad that decides on it; None when no
    measured metric ranks above it (stats/load_metrics.py)."""
    recorded = {m for m in METRICS if m != load_metrics.INSTRUCTIONS or args.metric == m}
    countable = recorded | ({load_metrics.INSTRUCTIONS} if shutil.which("valgrind") else set())
    better = load_metrics.better_metric(args.metric, [countable])
    if better is None:
        return None
    have = "each step also recorded" if better in recorded else "a step can count"
    return load_metrics.better_metric_text(
        args.metric, better, have,
        f"bisect on it with {resume_command(args, good, bad, metric=better)}")
