#!/usr/bin/env python3
"""tracing_trial - one trial of the tracing-overhead benchmark.

    tracing_trial --variant V --param duration_us=US --param calls=N [--samples S] [--warmup W]

Starts the variant's tracer, runs the app under it (traced_app through timed_exec, which
measures the whole app process), stops the tracer, counts what it recorded, checks that
captured + dropped = expected (2 events per call), deletes the trace, and prints the
program protocol's JSON lines (docs/ARCHITECTURE.md, "The program protocol"):

    samples   per_call_ns (one per timed batch of the app), app_wall_ms, app_cpu_ms,
              app_max_rss_kib (one each per trial)
    counters  calls, events_expected, events_captured, events_dropped, trace_bytes,
              tracer_cpu_ms, tracer_rss_kib, app_user_ms, app_sys_ms, and per tracer more

Exit status: 0 ok; 1 the measurement is wrong or a tracer failed (one line on stderr says
which); 2 bad arguments; 3 the machine lacks something (no lttng-sessiond, a path bpftrace
cannot take). On SIGINT or SIGTERM it stops the app and the tracer, destroys the LTTng
session, removes its temp directory, and exits 128 + signal.

Python only orchestrates: the timed loop is C (traced_app), and the app is never run by
Python directly but through timed_exec, the same way in every variant. Standard library
only: it runs with the system python3, outside bakeoff's venv, by hand as well.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

HERE = Path(__file__).resolve().parent  # the build directory: every program sits here
APP = HERE / "traced_app"
LAUNCHER = HERE / "timed_exec"
EBPF_TRACER = HERE / "bakeoff_tracer"
PLAIN_LIB = HERE / "libbakeoff_traced.so"
LTTNG_LIB = HERE / "libbakeoff_traced_lttng.so"
FUNCTION = "bakeoff_traced_work"
LTTNG_PROVIDER = "bakeoff_traced"
LTTNG_CHANNEL = "bakeoff"
# Per CPU: 8 x 1 MiB. The seed's largest scenario writes 200k events of ~40 B (~8 MB) from
# one CPU; the consumer daemon empties sub-buffers as they fill, so this does not discard
# on this machine. Any discard is counted (LTTng's channel statistics) and reported.
LTTNG_SUBBUF = "1M"
LTTNG_NUM_SUBBUF = "8"
MAX_DURATION_US = 1_000_000
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 60.0
COMMAND_TIMEOUT_S = 60.0
PROG = "tracing_trial"

VARIANTS = {
    "baseline": "no tracing",
    "lttng": "LTTng-UST entry/exit tracepoints in an LD_PRELOADed build of the library",
    "ebpf-force": "uprobe + uretprobe -> ring buffer, BPF_RB_FORCE_WAKEUP (the seed's eBPF)",
    "ebpf-adaptive": "uprobe + uretprobe -> ring buffer, wake-up flags 0 (kernel decides)",
    "ebpf-batched": "uprobe + uretprobe -> ring buffer, BPF_RB_NO_WAKEUP, consumer polls 1 ms",
    "ebpf-floor": "the same uprobe + uretprobe with empty BPF programs",
    "bpftrace": "bpftrace count() on uprobe + uretprobe, in-kernel aggregation",
}


# ---- errors and signals ---------------------------------------------------------------------


class TrialError(Exception):
    """Ends the trial with one line on stderr and this exit status."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


class Stopped(Exception):
    def __init__(self, signum: int) -> None:
        super().__init__(f"stopped by signal {signum}")
        self.signum = signum


def _on_stop_signal(signum: int, _frame: object) -> None:
    # Once: the clean-up that follows must not be interrupted by a second signal.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise Stopped(signum)


def say(message: str) -> None:
    print(f"{PROG}: {' '.join(message.split())}", file=sys.stderr, flush=True)


def usage_error(message: str) -> NoReturn:
    say(f"error: {message}")
    sys.exit(2)


def last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ""


# ---- arguments ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Args:
    variant: str
    duration_us: int
    calls: int
    samples: int
    warmup: int


def _whole(flag: str, text: str) -> int:
    if not text.isdigit():
        usage_error(f"{flag}={text} is not a whole number")
    return int(text)


def _print_help() -> None:
    print(__doc__.strip())
    print("\nvariants:")
    for name, what in VARIANTS.items():
        print(f"  {name:14} {what}")
    # Named like bench.h's usage, so the conformance test compares them with the spec.
    print("params (--param NAME=VALUE):")
    print(f"  {'duration_us':14} microseconds one call of the traced function busy-waits")
    print(f"  {'calls':14} calls the app makes (the spec turns auto/N into a count)")
    sys.exit(0)


