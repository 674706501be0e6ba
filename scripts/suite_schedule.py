#!/usr/bin/env python3
"""The suite's schedule replayed on measured seconds: an estimate of `make test`'s wall time
without running it (the machine is shared; the whole suite starves everyone).

    .venv/bin/python scripts/suite_schedule.py                 # tests/test-seconds.json
    .venv/bin/python scripts/suite_schedule.py SECONDS.json --workers 3 \\
        --extra 'test_fleet.py: losses=50'

Collects the suite as `make test` does (conftest.py's groups and order, slowest_first), adds
each unit's tests' seconds (a test not in the file: 0.1 s), and hands the units out as
pytest-xdist's loadgroup does: each to the first worker free. The machine-wide group holds
the suite lock alone, so a unit that starts live runs waits for its end; a unit that starts
none does not; a unit of AT_THE_END (alone, last) waits for every other to end. Lock waits
beyond that (other suites on the machine) and the CPUs the workers share are not modelled:
the figure is a floor for the machine the seconds were measured on.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def collect() -> list[tuple[str, int, list[str]]]:
    """The units in the order slowest_first gives them: (unit, tier, test IDs)."""
    import pytest

    sys.path.insert(0, str(REPO))
    units: dict[str, list[str]] = {}
    lock_free: dict[str, bool] = {}
    group: list[str] = []

    class Plugin:
        @pytest.hookimpl(trylast=True)
        def pytest_collection_modifyitems(self, config: pytest.Config,
                                          items: list[pytest.Item]) -> None:
            import conftest
            conftest.slowest_first(config, items)
            group.append(conftest.MACHINE_WIDE_GROUP)
            for i in items:
                u = conftest.item_unit(i)
                units.setdefault(u, []).append(i.nodeid)
                lock_free[u] = lock_free.get(u, True) and \
                    not conftest.starts_live_runs(i) and not conftest.machine_wide_test(i)

    code = pytest.main(["--co", "-q", "-p", "no:cacheprovider", "-n", "0", str(REPO)],
                       plugins=[Plugin()])
    if code not in (0, 5):
        raise SystemExit(f"collection failed: pytest exit {code}")
    import conftest
    return [(u, 0 if u == group[0] else 3 if u in conftest.AT_THE_END else
             1 if lock_free[u] else 2, ids) for u, ids in units.items()]


def schedule(units: list[tuple[str, int, list[str]]], seconds: dict[str, float],
             workers: int, extra: dict[str, float]) -> dict[str, Any]:
    free = [0.0] * workers
    alone_until = 0.0
    spans = []
    for unit, tier, ids in units:
        cost = sum(seconds.get(i, 0.1) for i in ids) + extra.get(unit, 0.0)
        w = min(range(workers), key=lambda i: free[i])
        start = free[w]
        if tier == 0:
            alone_until = start + cost
        elif tier == 2:
            start = max(start, alone_until)
        elif tier == 3:  # last, alone: once the other workers' last units have ended
            start = max(free)
        free[w] = start + cost
        spans.append({"unit": unit, "worker": w, "start": start, "stop": free[w]})
    return {"wall_s": max(free), "work_s": sum(s["stop"] - s["start"] for s in spans),
            "workers_end_s": free, "spans": spans}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("seconds", nargs="?", default=str(REPO / "tests" / "test-seconds.json"))
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--extra", action="append", default=[], metavar="UNIT=SECONDS",
                    help="seconds to add to a unit (a set-up the file's run did not have; "
                         "negative: one it no longer has)")
    ap.add_argument("--workers-path", action="store_true",
                    help="each worker's units in order, with idle gaps: the critical path")
    args = ap.parse_args()
    try:
        seconds = json.loads(Path(args.seconds).read_text())
        extra = {u: float(s) for u, _, s in (e.rpartition("=") for e in args.extra)}
    except (OSError, ValueError) as e:
        print(f"suite_schedule: {e}; give a JSON file of test seconds "
              "(scripts/test_seconds.py) and --extra UNIT=SECONDS", file=sys.stderr)
        return 2
    plan = schedule(collect(), seconds, args.workers, extra)
    if args.workers_path:
        for w in range(args.workers):
            at = 0.0
            for s in sorted((s for s in plan["spans"] if s["worker"] == w),
                            key=lambda s: s["start"]):
                idle = f" (idle {s['start'] - at:.0f} s before)" if s["start"] - at >= 1 else ""
                if s["stop"] - s["start"] >= 1 or idle:
                    print(f"gw{w} {s['start']:6.0f}-{s['stop']:<6.0f} {s['unit'][:64]}{idle}")
                at = s["stop"]
    else:
        for s in sorted(plan["spans"], key=lambda s: -(s["stop"] - s["start"]))[:12]:
            print(f"gw{s['worker']} {s['start']:6.0f}-{s['stop']:<6.0f} {s['unit'][:64]}")
    print("workers end at " + ", ".join(f"{t:.0f} s" for t in plan["workers_end_s"]))
    print(f"wall {plan['wall_s']:.0f} s for {plan['work_s']:.0f} s of the tests' own time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
