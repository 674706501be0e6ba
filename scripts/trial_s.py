#!/usr/bin/env python3
"""Profile.trial_s, trials_growth, trial_s_busy and counting_s from measured runs, not typed
by hand (issues 28, 34).

    .venv/bin/python scripts/trial_s.py results/<run> [results/<run> ...]   # print
    .venv/bin/python scripts/trial_s.py results/<run> ... --write   # and rewrite the specs
    .venv/bin/python scripts/trial_s.py results/<run> --write --room mremap-vs-memcpy
    .venv/bin/python scripts/trial_s.py <runs beside two CPU hogs> --busy --write

For each benchmark of each run: its ok trials (counted ones included, as a run has them), the
mean wall time of one, the wall time from its first trial's start to its last trial's end
(what the room took in that run, sessions and warm-ups included), and its growth: the
trials it kept over those its plan counted before any ran (the run's estimate_log). With
--write, each room's spec.py gets, in the profile the runs used, the mean over the runs of
the mean trial as `trial_s=`, of the growth as `trials_growth=` and of what counting added
to a counted trial before its last measured sample as `counting_s=`, the one place the
estimate of the time left reads them; the spec's other text is left as it is. Runs that are
not complete or not of one profile, or a room whose spec has no `trial_s=` in that profile,
are reported and left. Several runs: a room's trial time relative to the others' moves
by a fifth from run to run on one machine (docs/RELIABILITY.md). With --busy, the runs were
made beside `stress-ng --cpu 2` on a machine of two CPUs, and only `trial_s_busy=` is written
(added after trials_growth= where absent): the mean trial there, which the time left moves
toward as far as a run's trials wait for a CPU (bakeoff/run/progress.py, Estimate.load).
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bakeoff.core.errors import UsageError  # noqa: E402
from bakeoff.declare import registry  # noqa: E402
from bakeoff.declare.model import RunRecord  # noqa: E402
from bakeoff.run import progress  # noqa: E402
from bakeoff.store import results as store  # noqa: E402


def _when(stamp: str) -> dt.datetime:
    return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def room_times(run: RunRecord) -> dict[str, tuple[int, float, float]]:
    """benchmark -> (ok trials, mean wall s of one, s from its first start to its last end)."""
    out: dict[str, tuple[int, float, float]] = {}
    for name in run.benchmarks:
        trials = [t for t in run.trials if t.case.benchmark == name and t.ok]
        if not trials:
            continue
        start = min(_when(t.started_at) for t in trials)
        end = max(_when(t.started_at) + dt.timedelta(seconds=t.wall_s) for t in trials)
        out[name] = (len(trials), sum(t.wall_s for t in trials) / len(trials),
                     (end - start).total_seconds())
    return out


def waited(run: RunRecord) -> float | None:
    """The share of their wall time the run's trials (those retaken too) waited for a CPU,
    as the time left reads a run's load (bakeoff/run/progress.py wait_share, against
    BUSY_WAIT_SHARE: what runs beside two CPU hogs waited where --busy was tuned); None
    without the waits."""
    return progress.wait_share((t.contention.run_delay_s if t.contention else None, t.wall_s)
                               for t in [*run.trials, *run.retaken])


def growth(run: RunRecord) -> dict[str, float]:
    """benchmark -> the trials it kept over those its plan counted before any ran, as the
    run's estimate of the time left counted both (none for a run without its log)."""
    log = run.timings.get("estimate_log")
    if not log:
        return {}
    benchmark_of = [case["benchmark"] for case in log["cases"]]
    planned: dict[str, int] = {}
    kept: dict[str, int] = {}
    for key, n in log["log"][0][2]:
        planned[benchmark_of[key]] = planned.get(benchmark_of[key], 0) + n
    for what, _at, *args in log["log"][1:]:
        if what in ("done", "retaken"):
            name = benchmark_of[args[0]]
            kept[name] = kept.get(name, 0) + (1 if what == "done" else -1)
    return {name: kept.get(name, 0) / n for name, n in planned.items() if n}


def counting(run: RunRecord) -> dict[str, float]:
    """benchmark -> what counting added to its counted trials before their last measured
    sample, beyond a plain trial of the same case (the median over its cases with both
    kinds): the run's estimate_log told again to an estimate, read at its end
    (progress.Estimate.counting_beyond_tail, what the time left learns as a run goes)."""
    log = run.timings.get("estimate_log")
    if not log:
        return {}
    estimate, _ = progress.replayed(log["log"], log["cases"])
    return estimate.counting_beyond_tail()


class RunFigures(NamedTuple):
    """One run's figures per benchmark: (ok trials, mean trial s, first-to-last s), growth,
    counting added."""
    times: dict[str, tuple[int, float, float]]
    growth: dict[str, float]
    counting: dict[str, float]


class Tuning(NamedTuple):
    """Per benchmark, the means over runs of what --write sets: trial_s (or trial_s_busy),
    trials_growth and counting_s (never below 0 in a declaration; a run's median can be)."""
    trial_s: dict[str, float]
    growth: dict[str, float]
    counting: dict[str, float]


def run_figures(run: RunRecord) -> RunFigures:
    """room_times, growth and counting of one run (counting replays its log: read once)."""
    return RunFigures(room_times(run), growth(run), counting(run))


