"""The tracers a trial runs the app under: none (the baseline), bakeoff's eBPF tracer
(bakeoff_tracer, three wake-up policies and the empty-program floor), bpftrace, and LTTng-UST.
Each starts before the app, is told the app's PID if it follows one, stops after it, and
says what it recorded and what it cost outside the app (Recorded).

Under bakeoff run, the eBPF tracers and the LTTng session are the run's (spec.py's session
holds them: HeldEbpf, lttng.HeldSession) and a trial only begins and ends its part of them;
by hand, the trial brings its own up and down."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bakeoff.room import alive, measured_cpu, partner_cpus, pin_to
from bakeoff.room.program import EXIT_UNMET, Failure

from . import lttng
from .children import (
    Reaped,
    last_line,
    read_json_lines,
    read_line,
    reap,
    run_command,
    terminate,
)

FUNCTION = "bakeoff_traced_work"
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

    def __init__(self, build: Build, workdir: Path, place: Placement,
                 library: Path | None = None) -> None:
        self.build = build
        self.workdir = workdir
        self.place = place
        self.library = library or private_library(build, workdir)

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


@dataclass(frozen=True)
class HeldEbpf:
    """A bakeoff_tracer held by the run's session (spec.py) for one policy: its control
    socket (@NAME, in the abstract namespace: no file to remove, no path length to mind),
    its PID, and the run's copy of the library its probes are on (one per policy: a uprobe
    belongs to a file, so each policy's app loads a file only its tracer probes)."""

    socket: str
    pid: int
    library: Path

    SOCKET_ENV = "BAKEOFF_EBPF_SOCKET"
    PID_ENV = "BAKEOFF_EBPF_PID"
    LIBRARY_ENV = "BAKEOFF_EBPF_LIBRARY"

    def env(self) -> dict[str, str]:
        return {self.SOCKET_ENV: str(self.socket), self.PID_ENV: str(self.pid),
                self.LIBRARY_ENV: str(self.library)}

    @staticmethod
    def from_env() -> HeldEbpf | None:
        env = os.environ
        if not all(k in env for k in (HeldEbpf.SOCKET_ENV, HeldEbpf.PID_ENV,
                                      HeldEbpf.LIBRARY_ENV)):
            return None
        return HeldEbpf(env[HeldEbpf.SOCKET_ENV], int(env[HeldEbpf.PID_ENV]),
                        Path(env[HeldEbpf.LIBRARY_ENV]))


def control_socket(owner: str, mode: str) -> str:
    """The abstract socket name of a bakeoff_tracer: bakeoff-<owner pid>-<owner>-<mode>."""
    return f"@bakeoff-{os.getpid()}-{owner}-{mode}"


def ebpf_tracer_argv(build: Build, library: Path, mode: str, control: str) -> list[str]:
    """How bakeoff_tracer is started, held by the run (spec.py) or by a trial run by hand."""
    return [str(build.ebpf_tracer), "--library", str(library), "--function", FUNCTION,
            "--mode", mode, "--control", str(control)]


