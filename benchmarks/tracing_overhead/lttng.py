"""Everything this room knows about LTTng's daemons and its client: the session daemon's pid
file, starting it for a run and stopping it when the last run leaves (the counted hold),
reviving it mid-run, the recording session a run holds across its trials (HeldSession:
created once, its trace read a trial at a time, trial_packets), the `lttng --mi xml list`
answers (sessions, a channel's statistics), the daemons' CPU time and memory for a trial,
and what killed runs left (sweeps).

Used by the harness (spec.py: the session hook, prepare_trial, the sweep) and by the trial
(tracers.py: LttngTracer), so it imports nothing of either.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from bakeoff.room import (
    HeldProcess,
    HelperFailed,
    live_name,
    stop_group,
    sweep_dead_owners,
    sweep_held,
)

MI_NS = {"mi": "https://lttng.org/xml/ns/lttng-mi"}
SESSIOND = "lttng-sessiond"
STOP_GRACE_S = 10.0
# A bound on the daemon's start (until it answers `lttng list`), against a hung one.
START_TIMEOUT_S = 30.0


# ---- the client -----------------------------------------------------------------------------


def lttng(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str] | None:
    """`lttng -n ARGS`; None when it could not run or did not answer in time. -n: the client
    must never spawn a daemon on its own (one left behind would outlive the run)."""
    try:
        return subprocess.run(["lttng", "-n", *args], capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None


def session_names(mi_xml: str) -> list[str]:
    """The session names in the answer of `lttng --mi xml list`."""
    with contextlib.suppress(ET.ParseError):
        root = ET.fromstring(mi_xml)
        return [n.text for n in root.iterfind(".//mi:session/mi:name", MI_NS) if n.text]
    return []


def list_sessions() -> list[str]:
    """The sessions the running daemon has; [] when none answers."""
    res = lttng("--mi", "xml", "list")
    return session_names(res.stdout) if res is not None and res.returncode == 0 else []


def session_enabled(mi_xml: str) -> bool:
    """Whether the session in the answer of `lttng --mi xml list SESSION` is started."""
    with contextlib.suppress(ET.ParseError):
        root = ET.fromstring(mi_xml)
        return any(e.text == "true" for e in root.iterfind(".//mi:session/mi:enabled", MI_NS))
    return False


def channel_stats(mi_xml: str, channel: str) -> tuple[int, int] | None:
    """(discarded events, lost packets) of `channel` in the answer of `lttng --mi xml list
    SESSION`; None when the session has no such channel."""
    root = ET.fromstring(mi_xml)
    for chan in root.iterfind(".//mi:channel", MI_NS):
        if chan.findtext("mi:name", namespaces=MI_NS) == channel:
            attrs = chan.find("mi:attributes", MI_NS)
            if attrs is None:
                return None
            return (int(attrs.findtext("mi:discarded_events", "0", MI_NS)),
                    int(attrs.findtext("mi:lost_packets", "0", MI_NS)))
    return None


# ---- the recording session ------------------------------------------------------------------

PROVIDER = "bakeoff_traced"
CHANNEL = "bakeoff"
# Per CPU: 8 x 1 MiB. The seed's largest scenario writes 200k events of ~40 B (~8 MB) from
# one CPU; the consumer daemon empties sub-buffers as they fill, so this does not discard
# on this machine. Any discard is counted (LTTng's channel statistics) and reported.
SUBBUF = "1M"
NUM_SUBBUF = "8"
BUFFERS = f"per-uid, {NUM_SUBBUF} x {SUBBUF} per CPU"


def session_setup(session: str, output: Path) -> list[tuple[list[str], str]]:
    """The client commands that make a recording session ready to trace the app, each with
    what it does (for a message): channel `bakeoff` with per-uid buffers, the library's
    entry and exit events with the process and thread as contexts (the same facts per event
    as the eBPF records), and an empty process tracker (LTTng enables events in every
    registered app of the user, whatever its session: without the tracker, a concurrent
    run's app would write into this one). Not started: a trial starts it."""
    return [
        (["create", session, f"--output={output}"], "create the LTTng session"),
        (["enable-channel", "-u", "-s", session, f"--subbuf-size={SUBBUF}",
          f"--num-subbuf={NUM_SUBBUF}", CHANNEL], "enable the LTTng channel"),
        (["enable-event", "-u", "-s", session, "-c", CHANNEL, f"{PROVIDER}:*"],
         "enable the LTTng events"),
        (["add-context", "-u", "-s", session, "-c", CHANNEL, "-t", "vpid", "-t", "vtid"],
         "add the LTTng contexts"),
        (["untrack", "-u", "-s", session, "--vpid", "--all"],
         "empty the LTTng process tracker"),
    ]


@dataclass
class HeldSession:
    """The recording session a run holds across its lttng trials: set up once (set-up and
    `lttng destroy` took most of an lttng trial: destroy, like clear and rotate, waits out
    the session daemon's 500 ms rotation check), started, tracked and stopped per trial.

    Each trial reads only its own packets (trial_packets): `lttng stop` flushes every
    sub-buffer as a packet of its own, so what the stream files grew by since the last trial
    is exactly this trial's. Named bakeoff-<run pid>-<run pid>, so the sweep of dead runs'
    sessions finds it; re-created (in a fresh directory) when the daemon it lived in died
    and was revived. The session's state (spec.py)."""

    name: str
    scratch: Path
    daemon: int | None = None
    made: int = 0

    @property
    def output(self) -> Path:
        return self.scratch / f"lttng-trace-{self.made}"

    def ensure(self) -> str | None:
        """Before an lttng trial: None when the session is ready, else why not (the trial
        fails with that)."""
        pid = sessiond_pid()
        if pid is not None and pid == self.daemon and is_sessiond(pid):
            return None
        self.made += 1
        for args, what in session_setup(self.name, self.output):
            res = lttng(*args)
            if res is None or res.returncode != 0:
                detail = (res.stderr.strip().splitlines() or ["no answer"])[-1] if res else \
                    "no answer"
                lttng("destroy", self.name)
                return f"failed to {what}: {detail}"
        self.daemon = pid
        return None

    def env(self) -> dict[str, str]:
        """What a trial needs to use it (trial.py reads it)."""
        return {HELD_SESSION_ENV: self.name, HELD_OUTPUT_ENV: str(self.output)}

    def destroy(self) -> None:
        if self.daemon is not None:
            self.daemon = None
            lttng("destroy", self.name)


HELD_SESSION_ENV = "BAKEOFF_LTTNG_SESSION"
HELD_OUTPUT_ENV = "BAKEOFF_LTTNG_OUTPUT"


def stream_sizes(output: Path) -> dict[str, int]:
    """Size of every file of a trace directory but its indexes, by relative path."""
    return {str(f.relative_to(output)): f.stat().st_size for f in output.rglob("*")
            if f.is_file() and "index" not in f.relative_to(output).parts}


def trial_packets(output: Path, before: dict[str, int], into: Path) -> int:
    """A trace of this trial's packets alone, in `into`: every stream file's bytes past its
    size `before` the trial (a CTF stream is a sequence of self-contained packets, and stop
    ended the last one), with the whole metadata file. Its size in bytes."""
    total = 0
    for rel in stream_sizes(output):
        dst = into / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        with (output / rel).open("rb") as src, dst.open("wb") as out:
            if Path(rel).name != "metadata":
                src.seek(before.get(rel, 0))
            shutil.copyfileobj(src, out)
        total += dst.stat().st_size
    return total


# ---- the session daemon ---------------------------------------------------------------------


def sessiond_pid() -> int | None:
    """The PID in the daemon's pid file: its first line. lttng-sessiond rewrites the file
    without truncating it, so after a killed daemon with a longer PID (32565) the file of
    the next one (639) reads '639\\n5\\n'. None when there is no file."""
    if os.geteuid() == 0:
        pidfile = Path("/var/run/lttng/lttng-sessiond.pid")
    else:
        pidfile = Path(os.environ.get("LTTNG_HOME", os.path.expanduser("~"))) / ".lttng" / \
            "lttng-sessiond.pid"
    try:
        return int(pidfile.read_text().split("\n", 1)[0])
    except (OSError, ValueError):
        return None


def is_sessiond(pid: int | None) -> bool:
    """A live session daemon (a killed one may stay a zombie a while, still so named)."""
    return pid is not None and live_name(pid) == SESSIOND


def sessiond_answers() -> bool:
    res = lttng("list")
    return res is not None and res.returncode == 0


def start_sessiond(cpus: Sequence[int], log: Path | None = None) -> HeldProcess | None:
    """lttng-sessiond --no-kernel (UST only) held in the foreground of its own session, on
    `cpus` (with the consumer daemons it spawns) when given, its stderr to `log`; None if
    it did not come up (said on stderr). Held, not --daemonize'd: its PID and its holder's
    mark are known from its first instruction, so a harness SIGKILLed at any moment of the
    start leaves a daemon that sweep_sessiond finds (a daemonizing start left two
    lttng-sessiond processes nobody could name). Shared: several runs use it at once (the
    counted hold below), so a dead run's process sweep must not stop it."""
    daemon = HeldProcess(
        SESSIOND, [SESSIOND, "--no-kernel"], cpus=cpus, stderr=log, shared=True,
        ready_probe=lambda: sessiond_pid() == daemon.pid and sessiond_answers(),
        start_timeout_s=START_TIMEOUT_S, stop_grace_s=STOP_GRACE_S)
    try:
        daemon.start()
    except HelperFailed as exc:
        print(f"tracing-overhead: {exc}", file=sys.stderr)
        return None
    return daemon


def stop_sessiond(pid: int) -> None:
    """By PID, with its consumer daemons and run-as helper (its process group: it leads its
    own session, held or daemonized alike): SIGTERM, then SIGKILL."""
    if is_sessiond(pid):  # else already gone; the number may belong to someone else by now
        stop_group(pid, STOP_GRACE_S)


def _lock_path(suffix: str = "") -> Path:
    # Not under /tmp: the tests look there for leftovers, and these files are meant to stay.
    run_lock = Path("/run/lock")
    base = run_lock if os.access(run_lock, os.W_OK) else Path(tempfile.gettempdir())
    return base / f"bakeoff-lttng-sessiond-{os.geteuid()}{suffix}.lock"


@contextlib.contextmanager
def _deciding() -> Iterator[None]:
    """The start lock: one run at a time decides whether to start the daemon (as it begins,
    or when the daemon died mid-run) or, leaving last, to stop it. Never held while a run
    measures, so a second run starts at once instead of waiting for the first to end."""
    fd = os.open(_lock_path("-start"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _recorded_pid(fd: int) -> int | None:
    os.lseek(fd, 0, os.SEEK_SET)
    text = os.read(fd, 64).decode(errors="replace").strip()
    return int(text) if text.isdigit() else None


def _record_pid(fd: int, pid: int | None) -> None:
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    if pid is not None:
        os.write(fd, f"{pid}\n".encode())


@dataclass
class DaemonHold:
    """This run's hold on the daemon: the counted lock file, open while the session lasts,
    the CPUs a daemon started for it goes on, where that daemon's stderr goes, and the
    daemons this run started (to reap them). The session's state (spec.py)."""

    fd: int
    cpus: tuple[int, ...]
    log: Path | None = None
    started: list[HeldProcess] = field(default_factory=list)

    def start(self) -> None:
        """Under _deciding: a daemon for the runs, recorded in the counted lock file."""
        daemon = start_sessiond(self.cpus, self.log)
        if daemon is not None:
            self.started.append(daemon)
        _record_pid(self.fd, daemon.pid if daemon is not None else None)

    def revive(self) -> None:
        """Before an lttng trial: a daemon that died mid-run (killed, crashed) is started
        again, so that its death fails the trial it hit, not every lttng trial after it. The
        new one is bakeoff's, recorded, and stopped by the last run out like the first."""
        if is_sessiond(sessiond_pid()):
            return
        with _deciding():
            if not sessiond_answers():
                self.start()

    def stop(self, pid: int) -> None:
        """The last run out stops the recorded daemon: reaped if this run started it."""
        mine = [d for d in self.started if d.alive() and d.pid == pid]
        if mine:
            mine[0].stop()
        else:
            stop_sessiond(pid)
        for daemon in self.started:  # died earlier (revived since): only reaped
            if not daemon.alive():
                daemon.stop()


@contextlib.contextmanager
def session_daemon(cpus: tuple[int, ...], log: Path | None = None) -> Iterator[DaemonHold]:
    """A session daemon for the run: the one already running, or one started here on `cpus`
    (its stderr to `log`).

    Several bakeoff runs may share the daemon, so it is counted: each run holds a shared
    lock on a file that names the daemon bakeoff started (if it did); the last run out (the
    one that gets the lock exclusively) stops that daemon by its PID. Starting and stopping
    are decided under a second lock (_deciding), never the counted one, so concurrent runs
    measure at the same time. A daemon someone else started is never stopped; one that dies
    mid-run is started again before the next lttng trial (DaemonHold.revive). Exited on
    success, error, Ctrl-C and SIGTERM alike.
    """
    fd = os.open(_lock_path(), os.O_RDWR | os.O_CREAT, 0o600)
    hold = DaemonHold(fd, cpus, log)
    try:
        with _deciding():
            if not sessiond_answers():
                hold.start()
            fcntl.flock(fd, fcntl.LOCK_SH)  # only a run leaving, under _deciding, holds EX
        try:
            yield hold
        finally:
            _destroy_sessions_of_this_run()
            with _deciding():
                fcntl.flock(fd, fcntl.LOCK_UN)
                with contextlib.suppress(BlockingIOError):
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    pid = _recorded_pid(fd)
                    if pid is not None:
                        hold.stop(pid)
                        _record_pid(fd, None)
    finally:
        os.close(fd)


def _destroy_sessions_of_this_run() -> None:
    """A trial killed before it could clean up (SIGKILL after the grace) leaves its session;
    its name says which run it belongs to."""
    prefix = f"bakeoff-{os.getpid()}-"
    for name in list_sessions():
        if name.startswith(prefix):
            lttng("destroy", name)


# ---- the daemons as a trial sees them ---------------------------------------------------


@dataclass(frozen=True)
class Daemons:
    """The session daemon the lttng client talks to and its children (the consumer daemons,
    which it spawns on the first session, and the run-as helper)."""

    sessiond: int

    @staticmethod
    def find() -> Daemons | None:
        pid = sessiond_pid()
        return Daemons(pid) if pid is not None and is_sessiond(pid) else None

    def alive(self) -> bool:
        return is_sessiond(self.sessiond)

    def _children(self) -> list[psutil.Process]:
        try:
            return psutil.Process(self.sessiond).children()
        except psutil.Error:
            return []

    def pids(self) -> list[int]:
        return [self.sessiond, *(c.pid for c in self._children())]

    def consumerds(self) -> list[int]:
        return [c.pid for c in self._children()
                if live_name(c.pid).startswith("lttng-consumerd")]

    def cpu_ns(self) -> dict[int, int]:
        return {p: task_cpu_ns(p) for p in self.pids()}

    def cpu_ns_since(self, before: dict[int, int]) -> int:
        """A daemon spawned since (a consumer daemon, at the first session) counts whole."""
        return sum(ns - before.get(p, 0) for p, ns in self.cpu_ns().items())


def task_cpu_ns(pid: int) -> int:
    """On-CPU time of every thread of pid, in ns, from schedstat: exact, where psutil's
    cpu_times (/proc/PID/stat) counts 10 ms ticks, too coarse for a daemon that works a
    few ms per trial. Threads that exited are not counted."""
    total = 0
    for f in Path(f"/proc/{pid}/task").glob("*/schedstat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            total += int(f.read_text().split()[0])
    return total


def peak_rss_kib(pid: int) -> int:
    """The process's peak RSS (VmHWM) since it started, in KiB; 0 when it is gone."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def rss_kib(pid: int) -> int:
    try:
        return int(psutil.Process(pid).memory_info().rss // 1024)
    except psutil.Error:
        return 0


# ---- what dead runs left (part of Benchmark.sweep) ------------------------------------------


def sweep_sessions() -> list[str]:
    """LTTng sessions of trials whose run and trial processes are both gone:
    bakeoff-<run pid>-<trial pid> (a trial under bakeoff run), bakeoff-<trial pid> (by
    hand)."""
    if shutil.which("lttng") is None:
        return []

    def destroy(name: str) -> None:
        done = lttng("destroy", name)
        if done is None or done.returncode != 0:
            raise RuntimeError("lttng destroy failed")

    return sweep_dead_owners(list_sessions(), destroy, "LTTng session", verb="destroyed")


def sweep_sessiond() -> list[str]:
    """The session daemon bakeoff runs started, when no run uses it any more: the runs that
    did were killed before they could stop it (their shared locks went with them). Both the
    one recorded in the counted lock file, and any held daemon whose starter is gone (one
    SIGKILLed while it started the daemon, before it could record it)."""
    try:
        fd = os.open(_lock_path(), os.O_RDWR)
    except OSError:  # no run ever held a daemon here: only one a starter left unrecorded
        return sweep_held(SESSIOND, STOP_GRACE_S)
    try:
        with _deciding():
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return []  # a live run holds it: the daemon is in use
            lines = []
            pid = _recorded_pid(fd)
            if pid is not None and is_sessiond(pid):
                stop_sessiond(pid)
                lines.append(f"stopped lttng-sessiond {pid} (and its consumer daemons), "
                             "started by bakeoff runs that are gone")
            _record_pid(fd, None)
            return lines + sweep_held(SESSIOND, STOP_GRACE_S)
    finally:
        os.close(fd)