def tuning(runs: Iterable[RunFigures]) -> Tuning:
    """The means over runs of each benchmark's mean trial, growth and counting added."""
    means: dict[str, list[float]] = {}
    grown: dict[str, list[float]] = {}
    counts: dict[str, list[float]] = {}
    for figures in runs:
        for name, (_, mean, _) in figures.times.items():
            means.setdefault(name, []).append(mean)
            if name in figures.growth:
                grown.setdefault(name, []).append(figures.growth[name])
            if name in figures.counting:
                counts.setdefault(name, []).append(figures.counting[name])

    def mean(values: dict[str, list[float]]) -> dict[str, float]:
        return {k: sum(v) / len(v) for k, v in values.items()}
    return Tuning(mean(means), mean(grown), {k: max(0.0, v) for k, v in mean(counts).items()})


def _profile_body(text: str, profile: str) -> tuple[int, int] | None:
    """Where the arguments of the `"<profile>": Profile(...)` call lie in text."""
    call = re.search(rf'"{re.escape(profile)}":\s*Profile\(', text)
    if call is None:
        return None
    depth, i = 1, call.end()
    while depth and i < len(text):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        i += 1
    return call.end(), i


def _set(body: str, name: str, value: float, after: str, indent: int) -> str | None:
    """body with name=value: replaced where it is, else added on a line of its own after
    `after=...`, lined up with the call's arguments; None if neither is there."""
    new, n = re.subn(rf"\b{name}=[0-9.eE+-]+", f"{name}={value:.2f}", body)
    if n:
        return new
    new, n = re.subn(rf"\b{after}=[0-9.eE+-]+",
                     lambda m: f"{m.group(0)},\n{' ' * indent}{name}={value:.2f}", body)
    return new if n else None


def rewrite(spec: Path, profile: str, value: float | None, grown: float | None = None,
            busy: float | None = None, counting_s: float | None = None) -> bool:
    """Sets trial_s= (and trials_growth=, trial_s_busy= and counting_s=, each added after the
    last of those before it that is there, where absent) inside the `"<profile>":
    Profile(...)` call of spec; False if it has no trial_s=. value None: trial_s= is left as
    it is (a busy run's figures are written alone)."""
    text = spec.read_text()
    where = _profile_body(text, profile)
    if where is None:
        return False
    start, end = where
    indent = start - text.rfind("\n", 0, start) - 1
    body = text[start:end]
    if re.search(r"\btrial_s=[0-9.eE+-]+", body) is None:
        return False
    order = ("trial_s", "trials_growth", "trial_s_busy", "counting_s")
    for name, figure in zip(order, (value, grown, busy, counting_s), strict=True):
        if figure is None:
            continue
        after = next((a for a in reversed(order[:order.index(name)]) if f"{a}=" in body),
                     "trial_s")
        changed = _set(body, name, figure, after, indent)
        if changed is None:
            return False
        body = changed
    spec.write_text(text[:start] + body + text[end:])
    return True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dirs", type=Path, nargs="+", metavar="run_dir")
    ap.add_argument("--write", action="store_true",
                    help="rewrite trial_s= and trials_growth= in the specs")
    ap.add_argument("--busy", action="store_true",
                    help="the runs were made beside two CPU hogs (stress-ng --cpu 2 on two "
                         "CPUs): with --write, set trial_s_busy= alone")
    ap.add_argument("--room", action="append", default=[], metavar="NAME",
                    help="only this benchmark (repeatable; default: every one in the runs)")
    args = ap.parse_args()
    try:
        runs = [store.load(path) for path in args.run_dirs]
    except UsageError as exc:
        print(f"trial_s.py: error: {exc}", file=sys.stderr)
        return 2
    complete: list[RunFigures] = []
    for run in runs:
        cpu = run.host.get("cpu_model", "?")
        left_out = "" if run.status == "complete" else "; not complete, so not counted"
        share = waited(run)
        wait = "" if share is None else f", trials waited {share:.1%} for a CPU"
        print(f"{run.run_id} (profile {run.profile}, {run.status}, {cpu}, load "
              f"{run.host.get('loadavg_1m', '?')} at start{wait}{left_out})")
        figures = run_figures(run)
        for name, (n, mean, span) in figures.times.items():
            if args.room and name not in args.room:
                continue
            line = f"  {name}: {n} ok trials, mean {mean:.3f} s a trial, {span:.1f} s first to last"
            if name in figures.growth:
                line += f", {figures.growth[name]:.2f}× its plan's trials"
            if name in figures.counting:
                line += f", counting added {figures.counting[name]:.3f} s a counted trial"
            print(line)
        if run.status == "complete":
            complete.append(figures)
    if not args.write:
        return 0
    profiles = {run.profile for run in runs}
    if len(profiles) != 1:
        print(f"not written: the runs are of profiles {', '.join(sorted(profiles))}, not one")
        return 0
    profile = profiles.pop()
    tuned = tuning(complete)
    counted_runs = {name: sum(name in f.times for f in complete) for name in tuned.trial_s}
    for name, mean in tuned.trial_s.items():
        if args.room and name not in args.room:
            continue
        factor = tuned.growth.get(name)
        extra = tuned.counting.get(name)
        rooms = registry.room_dirs([name])
        spec = registry.benchmarks_dir() / rooms[0] / "spec.py" if rooms else None
        written = spec is not None and spec.exists() and (
            rewrite(spec, profile, None, busy=mean) if args.busy
            else rewrite(spec, profile, mean, factor, counting_s=extra))
        if spec is None or not written:
            print(f"{name}: not written: no trial_s= in its {profile} profile")
            continue
        what = (f"trial_s_busy={mean:.2f}" if args.busy else f"trial_s={mean:.2f}"
                + ("" if factor is None else f", trials_growth={factor:.2f}")
                + ("" if extra is None else f", counting_s={extra:.2f}"))
        print(f"{name}: wrote {what} to {spec.relative_to(REPO)} "
              f"(the mean of {counted_runs[name]} complete run"
              f"{'s' if counted_runs[name] > 1 else ''})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
