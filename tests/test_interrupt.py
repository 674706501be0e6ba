"""Ctrl-C and SIGTERM mid-run: the run stops, keeps every finished trial, leaves nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO, marked_env, marked_processes, wait_for_trials


def _scratch_dirs(pid: int) -> set[str]:
    """The run's temp dirs: each carries its PID (other runs may be going on at once)."""
    return {p.name for p in Path(tempfile.gettempdir()).glob(f"bakeoff-{pid}-*")}


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_signal_mid_run_keeps_results_and_cleans_up(built: Path, tmp_path: Path,
                                                    signum: int) -> None:
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "bakeoff", "run", "mremap-vs-memcpy", "--profile", "quick",
         "--trials", "50", "--out", str(out), "--quiet"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=marked_env(out.name + str(signum)))
    wait_for_trials(out, 3)
    os.kill(proc.pid, signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum, err
    assert "Traceback" not in err
    assert "trials finished so far are kept in" in err
    data = json.loads((out / "results.json").read_text())
    assert data["status"] == "interrupted"
    assert len(data["trials"]) >= 3
    assert all(t["status"] == "ok" for t in data["trials"])  # the one in flight is not kept
    # Each case's trial indices are 0..k-1: nothing lost, nothing twice.
    seen: dict[str, list[int]] = {}
    for t in data["trials"]:
        seen.setdefault(json.dumps(t["case"], sort_keys=True), []).append(t["index"])
    assert all(sorted(v) == list(range(len(v))) for v in seen.values())
    assert not _scratch_dirs(proc.pid), "a bakeoff temp dir was left behind"
    # No measured program outlives the harness.
    assert marked_processes(out.name + str(signum)) == []


def test_trial_gets_sigterm_to_clean_up_before_sigkill(tmp_path: Path) -> None:
    """A trial holding a resource is asked to stop (SIGTERM) and given time to remove it."""
    marker = tmp_path / "resource"
    env = {**os.environ, "BAKEOFF_BENCHMARKS_DIR": str(FIXTURES / "rooms"),
           "BAKEOFF_BUILD_DIR": str(FIXTURES / "build"), "FLAKY_MARKER": str(marker)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "bakeoff", "run", "flaky", "--variant", "cleanup",
         "--param", "n=1", "--out", str(tmp_path / "run"), "--quiet"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists(), "the trial never started"
    os.kill(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert not marker.exists(), "the trial was killed before it could clean up"
