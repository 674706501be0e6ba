#!/usr/bin/env python3
"""Profile.trial_s and trials_growth from measured runs, not typed by hand (issues 28, 34).

    .venv/bin/python scripts/trial_s.py results/<run> [results/<run> ...]   # print
    .venv/bin/python scripts/trial_s.py results/<run> ... --write   # and rewrite the specs
    .venv/bin/python scripts/trial_s.py results/<run> --write --room mremap-vs-memcpy

For each benchmark of each run: its ok trials (counted ones included, as a run has them), the
mean wall time of one, the wall time from its first trial's start to its last trial's end
(what the room took in that run, sessions and warm-ups included), and its growth: the
trials it kept over those its plan counted before any ran (the run's estimate_log). With
--write, each room's spec.py gets, in the profile the runs used, the mean over the runs of
the mean trial as `trial_s=` and of the growth as `trials_growth=`, the one place the
estimate of the time left reads them; the spec's other text is left as it is. Runs that are
not complete or not of one profile, or a room whose spec has no `trial_s=` in that profile,
are reported and left. Several runs: a room's trial time relative to the others' moves
by a fifth from run to run on one machine (docs/RELIABILITY.md).
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bakeoff.core.errors import UsageError  # noqa: E402
from bakeoff.declare import registry  # noqa: E402
from bakeoff.declare.model import RunRecord  # noqa: E402
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


def rewrite(spec: Path, profile: str, value: float, grown: float | None = None) -> bool:
    """Sets trial_s= (and trials_growth=, after it where absent) inside the
    `"<profile>": Profile(...)` call of spec; False if it has no trial_s=."""
    text = spec.read_text()
    call = re.search(rf'"{re.escape(profile)}":\s*Profile\(', text)
    if call is None:
        return False
    depth, i = 1, call.end()
    while depth and i < len(text):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        i += 1
    body = text[call.end():i]
    new_body, n = re.subn(r"\btrial_s=[0-9.eE+-]+", f"trial_s={value:.2f}", body)
    if n != 1:
        return False
    if grown is not None:
        new_body, n = re.subn(r"trials_growth=[0-9.eE+-]+", f"trials_growth={grown:.2f}",
                              new_body)
        if n == 0:
            new_body = re.sub(r"\btrial_s=[0-9.]+", lambda m: f"{m.group(0)},\n"
                              f"{' ' * _indent(text, call.end())}trials_growth={grown:.2f}",
                              new_body)
    spec.write_text(text[:call.end()] + new_body + text[i:])
    return True


def _indent(text: str, at: int) -> int:
    """The column where the arguments of the call opening before `at` line up."""
    return at - text.rfind("\n", 0, at) - 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dirs", type=Path, nargs="+", metavar="run_dir")
    ap.add_argument("--write", action="store_true",
                    help="rewrite trial_s= and trials_growth= in the specs")
    ap.add_argument("--room", action="append", default=[], metavar="NAME",
                    help="only this benchmark (repeatable; default: every one in the runs)")
    args = ap.parse_args()
    try:
        runs = [store.load(path) for path in args.run_dirs]
    except UsageError as exc:
        print(f"trial_s.py: error: {exc}", file=sys.stderr)
        return 2
    means: dict[str, list[float]] = {}
    grown: dict[str, list[float]] = {}
    for run in runs:
        cpu = run.host.get("cpu_model", "?")
        left_out = "" if run.status == "complete" else "; not complete, so not counted"
        print(f"{run.run_id} (profile {run.profile}, {run.status}, {cpu}, load "
              f"{run.host.get('loadavg_1m', '?')} at start{left_out})")
        growths = growth(run)
        for name, (n, mean, span) in room_times(run).items():
            if args.room and name not in args.room:
                continue
            line = f"  {name}: {n} ok trials, mean {mean:.3f} s a trial, {span:.1f} s first to last"
            if name in growths:
                line += f", {growths[name]:.2f}× its plan's trials"
            print(line)
            if run.status == "complete":
                means.setdefault(name, []).append(mean)
                if name in growths:
                    grown.setdefault(name, []).append(growths[name])
    if not args.write:
        return 0
    profiles = {run.profile for run in runs}
    if len(profiles) != 1:
        print(f"not written: the runs are of profiles {', '.join(sorted(profiles))}, not one")
        return 0
    profile = profiles.pop()
    for name, values in means.items():
        mean = sum(values) / len(values)
        factor = sum(grown[name]) / len(grown[name]) if grown.get(name) else None
        rooms = registry.room_dirs([name])
        spec = registry.benchmarks_dir() / rooms[0] / "spec.py" if rooms else None
        if spec is None or not spec.exists() or not rewrite(spec, profile, mean, factor):
            print(f"{name}: not written: no trial_s= in its {profile} profile")
            continue
        also = "" if factor is None else f" and trials_growth={factor:.2f}"
        print(f"{name}: wrote trial_s={mean:.2f}{also} to {spec.relative_to(REPO)} "
              f"(the mean of {len(values)} complete run{'s' if len(values) > 1 else ''})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