def parse_args(argv: Sequence[str]) -> Args:
    """The protocol's arguments; anything wrong is one line naming the fix, exit 2."""
    variant: str | None = None
    params: dict[str, str] = {}
    samples, warmup = 10, 1
    it = iter(argv)
    for arg in it:
        name, eq, inline = arg.partition("=")
        if arg in ("-h", "--help"):
            _print_help()
        if name not in ("--variant", "--param", "--samples", "--warmup"):
            usage_error(f"unknown argument '{arg}' (see --help)")
        value = inline if eq else next(it, None)
        if value is None:
            usage_error(f"{name} needs a value")
        if name == "--variant":
            variant = value
        elif name == "--samples":
            samples = _whole("--samples", value)
        elif name == "--warmup":
            warmup = _whole("--warmup", value)
        else:
            key, sep, val = value.partition("=")
            if not sep or key not in ("duration_us", "calls"):
                usage_error(f"--param {value}: expected duration_us=US or calls=N")
            if key in params:
                usage_error(f"--param {key} is given twice")
            params[key] = val
    if variant is None:
        usage_error(f"--variant is required (one of {', '.join(VARIANTS)})")
    if variant not in VARIANTS:
        usage_error(f"unknown variant '{variant}' (known: {', '.join(VARIANTS)})")
    for key in ("duration_us", "calls"):
        if key not in params:
            usage_error(f"--param {key}=... is required (e.g. --param duration_us=100 "
                        "--param calls=10000)")
    duration = _whole("--param duration_us", params["duration_us"])
    calls = _whole("--param calls", params["calls"])
    if duration > MAX_DURATION_US:
        usage_error(f"--param duration_us={duration} is above {MAX_DURATION_US} (1 s per call)")
    if samples < 1:
        usage_error("--samples must be at least 1")
    if calls < samples + warmup:
        usage_error(f"--param calls={calls} is fewer than --samples + --warmup = "
                    f"{samples + warmup} batches of at least one call; raise calls")
    return Args(variant, duration, calls, samples, warmup)


# ---- processes ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Placement:
    """The app on the CPU this trial was pinned to; tracers' own processes on the others.

    The harness pins a trial to one CPU (the harness runs on the rest). A tracer daemon the
    harness started runs where the harness runs, so the eBPF consumer and bpftrace go there
    too: every tracer's user-space side competes with the app for a CPU the same way (not at
    all). Unpinned (a run by hand): nobody is placed.
    """

    app_cpu: int | None
    tracer_cpus: frozenset[int] | None

    @staticmethod
    def detect() -> Placement:
        mine = os.sched_getaffinity(0)
        if len(mine) != 1:
            return Placement(None, None)
        app_cpu = next(iter(mine))
        others = frozenset(_online_cpus()) - {app_cpu}
        return Placement(app_cpu, others or None)

    def tracer_preexec(self) -> Any:
        cpus = self.tracer_cpus
        return (lambda: os.sched_setaffinity(0, cpus)) if cpus else None


def private_library(workdir: Path) -> Path:
    """This trial's own copy of the traced library, which the app loads (LD_LIBRARY_PATH
    wins over its RUNPATH) and the uprobes attach to.

    A uprobe belongs to a file (an inode), not to a process: on the shared build, a second
    run's app would hit this run's probes and be counted. A private file keeps concurrent
    runs apart at no cost per call; every variant loads its copy, so all start alike."""
    libdir = workdir / "lib"
    if not libdir.exists():
        libdir.mkdir()
        shutil.copy2(PLAIN_LIB, libdir / PLAIN_LIB.name)
    return libdir / PLAIN_LIB.name


def _online_cpus() -> set[int]:
    text = Path("/sys/devices/system/cpu/online").read_text().strip()
    cpus: set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


@dataclass
class Reaped:
    status: int  # exit code, or 128 + signal
    user_s: float
    sys_s: float
    max_rss_kib: int
    signum: int | None = None  # the signal that killed it

    def ended(self) -> str:
        """'killed by SIGKILL' or 'exit status 1': how a tracer's process ended."""
        if self.signum is not None:
            return f"killed by {signal.Signals(self.signum).name}"
        return f"exit status {self.status}"


