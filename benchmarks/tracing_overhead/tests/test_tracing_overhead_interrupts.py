"""tracing-overhead interrupted and crashed: a Ctrl-C or SIGTERM mid-trial, or a tracer killed
under its driver, leaves no LTTng session, session daemon, uprobe, BPF program or link, room
process or temp file on the machine.

Machine-wide (MACHINE_WIDE): these checks look at the whole machine (`lttng list`, `bpftool
prog show`, the uprobe list, `pgrep`), so nothing else of the suite runs beside them. The
quick profile's own leftover check (test_tracing_overhead.py) counts only its run's things
and runs beside the rest."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest
import tracing_test_kit
from tracing_test_kit import DRIVER, ROOM, skip_unless_tracing

from bakeoff.core import pids as procs
from conftest import REPO

MACHINE_WIDE = True
ROOM_LIBRARY = "libbakeoff_traced.so"  # each tracer's argv names its copy of it

room = tracing_test_kit.room  # the fixture the tests below name
skip_unless_tracing()


def _sessiond_pids() -> set[int]:
    """Live session daemons. A zombie one has exited and waits for PID 1 to reap it (this
    sandbox's init can take seconds): nothing is left running."""
    res = subprocess.run(["pgrep", "-x", "lttng-sessiond"], capture_output=True, text=True)
    return {int(p) for p in res.stdout.split() if procs.alive(int(p))}


def _ours_running() -> list[str]:
    """Every program of the room has this build's path in argv, and every tracer the traced
    library's name (a held bpftrace runs /usr/bin/bpftrace on the run's copy of it)."""
    lines: set[str] = set()
    for pattern in (str(ROOM) + "/", ROOM_LIBRARY):
        res = subprocess.run(["pgrep", "-af", pattern], capture_output=True, text=True)
        lines |= {ln for ln in res.stdout.splitlines() if "pgrep" not in ln}
    return sorted(lines)


def _bpftool(*args: str) -> list[dict[str, object]]:
    res = subprocess.run(["bpftool", "-j", *args], capture_output=True, text=True, check=True)
    return json.loads(res.stdout or "[]")  # type: ignore[no-any-return]


def leftovers(tmpdir: Path, sessiond_before: set[int]) -> list[str]:
    """What a run of this room could leave behind, as a list of findings (empty: clean)."""
    found = []
    sessions = subprocess.run(["lttng", "-n", "list"], capture_output=True, text=True)
    if "bakeoff-" in sessions.stdout:
        found.append(f"LTTng session left: {sessions.stdout.strip()}")
    if _sessiond_pids() - sessiond_before:
        found.append(f"lttng-sessiond left running: {_sessiond_pids() - sessiond_before}")
    uprobes = Path("/sys/kernel/tracing/uprobe_events")
    if uprobes.exists() and "bakeoff" in uprobes.read_text():
        found.append(f"uprobe left: {uprobes.read_text().strip()}")
    progs = {p["id"]: p for p in _bpftool("prog", "show")
             if str(p.get("name", "")).startswith("bakeoff_")}
    if progs:
        found.append(f"BPF programs left: {[p['name'] for p in progs.values()]}")
    links = [link for link in _bpftool("link", "show") if link.get("prog_id") in progs]
    if links:
        found.append(f"BPF links left: {links}")
    bpffs = Path("/sys/fs/bpf")
    pinned = [p.name for p in bpffs.rglob("*bakeoff*")] if bpffs.is_dir() else []
    if pinned:
        found.append(f"BPF objects pinned: {pinned}")
    if _ours_running():
        found.append(f"processes left: {_ours_running()}")
    if any(tmpdir.iterdir()):
        found.append(f"temp files left: {sorted(p.name for p in tmpdir.iterdir())}")
    return found


def _wait_for(condition: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False



def _tracer_up(variant: str) -> Callable[[], bool]:
    def app_running() -> bool:
        return any("traced_app" in ln for ln in _ours_running())

    def up() -> bool:
        procs = _ours_running()
        if variant == "lttng":
            listing = subprocess.run(["lttng", "-n", "list"], capture_output=True, text=True)
            return "bakeoff-" in listing.stdout and app_running()
        name = "bakeoff_tracer" if variant.startswith("ebpf") else "bpftrace"
        return any(name in ln for ln in procs) and app_running()

    return up


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["lttng", "ebpf-force", "bpftrace"])
def test_sigint_mid_trial_leaves_nothing(room: Path, tmp_path: Path, variant: str) -> None:
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    before = _sessiond_pids()
    # 20k calls of 100 µs: each trial traces for 2 s, long enough to be caught in the act.
    proc = subprocess.Popen(
        [sys.executable, "-m", "bakeoff", "run", "tracing-overhead", "--variant", variant,
         "--param", "duration_us=100", "--param", "calls=20000", "--trials", "3",
         "--out", str(tmp_path / "run"), "--quiet"],
        cwd=REPO, env={**os.environ, "TMPDIR": str(tmpdir)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert _wait_for(_tracer_up(variant), 60), f"no {variant} trial got going"
        os.kill(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        # A trial still running (the test failed): SIGTERM first, which it handles by
        # stopping its tracer; SIGKILL alone would leave that to another test's sweep.
        procs.stop_child(proc, 30)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert leftovers(tmpdir, before) == []


@pytest.mark.slow
def test_sigterm_mid_run_removes_the_held_tracers(room: Path, tmp_path: Path) -> None:
    """SIGTERM to the harness once the held tracers have served trials, while a later trial
    traces: the run's LTTng session, the daemon it started, the eBPF tracer (its programs,
    links and socket) and bpftrace are all gone afterwards."""
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    phases = tmp_path / "phases"
    before = _sessiond_pids()
    # 10k calls of 100 µs: each trial traces for 1 s, long enough to be caught in the act.
    proc = subprocess.Popen(
        [sys.executable, "-m", "bakeoff", "run", "tracing-overhead", "--variant", "lttng",
         "--variant", "ebpf-force", "--variant", "bpftrace", "--param", "duration_us=100",
         "--param", "calls=10000",
         "--trials", "4", "--samples", "5", "--out", str(tmp_path / "run"), "--quiet"],
        cwd=REPO, env={**os.environ, "TMPDIR": str(tmpdir), "BAKEOFF_PHASE_LOG": str(phases)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def trials_done() -> int:
        text = phases.read_text() if phases.exists() else ""
        return sum(1 for ln in text.splitlines() if ln.split(" ", 1)[0] == "trial")

    def held_and_tracing() -> bool:
        # Past a round of baseline, lttng, ebpf-force and bpftrace: the held tracers have
        # served a trial, and stay up between trials; an app runs under one of them now.
        running = _ours_running()
        return (trials_done() >= 4 and any("bakeoff_tracer" in ln for ln in running)
                and any(ln.split()[1:2] == ["bpftrace"] for ln in running)
                and "bakeoff-" in subprocess.run(["lttng", "-n", "list"], capture_output=True,
                                                 text=True).stdout
                and any("traced_app" in ln for ln in running))

    try:
        assert _wait_for(held_and_tracing, 180), f"no trial past the first round: {trials_done()}"
        os.kill(proc.pid, signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        # A run still going (the test failed): SIGTERM, which it handles by tearing down.
        procs.stop_child(proc, 30)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "Traceback" not in err
    assert leftovers(tmpdir, before) == []


@pytest.mark.parametrize(("variant", "victim"), [("ebpf-force", "bakeoff_tracer"),
                                                  ("bpftrace", "bpftrace")])
@pytest.mark.slow
def test_tracer_crash_fails_the_trial_and_cleans_up(room: Path, tmp_path: Path, variant: str,
                                                     victim: str) -> None:
    proc = subprocess.Popen(
        [str(DRIVER), "--variant", variant, "--param", "duration_us=100", "--param",
         "calls=20000", "--samples", "5"],
        env={**os.environ, "TMPDIR": str(tmp_path)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert _wait_for(_tracer_up(variant), 30), f"{variant} never started"
        # This trial's tracer: a child of its driver, whatever else runs on the machine.
        tracers = [c for c in psutil.Process(proc.pid).children(recursive=True)
                   if c.name() == victim]
        assert tracers, _ours_running()
        tracers[0].kill()
        out, err = proc.communicate(timeout=60)
    finally:
        # A trial still running (the test failed): SIGTERM first, which it handles by
        # stopping its tracer; SIGKILL alone would leave that to another test's sweep.
        procs.stop_child(proc, 30)
    assert proc.returncode == 1, (out, err)
    assert out == ""  # a trial that measured nothing valid prints no sample
    assert len(err.strip().splitlines()) == 1 and err.startswith("tracing_trial: "), err
    assert leftovers(tmp_path, _sessiond_pids()) == []
