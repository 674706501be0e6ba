"""`bakeoff compare OLD NEW --rerun`: the old and the new `bakeoff cmd` run measured again,
interleaved in one run, so that run-to-run drift hits both alike.

Two `cmd` runs carry their definitions in results.json (adhoc.Definition). The rerun is one
`cmd` run of every old command (named "old NAME") and every new one ("new NAME"), the scans
and hooks they share; split() then gives it back as an old and a new run whose cases match
those of OLD and NEW, for run_comparison.compare_runs(..., interleaved=True).
"""

from __future__ import annotations

import dataclasses

from bakeoff.cmd import definition as adhoc
from bakeoff.core.errors import UsageError
from bakeoff.declare.model import BenchmarkInfo, Case, RunRecord, Trial

OLD, NEW = "old ", "new "

# How long the rerun measures. A verdict on a change of 10% needs the ratio's CI half-width
# near 3%: the CI must clear 1 + threshold (2%), the point itself wanders by the CI's SE, and
# under CPU contention a command's wall time grows by less than its work (the scheduler's
# waits per execution do not grow with it: docs/STATISTICS.md, "Measured", has the figures,
# and how many rounds this takes there; a quiet machine needs a dozen). The rerun therefore
# adds rounds until every ratio's CI is that narrow (cmd --target-ratio-ci), from at least
# the old run's trial count and MIN_TRIALS, up to TIME_BUDGET_S; the cap of rounds is fitted
# to what the target needs at the spread measured (bakeoff/run/target.py, at most
# FITTED_MAX_TRIALS), and a target the budget or the cap cannot reach is said as soon as the
# spread shows it, and again at the end with what was reached.
TARGET_RATIO_CI_PCT = 3.0
MIN_TRIALS = 10
# A rerun decided on instruction counts starts from fewer rounds: a count repeats exactly
# (its ratio's CI is within the target after the first rounds), so the floor above, set by
# wall time's spread, would only buy more runs under Valgrind, each many times the
# command's own time. The floor is then the fewest trials a verdict reads
# (MIN_TRIALS_FOR_VERDICT, passed in by the caller, which knows the analysis layer).
TIME_BUDGET_S = 600.0


def _definition_of(run: RunRecord, side: str) -> tuple[adhoc.Definition, dict[str, object]]:
    recorded = [info for info in run.benchmarks.values() if info.definition is not None]
    if len(recorded) != 1 or len(run.benchmarks) != 1:
        raise UsageError(f"--rerun measures `bakeoff cmd` runs again from their results.json; "
                         f"the {side} run {run.run_id} is not one: compare it without --rerun")
    return adhoc.Definition.from_json(recorded[0].definition or {}), dict(recorded[0].profile)


def definition(old: RunRecord, new: RunRecord) -> tuple[adhoc.Definition, dict[str, object]]:
    """The rerun's definition (old commands first: the first is the baseline) and the old
    run's counts (trials, executions, warm-up, timeout)."""
    d_old, counts = _definition_of(old, "old")
    d_new, _ = _definition_of(new, "new")
    if [(s.name, s.values) for s in d_old.scans] != [(s.name, s.values) for s in d_new.scans]:
        raise UsageError("--rerun: the two runs scan different values; rerun runs with the "
                         "same -P/-L, or compare them without --rerun")
    if (d_old.setup, d_old.prepare, d_old.cleanup) != (d_new.setup, d_new.prepare,
                                                       d_new.cleanup):
        raise UsageError("--rerun: the two runs have different --setup/--prepare/--cleanup; "
                         "compare them without --rerun")
    commands = tuple(adhoc.Command(OLD + c.name, c.command) for c in d_old.commands) + tuple(
        adhoc.Command(NEW + c.name, c.command) for c in d_new.commands)
    return adhoc.Definition(
        commands=commands, scans=d_old.scans, shell=d_old.shell or d_new.shell,
        setup=d_old.setup, prepare=d_old.prepare, cleanup=d_old.cleanup,
        ignore_failure=d_old.ignore_failure or d_new.ignore_failure,
        # counted again when either side counted them: `compare --rerun --metric instructions`
        instructions=max(d_old.instructions, d_new.instructions)), counts


def split(run: RunRecord) -> tuple[RunRecord, RunRecord]:
    """The rerun as the old run and the new run: each side's trials, variants and questions,
    named as before (so each side answers the question its run asked: against its own first
    command, not the rerun's "old" one)."""
    def side(prefix: str) -> RunRecord:
        def own(cases: list[Case]) -> list[Case]:
            return [dataclasses.replace(c, variant=c.variant[len(prefix):])
                    for c in cases if c.variant.startswith(prefix)]

        def own_trials(trials: list[Trial]) -> list[Trial]:
            return [dataclasses.replace(t, case=own([t.case])[0])
                    for t in trials if t.case.variant.startswith(prefix)]

        return dataclasses.replace(
            run, trials=own_trials(run.trials), retaken=own_trials(run.retaken),
            cases=own(run.cases), capped=own(run.capped),
            benchmarks={name: _side_info(info, prefix) for name, info in run.benchmarks.items()})

    return side(OLD), side(NEW)


def _side_info(info: BenchmarkInfo, prefix: str) -> BenchmarkInfo:
    variants = [v | {"name": v["name"][len(prefix):]} for v in info.variants
                if v["name"].startswith(prefix)]
    if not variants:
        return info
    first, rerun_first = variants[0]["name"], info.baseline
    return dataclasses.replace(info, baseline=first, variants=variants, questions=[
        q | {"against": first, "ask": q["ask"].replace(rerun_first, first)}
        if q.get("against") == rerun_first else q for q in info.questions])
