"""Runs one trial: a subprocess with a timeout, its JSON lines parsed as they arrive, its
rusage taken with wait4 (user and system CPU, peak RSS of the measured process itself).

The child gets its own session (process group) so that a timeout or Ctrl-C kills it and
anything it started, and so that the terminal's SIGINT reaches the harness only: the
harness decides what to stop and records what happened.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bakeoff.core import pids as procs
from bakeoff.declare.model import Rusage, is_counted
from bakeoff.run.protocol import ProgramOutput, ProtocolError, parse_line

STDERR_TAIL_BYTES = 8192


@dataclass
class ProcessResult:
    status: str  # ok, failed, timeout, interrupted
    exit_code: int | None
    wall_s: float
    output: ProgramOutput
    rusage: Rusage | None
    stderr_tail: str
    error: str | None = None
    nivcsw: int | None = None  # involuntary context switches (wait4)
    run_delay_s: float | None = None  # the trial process's run-queue wait (schedstat)
    # From the program's last measured sample (its last output when it printed none) to its
    # end: a counted trial's counted samples, its counters opened and closed (~40 ms a
    # tracepoint at exit here, benchmarks/common/counters.c), and its exit; a plain trial's
    # exit. The time left takes the difference off a counted trial to tell what a trial
    # without counting costs (run/progress.py). None: the program printed nothing.
    tail_s: float | None = None


@dataclass
class _Reader:
    """Accumulates stdout into protocol records line by line, and the tail of stderr."""

    output: ProgramOutput = field(default_factory=ProgramOutput)
    partial: bytes = b""
    lineno: int = 0
    stderr: bytes = b""
    protocol_error: str | None = None
    last_output: float | None = None  # time.monotonic() of the last stdout read
    last_measured: float | None = None  # ... that brought a measured (not counted) sample
    measured: int = 0  # measured samples so far

    def stdout(self, chunk: bytes) -> None:
        self.last_output = time.monotonic()
        data = self.partial + chunk
        *lines, self.partial = data.split(b"\n")
        for line in lines:
            self._line(line)
        # Programs flush each line as they emit it (benchmarks/common/bench.c), so the time a
        # read brought a sample is about when it was taken. Counted once a read, not a line:
        # a program may print millions of samples.
        measured = sum(len(v) for k, v in self.output.samples.items() if not is_counted(k))
        if measured > self.measured:
            self.measured, self.last_measured = measured, self.last_output

    def finish(self) -> None:
        if self.partial:
            self._line(self.partial)
            self.partial = b""

    def _line(self, raw: bytes) -> None:
        self.lineno += 1
        if self.protocol_error:
            return
        try:
            parse_line(raw.decode("utf-8", errors="replace"), self.lineno, self.output)
        except ProtocolError as exc:
            self.protocol_error = f"protocol error on stdout, {exc}"

    def stderr_chunk(self, chunk: bytes) -> None:
        self.stderr = (self.stderr + chunk)[-STDERR_TAIL_BYTES:]


# A trial asked to stop (Ctrl-C, SIGTERM, timeout) gets SIGTERM first, so that it can remove
# what it created (a tracing session, a cgroup, a probe); SIGKILL follows after the grace.
# 10 s: a tracing trial's tear-down (lttng destroy, detaching probes) took over 5 s at load 4.
STOP_GRACE_S = 10.0


class ActiveChild:
    """The one child running now, so a signal handler can stop it."""

    pgid: int | None = None
    interrupted: bool = False
    term_sent_at: float | None = None
    # Trials SIGKILLed after the grace: what they made is left to a sweep (runner.py does it).
    killed_after_grace: int = 0

    @classmethod
    def stop(cls) -> None:
        """SIGTERM to the child's process group; run_program escalates to SIGKILL later."""
        if cls.pgid is not None and cls.term_sent_at is None:
            cls.term_sent_at = time.monotonic()
            procs.signal_group(cls.pgid, signal.SIGTERM)

    @classmethod
    def kill(cls) -> None:
        """Called from the harness's signal handler: stop the trial, mark it interrupted."""
        cls.interrupted = True
        cls.stop()

    @classmethod
    def escalate_if_overdue(cls) -> None:
        if (cls.pgid is not None and cls.term_sent_at is not None
                and time.monotonic() - cls.term_sent_at > STOP_GRACE_S):
            procs.signal_group(cls.pgid, signal.SIGKILL)
            cls.killed_after_grace += 1
            cls.pgid = None  # once: the group is gone; run_program reaps the child


def _pin(cpu: int | None) -> None:
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})


def _launch_argv(launcher: Path, report_fd: int, cpu: int | None,
                 argv: Sequence[str]) -> list[str]:
    pin = ["--cpu", str(cpu)] if cpu is not None else []
    return [str(launcher), "--report-fd", str(report_fd), "--parent-pid", str(os.getpid()),
            *pin, "--", *argv]


@dataclass(frozen=True)
class _Exit:
    """How the trial process ended and what it used: exit code, rusage, involuntary
    context switches and run-queue wait (None: no schedstat)."""

    code: int | None
    rusage: Rusage | None
    nivcsw: int | None = None
    run_delay_s: float | None = None


def _launcher_report(fd: int) -> _Exit | None:
    """The launcher's one JSON line: the trial's exit code, its own rusage and its wait."""
    with os.fdopen(fd, "rb") as f:
        raw = f.read()
    try:
        d = json.loads(raw)
        delay = int(d.get("run_delay_ns", -1))
        return _Exit(int(d["exit_code"]),
                     Rusage(float(d["user_s"]), float(d["sys_s"]), int(d["max_rss_kib"])),
                     int(d.get("nivcsw", 0)), delay / 1e9 if delay >= 0 else None)
    except (ValueError, KeyError, TypeError):
        return None  # the launcher was killed before it could report


