"""The tracers a trial runs the app under: none (the baseline), bakeoff's eBPF tracer
(bakeoff_tracer, three wake-up policies and the empty-program floor), bpftrace, and LTTng-UST.
Each starts before the app, is told the app's PID if it follows one, stops after it, and
says what it recorded and what it cost outside the app (Recorded)."""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bakeoff.room import measured_cpu, partner_cpus, pin_to
from bakeoff.room.program import EXIT_UNMET, Failure

from . import lttng
from .children import (
    Reaped,
    last_line,
    read_json_lines,
    read_line,
    reap,
    run_command,
    signal_child,
    terminate,
)

FUNCTION = "bakeoff_traced_work"
LTTNG_PROVIDER = "bakeoff_traced"
LTTNG_CHANNEL = "bakeoff"
# Per CPU: 8 x 1 MiB. The seed's largest scenario writes 200k events of ~40 B (~8 MB) from
# one CPU; the consumer daemon empties sub-buffers as they fill, so this does not discard
# on this machine. Any discard is counted (LTTng's channel statistics) and reported.
LTTNG_SUBBUF = "1M"
LTTNG_NUM_SUBBUF = "8"
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Build:
    """The build directory the trial runs from: every program of the room sits there."""

    dir: Path

    @property
    def app(self) -> Path:
        return self.dir / "traced_app"

    @property
    def launcher(self) -> Path:
        return self.dir / "timed_exec"

    @property
    def ebpf_tracer(self) -> Path:
        return self.dir / "bakeoff_tracer"

    @property
    def plain_lib(self) -> Path:
        return self.dir / "libbakeoff_traced.so"

    @property
    def lttng_lib(self) -> Path:
        return self.dir / "libbakeoff_traced_lttng.so"


@dataclass(frozen=True)
class Placement:
    """The app on the trial's measured CPU; the tracers' own processes on its partner CPUs.

    Both come from the harness (BAKEOFF_TRIAL_CPUS=measured,partner...: the room declares
    cpus=2), so a tracer's user-space side (the eBPF consumer, bpftrace; the LTTng daemons,
    which the session hook starts there) never competes with the app for its CPU. Not
    pinned (a run by hand, --no-pin): nobody is placed.
    """

    app_cpu: int | None
    tracer_cpus: frozenset[int] | None

    @staticmethod
    def from_env() -> Placement:
        return Placement(measured_cpu(), frozenset(partner_cpus()) or None)

    def tracer_preexec(self) -> Any:
        return pin_to(tuple(sorted(self.tracer_cpus or ())))


def private_library(build: Build, workdir: Path) -> Path:
    """This trial's own copy of the traced library, which the app loads (LD_LIBRARY_PATH
    wins over its RUNPATH) and the uprobes attach to.

    A uprobe belongs to a file (an inode), not to a process: on the shared build, a second
    run's app would hit this run's probes and be counted. A private file keeps concurrent
    runs apart at no cost per call; every variant loads its copy, so all start alike."""
    libdir = workdir / "lib"
    if not libdir.exists():
        libdir.mkdir()
        shutil.copy2(build.plain_lib, libdir / build.plain_lib.name)
    return libdir / build.plain_lib.name



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
class CountedSection:
    """The app's counted batches (--counted-samples): their samples (counted.per_call_ns and
    per_op.<counter>, in order) and what the section cost the app process, so the whole-app
    figures can leave it out."""

    samples: dict[str, list[float]] = field(default_factory=dict)
    calls: int = 0
    wall_ns: int = 0
    user_s: float = 0.0
    sys_s: float = 0.0


@dataclass
class AppRun:
    """The app process as timed_exec saw it: whole-process figures include the counted
    section (CountedSection), which the driver subtracts."""

    meta: dict[str, Any]
    per_call_ns: list[float]
    wall_ns: int
    user_s: float
    sys_s: float
    max_rss_kib: int
    launcher_cpu_s: float
    involuntary_switches: int
    counted: CountedSection = field(default_factory=CountedSection)


