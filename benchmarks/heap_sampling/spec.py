"""heap-sampling: Poisson vs stateless-hash allocation sampling, cost and accuracy (seed 001).

One trial is `heap_bench` (heap_bench.c): the decision inlined in a malloc path in-process (the
seed's question, hash against Poisson at its 4 KiB mean on 64 B and 4 KiB blocks), the decision
micro-benchmark in-process, or a driver
that runs the seed's allocation patterns (alloc_patterns.c) under libbakeoff_sampler.so
(sampler.c): once paired against NONE inside one process for the added cost, and in
accuracy_runs fresh processes for the estimation errors. `bakeoff sample -- CMD` runs any
program under the sampler and prints what it saw. METHOD.md says what is timed and why.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from bakeoff.room import (
    Benchmark,
    Case,
    Metric,
    Param,
    ParamValue,
    Profile,
    Question,
    RunContext,
    TrialPlan,
    Variant,
    sweep_scratch,
    trial_argv,
)

from .sample_command import KIB, MAX_MEAN, MIN_MEAN, SEED_MEAN, sample_command

GO_JEMALLOC_MEAN = 512 * KIB  # Go's runtime.MemProfileRate; jemalloc's lg_prof_sample 19
TCMALLOC_MEAN = 2 * KIB * KIB  # tcmalloc's default profile sampling interval
MEANS = (SEED_MEAN, GO_JEMALLOC_MEAN, TCMALLOC_MEAN)
WORKLOADS = ("inline-64", "inline-4096", "micro-64", "micro-1024", "micro-4096", "mode1",
             "mode2", "mode3", "mode4")
# The seed's block sizes with the decision inlined (its question), micro-1024 for the live-heap
# question, the seed's patterns for the error question. Not the micro at 64 and 4096 (the
# inline workloads ask what they asked, as an allocator runs it) nor mode3 (eight threads on
# the one pinned CPU; no question reads it): both in full.
DEFAULT_WORKLOADS = ("inline-64", "inline-4096", "micro-1024", "mode1", "mode2", "mode4")
INLINE_WORKLOADS = ("inline-64", "inline-4096")
# The modes' cost run in the default profile: one sample (a round of five runs of the pattern)
# in place of the profile's two. No question reads a mode's cost (tens of ns of noise a trial:
# the cost questions read the inline and micro workloads), only its accuracy processes, which
# the samples leave as they are; a sample was a fifth of a mode1 trial's CPU time and two
# fifths of a `none` trial's (docs/notes/make-bench-time-20261129b-epyc.md). quick and full
# keep every sample.
# A --samples given is taken as given (the profile's samples then differ from DEFAULT_SAMPLES).
DEFAULT_SAMPLES = 2
MODE_SAMPLES = {"default": 1}
# What the seed (001, "Key Takeaways") claims, named beside the answer that tests it.
SEED_CLAIM = "seed: hash 3–62× faster"
PROGRAM = "heap_sampling/heap_bench"


def _sane_scale(value: ParamValue) -> str | None:
    if not 0 < float(value) <= 100:
        return "must be > 0 and <= 100 (a fraction of the seed's allocation counts; 1 = the seed's)"
    return None


_ERROR = ("signed estimation error of the {what} ((estimate - true) / true x 100) of one run of "
          "the pattern, one value per process (accuracy_runs fresh processes per trial: new "
          "ASLR, new PRNG); compared by |value|, with bias and RMS beside")


def _prepare_trial(case: Case, profile: Profile, ctx: RunContext, _state: Any) -> TrialPlan:
    """The protocol's argv, with MODE_SAMPLES for a mode's cost run where the profile has one
    and its samples are as declared."""
    if (str(case.param("workload")).startswith("mode") and profile.name in MODE_SAMPLES
            and profile.samples == DEFAULT_SAMPLES):
        profile = dataclasses.replace(profile, samples=MODE_SAMPLES[profile.name])
    return TrialPlan(trial_argv(ctx.build_dir / PROGRAM, case, profile))


def _sweep() -> list[str]:
    """Temp directories of heap_bench ($TMPDIR/bakeoff-<pid>-heap-*: the sampler's summary)
    and of `bakeoff sample` (bakeoff-<pid>-sample-*) whose process is gone. Both remove
    their own on exit, SIGINT and SIGTERM (heap_bench also SIGHUP); SIGKILL leaves one."""
    return [*sweep_scratch("bakeoff-*-heap-*"), *sweep_scratch("bakeoff-*-sample-*")]


BENCHMARK = Benchmark(
    name="heap-sampling",
    title="Heap sampling: Poisson byte counter vs stateless address hash",
    summary=("What a sampling decision costs, the hash against Poisson, inlined in the malloc "
             "path at the seed's settings; what sampling adds per allocation (malloc + free), "
             "decomposed: the decision "
             "(on the size an allocator knows), the live-heap tracking on free, the "
             "interposer itself and the shipped preload's bookkeeping; what a decision and a "
             "sample cost, and how well 1/p-weighted samples "
             "estimate allocated and live bytes: Poisson (tcmalloc, jemalloc, Go) as an "
             "LD_PRELOAD with a live table and as an allocator would do it (a tag in the "
             "block), and a stateless hash of the address (at the same mean, and at the mean "
             "that gives it Poisson's sample rate)."),
    variants=(
        Variant("no-preload", "the workload alone (micro: the loop with an empty decision)",
                baseline=True, color="#7f7f7f"),
        Variant("none", "sampler preloaded, SAMPLER_SCHEME=NONE, paired with itself: the A/A "
                "check of added_ns_per_alloc (should be 0 within its CI)", color="#bcbd22",
                control=True),
        Variant("poisson", "Poisson process over allocated bytes; sampled pointers kept in a "
                "striped live table that free() consults (what an LD_PRELOAD must do)",
                color="#1f77b4"),
        Variant("poisson-tagged", "the same Poisson decisions, the sample tagged in a 16-byte "
                "block header that free() tests (as tcmalloc flags its sampled allocations); "
                "paired with NONE in the same layout", color="#17becf"),
        Variant("stateless-hash", "sampled if hash(address) < size-scaled threshold; free() "
                "recomputes it, no table", color="#ff7f0e"),
        # Diagnostic: the hash at another mean, kept to show what matching Poisson's sample
        # rate does to its cost and error; a user picks a scheme at the mean they ship.
        Variant("hash-equal-p", "the hash at the mean m_h that gives it as many samples as "
                "Poisson: u/(1-exp(-u/m)) for one size, E[u]/E[1-exp(-u/m)] for the modes' "
                "sizes", color="#d62728", diagnostic=True),
    ),
    params=(
        Param("workload", "str", "inline-64 / inline-4096: malloc and free of blocks of that "
              "many bytes with the decision inlined in the malloc path (as an allocator ships "
              "it); micro-64 / micro-1024 / micro-4096: decision micro-benchmark "
              "(no malloc, blocks of that many bytes, each decision a call); mode1 monotonic "
              "heap, mode2 steady pool, mode3 8-thread churn, mode4 address reuse (seed's "
              "alloc patterns)",
              choices=WORKLOADS),
        Param("mean", "bytes", "mean bytes between samples (SAMPLER_POISSON_MEAN_BYTES); Poisson "
              "samples a block of u bytes with p = 1-exp(-u/m), the hash with p = min(1, u/m): "
              "not the same p (hash-equal-p matches them)", unit="B", min=MIN_MEAN,
              max=MAX_MEAN),
        Param("scale", "float", "allocation counts of the modes as a fraction of the seed's "
              "(1 = the seed's own arguments); the micro-benchmark ignores it",
              check=_sane_scale),
        Param("accuracy_runs", "int", "fresh processes per trial that each run the pattern once "
              "and estimate its bytes (the error metrics: trials x this many estimates per "
              "case); the micro-benchmark ignores it", min=1, max=64),
    ),
    metrics=(
        # The cost decomposition (METHOD.md "What is measured first"): in the modes each value
        # is a difference of two runs of the pattern in one round (same requests, same
        # process, the runs' order rotated), so decide + live_heap + bookkeeping = added.
        # Each is a difference that may be 0 or below (net=True: never on log scale, said
        # "not resolved from 0" where its CI includes 0, no ratio to or from such a case).
        Metric("decide_ns_per_alloc", "ns", "what the scheme adds on the allocation path to "
               "decide, on the size an allocator knows (the class of the request, no "
               "malloc_usable_size): the decision alone minus NONE through the same dispatch, "
               "free() doing nothing, per malloc+free (inline: batches of malloc, the decision "
               "inlined after it, and free, minus the same batches without the decision: per "
               "malloc+free; micro: the malloc-path batch of calls minus NONE's, a sample's "
               "table insert or tag included: per malloc-path decision, no malloc or free)", net=True),
        Metric("live_heap_ns_per_alloc", "ns", "what tracking the live heap adds: the "
               "decision with its tracking (Poisson: table insert, and on every free the "
               "table's filter and probe; tagged: the header flag set and tested; hash: "
               "recomputed on free from the chunk's size word) minus the decision alone "
               "(micro: the free-path batch minus NONE's)", net=True),
        Metric("interposer_ns_per_alloc", "ns", "what every variant pays for the LD_PRELOAD "
               "interposer itself: NONE through it minus glibc called past it (__libc_malloc, "
               "__libc_free), in the same round; tagged: its header layout included", net=True),
        Metric("bookkeeping_ns_per_alloc", "ns", "what the sampler as shipped adds beyond "
               "decide + live_heap: malloc_usable_size on every allocation (the hash: on every "
               "free too), and its counting dispatch; shipped minus decide-and-track", net=True),
        Metric("added_ns_per_alloc", "ns", "what the sampler as shipped adds to one "
               "allocation and its free: ns per allocation under the variant minus NONE "
               "(decide + live_heap + bookkeeping; micro: batches of decisions against batches "
               "of NONE's dispatch), one value per round", net=True),
        Metric("ns_per_alloc", "ns", "time per allocation of the workload, its free included; "
               "inline: one malloc, its decision and its free; micro: the decisions of one "
               "allocation (malloc path + free path)",
               overhead_pct=True),
        Metric("ticks_per_test", "TSC ticks", "micro: the decrement (Poisson) or the hash test, "
               "malloc path + free path (Poisson: the table's filter; tagged: the tag) of one "
               "allocation, with no per-sample work; loop and call included"),
        Metric("ticks_per_sample_work", "TSC ticks", "micro: the work of one sample, malloc + "
               "free side: Poisson a log for the next gap, an expm1 weight and a table insert "
               "and delete (tagged: a tag store and clear); the hash its weight"),
        Metric("ticks_per_decision_malloc", "TSC ticks", "micro: one malloc-path decision as the "
               "sampler makes it (test, and the sample work when it samples); batches, loop "
               "included"),
        Metric("ticks_per_decision_free", "TSC ticks", "micro: one free-path decision: Poisson "
               "consults its live table (tagged: the tag), the hash recomputes"),
        Metric("poisson_total_error_pct", "%", _ERROR.format(what="Poisson estimate of all "
               "bytes allocated"), signed=True),
        Metric("poisson_live_error_pct", "%", _ERROR.format(what="Poisson estimate of the "
               "bytes live at the end") + "; only where the live heap holds >= 64 means",
               signed=True),
        Metric("hash_total_error_pct", "%", _ERROR.format(what="hash estimate of all bytes "
               "allocated"), signed=True),
        Metric("hash_live_error_pct", "%", _ERROR.format(what="hash estimate of the bytes live "
               "at the end") + "; only where the live heap holds >= 64 means", signed=True),
    ),
    profiles={
        "quick": Profile("quick", {"workload": ("inline-64", "inline-4096", "micro-64",
                                                "mode2", "mode4"),
                                   "mean": (SEED_MEAN,), "scale": (0.005,),
                                   "accuracy_runs": (4,)},
                         trials=3, samples=3, warmup_samples=1, warmup_trials=0, timeout_s=60),
        # The seed's 4 KiB mean (its question, and its patterns' errors) and the production
        # means (Go's and jemalloc's 512 KiB, tcmalloc's 2 MiB). 2 samples, each a round of
        # five runs in the modes (the warm-up round a pair; the modes take 1: MODE_SAMPLES);
        # the micro and inline samples are medians of 9 pairs of batches. A fixed count: the
        # primary metric is a difference with no ratio to the baseline, so sequential
        # allocation has no verdict to settle.
        # No warm-up round: every case's first trial is measured in the same shuffled round,
        # so a cold start falls on all variants alike. 4 accuracy processes a trial, 20
        # estimates a case (the fewest that show a p5/p95).
        # The cases no question reads 2 trials (Profile.other_trials, the fewest that give a
        # CI; the modes' were a third of this room's time: docs/notes/
        # make-bench-time-20261129-epyc.md).
        # counted_samples=0: no PMU here, and in a warm heap the kernel counters are ~0 for
        # every variant (METHOD.md "Counters"): no answer's why reads them, and the two
        # counted trials a case took were a third of mode1's time (METHOD.md "Run time";
        # the full profile still counts).
        # trial_s, trials_growth: the mean trial, and the trials kept over the plan's, of the
        # default runs scripts/trial_s.py --write read (docs/RELIABILITY.md, "The time left
        # of a first run"); trial_s_busy: the mean trial of those it read with --busy, made
        # beside two CPU hogs ("The time left beside other work"). Only the estimate of the
        # time left reads them.
        # answer_trials: the inline and micro cases the cost questions read get up to 15
        # trials until their CI is within target (their trials are a fraction of the
        # modes'; a slow spell of the shared core can double a trial's figures, and only
        # more trials average it out); the error question's target (1.0) is met at 5 trials,
        # so the modes get no more.
        "default": Profile("default", {"workload": DEFAULT_WORKLOADS, "mean": MEANS,
                                       "scale": (0.01,), "accuracy_runs": (4,)},
                           trials=5, samples=DEFAULT_SAMPLES, warmup_samples=1,
                           warmup_trials=0, timeout_s=120, other_trials=2, trial_s=0.12,
                           trials_growth=1.70,
                           trial_s_busy=0.20,
                           answer_trials=15,
                           counted_samples=0),
        "full": Profile("full", {"workload": WORKLOADS, "mean": MEANS, "scale": (1.0,),
                                 "accuracy_runs": (8,)},
                        trials=10, samples=5, warmup_samples=1, warmup_trials=1,
                        timeout_s=1800),
    },
    program=PROGRAM,
    # The measured CPU, and one for a mode trial's second untimed accuracy process at once
    # (METHOD.md "Run time"): the cost run and every inline and micro sample stay on the first.
    cpus=2,
    prepare_trial=_prepare_trial,
    # Counted samples (heap_bench.c, alloc_patterns.c, heap_counters.h), per allocation: the
    # pages and system calls through which the heap or a sampler's table would grow. In a warm
    # heap all are ~0 for every variant: a sampler's cost is user-space CPU work, which no
    # counter here measures without a PMU (cycles, instructions where the host has one).
    questions=(
        # The seed's question at the seed's settings: what a decision costs, the hash against
        # Poisson, at its 4 KiB mean on its 64 B and 4 KiB blocks, the decision inlined in the
        # malloc path (METHOD.md "The decision inlined in the malloc path"). The ratio of
        # the two schemes' decide_ns_per_alloc, paired by round; the seed's claim beside it.
        Question("What does a decision cost, the hash against Poisson, at the seed's 4 KiB "
                 "mean on 64 B and 4 KiB blocks, inlined in the malloc path (per "
                 "malloc+free)?", "ratio", against="poisson", variants=("stateless-hash",),
                 metric="decide_ns_per_alloc",
                 at={"mean": (SEED_MEAN,), "workload": INLINE_WORKLOADS}, target_ci=0.10,
                 claim=SEED_CLAIM,
                 # tests/indep_checks.py; the figures are in the note it names.
                 checked="with the code's placement drawn in both programs (METHOD.md "
                 "\"Code placement\"), Poisson agrees with indep_check, written apart, at "
                 "both sizes; the hash reads up to a quarter dearer here than there, less "
                 "than one step of placement (about a cycle per malloc+free), so the "
                 "ratio's direction holds at both sizes and its size within that step "
                 "(docs/notes/heap-sampling-layout-20261129-epyc.md)"),
        Question("What does deciding add per malloc+free, inlined in the malloc path, at the "
                 "means profilers ship with?", "added", against="none",
                 variants=("poisson", "stateless-hash"), metric="decide_ns_per_alloc",
                 at={"mean": (GO_JEMALLOC_MEAN, TCMALLOC_MEAN), "workload": INLINE_WORKLOADS}),
        # Asked of the micro-benchmark (micro-1024: blocks below both means, so the hash
        # hashes), whose free-path batches time the tracking alone, against NONE's, medians
        # of 9 pairs a sample: tracking is about a ns, which the modes' runs of the pattern
        # (tens of ns of noise a trial) cannot resolve (METHOD.md "Questions").
        Question("What does tracking the live heap add on free: Poisson's table, its tag, the "
                 "hash's recompute?", "added", against="none",
                 variants=("poisson", "poisson-tagged", "stateless-hash"),
                 metric="live_heap_ns_per_alloc",
                 at={"mean": (GO_JEMALLOC_MEAN, TCMALLOC_MEAN), "workload": ("micro-1024",)}),
        # The seed's heaps and address reuse (mode4, where the hash's error grows), at the
        # seed's mean and the production ones; not mode3 (eight threads on one pinned CPU).
        # The tagged variant's estimate is Poisson's.
        # target_ci 1.0: an RMS from 20 estimates is known to within tens of % either way
        # (METHOD.md "Questions"), and what the answer turns on is its scale (a few % against
        # tens of %), so the modes' trials (the dearest of the room) are not spent on it.
        Question("How far off is each scheme's estimate of the bytes allocated (RMS error)?",
                 "error", metrics=("poisson_total_error_pct", "hash_total_error_pct"),
                 variants=("poisson", "stateless-hash"),
                 at={"mean": MEANS, "workload": ("mode1", "mode2", "mode4")}, target_ci=1.0),
    ),
    why_counters=("page_faults_minor", "syscalls.sys_enter_brk", "syscalls.sys_enter_mmap",
                  "context_switches"),
    sweep=_sweep,
    commands={"sample": sample_command},
)
