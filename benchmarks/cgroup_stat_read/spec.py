"""cgroup-stat-read: how to read a memory cgroup's statistics, and what each way costs (seed 000).

Variants are access methods (cat, reopen, held = baseline, pread); params are what a query
returns (content, fields) and whose statistics (target). The default target is a child cgroup
this room creates, with a process charging memory to it, and removes at the end of the run.
"""

from __future__ import annotations

import contextlib
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
    trial_argv,
)

from .cases import skip_case
from .child import CHARGE_MIB, ChildCgroup
from .controller import ALL_FIELDS
from .params import CONTENTS, FieldCountParam, check_target
from .sweep import sweep_leftovers

PROGRAM = "cgroup_stat_read/cgstat"
# Queries per trial by profile: file and iterator reads, and cat spawns (a process each, so
# the seed's selftest did a thousand of them where it read files a million times). default:
# halved for a default run of minutes (docs/notes/profile-choices-20261125-vm.md).
READS = {"quick": 10_000, "default": 25_000, "full": 1_000_000}
CAT_READS = {"quick": 200, "default": 250, "full": 10_000}


@contextlib.contextmanager
def session(ctx: RunContext) -> Iterator[ChildCgroup]:
    """The child cgroup is made on the first trial that needs it (prepare_trial), so a run on
    root or a path of the user's creates nothing; whatever was made goes on exit."""
    sweep_leftovers()
    child = ChildCgroup(ctx.build_dir)
    try:
        yield child
    finally:
        child.remove()
        sweep_leftovers()


def prepare_trial(case: Case, profile: Profile, ctx: RunContext,
                  child: ChildCgroup | None) -> TrialPlan:
    target = str(case.param("target"))
    env: dict[str, str] = {}
    if target == "child":
        if child is None:
            raise RuntimeError("target=child outside the benchmark's session")
        held = child.ensure()
        if isinstance(held, str):  # this trial fails with the reason; the run goes on
            return TrialPlan.failed(held)
        cgroup, charger = held
        target = str(cgroup)
        # cgstat fails the trial if the charger dies while it reads (the cgroup would empty).
        env.update(charger.watch_env("BAKEOFF_CGSTAT_CHARGER_PID"))
    table = CAT_READS if case.variant == "cat" else READS
    reads = max(table.get(profile.name, table["default"]), profile.samples)
    params = [*((k, target if k == "target" else v) for k, v in case.params),
              ("reads", reads)]
    return TrialPlan(argv=trial_argv(ctx.build_dir / PROGRAM, case, profile, params), env=env)


# ---- the declaration ----------------------------------------------------------------------

QUICK_CONTENTS = ("legacy", "legacy-parse", "ks", "bpf-iter", "bpf-iter-flush")
FIELD_COUNTS = tuple(sorted({3, 16, 32, 64, ALL_FIELDS}))

