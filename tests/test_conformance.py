"""The room contract, checked for every room the registry finds: a new room gets it for free.

Per room, discovered as `bakeoff` discovers them (benchmarks/*/spec.py, or
BAKEOFF_BENCHMARKS_DIR):

- the usage (`--help`) of its trial programs (the spec's `program` and `other_programs`)
  names exactly the spec's variants and params;
  anything else a program accepts is marked "(not in the benchmark's grid)";
- bad arguments exit 2 with one line on stderr and nothing on stdout;
- a quick run measures every variant the spec declares, each trial printing only valid
  protocol lines (the harness parses them with bakeoff.run.protocol and fails a trial on any
  bad line) of declared metrics;
- after that clean run the room's sweep, and the harness's, find nothing left
  (test_conformance_sweep.py: a sweep is machine-wide, so that module runs alone).

The live run is the one the report tests share (conftest `all_rooms_quick_run`), so this
module adds only the programs' own start-ups to the suite.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bakeoff.declare import registry
from bakeoff.declare.model import Benchmark
from bakeoff.run import cleanup
from conftest import IN_CI, saved_results

ROOMS: dict[str, Benchmark] = registry.discover()
NOT_IN_GRID = "(not in the benchmark's grid)"
# A section of a usage text: "variants:" or "params (--param NAME=VALUE):", then one item a
# line, "  NAME   help"; the section ends at the next line that is not indented.
_SECTION = re.compile(r"^(variants|params)\b[^:]*:\s*$")
_ITEM = re.compile(r"^  (\S+)(?:\s+(.*))?$")


@dataclass(frozen=True)
class Usage:
    program: Path
    variants: dict[str, str]  # name -> help line
    params: dict[str, str]


def parse_usage(program: Path, text: str) -> Usage:
    sections: dict[str, dict[str, str]] = {"variants": {}, "params": {}}
    current: dict[str, str] | None = None
    for line in text.splitlines():
        if m := _SECTION.match(line):
            current = sections[m.group(1)]
        elif current is not None and (item := _ITEM.match(line)):
            current[item.group(1)] = item.group(2) or ""
        elif line and not line[0].isspace():
            current = None
    return Usage(program, sections["variants"], sections["params"])


def _help(program: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(program), "--help"], capture_output=True, text=True,
                          timeout=30, check=False, stdin=subprocess.DEVNULL)


def trial_programs(bench: Benchmark, build: Path) -> list[Usage]:
    """The room's programs that speak the protocol for its variants: the declared program
    and the spec's other_programs (bpf-map-dump runs its Go variants with a second reader).
    Nothing else of the build directory is run: a helper (a loader, a charger) may act on
    any argument, --help included."""
    found = []
    for program in (bench.program, *bench.other_programs):
        res = _help(build / program)
        assert res.returncode == 0, f"{build / program} --help: exit {res.returncode}: {res.stderr}"
        found.append(parse_usage(build / program, res.stdout))
    return found


@pytest.fixture(scope="module")
def build(built: Path) -> Path:
    return registry.build_dir()


def _extras_marked(kind: str, usage: Usage, declared: set[str]) -> None:
    items = usage.variants if kind == "variant" else usage.params
    for name, help_line in items.items():
        assert name in declared or NOT_IN_GRID in help_line, (
            f"{usage.program.name} --help names {kind} '{name}', which the spec does not "
            f"declare: declare it, or end its help with {NOT_IN_GRID!r}")
        assert name not in declared or NOT_IN_GRID not in help_line, (
            f"{usage.program.name}: {kind} '{name}' is declared but marked {NOT_IN_GRID!r}")


def check_usage(bench: Benchmark, build: Path) -> None:
    programs = trial_programs(bench, build)
    variants = {v.name for v in bench.variants}
    params = {p.name for p in bench.params}
    named: set[str] = set()
    for usage in programs:
        assert usage.variants, f"{usage.program.name} --help has no 'variants:' section"
        _extras_marked("variant", usage, variants)
        _extras_marked("param", usage, params)
        missing = params - set(usage.params)
        assert not missing, (f"{usage.program.name} --help does not name the param(s) "
                             f"{sorted(missing)} the spec declares")
        named |= set(usage.variants)
    unrun = variants - named
    assert not unrun, (f"no program of {bench.name} names the variant(s) {sorted(unrun)} in its "
                       f"--help (looked at {', '.join(u.program.name for u in programs)})")


def _valid_args(bench: Benchmark) -> list[str]:
    """A variant and one quick value per param: arguments every check passes."""
    argv = ["--variant", bench.baseline.name]
    for p in bench.params:
        argv += ["--param", f"{p.name}={p.to_arg(bench.profiles['quick'].params[p.name][0])}"]
    return argv


BAD_ARGUMENTS = {
    "no arguments": lambda ok: [],
    "unknown variant": lambda ok: ["--variant", "no-such-variant", *ok[2:]],
    "unknown option": lambda ok: [*ok, "--no-such-option"],
    "unknown param": lambda ok: [*ok, "--param", "no_such_param=1"],
    "param without value": lambda ok: [*ok[:2], "--param"],
    "zero samples": lambda ok: [*ok, "--samples", "0"],
    "samples not a number": lambda ok: [*ok, "--samples", "ten"],
    "negative warm-up": lambda ok: [*ok, "--warmup", "-1"],
}


def check_bad_arguments(bench: Benchmark, build: Path) -> None:
    for usage in trial_programs(bench, build):
        ok = _valid_args(bench)
        if usage.program != build / bench.program:  # a second program: one of its variants
            ok[1] = next(v for v in usage.variants if v in {x.name for x in bench.variants})
        for what, make in BAD_ARGUMENTS.items():
            argv = [str(usage.program), *make(ok)]
            res = subprocess.run(argv, capture_output=True, text=True, timeout=30,
                                 check=False, stdin=subprocess.DEVNULL)
            shown = f"{usage.program.name} ({what}): {argv[1:]}"
            assert res.returncode == 2, f"{shown} exited {res.returncode}: {res.stderr}"
            lines = res.stderr.strip().splitlines()
            assert len(lines) == 1, f"{shown} printed {len(lines)} lines: {res.stderr}"
            assert lines[0].startswith(f"{usage.program.name}: "), (
                f"{shown}: stderr does not start with the program's name: {lines[0]}")
            assert res.stdout == "", f"{shown} printed on stdout: {res.stdout[:200]}"


@pytest.fixture(scope="module")
def quick_run(all_rooms_quick_run: Path) -> Iterator[dict[str, Any]]:
    yield saved_results(all_rooms_quick_run)


def check_quick_run(bench: Benchmark, quick_run: dict[str, Any]) -> None:
    trials = [t for t in quick_run["trials"]
              if t["case"]["benchmark"] == bench.name]
    skips = [s for s in quick_run["skips"]
             if s["case"]["benchmark"] == bench.name]
    assert trials, f"the quick run measured nothing of {bench.name}"
    declared = {m.name for m in bench.metrics}
    for t in trials:
        assert t["status"] == "ok", f"{t['case']}: {t['error']}"
        assert any(t["samples"].values()), f"{t['case']}: no sample"
        # Counted samples (--counted-samples, counters.h) print a declared metric as
        # counted.<metric> and their kernel counters as per_op.<counter>.
        printed = {m.removeprefix("counted.") for m in t["samples"]
                   if not m.startswith("per_op.")}
        assert printed <= declared, (
            f"{t['case']}: samples of undeclared metric(s) {printed - declared}")
        assert all(v == v for vs in t["samples"].values() for v in vs)  # no NaN
        # Contention (bakeoff/run/contention.py), recorded for every trial of every room:
        # what can hold at any load. CPU time within wall time x CPUs (rusage ticks: 10 ms);
        # the wait of the trial process, never negative.
        c = t.get("contention")
        assert c is not None, f"{t['case']}: no contention recorded"
        assert c["run_delay_s"] is not None and c["run_delay_s"] >= 0, (t["case"], c)
        assert 0 <= c["cpu_s"] <= t["wall_s"] * c["cpus"] + 0.01, (t["case"], t["wall_s"], c)
        assert c["steal_s"] >= 0 and c["nivcsw"] >= 0 and c["load"] >= 0, (t["case"], c)
    # Not every variant prints the primary metric (heap-sampling's baseline has no added
    # cost to print), but some must, or the report has nothing to rank.
    assert any(bench.primary_metric.name in t["samples"] for t in trials), (
        f"no trial printed the primary metric {bench.primary_metric.name}")
    measured = {t["case"]["variant"] for t in trials}
    for v in bench.variants:
        if v.name in measured:
            continue
        reasons = {s["reason"] for s in skips if s["case"]["variant"] == v.name}
        assert reasons, f"variant {v.name} was neither measured nor skipped"
        # A skip for want of something this machine has would hide a broken variant in CI.
        assert not IN_CI or all(r.startswith("not applicable") for r in reasons), (
            f"variant {v.name} was not measured in CI: {reasons}")


def check_nothing_to_sweep(bench: Benchmark, quick_run: dict[str, Any]) -> None:
    assert quick_run["status"] == "complete"
    left = cleanup.sweep([bench])
    assert left == [], f"after a clean run of {bench.name} the sweep removed: {left}"


# ---- every discovered room ------------------------------------------------------------------


@pytest.mark.parametrize("room", list(ROOMS))
def test_usage_names_the_specs_variants_and_params(room: str, build: Path) -> None:
    check_usage(ROOMS[room], build)


@pytest.mark.parametrize("room", list(ROOMS))
def test_bad_arguments_exit_2_with_one_line(room: str, build: Path) -> None:
    check_bad_arguments(ROOMS[room], build)


@pytest.mark.parametrize("room", list(ROOMS))
def test_a_quick_run_measures_every_variant(room: str, quick_run: dict[str, Any]) -> None:
    check_quick_run(ROOMS[room], quick_run)

