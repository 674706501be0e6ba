"""Two `bakeoff run`s at once on one machine do not collide.

For each benchmark, two real runs of the same small grid start together (same seed, so
they go through their cases in step; different --out) and the test watches them until both
end: which cgroups, LTTng sessions, BPF maps and /tmp/bakeoff-* directories each has, tick
by tick. Then: both exit 0 with every trial ok and the room's own invariants holding (every
event counted, every key read once, ...); while both ran, each kind of thing the room makes
existed for both runs at the same moment, under distinct names (distinct IDs for BPF maps,
which all carry the name bakeoff_dump: 15 characters leave no room for a PID), and each
run's trials used their own; and nothing of either run is left once both have finished.

Not checked here: timing. Both runs pin their measured trials to the same (last) CPU, so
concurrent runs slow each other's trials down; that is a measurement question, not a
collision.
"""

from __future__ import annotations

import contextlib
import subprocess
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from live_runs import (
    MEMCG,
    LiveRun,
    Tick,
    bpf_ids,
    follow,
    leftovers,
    lttng_sessions,
    memcgs,
    owned_names,
    shared_lttng_namespace,
    skip_unless_root_tools,
    tmp_names,
)

from conftest import REPO
from room_cases import ROOMS, cheapest_args, check_tuned

# Not machine-wide: every check counts this test's own runs only (live_runs.py: their
# marker, their PIDs in names, the BPF objects their processes held; the tracing pair in a
# namespace of its own), so other tests' live runs beside it change nothing it asserts.
# It holds the suite lock shared, as any live test does (conftest.py: SUITE_LOCK).
BUILD = REPO / "build"


skip_unless_root_tools("lttng", "lttng-sessiond", "babeltrace2", "bpftrace", "bpftool")


@pytest.fixture(scope="module")
def built() -> Path:
    if not (BUILD / "common" / "bakeoff-launch").exists() or not (
            BUILD / "bpf_map_dump" / "dump-go").exists():
        subprocess.run(["make", "-C", str(REPO / "benchmarks")], check=True, capture_output=True)
    return BUILD


# ---- what each room's results must show --------------------------------------------------

Trials = list[dict[str, Any]]


def _mremap(trials: Trials, _: Observed) -> None:
    for t in trials:
        assert len(t["samples"]["ns_per_op"]) == 3 and min(t["samples"]["ns_per_op"]) > 0, t


def _tracing(trials: Trials, _: Observed) -> None:
    for t in trials:
        c, variant = t["counters"], t["case"]["variant"]
        # Two events a call, the counted batch's calls too (Profile.counted_samples).
        calls = c["calls"] + c.get("counted_calls", 0)
        expected = 2 * calls if variant in ("lttng", "ebpf-force", "bpftrace") else 0
        assert c["events_expected"] == expected, t
        # Each run's tracer saw its own app's calls, all of them, and none of the other's.
        assert c["events_captured"] + c["events_dropped"] == expected, t


def _map_dump(trials: Trials, _: Observed) -> None:
    checksums: dict[tuple[str, int], set[float]] = defaultdict(set)
    for t in trials:
        params = t["case"]["params"]
        assert t["counters"]["entries_verified"] == params["entries"], t
        assert t["meta"]["map_source"] == "session loader", t
        checksums[params["map"], params["entries"]].add(t["counters"]["checksum"])
    # The same map contents, read by every reader of both runs.
    assert all(len(sums) == 1 for sums in checksums.values()), checksums


def _heap(trials: Trials, _: Observed) -> None:
    for t in trials:
        assert min(t["samples"]["ns_per_alloc"]) > 0, t
        if "untracked_allocations" in t["counters"]:
            assert t["counters"]["untracked_allocations"] == 0, t


def _cgroup(trials: Trials, _: Observed) -> None:
    for t in trials:
        c = t["counters"]
        assert c["missed_queries"] == 0 and c["bytes_per_query"] > 0, t
        if t["case"]["params"]["content"].startswith("bpf-iter"):
            assert c["check_mismatches"] == 0, t


@dataclass(frozen=True)
class Pair:
    args: list[str]
    trials: int  # per case
    # Kinds of things the room makes that must exist for both runs at one moment.
    kinds: tuple[str, ...]
    check: Callable[[Trials, Observed], None]