def signal_child(proc: subprocess.Popen[bytes], sig: int) -> None:
    """os.kill, not Popen.send_signal: that one polls first, and a poll reaps a child that
    just died, taking its rusage with it (wait4 then finds no child)."""
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, sig)


def reap(proc: subprocess.Popen[bytes], timeout: float) -> Reaped | None:
    """wait4 with a deadline, for the child's rusage (Popen.wait gives none). None: still
    running at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        if proc.returncode is not None:  # reaped before; nothing more to learn
            code = proc.returncode
            return Reaped(code if code >= 0 else 128 - code, 0.0, 0.0, 0,
                          -code if code < 0 else None)
        pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            code = os.waitstatus_to_exitcode(status)
            proc.returncode = code  # reaped: Popen must not wait for this pid again
            return Reaped(code if code >= 0 else 128 - code, ru.ru_utime, ru.ru_stime,
                          ru.ru_maxrss, -code if code < 0 else None)
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.005)


def terminate(proc: subprocess.Popen[bytes] | None, grace: float = 3.0) -> None:
    """SIGTERM, then SIGKILL after the grace; always reaped."""
    if proc is None or proc.returncode is not None:
        return
    signal_child(proc, signal.SIGTERM)
    if reap(proc, grace) is None:
        signal_child(proc, signal.SIGKILL)
        reap(proc, 10.0)


def run_command(argv: Sequence[str], what: str, timeout: float = COMMAND_TIMEOUT_S
                ) -> subprocess.CompletedProcess[str]:
    """A control command (lttng, babeltrace2); its failure ends the trial, naming it."""
    try:
        res = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout,
                             stdin=subprocess.DEVNULL, check=False)
    except subprocess.TimeoutExpired:
        raise TrialError(f"failed to {what}: no answer within {timeout:g} s") from None
    except OSError as exc:
        raise TrialError(f"failed to {what}: {argv[0]}: {exc.strerror}") from None
    if res.returncode != 0:
        detail = last_line(res.stderr) or last_line(res.stdout) or f"exit {res.returncode}"
        raise TrialError(f"failed to {what}: {detail}")
    return res


def _read_json_lines(text: str) -> Iterator[dict[str, Any]]:
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue  # bpftrace writes empty lines to its child's stdout at exit
        try:
            obj = json.loads(line)
        except ValueError:
            raise TrialError(f"the app printed a line that is not JSON: {line[:120]!r}") from None
        if isinstance(obj, dict):
            yield obj


# ---- what a tracer recorded ---------------------------------------------------------------


@dataclass
class Recorded:
    """What a tracer says it recorded, and what it cost outside the app."""

    expected: int
    captured: int
    dropped: int
    trace_bytes: int = 0
    cpu_s: float = 0.0
    rss_kib: float = 0.0
    counters: dict[str, float] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class AppRun:
    meta: dict[str, Any]
    per_call_ns: list[float]
    wall_ns: int
    user_s: float
    sys_s: float
    max_rss_kib: int
    launcher_cpu_s: float
    involuntary_switches: int


class Tracer:
    """No tracing: the baseline, and the interface every tracer fills in."""

    records_events = False

    def __init__(self, workdir: Path, place: Placement) -> None:
        self.workdir = workdir
        self.place = place
        self.library = private_library(workdir)

    def start(self) -> None:
        """Everything up to the moment the app may start."""

    # True: the app is held before exec until follow(pid) has run (see timed_exec --hold).
    follows_pid = False

    def follow(self, pid: int) -> None:
        """Told the app's PID before it runs."""

    def app_env(self) -> dict[str, str]:
        return {}

    def wrap(self, app_argv: list[str]) -> list[str]:
        """The command that runs the app (a tracer may run it as its own child)."""
        return app_argv

    def after_app(self, proc: subprocess.Popen[bytes], reaped: Reaped, app: AppRun) -> None:
        """Called with the reaped process that ran the app (the launcher, or a wrapper)."""

    def stop(self, expected: int) -> Recorded:
        return Recorded(expected=0, captured=0, dropped=0)

    def cleanup(self) -> None:
        """Idempotent; runs after success, failure and signals alike."""


# ---- eBPF (bakeoff_tracer) ------------------------------------------------------------------


