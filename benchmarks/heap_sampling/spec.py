"""heap-sampling: Poisson vs stateless-hash allocation sampling, cost and accuracy (seed 001).

One trial is `heap_bench` (heap_bench.c): the decision micro-benchmark in-process, or a driver
that runs the seed's allocation patterns (alloc_patterns.c) under libbakeoff_sampler.so
(sampler.c): once paired against NONE inside one process for the added cost, and in 8 fresh
processes for the estimation errors. `bakeoff sample -- CMD` runs any program under the
sampler and prints what it saw. METHOD.md says what is timed and why.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bakeoff.cleanup import sweep_scratch
from bakeoff.errors import UsageError
from bakeoff.model import (
    Benchmark,
    Metric,
    Param,
    ParamValue,
    Profile,
    Variant,
    format_bytes,
    parse_bytes,
)

KIB = 1024
SEED_MEAN = 4 * KIB  # the seed's default SAMPLER_POISSON_MEAN_BYTES
GO_JEMALLOC_MEAN = 512 * KIB  # Go's runtime.MemProfileRate; jemalloc's lg_prof_sample 19
TCMALLOC_MEAN = 2 * KIB * KIB  # tcmalloc's default profile sampling interval
MEANS = (SEED_MEAN, GO_JEMALLOC_MEAN, TCMALLOC_MEAN)
WORKLOADS = ("micro-64", "micro-1024", "micro-4096", "mode1", "mode2", "mode3", "mode4")
SAMPLER_SO = "heap_sampling/libbakeoff_sampler.so"

# --scheme of `bakeoff sample`: our variant names and the sampler's own names.
SCHEMES = {
    "poisson": "POISSON", "poisson-tagged": "POISSON_TAGGED",
    "stateless-hash": "STATELESS_HASH", "hash": "STATELESS_HASH",
    "combined": "COMBINED", "none": "NONE",
}


def _known_workload(value: ParamValue) -> str | None:
    if value not in WORKLOADS:
        return f"must be one of {', '.join(WORKLOADS)}"
    return None


def _sane_mean(value: ParamValue) -> str | None:
    if not 1 <= int(value) <= 2**40:
        return "must be from 1 B to 1 TiB (e.g. 4KiB as the seed, 512KiB as Go, 2MiB as tcmalloc)"
    return None


def _sane_scale(value: ParamValue) -> str | None:
    if not 0 < float(value) <= 100:
        return "must be > 0 and <= 100 (a fraction of the seed's allocation counts; 1 = the seed's)"
    return None


_ERROR = ("signed estimation error of the {what} ((estimate - true) / true x 100) of one run of "
          "the pattern, one value per process (8 fresh processes per trial: new ASLR, new "
          "PRNG); compared by |value|, with bias and RMS beside")

# ---- bakeoff sample -- CMD ------------------------------------------------------------------

_SAMPLE_USAGE = ("bakeoff sample [--scheme poisson|poisson-tagged|stateless-hash|combined|none] "
                 "[--mean BYTES] [--timing] [--json FILE] -- CMD [ARGS...]")


def _parse_sample_args(argv: list[str]) -> tuple[dict[str, Any], list[str]]:
    opts: dict[str, Any] = {"scheme": "COMBINED", "mean": SEED_MEAN, "timing": False,
                            "json": None}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return opts, argv[i + 1:]
        if not arg.startswith("-"):
            return opts, argv[i:]  # the command starts here; "--" is optional
        name, eq, inline = arg.partition("=")
        if name in ("-h", "--help"):
            print(f"usage: {_SAMPLE_USAGE}\n\nRuns CMD with libbakeoff_sampler.so preloaded "
                  "and prints the sampler's summary on stderr; exits with CMD's status.")
            raise SystemExit(0)
        if name == "--timing" and not eq:
            opts["timing"] = True
            i += 1
            continue
        if name not in ("--scheme", "--mean", "--json"):
            raise UsageError(f"sample: unknown option {name}; usage: {_SAMPLE_USAGE}")
        if eq:
            value = inline
        elif i + 1 < len(argv):
            value = argv[i + 1]
            i += 1
        else:
            raise UsageError(f"sample: {name} needs a value; usage: {_SAMPLE_USAGE}")
        i += 1
        if name == "--scheme":
            key = value.lower().replace("_", "-")
            if key not in SCHEMES:
                raise UsageError(f"sample: --scheme {value} is unknown; use poisson, "
                                 "poisson-tagged, stateless-hash, combined or none")
            opts["scheme"] = SCHEMES[key]
        elif name == "--mean":
            try:
                mean = parse_bytes(value)
            except ValueError as exc:
                raise UsageError(f"sample: --mean {exc}") from None
            if _sane_mean(mean):
                raise UsageError(f"sample: --mean {value} {_sane_mean(mean)}")
            opts["mean"] = mean
        else:
            opts["json"] = Path(value)
    return opts, []


def _sampler_path() -> Path:
    from bakeoff import registry  # the one harness function a room may use: where builds go

    path = registry.build_dir() / SAMPLER_SO
    if not path.is_file():
        raise UsageError(f"sample: {path} is not built; run make build")
    if any(c in str(path) for c in " :\t"):
        # ld.so splits LD_PRELOAD at spaces and colons, and has no quoting.
        raise UsageError(f"sample: {path} has a space or colon, which LD_PRELOAD cannot "
                         "carry; build bakeoff in a path without them")
    return path


def _run_with_sigint_ignored(cmd: list[str], env: dict[str, str]) -> int:
    """CMD gets Ctrl-C from the terminal itself; we wait for it, as `time` does."""
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        try:
            proc = subprocess.Popen(cmd, env=env)
        except FileNotFoundError:
            print(f"bakeoff sample: cannot run {cmd[0]}: command not found", file=sys.stderr)
            return 127
        except PermissionError:
            print(f"bakeoff sample: cannot run {cmd[0]}: permission denied", file=sys.stderr)
            return 126
        code = proc.wait()
    finally:
        signal.signal(signal.SIGINT, old)
    return 128 - code if code < 0 else code


def _pct(v: Any) -> str:
    return f"{v:+.2f}%" if isinstance(v, int | float) else "n/a"


def _sigma_pct(mean: int, true_bytes: int) -> str:
    """1-sigma bound of a relative error for independent decisions: sqrt(m / bytes)."""
    return f"±{100 * math.sqrt(mean / true_bytes):.2f}%" if true_bytes > 0 else "n/a"


def format_summary(s: dict[str, Any], cmd: list[str]) -> str:
    """The sampler's JSON summary as a few lines for a person."""
    mean = int(s["mean_bytes"])
    lines = [
        f"heap sampling of {' '.join(cmd)} (pid {s['pid']}, scheme {s['scheme']}, mean "
        f"{format_bytes(mean)})",
        f"  true: {s['allocations']} allocations, {s['frees']} frees, "
        f"{format_bytes(s['allocated_bytes'])} allocated (usable bytes; "
        f"{format_bytes(s['requested_bytes'])} requested), {format_bytes(s['live_bytes'])} "
        f"live at exit in {s['live_blocks']} blocks",
    ]
    for prefix, name in (("poisson", "Poisson"), ("hash", "stateless hash")):
        if f"{prefix}_samples" not in s:
            continue
        samples = s[f"{prefix}_samples"]
        share = 100 * samples / s["allocations"] if s["allocations"] else 0.0
        lines.append(
            f"  {name}: {samples} samples ({share:.2f}% of allocations, "
            f"{format_bytes(s[f'{prefix}_sampled_bytes'])}); estimated total "
            f"{format_bytes(s[f'{prefix}_est_total_bytes'])} "
            f"(error {_pct(s.get(f'{prefix}_total_error_pct'))}, 1σ "
            f"{_sigma_pct(mean, s['allocated_bytes'])}), live "
            f"{format_bytes(s[f'{prefix}_est_live_bytes'])} "
            f"(error {_pct(s.get(f'{prefix}_live_error_pct'))}, 1σ "
            f"{_sigma_pct(mean, s['live_bytes'])})")
    if s.get("timing"):
        lines.append(f"  decision cost, TSC ticks (ns) per decision, the timer's in-place cost "
                     f"subtracted; TSC {s.get('tsc_ghz', 0):.3f} GHz, tight-loop timer floor "
                     f"{s.get('timer_floor_ticks')} ticks:")
        for prefix in ("none", "poisson", "hash"):
            parts = []
            for path in ("malloc", "free"):
                ticks = s.get(f"{prefix}_{path}_ticks_per_decision")
                if ticks is not None:
                    parts.append(f"{path} {ticks:.1f} ({s[f'{prefix}_{path}_ns_per_decision']:.1f}"
                                 f" ns)")
            if parts:
                lines.append(f"    {prefix}: " + ", ".join(parts))
    lines.append("  (1σ assumes independent decisions: address reuse makes the hash's error "
                 "larger; see METHOD.md)" if "hash_samples" in s else "")
    return "\n".join(line for line in lines if line)