class Tracer:
    """No tracing: the baseline, and the interface every tracer fills in."""

    records_events = False

    def __init__(self, build: Build, workdir: Path, place: Placement) -> None:
        self.build = build
        self.workdir = workdir
        self.place = place
        self.library = private_library(build, workdir)

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
    def __init__(self, build: Build, workdir: Path, place: Placement, mode: str) -> None:
        super().__init__(build, workdir, place)
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
        argv = [str(self.build.ebpf_tracer), "--library", str(self.library), "--function", FUNCTION,
                "--mode", self.mode, "--output", str(self.workdir / "trace.bin")]
        with self.stderr_path.open("wb") as err:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                         stderr=err, preexec_fn=self.place.tracer_preexec())
        assert self.proc.stdout is not None
        line = read_line(self.proc.stdout, START_TIMEOUT_S)
        if not line:
            terminate(self.proc)
            detail = self._stderr_tail() or f"exit status {self.proc.returncode}"
            raise Failure(f"eBPF tracer did not attach: {detail}")
        self.ready = json.loads(line)

    def stop(self, expected: int) -> Recorded:
        assert self.proc is not None and self.proc.stdout is not None
        gone = reap(self.proc, 0)
        if gone is not None:  # it ended before it was told to: it died while the app ran
            said = "" if gone.signum is not None else self._stderr_tail()
            raise Failure(f"eBPF tracer (bakeoff_tracer, pid {self.proc.pid}) died during "
                          f"the trial: {gone.ended()}" + (f": {said}" if said else ""))
        signal_child(self.proc, signal.SIGINT)  # stop, drain, report, detach
        reaped = reap(self.proc, STOP_TIMEOUT_S)
        if reaped is None:
            terminate(self.proc)
            raise Failure(f"eBPF tracer did not finish within {STOP_TIMEOUT_S:g} s of SIGINT")
        report = [o for o in read_json_lines(self.proc.stdout.read().decode(errors="replace"))
                  if o.get("type") == "tracer_done"]
        if reaped.status != 0 or not report:
            detail = self._stderr_tail() or reaped.ended()
            raise Failure(f"eBPF tracer failed: {detail}")
        done = report[0]
        if done["malformed"]:
            raise Failure(f"eBPF tracer read {done['malformed']} malformed records")
        if done["entries"] != done["exits"]:
            # An entry without its exit (or the reverse) is a probe that missed, even if the
            # total happens to add up.
            raise Failure(f"eBPF tracer saw {done['entries']} entries but {done['exits']} "
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


# ---- bpftrace -------------------------------------------------------------------------------


class BpftraceTracer(Tracer):
    records_events = True

    def __init__(self, build: Build, workdir: Path, place: Placement) -> None:
        super().__init__(build, workdir, place)
        self.output = workdir / "bpftrace.json"
        self.reaped: Reaped | None = None
        self.app: AppRun | None = None

    def start(self) -> None:
        if shutil.which("bpftrace") is None:
            raise Failure("bpftrace is not installed (apt-get install bpftrace)", EXIT_UNMET)

    def wrap(self, app_argv: list[str]) -> list[str]:
        # -c starts the app only once the probes are attached; bpftrace splits the command
        # on spaces and takes no shell quoting, so no path may contain one.
        if any(" " in a for a in app_argv) or " " in str(self.library):
            raise Failure(f"bpftrace -c cannot run programs from a path with a space "
                          f"({self.build.dir} or TMPDIR); build elsewhere: make "
                          "BUILD=/no/spaces", EXIT_UNMET)
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
            raise Failure(f"bpftrace exited with status {self.reaped.status}")
        maps: dict[str, int] = {}
        probes = 0
        for obj in read_json_lines(self.output.read_text(errors="replace")):
            if obj.get("type") == "attached_probes":
                probes = int(obj["data"]["probes"])
            elif obj.get("type") == "map":
                maps.update({k: int(v) for k, v in obj["data"].items()})
        if probes != 2:
            raise Failure(f"bpftrace attached {probes} probes, expected 2")
        entries, exits = maps.get("@entries", 0), maps.get("@exits", 0)
        if entries != exits:
            raise Failure(f"bpftrace counted {entries} entries but {exits} exits")
        # wait4 of bpftrace includes its reaped children: the launcher and the app. What is
        # left is bpftrace itself (start-up and LLVM code generation included).
        app = self.app
        cpu = (self.reaped.user_s + self.reaped.sys_s - app.user_s - app.sys_s
               - app.launcher_cpu_s)
        return Recorded(expected=expected, captured=entries + exits, dropped=0, trace_bytes=0,
                        cpu_s=max(cpu, 0.0), rss_kib=self.reaped.max_rss_kib)


# ---- LTTng ----------------------------------------------------------------------------------


class LttngTracer(Tracer):
    records_events = True
    # LTTng enables events per registered app of the user, whatever its session: without
    # the process tracker, a concurrent run's app would write into this session.
    follows_pid = True

    def __init__(self, build: Build, workdir: Path, place: Placement, session: str) -> None:
        super().__init__(build, workdir, place)
        self.session = session
        self.trace_dir = workdir / "trace"
        self.created = False
        self.daemons: lttng.Daemons | None = None
        self.cpu_before: dict[int, int] = {}

    def client(self, *args: str, what: str) -> subprocess.CompletedProcess[str]:
        # -n: never spawn a session daemon; one left behind by a trial would outlive the run.
        try:
            return run_command(["lttng", "-n", *args], what)
        except Failure as exc:
            self.require_daemon(f"; {exc}")
            raise

    def require_daemon(self, detail: str = "") -> None:
        """The daemon this trial started with must still be the one running: a killed one
        took the session, its buffers and their events with it (and a new one, started by
        another run meanwhile, knows nothing of this trial)."""
        if self.daemons is not None and not self.daemons.alive():
            raise Failure(f"lttng-sessiond (pid {self.daemons.sessiond}) died during the "
                          f"trial{detail}")

    def start(self) -> None:
        for tool in ("lttng", "babeltrace2"):
            if shutil.which(tool) is None:
                raise Failure(f"{tool} is not installed (apt-get install lttng-tools "
                              "babeltrace2)", EXIT_UNMET)
        if not self.build.lttng_lib.exists():
            raise Failure(f"{self.build.lttng_lib.name} is not built: install "
                          "liblttng-ust-dev and run make", EXIT_UNMET)
        self.daemons = lttng.Daemons.find()
        if self.daemons is None:
            raise Failure("no lttng-sessiond is running: start one with lttng-sessiond "
                          "--daemonize --no-kernel (bakeoff run starts it for you)", EXIT_UNMET)
        self.cpu_before = self.daemons.cpu_ns()
        s = self.session
        self.client("create", s, f"--output={self.trace_dir}", what="create the LTTng session")
        self.created = True
        self.client("enable-channel", "-u", "-s", s, f"--subbuf-size={LTTNG_SUBBUF}",
                   f"--num-subbuf={LTTNG_NUM_SUBBUF}", LTTNG_CHANNEL,
                   what="enable the LTTng channel")
        self.client("enable-event", "-u", "-s", s, "-c", LTTNG_CHANNEL, f"{LTTNG_PROVIDER}:*",
                   what="enable the LTTng events")
        # The same facts per event as the eBPF records: the process and the thread.
        self.client("add-context", "-u", "-s", s, "-c", LTTNG_CHANNEL, "-t", "vpid", "-t", "vtid",
                   what="add the LTTng contexts")
        self.client("untrack", "-u", "-s", s, "--vpid", "--all",
                   what="empty the LTTng process tracker")
        self.client("start", s, what="start LTTng tracing")

    def follow(self, pid: int) -> None:
        # Before the app runs, so it registers as a tracked process: nothing is missed.
        self.client("track", "-u", "-s", self.session, f"--vpid={pid}",
                   what="track the app with LTTng")

    def app_env(self) -> dict[str, str]:
        return {"LD_PRELOAD": str(self.build.lttng_lib)}

    def _channel_stats(self) -> tuple[int, int]:
        res = self.client("--mi", "xml", "list", self.session, what="read the LTTng channel")
        stats = lttng.channel_stats(res.stdout, LTTNG_CHANNEL)
        if stats is None:
            raise Failure(f"LTTng session {self.session} has no channel {LTTNG_CHANNEL}")
        return stats

    def _count_events(self) -> int:
        res = run_command(["babeltrace2", str(self.trace_dir), "-c", "sink.utils.counter",
                           "-p", "step=+0"], "read the LTTng trace back with babeltrace2",
                          timeout=600)
        for line in res.stdout.splitlines():
            words = line.split()
            if words[1:] == ["Event", "messages"]:
                return int(words[0])
        raise Failure("babeltrace2 printed no event count")

    def stop(self, expected: int) -> Recorded:
        assert self.daemons is not None
        self.require_daemon()
        self.client("stop", self.session, what="stop LTTng tracing")  # waits for the data
        sessiond_rss = lttng.rss_kib(self.daemons.sessiond)
        consumerd_rss = sum(lttng.rss_kib(p) for p in self.daemons.consumerds())
        discarded, lost_packets = self._channel_stats()
        if lost_packets:
            raise Failure(f"LTTng lost {lost_packets} packets: their events are not counted "
                          "anywhere, so captured + dropped cannot be checked")
        captured = self._count_events()
        self.client("destroy", self.session, what="destroy the LTTng session")
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
            with contextlib.suppress(Failure):
                self.client("destroy", self.session, what="destroy the LTTng session")
