"""The session's held maps: one dump_loader per (map type, entries), started the first time a
trial needs it and kept for the run (filling a 4M-entry hash map takes seconds), stopped when
the session ends. A trial's reader opens the held map by ID (BAKEOFF_DUMP_MAP_ID) and
watches its loader (BAKEOFF_DUMP_LOADER_PID, bench_watch_env). Each loader is a HeldProcess
(bakeoff.room): its own session, ready when it prints its map's ID, a start bounded in time
and ended by Ctrl-C, stopped with a grace.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass, field

import psutil

from bakeoff.room import HeldProcess, HelperFailed, RunContext, format_bytes

from .memory import bytes_needed, fill_reps

LOADER = "bpf_map_dump/dump_loader"
# The environment dump_loader reads (dump.h): the harness's PID, which it dies with.
ENV_PARENT_PID = "BAKEOFF_DUMP_PARENT_PID"
LOADER_STOP_GRACE_S = 5.0
# A bound on a loader's start, against a hung one, not a guess of its time: filling takes
# about 2 us per entry per round both ways (memory.fill_reps), so 20 us per entry per round
# is ten times that, plus a minute for loading the program and a busy machine.
START_S_PER_ENTRY_ROUND = 20e-6
START_BASE_S = 60.0


@dataclass
class Loader:
    """One held map: its loader process, the map's ID, and the loader's fill timings."""

    helper: HeldProcess
    map_id: int
    fill: dict[str, float]
    last_used: float = field(default_factory=time.monotonic)

    @property
    def pid(self) -> int:
        return self.helper.pid


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
        if loader is not None and not loader.helper.alive():
            # It died (e.g. the OOM killer): a new loader, a new map (a new ID).
            del self.held[key]
            loader.helper.stop()
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
            self.held.pop(key).helper.stop()
            time.sleep(0.5)  # the kernel frees a map's memory in a deferred work item
        available = _available_bytes()
        if available and available < need:
            return (f"needs about {format_bytes(need)} of free memory and "
                    f"{format_bytes(available)} is available")
        return None

    def _start(self, kind: str, entries: int) -> Loader | str:
        """A held loader of a full map; Interrupted (Ctrl-C, SIGTERM) ends its fill at once."""
        problem = self._make_room(bytes_needed(kind, entries))
        if problem:
            return problem
        reps = fill_reps(entries)
        argv = [str(self.ctx.build_dir / LOADER), "--variant", "hold", "--param", f"map={kind}",
                "--param", f"entries={entries}", "--samples", str(reps), "--warmup", "0"]
        helper = HeldProcess(
            "dump_loader", argv, ready=_is_map_id,
            env={ENV_PARENT_PID: str(os.getpid())},
            stderr=self.ctx.scratch_dir / f"loader-{kind}-{entries}.stderr",
            start_timeout_s=START_BASE_S + START_S_PER_ENTRY_ROUND * entries * reps,
            stop_grace_s=LOADER_STOP_GRACE_S)
        try:
            helper.start()
        except HelperFailed as exc:
            return f"the {kind} map of {entries} entries could not be loaded: {exc}"
        map_id, fill = _read_fill(helper.lines)
        return Loader(helper, map_id, fill)

    def stop_all(self) -> None:
        for loader in self.held.values():
            loader.helper.stop()
        self.held.clear()


def _counter(line: str) -> tuple[str, float] | None:
    with contextlib.suppress(ValueError, KeyError, TypeError):
        obj = json.loads(line)
        if isinstance(obj, dict) and obj.get("type") == "counter":
            return str(obj["name"]), float(obj["value"])
    return None


def _is_map_id(line: str) -> bool:
    """The loader's ready line: the counter map_id, printed once the map is full and held."""
    counter = _counter(line)
    return counter is not None and counter[0] == "map_id"


def _read_fill(lines: list[str]) -> tuple[int, dict[str, float]]:
    """The map's ID and the loader's fill counters, from its lines up to map_id."""
    fill: dict[str, float] = {}
    map_id = 0
    for line in lines:
        counter = _counter(line)
        if counter is None:
            continue
        if counter[0] == "map_id":
            map_id = int(counter[1])
        else:
            fill[counter[0]] = counter[1]
    return map_id, fill
