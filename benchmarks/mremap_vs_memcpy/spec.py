"""mremap-vs-memcpy: move page tables or copy the bytes? (seed 004, PTE-move vs memcpy)."""

from __future__ import annotations

import os

from bakeoff.room import (
    Benchmark,
    Case,
    LegacyCsv,
    Metric,
    Param,
    ParamValue,
    Profile,
    Question,
    RunContext,
    Variant,
    format_bytes,
)

KIB, MIB = 1024, 1024 * 1024
PAGE = os.sysconf("SC_PAGE_SIZE")
HUGE = 2 * MIB
ALL_SIZES = tuple(4 * KIB * 2**i for i in range(16))  # 4 KiB ... 128 MiB


def _page_aligned(value: ParamValue) -> str | None:
    size = int(value)
    if size <= 0 or size % PAGE:
        return f"must be a positive multiple of the page size {PAGE} (e.g. 4KiB, 64KiB, 2MiB)"
    return None


def _thp_applies(case: Case, _ctx: RunContext) -> str | None:
    size = int(case.param("size"))
    if case.variant == "mremap-thp" and size % HUGE:
        return "not applicable: a huge-page move needs a size that is a multiple of 2 MiB"
    return None


def _fits_in_memory(case: Case, ctx: RunContext) -> str | None:
    # memcpy holds source and destination; mremap holds the source and a reserved hole twice
    # its size (address space only). 3x covers both with room for the batch and the harness.
    size = int(case.param("size"))
    need_kib = 3 * size // 1024
    available = ctx.host.mem_available_kib
    if available and need_kib > available:
        return (f"--param size={format_bytes(size)} needs about {format_bytes(need_kib * 1024)} "
                f"of free memory and {format_bytes(available * 1024)} is available; "
                "choose a smaller size")
    return None


# Moves per timed one under `bakeoff profile`: enough that the moves of a 16 MiB region
# outweigh faulting in its source and checking it.
PROFILE_REPEAT = 10_000