class EbpfTracer(Tracer):
    def __init__(self, workdir: Path, place: Placement, mode: str) -> None:
        super().__init__(workdir, place)
        self.mode = mode
        self.records_events = mode != "floor"
        self.proc: subprocess.Popen[bytes] | None = None
        self.stderr_path = workdir / "tracer.err"
        self.ready: dict[str, Any] = {}

    def _stderr_tail(self) -> str:
        try:
            return last_line(self.stderr_path.read_text(errors="replace"))
        except OSError:
            return ""

    def start(self) -> None:
        argv = [str(EBPF_TRACER), "--library", str(self.library), "--function", FUNCTION,
                "--mode", self.mode, "--output", str(self.workdir / "trace.bin")]
        with self.stderr_path.open("wb") as err:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                         stderr=err, preexec_fn=self.place.tracer_preexec())
        assert self.proc.stdout is not None
        line = _read_line(self.proc.stdout, START_TIMEOUT_S)
        if not line:
            terminate(self.proc)
            detail = self._stderr_tail() or f"exit status {self.proc.returncode}"
            raise TrialError(f"eBPF tracer did not attach: {detail}")
        self.ready = json.loads(line)

    def stop(self, expected: int) -> Recorded:
        assert self.proc is not None and self.proc.stdout is not None
        gone = reap(self.proc, 0)
        if gone is not None:  # it ended before it was told to: it died while the app ran
            said = "" if gone.signum is not None else self._stderr_tail()
            raise TrialError(f"eBPF tracer (bakeoff_tracer, pid {self.proc.pid}) died during "
                             f"the trial: {gone.ended()}" + (f": {said}" if said else ""))
        signal_child(self.proc, signal.SIGINT)  # stop, drain, report, detach
        reaped = reap(self.proc, STOP_TIMEOUT_S)
        if reaped is None:
            terminate(self.proc)
            raise TrialError(f"eBPF tracer did not finish within {STOP_TIMEOUT_S:g} s of SIGINT")
        report = [o for o in _read_json_lines(self.proc.stdout.read().decode(errors="replace"))
                  if o.get("type") == "tracer_done"]
        if reaped.status != 0 or not report:
            detail = self._stderr_tail() or reaped.ended()
            raise TrialError(f"eBPF tracer failed: {detail}")
        done = report[0]
        if done["malformed"]:
            raise TrialError(f"eBPF tracer read {done['malformed']} malformed records")
        if done["entries"] != done["exits"]:
            # An entry without its exit (or the reverse) is a probe that missed, even if the
            # total happens to add up.
            raise TrialError(f"eBPF tracer saw {done['entries']} entries but {done['exits']} "
                             "exits")
        return Recorded(
            expected=expected if self.records_events else 0,
            captured=int(done["events"]), dropped=int(done["dropped"]),
            trace_bytes=int(done["trace_bytes"]), cpu_s=reaped.user_s + reaped.sys_s,
            rss_kib=reaped.max_rss_kib,
            counters={"consumer_wakeups": float(done["wakeups"])},
            meta={"wakeup": self.mode, "libbpf": self.ready.get("libbpf", "")},
        )

    def cleanup(self) -> None:
        terminate(self.proc)


def _read_line(stream: Any, timeout: float) -> str:
    """One line from a child's stdout, or '' at EOF or after the timeout."""
    buf = b""
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as sel:
        sel.register(stream, selectors.EVENT_READ)
        while not buf.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or not sel.select(timeout=left):
                return ""
            chunk = os.read(stream.fileno(), 1)  # byte by byte: leave the rest in the pipe
            if not chunk:
                return ""
            buf += chunk
    return buf.decode(errors="replace").strip()


# ---- bpftrace -------------------------------------------------------------------------------