def _measured(trials: Trials, _: Observed) -> None:
    """A room with no tuned pair: each trial printed samples of a declared metric."""
    for t in trials:
        declared = {m.name for m in ROOMS[t["case"]["benchmark"]].metrics}
        assert t["samples"] and set(t["samples"]) <= declared, t
        assert all(len(v) > 0 for v in t["samples"].values()), t


TUNED = {
    "mremap-vs-memcpy": Pair(
        ["--profile", "quick", "--param", "size=4KiB,16MiB", "--trials", "3", "--samples", "3"],
        3, ("tmp",), _mremap),
    "tracing-overhead": Pair(
        ["--profile", "quick", "--variant", "lttng", "--variant", "ebpf-force",
         "--variant", "bpftrace", "--param", "duration_us=50", "--param", "calls=20000",
         "--trials", "2", "--samples", "3"], 2, ("tmp", "session"), _tracing),
    "bpf-map-dump": Pair(
        ["--profile", "quick", "--variant", "batch-4096", "--variant", "go-batch",
         "--trials", "2", "--samples", "3"], 2, ("tmp", "map"), _map_dump),
    # mode2, not mode1: the same sampler runs and temp directories (what could collide), in
    # about half a run's time (mode1's monotonic heap is seconds of page faults; measured in
    # docs/RELIABILITY.md, "Where the suite's CPU went").
    "heap-sampling": Pair(
        ["--profile", "quick", "--param", "workload=micro-64,mode2", "--trials", "2"],
        2, ("tmp",), _heap),
    "cgroup-stat-read": Pair(
        ["--profile", "quick", "--param", "content=legacy-parse,bpf-iter", "--param",
         "fields=3", "--trials", "2", "--samples", "3"], 2, ("tmp", "cgroup"), _cgroup),
}
# Every discovered room: its tuned pair above, or its cheapest quick case; the harness's
# scratch directory ("tmp") is what every run makes. 20 trials: a room whose trial lasts
# milliseconds (bakeoff new's skeleton) measures for too short a time with 2 for the two
# runs to be seen measuring at one moment.
GENERIC_TRIALS = 20
check_tuned("test_concurrent_runs", TUNED)
PAIRS = {name: TUNED.get(name) or Pair(["--profile", "quick", *cheapest_args(bench),
                                        "--trials", str(GENERIC_TRIALS)], GENERIC_TRIALS,
                                       ("tmp",), _measured)
         for name, bench in ROOMS.items()}


class Observed:
    """What each run had, tick by tick: kind -> list of (run A's, run B's) at one moment."""

    def __init__(self, a: LiveRun, b: LiveRun, tracing: bool) -> None:
        self.a, self.b, self.tracing = a, b, tracing
        self.daemons: set[int] = set()  # lttng-sessiond processes the runs started
        self.ticks: dict[str, list[tuple[set[str], set[str]]]] = defaultdict(list)
        # Which cgroup each cgstat of a run read, which map each reader of a run was given.
        self.targets: dict[str, set[str]] = defaultdict(set)
        self.map_ids: dict[str, set[str]] = defaultdict(set)

    def __call__(self, tick: Tick) -> None:
        a, b = self.a, self.b
        tmp, cgroups = tmp_names(), memcgs()
        self.ticks["tmp"].append((owned_names(tmp, a.pids()), owned_names(tmp, b.pids())))
        self.ticks["cgroup"].append((owned_names(cgroups, {a.pid}),
                                     owned_names(cgroups, {b.pid})))
        if self.tracing:
            # The daemon itself, not its run-as child, which carries the same name (the
            # daemon's parent is the run that holds it, or PID 1 once that run has gone).
            named = [p for r in (a, b) for p in tick.procs[r.tag] if p.comm == "lttng-sessiond"]
            self.daemons.update(p.pid for p in named if p.ppid not in {q.pid for q in named})
        # The maps the loaders hold (a reader holds its loader's map, and its own maps).
        loaders = {r.tag: bpf_ids(p.pid for p in tick.procs[r.tag] if p.comm == "dump_loader")
                   for r in (a, b)}
        self.ticks["map"].append(({str(i) for i in loaders[a.tag]["map"]},
                                  {str(i) for i in loaders[b.tag]["map"]}))
        for r in (a, b):
            for p in tick.procs[r.tag]:
                if p.comm == "cgstat":
                    self.targets[r.tag].update(x.removeprefix("target=") for x in p.argv
                                               if x.startswith("target="))
                for e in p.env:
                    if e.startswith("BAKEOFF_DUMP_MAP_ID=") and p.comm in ("dump_reader",
                                                                           "dump-go"):
                        self.map_ids[r.tag].add(e.partition("=")[2])

    def watch_sessions(self, stop: threading.Event) -> None:
        """LTTng sessions live only for an lttng trial's few seconds, and a tick (a /proc scan,
        bpftool) can take a second at load 4: the sessions get a look of their own, every
        20 ms, so that two trials that overlap are seen overlapping."""
        a, b = self.a, self.b
        while not stop.wait(0.02):
            sessions = lttng_sessions(a.ns)
            self.ticks["session"].append((owned_names(sessions, {a.pid}),
                                          owned_names(sessions, {b.pid})))

    def both(self, kind: str) -> int:
        """Ticks at which both runs had something of this kind."""
        return sum(1 for x, y in self.ticks[kind] if x and y)

    def shared(self, kind: str) -> set[str]:
        """Names (or IDs) both runs had, at any time."""
        mine = set().union(*(x for x, _ in self.ticks[kind]))
        theirs = set().union(*(y for _, y in self.ticks[kind]))
        return mine & theirs


