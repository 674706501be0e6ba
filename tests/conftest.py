"""Helpers to run bakeoff as a user does: a subprocess, its exit code, stdout and stderr."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from bakeoff import store

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
IN_CI = os.environ.get("CI") == "true"


def run_bakeoff(*args: str, env: dict[str, str] | None = None,
                timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bakeoff", *args], cwd=REPO, capture_output=True, text=True,
        env={**os.environ, "COLUMNS": "200", **(env or {})}, timeout=timeout, check=False,
    )


def assert_usage_error(res: subprocess.CompletedProcess[str], needle: str,
                       fix: str | None = None) -> None:
    """Exit 2, one line on stderr that names the problem, no traceback; given fix, the line
    names the fix too (the house style: `what: problem; fix`)."""
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert "Traceback" not in res.stderr
    assert needle in lines[0], lines[0]
    if fix is not None:
        assert fix in lines[0], lines[0]


def build_dir() -> Path:
    return REPO / "build"


@pytest.fixture(scope="session")
def built() -> Path:
    """The C programs, built by `make build` (make test builds them first)."""
    prog = build_dir() / "mremap_vs_memcpy" / "mremap_bench"
    if not prog.exists():
        subprocess.run(["make", "-C", str(REPO / "benchmarks")], check=True)
    return build_dir()


@pytest.fixture(scope="session")
def mremap_quick_run(built: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One real `bakeoff run mremap-vs-memcpy --profile quick`, shared by the tests that
    check its results directory and its report."""
    out = tmp_path_factory.mktemp("mremap") / "run"
    res = run_bakeoff("run", "mremap-vs-memcpy", "--profile", "quick", "--out", str(out),
                      "--seed", "11")
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"wrote {out}/report.html" in res.stdout
    return out


def saved_results(run_dir: Path) -> dict[str, Any]:
    """results.json as JSON with the trials a running or killed run has only in its journal
    (trials.jsonl) merged in: what `bakeoff report` would read."""
    return store.load_json(run_dir)


def trials_on_disk(run_dir: Path) -> int:
    """How many trials a (possibly running) run has saved; 0 before its results.json."""
    try:
        return len(saved_results(run_dir)["trials"])
    except (OSError, ValueError, KeyError):
        return 0


def wait_for_trials(run_dir: Path, n: int, timeout_s: float = 120) -> None:
    """Block until a running `bakeoff run` has saved n trials (to interrupt it mid-way)."""
    deadline = time.monotonic() + timeout_s
    while trials_on_disk(run_dir) < n:
        assert time.monotonic() < deadline, f"the run saved fewer than {n} trials in {timeout_s} s"
        time.sleep(0.02)


def cgroup_without_memory() -> Path:
    """A mounted cgroup hierarchy with no memory controller: a wrong --param cgroup=."""
    for line in Path("/proc/self/mounts").read_text().splitlines():
        _, point, fstype, *_ = line.split()
        if fstype in ("cgroup", "cgroup2") and not Path(point, "memory.stat").exists():
            return Path(point)
    pytest.fail("no cgroup hierarchy without the memory controller to test with")


def marked_env(marker: str) -> dict[str, str]:
    """An environment whose every descendant process can be found again by marker, even
    after it was reparented (other runs may be going on at once)."""
    return {**os.environ, "BAKEOFF_TEST_MARKER": marker}


def marked_processes(marker: str) -> list[int]:
    """Live processes started under marked_env(marker)."""
    needle = f"BAKEOFF_TEST_MARKER={marker}".encode()
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if needle in (proc / "environ").read_bytes().split(b"\0"):
                found.append(int(proc.name))
        except OSError:
            continue  # exited, or a kernel thread
    return found