def sample_command(argv: list[str]) -> int:
    """Run a program under the heap sampler and print its summary (exit status: the program's)."""
    opts, cmd = _parse_sample_args(argv)
    if not cmd:
        raise UsageError(f"sample: no command given; usage: {_SAMPLE_USAGE}")
    preload = _sampler_path()
    tmp = Path(tempfile.mkdtemp(prefix=f"bakeoff-{os.getpid()}-sample-"))  # mode 0700
    try:
        summary_file = tmp / "summary.json"
        env = {k: v for k, v in os.environ.items() if not k.startswith("SAMPLER_")}
        env.update({
            "LD_PRELOAD": " ".join(filter(None, [str(preload), os.environ.get("LD_PRELOAD")])),
            "SAMPLER_SCHEME": opts["scheme"],
            "SAMPLER_POISSON_MEAN_BYTES": str(opts["mean"]),
            "SAMPLER_TIMING": "1" if opts["timing"] else "0",
            "SAMPLER_OUTPUT": str(summary_file),
        })
        code = _run_with_sigint_ignored(cmd, env)
        if not summary_file.is_file():
            print(f"bakeoff sample: no summary from {cmd[0]}: it ended without running exit "
                  "handlers (killed by a signal, or _exit)", file=sys.stderr)
            return code
        text = summary_file.read_text()
        if opts["json"] is not None:
            opts["json"].write_text(text)
        print(format_summary(json.loads(text), cmd), file=sys.stderr)
        return code
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _sweep() -> list[str]:
    """Temp directories of heap_bench ($TMPDIR/bakeoff-<pid>-heap-*: the sampler's summary)
    and of `bakeoff sample` (bakeoff-<pid>-sample-*) whose process is gone. Both remove
    their own on exit, SIGINT and SIGTERM (heap_bench also SIGHUP); SIGKILL leaves one."""
    return [*sweep_scratch("bakeoff-*-heap-*"), *sweep_scratch("bakeoff-*-sample-*")]


