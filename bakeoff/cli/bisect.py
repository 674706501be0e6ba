"""`bakeoff bisect`: the first commit where the program under test got slower.

Parse -> the feature (bakeoff/bisect/command.py: check, build, measure interleaved, narrow
down) -> the answer printed. Exit 0 when the first bad commit is found, 1 when it could not
be told (no step between the ends, a step still UNKNOWN at its budget, or only commits that
do not build left in the range: then the range and the command that goes on are printed), 2
for bad input or an end that does not build. Every answer names the metric that decided; a
step left UNKNOWN on one a busy machine moves (wall_time, cpu_time) names the one that decides
better and the bisect that uses it (bisect/command.better_metric_hint).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from bakeoff.app.console import err_console, out_console
from bakeoff.bisect.args import (
    DEFAULT_BUDGET_ROUNDS,
    DEFAULT_RUNS,
    DEFAULT_STEP_TIME_S,
    METRICS,
    Args,
)


def cmd_bisect(
    repo: Annotated[Path, typer.Option(help="The program's git repository (its work tree).")],
    good: Annotated[str, typer.Option(help="A commit where the program was fast.")],
    bad: Annotated[str, typer.Option(help="A later commit where it is slower.")],
    build: Annotated[str, typer.Option(
        help="Builds the program in a checkout of a commit (run by sh there), e.g. 'make'.")],
    measure: Annotated[str, typer.Option(
        help="The measured command; {build} is the build's directory, e.g. '{build}/prog'.")],
    threshold: Annotated[str, typer.Option(
        help="The smallest slowdown to find, e.g. 5%.")] = "5%",
    budget: Annotated[int, typer.Option(
        help="Rounds (one trial of good and candidate each) a step may measure before an "
             "UNKNOWN stands.")] = DEFAULT_BUDGET_ROUNDS,
    step_time: Annotated[float, typer.Option(
        help="Seconds a step may measure.")] = DEFAULT_STEP_TIME_S,
    runs: Annotated[int, typer.Option(
        "--runs", "-r", help="Executions of the command per trial.")] = DEFAULT_RUNS,
    metric: Annotated[str, typer.Option(
        help=f"What is compared: {', '.join(METRICS)} (user_time: the program's CPU time, "
             "which a busy machine's waits do not lengthen; instructions: user-space "
             "instructions under cachegrind, unmoved by load, blind to kernel work and waits; "
             "on a busy machine instructions decide best, then cpu_time: docs/STATISTICS.md, "
             "Each metric per decision).")] = "wall_time",
    shell: Annotated[bool, typer.Option(
        help="Run the measured command through sh (automatic when it uses shell syntax).")]
        = False,
    seed: Annotated[int, typer.Option(help="Seed of the trials' order.")] = 1,
    out: Annotated[Path | None, typer.Option(
        help="Where every step's runs and bisect.json go (default results/<time>-bisect).")]
        = None,
    cache: Annotated[Path | None, typer.Option(
        help="The build cache (default $XDG_CACHE_HOME/bakeoff/bisect).")] = None,
) -> None:
    """Find the first commit where the program got slower: good and candidate measured
    interleaved in one run per step, SAME/DIFFERENT/UNKNOWN from the ratio's 95% CI."""
    def say(text: str) -> None:
        out_console.print(text, highlight=False, soft_wrap=True)

    from bakeoff.bisect import command

    args = Args(repo=repo, good=good, bad=bad, build=build, measure=measure,
                threshold=threshold, budget=budget, step_time=step_time, runs=runs,
                metric=metric, shell=shell, seed=seed, out=out, cache=cache)
    outcome, out_dir = command.run(args, err_console, say)
    measured = [s for s in outcome.steps if s.ci is not None]
    last = measured[-1]
    assert last.ci is not None
    skipped = (f"; skipped (did not build): {', '.join(c.short for c in outcome.skipped)}"
               if outcome.skipped else "")
    if outcome.status == "found" and outcome.first_bad is not None:
        by = next((s for s in measured if s.candidate == outcome.first_bad), last)
        assert by.ci is not None
        say(f"first bad commit: {outcome.first_bad.sha} ({outcome.first_bad.subject}); "
            f"{outcome.metric} ratio to good {by.ci.words()}; {outcome.measurement_steps} "
            f"measurement steps{skipped}; record: {out_dir}")
        return
    if outcome.status == "no-step":
        say(f"no slowdown to bisect: bad/good {outcome.metric} ratio {last.ci.words()} is "
            f"{last.verdict}, not wholly above 1 + threshold/2; record: {out_dir}")
        if last.verdict == "UNKNOWN":
            _say_better_metric(args, outcome.good.sha, outcome.bad.sha, say)
        raise typer.Exit(1)
    lo = outcome.last_good or outcome.good
    hi = outcome.known_bad or outcome.bad
    if outcome.status == "skipped":
        between = [c.short for c in outcome.left[:-1]]
        say(f"not found: the first bad commit is one of the {len(outcome.left)} commits after "
            f"{lo.short} up to {hi.short}, but those before {hi.short} do not build "
            f"({', '.join(between)}), so the search cannot tell which; record: {out_dir}")
        say("to go on once they build (fix the build, or a --build that does), run: "
            + command.resume_command(args, lo.sha, hi.sha))
    else:
        say(f"not found: step {last.number} ({last.candidate.short}) is still UNKNOWN after "
            f"{last.ci.rounds} rounds ({outcome.metric} ratio {last.ci.words()}); the first "
            f"bad commit is after {lo.short} and at or before {hi.short}{skipped}; record: "
            f"{out_dir}")
        say("to go on with more rounds a step, run: " + command.resume_command(
            args, lo.sha, hi.sha, budget=args.budget * 2, step_time=args.step_time * 2))
        _say_better_metric(args, lo.sha, hi.sha, say)
    raise typer.Exit(1)


def _say_better_metric(args: Args, good: str, bad: str,
                       say: Callable[[str], None]) -> None:
    """A step left UNKNOWN on a metric a busy machine moves: the one that decides better."""
    from bakeoff.bisect import command

    hint = command.better_metric_hint(args, good, bad)
    if hint is not None:
        say(hint)

