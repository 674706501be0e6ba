"""Every room the registry finds, and the cheapest case of each, for the reliability suites.

Suites that used to name the five rooms iterate over `ROOMS` instead, so a new room gets
their coverage for free. A room a suite has no tuned grid for runs `cheapest_args()`: its
quick profile cut to one variant besides the baseline and one value per param, chosen so
the case applies (a spelled-out case that cannot apply exits 2, bakeoff/plan/cases.py).
"""

from __future__ import annotations

import itertools
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from bakeoff.declare import registry
from bakeoff.declare.model import Benchmark, Case, RunContext
from bakeoff.machine.host import capabilities, facts

ROOMS: dict[str, Benchmark] = registry.discover()


def check_tuned(suite: str, names: Iterable[str]) -> None:
    """A room renamed or removed would lose its tuned case silently (the suite would give
    the new name the generic one): with the repository's rooms, every tuned name exists."""
    stale = set(names) - set(ROOMS)
    if stale and "BAKEOFF_BENCHMARKS_DIR" not in os.environ:
        raise AssertionError(f"{suite} tunes {sorted(stale)}, which no room declares")


def _applies(bench: Benchmark, case: Case, ctx: RunContext) -> bool:
    return bench.skip_case is None or bench.skip_case(case, ctx) is None


def cheapest_args(bench: Benchmark) -> tuple[str, ...]:
    """--variant V --param NAME=VALUE...: the first non-baseline variant and the first quick
    values (in the profile's order, smallest first where it is sorted) that apply here."""
    quick = bench.profiles["quick"]
    caps = capabilities()
    ctx = RunContext(build_dir=registry.build_dir(), scratch_dir=Path(tempfile.gettempdir()),
                     capabilities={k: c.available for k, c in caps.items()}, host=facts())
    runnable = [v for v in bench.variants if not v.baseline
                and all(caps[r].available for r in (*bench.requires, *v.requires))]
    for variant in [*runnable, bench.baseline]:
        for combo in itertools.product(*(quick.params[p.name] for p in bench.params)):
            values = tuple(zip((p.name for p in bench.params), combo, strict=True))
            case = Case(bench.name, variant.name, values)
            if _applies(bench, case, ctx) and _applies(
                    bench, Case(bench.name, bench.baseline.name, values), ctx):
                args = ["--variant", variant.name]
                for p in bench.params:
                    args += ["--param", f"{p.name}={p.to_arg(case.param(p.name))}"]
                return tuple(args)
    raise AssertionError(f"{bench.name}: no case of its quick profile applies on this machine")
