"""The trial's own children (the app's launcher, a tracer, a control command): started,
read, reaped with their rusage, stopped. Not bakeoff.core.pids's stop_child: a tracer's CPU time
and peak RSS are measurements, so every child is reaped with wait4, never by Popen.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from bakeoff.room.program import Failure

COMMAND_TIMEOUT_S = 60.0


def last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ""


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
        raise Failure(f"failed to {what}: no answer within {timeout:g} s") from None
    except OSError as exc:
        raise Failure(f"failed to {what}: {argv[0]}: {exc.strerror}") from None
    if res.returncode != 0:
        detail = last_line(res.stderr) or last_line(res.stdout) or f"exit {res.returncode}"
        raise Failure(f"failed to {what}: {detail}")
    return res


def read_json_lines(text: str) -> Iterator[dict[str, Any]]:
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue  # bpftrace writes empty lines to its child's stdout at exit
        try:
            obj = json.loads(line)
        except ValueError:
            raise Failure(f"the app printed a line that is not JSON: {line[:120]!r}") from None
        if isinstance(obj, dict):
            yield obj


def read_line(stream: Any, timeout: float) -> str:
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


def drain(proc: subprocess.Popen[bytes]) -> tuple[str, str]:
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
