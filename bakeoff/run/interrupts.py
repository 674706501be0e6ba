"""What SIGINT (Ctrl-C) and SIGTERM do to `bakeoff run`, at every moment of it.

One rule: bakeoff never swallows either signal. It exits 128 + the signal (130, 143) and says
how far the run got; what it had saved stays saved. docs/RELIABILITY.md lists the moments and
the test that sends signals at each.

- Start-up, before the first trial: the signal stops bakeoff at once (the handlers raise,
  and record it, in case Python drops the exception: raise_now()). Nothing was measured; a
  results directory, if made, holds no trial and resumes.
- From the first trial to the last (latch() is called): the handler only records the signal
  and stops the trial running. The runner stops at its next check; the trial cut short is
  not recorded; the message names `bakeoff run --resume DIR`.
- After the last trial (the sessions' tear-down, the final save, the analysis, each report
  file): the run is complete and saved. The signal is still only recorded, so that a tracing
  session or a cgroup is torn down whole, and bakeoff stops at the next checkpoint(): before
  the analysis and before each report file, which is written whole or not at all. The
  message says that the run is complete and that `bakeoff report DIR` writes the reports.
- After bakeoff has decided its exit status (exit()): the signals' default action, so one
  that comes now kills the process, which a shell reports as the same 128 + signal.

BAKEOFF_PHASE_LOG names a file or FIFO that each checkpoint appends its phase to, one line
each ("PHASE PID CLOCK_MONOTONIC_NS"): the fault-injection test reads it to send signals at
chosen late moments on purpose, and to tell a signal that came after bakeoff decided to exit 0
(its "exit" line is older than the signal) from one it missed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Callable
from types import FrameType
from typing import NoReturn

from bakeoff.core.errors import Interrupted
from bakeoff.run.trial_process import ActiveChild

HANDLED = (signal.SIGINT, signal.SIGTERM)
PHASE_LOG = "BAKEOFF_PHASE_LOG"


class _Latch:
    signum: int | None = None
    # How far the run got, said when a signal ends it: set as the run goes on (tell()).
    story: Callable[[], str] | None = None


def _record(signum: int, _frame: FrameType | None) -> None:
    if _Latch.signum is None:
        _Latch.signum = signum
    ActiveChild.kill()


def raise_now(signum: int, _frame: FrameType | None) -> None:
    """Before latch(): stop at once (KeyboardInterrupt for SIGINT, Interrupted for SIGTERM),
    and record the signal too. Python prints and drops an exception raised where it cannot
    propagate (a finalizer: "Exception ignored in: ..."); CI saw a SIGTERM end that way and
    the run go on to exit 0. Recorded, it still stops the run at its first checkpoint, or
    at exit(), with 128 + the signal."""
    if _Latch.signum is None:
        _Latch.signum = signum
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Interrupted(signum)


def quiet_dropped_interrupts() -> None:
    """Keep raise_now's exceptions out of Python's "Exception ignored in: ..." report.

    An exception raised where it cannot propagate (a finalizer, an import lock's weakref
    callback) goes to sys.unraisablehook, which prints it with its traceback; raise_now's
    KeyboardInterrupt or Interrupted lands there when a signal comes at such a moment (CI saw
    it under load). The signal is recorded, and the run stops at its next checkpoint with
    128 + the signal and its one line: the printed traceback was all that was wrong. Those
    alone are kept quiet; anything else goes to the hook that was there."""
    previous = sys.unraisablehook

    def hook(unraisable: sys.UnraisableHookArgs) -> None:
        if (isinstance(unraisable.exc_value, KeyboardInterrupt | Interrupted)
                and _Latch.signum is not None):
            return
        previous(unraisable)

    sys.unraisablehook = hook


def latch() -> None:
    """From now until the process exits, SIGINT and SIGTERM are recorded, not raised."""
    for s in HANDLED:
        signal.signal(s, _record)


def received() -> int | None:
    """The first signal recorded since latch(), if any."""
    return _Latch.signum


def tell(story: Callable[[], str]) -> None:
    """What to say, from now on, if a signal ends bakeoff: how far the run has got."""
    _Latch.story = story


def checkpoint(phase: str) -> None:
    """A place where stopping loses nothing: raises Interrupted if a signal was recorded."""
    log_phase(phase)
    if _Latch.signum is not None:
        raise Interrupted(_Latch.signum)


def log_phase(phase: str) -> None:
    """One line to BAKEOFF_PHASE_LOG, if set; never blocks, never fails the run."""
    path = os.environ.get(PHASE_LOG)
    if not path:
        return
    # O_NONBLOCK: a FIFO whose reader has gone must not hang the run (ENXIO, EPIPE instead).
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK, 0o600)
        try:
            os.write(fd, f"{phase} {os.getpid()} {time.monotonic_ns()}\n".encode())
        finally:
            os.close(fd)


def _run_pending_handlers() -> None:
    """Calling any Python function lets the interpreter run the handlers of signals that its
    C-level handler has already caught (it looks for them on function entry)."""


def exit(code: int, signum: int | None = None) -> NoReturn:
    """Exit with code; with 128 + the signal instead if one came (signum, recorded or pending).

    Blocks the signals, lets any already caught reach _record, gives them their default
    action, and only then unblocks: one that comes later kills the process (status 128 +
    signal in a shell). No gap between the last look and that point lets a signal through
    unseen; one that is pending at the look ends bakeoff with its status and the story.
    """
    signal.pthread_sigmask(signal.SIG_BLOCK, HANDLED)
    _run_pending_handlers()
    for s in HANDLED:
        signal.signal(s, signal.SIG_DFL)
    pending = [s for s in HANDLED if s in signal.sigpending()]
    signum = signum or _Latch.signum or (pending[0] if pending else None)
    if signum is not None:
        log_phase(f"stopped-by-{signal.Signals(signum).name}")
        story = f": {_Latch.story()}" if _Latch.story else ""
        print(f"bakeoff: interrupted by signal {signum}{story}", file=sys.stderr, flush=True)
        sys.exit(128 + signum)  # with the signals still blocked: a pending one cannot cut in
    log_phase("exit")
    sys.stdout.flush()
    signal.pthread_sigmask(signal.SIG_UNBLOCK, HANDLED)
    sys.exit(code)