BENCHMARK = Benchmark(
    name="heap-sampling",
    title="Heap sampling: Poisson byte counter vs stateless address hash",
    summary=("What sampling adds per allocation (malloc + free) over the same preload without "
             "sampling, what a decision and a sample cost, and how well 1/p-weighted samples "
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
        Variant("hash-equal-p", "the hash at the mean m_h that gives it as many samples as "
                "Poisson: u/(1-exp(-u/m)) for one size, E[u]/E[1-exp(-u/m)] for the modes' "
                "sizes", color="#d62728"),
    ),
    params=(
        Param("workload", "str", "micro-64 / micro-1024 / micro-4096: decision micro-benchmark "
              "(no malloc, blocks of that many bytes); mode1 monotonic heap, mode2 steady pool, "
              "mode3 8-thread churn, mode4 address reuse (seed's alloc patterns)",
              check=_known_workload),
        Param("mean", "bytes", "mean bytes between samples (SAMPLER_POISSON_MEAN_BYTES); Poisson "
              "samples a block of u bytes with p = 1-exp(-u/m), the hash with p = min(1, u/m): "
              "not the same p (hash-equal-p matches them)", unit="B", check=_sane_mean),
        Param("scale", "float", "allocation counts of the modes as a fraction of the seed's "
              "(1 = the seed's own arguments); the micro-benchmark ignores it",
              check=_sane_scale),
    ),
    metrics=(
        Metric("added_ns_per_alloc", "ns", "what sampling adds to one allocation and its free: "
               "ns per allocation under the variant minus under NONE (modes: runs of the "
               "pattern in pairs with the same requests, switched inside one process, untimed "
               "per operation; micro: batches of decisions against batches of NONE's dispatch), "
               "one value per pair"),
        Metric("ns_per_alloc", "ns", "time per allocation of the workload, its free included; "
               "micro: the decisions of one allocation (malloc path + free path)",
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
        "quick": Profile("quick", {"workload": ("micro-64", "mode2", "mode4"),
                                   "mean": (SEED_MEAN,), "scale": (0.005,)},
                         trials=3, samples=3, warmup_samples=1, warmup_trials=0, timeout_s=60),
        # The two ends of the means (the seed's 4 KiB and tcmalloc's 2 MiB): the findings
        # speak of a sweep's ends, and in the run that chose this (2026-11-25, this 2-vCPU
        # VM) the middle one (Go's and jemalloc's 512 KiB, in full) cost a third of the
        # time. A fixed count: the primary metric is a difference with no ratio to the
        # baseline, so sequential allocation has no verdict to settle. No warm-up round:
        # every case's first trial is measured in the same shuffled round, so a cold start
        # falls on all variants alike. trial_s: that run's mean trial (load 3-8).
        "default": Profile("default", {"workload": WORKLOADS, "mean": (SEED_MEAN, TCMALLOC_MEAN),
                                       "scale": (0.01,)},
                           trials=5, samples=5, warmup_samples=1, warmup_trials=0,
                           timeout_s=120, trial_s=0.51),
        "full": Profile("full", {"workload": WORKLOADS, "mean": MEANS, "scale": (1.0,)},
                        trials=10, samples=5, warmup_samples=1, warmup_trials=1,
                        timeout_s=1800),
    },
    program="heap_sampling/heap_bench",
    sweep=_sweep,
    commands={"sample": sample_command},
)
