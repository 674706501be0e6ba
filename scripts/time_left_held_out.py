#!/usr/bin/env python3
"""How the time left of a first run does on runs its profiles were not tuned on (issue 34).

    .venv/bin/python scripts/time_left_held_out.py --idle results/<run> ... --busy results/<run> ...

The profiles' trial_s, trials_growth and counting_s are tuned on idle runs and trial_s_busy
on runs beside two CPU hogs (scripts/trial_s.py --write, --busy --write); a run they were
tuned on says little of the next. So each run is left out in turn: the figures are tuned on
the other runs of each kind (the means scripts/trial_s.py would write), and the run's own log
is replayed as a first run with them (no earlier run; Estimate as bakeoff/run/progress.py
has it now). Printed per run: the time left said at 25%, 50% and 75% of its measuring time
against what remained, and the largest error of all. Nothing is measured again.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "scripts")]

import trial_s  # noqa: E402

from bakeoff.core.errors import UsageError  # noqa: E402
from bakeoff.declare.model import RunRecord  # noqa: E402
from bakeoff.run import progress  # noqa: E402
from bakeoff.run.timings import CHECKPOINTS  # noqa: E402
from bakeoff.store import results as store  # noqa: E402

Tuning = trial_s.Tuning


def tuned_from(runs: Sequence[Any]) -> Tuning:
    """scripts/trial_s.py's tuning of these runs' figures (trial_s.RunFigures), rounded as
    it writes them."""
    got = trial_s.tuning(runs)
    return Tuning(*({k: round(v, 2) for k, v in figures.items()} for figures in got))


def tuned(runs: Sequence[RunRecord]) -> Tuning:
    """What scripts/trial_s.py --write would declare from these runs."""
    return tuned_from([trial_s.run_figures(run) for run in runs])


def first_run_errors(timings: Mapping[str, Any], idle: Tuning, busy: Tuning) -> list[float]:
    """A run's log replayed as a first run with these figures: at each of CHECKPOINTS, the
    time left said over what remained, less 1."""
    log = progress.as_first_run(timings["estimate_log"]["log"], idle.trial_s, idle.growth,
                                busy.trial_s, idle.counting)
    said = progress.replay(log, timings["estimate_log"]["cases"])
    errors = []
    for share in CHECKPOINTS:
        at, seconds = [s for s in said if s[0] <= share * timings["measure_s"]][-1]
        assert seconds is not None
        errors.append(seconds / (timings["measure_s"] - at) - 1)
    return errors


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--idle", type=Path, nargs="+", required=True, metavar="RUN_DIR")
    ap.add_argument("--busy", type=Path, nargs="+", required=True, metavar="RUN_DIR")
    args = ap.parse_args()
    try:
        idle = {path: store.load(path) for path in args.idle}
        busy = {path: store.load(path) for path in args.busy}
    except UsageError as exc:
        print(f"time_left_held_out.py: error: {exc}", file=sys.stderr)
        return 2
    if len(idle) < 2 or len(busy) < 2:
        print("time_left_held_out.py: error: give at least two runs of each kind (one is left "
              "out at a time)", file=sys.stderr)
        return 2
    # Each run's figures once (its counting replays its whole log), then tuned per left out.
    figures = {path: trial_s.run_figures(run) for path, run in (idle | busy).items()}
    worst = 0.0
    for kind, runs in (("idle", idle), ("busy", busy)):
        for path, run in runs.items():
            others_idle = tuned_from([figures[p] for p in idle if p != path])
            others_busy = tuned_from([figures[p] for p in busy if p != path])
            errors = first_run_errors(run.timings, others_idle, others_busy)
            worst = max(worst, *(abs(e) for e in errors))
            print(f"{kind} {run.run_id[:15]}: " + ", ".join(
                f"{share:.0%} {e:+.0%}" for share, e in zip(CHECKPOINTS, errors)))
    print(f"largest error {worst:.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
