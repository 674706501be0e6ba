"""bpf-map-dump: read a whole BPF map per element, in batches, with an iterator program, or
through mmap; in C (libbpf) and in Go (cilium/ebpf), as seed 003 did in Go only.

How a trial meets its map: the run's session starts one loader (dump_loader) per (map type,
entries) the first time a trial needs it, and keeps it for the whole run; each trial is one
reader process that opens the map by ID (BAKEOFF_DUMP_MAP_ID). Filling a 4M-entry hash map
takes seconds, so a loader per trial would spend most of the run filling. Every loader is
stopped when the session ends (success, error, Ctrl-C, SIGTERM) and dies with the harness
if the harness is killed (PR_SET_PDEATHSIG); the map dies with its loader. METHOD.md explains.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator

from bakeoff.room import (
    LARGEST,
    Benchmark,
    Case,
    Metric,
    Param,
    Profile,
    Question,
    RunContext,
    TrialPlan,
    Variant,
    format_bytes,
    trial_argv,
)

from .loaders import Loaders
from .memory import bytes_needed, map_bytes

ROOM = "bpf_map_dump"
C_READER = f"{ROOM}/dump_reader"
GO_READER = f"{ROOM}/dump-go"

# The environment the readers read (dump.h, go/mapsource.go).
ENV_MAP_ID = "BAKEOFF_DUMP_MAP_ID"
ENV_FILL = "BAKEOFF_DUMP_FILL"
ENV_LOADER_PID = "BAKEOFF_DUMP_LOADER_PID"

MAX_ENTRIES = 1 << 28  # dump.h DUMP_MAX_ENTRIES: the kernel's hash bucket limit
SEED_ENTRIES = 1024 * 1024 * 100  # the seed's "100M": max_entries 1024 * 1024 * 100

GO_VARIANTS = ("go-iterate", "go-batch")


# ---- which cases run here ---------------------------------------------------------------------


def _skip_case(case: Case, ctx: RunContext) -> str | None:
    kind, entries = str(case.param("map")), int(case.param("entries"))
    if case.variant == "mmap" and kind != "array":
        return ("not applicable: only array maps can be created BPF_F_MMAPABLE and mmapped "
                "(a hash map's elements are not one flat area)")
    if case.variant in GO_VARIANTS and not (ctx.build_dir / GO_READER).exists():
        return ("dump-go is not built: make found no Go toolchain (go on PATH or "
                "/usr/local/go/bin/go); install Go >= 1.25 and run make")
    need = bytes_needed(kind, entries)
    available = ctx.host.mem_available_kib * 1024
    if available and need > available:
        return (f"needs about {format_bytes(need)} of free memory (map ~"
                f"{format_bytes(map_bytes(kind, entries))}, fill input and reader buffers "
                f"~{format_bytes(need - map_bytes(kind, entries))}) and "
                f"{format_bytes(available)} is available")
    return None


# ---- the session: one held map per (map type, entries) (loaders.py) ------------------------


@contextlib.contextmanager
def _session(ctx: RunContext) -> Iterator[Loaders]:
    loaders = Loaders(ctx)
    try:
        yield loaders
    finally:
        loaders.stop_all()


def _prepare_trial(case: Case, profile: Profile, ctx: RunContext,
                   loaders: Loaders | None) -> TrialPlan:
    kind, entries = str(case.param("map")), int(case.param("entries"))
    program = GO_READER if case.variant in GO_VARIANTS else C_READER
    argv = trial_argv(ctx.build_dir / program, case, profile)
    # The reader's parent is bakeoff-launch (which dies with the harness), not this process:
    # its PDEATHSIG follows the launcher, so no parent pid to check here.
    if loaders is None:  # no session: the reader starts (and stops) its own loader
        return TrialPlan(argv=argv)
    loader = loaders.get(kind, entries)
    if isinstance(loader, str):
        return TrialPlan.failed(loader)
    fill = ",".join(f"{k}={v!r}" for k, v in loader.fill.items() if math.isfinite(v))
    # The reader watches its loader: one that dies mid-trial fails the trial, and get()
    # above starts a new one for the next.
    return TrialPlan(argv=argv, env={ENV_MAP_ID: str(loader.map_id), ENV_FILL: fill,
                                     **loader.helper.watch_env(ENV_LOADER_PID)})


# ---- the benchmark ------------------------------------------------------------------------------

QUICK_ENTRIES = (100_000,)
DEFAULT_ENTRIES = (1_000_000, 4_000_000)
FULL_ENTRIES = (1_000_000, 4_000_000, 16_000_000, SEED_ENTRIES)

BENCHMARK = Benchmark(
    name="bpf-map-dump",
    title="Dumping a whole BPF map: per element, in batches, by iterator, by mmap; C and Go",
    summary=("Time to read every entry of a u32 -> u32 BPF map held by another process, "
             "opened by ID: get_next_key + lookup_elem per entry (the baseline), "
             "BPF_MAP_LOOKUP_BATCH at three batch sizes, a map_elem iterator program, mmap "
             "of an array, and cilium/ebpf's Iterate and BatchLookup as the seed ran them. "
             "Every dump is checked: each key exactly once, with its value."),
    variants=(
        Variant("iterate", "libbpf: BPF_MAP_GET_NEXT_KEY + BPF_MAP_LOOKUP_ELEM per entry "
                "(2 bpf() calls per entry)", baseline=True, color="#7f7f7f"),
        Variant("batch-256", "libbpf: BPF_MAP_LOOKUP_BATCH, 256 entries per call",
                color="#9ecae1"),
        Variant("batch-4096", "libbpf: BPF_MAP_LOOKUP_BATCH, 4096 entries per call (the "
                "seed's chunk)", color="#4292c6"),
        Variant("batch-65536", "libbpf: BPF_MAP_LOOKUP_BATCH, 65536 entries per call",
                color="#08519c"),
        Variant("bpf-iter", "a map_elem iterator program writing 8 B per entry to a "
                "seq_file; read() from the iterator fd", color="#2ca02c"),
        Variant("mmap", "memcpy of the values of a BPF_F_MMAPABLE array, mapped once: the "
                "memory-bandwidth limit (array maps only)", color="#9467bd"),
        Variant("go-iterate", "cilium/ebpf Map.Iterate, MapIterator.Next(&k, &v) (the "
                "seed's normal/main.go)", color="#ff7f0e"),
        Variant("go-batch", "cilium/ebpf Map.BatchLookup, 4096 per call, cursor advanced "
                "(the seed's batch/main.go, fixed)", color="#d62728"),
    ),
    params=(
        Param("map", "str", "BPF map type: hash (preallocated, as the seed) or array "
              "(BPF_F_MMAPABLE)", choices=("hash", "array")),
        Param("entries", "int", "entries in the map: keys 0..N-1, u32 values; at most 2^28, "
              "the kernel's hash bucket limit", unit="entries", min=1, max=MAX_ENTRIES),
    ),
    metrics=(
        Metric("ns_per_entry", "ns", "time of one full dump divided by the number of entries"),
        Metric("s_per_dump", "s", "time of one full dump of the map"),
        Metric("entries_per_s", "entries/s", "entries read per second",
               lower_is_better=False),
        Metric("first_ns_per_entry", "ns", "the process's first dump (the warm-up dump the "
               "other metrics discard) divided by the number of entries: what a one-shot "
               "reader such as `bpftool map dump` pays; one per trial"),
        Metric("syscalls_per_dump", "calls", "system calls one dump makes (bpf(), and read() "
               "and close() for bpf-iter), counted by the reader"),
    ),
    # The first dump in a process is slower than the next ones (METHOD.md: what a one-shot
    # dump pays is recorded apart, first_ns_per_entry), so every profile discards one.
    # Trials are processes, the unit of independence.
    # Charted per case (median over trials). The fill figures come from the loader of each
    # (map type, entries), so every variant's line shows the same values: read them along
    # entries, not across variants.
    counters=(
        Metric("fill_elem_ns_per_entry", "ns", "loader: filling the map with one "
               "BPF_MAP_UPDATE_ELEM per entry, per entry (median of its rounds)"),
        Metric("fill_batch_ns_per_entry", "ns", "loader: filling the map with "
               "BPF_MAP_UPDATE_BATCH, 4096 per call, per entry (median of its rounds)"),
        Metric("check_ns_per_entry", "ns", "the reader's check of a dump (each key once, "
               "with its value), per entry, mean over the process's dumps: outside every "
               "timer, shown so a figure timed with its check can be compared"),
        Metric("reader_peak_rss_kib", "KiB", "the reader's own peak RSS (VmHWM): output "
               "buffers of 8 B per entry, plus libbpf's BTF for bpf-iter, plus the mapped "
               "array for mmap"),
        Metric("go_alloc_bytes_per_entry", "B", "Go readers: TotalAlloc growth during the "
               "measured dumps, per entry (the seed's run: 52 B)"),
    ),
    profiles={
        "quick": Profile("quick", {"map": ("hash", "array"), "entries": QUICK_ENTRIES},
                         trials=5, samples=3, warmup_samples=1, warmup_trials=0,
                         timeout_s=60),
        # 500k entries only: every variant had the same verdict at 4M and at 500k as at 1M
        # (docs/notes/profile-choices-20261125-vm.md), while the larger maps cost their
        # size in time (go-iterate, iterate: seconds per
        # dump), and counted dumps (Profile.counted_trials) add to it. 1M and up are in
        # full. Not smaller: at 100k the one-shot question's ratios differ from 500k's (a
        # first dump's fixed costs over fewer entries; docs/notes/
        # make-bench-time-20261129-epyc.md). 5 trials: the fewest with which a verdict can
        # be reached (analysis warns below); a fixed count, as the slow cases (go-iterate
        # and its baseline) are the ones whose CI stays wide, so sequential allocation
        # would only add to them. The hash
        # map's cases, which the questions read, up to 10 until each reader's ratio to
        # iterate is within ±5% (Profile.answer_trials); the array map's, which no question
        # reads, 2 (Profile.other_trials, the fewest that give a CI): they were a third of this
        # room's time (docs/notes/make-bench-time-20261127-epyc.md and -20261129-epyc.md).
        # trial_s, trials_growth: the mean trial, and the trials kept over the plan's, of the
        # default runs scripts/trial_s.py --write read (docs/RELIABILITY.md, "The time left
        # of a first run"); trial_s_busy: the mean trial of those it read with --busy, made
        # beside two CPU hogs ("The time left beside other work"). Only the estimate of the
        # time left reads them.
        "default": Profile("default", {"map": ("hash", "array"), "entries": (500_000,)},
                           trials=5, samples=1, warmup_samples=1, warmup_trials=0,
                           timeout_s=300, answer_trials=10, other_trials=2, trial_s=0.59,
                           trials_growth=1.69,
                           trial_s_busy=0.70,
                           counting_s=0.01),
        # Hours: one 100M-entry iterate dump takes ~100 s, go-iterate ~120 s.
        "full": Profile("full", {"map": ("hash", "array"), "entries": FULL_ENTRIES},
                        trials=5, samples=2, warmup_samples=1, warmup_trials=0,
                        timeout_s=1800),
    },
    # Counted per entry in each trial's counted dumps (both readers; METHOD.md, "Counters"):
    # bpf() calls are what iterate (2 per entry), batch-N (~1/N) and mmap (none) differ in;
    # read() calls are what bpf-iter makes instead (one per seq_file buffer of 4096 entries).
    questions=(
        Question("Per element or in batches: how much faster is a batched dump of a hash map "
                 "than a lookup per entry?", "ratio", against="iterate",
                 variants=("batch-256", "batch-4096", "batch-65536"), metric="ns_per_entry",
                 at={"map": ("hash",), "entries": (LARGEST,)}),
        Question("Which reader dumps a hash map fastest?", "ratio", against="iterate",
                 variants=("batch-256", "batch-4096", "batch-65536", "bpf-iter", "go-iterate",
                           "go-batch"), metric="ns_per_entry",
                 at={"map": ("hash",), "entries": (LARGEST,)}),
        Question("A one-shot dump (the first in a process, as `bpftool map dump` makes): "
                 "which reader is fastest?", "ratio", against="iterate",
                 variants=("batch-256", "batch-4096", "batch-65536", "bpf-iter", "go-iterate",
                           "go-batch"), metric="first_ns_per_entry",
                 at={"map": ("hash",), "entries": (LARGEST,)}),
    ),
    why_counters=("syscalls.sys_enter_bpf", "syscalls.sys_enter_read"),
    program=C_READER,
    other_programs=(GO_READER,),
    requires=("root", "bpf"),
    skip_case=_skip_case,
    session=_session,
    # No sweep: nothing of this room outlives a killed harness. Checked with kill -9 of
    # bakeoff run during a loader's fill and during C and Go dumps (bpftool prog/map/link,
    # ps): loaders die with the harness and readers with their launcher (PR_SET_PDEATHSIG),
    # and no map or iterator program is ever pinned, so each goes with its last fd. The
    # loaders' stderr files are in the run's scratch directory, which bakeoff.run.cleanup sweeps.
    prepare_trial=_prepare_trial,
)
