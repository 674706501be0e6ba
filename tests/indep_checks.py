"""Each room's headline beside its independent check (issue 33): what the room's run says and
what a program written apart from the room's code says, as (point, low, high) figures with
95% CIs, and whether they agree by the issue's rule (conftest.agree: within +-15%, or the
two CIs overlap). The rooms' tests assert it one room at a time; scripts/indep-checks runs
all five, idle and beside a CPU hog, and prints the table docs/runs keeps.

One function per room makes its independent figures (`*_indep`), one reads the room's from a
run directory (`*_room`); `ROOM_RUNS` is the small run of each room the script makes.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conftest import REPO, Speedup, agree, build_dir, speedup_over_rounds

Figure = Speedup  # (point, low, high)

# tracing-overhead: the tracers the headline names at 0 µs that indep_trace also traces
# (bpftrace and ebpf-adaptive have no counterpart there), and ebpf-floor, the probes alone.
TRACERS = ("lttng", "ebpf-batched", "ebpf-force", "ebpf-floor")
INDEP_TRACE_ROUNDS = 10
INDEP_TRACE_CALLS = 1000  # per batch
INDEP_TRACE_BATCHES = 9
# The script's comparison alternates: a short room run, then an indep_trace process, five
# times, each side pooled over its five. ebpf-force's cost per call moves with the machine
# within a minute, in both programs (the app's CPU time moving with it), so the two sides are
# compared over the same stretch of time, and the check's interval spans processes started
# at five times, as the room's spans trials (benchmarks/tracing_overhead/METHOD.md,
# "ebpf-force against the check"; docs/notes/tracing-force-check-20261129-epyc.md). Four
# trials a run, five runs, 20 pooled: with two trials, three runs, one dear trial took the
# room's ebpf-force interval across 0.06-10.9 us (docs/runs/indep-checks-20261130f-xeon.txt);
# with 12 pooled, a dear trial still took a side's ebpf-floor or ebpf-batched 15-18% off
# the other's (docs/notes/indep-checks-alternate-20261201-xeon.md).
TRACING_ALTERNATIONS = 5
TRACING_ROOM_ARGS = ("--profile", "quick", "--param", "duration_us=0", "--param",
                     "calls=auto/10", "--variant", "lttng",
                     "--variant", "ebpf-batched", "--variant", "ebpf-force", "--variant",
                     "ebpf-floor", "--trials", "4")
INDEP_TRACE_ROUNDS_EACH = 4


@dataclass(frozen=True)
class Row:
    """One headline figure: the room's and the independent check's, and the verdict."""
    room: str
    what: str
    unit: str  # "×" for a speed-up, else the unit of a difference
    ours: Figure
    indep: Figure
    # What the two figures turn on beside them, in words with both sides' values, e.g. how
    # often ebpf-force's records found the consumer asleep; printed under the row.
    note: str = ""

    @property
    def agrees(self) -> bool:
        return agree(self.ours, self.indep)


def added_over_rounds(base: list[float], other: list[float]) -> Figure:
    """What other adds over base, rounds paired (base[i] and other[i] ran in round i): the
    mean of the per-round differences with its t interval (stats.paired_difference, the
    room's own estimator for its headline)."""
    from bakeoff.stats import estimates

    rounds = list(range(len(base)))
    d = estimates.paired_difference([[x] for x in other], [[x] for x in base],
                                    variant_rounds=rounds, baseline_rounds=rounds)
    assert d is not None, "fewer than 2 rounds"
    return d.estimate, d.ci_low, d.ci_high


def _benchmark(run_dir: Path) -> Any:
    from bakeoff.analysis.within_run import analyze
    from bakeoff.store import results as store

    (bench,) = analyze(store.load(run_dir)).benchmarks
    return bench


def room_ratio_pooled(run_dirs: Sequence[Path], metric: str, variant: str, baseline: str,
                      params: dict[str, Any]) -> Figure:
    """variant / baseline over the trials of several room runs, as each run's report takes
    it (stats.ratio_ci over trial medians paired by round), its rounds numbered apart per
    run (run * 1000 + round) so that pairs stay within their run. params: the case's params
    that pick it (the runs hold one case per variant beyond them)."""
    from bakeoff.stats import estimates

    sides: dict[str, tuple[list[list[float]], list[int]]] = {variant: ([], []),
                                                             baseline: ([], [])}
    for k, run_dir in enumerate(run_dirs):
        results = _benchmark(run_dir).results  # one analysis of the run for both sides
        for name, (medians, rounds) in sides.items():
            (r,) = [r for r in results
                    if r.metric == metric and r.case.variant == name
                    and all(r.case.param(p) == v for p, v in params.items())]
            medians += [[m] for m in r.trial_medians]
            rounds += [k * 1000 + n for n in r.trial_rounds]
    x = estimates.ratio_ci(sides[variant][0], sides[baseline][0],
                           variant_rounds=sides[variant][1], baseline_rounds=sides[baseline][1])
    return x.ratio, x.ci_low, x.ci_high


def pooled_rounds(outs: Sequence[dict[str, list[float]]]) -> dict[str, list[float]]:
    """Per way, the rounds of several check processes, process after process: round i of
    each way ran in the same process, so the lists stay paired by index."""
    return {w: [x for o in outs for x in o[w]] for w in outs[0]}


# ---- tracing-overhead ------------------------------------------------------------------------

def tracing_room(run_dir: Path) -> dict[str, Figure]:
    """What each tracer adds per call at duration_us=0 in the room's run: its headline, the
    per-call difference from the baseline paired by round (ns)."""
    out = {}
    for r in _benchmark(run_dir).results:
        paired = r.comparison.paired if r.comparison is not None else None
        if (r.metric == "per_call_ns" and r.case.variant in TRACERS
                and float(r.case.param("duration_us")) == 0 and paired is not None):
            out[r.case.variant] = (paired.estimate, paired.ci_low, paired.ci_high)
    return out


def tracing_indep_run(rounds: int = INDEP_TRACE_ROUNDS, tmpdir: Path | None = None,
                      wrap: Sequence[str] = (),
                      env: dict[str, str] | None = None) -> dict[str, Any]:
    """indep_trace's JSON: per way, per round, per_call_ns, wall_per_call_ns and (where the
    tracepoint could be counted) wakeups_per_call. tmpdir: where its LTTng trace goes; wrap:
    a prefix it runs under (a namespace of its own); env: more of its environment."""
    env = {**os.environ, **({"TMPDIR": str(tmpdir)} if tmpdir else {}), **(env or {})}
    res = subprocess.run([*wrap, str(build_dir() / "tracing_overhead" / "indep_trace"),
                          str(rounds), str(INDEP_TRACE_CALLS), str(INDEP_TRACE_BATCHES)], env=env,
                         capture_output=True, text=True, timeout=600, check=False)
    assert res.returncode == 0, res.stderr
    return dict(json.loads(res.stdout))


def tracing_added(out: dict[str, Any]) -> dict[str, Figure]:
    """What each tracer adds per call over the untraced call of the same round (ns; its
    per-call time less the batch's run-queue wait), from indep_trace's JSON."""
    ns = out["per_call_ns"]
    return {t: added_over_rounds(ns["baseline"], ns[t]) for t in TRACERS}


def tracing_indep(rounds: int = INDEP_TRACE_ROUNDS, tmpdir: Path | None = None,
                  wrap: Sequence[str] = (),
                  env: dict[str, str] | None = None) -> dict[str, Figure]:
    """indep_trace's figures: what each tracer adds per call (tracing_added)."""
    return tracing_added(tracing_indep_run(rounds, tmpdir, wrap, env))


def room_wakeups_per_call(run_dir: Path, variant: str = "ebpf-force") -> list[float]:
    """sched:sched_waking per call of the variant's counted trials at duration_us=0 (the
    room's counted samples, counted.csv): how often its records found the consumer
    asleep. Empty when the run counted none."""
    path = run_dir / "counted.csv"
    if not path.exists():
        return []
    with path.open() as f:
        return [float(r["value"]) for r in csv.DictReader(f)
                if r["variant"] == variant and r["name"] == "per_op.sched.sched_waking"
                and float(r["duration_us"]) == 0]


def _wakeups_note(room: list[float], indep: list[float]) -> str:
    """ebpf-force's cost turns on how often a record finds the consumer asleep (each such
    wake-up costs the app a price of its own): both sides' rates, per call."""
    def fmt(xs: list[float], what: str) -> str:
        return (f"{what} {min(xs):.2f}–{max(xs):.2f} (n={len(xs)})" if xs
                else f"{what} not counted")
    return ("consumer wake-ups per call (sched:sched_waking): "
            f"{fmt(room, 'room, counted trials')}; {fmt(indep, 'independent, rounds')}")


def _zero_us_trials(run_dir: Path, run: int) -> list[tuple[str, int, list[float]]]:
    """The run's kept trials at duration_us=0: (variant, round, per_call_ns samples), the
    round numbered apart from other runs' (run * 1000 + round) so pooled rounds stay paired
    within their run."""
    data = json.loads((run_dir / "results.json").read_text())
    return [(t["case"]["variant"], run * 1000 + int(t["round"]),
             [float(x) for x in t["samples"].get("per_call_ns", [])])
            for t in data["trials"] if t["status"] == "ok"
            and float(t["case"]["params"].get("duration_us", -1)) == 0]


def tracing_room_pooled(trials: list[tuple[str, int, list[float]]]) -> dict[str, Figure]:
    """What each tracer adds per call at 0 us over the trials of several room runs: the
    room's own estimator (stats.paired_difference, rounds paired within their run)."""
    from bakeoff.stats import estimates

    base = [(r, x) for v, r, x in trials if v == "baseline"]
    out = {}
    for t in TRACERS:
        mine = [(r, x) for v, r, x in trials if v == t]
        d = estimates.paired_difference([x for _, x in mine], [x for _, x in base],
                                        variant_rounds=[r for r, _ in mine],
                                        baseline_rounds=[r for r, _ in base])
        if d is not None:
            out[t] = (d.estimate, d.ci_low, d.ci_high)
    return out


def tracing_rows() -> list[Row]:
    """The room's quick run (--trials 4) and an indep_trace process (4 rounds), alternately,
    TRACING_ALTERNATIONS times; each side's figure pooled over its runs."""
    trials: list[tuple[str, int, list[float]]] = []
    outs: list[dict[str, Any]] = []
    room_woke: list[float] = []
    with tempfile.TemporaryDirectory(prefix="indep-tracing-") as tmp:
        for k in range(TRACING_ALTERNATIONS):
            where = Path(tmp) / f"room-{k}"
            res = subprocess.run([sys.executable, "-m", "bakeoff", "run", "tracing-overhead",
                                  "--out", str(where), "--seed", str(k + 1), "--quiet",
                                  *TRACING_ROOM_ARGS], cwd=REPO, capture_output=True,
                                 text=True, check=False)
            if res.returncode != 0:
                raise RuntimeError(f"the room's run failed (exit {res.returncode}): "
                                   f"{(res.stderr or res.stdout).strip().splitlines()[-1:]}")
            trials += _zero_us_trials(where, k)
            room_woke += room_wakeups_per_call(where)
            try:
                outs.append(tracing_indep_run(INDEP_TRACE_ROUNDS_EACH, Path(tmp)))
            except AssertionError:
                # Once more: indep_trace uses the session daemon that answers, and a run
                # outside the suite's lock (another engineer's bakeoff run) may stop it
                # mid-way ("lttng stop failed", seen 2026-11-29).
                outs.append(tracing_indep_run(INDEP_TRACE_ROUNDS_EACH, Path(tmp)))
    ours = tracing_room_pooled(trials)
    # Rounds pair within their process; the lists run process after process.
    ns = {w: [x for o in outs for x in o["per_call_ns"][w]] for w in ("baseline", *TRACERS)}
    indep = {t: added_over_rounds(ns["baseline"], ns[t]) for t in TRACERS}
    woke = [x for o in outs for x in o.get("wakeups_per_call", {}).get("ebpf-force", [])]
    return [Row("tracing-overhead", f"{t} adds per call at 0 µs", "ns", ours[t], indep[t],
                _wakeups_note(room_woke, woke) if t == "ebpf-force" else "")
            for t in TRACERS if t in ours]


# ---- bpf-map-dump ----------------------------------------------------------------------------

# The default profile's size, where the report's answers read the headline. Not the quick
# profile's 100,000: there a fresh reader's bpf-iter dumps take two or three to settle (the
# first after the warm-up 1.31x the steady ones), which the room's three samples a trial
# carry and the check's long process does not, so the two sides measured different things
# (docs/notes/bpf-map-dump-headline-size-20261201-xeon.md).
DUMP_ENTRIES = 500_000
DUMP_VARIANTS = ("batch-65536", "bpf-iter")


def dump_indep() -> dict[str, list[float]]:
    """One indep_dump process at the headline's size: per way, ns per entry of each round."""
    res = subprocess.run([str(build_dir() / "bpf_map_dump" / "indep_dump"), str(DUMP_ENTRIES),
                          str(CHECK_ROUNDS_EACH)], capture_output=True, text=True, timeout=300,
                         check=False)
    assert res.returncode == 0, res.stderr
    return dict(json.loads(res.stdout)["ns_per_entry"])


def dump_rows(run_dirs: Sequence[Path], outs: Sequence[dict[str, list[float]]]) -> list[Row]:
    """How many times faster than iterate each headline reader dumps a hash map, the room's
    runs against indep_dump's processes (its own iterator and batch reads)."""
    per_entry = pooled_rounds(outs)
    rows = []
    for v in DUMP_VARIANTS:
        x = room_ratio_pooled(run_dirs, "ns_per_entry", v, "iterate", {"map": "hash"})
        rows.append(Row("bpf-map-dump", f"{v} vs iterate, hash map, {DUMP_ENTRIES:,} entries",
                        "×", (1 / x[0], 1 / x[2], 1 / x[1]),
                        speedup_over_rounds(per_entry["iterate"], per_entry[v])))
    return rows


# ---- mremap-vs-memcpy ------------------------------------------------------------------------

MIB = 1024 * 1024


def mremap_indep() -> dict[str, list[float]]:
    """One indep_move process at 16 MiB: each round's copy and move, ns (thread CPU time)."""
    res = subprocess.run([str(build_dir() / "mremap_vs_memcpy" / "indep_move"), "16",
                          str(CHECK_ROUNDS_EACH)], capture_output=True, text=True, timeout=120,
                         check=False)
    assert res.returncode == 0, res.stderr
    ns = json.loads(res.stdout)
    return {"memcpy": ns["memcpy_ns"], "mremap": ns["mremap_ns"]}


def mremap_rows(run_dirs: Sequence[Path], outs: Sequence[dict[str, list[float]]]) -> list[Row]:
    """How many times faster one move is than a hot copy at 16 MiB: the room's runs against
    indep_move's processes (the thread's CPU clock instead of the room's schedstat wait)."""
    x = room_ratio_pooled(run_dirs, "ns_per_op", "mremap", "memcpy", {"size": 16 * MIB})
    ns = pooled_rounds(outs)
    return [Row("mremap-vs-memcpy", "mremap vs memcpy at 16 MiB", "×",
                (1 / x[0], 1 / x[2], 1 / x[1]), speedup_over_rounds(ns["memcpy"], ns["mremap"]))]


# ---- cgroup-stat-read ------------------------------------------------------------------------

def _memory_cgroup_root() -> Path:
    for line in Path("/proc/self/mounts").read_text().splitlines():
        _, point, fstype, options, *_ = line.split()
        if fstype == "cgroup" and "memory" in options.split(","):
            return Path(point)
    raise RuntimeError("no cgroup v1 memory controller mounted")


def indep_cgstat_us(controller_root: Path, rounds: int = 15) -> dict[str, list[float]]:
    """indep_cgstat's µs per query of each way of reading, per round (rounds of 2000
    queries), read from a cgroup of its own under controller_root, made and removed here."""
    cgroup = controller_root / f"bakeoff-indep-{os.getpid()}"
    cgroup.mkdir()
    try:
        res = subprocess.run([str(build_dir() / "cgroup_stat_read" / "indep_cgstat"),
                              str(cgroup), str(rounds), "2000"],
                             capture_output=True, text=True, timeout=300, check=False)
    finally:
        cgroup.rmdir()
    assert res.returncode == 0, res.stderr
    return dict(json.loads(res.stdout)["us_per_query"])


def cgroup_rows(run_dirs: Sequence[Path],
                outs: Sequence[dict[str, list[float]]]) -> list[Row]:
    """How many times slower a query by reopening memory.stat is than one on a held fd (3
    fields, legacy parse): the room's runs against indep_cgstat's processes (each query
    timed alone, the median), each in a cgroup made and removed here."""
    x = room_ratio_pooled(run_dirs, "us_per_query", "reopen", "held",
                          {"content": "legacy-parse", "fields": 3})
    us = pooled_rounds(outs)
    return [Row("cgroup-stat-read", "reopen vs held fd, 3 fields (times slower)", "×", x,
                speedup_over_rounds(us["reopen"], us["held"]))]


# ---- the runs the script makes ---------------------------------------------------------------

@dataclass(frozen=True)
class RoomRun:
    """How the script sets one room beside its check: `alternations` times, a room run (args
    after `bakeoff run NAME --out DIR`) and then a check process (indep), each side's
    figure pooled over its runs by rows(run dirs, check outputs). Run one after the other,
    a room's quick run and a check minutes apart read different minutes of this machine,
    whose speed drifts by a fifth within a minute (docs/notes/indep-checks-alternate-
    20261201-xeon.md); alternating, both sides sample the same ones. A room whose rows make
    their own alternating runs (tracing-overhead, heap-sampling) has no args or indep."""
    name: str
    args: tuple[str, ...] | None
    indep: Callable[[], Any] | None
    rows: Callable[[Sequence[Path], Sequence[Any]], list[Row]]
    alternations: int = 1


# Rounds of each check process, and trials of each room run, when they alternate three times:
# 15 rounds and 12 trials a side, what each side had in one piece before.
ALTERNATIONS = 3
CHECK_ROUNDS_EACH = 5
ROOM_TRIALS_EACH = "4"

ROOM_RUNS = (
    # tracing-overhead's runs alternate with the check's processes (tracing_rows).
    RoomRun("tracing-overhead", None, None, lambda _d, _o: tracing_rows()),
    RoomRun("bpf-map-dump", ("--profile", "quick", "--param", "map=hash", "--param",
                             f"entries={DUMP_ENTRIES}", "--variant", "batch-65536", "--variant",
                             "bpf-iter", "--trials", ROOM_TRIALS_EACH),
            dump_indep, dump_rows, ALTERNATIONS),
    # 12 trials a side, as the default profile's answer at 16 MiB takes up to 12: with the
    # quick profile's 5, the room's interval beside a hog spanned 51.6-123x in one run and the
    # ratio to the check ranged 0.91-1.23 over eight (docs/notes/indep-checks-20261130b-epyc.md).
    RoomRun("mremap-vs-memcpy", ("--profile", "quick", "--param", f"size={16 * MIB}",
                                 "--variant", "mremap", "--trials", ROOM_TRIALS_EACH),
            mremap_indep, mremap_rows, ALTERNATIONS),
    RoomRun("cgroup-stat-read", ("--profile", "quick", "--param", "fields=3", "--variant",
                                 "reopen", "--trials", ROOM_TRIALS_EACH),
            lambda: indep_cgstat_us(_memory_cgroup_root(), CHECK_ROUNDS_EACH), cgroup_rows,
            ALTERNATIONS),
    # heap-sampling's headline is timed by heap_bench processes run alternately with the
    # check's (a bakeoff run would measure the same program minutes apart).
    RoomRun("heap-sampling", None, None, lambda _d, _o: heap_rows()),
)


# ---- heap-sampling ---------------------------------------------------------------------------

# Processes per program and scheme: twice the room test's. Each process draws its own code
# placements, and at 64 B blocks a placement moves the hash's figure by about a cycle
# (docs/notes/heap-sampling-layout-20261129-epyc.md): with 16, the check's hash at 64 B read
# 0.78-1.03 of the room's over eight halves (idle, beside a hog) of four runs; with 32,
# 0.85-0.91 over eight, an offset left where the scatter was (the room's about 0.13 ns
# dearer; docs/notes/indep-checks-20261130b-epyc.md). With 32 and every offset drawn, the
# hash at 4096 B read 0.89-1.18 of the room's over ten halves, each side's interval +-10%
# (docs/notes/indep-checks-alternate-20261201-xeon.md); three times as many narrow both
# by the square root of 3.
HEAP_PROCESSES = 96


def heap_rows() -> list[Row]:
    """The decision inlined in the malloc path at the seed's 4 KiB mean: hash/Poisson and each
    scheme's ns per malloc+free, heap_bench processes (the room's program) against
    indep_check inline-SIZE processes, interleaved (the room's test module does the work:
    benchmarks/heap_sampling/tests/test_heap_decision_agreement.py)."""
    import importlib.util

    path = REPO / "benchmarks/heap_sampling/tests/test_heap_decision_agreement.py"
    spec = importlib.util.spec_from_file_location("heap_decision_agreement", path)
    assert spec is not None and spec.loader is not None
    heap = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(heap)
    rows = []
    for size in (4096, 64):
        got = heap.inline_check(size, processes=HEAP_PROCESSES)
        rows.append(Row("heap-sampling", f"hash/Poisson decision cost, {size} B blocks", "×",
                        tuple(got.room_ratio), tuple(got.indep_ratio)))
        for scheme in ("poisson", "hash"):
            rows.append(Row("heap-sampling", f"{scheme} decision per malloc+free, {size} B "
                            "blocks", "ns", tuple(heap.median_ci(got.room[scheme])),
                            tuple(heap.median_ci(got.indep[scheme]))))
    return rows
