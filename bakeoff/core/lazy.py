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
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

HELD = frozenset({signal.SIGINT, signal.SIGTERM})


@contextmanager
def signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM wait until the body has finished, then arrive as usual.

    Blocking is per thread, and the process has threads that do not block them: OpenBLAS
    starts its pool when numpy loads, before any hold. The kernel hands a process-directed
    signal to such a thread; Python's C handler then has the main thread run the Python
    handler at its next bytecode, inside the import, and the "initialization failed" came
    back under load. So the Python handlers are swapped too, for one that only notes the
    signal, which is raised again once the body is done. Meant for the main thread, where
    bakeoff does its imports; elsewhere (signal.signal works in the main thread only) it only
    blocks.
    """
    noted: list[int] = []
    main = threading.current_thread() is threading.main_thread()
    handlers = ({s: signal.signal(s, lambda signum, _frame: noted.append(signum)) for s in HELD}
                if main else {})
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, HELD)
    try:
        yield
    finally:
        for s, handler in handlers.items():
            signal.signal(s, handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)  # a pending one arrives now
        for signum in dict.fromkeys(noted):
            signal.raise_signal(signum)


def load(module: str) -> ModuleType:
    """`import module`, with interrupts held until it has loaded."""
    with signals_held():
        return importlib.import_module(module)