class EbpfTracer(Tracer):
    """One trial's part of a bakeoff_tracer: `begin FILE` before the app, `end` after it,
    which answers with this trial's counts (bakeoff_tracer.c). The tracer is the run's
    (held) or, by hand, this trial's own, started here and stopped in cleanup."""

    def __init__(self, build: Build, workdir: Path, place: Placement, mode: str,
                 held: HeldEbpf | None = None) -> None:
        super().__init__(build, workdir, place, held.library if held else None)
        self.mode = mode
        self.records_events = mode != "floor"
        self.held = held
        self.own: subprocess.Popen[bytes] | None = None
        self.stderr_path = workdir / "tracer.err"
        self.conn: socket.socket | None = None
        self.reader: Any = None
        self.cpu_before = 0
        self.ready: dict[str, Any] = {}
        self.tracer: HeldEbpf | None = None

    def _stderr_tail(self) -> str:
        try:
            return last_line(self.stderr_path.read_text(errors="replace"))
        except OSError:
            return ""

    def _own_tracer(self) -> HeldEbpf:
        """By hand: this trial's own tracer, started and attached here."""
        control = control_socket("trial", self.mode)
        argv = ebpf_tracer_argv(self.build, self.library, self.mode, control)
        with self.stderr_path.open("wb") as err:
            self.own = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=err, preexec_fn=self.place.tracer_preexec())
        assert self.own.stdout is not None
        line = read_line(self.own.stdout, START_TIMEOUT_S)
        if not line:
            terminate(self.own)
            detail = self._stderr_tail() or f"exit status {self.own.returncode}"
            raise Failure(f"eBPF tracer did not attach: {detail}")
        self.ready = json.loads(line)
        return HeldEbpf(control, self.own.pid, self.library)

    def _died(self, tracer: HeldEbpf) -> Failure:
        how = ""
        if self.own is not None and (gone := reap(self.own, 1.0)) is not None:
            how = f": {gone.ended()}"
        return Failure(f"eBPF tracer (bakeoff_tracer, pid {tracer.pid}) died during the "
                       f"trial{how}" + (f": {tail}" if (tail := self._stderr_tail()) else ""))

    def _answer(self, tracer: HeldEbpf, timeout: float, expect: str) -> dict[str, Any]:
        assert self.conn is not None and self.reader is not None
        self.conn.settimeout(timeout)
        try:
            line = self.reader.readline().decode(errors="replace")
        except TimeoutError:
            raise Failure(f"eBPF tracer (pid {tracer.pid}) did not answer within "
                          f"{timeout:g} s") from None
        except OSError:
            raise self._died(tracer) from None
        if not line:
            raise self._died(tracer)
        said = json.loads(line)
        if said.get("type") == "error":
            raise Failure(f"eBPF tracer: {said.get('message', 'failed')}")
        if said.get("type") != expect:
            raise Failure(f"eBPF tracer answered {line.strip()!r}, expected {expect}")
        return dict(said)

    def start(self) -> None:
        tracer = self.held or self._own_tracer()
        self.conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.conn.connect("\0" + tracer.socket.removeprefix("@"))
        except OSError as exc:
            raise Failure(f"eBPF tracer (pid {tracer.pid}) does not answer on "
                          f"{tracer.socket}: {exc.strerror or exc}") from None
        self.reader = self.conn.makefile("rb", buffering=0)
        self.cpu_before = lttng.task_cpu_ns(tracer.pid)
        self.conn.sendall(f"begin {self.workdir / 'trace.bin'}\n".encode())
        self.tracer = tracer
        self._answer(tracer, START_TIMEOUT_S, "begun")

    def stop(self, expected: int) -> Recorded:
        tracer = self.tracer
        assert self.conn is not None and tracer is not None
        try:
            self.conn.sendall(b"end\n")
        except OSError:
            raise self._died(tracer) from None
        done = self._answer(tracer, STOP_TIMEOUT_S, "tracer_done")
        cpu_ns = lttng.task_cpu_ns(tracer.pid) - self.cpu_before
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
            trace_bytes=int(done["trace_bytes"]), cpu_s=cpu_ns / 1e9,
            rss_kib=lttng.peak_rss_kib(tracer.pid),
            counters={"consumer_wakeups": float(done["wakeups"])},
            meta={"wakeup": self.mode, "ebpf_tracer": "held by the run" if self.held
                  else "started by the trial", "ebpf_tracer_pid": tracer.pid,
                  **({"libbpf": self.ready["libbpf"]} if "libbpf" in self.ready else {})},
        )

    def cleanup(self) -> None:
        # Closing the connection abandons the trial in the tracer (it serves the next).
        if self.reader is not None:
            self.reader.close()
        if self.conn is not None:
            self.conn.close()
        self.conn = self.reader = None
        terminate(self.own)


# ---- bpftrace -------------------------------------------------------------------------------


def bpftrace_script(library: Path) -> str:
    """Two counts, in the kernel. Not keyed by process: a key (@entries[pid]) made a call
    at 0 µs 0.15-0.35 µs dearer than the seed's unkeyed count (docs/notes/bpftrace-held-
    20261130-epyc.md); a held bpftrace's library is the run's own copy, so only the run's
    apps hit it, one trial at a time, and a trial reads its counts as the difference of two
    prints."""
    lib = library  # absolute: bpftrace 0.17 resolves relative paths unreliably
    return (f"uprobe:{lib}:{FUNCTION} {{ @entries = count(); }} "
            f"uretprobe:{lib}:{FUNCTION} {{ @exits = count(); }}")


def held_bpftrace_argv(library: Path, output: Path) -> list[str]:
    """How the run's session starts its bpftrace (run_hold.py): JSON lines to output, where
    SIGUSR1 makes it print its maps."""
    return ["bpftrace", "-f", "json", "-o", str(output), "-e", bpftrace_script(library)]


def bpftrace_attached(output: Path) -> int:
    """How many probes bpftrace said it attached, from its output (0: not yet)."""
    try:
        text = output.read_text(errors="replace")
    except OSError:
        return 0
    for obj in read_json_lines(text):
        if obj.get("type") == "attached_probes":
            return int(obj["data"]["probes"])
    return 0


