"""tracing_trial - one trial of the tracing-overhead benchmark (build/tracing_overhead/
tracing_trial runs main() here with that directory).

    tracing_trial --variant V --param duration_us=US --param calls=N [--samples S] [--warmup W]
                  [--counted-samples C]

Begins the variant's tracer (under bakeoff run the eBPF tracers and the LTTng session are
the run's, held across trials and named in the environment; by hand the trial starts its
own), runs the app under it (traced_app through timed_exec, which measures the whole app
process), ends the tracer's part of the trial, counts what it recorded for this trial,
checks that captured + dropped = expected (2 events per call), deletes the trace, and
prints the program protocol's JSON lines (docs/ARCHITECTURE.md, "The program protocol"):

    samples   per_call_ns (one per timed batch of the app), app_wall_ms, app_cpu_ms,
              app_max_rss_kib (one each per trial); with --counted-samples C, C more
              batches of the app with kernel counters on, relayed as counted.per_call_ns
              and per_op.<counter> (traced_app.c), and left out of app_wall_ms and
              app_cpu_ms (the app times its counted section)
    counters  calls, events_expected, events_captured, events_dropped, trace_bytes,
              tracer_cpu_ms, tracer_rss_kib, app_user_ms, app_sys_ms, and per tracer more

Exit status: 0 ok; 1 the measurement is wrong or a tracer failed (one line on stderr says
which); 2 bad arguments; 3 the machine lacks something (no lttng-sessiond, a path bpftrace
cannot take). On SIGINT or SIGTERM it stops the app and the tracer, destroys the LTTng
session, removes its temp directory, and exits 128 + signal.

Python only orchestrates: the timed loop is C (traced_app), and the app is never run by
Python directly but through timed_exec, the same way in every variant. It speaks the
protocol through bakeoff.room.program, as a C program does through bench.h. It runs on the
system's python3 (any user can), with python3-psutil to read the LTTng daemons.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bakeoff.room import program
from bakeoff.room.program import Failure

from .children import Reaped, drain, last_line, read_json_lines, read_line, reap, terminate
from .tracers import (
    AppRun,
    BpftraceTracer,
    Build,
    CountedSection,
    EbpfTracer,
    HeldBpftrace,
    HeldEbpf,
    LttngTracer,
    Placement,
    Recorded,
    Tracer,
)

MAX_DURATION_US = 1_000_000
START_TIMEOUT_S = 30.0

SPEC = program.Spec(
    "tracing_trial",
    "one run of the app under a tracer: time per call, whole-app wall and CPU time, and "
    "what the tracer recorded and cost",
    variants={
        "baseline": "no tracing",
        "lttng": "LTTng-UST entry/exit tracepoints in an LD_PRELOADed build of the library",
        "ebpf-force": "uprobe + uretprobe -> ring buffer, BPF_RB_FORCE_WAKEUP (the seed's eBPF)",
        "ebpf-adaptive": "uprobe + uretprobe -> ring buffer, wake-up flags 0 (kernel decides)",
        "ebpf-batched": "uprobe + uretprobe -> ring buffer, BPF_RB_NO_WAKEUP, consumer polls "
                        "1 ms",
        "ebpf-floor": "the same uprobe + uretprobe with empty BPF programs",
        "bpftrace": "bpftrace count() on uprobe + uretprobe, in-kernel aggregation",
    },
    params=(program.Param("duration_us", "how long one call busy-waits, 0 to 1000000 µs"),
            program.Param("calls", "calls the app makes, at least --samples + --warmup")),
)


class Stopped(Exception):
    def __init__(self, signum: int) -> None:
        super().__init__(f"stopped by signal {signum}")
        self.signum = signum


def _on_stop_signal(signum: int, _frame: object) -> None:
    # Once: the clean-up that follows must not be interrupted by a second signal.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise Stopped(signum)


@dataclass(frozen=True)
class Args:
    variant: str
    duration_us: int
    calls: int
    samples: int
    warmup: int
    counted_samples: int = 0


def parse_args(argv: Sequence[str]) -> Args:
    """The protocol's arguments (bakeoff.room.program), then this program's own rules; anything
    wrong is one line naming the fix, exit 2."""
    args = program.parse_args(SPEC, argv)
    duration, calls = args.whole("duration_us"), args.whole("calls")
    if duration > MAX_DURATION_US:
        SPEC.usage_error(f"--param duration_us={duration} is above {MAX_DURATION_US} (1 s per "
                         "call)")
    if calls < args.samples + args.warmup:
        SPEC.usage_error(f"--param calls={calls} is fewer than --samples + --warmup = "
                         f"{args.samples + args.warmup} batches of at least one call; "
                         "raise calls")
    return Args(args.variant, duration, calls, args.samples, args.warmup, args.counted_samples)


def session_name() -> str:
    """bakeoff-<run pid>-<this pid> under bakeoff run (its session hook removes leftovers of
    its own run by that prefix), bakeoff-<this pid> by hand."""
    run = os.environ.get("BAKEOFF_RUN_PID", "")
    return f"bakeoff-{run}-{os.getpid()}" if run.isdigit() else f"bakeoff-{os.getpid()}"


def make_tracer(variant: str, build: Build, workdir: Path, place: Placement) -> Tracer:
    if variant == "lttng":
        return LttngTracer(build, workdir, place, session_name())
    if variant.startswith("ebpf-"):
        return EbpfTracer(build, workdir, place, variant.removeprefix("ebpf-"),
                          HeldEbpf.from_env())
    if variant == "bpftrace":
        return BpftraceTracer(build, workdir, place, HeldBpftrace.from_env())
    return Tracer(build, workdir, place)


def app_argv(args: Args, build: Build, place: Placement, hold: bool) -> list[str]:
    cpu = ["--cpu", str(place.app_cpu)] if place.app_cpu is not None else []
    return [str(build.launcher), *cpu, *(["--hold"] if hold else []), "--", str(build.app),
            "--duration-us", str(args.duration_us), "--calls", str(args.calls),
            "--samples", str(args.samples), "--warmup", str(args.warmup),
            "--counted-samples", str(args.counted_samples)]


def parse_app_output(stdout: str, stderr: str) -> AppRun:
    meta: dict[str, Any] = {}
    samples: list[float] = []
    counted = CountedSection()
    exit_line: dict[str, Any] | None = None
    for obj in read_json_lines(stdout):
        kind = obj.get("type")
        if kind == "meta":
            meta.update({k: v for k, v in obj.items() if k != "type"})
        elif kind == "sample" and obj.get("metric") == "per_call_ns":
            samples.append(float(obj["value"]))
        elif kind == "sample" and str(obj.get("metric")).startswith(("counted.", "per_op.")):
            counted.samples.setdefault(str(obj["metric"]), []).append(float(obj["value"]))
        elif kind == "counted_section":
            counted.wall_ns = int(obj["wall_ns"])
            counted.user_s, counted.sys_s = obj["user_us"] / 1e6, obj["sys_us"] / 1e6
        elif kind == "app_exit":
            exit_line = obj
    if exit_line is None:
        raise Failure(f"the app launcher reported nothing: {last_line(stderr) or 'no output'}")
    if exit_line["status"] != 0:
        raise Failure(f"the app failed (status {exit_line['status']}): "
                         f"{last_line(stderr) or 'no message'}")
    counted.calls = int(meta.get("counted_calls", 0))
    return AppRun(meta, samples, int(exit_line["wall_ns"]), exit_line["user_us"] / 1e6,
                  exit_line["sys_us"] / 1e6, int(exit_line["max_rss_kib"]),
                  exit_line["self_cpu_us"] / 1e6, int(exit_line["involuntary_switches"]),
                  counted)


class AppProcess:
    """The running app (or the tracer that runs it), kept so clean-up can stop it."""

    proc: subprocess.Popen[bytes] | None = None

    @classmethod
    def run(cls, argv: list[str], env: dict[str, str], preexec: Any, tracer: Tracer) -> tuple[
            subprocess.Popen[bytes], Reaped, str, str]:
        hold = tracer.follows_pid
        cls.proc = subprocess.Popen(argv, stdin=subprocess.PIPE if hold else subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    env={**os.environ, **env}, preexec_fn=preexec)
        proc = cls.proc
        assert proc.stdout is not None and proc.stderr is not None
        if hold:
            assert proc.stdin is not None
            line = read_line(proc.stdout, START_TIMEOUT_S)
            announced = json.loads(line) if line.startswith("{") else {}
            if announced.get("type") != "app_pid":
                raise Failure(f"the app launcher did not announce the app: {line!r}")
            tracer.follow(int(announced["pid"]))
            proc.stdin.write(b"go\n")
            proc.stdin.close()
        out, err = drain(proc)
        reaped = reap(proc, float("inf"))
        assert reaped is not None
        return proc, reaped, out, err


def run_trial(args: Args, build: Build, tracer: Tracer, place: Placement) -> None:
    tracer.start()
    wrapped = tracer.wrap(app_argv(args, build, place, tracer.follows_pid))
    # The tracer that runs the app itself (bpftrace) belongs on the tracer CPUs; timed_exec
    # puts the app back on its own.
    preexec = place.tracer_preexec() if wrapped[0] == "bpftrace" else None
    env = {"LD_LIBRARY_PATH": str(tracer.library.parent), **tracer.app_env()}
    proc, reaped, out, err = AppProcess.run(wrapped, env, preexec, tracer)
    if wrapped[0] != str(build.launcher) and reaped.signum is not None:
        # The tracer that ran the app (bpftrace) was killed: the app's status and what the
        # tracer printed before (a start-up warning) would only mislead.
        raise Failure(f"{Path(wrapped[0]).name} (pid {proc.pid}) died during the trial: "
                      f"{reaped.ended()}")
    app = parse_app_output(out, err)
    if reaped.status != 0:
        raise Failure(f"{wrapped[0]} exited with status {reaped.status}: "
                         f"{last_line(err) or 'no message'}")
    tracer.after_app(proc, reaped, app)
    # The counted batches are calls too, and the tracer recorded them.
    expected = 2 * (args.calls + app.counted.calls) if tracer.records_events else 0
    rec = tracer.stop(expected)
    if rec.captured + rec.dropped != rec.expected:
        raise Failure(
            f"{args.variant}: {rec.captured} events captured + {rec.dropped} dropped != "
            f"{rec.expected} expected (2 per call x {args.calls} calls + "
            f"{app.counted.calls} counted): the count is wrong")
    if len(app.per_call_ns) != args.samples:
        raise Failure(f"the app printed {len(app.per_call_ns)} samples, expected "
                         f"{args.samples}")
    got = len(app.counted.samples.get("counted.per_call_ns", []))
    if got != args.counted_samples:
        raise Failure(f"the app printed {got} counted samples, expected {args.counted_samples}")
    emit(args, place, app, rec)


def emit(args: Args, place: Placement, app: AppRun, rec: Recorded) -> None:
    out = program.Output()
    # Later keys win: the app's meta, then the trial's facts, then the tracer's.
    out.meta(**{**app.meta, "variant": args.variant, "tracer": SPEC.variants[args.variant],
                "app_cpu": place.app_cpu if place.app_cpu is not None else "unpinned",
                "tracer_cpus": sorted(place.tracer_cpus) if place.tracer_cpus else "unpinned",
                **rec.meta})
    for v in app.per_call_ns:
        out.sample("per_call_ns", v)
    for metric, values in app.counted.samples.items():
        for v in values:
            out.sample(metric, v)
    # The whole app without its counted section: the same process a run without counted
    # samples would time (its start, measured batches and exit).
    counted = app.counted
    user_s, sys_s = app.user_s - counted.user_s, app.sys_s - counted.sys_s
    out.sample("app_wall_ms", (app.wall_ns - counted.wall_ns) / 1e6)
    out.sample("app_cpu_ms", (user_s + sys_s) * 1e3)
    out.sample("app_max_rss_kib", float(app.max_rss_kib))
    counters: dict[str, float] = {
        "calls": args.calls, "counted_calls": counted.calls,
        "events_expected": rec.expected, "events_captured": rec.captured,
        "events_dropped": rec.dropped, "trace_bytes": rec.trace_bytes,
        "tracer_cpu_ms": round(rec.cpu_s * 1e3, 3), "tracer_rss_kib": rec.rss_kib,
        "app_user_ms": round(user_s * 1e3, 3), "app_sys_ms": round(sys_s * 1e3, 3),
        # Preemptions of the app: another process on its CPU stretches every wall-clock
        # figure of this trial (the busy-wait ends on the clock, not on work done).
        "app_involuntary_switches": app.involuntary_switches,
        **rec.counters,
    }
    for name, value in counters.items():
        out.counter(name, value)
    out.flush()


def main(argv: Sequence[str], build_dir: Path) -> int:
    args = parse_args(argv)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _on_stop_signal)
    build = Build(build_dir)
    place = Placement.from_env()
    workdir: Path | None = None
    tracer: Tracer | None = None
    try:
        # Signals held while the directory is made and named: a SIGTERM in between would
        # raise Stopped with the directory made but workdir unset, so never removed.
        stop_signals = {signal.SIGINT, signal.SIGTERM}
        signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals)
        try:
            workdir = Path(tempfile.mkdtemp(prefix=f"bakeoff-{os.getpid()}-"))  # mode 0700
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, stop_signals)
        tracer = make_tracer(args.variant, build, workdir, place)
        run_trial(args, build, tracer, place)
        return program.EXIT_OK
    except Failure as exc:
        SPEC.say(str(exc))
        return exc.status
    except Stopped as exc:
        return 128 + exc.signum
    finally:
        # Whatever happened: no app, no tracer, no session, no trace left behind.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        terminate(AppProcess.proc)
        if tracer is not None:
            tracer.cleanup()
        if workdir is not None:
            shutil.rmtree(workdir, ignore_errors=True)
