#!/usr/bin/env python3
"""The time left runs said at 25, 50 and 75%, said again by another commit's estimate (issue 34).

    .venv/bin/python scripts/time_left_replay.py results/<run> [results/<run> ...] [--ref REV]

Each run keeps everything its estimate of the time left was told (results.json,
timings.estimate_log: each trial's seconds, the allocation's plan after each round, each
decision between rounds, each retake). For each run this prints, at 25%, 50% and 75% of its
measuring time, the seconds said against those that truly remained (error), and the trials
the plan then counted against those truly still taken:

- as run: what the run's progress said (timings.time_left);
- REV estimate: the estimate of commit REV (default ea6faf9, where this work began) told the
  same log, the plan as the run made it;
- REV estimate and plan: the same, with the plan after each round recomputed by REV's
  allocation from the trials the run had recorded by then (expected_trials, with the rules
  the runner builds from the current spec's profile, as scripts/replay_allocation.py does);
- now: the current estimate and plan, recomputed the same way (equal to "as run" for a run
  made with the current code, which checks the recomputation).

Nothing is measured again: the runs' own timelines, load and all, are what is compared.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import inspect
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bakeoff.core.errors import UsageError  # noqa: E402
from bakeoff.declare import registry  # noqa: E402
from bakeoff.declare.model import Case, Profile, RunRecord, Trial  # noqa: E402
from bakeoff.plan.cases import BenchmarkPlan  # noqa: E402
from bakeoff.run import allocation, progress, runner  # noqa: E402
from bakeoff.run.timings import CHECKPOINTS  # noqa: E402
from bakeoff.stats import estimates as stats  # noqa: E402
from bakeoff.store import results as store  # noqa: E402

# A plan after a benchmark's k-th round: {case: trials still expected}.
Planner = Callable[[str, int], dict[Case, int] | None]


def module_at(rev: str, path: str, name: str, into: Path) -> ModuleType:
    """The module at path as commit rev has it, imported under name."""
    source = subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:{path}"], check=True,
                            capture_output=True, text=True).stdout
    file = into / f"{name}.py"
    file.write_text(source)
    spec = importlib.util.spec_from_file_location(name, file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def as_run(profile: Profile, run: RunRecord, bench_name: str) -> Profile:
    """profile with the trial counts the run recorded for it (benchmarks[name].profile:
    trials, answer_trials, other_trials...): a run made before a profile changed is planned
    with the rules it ran under, not today's."""
    info = run.benchmarks.get(bench_name)
    recorded = dict(info.profile) if info is not None else {}
    names = {f.name for f in dataclasses.fields(profile)}
    return dataclasses.replace(profile, **{k: v for k, v in recorded.items() if k in names})


def planner(run: RunRecord, alloc: ModuleType) -> Planner:
    """The plan alloc's expected_trials makes after each round of each benchmark, from the
    trials the run recorded up to that round."""
    known = registry.discover()
    by_case: dict[Case, list[Trial]] = defaultdict(list)
    for t in run.trials:
        by_case[t.case].append(t)
    order = {b: [t for t in run.trials if t.case.benchmark == b] for b in run.benchmarks}

    def plan_after(bench_name: str, m: int) -> dict[Case, int] | None:
        bench = known.get(bench_name)
        if bench is None or run.profile not in bench.profiles or m > len(order[bench_name]):
            return None
        taken = {id(t) for t in order[bench_name][:m]}  # in the order they ran
        cases = [c for c in run.cases if c.benchmark == bench_name]
        plan = BenchmarkPlan(benchmark=bench, profile=as_run(bench.profiles[run.profile],
                                                             run, bench_name),
                             cases=cases, skips=[])
        signed = {m.name for m in bench.metrics if m.signed}

        def values(case: Case, metric: str) -> stats.Trials:
            per_trial = [t.samples[metric] for t in by_case[case]
                         if id(t) in taken and t.ok and t.samples.get(metric)]
            return [[abs(v) for v in s] for s in per_trial] if metric in signed else per_trial

        count = {c: sum(1 for t in by_case[c] if id(t) in taken) for c in cases}
        rule = runner._rule(plan, run.settings)
        if not (rule.sequential or runner._precision(plan, run.settings, run.seed)
                or runner._others(plan, run.settings)):
            return None
        expected = alloc.expected_trials(
            cases, count, lambda c: values(c, bench.primary_metric.name), bench.baseline.name,
            rule, runner._precision(plan, run.settings, run.seed), values,
            runner._others(plan, run.settings))
        return {c: max(0, n - count[c]) for c, n in expected.items()}

    return plan_after