def _zombie_run_delay_s(pid: int) -> float | None:
    """schedstat's run_delay of an exited, not yet reaped, process."""
    try:
        with open(f"/proc/{pid}/schedstat", encoding="ascii") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return None


@dataclass
class _Deadline:
    """The trial's timeout: past it the child is asked to stop (SIGTERM), then SIGKILLed
    after the grace (ActiveChild)."""

    start: float
    timeout_s: float
    timed_out: bool = False

    def check(self) -> None:
        if not self.timed_out and time.monotonic() >= self.start + self.timeout_s:
            self.timed_out = True
            ActiveChild.stop()
        ActiveChild.escalate_if_overdue()


def _start(argv: Sequence[str], env: Mapping[str, str], cpu: int | None,
           launcher: Path | None, report_w: int) -> subprocess.Popen[bytes]:
    """The trial in its own session (process group), through the launcher when there is
    one. Raises OSError when it cannot start."""
    return subprocess.Popen(
        _launch_argv(launcher, report_w, cpu, argv) if launcher else list(argv),
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, **env}, start_new_session=True,
        pass_fds=(report_w,) if launcher else (),
        preexec_fn=(lambda: _pin(cpu)) if cpu is not None and not launcher else None,
    )


def _read_streams(proc: subprocess.Popen[bytes], reader: _Reader, deadline: _Deadline) -> None:
    """stdout (parsed as it arrives) and stderr, until the child closes both."""
    assert proc.stdout is not None and proc.stderr is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ, reader.stdout)
        sel.register(proc.stderr, selectors.EVENT_READ, reader.stderr_chunk)
        open_streams = 2
        while open_streams:
            deadline.check()
            for key, _ in sel.select(timeout=0.25):
                chunk = os.read(key.fd, 65536)
                if chunk:
                    key.data(chunk)
                else:
                    sel.unregister(key.fileobj)
                    open_streams -= 1


def _reap(proc: subprocess.Popen[bytes], deadline: _Deadline) -> _Exit:
    """Both streams closed: the child is exiting, or closed them and lingers. Wait, still
    bounded by the timeout and the grace after a stop; then SIGKILL whatever it left in its
    group (a spawned helper). Its exit code, rusage and run-queue wait (read from the
    zombie, as bakeoff-launch does)."""
    delay: float | None = None
    while True:
        with contextlib.suppress(ChildProcessError):
            if os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT):
                delay = _zombie_run_delay_s(proc.pid)
        pid, wait_status, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        deadline.check()
        time.sleep(0.002)
    # Popen must not wait for the pid again: it is reaped, and the number may be reused.
    proc.returncode = os.waitstatus_to_exitcode(wait_status)
    procs.signal_group(proc.pid, signal.SIGKILL)
    ActiveChild.pgid = None
    return _Exit(proc.returncode, Rusage(user_s=ru.ru_utime, sys_s=ru.ru_stime,
                                         max_rss_kib=ru.ru_maxrss), ru.ru_nivcsw, delay)


def _outcome(code: int | None, reader: _Reader, deadline: _Deadline) -> tuple[str, str | None]:
    """(status, error) of a finished trial, the first that applies of: interrupted,
    timed out, a non-zero exit, a protocol error, no samples."""
    stderr_tail = reader.stderr.decode("utf-8", errors="replace")
    last_line = stderr_tail.strip().splitlines()[-1] if stderr_tail.strip() else ""
    if ActiveChild.interrupted:
        return "interrupted", "stopped by the user"
    if deadline.timed_out:
        return "timeout", f"no exit within {deadline.timeout_s:g} s; killed"
    if code != 0:
        how = (f"killed by signal {-code}" if code is not None and code < 0
               else f"exit status {code}")
        return "failed", f"{how}: {last_line}" if last_line else how
    if reader.protocol_error:
        return "failed", reader.protocol_error
    if not reader.output.samples:
        return "failed", "printed no samples" + (f": {last_line}" if last_line else "")
    return "ok", None


def run_program(
    argv: Sequence[str],
    env: Mapping[str, str],
    timeout_s: float,
    cpu: int | None = None,
    launcher: Path | None = None,
) -> ProcessResult:
    """Run one trial. With `launcher` (build/common/bakeoff-launch) the trial's rusage is
    its own; without, its peak RSS includes the harness's, which a fork copies (see
    benchmarks/common/launch.c)."""
    reader = _Reader()
    deadline = _Deadline(time.monotonic(), timeout_s)
    ActiveChild.interrupted = False
    report_r, report_w = os.pipe() if launcher else (-1, -1)
    try:
        proc = _start(argv, env, cpu, launcher, report_w)
    except OSError as exc:
        for fd in (report_r, report_w):
            if fd >= 0:
                os.close(fd)
        return ProcessResult("failed", None, 0.0, reader.output, None, "",
                             f"cannot start {argv[0]}: {exc.strerror}")
    if launcher:
        os.close(report_w)
    ActiveChild.pgid = proc.pid
    ActiveChild.term_sent_at = None
    _read_streams(proc, reader, deadline)
    end = _reap(proc, deadline)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    proc.stderr.close()
    reader.finish()
    ended = time.monotonic()
    wall = ended - deadline.start
    last = reader.last_measured if reader.last_measured is not None else reader.last_output
    tail = None if last is None else ended - last
    if launcher:
        end = _launcher_report(report_r) or _Exit(end.code, None)
    status, error = _outcome(end.code, reader, deadline)
    return ProcessResult(status, end.code, wall, reader.output, end.rusage,
                         reader.stderr.decode("utf-8", errors="replace"), error,
                         end.nivcsw, end.run_delay_s, tail)
