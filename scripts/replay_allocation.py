#!/usr/bin/env python3
"""What this bakeoff's profiles would have spent on a run already measured (issue 25).

    .venv/bin/python scripts/replay_allocation.py results/<run>
    .venv/bin/python scripts/replay_allocation.py results/<run> --answer-trials tracing-overhead=10

Replays each benchmark's allocation of trials (bakeoff/run/allocation.py, with the rules the
runner builds from the current spec's profile of the run: sequential levels, the questions'
precision, other_trials) on the trials the run recorded: the i-th trial a case gets is the
case's i-th recorded one, so nothing is measured again and no machine load enters the
comparison. Prints per benchmark the trials the profile gives, the sum of their recorded
wall times, and each answer's CI half-width (allocation.reading_half_width) once it stops.
A case the profile would give more trials than the run recorded is counted at what it has,
and said. --answer-trials NAME=N replays with another answer_trials for that benchmark.

Counted samples: a trial the run counted (kernel counters on, Profile.counted_trials) that
the current rules would not count (a case no question reads counts its first trial only,
runner.UNREAD_COUNTED_TRIALS) is charged the median wall time of its case's recorded trials
without counted samples: a model, as counting's cost is a fixed one at the trial's exit
(the tracepoints' RCU grace periods); the lines say how many trials it charged and what it
took off.

--answers: each answer's figures as the report quotes them (report/answers: the findings'
figures with their 95% CI; analysis: the answers' precision table), analysed once on the
trials as recorded and once on the replayed ones, with each CI half-width as a share of its
figure: what the profile's trials would have given on the same trials (issue 34).

The seconds: the replayed trials' recorded wall times (what the trial processes took), and
beside them the run's own seconds outside those walls per benchmark (timings.benchmarks'
trials_s less the recorded walls: preparing trials, such as bpf-map-dump's loaders filling
their maps, the decisions between rounds, retaken trials), as recorded, not replayed.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bakeoff.analysis import within_run  # noqa: E402
from bakeoff.core.errors import UsageError  # noqa: E402
from bakeoff.declare import registry  # noqa: E402
from bakeoff.declare.model import Benchmark, Case, RunRecord, RunSettings, Trial  # noqa: E402
from bakeoff.plan.cases import BenchmarkPlan  # noqa: E402
from bakeoff.report.answers import answers as answers_of  # noqa: E402
from bakeoff.run import allocation, runner  # noqa: E402
from bakeoff.stats import estimates as stats  # noqa: E402
from bakeoff.store import results as store  # noqa: E402


def replay(bench: Benchmark, plan: BenchmarkPlan, recorded: dict[Case, list[Trial]],
           settings: RunSettings, seed: int) -> tuple[dict[Case, int], set[Case], list[str]]:
    """The trials each case gets under plan's profile; the cases that wanted more than the
    run recorded; one line per answer with its half-width at the end."""
    rule = runner._rule(plan, settings)
    precision = runner._precision(plan, settings, seed)
    others = runner._others(plan, settings)
    count = dict.fromkeys(plan.cases, 0)
    signed = {m.name for m in bench.metrics if m.signed}

    def values(case: Case, metric: str) -> stats.Trials:
        per_trial = [t.samples[metric] for t in recorded[case][:count[case]]
                     if t.ok and t.samples.get(metric)]
        return [[abs(v) for v in s] for s in per_trial] if metric in signed else per_trial

    short: set[Case] = set()
    while True:
        todo = allocation.cases_needing_trials(
            plan.cases, count, lambda c: values(c, bench.primary_metric.name),
            bench.baseline.name, rule, precision, values, others)
        todo = [c for c in todo if c not in short]
        if not todo:
            break
        for case in todo:
            if count[case] >= len(recorded[case]):
                short.add(case)
            else:
                count[case] += 1
    lines: list[str] = []
    if precision is None:
        return count, short, lines
    for r in precision.readings:
        if r.kind == "level":
            continue
        half = allocation.reading_half_width(r, values, precision.rng)
        ref = f" + {count[r.reference]}" if r.reference is not None else ""
        params = ", ".join(f"{k}={v}" for k, v in r.case.params)
        lines.append(f"    Q{r.question + 1} {r.case.variant} ({params}): "
                     f"{count[r.case]}{ref} trials, half-width {half * 100:.1f}%")
    return count, short, lines


def is_counted(trial: Trial) -> bool:
    return any(name.startswith("counted.") for name in trial.samples)


def trial_seconds(plan: BenchmarkPlan, settings: RunSettings,
                  recorded: dict[Case, list[Trial]], count: dict[Case, int],
                  ) -> tuple[float, int, float]:
    """The replayed trials' seconds: recorded wall times, but a trial recorded counted that
    the profile's rules would not count is charged its case's median plain trial (when the
    case has one). Returns the seconds, the trials so charged and the seconds that took off."""
    others = runner._others(plan, settings)
    total, charged, saved = 0.0, 0, 0.0
    for case in plan.cases:
        trials = recorded[case][:count[case]]
        limit = plan.profile.counted_trials
        if others is not None and case in others.cases:
            limit = min(limit or 1, runner.UNREAD_COUNTED_TRIALS)
        plain = [t.wall_s for t in recorded[case] if not is_counted(t)]
        for t in trials:
            if limit is not None and t.index >= limit and is_counted(t) and plain:
                median = statistics.median(plain)
                total += median
                charged += 1
                saved += t.wall_s - median
            else:
                total += t.wall_s
    return total, charged, saved


def half_width(low: float, high: float, value: float) -> float:
    """A CI's half-width as a share of its figure; NaN for a statement (no CI) or a 0."""
    if not (math.isfinite(low) and math.isfinite(high) and math.isfinite(value)) or not value:
        return math.nan
    return (high - low) / 2 / abs(value)