@pytest.mark.slow
@pytest.mark.parametrize("bench", list(PAIRS))
def test_two_runs_at_once_do_not_collide(built: Path, tmp_path: Path, bench: str) -> None:
    pair = PAIRS[bench]
    args = [bench, *pair.args, "--seed", "5"]
    tracing = bench == "tracing-overhead"
    with contextlib.ExitStack() as stack:
        # Tracing: both runs in one namespace of their own, so that whatever session daemon
        # this machine runs, they start one, share it, and the last one out stops it.
        ns = stack.enter_context(shared_lttng_namespace()) if tracing else []
        a = LiveRun(tmp_path / "a", args, wrap=ns, ns=ns)
        b = LiveRun(tmp_path / "b", args, wrap=ns, ns=ns)
        seen = Observed(a, b, tracing)
        a.start()
        b.start()
        stop_watch = threading.Event()
        watch = threading.Thread(target=seen.watch_sessions, args=(stop_watch,), daemon=True)
        if tracing:
            watch.start()
        try:
            follow([a, b], seen, timeout=240, with_bpf=True, every=0.05)
        finally:
            stop_watch.set()
            if tracing:
                watch.join(timeout=30)
            for r in (a, b):
                if r.running() and r.proc is not None:
                    r.proc.kill()
                    r.wait()
        if tracing:  # one daemon for both, stopped once neither needed it
            assert len(seen.daemons) == 1, seen.daemons
            assert lttng_sessions(ns) == [] and leftovers(a) == [] and leftovers(b) == []

    for r in (a, b):
        assert r.proc is not None and r.proc.returncode == 0, r.transcript()
        assert "Traceback" not in r.stderr, r.stderr
        data = r.results()
        assert data["status"] == "complete"
        trials = r.trials()
        assert data["cases"] and len(trials) == pair.trials * len(data["cases"]), trials
        bad = [(t["case"], t["error"]) for t in trials if t["status"] != "ok"]
        assert not bad, bad
    pair.check(a.trials() + b.trials(), seen)

    # They ran at once, each with its own things, under names of its own.
    for kind in pair.kinds:
        assert seen.both(kind), f"never saw {kind} of both runs at the same time"
        assert not seen.shared(kind), f"both runs had {kind} {seen.shared(kind)}"
    if bench == "cgroup-stat-read":
        for r in (a, b):
            assert seen.targets[r.tag] == {str(MEMCG / f"bakeoff-{r.pid}-target")}, \
                seen.targets
    if bench == "bpf-map-dump":
        for r, other in ((a, b), (b, a)):
            used = {str(t["meta"]["map_id"]) for t in r.trials()}
            assert seen.map_ids[r.tag] and seen.map_ids[r.tag] <= used, seen.map_ids
            # Every map its readers read was held by its own loaders, none by the other's.
            assert used <= {str(i) for i in r.held["map"]}, (used, r.held["map"])
            assert not used & {str(i) for i in other.held["map"]}, used

    time.sleep(0.2)
    assert leftovers(a) == [] and leftovers(b) == []
