"""tracing-overhead: what tracing a function costs it (seed 002, eBPF vs LTTng overhead suite).

No tracing against LTTng-UST tracepoints, bakeoff's own libbpf uprobe tracer under three
ring-buffer wake-up policies, the same uprobes with empty programs (the floor), and bpftrace,
on a library function that busy-waits 0 µs to 1 ms. Each trial is one run of
build/tracing_overhead/tracing_trial (trial.py, a driver: its part of the tracer begun, app,
its part ended, events counted, trace deleted); the eBPF tracers and the LTTng session are
the run's, held across trials (run_hold.py); METHOD.md says what is timed and why. The
tracers are in tracers.py, the LTTng daemons and session in lttng.py, the params in
calls.py, what a dead run left in sweep.py.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator

from bakeoff.room import (
    Benchmark,
    Case,
    Metric,
    Param,
    Profile,
    Question,
    RunContext,
    TrialPlan,
    Variant,
    partner_cpus,
    trial_argv,
)

from . import lttng
from .calls import (
    MAX_DURATION_US,
    SEED_CALLS,
    calls_for,
    check_calls,
    not_for_ever,
    scenarios_command,
)
from .machine import ROOM, skip_case
from .run_hold import RunHold, run_session_name
from .sweep import sweep
from .tracers import Build

PROGRAM = "tracing_overhead/tracing_trial"


@contextlib.contextmanager
def _session(ctx: RunContext) -> Iterator[RunHold]:
    """The run's tracers, held across its trials (run_hold.py): the LTTng session daemon
    (held for the run when an lttng case runs, lttng.py) and session, the eBPF tracers, on
    the trial's partner CPUs. A run of eBPF tracers leaves the LTTng daemon be."""
    hold = RunHold(Build(ctx.build_dir / ROOM), ctx.scratch_dir, partner_cpus(ctx))
    with contextlib.ExitStack() as stack:
        if (ctx.capabilities.get("lttng") and shutil.which(lttng.SESSIOND) is not None
                and any(c.variant == "lttng" for c in ctx.cases)):
            hold.daemon = stack.enter_context(lttng.session_daemon(
                partner_cpus(ctx), ctx.scratch_dir / "lttng-sessiond.stderr"))
            hold.session = lttng.HeldSession(run_session_name(), ctx.scratch_dir)
        stack.callback(hold.close)  # before the daemon's hold is let go
        yield hold


def _prepare_trial(case: Case, profile: Profile, ctx: RunContext, hold: RunHold) -> TrialPlan:
    """calls=auto/K becomes a count; the run's tracer for the variant, brought up (or
    revived) and named in the trial's environment."""
    duration = int(case.param("duration_us"))
    calls = calls_for(duration, str(case.param("calls")))
    argv = trial_argv(ctx.build_dir / PROGRAM, case, profile,
                      [("duration_us", duration), ("calls", calls)])
    held: dict[str, str] | str = {}
    partners: tuple[int, ...] = ()
    if case.variant == "lttng":
        held = hold.lttng_env()
    elif case.variant.startswith("ebpf-"):
        mode = case.variant.removeprefix("ebpf-")
        held = hold.ebpf_env(mode)
        if not isinstance(held, str):
            # The tracer's wake-ups are the cost a profile of this case explains.
            partners = (hold.ebpf[mode].pid,)
    elif case.variant == "bpftrace":
        held = hold.bpftrace_env()
    if isinstance(held, str):
        return TrialPlan.failed(held)
    # The driver names a session of its own bakeoff-<this pid>-<its pid>, so the session
    # hook can destroy whatever a killed trial of this run left.
    return TrialPlan(argv=argv, env={"BAKEOFF_RUN_PID": str(os.getpid()), **held},
                     partners=partners)


# ---- the benchmark ----------------------------------------------------------------------------

EBPF_NEEDS = ("root", "bpf", "uprobes")

