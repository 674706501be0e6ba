"""A helper process a room's session holds for the whole run: a map loader, a memory charger,
a tracing daemon. Written once here so that each room does not write its own start, wait,
revive and stop (three rooms did, each a little differently).

    helper = HeldProcess("charger", [str(build / "charger"), cgroup], ready="ready")
    helper.start()                       # or: reason = helper.ensure() before each trial
    env = helper.watch_env("BAKEOFF_CHARGER_PID")   # the trial's bench_watch_env() reads it
    ...
    helper.stop()                        # SIGTERM to its group, SIGKILL after the grace

What it guarantees:
- Its own session (setsid): a Ctrl-C at the terminal reaches the harness only, which
  decides; its process group is what stop() signals, so its children go with it.
- A bounded, interruptible start: start() waits for the ready line on stdout (or for a
  `ready_probe` to say yes) at most `start_timeout_s`; SIGINT or SIGTERM during the wait
  stops the helper and ends the wait at once (Interrupted, or the harness's own handler's
  exception), instead of a read that no signal ends.
- Revival: ensure() starts it again if it died since (killed, OOM), so its death fails the
  one trial it hit (the trial watches it) and not, silently, every trial after it.
- A named owner: it carries BAKEOFF_HELD=bakeoff-<harness pid>-<name> in its environment
  from its first instruction, so that after a SIGKILL of the harness (no tear-down runs)
  sweep_held() finds it by that dead PID and stops it. A helper is not marked as one of the
  run's processes (BAKEOFF_RUN_PID) when `shared`: one several runs use (LTTng's session
  daemon) must not be stopped by the sweep of one dead run's processes; the room's sweep
  calls sweep_held(name) once it knows that no live run uses it.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

import psutil

from bakeoff.core import pids as procs
from bakeoff.core.errors import Interrupted
from bakeoff.run.cleanup import RUN_PID_ENV, left_by_dead_process, owner_pid

# In a held helper's environment: bakeoff-<pid of the process that holds it>-<its name>.
HELD_ENV = "BAKEOFF_HELD"
START_TIMEOUT_S = 30.0
STOP_GRACE_S = 5.0
# How often the wait for readiness looks at the helper (and at a ready_probe).
_POLL_S = 0.05


class HelperFailed(Exception):
    """The helper could not be started: str() is one sentence saying why (a trial that
    needs it fails with it, TrialPlan.failed; the run goes on)."""


def held_name(name: str, owner: int | None = None) -> str:
    """The marker a helper carries: bakeoff-<owner pid>-<name> (the harness's pid)."""
    return f"bakeoff-{owner if owner is not None else os.getpid()}-{name}"


class HeldProcess:
    """One helper process held by a session; see the module's docstring.

    name: a short word, in messages and in its marker (e.g. "charger", "lttng-sessiond").
    argv, env: how it is started (env: added to the harness's environment). cwd: where.
    ready: the stdout line (stripped) that says it is ready, or a function of one line that
    says whether it is; every line read up to it is kept in `lines`. Nothing reads its
    stdout after that: a helper must not write much more there (a pipe holds 64 KiB). ready_probe instead:
    a function polled until it returns True (a daemon that prints nothing: "does it answer?").
    cpus: the CPUs it is placed on (a partner CPU, partner_cpus()); empty: anywhere.
    stderr: a file to write its stderr to (else the harness's); the last line of it says
    why a start failed.
    shared: used by several runs at once; see the module's docstring.
    """

    def __init__(self, name: str, argv: Sequence[str], *, ready: str | Callable[[str], bool] = "",
                 ready_probe: Callable[[], bool] | None = None,
                 env: Mapping[str, str] | None = None, cwd: Path | None = None,
                 cpus: Sequence[int] = (), stderr: Path | None = None,
                 start_timeout_s: float = START_TIMEOUT_S, stop_grace_s: float = STOP_GRACE_S,
                 shared: bool = False) -> None:
        if not ready and ready_probe is None:
            raise ValueError(f"held helper {name}: give ready (a line) or ready_probe")
        self.name = name
        self.argv = list(argv)
        self.ready = ready
        self.ready_probe = ready_probe
        self.env = dict(env or {})
        self.cwd = cwd
        self.cpus = tuple(cpus)
        self.stderr = stderr
        self.start_timeout_s = start_timeout_s
        self.stop_grace_s = stop_grace_s
        self.shared = shared
        self.proc: subprocess.Popen[bytes] | None = None
        self.lines: list[str] = []  # stdout up to and including the ready line
        self.starts = 0  # how many times it was started (revivals are starts after the first)

    # ---- state ----------------------------------------------------------------------------

    @property
    def pid(self) -> int:
        if self.proc is None:
            raise RuntimeError(f"bug: held helper {self.name} is not started")
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def watch_env(self, variable: str) -> dict[str, str]:
        """{variable: its PID}, for a trial's environment: bench.h's bench_watch_env(variable,
        ...) (Go and Python programs the same way) fails the trial if it dies meanwhile."""
        return {variable: str(self.pid)}

    # ---- start, revive ----------------------------------------------------------------------

    def start(self) -> None:
        """Starts it and waits until it is ready. Raises HelperFailed (it exited, or was not
        ready in time: it is stopped), or Interrupted / KeyboardInterrupt on a signal."""
        self.stop()
        self.lines = []
        env = {**os.environ, **self.env, HELD_ENV: held_name(self.name)}
        if self.shared:
            env.pop(RUN_PID_ENV, None)
        cpus = self.cpus
        place = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None
        err = self.stderr.open("ab") if self.stderr is not None else None
        try:
            self.proc = subprocess.Popen(
                self.argv, stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE if self.ready else subprocess.DEVNULL,
                stderr=err, env=env, cwd=self.cwd, start_new_session=True, preexec_fn=place)
        except OSError as exc:
            raise HelperFailed(f"{self.name} could not be started: "
                               f"{exc.strerror or exc}") from None
        finally:
            if err is not None:
                err.close()
        self.starts += 1
        try:
            with _signals_end_wait() as received:
                problem = self._wait_ready(received)
        except BaseException:
            self.stop()
            raise
        if received:
            self.stop()
            raise Interrupted(received[0])
        if problem:
            self.stop()
            raise HelperFailed(f"{self.name} {problem}{self._stderr_tail()}")

    def ensure(self) -> str | None:
        """Before a trial: starts it if it is not running (first use, or it died since).
        None when it runs, else why it could not be started (the trial fails with that)."""
        if self.alive():
            return None
        try:
            self.start()
        except HelperFailed as exc:
            return str(exc)
        return None

    def _wait_ready(self, received: list[int]) -> str | None:
        """None once ready; else what went wrong."""
        assert self.proc is not None
        deadline = time.monotonic() + self.start_timeout_s
        out = self.proc.stdout
        partial = b""
        while not received:
            left = deadline - time.monotonic()
            if left <= 0:
                return f"was not ready within {self.start_timeout_s:g} s"
            if out is not None:
                readable, _, _ = select.select([out], [], [], min(left, _POLL_S * 4))
                if readable:
                    chunk = os.read(out.fileno(), 65536)
                    if not chunk:
                        return self._exited()
                    *lines, partial = (partial + chunk).split(b"\n")
                    for raw in lines:
                        line = raw.decode(errors="replace").strip()
                        self.lines.append(line)
                        if self._is_ready(line):
                            return None
                    continue
            else:
                time.sleep(min(left, _POLL_S))
            if self.proc.poll() is not None:
                return self._exited()
            if self.ready_probe is not None and out is None and self.ready_probe():
                return None
        return None

    def _is_ready(self, line: str) -> bool:
        if callable(self.ready):
            return self.ready(line)
        return line == self.ready

    def _exited(self) -> str:
        """Why it will not get ready: it exited, or (still running) it closed its stdout."""
        assert self.proc is not None
        try:
            code = self.proc.wait(timeout=_POLL_S * 10)  # EOF comes a moment before exit
        except subprocess.TimeoutExpired:
            return "closed its stdout before it was ready"
        how = f"signal {-code}" if code < 0 else f"status {code}"
        return f"exited ({how}) before it was ready"

    def _stderr_tail(self) -> str:
        if self.stderr is None:
            return ""
        with contextlib.suppress(OSError):
            lines = self.stderr.read_text(errors="replace").strip().splitlines()
            if lines:
                return f": {lines[-1]}"
        return ""

    # ---- stop -------------------------------------------------------------------------------

    def stop(self) -> bool:
        """SIGTERM to its process group, SIGKILL to the group after the grace, reaped; True
        if it needed SIGKILL. Nothing to do when it is not running."""
        proc, self.proc = self.proc, None
        if proc is None:
            return False
        # Even when it has exited: what it forked (a daemon's workers) may still run in its
        # group, which keeps the group's ID from being reused meanwhile.
        killed = stop_group(proc.pid, self.stop_grace_s, child=proc)
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        return killed


def stop_group(pid: int, grace_s: float, child: subprocess.Popen[Any] | None = None) -> bool:
    """A held helper's process group (its pid: it is a session leader), the way a helper is
    stopped whoever started it: SIGTERM, then SIGKILL to the group after grace_s. True if
    SIGKILL was needed. `child`: when it is ours, it is reaped as it ends."""
    procs.signal_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        gone = child.poll() is not None if child is not None else not procs.alive(pid)
        if gone and not _group_alive(pid):
            return False
        time.sleep(_POLL_S)
    procs.signal_group(pid, signal.SIGKILL)
    if child is not None:
        child.wait()
    procs.wait_gone([pid], 5.0)
    return True


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # Zombies still count for killpg: look whether any member is running.
    for proc in psutil.process_iter(["pid"]):
        # A process listed may be gone by its getpgid (ProcessLookupError): not a member.
        with contextlib.suppress(psutil.Error, ProcessLookupError):
            if os.getpgid(proc.pid) == pgid and procs.alive(proc.pid):
                return True
    return False


@contextlib.contextmanager
def _signals_end_wait() -> Iterator[list[int]]:
    """While start() waits, SIGINT and SIGTERM are recorded here (the wait then ends) and
    passed on to the harness's handler, so it knows too: before the run's first trial that
    handler raises (the exception ends the wait itself), after it it only records. Only the
    main thread can have handlers; elsewhere the wait is bounded by its timeout alone."""
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        received.append(signum)
        previous = old[signum]
        if callable(previous):
            previous(signum, frame)
        elif previous == signal.SIG_DFL and signum == signal.SIGINT:
            raise KeyboardInterrupt

    old: dict[int, Any] = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    for s in old:
        signal.signal(s, handler)
    try:
        yield received
    finally:
        for s, h in old.items():
            signal.signal(s, h)


# ---- what a SIGKILLed harness left -------------------------------------------------------------


def _held_marker(proc: psutil.Process) -> str:
    try:
        return str(proc.environ().get(HELD_ENV, ""))
    except psutil.Error:
        return ""


def sweep_held(name: str | None = None, grace_s: float = STOP_GRACE_S) -> list[str]:
    """Stops held helpers (of this `name`, or any) whose holder is gone: a harness SIGKILLed
    while it held them, so that no session's tear-down ran; those of this mount namespace
    only (see the loop). One line per helper stopped.
    A shared helper's room calls this only once no live run uses it (see the module)."""
    me = os.getpid()
    here = _mount_namespace(me)
    found: dict[int, str] = {}
    for proc in psutil.process_iter(["pid"]):
        # Only this mount namespace's: a shared helper's state (a daemon's pid file, the
        # lock its runs hold) lives in its namespace's /run, so whether a live run still
        # uses it can only be known there; a sweep from another namespace (another
        # container, a test's private /run) would stop a daemon live runs share.
        mine = proc.pid != me and _mount_namespace(proc.pid) == here
        marker = _held_marker(proc) if mine else ""
        if not marker or not left_by_dead_process(marker):
            continue
        holder = owner_pid(marker)
        helper = marker.split("-", 2)[2] if marker.count("-") >= 2 else ""
        if (name is None or helper == name) and procs.alive(proc.pid):
            found[proc.pid] = f"{helper} (held by bakeoff {holder}, which is gone)"
    lines = []
    # Group leaders first (a helper's children carry its marker too and go with its group).
    for pid in sorted(found, key=lambda p: (_pgid(p) != p, p)):
        if not procs.alive(pid):
            continue
        killed = stop_group(pid, grace_s) if _pgid(pid) == pid else \
            bool(procs.stop([pid], grace_s).killed)
        lines.append(f"stopped {found[pid]}, pid {pid}"
                     + (f" (SIGKILL: it outlived the {grace_s:g} s grace)" if killed else ""))
    return lines


def _mount_namespace(pid: int) -> str:
    """Its mount namespace ('mnt:[inode]'); '' when it cannot be read (gone, or not ours
    to inspect: then it is left be)."""
    try:
        return os.readlink(f"/proc/{pid}/ns/mnt")
    except OSError:
        return ""


def _pgid(pid: int) -> int:
    try:
        return os.getpgid(pid)
    except OSError:
        return -1
