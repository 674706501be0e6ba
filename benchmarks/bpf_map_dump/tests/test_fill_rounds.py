"""The loaders' fill rounds (memory.fill_reps): about a million entry-rounds, so the default
profile's 500k-entry maps are filled twice each way, not five times (issue 34: no question
reads the fill, and the five rounds were 9 s of the default run)."""

from __future__ import annotations

import importlib

from bakeoff.declare import registry


def test_fill_rounds_are_about_a_million_entry_rounds() -> None:
    registry.discover()  # the rooms' packages, under which memory.py is imported
    fill_reps = importlib.import_module("bakeoff_benchmarks.bpf_map_dump.memory").fill_reps
    default = registry.discover()["bpf-map-dump"].profiles["default"].params["entries"]
    assert [fill_reps(int(n)) for n in default] == [2]  # 500k
    assert fill_reps(100_000) == 5  # quick: as before (test_fill_is_timed_both_ways)
    assert [fill_reps(n) for n in (1_000_000, 4_000_000, 16_000_000)] == [2, 2, 1]
    # Every size gets at least two rounds (a median of two) until 16M's one.
    assert all(fill_reps(n) >= 2 for n in range(1, 16_000_000, 499_999))