BENCHMARK = Benchmark(
    name="mremap-vs-memcpy",
    title="Page-table move (mremap) vs memory copy (memcpy)",
    summary=("Latency of relocating a buffer of a given size by copying its bytes or by "
             "moving its page-table entries to a new address, as realloc of a large block may."),
    variants=(
        Variant("memcpy", "memcpy into a destination already faulted in (hot copy)", baseline=True),
        Variant("memcpy-cold", "memcpy into fresh memory: the page faults are part of the cost"),
        Variant("mremap", "one mremap(MREMAP_MAYMOVE|MREMAP_FIXED) per sample into a hole "
                "punched before the source was written (2 MiB-aligned from 1 MiB up), growing to "
                "twice the size"),
        Variant("mremap-after-munmap", "as mremap, but the hole is punched (munmap) right before "
                "the timer: the order bakeoff used before, which makes the move cheaper",
                diagnostic=True),
        Variant("mremap-thp", "mremap of a 2 MiB-aligned MADV_HUGEPAGE region, verified huge "
                "in /proc/self/smaps after the move", requires=("thp",)),
        Variant("mremap-dontunmap", "mremap with MREMAP_DONTUNMAP (same size; old range stays "
                "mapped, empty)"),
    ),
    params=(
        Param("size", "bytes", "bytes in the source mapping (page-aligned)", unit="B",
              check=_page_aligned),
    ),
    metrics=(
        Metric("ns_per_op", "ns", "time of one copy or move of the whole buffer: one move per "
               "timed sample (a batch only below the timer floor); the hot memcpy is a batch of "
               "copies on the same buffers; counter ops_per_sample says how many each sample "
               "timed. Time on the CPU: a sample the scheduler switched out is retaken, or has "
               "its wait on the runqueue subtracted (counters offcpu_*)"),
    ),
    profiles={
        "quick": Profile("quick", {"size": (4 * KIB, 256 * KIB, 16 * MIB)}, trials=5, samples=5,
                         warmup_samples=1, warmup_trials=0, timeout_s=60),
        # 9 of the 16 sizes: both ends and 16 MiB (the questions read them), every size from
        # 64 KiB to 2 MiB (where mremap starts winning). In the run that chose the sizes, each
        # size left out had the verdicts of its neighbours and no ratio crossed a level there
        # (docs/notes/profile-choices-20261125-vm.md). Sequential allocation: 5 trials a
        # case, up to 8 while a ratio's CI is near
        # 1 ± the threshold (bakeoff/run/allocation.py); the cases the questions read (one move
        # against the hot copy at 16 and 128 MiB, and the sizes on either side of where the
        # move starts winning) up to 12, until the answer's CI half-width is within 5%
        # (Profile.answer_trials); no more, as a 128 MiB trial takes seconds and, where the
        # machine's noise keeps a single move's ratio wider than 5%, the share bounds what
        # trying costs. The variants no question reads (the cold copy, the other orderings
        # of the move) 2 trials a case (Profile.other_trials: the fewest that give a CI; no
        # answer reads them, docs/notes/make-bench-time-20261129-epyc.md). No warm-up round (it was a
        # quarter of this benchmark's time): each trial is a fresh process that warms up in
        # its own first sample (warmup_samples), and the first round's order is shuffled
        # like every other.
        # trial_s, trials_growth: the mean trial, and the trials kept over the plan's, of the
        # default runs scripts/trial_s.py --write read (docs/RELIABILITY.md, "The time left
        # of a first run"); trial_s_busy: the mean trial of those it read with --busy, made
        # beside two CPU hogs ("The time left beside other work"). Only the estimate of the
        # time left reads them.
        "default": Profile("default", {"size": tuple(4 * KIB * 2**i for i in
                                                     (0, 4, 5, 6, 7, 8, 9, 12, 15))},
                           trials=8, samples=8, warmup_samples=1, warmup_trials=0,
                           timeout_s=120, min_trials=5, answer_trials=12, other_trials=2,
                           trial_s=0.15, trials_growth=1.21,
                           trial_s_busy=0.18,
                           counting_s=0.00),
        "full": Profile("full", {"size": ALL_SIZES}, trials=20, samples=20,
                        warmup_samples=2, warmup_trials=1, timeout_s=300),
    },
    program="mremap_vs_memcpy/mremap_bench",
    legacy_csv=LegacyCsv("result.csv", {"size": "param:size", "method": "variant",
                                        "ns": "metric:ns_per_op"}),
    # Counted samples (mremap_bench.c, counters.h): a cold copy faults in and allocates one
    # page per 4 KiB of destination, a move none; a move flushes the TLB once per 2 MiB
    # extent (at least once) and writes the VMA tree once, a copy never; no remote shootdown.
    questions=(
        Question("One move or a hot copy: how much faster is one mremap than memcpy of the "
                 "same buffer?", "ratio", against="memcpy", variants=("mremap",),
                 at={"size": (16 * MIB, 128 * MIB)}),
        Question("From what size does one move beat a hot copy?", "crossover",
                 against="memcpy", variants=("mremap",), along="size"),
    ),
    # bakeoff profile: a sample is inside the timed operation when its stack holds the copy
    # (glibc's memcpy is __memmove_<isa>_...; a cold copy's page faults happen under it) or
    # the mremap system call. A 16 MiB move takes microseconds against milliseconds of
    # faulting in its source: without repeats the move is a fraction of a percent of a
    # trial's samples, so the program repeats each move (to a spare range and back)
    # PROFILE_REPEAT times under a profile (mremap_bench.c, --profile-repeat). The hot copy
    # needs none: it repeats on the same buffers, and a profile's longer trials fill it.
    timed_frames={**{v: ("__memmove_*", "__memcpy_*", "memcpy", "memmove")
                     for v in ("memcpy", "memcpy-cold")},
                  **{v: ("*sys_mremap",) for v in ("mremap", "mremap-after-munmap",
                                                   "mremap-thp", "mremap-dontunmap")}},
    profile_repeat=PROFILE_REPEAT,
    why_counters=("page_faults_minor", "tlb.tlb_flush", "kmem.mm_page_alloc",
                  "maple_tree.ma_write"),
    skip_case=_thp_applies,
    check_case=_fits_in_memory,
    # No session and no sweep: a trial makes nothing outside its own process (its mappings
    # go with it); a killed run leaves only the harness's scratch directory, which
    # bakeoff.run.cleanup sweeps.
)