class BpftraceTracer(Tracer):
    records_events = True

    def __init__(self, workdir: Path, place: Placement) -> None:
        super().__init__(workdir, place)
        self.output = workdir / "bpftrace.json"
        self.reaped: Reaped | None = None
        self.app: AppRun | None = None

    def start(self) -> None:
        if shutil.which("bpftrace") is None:
            raise TrialError("bpftrace is not installed (apt-get install bpftrace)", 3)

    def wrap(self, app_argv: list[str]) -> list[str]:
        # -c starts the app only once the probes are attached; bpftrace splits the command
        # on spaces and takes no shell quoting, so no path may contain one.
        if any(" " in a for a in app_argv) or " " in str(self.library):
            raise TrialError(f"bpftrace -c cannot run programs from a path with a space "
                             f"({HERE} or TMPDIR); build elsewhere: make BUILD=/no/spaces", 3)
        lib = self.library  # absolute: bpftrace 0.17 resolves relative paths unreliably
        script = (f"uprobe:{lib}:{FUNCTION} {{ @entries = count(); }} "
                  f"uretprobe:{lib}:{FUNCTION} {{ @exits = count(); }}")
        return ["bpftrace", "-f", "json", "-o", str(self.output), "-e", script,
                "-c", " ".join(app_argv)]

    def after_app(self, proc: subprocess.Popen[bytes], reaped: Reaped, app: AppRun) -> None:
        self.reaped, self.app = reaped, app

    def stop(self, expected: int) -> Recorded:
        assert self.reaped is not None and self.app is not None
        if self.reaped.status != 0:
            raise TrialError(f"bpftrace exited with status {self.reaped.status}")
        maps: dict[str, int] = {}
        probes = 0
        for obj in _read_json_lines(self.output.read_text(errors="replace")):
            if obj.get("type") == "attached_probes":
                probes = int(obj["data"]["probes"])
            elif obj.get("type") == "map":
                maps.update({k: int(v) for k, v in obj["data"].items()})
        if probes != 2:
            raise TrialError(f"bpftrace attached {probes} probes, expected 2")
        entries, exits = maps.get("@entries", 0), maps.get("@exits", 0)
        if entries != exits:
            raise TrialError(f"bpftrace counted {entries} entries but {exits} exits")
        # wait4 of bpftrace includes its reaped children: the launcher and the app. What is
        # left is bpftrace itself (start-up and LLVM code generation included).
        app = self.app
        cpu = (self.reaped.user_s + self.reaped.sys_s - app.user_s - app.sys_s
               - app.launcher_cpu_s)
        return Recorded(expected=expected, captured=entries + exits, dropped=0, trace_bytes=0,
                        cpu_s=max(cpu, 0.0), rss_kib=self.reaped.max_rss_kib)