BENCHMARK = Benchmark(
    name="cgroup-stat-read",
    title="Reading memory cgroup statistics: cat, reopen, held fd, pread, BPF iterator",
    summary=(
        "The cost of one query of a memory cgroup's statistics (memory.stat + memory.numa_stat "
        "in full, N fields of them, or N counters from a BPF cgroup iterator), by how the "
        "consumer reads them. cat and reopen are per-query latency: what a script or tool "
        "that opens (or spawns) per query waits each time. held and pread are read-path "
        "throughput: what a daemon holding the file open pays per read, the kernel's "
        "flush-and-format work alone. Both are right for their use (seed section 3)."),
    variants=(
        Variant("cat", "per-query latency: fork+exec of cat per query, output read from a "
                "pipe, as a script does (process spawn, path lookup, open/read/close)",
                color="#d62728"),
        Variant("reopen", "per-query latency: open+read+close of each file per query, as a "
                "tool that does not keep files open (path lookup included)", color="#ff7f0e"),
        Variant("held", "read-path throughput: lseek(0)+read on files opened once, the seed's "
                "binary_read_test (for bpf-iter: a fresh iterator fd from the held link)",
                baseline=True, color="#1f77b4"),
        Variant("pread", "read-path throughput: pread at offset 0 on files opened once "
                "(one syscall instead of lseek+read)", color="#2ca02c"),
    ),
    params=(
        Param("content", "str", "what one query returns: legacy (both files in full, as the "
              "seed), legacy-parse (legacy + extracting N named fields), ks (the out-of-tree "
              "memory.stat.ks filter, N fields, flush first), bpf-iter (N counters from a BPF "
              "cgroup iterator), bpf-iter-flush (the same after an rstat flush)",
              choices=CONTENTS),
        FieldCountParam("fields", "int", f"N fields selected by legacy-parse, ks and bpf-iter; "
                        f"all = every counter field of memory.stat ({ALL_FIELDS} here)",
                        unit="fields", min=1),
        Param("target", "str", "whose statistics: child (a cgroup bakeoff creates with "
              f"{CHARGE_MIB} MiB charged to it; default), root (the root memcg), or an "
              "absolute memory cgroup path", check=check_target),
    ),
    metrics=(
        Metric("us_per_query", "µs", "time of one query, as its consumer pays it (see "
               "variants); median of a sample's timed batches (per query), so the slices other "
               "tasks take out of a sample do not inflate it"),
        Metric("queries_per_s", "queries/s", "queries per second one thread can make on a "
               "CPU of its own: 1 / us_per_query", lower_is_better=False),
        Metric("mean_us_per_query", "µs", "a sample's total time / its queries (the seed's "
               "figure): includes the time other tasks held the CPU"),
        Metric("p50_us", "µs", "median per-query time in a trial (per timed batch for the fast "
               "variants): unlike the mean, untouched by the odd preemption of a busy machine"),
        Metric("p99_us", "µs", "99th percentile of per-query time in a trial (per timed batch "
               "for the fast variants: see METHOD.md); flushes show here"),
        Metric("max_us", "µs", "slowest query (or batch) of a trial"),
    ),
    profiles={
        "quick": Profile("quick", {"content": QUICK_CONTENTS, "fields": (3, ALL_FIELDS),
                                   "target": ("child",)},
                         trials=3, samples=5, warmup_samples=1, warmup_trials=0, timeout_s=60),
        # No warm-up round: every case's first trial is measured in the same shuffled round,
        # so a cold start falls on all variants alike; the session's charger has filled the
        # cgroup before any trial. A fixed count: the cases whose CIs are wide are the ones
        # level with the baseline (pread, held), which sequential allocation would only
        # extend. The questions' cases (each read path against held at legacy-parse, the
        # iterator against legacy-parse text) up to 10, until each answer's CI half-width
        # is within 5% (Profile.answer_trials); the cases no question reads (legacy, and
        # cat and reopen on the iterator) 2 (Profile.other_trials: the fewest that give a CI;
        # no answer reads them, docs/notes/make-bench-time-20261129-epyc.md). Fields: the
        # two the questions read.
        # trial_s, trials_growth: the mean trial, and the trials kept over the plan's, of the
        # default runs scripts/trial_s.py --write read (docs/RELIABILITY.md, "The time left
        # of a first run"); trial_s_busy: the mean trial of those it read with --busy, made
        # beside two CPU hogs ("The time left beside other work"). Only the estimate of the
        # time left reads them.
        "default": Profile("default", {"content": CONTENTS, "fields": (3, ALL_FIELDS),
                                       "target": ("child",)},
                           trials=5, samples=10, warmup_samples=1, warmup_trials=0,
                           timeout_s=120, answer_trials=10, other_trials=2, trial_s=0.27,
                           trials_growth=1.76,
                           trial_s_busy=0.33,
                           counting_s=0.06),
        "full": Profile("full", {"content": CONTENTS, "fields": FIELD_COUNTS,
                                 "target": ("child",)},
                        trials=10, samples=20, warmup_samples=2, warmup_trials=1,
                        timeout_s=300),
    },
    program=PROGRAM,
    # Counted samples (cgstat.c, counters.h), per query: reopen's path lookups (one openat
    # per file; held and pread none), the statistics flush each memory.stat or numa_stat read
    # asks for (the BPF iterator none), cat's fork (its child's work is not counted: counters
    # are per task), the held read's seek (pread none), the iterator's bpf() call.
    questions=(
        Question("What does each way of reading cost per query against a held fd, for a "
                 "few fields and for all of them?", "ratio", against="held",
                 variants=("cat", "reopen", "pread"), metric="us_per_query",
                 at={"content": ("legacy-parse",), "fields": (3, LARGEST)}),
        Question("Selecting fields in the kernel: how does the BPF iterator compare with "
                 "parsing memory.stat's text?", "ratio", param="content",
                 against="legacy-parse", variants=("bpf-iter",), within=("held",),
                 metric="us_per_query", at={"fields": (3, LARGEST)}),
    ),
    why_counters=("syscalls.sys_enter_openat", "memcg.memcg_flush_stats",
                  "syscalls.sys_enter_clone", "context_switches", "syscalls.sys_enter_lseek",
                  "syscalls.sys_enter_bpf"),
    requires=("cgroup_memory",),
    skip_case=skip_case,
    session=session,
    sweep=sweep_leftovers,
    prepare_trial=prepare_trial,
)
