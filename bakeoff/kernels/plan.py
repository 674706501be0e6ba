"""What each guest runs, and in which order kernels are booted.

Functional: every room once, one trial per variant at the smallest value of each param in
its `quick` grid (numbers: the least; words: the first), so a boot under the emulator
checks every variant in minutes. Timed: the run as asked, on every boot, and the boots in
balanced random blocks: each block boots every kernel once and the first kernel twice (A and
its A/A control A′), in a seeded random order, and the next block in the reverse order
(A B B′ A′ … then A′ B′ B A), so a machine that drifts across the blocks hits every kernel
alike.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import asdict, dataclass
from typing import Any

from bakeoff.declare.model import Benchmark, Case, ParamValue, Profile, RunContext

FUNCTIONAL_PROFILE = "quick"
DEFAULT_BLOCKS = 4  # a timed run's blocks of boots: two ABBA pairs
CONTROL_SUFFIX = "′"  # the A/A control's kernel name: "a′" is a second boot of "a"


@dataclass(frozen=True)
class RoomRun:
    """One room's run inside a guest: `bakeoff run ROOM` with these options."""

    room: str
    profile: str
    params: tuple[str, ...]  # NAME=VALUE each, one value per param
    trials: int | None
    variants: tuple[str, ...] = ()  # only these (and the baseline); empty: every variant
    part: int = 0  # a room's second run (variants the first could not apply) is part 1

    @property
    def dir_name(self) -> str:
        return self.room if self.part == 0 else f"{self.room}+{self.part}"

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "dir": self.dir_name}

    @staticmethod
    def from_json(d: dict[str, Any]) -> RoomRun:
        return RoomRun(str(d["room"]), str(d["profile"]), tuple(d["params"]), d["trials"],
                       tuple(d.get("variants", ())), int(d.get("part", 0)))


def smallest(values: tuple[ParamValue, ...]) -> ParamValue:
    numbers = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    return min(numbers) if numbers and len(numbers) == len(values) else values[0]


def _ordered(values: tuple[ParamValue, ...]) -> list[ParamValue]:
    """A param's values smallest first (numbers by value, words as the grid lists them)."""
    numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
    return sorted(values, key=float) if numeric else list(values)


def _grid(profile: Profile) -> list[tuple[tuple[str, ParamValue], ...]]:
    """Every point of the grid, the smallest first (by the sum of each value's rank)."""
    axes = [[(name, v) for v in _ordered(values)] for name, values in profile.params.items()
            if values]
    points = list(itertools.product(*axes))
    return sorted(points, key=lambda p: sum(axes[i].index(x) for i, x in enumerate(p)))


def _not_applicable(bench: Benchmark, case: Case, ctx: RunContext | None) -> bool:
    """The room's own word that a case cannot apply at its params ("not applicable: ..."),
    which no kernel changes; any other skip is the kernel's to say, in the guest."""
    if bench.skip_case is None or ctx is None:
        return False
    try:
        reason = bench.skip_case(case, ctx)
    except Exception:  # a hook that needs the session's state: the guest will say
        return False
    return bool(reason and reason.startswith("not applicable"))


def functional_runs(benches: list[Benchmark], ctx: RunContext | None = None) -> list[RoomRun]:
    """A trial per variant at the smallest point of each room's grid; a variant that does
    not apply there (a huge-page move of 4 KiB) gets the smallest point where it does, in a
    second run of the room (ctx: the host's, to ask the room)."""
    runs = []
    for bench in benches:
        profile = bench.profiles.get(FUNCTIONAL_PROFILE) or next(iter(bench.profiles.values()))
        grid = _grid(profile)
        first = grid[0] if grid else ()
        runs.append(RoomRun(bench.name, profile.name, tuple(f"{k}={v}" for k, v in first), 1))
        later: dict[tuple[tuple[str, ParamValue], ...], list[str]] = {}
        for variant in bench.variants:
            if not _not_applicable(bench, Case(bench.name, variant.name, first), ctx):
                continue
            point = next((p for p in grid[1:] if not _not_applicable(
                bench, Case(bench.name, variant.name, p), ctx)), None)
            if point is not None:
                later.setdefault(point, []).append(variant.name)
        for part, (point, variants) in enumerate(later.items(), 1):
            runs.append(RoomRun(bench.name, profile.name, tuple(f"{k}={v}" for k, v in point),
                                1, tuple(variants), part))
    return runs


def timed_runs(benches: list[Benchmark], profile: str, params: tuple[str, ...],
               trials: int | None) -> list[RoomRun]:
    """The run as the user asked it, one room at a time (each room's own params)."""
    return [RoomRun(b.name, profile,
                    tuple(p for p in params if p.partition("=")[0] in {q.name for q in b.params}),
                    trials)
            for b in benches]


@dataclass(frozen=True)
class Boot:
    """One boot of the plan: which kernel, in which block, at which place in it."""

    index: int  # 0-based over the whole plan: the order booted
    block: int
    kernel: str  # the kernel's name
    control: bool = False  # the second boot of the first kernel in its block (A′)

    @property
    def label(self) -> str:
        return self.kernel + (CONTROL_SUFFIX if self.control else "")


def functional_order(kernels: list[str]) -> list[Boot]:
    return [Boot(i, 0, k) for i, k in enumerate(kernels)]


def timed_order(kernels: list[str], blocks: int, seed: int) -> list[Boot]:
    """Balanced random blocks: each block every kernel once and the first twice; block 2j a
    seeded shuffle, block 2j+1 its reverse (ABBA)."""
    if len(kernels) < 2 or blocks < 2:
        raise ValueError("a timed plan needs two kernels and two blocks")
    slots = [(kernels[0], False), (kernels[0], True), *((k, False) for k in kernels[1:])]
    rng = random.Random(seed)
    order: list[Boot] = []
    previous: list[tuple[str, bool]] = []
    for block in range(blocks):
        if block % 2 == 0:
            current = slots[:]
            rng.shuffle(current)
        else:
            current = previous[::-1]
        previous = current
        order += [Boot(len(order) + i, block, k, c) for i, (k, c) in enumerate(current)]
    return order
