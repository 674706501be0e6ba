"""Contention per trial (bakeoff/run/contention.py, report/contention.py): recorded for every
trial, sane against what can hold at any load, said in report.md's first lines; trials that
waited past the threshold retaken, none under a threshold no trial can reach; and `cmd
--instructions`, the count load does not move.

Real runs of `bakeoff cmd`, some beside a real CPU hog (stress-ng --cpu 2, started and stopped
here, bounded by its own --timeout). Nothing asserts a quiet machine: a busy one only adds
wait, which every assertion allows.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bakeoff.declare.model import Contention
from bakeoff.report import contention as report_contention
from bakeoff.run import contention
from bakeoff.store import results as store
from conftest import required_tool, run_bakeoff

LOOP = "i=0; while [ $i -lt {n} ]; do i=$((i+1)); done"


@pytest.fixture
def hog() -> Iterator[None]:
    """Two CPU hogs for the test's length (at most 300 s), stopped by their group's id."""
    found = required_tool("stress-ng")
    proc = subprocess.Popen([found, "--cpu", "2", "--timeout", "300", "--quiet"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        yield
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _cmd(built: Path, out: Path, *args: str, trials: int = 3) -> dict[str, Any]:
    res = run_bakeoff("cmd", "--out", str(out), "--seed", "3", "--quiet", "--trials", str(trials),
                      "-r", "3", "--warmup-trials", "0", *args, timeout=900)
    assert res.returncode == 0, res.stdout + res.stderr
    return dict(json.loads((out / "results.json").read_text()))


def _first_lines(out: Path, n: int = 4) -> str:
    return "\n".join((out / "report.md").read_text().splitlines()[:n])


def _check_sane(t: dict[str, Any]) -> None:
    c = t["contention"]
    assert c is not None, t
    assert c["run_delay_s"] is not None and c["run_delay_s"] >= 0
    # rusage ticks are 1 ms at worst (CONFIG_HZ); a trial cannot use more CPUs than exist.
    assert 0 <= c["cpu_s"] <= t["wall_s"] * c["cpus"] + 0.01
    assert c["steal_s"] >= 0 and c["nivcsw"] >= 0 and c["load"] >= 0 and c["cpus"] >= 1
    # Waiting and running both happen inside the trial's wall time (one process at a time
    # here: the commands run one after another).
    assert c["run_delay_s"] <= t["wall_s"] + 0.01


def test_every_trial_records_its_contention_and_the_report_says_it(
        built: Path, tmp_path: Path) -> None:
    data = _cmd(built, tmp_path / "run", "sh -c '" + LOOP.format(n=2000) + "'",
                "sh -c '" + LOOP.format(n=4000) + "'")
    assert len(data["trials"]) == 6
    for t in [*data["trials"], *data["retaken"]]:
        _check_sane(t)
    run = store.load(tmp_path / "run")  # read back as every later layer reads it
    assert all(isinstance(t.contention, Contention) for t in run.trials)
    assert "ontended: " in _first_lines(tmp_path / "run")


def test_beside_a_cpu_hog_trials_wait_and_the_report_says_contended(
        built: Path, tmp_path: Path, hog: None) -> None:
    data = _cmd(built, tmp_path / "run", "--retakes", "0", "sh -c '" + LOOP.format(n=4000) + "'",
                "sh -c '" + LOOP.format(n=2000) + "'")
    waits = [t["contention"]["run_delay_s"] for t in data["trials"]]
    assert sum(waits) > 0, waits
    assert data["retaken"] == []
    head = _first_lines(tmp_path / "run")
    assert "Contended: trial processes waited" in head, head
    # Each finding whose cases were contended says so in its own line, and no other does.
    contended = report_contention.contended_cases(store.load(tmp_path / "run"))
    lines = [ln for ln in (tmp_path / "run" / "report.md").read_text().splitlines()
             if ln.startswith("- ")]
    marked = [ln for ln in lines if "† Contended: the trials of" in ln]
    assert bool(marked) == bool(contended), (contended, lines)


def test_a_low_threshold_retakes_within_the_budget_then_stops(
        built: Path, tmp_path: Path, hog: None) -> None:
    data = _cmd(built, tmp_path / "run", "--retake-above", "0.001", "--retakes", "1",
                "sh -c '" + LOOP.format(n=2000) + "'", trials=6)
    assert len(data["trials"]) == 6  # the trials asked for, whatever was retaken
    retaken = data["retaken"]
    assert retaken, "no trial retaken beside two CPU hogs at a 0.001% threshold"
    # At most one retake per trial, within the run-wide budget (half the trials measured
    # before each retake), and none after RETAKE_FUTILE_AFTER retaken trials found no
    # attempt under the threshold: every attempt waits a little, so that is all of them.
    assert len(retaken) <= max(1, contention.RETAKE_BUDGET_SHARE * 6)
    assert len(retaken) <= contention.RETAKE_FUTILE_AFTER
    if len(retaken) == contention.RETAKE_FUTILE_AFTER:
        assert any("retakes stopped" in w for w in data["warnings"]), data["warnings"]
    for t in retaken:
        assert "waited" in t["retaken_because"] and "retaken above" in t["retaken_because"]
        _check_sane(t)
    head = _first_lines(tmp_path / "run")
    assert f"{len(retaken)} trial{'s' if len(retaken) != 1 else ''} retaken" in head, head


def test_a_threshold_no_trial_can_reach_retakes_none(built: Path, tmp_path: Path) -> None:
    # One process at a time waits at most its wall time: 100000% is never reached.
    data = _cmd(built, tmp_path / "run", "--retake-above", "100000",
                "sh -c '" + LOOP.format(n=2000) + "'")
    assert data["retaken"] == [] and len(data["trials"]) == 3
    assert "0 trials retaken" in _first_lines(tmp_path / "run")


def test_instructions_count_the_work_and_repeat_exactly(built: Path, tmp_path: Path) -> None:
    required_tool("valgrind")
    # sh -c inside the command: the shell's start-up (~0.1% of these counts) stays in both.
    data = _cmd(built, tmp_path / "run", "--instructions", "1", "-n", "once", "-n", "twice",
                "sh -c '" + LOOP.format(n=3000) + "'", "sh -c '" + LOOP.format(n=6000) + "'")
    counts: dict[str, list[float]] = {}
    for t in data["trials"]:
        counts.setdefault(t["case"]["variant"], []).extend(t["samples"]["instructions"])
    once, twice = counts["once"], counts["twice"]
    assert len(once) == len(twice) == 3
    # Identical commands read identically: user-space instructions do not move with load.
    for values in (once, twice):
        assert (max(values) - min(values)) / min(values) < 0.001, values
    # Twice the loop's iterations, twice the instructions.
    assert 1.95 < twice[0] / once[0] < 2.05, (once, twice)
    assert "instructions" in {m["name"] for m in data["benchmarks"]["cmd"]["metrics"]}


def test_a_trials_own_threads_waiting_for_each_other_is_not_contention() -> None:
    """A Go reader's runtime threads on its one CPU (bpf-map-dump's go-batch in an idle
    `make bench`, docs/RELIABILITY.md): 0.24 s of run-queue wait in a 0.54 s trial that used
    0.52 s of CPU. Other work held its CPU for at most 0.02 s of that, which is what the
    share counts."""
    go_batch = Contention(cpu_s=0.517, run_delay_s=0.239, steal_s=0.0, nivcsw=566, load=1.05,
                          cpus=2, trial_cpus=1)
    assert go_batch.others_wait_s(0.541) == pytest.approx(0.024)
    share = go_batch.wait_share(0.541)
    assert share is not None and share < 0.05
    assert contention.retake_reason(go_batch, 0.541, 0.25) is None
    # The same wait beside a hog on its CPU: half the wall went to other work, all of the
    # wait can be its doing.
    shared = Contention(cpu_s=0.27, run_delay_s=0.26, steal_s=0.0, nivcsw=300, load=3.0,
                        cpus=2, trial_cpus=1)
    assert shared.wait_share(0.541) == pytest.approx(0.26 / 0.541)
    assert contention.retake_reason(shared, 0.541, 0.25) is not None
    # A record from before trial_cpus: bounded by the CPUs online, as loose as it can be.
    old = store._contention_from_json({k: v for k, v in go_batch.__dict__.items()
                                       if k != "trial_cpus"})
    assert old is not None and old.trial_cpus == 0
    assert old.others_wait_s(0.541) == pytest.approx(0.239)


def test_two_processes_on_the_trials_one_cpu_wait_for_each_other_not_for_others(
        built: Path, tmp_path: Path) -> None:
    """A command that busy-loops beside a child of its own for 0.3 s, on the one CPU the run
    claims for the trial: the command waits for its child (its run-queue wait is a large
    share of the wall at any load), while the wait other work can have caused stays within
    what the CPU left over, which is what the share and the retake rule count."""
    busy = tmp_path / "busy.py"
    busy.write_text("import os, time\n"
                    "child = os.fork()\n"
                    "end = time.monotonic() + 0.3\n"
                    "while time.monotonic() < end:\n"
                    "    pass\n"
                    "if child == 0:\n"
                    "    os._exit(0)\n"
                    "os.waitpid(child, 0)\n")
    data = _cmd(built, tmp_path / "run", "--retakes", "0", f"python3 {busy}")
    for t in data["trials"]:
        c = t["contention"]
        assert c is not None and c["run_delay_s"] is not None, t
        assert c["trial_cpus"] == 1, c
        assert c["run_delay_s"] / t["wall_s"] > 0.3, c  # the two processes' wait for each other
        counted = Contention(**c).others_wait_s(t["wall_s"])
        assert counted is not None
        assert counted <= min(c["run_delay_s"], max(0.0, t["wall_s"] - c["cpu_s"])) + 1e-9