def told(estimate_cls: type[Any], log: Sequence[Sequence[Any]], cases: Sequence[Any],
         plan: Planner | None, rounds_only: bool = False
         ) -> list[tuple[float, float | None, int]]:
    """After each attempt: (seconds since the start, the seconds left said, the trials the
    plan still counted); with plan, each replan of the log replaced by plan's, made from the
    trials measured by then. rounds_only: the replans within a round (after a case's first
    trial, which the runner makes since ea6faf9's successor) left out, as a runner that
    planned at a round's end only (a decision follows those) had it."""
    by_key = [Case.from_json(c) for c in cases]
    begin = log[0]
    # An older estimate takes fewer of what a newer log records: what it takes of each.
    takes_counted = "counted" in inspect.signature(estimate_cls).parameters
    done_args = len(inspect.signature(estimate_cls.done).parameters) - 2  # less self, case
    extra = [begin[6]] if len(begin) > 6 and takes_counted else []
    if extra and len(begin) > 7 and "earlier_kept" in inspect.signature(estimate_cls).parameters:
        extra.append({by_key[k]: n for k, n in begin[7]})
    est = estimate_cls({by_key[k]: n for k, n in begin[2]}, {by_key[k]: v for k, v in begin[3]},
                       begin[4], begin[5], *extra)
    measured: dict[str, int] = defaultdict(int)  # trials measured so far (retakes apart)
    out: list[tuple[float, float | None, int]] = []
    for i, (what, at, *args) in enumerate(log[1:], start=1):
        if what == "done":
            measured[by_key[args[0]].benchmark] += 1
            est.done(by_key[args[0]], *args[1:1 + done_args])
            found = est.seconds_left()
            out.append((at, None if found is None else found[0],
                        sum(max(0, n) for n in est.todo.values())))
        elif what == "grow":
            est.grow([by_key[k] for k in args[0]])
        elif what == "replan":
            left = {by_key[k]: n for k, n in args[0]}
            if rounds_only and (i + 1 >= len(log) or log[i + 1][0] != "decided"):
                continue
            bench = next(iter(left)).benchmark if left else ""
            mine = plan(bench, measured[bench]) if plan is not None and left else None
            est.replan({c: mine.get(c, n) for c, n in left.items()} if mine is not None
                       else left)
        elif what == "set_up":
            est.set_up(args[0], args[1])
        elif what == "decided":
            est.decided(args[0], args[1])
        elif what == "retaken":
            est.retaken(by_key[args[0]])
            measured[by_key[args[0]].benchmark] -= 1
    return out


def checkpoints(log: Sequence[Sequence[Any]], said: list[tuple[float, float | None, int]],
                measure_s: float) -> list[str]:
    """Per checkpoint: 'said/remained s (error; trials counted/truly left)'."""
    attempts = [(e[1], e[0]) for e in log[1:] if e[0] in ("done", "retaken")]
    cells = []
    for share in CHECKPOINTS:
        before = [s for s in said if s[0] <= share * measure_s]
        at, seconds, counted = before[-1] if before else (0.0, None, 0)
        if seconds is None:
            cells.append("-")
            continue
        remained = measure_s - at
        after = [w for t, w in attempts if t > at]
        left = after.count("done") - after.count("retaken")
        cells.append(f"{seconds:.1f}/{remained:.1f} s ({(seconds / remained - 1) * 100:+.0f}%; "
                     f"{counted}/{left})")
    return cells


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", type=Path, nargs="+")
    ap.add_argument("--ref", default="ea6faf9")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        old_alloc = module_at(args.ref, "bakeoff/run/allocation.py", "allocation_at_ref",
                              Path(tmp))
        old_progress = module_at(args.ref, "bakeoff/run/progress.py", "progress_at_ref",
                                 Path(tmp))
        print(f"| run | estimate | {' | '.join(f'{s:.0%}' for s in CHECKPOINTS)} |")
        print("|---|---|" + "---|" * len(CHECKPOINTS))
        for path in args.runs:
            try:
                run: RunRecord = store.load(path)
            except (OSError, UsageError) as exc:
                print(f"error: {exc}", file=sys.stderr)
                return 2
            t = run.timings
            if "estimate_log" not in t:
                print(f"{path}: no estimate_log (a run from before it was kept); left out")
                continue
            log, cases, measure_s = (t["estimate_log"]["log"], t["estimate_log"]["cases"],
                                     t["measure_s"])
            as_run = [f"{c['said_s']:.1f}/{c['remained_s']:.1f} s "
                      f"({(c['said_s'] / c['remained_s'] - 1) * 100:+.0f}%; "
                      f"{c['trials_said']}/{c['trials_left']})" if c["said_s"] else "-"
                      for c in t["time_left"]]
            rows = [("as run", as_run),
                    (f"{args.ref} estimate", checkpoints(
                        log, told(old_progress.Estimate, log, cases, None), measure_s)),
                    (f"{args.ref} estimate and plan", checkpoints(
                        log, told(old_progress.Estimate, log, cases,
                                  planner(run, old_alloc), rounds_only=True), measure_s)),
                    ("now", checkpoints(log, told(progress.Estimate, log, cases,
                                                  planner(run, allocation)), measure_s))]
            name = path.name
            for label, cells in rows:
                print(f"| {name} | {label} | {' | '.join(cells)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