BENCHMARK = Benchmark(
    name="tracing-overhead",
    title="Tracing overhead: none vs LTTng-UST vs eBPF uprobes vs bpftrace",
    summary=("Time per call of a library function that busy-waits 0 µs to 1 ms, and of the "
             "whole app making the calls, with no tracer, with LTTng-UST entry/exit "
             "tracepoints, with eBPF uprobes streaming events through a ring buffer (three "
             "wake-up policies), with empty uprobes (the floor), and with bpftrace counting."),
    variants=(
        Variant("baseline", "no tracing", baseline=True, color="#7f8c8d"),
        Variant("lttng", "LTTng-UST entry/exit tracepoints in an LD_PRELOADed build of the "
                "library; session per trial, per-uid buffers 8 x 1 MiB", requires=("lttng",),
                color="#e67e22"),
        Variant("ebpf-force", "libbpf uprobe + uretprobe, events to a ring buffer, "
                "BPF_RB_FORCE_WAKEUP on every event (the seed's eBPF tracer)",
                requires=EBPF_NEEDS, color="#3498db"),
        Variant("ebpf-adaptive", "as ebpf-force, wake-up flags 0: the kernel wakes the "
                "consumer only when it had caught up", requires=EBPF_NEEDS, color="#16a085"),
        Variant("ebpf-batched", "as ebpf-force, BPF_RB_NO_WAKEUP: no wake-ups, the consumer "
                "drains every 1 ms", requires=EBPF_NEEDS, color="#8e44ad"),
        Variant("ebpf-floor", "the same uprobe + uretprobe with empty BPF programs: the cost "
                "of the probes alone", requires=EBPF_NEEDS, color="#2c3e50",
                diagnostic=True),
        Variant("bpftrace", "bpftrace count() on the same uprobe + uretprobe (in-kernel "
                "aggregation, nothing streamed)", requires=EBPF_NEEDS, color="#c0392b"),
    ),
    params=(
        Param("duration_us", "int", "how long one call of the traced function busy-waits "
              "(the seed's scenarios: 0, 5, 50, 100, 500, 1000)", unit="µs", min=0,
              max=MAX_DURATION_US),
        Param("calls", "str", "calls the app makes: a number, auto (the seed's count for the "
              "duration: 100k at 0 and 5 µs, 50k at 50, 10k at 100, 5k at 500, 2k at 1000) or "
              "auto/K (that divided by K)", check=check_calls),
    ),
    metrics=(
        Metric("per_call_ns", "ns", "time of one call as the app measures it (a timed batch "
               "of calls / its size), the tracer's probes included; at duration_us=0 the "
               "batch's wait for a CPU (schedstat run_delay) taken off", overhead_pct=True),
        Metric("app_wall_ms", "ms", "whole-app wall time: fork to exit of the app process, "
               "loading, tracer registration and exit included", overhead_pct=True),
        Metric("app_cpu_ms", "ms", "user + system CPU of the app process (probe traps and "
               "BPF programs run in it, as system time)", overhead_pct=True),
        Metric("app_max_rss_kib", "KiB", "peak RSS of the app process (LTTng's buffers are "
               "mapped into it)", overhead_pct=True),
    ),
    profiles={
        "quick": Profile("quick", {"duration_us": (0, 100), "calls": ("auto/50",)},
                         trials=4, samples=5, warmup_samples=1, warmup_trials=0,
                         timeout_s=60),
        # The tracers are held across trials (run_hold.py): a traced trial costs its calls
        # and the driver, not a tracer's start (an LTTng trial 1.7 s -> 0.7-0.8 s, an eBPF
        # one about halved, at load 4-11: docs/notes/tracing-overhead-held-ab-20261129-epyc.md).
        # bpftrace too, its maps read by SIGUSR1 (docs/notes/bpftrace-held-20261130-epyc.md).
        # A fixed count:
        # at the long durations every tracer is level with the baseline and its CI reaches
        # the threshold and the 1% level, so sequential allocation would only add trials
        # there. The question's cases up to 10 (Profile.answer_trials): at 0 µs until what
        # each tracer adds per call is within ±5%, and the durations on either side of
        # where an overhead falls under 5% and 1% while their CI still holds that level.
        # ebpf-floor, which no question reads, 2 (Profile.other_trials: the fewest that give a
        # CI; docs/notes/make-bench-time-20261129-epyc.md).
        # trial_s, trials_growth: the mean trial, and the trials kept over the plan's, of the
        # default runs scripts/trial_s.py --write read (docs/RELIABILITY.md, "The time left
        # of a first run"); trial_s_busy: the mean trial of those it read with --busy, made
        # beside two CPU hogs ("The time left beside other work"). Only the estimate of the
        # time left reads them.
        "default": Profile("default", {"duration_us": tuple(SEED_CALLS), "calls": ("auto/10",)},
                           trials=5, samples=10, warmup_samples=1, warmup_trials=0,
                           timeout_s=120, answer_trials=10, other_trials=2, trial_s=0.32,
                           trials_growth=1.40,
                           trial_s_busy=0.41,
                           counting_s=0.13),
        "full": Profile("full", {"duration_us": tuple(SEED_CALLS), "calls": ("auto",)},
                        trials=10, samples=20, warmup_samples=1, warmup_trials=1,
                        timeout_s=300),
    },
    # Counted per call in the app's counted batches (traced_app.c; METHOD.md, "Counters"):
    # the wake-ups the app's ring buffer submits cause (ebpf-force ~1 per event, adaptive
    # far fewer, batched none), the uretprobe hits every uprobe tracer pays (1 per call),
    # the irq_work a forced wake-up goes through, and the app's own context switches.
    questions=(
        Question("How many ns does each tracer add to one call, and from how much work per "
                 "call is its overhead under 5% and under 1%?", "overhead",
                 against="baseline", metric="per_call_ns", along="duration_us",
                 # tests/indep_checks.py; the figures are in the note it names.
                 checked="ebpf-force's cost per call is CPU time in the app's thread and "
                 "rises with each wake-up of a sleeping consumer; indep_trace, written "
                 "apart, agrees when its consumer and the room's are seldom found asleep, "
                 "but its figure does not rise with its wake-ups, so on a light machine, "
                 "where the room's consumer is woken about once a call, the room reads "
                 "more; why a wake-up of the check's consumer costs its app less is open "
                 "(docs/notes/tracing-force-check-20261129-epyc.md)"),
    ),
    why_counters=("sched.sched_waking", "syscalls.sys_enter_uretprobe",
                  "irq_vectors.irq_work_entry", "context_switches"),
    program=PROGRAM,
    cpus=2,  # the measured CPU, and one for the tracers' own processes (Placement)
    skip_case=skip_case,
    check_case=not_for_ever,
    session=_session,
    sweep=sweep,
    prepare_trial=_prepare_trial,
    crossover_ratios=(1.05, 1.01),
    # No fit across duration_us: what a tracer adds per call is the paired difference at
    # each duration (the question's answer); a line's intercept borrowed the noise of the
    # 1 ms points (issue 32, point 6).
    commands={"tracing-scenarios": scenarios_command},
    # The seed's resource chart: what the tracer itself costs, beside the app's figures.
    counters=(
        Metric("tracer_cpu_ms", "ms", "CPU time of the tracer during the trial (LTTng's "
               "session and consumer daemons, the eBPF consumer, bpftrace)"),
        Metric("tracer_rss_kib", "KiB", "peak RSS of the tracer (for LTTng: session + "
               "consumer daemons)"),
        Metric("trace_bytes", "B", "trace written to disk (deleted once counted)"),
        Metric("events_dropped", "events", "events the tracer lost (a trial fails unless "
               "captured + dropped = expected)"),
    ),
)