def answer_figures(run: RunRecord) -> dict[tuple[str, str], tuple[float, str]]:
    """(benchmark, what) -> (CI half-width as a share, as the report says it), for every
    figure of every answer the report quotes: the findings' figures, then the answers'
    precision table (the question's own readings, "P: ...")."""
    out: dict[tuple[str, str], tuple[float, str]] = {}
    for ba in within_run.analyze(run).benchmarks:
        name = ba.info.name
        for i, (_q, answer) in enumerate(answers_of(ba)):
            for f in answer.figures if answer is not None else ():
                out[(name, f"Q{i + 1} {f.label}")] = (half_width(f.low, f.high, f.value),
                                                      f.shown)
        for a in ba.answers:
            params = ", ".join(f"{k}={v}" for k, v in a.case.params)
            against = f" against {a.reference.variant}" if a.reference is not None else ""
            out[(name, f"P: Q{a.question + 1} {a.case.variant}{against} ({params}) "
                       f"{a.metric}")] = (
                a.half_width, f"{a.value:.4g} ({a.ci_low:.4g}-{a.ci_high:.4g}; "
                              f"{a.n_trials} + {a.n_reference_trials} trials)")
    return out


def compare_answers(before: RunRecord, after: RunRecord) -> list[str]:
    """One line per answer figure: its half-width on the recorded trials and on the
    replayed ones; "wider" where the replay's is; a statement's words when they change."""
    was, now = answer_figures(before), answer_figures(after)
    lines = []
    for key, (hw, shown) in was.items():
        hw_after, shown_after = now.get(key, (math.nan, "not answered"))
        if math.isnan(hw) and math.isnan(hw_after):
            change = "" if shown == shown_after else f": {shown} -> {shown_after}"
            lines.append(f"  {key[0]}: {key[1]}: a statement{change or ', unchanged'}")
            continue
        if key not in now:
            lines.append(f"  {key[0]}: {key[1]}: +-{hw * 100:.1f}% -> not answered (wider)")
            continue
        wider = " (wider)" if not hw_after <= hw * (1 + 1e-9) else ""
        after = "a statement" if math.isnan(hw_after) else f"+-{hw_after * 100:.1f}%"
        lines.append(f"  {key[0]}: {key[1]}: +-{hw * 100:.1f}% -> {after}{wider}")
    return lines


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("--answer-trials", action="append", default=[], metavar="NAME=N")
    ap.add_argument("--answers", action="store_true",
                    help="each answer's CI half-width on the recorded and replayed trials")
    args = ap.parse_args(argv)
    try:
        run: RunRecord = store.load(args.run)
    except (OSError, UsageError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    shares: dict[str, int] = {}
    for item in args.answer_trials:
        name, _, n = item.partition("=")
        if not n.isdigit() or int(n) < 1:
            print(f"error: --answer-trials {item}: give NAME=N, N a whole number >= 1",
                  file=sys.stderr)
            return 2
        shares[name] = int(n)
    recorded: dict[Case, list[Trial]] = defaultdict(list)
    for t in run.trials:
        recorded[t.case].append(t)
    known = registry.discover()
    total_n, total_s, total_between = 0, 0.0, 0.0
    kept: list[Trial] = []
    timed = run.timings.get("benchmarks", {}) if isinstance(run.timings, dict) else {}
    for name in run.benchmarks:
        bench = known.get(name)
        if bench is None or run.profile not in bench.profiles:
            print(f"{name}: not in this bakeoff with profile {run.profile}; left out")
            continue
        profile = bench.profiles[run.profile]
        if name in shares:
            profile = dataclasses.replace(profile, answer_trials=shares[name])
        cases = [c for c in run.cases if c.benchmark == name and recorded[c]]
        plan = BenchmarkPlan(benchmark=bench, profile=profile, cases=cases, skips=[])
        count, short, lines = replay(bench, plan, recorded, run.settings, run.seed)
        n = sum(count.values())
        kept += [t for c in cases for t in recorded[c][:count[c]]]
        wall, charged, saved = trial_seconds(plan, run.settings, recorded, count)
        total_n, total_s = total_n + n, total_s + wall
        trials_s = timed.get(name, {}).get("trials_s")
        between = (float(trials_s) - sum(t.wall_s for c in cases for t in recorded[c])
                   if isinstance(trials_s, int | float) else 0.0)
        total_between += between
        print(f"{name}: {n} trials (recorded {sum(len(recorded[c]) for c in cases)}), "
              f"{wall:.1f} s of recorded trial wall time"
              + (f" (of which {charged} trials recorded counted are charged as plain ones, "
                 f"{saved:.1f} s less: a model)" if charged else "")
              + (f" (+ {between:.1f} s outside the walls, as recorded)" if between else "")
              + (f"; {len(short)} case(s) wanted more than recorded" if short else ""))
        for line in lines:
            print(line)
    print(f"total: {total_n} trials, {total_s:.1f} s of recorded trial wall time"
          + (f" (+ {total_between:.1f} s outside the walls, as recorded)"
             if total_between else ""))
    if args.answers:
        print("answers (CI half-width as a share of the figure: recorded trials -> replayed):")
        for line in compare_answers(run, dataclasses.replace(run, trials=kept)):
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