def bpftrace_print(pid: int, output: Path, offset: int, timeout_s: float
                   ) -> tuple[dict[str, int], int] | None:
    """SIGUSR1 to a held bpftrace, and its two counts as it prints them: the first print of
    both maps past offset in its output (whole lines only), and the offset past that print.
    None when bpftrace is gone; Failure when it printed nothing within timeout_s."""
    try:
        os.kill(pid, signal.SIGUSR1)
    except ProcessLookupError:
        return None
    deadline = time.monotonic() + timeout_s
    while True:
        with output.open("rb") as f:
            f.seek(offset)
            chunk = f.read()
        maps: dict[str, int] = {}
        whole = chunk[:chunk.rfind(b"\n") + 1]
        for obj in read_json_lines(whole.decode(errors="replace")):
            if obj.get("type") == "map":
                maps.update({k: int(v) for k, v in obj["data"].items()})
        if "@entries" in maps and "@exits" in maps:
            return maps, offset + len(whole)
        if not alive(pid):
            return None
        if time.monotonic() > deadline:
            raise Failure(f"bpftrace (pid {pid}) did not print its maps within "
                          f"{timeout_s:g} s of SIGUSR1")
        time.sleep(0.005)


@dataclass(frozen=True)
class HeldBpftrace:
    """A bpftrace held by the run's session (run_hold.py): its PID, the file it writes JSON
    lines to, and the run's copy of the library its probes are on."""

    pid: int
    output: Path
    library: Path

    PID_ENV = "BAKEOFF_BPFTRACE_PID"
    OUTPUT_ENV = "BAKEOFF_BPFTRACE_OUTPUT"
    LIBRARY_ENV = "BAKEOFF_BPFTRACE_LIBRARY"

    def env(self) -> dict[str, str]:
        return {self.PID_ENV: str(self.pid), self.OUTPUT_ENV: str(self.output),
                self.LIBRARY_ENV: str(self.library)}

    @staticmethod
    def from_env() -> HeldBpftrace | None:
        env = os.environ
        keys = (HeldBpftrace.PID_ENV, HeldBpftrace.OUTPUT_ENV, HeldBpftrace.LIBRARY_ENV)
        if not all(k in env for k in keys):
            return None
        return HeldBpftrace(int(env[HeldBpftrace.PID_ENV]), Path(env[HeldBpftrace.OUTPUT_ENV]),
                            Path(env[HeldBpftrace.LIBRARY_ENV]))


