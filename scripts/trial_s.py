#!/usr/bin/env python3
"""Profile.trial_s from a measured run, not typed by hand (issue 28).

    .venv/bin/python scripts/trial_s.py results/<run>            # print, per benchmark
    .venv/bin/python scripts/trial_s.py results/<run> --write    # and rewrite the specs
    .venv/bin/python scripts/trial_s.py results/<run> --write --room mremap-vs-memcpy

For each benchmark of the run: its ok trials (counted ones included, as a run has them), the
mean wall time of one, and the wall time from its first trial's start to its last trial's
end (what the room took in that run, sessions and warm-ups included). With --write, each
room's spec.py gets that mean as `trial_s=` of the profile the run used, the one place the
estimate of the time left reads it; the spec's other text is left as it is. A run that is
not complete, or a room whose spec has no `trial_s=` in that profile, is reported and left.
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


def rewrite(spec: Path, profile: str, value: float) -> bool:
    """Sets trial_s= inside the `"<profile>": Profile(...)` call of spec; False if absent."""
    text = spec.read_text()
    call = re.search(rf'"{re.escape(profile)}":\s*Profile\(', text)
    if call is None:
        return False
    depth, i = 1, call.end()
    while depth and i < len(text):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        i += 1
    body = text[call.end():i]
    new_body, n = re.subn(r"trial_s=[0-9.eE+-]+", f"trial_s={value:.2f}", body)
    if n != 1:
        return False
    spec.write_text(text[:call.end()] + new_body + text[i:])
    return True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--write", action="store_true", help="rewrite trial_s= in the specs")
    ap.add_argument("--room", action="append", default=[], metavar="NAME",
                    help="only this benchmark (repeatable; default: every one in the run)")
    args = ap.parse_args()
    try:
        run = store.load(args.run_dir)
    except UsageError as exc:
        print(f"trial_s.py: error: {exc}", file=sys.stderr)
        return 2
    cpu = run.host.get("cpu_model", "?")
    print(f"{run.run_id} (profile {run.profile}, {run.status}, {cpu}, load "
          f"{run.host.get('loadavg_1m', '?')} at start)")
    for name, (n, mean, span) in room_times(run).items():
        if args.room and name not in args.room:
            continue
        line = f"{name}: {n} ok trials, mean {mean:.3f} s a trial, {span:.1f} s first to last"
        if args.write:
            rooms = registry.room_dirs([name])
            spec = registry.benchmarks_dir() / rooms[0] / "spec.py" if rooms else None
            if run.status != "complete":
                line += "; not written: the run is not complete"
            elif spec is None or not spec.exists() or not rewrite(spec, run.profile, mean):
                line += f"; not written: no trial_s= in its {run.profile} profile"
            else:
                line += f"; wrote trial_s={mean:.2f} to {spec.relative_to(REPO)}"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
