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

import random
from dataclasses import asdict, dataclass
from typing import Any

from bakeoff.declare.model import Benchmark, ParamValue

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

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(d: dict[str, Any]) -> RoomRun:
        return RoomRun(str(d["room"]), str(d["profile"]), tuple(d["params"]), d["trials"])


def smallest(values: tuple[ParamValue, ...]) -> ParamValue:
    numbers = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    return min(numbers) if numbers and len(numbers) == len(values) else values[0]


def functional_runs(benches: list[Benchmark]) -> list[RoomRun]:
    """One short run per room: a trial per variant at the smallest params of its grid."""
    runs = []
    for bench in benches:
        profile = bench.profiles.get(FUNCTIONAL_PROFILE) or next(iter(bench.profiles.values()))
        params = tuple(f"{name}={smallest(values)}" for name, values in profile.params.items()
                       if values)
        runs.append(RoomRun(bench.name, profile.name, params, 1))
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
