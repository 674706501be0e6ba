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

from bakeoff.declare.model import Benchmark, Case, ParamValue, RunContext

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


def _is_number(v: ParamValue) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _numeric(values: tuple[ParamValue, ...]) -> bool:
    return bool(values) and all(_is_number(v) for v in values)


def _words(point: tuple[tuple[str, ParamValue], ...]) -> tuple[str, ...]:
    return tuple(f"{k}={v}" for k, v in point)


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
    """Per room, one trial per variant at every value of each word param of its quick grid
    (each is a different mechanism: a map kind, a content, a workload) and the least value of
    each numeric one; a variant that does not apply there (a huge-page move of 4 KiB, legacy
    text at 3 fields) gets the least numeric point where it does, in a further run of the
    room (ctx: the host's, to ask the room; None: no further runs)."""
    runs = []
    for bench in benches:
        profile = bench.profiles.get(FUNCTIONAL_PROFILE) or next(iter(bench.profiles.values()))
        words = {n: v for n, v in profile.params.items() if v and not _numeric(v)}
        numbers = {n: sorted(v, key=float) for n, v in profile.params.items() if _numeric(v)}
        least = tuple((n, v[0]) for n, v in numbers.items())
        params = tuple(f"{n}={','.join(str(x) for x in v)}" for n, v in words.items())
        runs.append(RoomRun(bench.name, profile.name, params + _words(least), 1))
        axes = [[(n, x) for x in v] for n, v in numbers.items()]
        grid = sorted(itertools.product(*axes),
                      key=lambda p: sum(axes[i].index(x) for i, x in enumerate(p)))
        later: dict[tuple[tuple[str, ParamValue], ...], list[str]] = {}
        for word_point in itertools.product(*([(n, x) for x in v] for n, v in words.items())):
            for variant in bench.variants:
                if not _not_applicable(bench, Case(bench.name, variant.name,
                                                   (*word_point, *least)), ctx):
                    continue
                point = next((p for p in grid[1:] if not _not_applicable(
                    bench, Case(bench.name, variant.name, (*word_point, *p)), ctx)), None)
                if point is not None:
                    later.setdefault((*word_point, *point), []).append(variant.name)
        for part, (point, variants) in enumerate(later.items(), 1):
            runs.append(RoomRun(bench.name, profile.name, _words(point), 1, tuple(variants), part))
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