class BpftraceTracer(Tracer):
    """bpftrace counting the probes' hits in two maps. Under bakeoff run the bpftrace is the
    run's (HeldBpftrace): after the app, a trial sends it SIGUSR1, on which bpftrace prints
    its maps; the trial's counts are that print less the one before it in the output (the
    previous trial's, or after a start the hold's own check, run_hold.py). Nothing else
    hits the run's copy of the
    library, so nothing else falls between; a trial killed after its app and before its
    print leaves the next trial's counts too high, which fails that trial (the events are
    checked), never silently. By hand, the trial's own bpftrace runs the app (`-c`) and
    prints its maps at exit."""

    records_events = True

    def __init__(self, build: Build, workdir: Path, place: Placement,
                 held: HeldBpftrace | None = None) -> None:
        super().__init__(build, workdir, place, held.library if held else None)
        self.held = held
        self.output = held.output if held else workdir / "bpftrace.json"
        self.reaped: Reaped | None = None
        self.app: AppRun | None = None
        self.offset = 0  # held: where the next print of the maps begins in its output
        self.before: dict[str, int] = {}
        self.cpu_before = 0

    def start(self) -> None:
        if self.held is None:
            if shutil.which("bpftrace") is None:
                raise Failure("bpftrace is not installed (apt-get install bpftrace)",
                              EXIT_UNMET)
            return
        text = self.output.read_bytes()
        self.offset = len(text)
        self.cpu_before = lttng.task_cpu_ns(self.held.pid)
        self.before = {"@entries": 0, "@exits": 0}  # no print yet: a fresh bpftrace's maps
        for obj in read_json_lines(text.decode(errors="replace")):
            if obj.get("type") == "map":
                self.before.update({k: int(v) for k, v in obj["data"].items()})

    def wrap(self, app_argv: list[str]) -> list[str]:
        if self.held is not None:
            return app_argv
        # -c starts the app only once the probes are attached; bpftrace splits the command
        # on spaces and takes no shell quoting, so no path may contain one.
        if any(" " in a for a in app_argv) or " " in str(self.library):
            raise Failure(f"bpftrace -c cannot run programs from a path with a space "
                          f"({self.build.dir} or TMPDIR); build elsewhere: make "
                          "BUILD=/no/spaces", EXIT_UNMET)
        return ["bpftrace", "-f", "json", "-o", str(self.output), "-e",
                bpftrace_script(self.library), "-c", " ".join(app_argv)]

    def after_app(self, proc: subprocess.Popen[bytes], reaped: Reaped, app: AppRun) -> None:
        self.reaped, self.app = reaped, app

    def _held_died(self) -> Failure:
        assert self.held is not None
        return Failure(f"bpftrace (pid {self.held.pid}) died during the trial")

    def _printed_maps(self) -> dict[str, int]:
        """The held bpftrace's two counts as it prints them on SIGUSR1 after this trial's
        app (bpftrace_print); the offset moves past the print."""
        assert self.held is not None
        printed = bpftrace_print(self.held.pid, self.output, self.offset, STOP_TIMEOUT_S)
        if printed is None:
            raise self._held_died()
        maps, self.offset = printed
        return maps

    def stop(self, expected: int) -> Recorded:
        if self.held is not None:
            return self._stop_held(expected)
        assert self.reaped is not None and self.app is not None
        if self.reaped.status != 0:
            raise Failure(f"bpftrace exited with status {self.reaped.status}")
        maps: dict[str, int] = {}
        for obj in read_json_lines(self.output.read_text(errors="replace")):
            if obj.get("type") == "map":
                maps.update({k: int(v) for k, v in obj["data"].items()})
        self._check(bpftrace_attached(self.output), maps)
        # wait4 of bpftrace includes its reaped children: the launcher and the app. What is
        # left is bpftrace itself (start-up and LLVM code generation included).
        app = self.app
        cpu = (self.reaped.user_s + self.reaped.sys_s - app.user_s - app.sys_s
               - app.launcher_cpu_s)
        return Recorded(expected=expected,
                        captured=maps.get("@entries", 0) + maps.get("@exits", 0),
                        dropped=0, trace_bytes=0, cpu_s=max(cpu, 0.0),
                        rss_kib=self.reaped.max_rss_kib,
                        meta={"bpftrace": "started by the trial"})

    def _stop_held(self, expected: int) -> Recorded:
        assert self.held is not None
        after = self._printed_maps()
        maps = {name: after[name] - self.before[name] for name in ("@entries", "@exits")}
        self._check(bpftrace_attached(self.output), maps)
        # Its CPU from before the app to after the print: the probes' hits run in the app;
        # what is here is bpftrace's own polling and the print.
        cpu_ns = lttng.task_cpu_ns(self.held.pid) - self.cpu_before
        return Recorded(expected=expected, captured=maps["@entries"] + maps["@exits"],
                        dropped=0, trace_bytes=0, cpu_s=cpu_ns / 1e9,
                        rss_kib=lttng.peak_rss_kib(self.held.pid),
                        meta={"bpftrace": "held by the run", "bpftrace_pid": self.held.pid})

    @staticmethod
    def _check(probes: int, maps: dict[str, int]) -> None:
        if probes != 2:
            raise Failure(f"bpftrace attached {probes} probes, expected 2")
        entries, exits = maps.get("@entries", 0), maps.get("@exits", 0)
        if entries != exits:
            raise Failure(f"bpftrace counted {entries} entries but {exits} exits")


# ---- LTTng ----------------------------------------------------------------------------------


