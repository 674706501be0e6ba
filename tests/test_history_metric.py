"""Which metric decides a history, said: real `bakeoff cmd --instructions 1` runs of a tiny
awk loop (base; same, the identical loop; work, +10% iterations from the fourth run on)
recorded with `bakeoff history add`. By default a wall-time series whose every run counted
instructions is decided on the count and says so; a wall-time series that found no change,
every run of which recorded a metric a busy machine moves less, names it with the command
that lists it; a run without the count takes the count away from both.

The assertions hold at any load: the instruction count of an awk loop is the same in every
execution (so +10% iterations is a step of +9.9% in every run, found once three runs stand on
each side), and the A/A series "same" is what a false change point would have to come from
(none in 1000 runs of any metric beside two CPU hogs, docs/STATISTICS.md)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from conftest import live_run_lock, run_bakeoff

pytestmark = pytest.mark.slow

STEP_AT = 3  # runs 0-2: work == base; runs 3-5: work does 10% more iterations
RUNS = 6  # the fewest with three runs either side, as a change point needs
LOOP = "awk 'BEGIN{{for(i=0;i<{n};i++)s+=i}}'"


def _cmd(out: Path, n_work: int, *extra: str) -> None:
    res = run_bakeoff("cmd", "-n", "base", "-n", "same", "-n", "work", "--trials", "2",
                      "--runs", "2", "--warmup-trials", "0", "--retakes", "0", "-q",
                      "--out", str(out), *extra, LOOP.format(n=100000),
                      LOOP.format(n=100000), LOOP.format(n=n_work), timeout=900)
    assert res.returncode == 0, res.stderr[-2000:]


@pytest.fixture(scope="module")
def histories(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """Two histories: the six counted runs, and the same with a seventh that did not count."""
    work = tmp_path_factory.mktemp("history-metric")
    counted = [work / f"run{i}" for i in range(RUNS)]
    plain = work / "plain"
    with live_run_lock("test_history_metric.py"):
        for i, run_dir in enumerate(counted):
            _cmd(run_dir, 100000 if i < STEP_AT else 110000, "--instructions", "1")
        _cmd(plain, 110000)
    both = (str(work / "counted.sqlite"), str(work / "mixed.sqlite"))
    for history, dirs in zip(both, (counted, [*counted, plain]), strict=True):
        res = run_bakeoff("history", "add", *map(str, dirs), "--history", history)
        assert res.returncode == 0, res.stderr
    return both


def _series(history: str, *args: str) -> dict[str, list[str]]:
    """`bakeoff history` per series: its heading's first two words (cmd/work instructions)
    -> its lines."""
    res = run_bakeoff("history", "--history", history, *args)
    assert res.returncode == 0, res.stderr
    out: dict[str, list[str]] = {}
    for block in res.stdout.strip().split("\n\n"):
        lines = block.splitlines()
        out[" ".join(lines[0].split()[:2])] = lines
    return out


def test_a_history_that_counted_instructions_is_decided_on_them(
        histories: tuple[str, str]) -> None:
    counted, _ = histories
    series = _series(counted)
    assert set(series) == {"cmd/base instructions", "cmd/same instructions",
                           "cmd/work instructions"}, list(series)
    for lines in series.values():
        said = " ".join(lines)
        assert "decided on instructions, not the primary wall_time: every run counted them" in said
        assert f"`bakeoff history --history {counted} --metric wall_time` lists" in said
        assert "which a busy machine moves less" not in said  # nothing decides better
    work = series["cmd/work instructions"]
    changes = [i for i, ln in enumerate(work) if "level changed (worse)" in ln]
    assert len(changes) == 1, work
    # Under the heading and the column names, the change sits just before run STEP_AT.
    assert changes[0] == 2 + STEP_AT, work
    ratio = float(re.search(r"runs, ×(\d+\.\d+) \[", work[changes[0]]).group(1))  # type: ignore[union-attr]
    assert 1.05 < ratio < 1.10  # 10% more iterations; awk's start-up is a fixed count
    assert "no change of level found on instructions" in " ".join(series["cmd/same instructions"])


def test_wall_time_that_found_nothing_names_the_count_and_how(
        histories: tuple[str, str]) -> None:
    counted, _ = histories
    series = _series(counted, "--metric", "wall_time")
    assert set(series) == {"cmd/base wall_time", "cmd/same wall_time", "cmd/work wall_time"}
    hint = ("decided on wall_time, which waiting for a CPU lengthens; every run also "
            "recorded instructions")
    again = shlex.join(["bakeoff", "history", "--history", counted, "--metric", "instructions",
                        "--benchmark", "cmd"])
    for name, lines in series.items():
        said = " ".join(lines)
        assert "decided on instructions" not in said  # asked for wall_time: it decides
        found = "no change of level found on wall_time" not in said
        # The hint stands exactly where wall time found nothing (the A/A series, "same",
        # whatever the load; work where the load hid its step).
        assert (hint in said) == (not found), (name, lines)
        if not found:
            assert f"`{again}` lists it" in said
    assert "no change of level found on wall_time" in " ".join(series["cmd/same wall_time"])


def test_a_run_without_the_count_leaves_wall_time_deciding(histories: tuple[str, str]) -> None:
    _, mixed = histories
    series = _series(mixed)
    assert set(series) == {"cmd/base wall_time", "cmd/same wall_time", "cmd/work wall_time"}
    same = " ".join(series["cmd/same wall_time"])
    assert "decided on instructions" not in same
    # Every run recorded cpu_time (cmd always does); not every run counted instructions.
    assert ("decided on wall_time, which waiting for a CPU lengthens; every run also "
            "recorded cpu_time, which a busy machine moves less") in same
    assert "recorded instructions" not in same
    assert "--metric cpu_time --benchmark cmd` lists it" in same
    # On cpu_time, nothing recorded in every run decides better: no hint.
    on_cpu = _series(mixed, "--metric", "cpu_time")
    assert "which a busy machine moves less" not in " ".join(on_cpu["cmd/same cpu_time"])
    # The count still lists on its own, over the runs that counted it.
    on_count = _series(mixed, "--metric", "instructions")
    assert on_count["cmd/same instructions"][0].endswith(f": {RUNS} runs")