# ---- LTTng ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class LttngDaemons:
    """The session daemon the lttng client talks to and its children (the consumer daemons,
    which it spawns on the first session, and the run-as helper)."""

    sessiond: int

    @staticmethod
    def find() -> LttngDaemons | None:
        if os.geteuid() == 0:
            rundir = Path("/var/run/lttng")
        else:
            rundir = Path(os.environ.get("LTTNG_HOME", os.path.expanduser("~"))) / ".lttng"
        try:
            # The first line: the daemon rewrites the file without truncating it, so one
            # with a shorter PID than the killed one before it leaves that one's tail.
            pid = int((rundir / "lttng-sessiond.pid").read_text().split("\n", 1)[0])
        except (OSError, ValueError):
            return None
        found = LttngDaemons(pid)
        return found if found.alive() else None

    def alive(self) -> bool:
        """Still running: a killed daemon may stay a zombie a while (PID 1 reaps it late
        here), still named lttng-sessiond in /proc; its state says it is dead."""
        try:
            state = Path(f"/proc/{self.sessiond}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return False
        return state not in ("Z", "X") and _comm(self.sessiond) == "lttng-sessiond"

    def pids(self) -> list[int]:
        return [self.sessiond, *_children(self.sessiond)]

    def consumerds(self) -> list[int]:
        return [p for p in _children(self.sessiond) if _comm(p).startswith("lttng-consumerd")]

    def cpu_ns(self) -> dict[int, int]:
        return {p: _task_cpu_ns(p) for p in self.pids()}

    def cpu_ns_since(self, before: dict[int, int]) -> int:
        """A daemon spawned since (a consumer daemon, at the first session) counts whole."""
        return sum(ns - before.get(p, 0) for p, ns in self.cpu_ns().items())


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _children(pid: int) -> Iterator[int]:
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            # The comm field may hold spaces; ppid is the second field after its ')'.
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid:
            yield int(stat.parent.name)


def _task_cpu_ns(pid: int) -> int:
    """On-CPU time of every thread of pid, in ns (schedstat: exact, where /proc/PID/stat
    counts 10 ms ticks). Threads that exited are not counted."""
    total = 0
    for f in Path(f"/proc/{pid}/task").glob("*/schedstat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            total += int(f.read_text().split()[0])
    return total


def _rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


class LttngTracer(Tracer):
    records_events = True
    # LTTng enables events per registered app of the user, whatever its session: without
    # the process tracker, a concurrent run's app would write into this session.
    follows_pid = True

    def __init__(self, workdir: Path, place: Placement, session: str) -> None:
        super().__init__(workdir, place)
        self.session = session
        self.trace_dir = workdir / "trace"
        self.created = False
        self.daemons: LttngDaemons | None = None
        self.cpu_before: dict[int, int] = {}

    def lttng(self, *args: str, what: str) -> subprocess.CompletedProcess[str]:
        # -n: never spawn a session daemon; one left behind by a trial would outlive the run.
        try:
            return run_command(["lttng", "-n", *args], what)
        except TrialError as exc:
            self.require_daemon(f"; {exc}")
            raise

    def require_daemon(self, detail: str = "") -> None:
        """The daemon this trial started with must still be the one running: a killed one
        took the session, its buffers and their events with it (and a new one, started by
        another run meanwhile, knows nothing of this trial)."""
        if self.daemons is not None and not self.daemons.alive():
            raise TrialError(f"lttng-sessiond (pid {self.daemons.sessiond}) died during the "
                             f"trial{detail}")

    def start(self) -> None:
        for tool in ("lttng", "babeltrace2"):
            if shutil.which(tool) is None:
                raise TrialError(f"{tool} is not installed (apt-get install lttng-tools "
                                 "babeltrace2)", 3)
        if not LTTNG_LIB.exists():
            raise TrialError(f"{LTTNG_LIB.name} is not built: install liblttng-ust-dev and "
                             "run make", 3)
        self.daemons = LttngDaemons.find()
        if self.daemons is None:
            raise TrialError("no lttng-sessiond is running: start one with lttng-sessiond "
                             "--daemonize --no-kernel (bakeoff run starts it for you)", 3)
        self.cpu_before = self.daemons.cpu_ns()
        s = self.session
        self.lttng("create", s, f"--output={self.trace_dir}", what="create the LTTng session")
        self.created = True
        self.lttng("enable-channel", "-u", "-s", s, f"--subbuf-size={LTTNG_SUBBUF}",
                   f"--num-subbuf={LTTNG_NUM_SUBBUF}", LTTNG_CHANNEL,
                   what="enable the LTTng channel")
        self.lttng("enable-event", "-u", "-s", s, "-c", LTTNG_CHANNEL, f"{LTTNG_PROVIDER}:*",
                   what="enable the LTTng events")
        # The same facts per event as the eBPF records: the process and the thread.
        self.lttng("add-context", "-u", "-s", s, "-c", LTTNG_CHANNEL, "-t", "vpid", "-t", "vtid",
                   what="add the LTTng contexts")
        self.lttng("untrack", "-u", "-s", s, "--vpid", "--all",
                   what="empty the LTTng process tracker")
        self.lttng("start", s, what="start LTTng tracing")

    def follow(self, pid: int) -> None:
        # Before the app runs, so it registers as a tracked process: nothing is missed.
        self.lttng("track", "-u", "-s", self.session, f"--vpid={pid}",
                   what="track the app with LTTng")

    def app_env(self) -> dict[str, str]:
        return {"LD_PRELOAD": str(LTTNG_LIB)}

    def _channel_stats(self) -> tuple[int, int]:
        res = self.lttng("--mi", "xml", "list", self.session, what="read the LTTng channel")
        ns = {"mi": "https://lttng.org/xml/ns/lttng-mi"}
        root = ET.fromstring(res.stdout)
        for chan in root.iterfind(".//mi:channel", ns):
            if chan.findtext("mi:name", namespaces=ns) == LTTNG_CHANNEL:
                attrs = chan.find("mi:attributes", ns)
                if attrs is None:
                    break
                return (int(attrs.findtext("mi:discarded_events", "0", ns)),
                        int(attrs.findtext("mi:lost_packets", "0", ns)))
        raise TrialError(f"LTTng session {self.session} has no channel {LTTNG_CHANNEL}")

    def _count_events(self) -> int:
        res = run_command(["babeltrace2", str(self.trace_dir), "-c", "sink.utils.counter",
                           "-p", "step=+0"], "read the LTTng trace back with babeltrace2",
                          timeout=600)
        for line in res.stdout.splitlines():
            words = line.split()
            if words[1:] == ["Event", "messages"]:
                return int(words[0])
        raise TrialError("babeltrace2 printed no event count")

    def stop(self, expected: int) -> Recorded:
        assert self.daemons is not None
        self.require_daemon()
        self.lttng("stop", self.session, what="stop LTTng tracing")  # waits for the data
        sessiond_rss = _rss_kib(self.daemons.sessiond)
        consumerd_rss = sum(_rss_kib(p) for p in self.daemons.consumerds())
        discarded, lost_packets = self._channel_stats()
        if lost_packets:
            raise TrialError(f"LTTng lost {lost_packets} packets: their events are not counted "
                             "anywhere, so captured + dropped cannot be checked")
        captured = self._count_events()
        self.lttng("destroy", self.session, what="destroy the LTTng session")
        self.created = False
        cpu_ns = self.daemons.cpu_ns_since(self.cpu_before)
        trace_bytes = sum(f.stat().st_size for f in self.trace_dir.rglob("*") if f.is_file())
        return Recorded(
            expected=expected, captured=captured, dropped=discarded, trace_bytes=trace_bytes,
            cpu_s=cpu_ns / 1e9, rss_kib=sessiond_rss + consumerd_rss,
            counters={"lttng_sessiond_rss_kib": sessiond_rss,
                      "lttng_consumerd_rss_kib": consumerd_rss},
            meta={"lttng_buffers": f"per-uid, {LTTNG_NUM_SUBBUF} x {LTTNG_SUBBUF} per CPU"},
        )

    def cleanup(self) -> None:
        if self.created:
            self.created = False
            with contextlib.suppress(TrialError):
                self.lttng("destroy", self.session, what="destroy the LTTng session")


# ---- the trial ------------------------------------------------------------------------------


def session_name() -> str:
    """bakeoff-<run pid>-<this pid> under bakeoff run (its session hook removes leftovers of
    its own run by that prefix), bakeoff-<this pid> by hand."""
    run = os.environ.get("BAKEOFF_RUN_PID", "")
    return f"bakeoff-{run}-{os.getpid()}" if run.isdigit() else f"bakeoff-{os.getpid()}"


def make_tracer(variant: str, workdir: Path, place: Placement) -> Tracer:
    if variant == "lttng":
        return LttngTracer(workdir, place, session_name())
    if variant.startswith("ebpf-"):
        return EbpfTracer(workdir, place, variant.removeprefix("ebpf-"))
    if variant == "bpftrace":
        return BpftraceTracer(workdir, place)
    return Tracer(workdir, place)


def app_argv(args: Args, place: Placement, hold: bool) -> list[str]:
    cpu = ["--cpu", str(place.app_cpu)] if place.app_cpu is not None else []
    return [str(LAUNCHER), *cpu, *(["--hold"] if hold else []), "--", str(APP),
            "--duration-us", str(args.duration_us), "--calls", str(args.calls),
            "--samples", str(args.samples), "--warmup", str(args.warmup)]


def parse_app_output(stdout: str, stderr: str) -> AppRun:
    meta: dict[str, Any] = {}
    samples: list[float] = []
    exit_line: dict[str, Any] | None = None
    for obj in _read_json_lines(stdout):
        kind = obj.get("type")
        if kind == "meta":
            meta.update({k: v for k, v in obj.items() if k != "type"})
        elif kind == "sample" and obj.get("metric") == "per_call_ns":
            samples.append(float(obj["value"]))
        elif kind == "app_exit":
            exit_line = obj
    if exit_line is None:
        raise TrialError(f"the app launcher reported nothing: {last_line(stderr) or 'no output'}")
    if exit_line["status"] != 0:
        raise TrialError(f"the app failed (status {exit_line['status']}): "
                         f"{last_line(stderr) or 'no message'}")
    return AppRun(meta, samples, int(exit_line["wall_ns"]), exit_line["user_us"] / 1e6,
                  exit_line["sys_us"] / 1e6, int(exit_line["max_rss_kib"]),
                  exit_line["self_cpu_us"] / 1e6, int(exit_line["involuntary_switches"]))


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
            line = _read_line(proc.stdout, START_TIMEOUT_S)
            announced = json.loads(line) if line.startswith("{") else {}
            if announced.get("type") != "app_pid":
                raise TrialError(f"the app launcher did not announce the app: {line!r}")
            tracer.follow(int(announced["pid"]))
            proc.stdin.write(b"go\n")
            proc.stdin.close()
        out, err = _drain(proc)
        reaped = reap(proc, float("inf"))
        assert reaped is not None
        return proc, reaped, out, err


def _drain(proc: subprocess.Popen[bytes]) -> tuple[str, str]:
    """Both pipes to EOF (the child exits, or closes them)."""
    assert proc.stdout is not None and proc.stderr is not None
    chunks: dict[int, list[bytes]] = {proc.stdout.fileno(): [], proc.stderr.fileno(): []}
    with selectors.DefaultSelector() as sel:
        for stream in (proc.stdout, proc.stderr):
            sel.register(stream, selectors.EVENT_READ)
        while sel.get_map():
            for key, _ in sel.select():
                data = os.read(key.fd, 65536)
                if data:
                    chunks[key.fd].append(data)
                else:
                    sel.unregister(key.fileobj)
    return (b"".join(chunks[proc.stdout.fileno()]).decode(errors="replace"),
            b"".join(chunks[proc.stderr.fileno()]).decode(errors="replace"))


def run_trial(args: Args, workdir: Path, tracer: Tracer, place: Placement) -> None:
    tracer.start()
    wrapped = tracer.wrap(app_argv(args, place, tracer.follows_pid))
    # The tracer that runs the app itself (bpftrace) belongs on the tracer CPUs; timed_exec
    # puts the app back on its own.
    preexec = place.tracer_preexec() if wrapped[0] == "bpftrace" else None
    env = {"LD_LIBRARY_PATH": str(tracer.library.parent), **tracer.app_env()}
    proc, reaped, out, err = AppProcess.run(wrapped, env, preexec, tracer)
    if wrapped[0] != str(LAUNCHER) and reaped.signum is not None:
        # The tracer that ran the app (bpftrace) was killed: the app's status and what the
        # tracer printed before (a start-up warning) would only mislead.
        raise TrialError(f"{Path(wrapped[0]).name} (pid {proc.pid}) died during the trial: "
                         f"{reaped.ended()}")
    app = parse_app_output(out, err)
    if reaped.status != 0:
        raise TrialError(f"{wrapped[0]} exited with status {reaped.status}: "
                         f"{last_line(err) or 'no message'}")
    tracer.after_app(proc, reaped, app)
    expected = 2 * args.calls if tracer.records_events else 0
    rec = tracer.stop(expected)
    if rec.captured + rec.dropped != rec.expected:
        raise TrialError(
            f"{args.variant}: {rec.captured} events captured + {rec.dropped} dropped != "
            f"{rec.expected} expected (2 per call x {args.calls} calls): the count is wrong")
    if len(app.per_call_ns) != args.samples:
        raise TrialError(f"the app printed {len(app.per_call_ns)} samples, expected "
                         f"{args.samples}")
    emit(args, place, app, rec)


def emit(args: Args, place: Placement, app: AppRun, rec: Recorded) -> None:
    def line(obj: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")

    meta = {**app.meta, "variant": args.variant, "tracer": VARIANTS[args.variant],
            "app_cpu": place.app_cpu if place.app_cpu is not None else "unpinned",
            "tracer_cpus": sorted(place.tracer_cpus) if place.tracer_cpus else "unpinned",
            **rec.meta}
    line({"type": "meta", **meta})
    for v in app.per_call_ns:
        line({"type": "sample", "metric": "per_call_ns", "value": v})
    for metric, value in (("app_wall_ms", app.wall_ns / 1e6),
                          ("app_cpu_ms", (app.user_s + app.sys_s) * 1e3),
                          ("app_max_rss_kib", float(app.max_rss_kib))):
        line({"type": "sample", "metric": metric, "value": value})
    counters: dict[str, float] = {
        "calls": args.calls, "events_expected": rec.expected, "events_captured": rec.captured,
        "events_dropped": rec.dropped, "trace_bytes": rec.trace_bytes,
        "tracer_cpu_ms": round(rec.cpu_s * 1e3, 3), "tracer_rss_kib": rec.rss_kib,
        "app_user_ms": round(app.user_s * 1e3, 3), "app_sys_ms": round(app.sys_s * 1e3, 3),
        # Preemptions of the app: another process on its CPU stretches every wall-clock
        # figure of this trial (the busy-wait ends on the clock, not on work done).
        "app_involuntary_switches": app.involuntary_switches,
        **rec.counters,
    }
    for name, value in counters.items():
        line({"type": "counter", "name": name, "value": value})
    sys.stdout.flush()


def main(argv: Sequence[str]) -> int:
    args = parse_args(argv)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _on_stop_signal)
    place = Placement.detect()
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
        tracer = make_tracer(args.variant, workdir, place)
        run_trial(args, workdir, tracer, place)
        return 0
    except TrialError as exc:
        say(str(exc))
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


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
