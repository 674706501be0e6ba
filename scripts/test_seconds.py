#!/usr/bin/env python3
"""The seconds each test took, from a timeline of the whole suite, for the order of a
fresh clone's `make test` (tests/test-seconds.json; conftest.py's slowest_first).

    BAKEOFF_TEST_TIMELINE=/tmp/tl.jsonl make test
    .venv/bin/python scripts/test_seconds.py /tmp/tl.jsonl > tests/test-seconds.json

A test's seconds are its set-up, call and tear-down, less the worker's waits for the suite
lock in them (a wait says what ran beside it, not what the test costs). Tests under half a
second are left out: the order guesses them. A fresh clone has no pytest cache, which is
where a clone's own last run keeps its units' seconds; without this file it went by guesses.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict


def seconds(lines: list[dict]) -> dict[str, float]:
    per_test: dict[str, float] = defaultdict(float)
    waits = sorted((x for x in lines if x["phase"] == "lock-wait"), key=lambda x: x["start"])
    for x in lines:
        if x["phase"] == "lock-wait":
            continue
        test = x["test"].rpartition("@")[0] if "@" in x["test"].rpartition("]")[2] \
            else x["test"]
        waited = sum(w["stop"] - w["start"] for w in waits if w["worker"] == x["worker"]
                     and x["start"] <= w["start"] and w["stop"] <= x["stop"] + 0.01)
        per_test[test] += max(0.0, x["stop"] - x["start"] - waited)
    return {t: round(s, 1) for t, s in sorted(per_test.items()) if s >= 0.5}


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: test_seconds.py TIMELINE.jsonl", file=sys.stderr)
        return 2
    with open(sys.argv[1]) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    json.dump(seconds(lines), sys.stdout, indent=0, sort_keys=True)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
