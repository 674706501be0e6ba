"""Loading the slow modules (numpy, scipy, plotly) where they are first needed, with
interrupts held while they load.

They are not imported at start-up because they take seconds, and `list`, `doctor`, `--help`
and every bad-input error should answer at once. But an interrupt that lands while a compiled
extension initialises does not stop bakeoff cleanly: scipy's pybind11 modules (HiGHS, loaded
by `scipy.stats`) turn the KeyboardInterrupt into "ImportError: initialization failed", a
traceback and exit status 1. CI caught exactly that: a SIGINT 2.19 s into a run, landing in the
analysis's first `import scipy.stats`. So SIGINT and SIGTERM are held (blocked, not ignored)
while such a module loads; one that came meanwhile is delivered, to the usual handlers, the
moment loading ends. A Ctrl-C waits at most that long (about 2 s for scipy.stats here).
"""

from __future__ import annotations

import importlib
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

HELD = frozenset({signal.SIGINT, signal.SIGTERM})


@contextmanager
def signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM wait until the body has finished, then arrive as usual.

    Blocking is per thread; Python runs signal handlers in the main thread only, so this is
    meant for the main thread, where bakeoff does its imports.
    """
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, HELD)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def load(module: str) -> ModuleType:
    """`import module`, with interrupts held until it has loaded."""
    with signals_held():
        return importlib.import_module(module)
