"""The runner's rules of order, checked in-process on a fixture room whose program notes
every execution (as hyperfine tests its execution order): each round runs every case once
before the next round starts, the order within a round comes from the recorded seed, and
warm-up rounds run first and are never recorded.

The fixture room `order` (tests/fixtures/rooms/order): 3 variants x 2 values of n, 2
warm-up rounds, 4 measured rounds; its program, a shell script since it starts dozens of
times, appends "<variant> <n>" to $ORDER_LOG.
"""

from __future__ import annotations

import random
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from rich.console import Console

from bakeoff.declare import registry
from bakeoff.declare.model import Benchmark, Case, RunContext, RunRecord, RunSettings
from bakeoff.machine import host
from bakeoff.plan.cases import BenchmarkPlan, plan_benchmark
from bakeoff.run.runner import RunOptions, measure, new_run
from conftest import FIXTURES

ROOMS, BUILD = FIXTURES / "rooms", FIXTURES / "build"


@pytest.fixture(scope="module")
def order_room() -> Iterator[Benchmark]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BAKEOFF_BENCHMARKS_DIR", str(ROOMS))
        mp.setenv("BAKEOFF_BUILD_DIR", str(BUILD))
        yield registry.discover()["order"]


@dataclass(frozen=True)
class Measured:
    run: RunRecord
    plan: BenchmarkPlan
    log: list[str]  # what the program saw, in the order it ran


def _measure(bench: Benchmark, tmp: Path, seed: int) -> Measured:
    log = tmp / "order.log"
    facts = host.facts()
    ctx = RunContext(build_dir=BUILD, scratch_dir=tmp, capabilities={}, host=facts)
    plan = plan_benchmark(bench, "quick", [], {}, None, None, {}, ctx)
    quiet = Console(quiet=True)
    opts = RunOptions(out=tmp / "run", results_root=tmp, build_dir=BUILD, seed=seed,
                      quiet=True, argv=["test"], profile="quick",
                      # No retakes: the order of every execution is what is checked here;
                      # a retake under load would add one (tests/test_contention.py).
                      settings=RunSettings(pin=False, retakes=0))
    # measure() latches SIGINT and SIGTERM for the rest of a bakeoff process; here the
    # process is pytest's, which gets its handlers back.
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("ORDER_LOG", str(log))
            run, run_dir = new_run([plan], opts, facts, quiet)
            measure(run, run_dir, [plan], quiet, ctx, quiet=True)
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)
    return Measured(run, plan, log.read_text().splitlines())


@pytest.fixture(scope="module")
def seed_7(order_room: Benchmark, tmp_path_factory: pytest.TempPathFactory) -> Measured:
    return _measure(order_room, tmp_path_factory.mktemp("seed-7"), 7)


def _label(case: Case) -> str:
    return f"{case.variant} {case.param('n')}"


def _rounds(lines: list[str], width: int) -> list[list[str]]:
    return [lines[i:i + width] for i in range(0, len(lines), width)]


@pytest.mark.slow(live=False)
def test_every_round_runs_every_case_once_warm_ups_first(seed_7: Measured) -> None:
    plan, log = seed_7.plan, seed_7.log
    profile, cases = plan.profile, plan.cases
    assert len(cases) == 6
    rounds = _rounds(log, len(cases))
    assert len(rounds) == profile.warmup_trials + profile.trials
    for executed in rounds:  # interleaved: no case runs twice before every case ran once
        assert sorted(executed) == sorted(_label(c) for c in cases)


@pytest.mark.slow(live=False)
def test_warm_ups_are_never_recorded(seed_7: Measured) -> None:
    run, plan, log = seed_7.run, seed_7.plan, seed_7.log
    warm = plan.profile.warmup_trials * len(plan.cases)
    assert len(log) == warm + plan.profile.trials * len(plan.cases)
    assert len(run.trials) == plan.profile.trials * len(plan.cases)
    seqs = sorted(int(t.meta["seq"]) for t in run.trials)
    # The record holds exactly the executions after the warm-up rounds, each once.
    assert seqs == list(range(warm, len(log)))
    for t in run.trials:
        seq = int(t.meta["seq"])
        assert log[seq] == _label(t.case)
        assert t.round == (seq - warm) // len(plan.cases)
    assert {t.index for t in run.trials} == set(range(plan.profile.trials))


@pytest.mark.slow(live=False)
def test_the_order_is_the_recorded_seeds(order_room: Benchmark, seed_7: Measured,
                                         tmp_path: Path) -> None:
    run, plan, log = seed_7.run, seed_7.plan, seed_7.log
    # Replayed from the record alone: one generator per benchmark from the seed and the
    # first round, shuffling the plan's cases once per round, warm-ups included.
    rng = random.Random(f"{run.seed}:{order_room.name}:0")
    expected: list[str] = []
    for _ in range(plan.profile.warmup_trials + plan.profile.trials):
        shuffled = list(plan.cases)
        rng.shuffle(shuffled)
        expected += [_label(c) for c in shuffled]
    assert run.seed == 7 and log == expected

    (tmp_path / "again").mkdir()
    assert _measure(order_room, tmp_path / "again", 7).log == log
    (tmp_path / "other").mkdir()
    other = _measure(order_room, tmp_path / "other", 8).log
    # Six cases in six rounds: the chance that another seed gives the same order is 720^-6.
    assert other != log and sorted(other) == sorted(log)