class LttngTracer(Tracer):
    """LTTng-UST: the instrumented library LD_PRELOADed into the app, and a recording
    session that tracks the app's PID. Under bakeoff run the session is the run's
    (lttng.HeldSession, named in the environment): a trial starts it, tracks its app, stops
    it and counts its own packets (lttng.trial_packets). By hand the trial creates its own
    session and destroys it after."""

    records_events = True
    # LTTng enables events per registered app of the user, whatever its session: without
    # the process tracker, a concurrent run's app would write into this session.
    follows_pid = True

    def __init__(self, build: Build, workdir: Path, place: Placement, session: str) -> None:
        super().__init__(build, workdir, place)
        held = os.environ.get(lttng.HELD_SESSION_ENV)
        self.held = held is not None
        self.session = held or session
        self.output = (Path(os.environ[lttng.HELD_OUTPUT_ENV]) if held
                       else workdir / "trace")
        self.created = False
        self.started = False
        self.tracked: int | None = None
        self.daemons: lttng.Daemons | None = None
        self.cpu_before: dict[int, int] = {}
        self.sizes_before: dict[str, int] = {}
        self.stats_before = (0, 0)

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
        if not self.held:
            self.created = True
            for args, what in lttng.session_setup(self.session, self.output):
                self.client(*args, what=what)
        # The channel's statistics and the stream files grow across the run's trials: what
        # they are now is where this trial starts.
        listed = self._list()
        if self.held and lttng.session_enabled(listed):
            # A trial killed before its clean-up (SIGKILL) left the run's session started.
            self.client("stop", self.session, what="stop LTTng tracing")
            listed = self._list()
        self.stats_before = self._channel_stats(listed)
        if self.output.exists():
            self.sizes_before = lttng.stream_sizes(self.output)
        self.started = True
        self.client("start", self.session, what="start LTTng tracing")

    def follow(self, pid: int) -> None:
        # Before the app runs, so it registers as a tracked process: nothing is missed.
        self.client("track", "-u", "-s", self.session, f"--vpid={pid}",
                    what="track the app with LTTng")
        self.tracked = pid

    def app_env(self) -> dict[str, str]:
        # LTTng-UST's constructor waits this long (ms) for the session daemon to register the
        # app with the session's events enabled; past its default (3 s) the app goes on
        # untraced. A loaded machine's emulated guest took longer: 2000 of its calls went
        # unrecorded, the count check failed (docs/notes/kernels-rooms-20261129-epyc.md).
        # Past 30 s the count check still says so. indep_trace.c waits as long.
        return {"LD_PRELOAD": str(self.build.lttng_lib), "LTTNG_UST_REGISTER_TIMEOUT": "30000"}

    def _list(self) -> str:
        return self.client("--mi", "xml", "list", self.session,
                           what="read the LTTng channel").stdout

    def _channel_stats(self, listed: str | None = None) -> tuple[int, int]:
        stats = lttng.channel_stats(self._list() if listed is None else listed, lttng.CHANNEL)
        if stats is None:
            raise Failure(f"LTTng session {self.session} has no channel {lttng.CHANNEL}")
        return stats

    def _count_events(self, trace: Path) -> int:
        res = run_command(["babeltrace2", str(trace), "-c", "sink.utils.counter",
                           "-p", "step=+0"], "read the LTTng trace back with babeltrace2",
                          timeout=600)
        for line in res.stdout.splitlines():
            words = line.split()
            if words[1:] == ["Event", "messages"]:
                return int(words[0])
        raise Failure("babeltrace2 printed no event count")

    def _untrack(self) -> None:
        if self.tracked is not None:
            pid, self.tracked = self.tracked, None
            with contextlib.suppress(Failure):
                self.client("untrack", "-u", "-s", self.session, f"--vpid={pid}",
                            what="untrack the app")

    def stop(self, expected: int) -> Recorded:
        assert self.daemons is not None
        self.require_daemon()
        self.client("stop", self.session, what="stop LTTng tracing")  # waits for the data
        self.started = False
        sessiond_rss = lttng.rss_kib(self.daemons.sessiond)
        consumerd_rss = sum(lttng.rss_kib(p) for p in self.daemons.consumerds())
        discarded, lost_packets = (now - before for now, before in
                                   zip(self._channel_stats(), self.stats_before, strict=True))
        if lost_packets:
            raise Failure(f"LTTng lost {lost_packets} packets: their events are not counted "
                          "anywhere, so captured + dropped cannot be checked")
        # This trial's packets alone: a run's held session has every earlier trial's too.
        mine = self.workdir / "trial-trace"
        trace_bytes = lttng.trial_packets(self.output, self.sizes_before, mine)
        captured = self._count_events(mine)
        shutil.rmtree(mine, ignore_errors=True)
        self._untrack()
        if self.created:
            self.client("destroy", self.session, what="destroy the LTTng session")
            self.created = False
        cpu_ns = self.daemons.cpu_ns_since(self.cpu_before)
        return Recorded(
            expected=expected, captured=captured, dropped=discarded, trace_bytes=trace_bytes,
            cpu_s=cpu_ns / 1e9, rss_kib=sessiond_rss + consumerd_rss,
            counters={"lttng_sessiond_rss_kib": sessiond_rss,
                      "lttng_consumerd_rss_kib": consumerd_rss},
            meta={"lttng_buffers": lttng.BUFFERS,
                  "lttng_session": self.session,
                  "lttng_session_held": "by the run" if self.held else "by the trial"},
        )

    def cleanup(self) -> None:
        # A held session is left stopped and tracking nothing for the next trial; the run's
        # session hook destroys it.
        if self.started:
            self.started = False
            with contextlib.suppress(Failure):
                self.client("stop", self.session, what="stop LTTng tracing")
        self._untrack()
        if self.created:
            self.created = False
            with contextlib.suppress(Failure):
                self.client("destroy", self.session, what="destroy the LTTng session")
