"""The session's held maps: one dump_loader per (map type, entries), started the first time a
trial needs it and kept for the run (filling a 4M-entry hash map takes seconds), stopped when
the session ends. A trial's reader opens the held map by ID (BAKEOFF_DUMP_MAP_ID).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import FrameType

import psutil

from bakeoff.core import pids as procs
from bakeoff.core.errors import Interrupted
from bakeoff.declare.model import RunContext, format_bytes

from .memory import bytes_needed, fill_reps

LOADER = "bpf_map_dump/dump_loader"
# The environment dump_loader reads (dump.h): the harness's PID, which it dies with.
ENV_PARENT_PID = "BAKEOFF_DUMP_PARENT_PID"
LOADER_STOP_GRACE_S = 5.0


@dataclass
class Loader:
    """One held map: its loader process, the map's ID, and the loader's fill timings."""

    proc: subprocess.Popen[bytes]
    map_id: int
    fill: dict[str, float]
    last_used: float = field(default_factory=time.monotonic)


@contextlib.contextmanager
def _signals_stop(proc: subprocess.Popen[bytes]) -> Iterator[list[int]]:
    """While the harness waits for a loader to fill its map (up to minutes at 100M entries),
    Ctrl-C or SIGTERM kills the loader so the wait ends now; the harness's own handler is
    still called, so it knows the run was interrupted."""
    received: list[int] = []

    def handler(signum: int, frame: FrameType | None) -> None:
        received.append(signum)
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        previous = old[signum]
        if callable(previous):
            previous(signum, frame)

    old: dict[int, signal.Handlers | Callable[[int, FrameType | None], object] | int | None] = {
        s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    for s in old:
        signal.signal(s, handler)
    try:
        yield received
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    procs.stop_child(proc, LOADER_STOP_GRACE_S)
    if proc.stdout:
        proc.stdout.close()


def _available_bytes() -> int:
    return int(psutil.virtual_memory().available)  # the kernel's MemAvailable


class Loaders:
    """The loaders of one run: the session's state, handed to every prepare_trial."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.held: dict[tuple[str, int], Loader] = {}
        self.failed: dict[tuple[str, int], str] = {}

    def get(self, kind: str, entries: int) -> Loader | str:
        """The held map for (kind, entries), or why there is none."""
        key = (kind, entries)
        if key in self.failed:
            return self.failed[key]
        loader = self.held.get(key)
        if loader is not None and loader.proc.poll() is not None:
            del self.held[key]  # it died (e.g. the OOM killer): start another
            loader = None
        if loader is None:
            got = self._start(kind, entries)
            if isinstance(got, str):
                self.failed[key] = got
                return got
            loader = self.held[key] = got
        loader.last_used = time.monotonic()
        return loader

    def _make_room(self, need: int) -> str | None:
        """Stops idle loaders, least recently used first, until `need` bytes are free."""
        while _available_bytes() < need and self.held:
            key = min(self.held, key=lambda k: self.held[k].last_used)
            _stop(self.held.pop(key).proc)
            time.sleep(0.5)  # the kernel frees a map's memory in a deferred work item
        available = _available_bytes()
        if available and available < need:
            return (f"needs about {format_bytes(need)} of free memory and "
                    f"{format_bytes(available)} is available")
        return None

    def _start(self, kind: str, entries: int) -> Loader | str:
        problem = self._make_room(bytes_needed(kind, entries))
        if problem:
            return problem
        err_path = self.ctx.scratch_dir / f"loader-{kind}-{entries}.stderr"
        argv = [str(self.ctx.build_dir / LOADER), "--variant", "hold", "--param", f"map={kind}",
                "--param", f"entries={entries}", "--samples", str(fill_reps(entries)),
                "--warmup", "0"]
        with err_path.open("wb") as err:
            # Its own session: a Ctrl-C at the terminal reaches the harness, which decides.
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=err, start_new_session=True,
                                    env={**os.environ, ENV_PARENT_PID: str(os.getpid())})
        with _signals_stop(proc) as received:
            map_id, fill = _read_fill(proc)
        if received:
            _stop(proc)
            raise Interrupted(received[0])
        if map_id is None:
            _stop(proc)
            lines = err_path.read_text(errors="replace").strip().splitlines()
            why = lines[-1] if lines else f"exit status {proc.returncode}"
            return f"the {kind} map of {entries} entries could not be loaded: {why}"
        return Loader(proc, map_id, fill)

    def stop_all(self) -> None:
        for loader in self.held.values():
            _stop(loader.proc)
        self.held.clear()


def _read_fill(proc: subprocess.Popen[bytes]) -> tuple[int | None, dict[str, float]]:
    """The loader's counter lines up to map_id (printed once the map is full and held)."""
    assert proc.stdout is not None
    fill: dict[str, float] = {}
    for raw in proc.stdout:
        with contextlib.suppress(ValueError):
            line = json.loads(raw)
            if isinstance(line, dict) and line.get("type") == "counter":
                if line["name"] == "map_id":
                    return int(line["value"]), fill
                fill[str(line["name"])] = float(line["value"])
    return None, fill
