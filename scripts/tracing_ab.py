#!/usr/bin/env python3
"""A/B of tracing-overhead runs: before (tracers started per trial) against after (held
across trials), as markdown (issue 34).

    .venv/bin/python scripts/tracing_ab.py --before RUN... --after RUN...

Per run: its wall time, trials, the sum of their wall times, and what traced trials took
beyond the untraced (baseline) trial of the same case, which is what bringing a tracer up
and down costs. Per variant: its median trial wall time over the baseline's in the same
run (measured together, so the machine's load, which moved between runs, mostly cancels).
Per case of per_call_ns: each run's median with its 95% CI and the difference to the
baseline paired by round, and whether every before interval of that difference overlaps
every after one (the medians themselves move with the machine's load from run to run; the
difference to the baseline measured beside it is what the room answers).
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import json
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bakeoff.analysis.within_run import CaseResult, analyze  # noqa: E402
from bakeoff.store import results as store  # noqa: E402

METRIC = "per_call_ns"


def _wall(raw: dict[str, object]) -> float:
    start = dt.datetime.fromisoformat(str(raw["started_at"]))
    end = dt.datetime.fromisoformat(str(raw["finished_at"]))
    return (end - start).total_seconds()


def _trial_walls(raw: dict[str, object]) -> dict[tuple[str, float], list[float]]:
    out: dict[tuple[str, float], list[float]] = collections.defaultdict(list)
    for t in raw["trials"]:  # type: ignore[attr-defined]
        out[(t["case"]["variant"], float(t["case"]["params"]["duration_us"]))].append(
            float(t["wall_s"]))
    return out


def _beyond_untraced(walls: dict[tuple[str, float], list[float]]) -> float:
    base = {d: statistics.median(w) for (v, d), w in walls.items() if v == "baseline"}
    return sum(x - base[d] for (v, d), w in walls.items() if v != "baseline" for x in w)


def _fmt(x: float) -> str:
    return f"{x:,.4g}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", nargs="+", type=Path, required=True)
    ap.add_argument("--after", nargs="+", type=Path, required=True)
    args = ap.parse_args()
    sides = [("before", p) for p in args.before] + [("after", p) for p in args.after]
    raws = {p: json.loads((p / "results.json").read_text()) for _, p in sides}

    print("| run | side | wall (s) | trials (failed) | sum of trial walls (s) | "
          "traced trials beyond the untraced one of their case (s) |")
    print("|---|---|---:|---:|---:|---:|")
    for side, p in sides:
        raw = raws[p]
        walls = _trial_walls(raw)
        failed = sum(t["status"] != "ok" for t in raw["trials"])
        total = sum(sum(w) for w in walls.values())
        print(f"| `{p.name}` | {side} | {_wall(raw):.1f} | {len(raw['trials'])} ({failed}) | "
              f"{total:.1f} | {_beyond_untraced(walls):.1f} |")

    print("\nMedian trial wall time of each variant over the baseline's, in the same run "
          "(all durations):\n")
    variants = sorted({v for p in raws for (v, _) in _trial_walls(raws[p])} - {"baseline"})
    print("| variant | " + " | ".join(f"`{p.name}`" for _, p in sides) + " |")
    print("|---|" + "---:|" * len(sides))
    for v in variants:
        cells = []
        for _, p in sides:
            walls = _trial_walls(raws[p])
            mine = [x for (vv, _), w in walls.items() if vv == v for x in w]
            base = [x for (vv, _), w in walls.items() if vv == "baseline" for x in w]
            cells.append(f"{statistics.median(mine) / statistics.median(base):.2f}× "
                         f"({statistics.median(mine):.2f} s)")
        print(f"| {v} | " + " | ".join(cells) + " |")

    print(f"\n`{METRIC}` per case: median (95% CI; trials), and the difference to the baseline "
          "paired by round (95% CI); the last column says whether every before interval of "
          "the difference overlaps every after one.\n")
    cases: dict[tuple[str, float], dict[Path, CaseResult]] = collections.defaultdict(dict)
    for _, p in sides:
        ba = analyze(store.load(p)).benchmarks[0]
        for r in ba.for_metric(METRIC):
            cases[(r.case.variant, float(r.case.param("duration_us")))][p] = r
    print("| variant | duration_us | " + " | ".join(f"`{p.name}`" for _, p in sides)
          + " | overlap |")
    print("|---|---:|" + "---|" * len(sides) + "---|")
    for (v, d), by in sorted(cases.items()):
        cells = []
        spans: dict[str, list[tuple[float, float]]] = {"before": [], "after": []}
        for side, p in sides:
            got = by.get(p)
            if got is None or got.summary is None:
                cells.append("—")
                continue
            s = got.summary
            cell = f"{_fmt(s.median)} ({_fmt(s.ci_low)}–{_fmt(s.ci_high)}; {s.n_trials})"
            cmp = got.comparison
            if cmp is not None and cmp.paired is not None:
                q = cmp.paired
                cell += f"; d {_fmt(q.estimate)} ({_fmt(q.ci_low)}–{_fmt(q.ci_high)})"
                spans[side].append((q.ci_low, q.ci_high))
            cells.append(cell)
        overlap = all(max(b[0], a[0]) <= min(b[1], a[1]) for b in spans["before"]
                      for a in spans["after"])
        said = ("—" if not spans["before"] or not spans["after"]
                else "yes" if overlap else "NO")
        print(f"| {v} | {d:g} | " + " | ".join(cells) + f" | {said} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
