"""The drift test against hyperfine: a load started halfway through biases back-to-back order
(hyperfine runs A's executions, then B's), not bakeoff cmd's interleaved order.

Machine-wide (MACHINE_WIDE): its load is two busy loops at nice -10 in sessions of that
weight, which take nine tenths of a CPU from whatever else runs there. Beside other live
tests it starved them, and a history test's runs made meanwhile read as a different machine
(docs/RELIABILITY.md, "The whole suite beside two CPU hogs"). Alone, only the fast tier runs
beside it, which times nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from conftest import required_tool, run_bakeoff

MACHINE_WIDE = True


# Raising a task's weight needs root, which the suite has (CI runs as root).
LOAD_NICE = -10


class _LoadHalfway:
    """Watches the --prepare log (one line per execution, naming the CPUs it may run on) and,
    once half of the expected executions have started, keeps those CPUs busy: a drifting
    machine. Bounded in time (`timeout`) and always killed, process group and all."""

    def __init__(self, log: Path, expected: int) -> None:
        self.log, self.expected = log, expected
        self.loads: list[subprocess.Popen[bytes]] = []
        self.started_at: int | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> _LoadHalfway:
        self._thread.start()
        return self

    def _watch(self) -> None:
        while not self._stop.is_set():
            lines = self.log.read_text().splitlines() if self.log.exists() else []
            if len(lines) >= self.expected // 2:
                cpus = _cpu_list(lines[-1].split(":", 1)[1])
                # Two loops per CPU at nice -10 (weight 9548 each against a nice-0 task's
                # 1024): the commands get under a tenth of it, whatever else runs there.
                # Each loop is a session of its own, so under autogroup scheduling its
                # weight is its session's: that is set too (nice alone counts only inside
                # a session, and at nice 0 a busy machine's other sessions had left the
                # loaded B only 1.13x slower than A).
                for cpu in [*cpus, *cpus]:
                    # Its own process group, killed whole: killing `timeout` alone would
                    # leave the loop running.
                    load = subprocess.Popen(
                        ["timeout", "120", "nice", "-n", str(LOAD_NICE), "taskset", "-c",
                         str(cpu), "sh", "-c", "while :; do :; done"], start_new_session=True)
                    self.loads.append(load)
                    autogroup = Path(f"/proc/{load.pid}/autogroup")
                    # Without CONFIG_SCHED_AUTOGROUP nice alone does it; without root the
                    # weights stay at nice 0's and the loaded B may read only a little slower.
                    with contextlib.suppress(FileNotFoundError, PermissionError):
                        autogroup.write_text(str(LOAD_NICE))
                self.started_at = len(lines)
                return
            time.sleep(0.002)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        for p in self.loads:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def _cpu_list(text: str) -> list[int]:
    cpus: list[int] = []
    for part in text.strip().split(","):
        lo, _, hi = part.partition("-")
        cpus += range(int(lo), int(hi or lo) + 1)
    return cpus


@pytest.fixture
def data_file(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    path.write_bytes(os.urandom(1024 * 1024))
    return path


def test_a_load_started_halfway_biases_back_to_back_order_not_interleaved_order(
        executor: Path, tmp_path: Path, data_file: Path) -> None:
    """The same command twice, named A and B. Halfway through, a busy loop takes the CPU the
    commands run on. hyperfine runs A's executions, then B's: B runs under load and reads
    as much slower. bakeoff interleaves trials in seeded order: A and B see the load alike."""
    hyperfine = required_tool("hyperfine")
    work = f"md5sum {data_file}"
    log = tmp_path / "prepare.log"
    # Through sh in both: hyperfine -N runs its --prepare without a shell too.
    prepare = f"sh -c 'grep Cpus_allowed_list /proc/self/status >> {log}'"

    runs = 60
    cpu = max(os.sched_getaffinity(0))
    hf_json = tmp_path / "hyperfine.json"
    with _LoadHalfway(log, expected=2 * runs) as load:
        res = subprocess.run(
            ["taskset", "-c", str(cpu), hyperfine, "-N", "--runs", str(runs), "--warmup", "0",
             "--prepare", prepare, "--export-json", str(hf_json), "-n", "A", "-n", "B",
             work, work], capture_output=True, text=True, timeout=300, check=False)
    assert res.returncode == 0, res.stderr
    assert load.started_at is not None
    hf = {r["command"]: r["mean"] for r in json.loads(hf_json.read_text())["results"]}
    hf_ratio = hf["B"] / hf["A"]

    log.unlink()
    trials, per_trial, warmup = 20, 3, 1
    out = tmp_path / "run"
    bo_json = tmp_path / "bakeoff.json"
    with _LoadHalfway(log, expected=2 * trials * (per_trial + warmup)) as load:
        res = run_bakeoff("cmd", "--out", str(out), "--seed", "7", "--quiet", "--trials",
                          str(trials), "--runs", str(per_trial), "--warmup", str(warmup),
                          "--warmup-trials", "0", "--prepare", prepare, "--export-json",
                          str(bo_json), "-n", "A", "-n", "B", work, work, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    assert load.started_at is not None
    bo = {r["command"]: r["mean"] for r in json.loads(bo_json.read_text())["results"]}
    bo_ratio = bo["B"] / bo["A"]

    # Two heavier busy loops on the same CPU take over nine tenths of it: B's executions
    # under hyperfine run several times as long as A's. Interleaved, each command has about
    # half its trials loaded.
    summary = (f"hyperfine B/A = {hf_ratio:.3f} (means {hf['A'] * 1e3:.2f}, {hf['B'] * 1e3:.2f}"
               f" ms); bakeoff B/A = {bo_ratio:.3f} (means {bo['A'] * 1e3:.2f}, "
               f"{bo['B'] * 1e3:.2f} ms)")
    print(summary)
    assert hf_ratio > 1.3, summary
    assert 0.8 < bo_ratio < 1.25, summary
    assert abs(bo_ratio - 1) < (hf_ratio - 1) / 2, summary
