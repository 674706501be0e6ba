"""A tracer or loader dying mid-trial fails that trial, never the harness.

Each test starts a real `bakeoff run` on a small grid, waits (by polling the run's own
processes) until a trial is in its measured part, and SIGKILLs one part the trial depends
on: the LTTng session daemon, the eBPF tracer, bpftrace, bpf-map-dump's map loader,
cgroup-stat-read's memory charger. Then: the harness exits 1 (README: some trials failed)
without a traceback; exactly that trial is recorded failed, its error naming what died; the
same variant has ok trials after it (the room started a new daemon, loader or charger, or
the next trial started its own tracer); both reports show the failure; and nothing of the
run is left (processes, sessions, uprobes, BPF objects, cgroups, temp directories).

The session daemon test runs the harness in a private mount namespace (its own /run/lttng,
/dev/shm, /run/lock): it gets a root session daemon of its own, which the test may kill
without touching one that anything else on the machine uses.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
from live_runs import (
    MEMCG,
    PRIVATE_LTTNG,
    LiveRun,
    Proc,
    Tick,
    follow,
    leftovers,
    skip_unless_root_tools,
    watch,
)

from conftest import REPO

# Not machine-wide: every check counts this test's own run only (live_runs.py: its marker,
# its PIDs in names, the BPF objects its processes held), and what it kills is its run's
# (the session daemon in a private namespace), so other tests' live runs beside it change
# nothing it asserts. It holds the suite lock shared (conftest.py: SUITE_LOCK).
BUILD = REPO / "build"
PROGRAMS = ("tracing_overhead/tracing_trial", "tracing_overhead/bakeoff_tracer",
            "bpf_map_dump/dump_reader", "bpf_map_dump/dump_loader", "cgroup_stat_read/cgstat",
            "cgroup_stat_read/cgstat_charger", "common/bakeoff-launch")
CHARGE_MIB = 64  # cgroup_stat_read/spec.py CHARGE_MIB


skip_unless_root_tools("lttng", "lttng-sessiond", "babeltrace2", "bpftrace", "bpftool",
                       "unshare")


@pytest.fixture(scope="module")
def built() -> Path:
    if not all((BUILD / p).exists() for p in PROGRAMS):
        subprocess.run(["make", "-C", str(REPO / "benchmarks")], check=True, capture_output=True)
    return BUILD


# ---- what is running ----------------------------------------------------------------------


def _named(procs: list[Proc], comm: str) -> list[Proc]:
    return [p for p in procs if p.comm == comm]


def _lttng_app(procs: list[Proc]) -> bool:
    """An app of an lttng trial: traced_app with the LTTng build of the library preloaded."""
    return any("libbakeoff_traced_lttng.so" in e for p in _named(procs, "traced_app")
               for e in p.env if e.startswith("LD_PRELOAD="))


def _sessiond(procs: list[Proc]) -> Proc | None:
    """The session daemon itself, not its run-as child (which carries the same name)."""
    daemons = _named(procs, "lttng-sessiond")
    pids = {p.pid for p in daemons}
    return next((p for p in daemons if p.ppid not in pids), None)


def _with(comm: str) -> Callable[[list[Proc]], bool]:
    return lambda procs: bool(_named(procs, comm))


def _first(comm: str) -> Callable[[list[Proc]], Proc | None]:
    return lambda procs: next(iter(_named(procs, comm)), None)


def _cat_trial_proc(procs: list[Proc]) -> Proc | None:
    return next((p for p in _named(procs, "cgstat") if "--variant" in p.argv[:-1]
                 and p.argv[p.argv.index("--variant") + 1] == "cat"), None)


def _cat_trial(procs: list[Proc]) -> bool:
    return _cat_trial_proc(procs) is not None


@contextlib.contextmanager
def _stopped(pid: int) -> Iterator[bool]:
    """The process held stopped (SIGSTOP) for the block; yields whether it is alive and
    stopped (not exited, not a zombie), which only a process still in its trial is."""
    try:
        os.kill(pid, signal.SIGSTOP)
    except ProcessLookupError:
        yield False
        return
    try:
        yield _stopped_state(pid)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)


def _stopped_state(pid: int, timeout_s: float = 5.0) -> bool:
    """Whether pid reaches the stopped state within timeout_s: SIGSTOP is delivered when the
    process next runs, which on a busy machine is not at once."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            status = psutil.Process(pid).status()
        except psutil.Error:
            return False
        if status in (psutil.STATUS_STOPPED, psutil.STATUS_TRACING_STOP):
            return True
        if status in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD):
            return False
        time.sleep(0.001)
    return False


@dataclass(frozen=True)
class Scenario:
    args: list[str]
    variant: str  # the variant of the trial that is hit
    in_trial: Callable[[list[Proc]], bool]  # a trial of that variant is measuring now
    victim: Callable[[list[Proc]], Proc | None]
    delay_s: float  # from in_trial to the kill: into the measured part
    error: str  # what the failed trial's error says
    private_lttng: bool = False
    # The trial's own process, held stopped while the part is killed, for a trial shorter
    # than the test's poll under load: seen measuring, it could end before the kill landed,
    # and the next trial started a new part (docs/RELIABILITY.md, "The whole suite beside
    # two CPU hogs").
    trial: Callable[[list[Proc]], Proc | None] | None = None


# calls=20000 of 100 µs: the app of a tracing trial runs 2 s.
_TRACING = ["tracing-overhead", "--profile", "quick", "--param", "duration_us=100",
            "--param", "calls=20000", "--trials", "2", "--samples", "3", "--seed", "3"]

SCENARIOS = {
    "lttng-sessiond": Scenario(
        [*_TRACING, "--variant", "lttng"], "lttng", _lttng_app, _sessiond, 0.5,
        "lttng-sessiond (pid {pid}) died during the trial", private_lttng=True),
    "bakeoff_tracer": Scenario(
        [*_TRACING, "--variant", "ebpf-force"], "ebpf-force",
        lambda ps: bool(_named(ps, "traced_app") and _named(ps, "bakeoff_tracer")),
        _first("bakeoff_tracer"), 0.5,
        # Held by the run, not the trial's child: the trial sees it go, not how.
        "eBPF tracer (bakeoff_tracer, pid {pid}) died during the trial"),
    "bpftrace": Scenario(
        [*_TRACING, "--variant", "bpftrace"], "bpftrace",
        lambda ps: bool(_named(ps, "traced_app") and _named(ps, "bpftrace")),
        # Held by the run too: the trial sees it go, not how.
        _first("bpftrace"), 0.5, "bpftrace (pid {pid}) died during the trial"),
    # A dump of 200k hash entries one by one takes ~0.3 s; a trial does 6.
    "dump_loader": Scenario(
        ["bpf-map-dump", "--profile", "quick", "--variant", "iterate", "--param", "map=hash",
         "--param", "entries=200000", "--trials", "3", "--samples", "5"], "iterate",
        _with("dump_reader"), _first("dump_loader"), 0.2,
        "the map loader (pid {pid}) exited during the trial"),
    # A cat trial spawns 200 cats (~0.25 s); the charger is killed as soon as one is seen,
    # the trial held stopped meanwhile.
    "cgstat_charger": Scenario(
        ["cgroup-stat-read", "--profile", "quick", "--variant", "cat", "--param",
         "content=legacy", "--param", "fields=all", "--param", "target=child", "--trials", "5",
         "--samples", "5", "--seed", "3"], "cat", _cat_trial, _first("cgstat_charger"), 0.0,
        "the memory charger of the target cgroup (pid {pid}) exited during the trial",
        trial=_cat_trial_proc),
}


def _kill_in_trial(run: LiveRun, sc: Scenario, part: str) -> Proc:
    """SIGKILL the scenario's victim while a trial of its variant measures; the victim. A
    scenario with a `trial` holds that process stopped across the kill and kills only if it
    was still in its trial; else it tries the variant's next trial once. A scenario gives
    its variant trials to spare: one the poll may not see at all under load, one to miss,
    one to hit, and one to run ok after (hence 5 for the short cat trials)."""
    for _ in range(2):
        now = watch([run], lambda m: sc.in_trial(m[run.tag]) and sc.victim(m[run.tag]) is not None,
                    timeout=120, with_bpf=True)
        time.sleep(sc.delay_s)
        victim = sc.victim(now[run.tag])
        assert victim is not None and victim.comm == part, now
        if sc.trial is None:
            os.kill(victim.pid, signal.SIGKILL)
            return victim
        trial = sc.trial(now[run.tag])
        assert trial is not None, now
        with _stopped(trial.pid) as in_trial:
            if in_trial:
                os.kill(victim.pid, signal.SIGKILL)
                return victim
        watch([run], lambda m, gone=trial.pid: all(p.pid != gone for p in m[run.tag]),
              timeout=60)
    raise AssertionError(f"no trial of {sc.variant} was still running when its part was seen")


def _target_usage(run: LiveRun) -> int:
    try:
        return int((MEMCG / f"bakeoff-{run.pid}-target" / "memory.usage_in_bytes").read_text())
    except (OSError, ValueError):
        return 0


@pytest.mark.slow
@pytest.mark.parametrize("part", list(SCENARIOS))
def test_a_part_dying_mid_trial_fails_that_trial_only(built: Path, tmp_path: Path,
                                                      part: str) -> None:
    sc = SCENARIOS[part]
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    run = LiveRun(tmp_path / "run", sc.args, tmpdir=tmpdir,
                  wrap=PRIVATE_LTTNG if sc.private_lttng else ()).start()
    try:
        victim = _kill_in_trial(run, sc, part)
        # The target cgroup's charge while a later trial reads it beside a new charger.
        usage_after: list[int] = []

        def after_kill(tick: Tick) -> None:
            procs = tick.procs[run.tag]
            if _named(procs, "cgstat") and any(p.pid != victim.pid
                                               for p in _named(procs, "cgstat_charger")):
                usage_after.append(_target_usage(run))

        follow([run], after_kill, timeout=240, every=0.02)
    finally:
        if run.running() and run.proc is not None:
            run.proc.kill()
            run.wait()

    # The harness: a run with a failed trial, reported as such, no traceback.
    assert run.proc is not None and run.proc.returncode == 1, run.transcript()
    assert "Traceback" not in run.stderr, run.stderr
    error = sc.error.format(pid=victim.pid)
    said = " ".join(run.stderr.split())  # the console wraps long lines
    assert "1 trial(s) failed" in said and error in said, run.stderr
    data = run.results()
    assert data["status"] == "complete"

    # Exactly the trial that was hit failed, saying what died; the variant ran ok after it.
    trials = run.trials()
    bad = [i for i, t in enumerate(trials) if t["status"] != "ok"]
    assert len(bad) == 1, [(t["case"]["variant"], t["status"], t["error"]) for t in trials]
    failed = trials[bad[0]]
    assert failed["case"]["variant"] == sc.variant and failed["status"] == "failed"
    assert error in failed["error"], failed["error"]
    later = [t for t in trials[bad[0] + 1:] if t["case"]["variant"] == sc.variant]
    assert later and all(t["status"] == "ok" for t in later), later

    # What the room did so that the later trials measured what they should.
    replacements = [p for p in run.seen.values()
                    if p.comm == victim.comm and p.pid != victim.pid and p.ppid != victim.pid]
    if part in ("lttng-sessiond", "bakeoff_tracer", "dump_loader", "cgstat_charger"):
        assert replacements, f"no new {victim.comm} was started after the kill"
    if part == "dump_loader":  # read from the new loader's map, not the dead one's
        assert all(t["meta"]["map_id"] != failed["meta"]["map_id"] for t in later)
    if part == "cgstat_charger":  # the cgroup was charged again for them
        assert usage_after and min(usage_after) >= CHARGE_MIB << 20, usage_after
    for t in later:  # a tracer after the kill counted every event (the driver's own check)
        c = t["counters"]
        if "events_expected" in c:
            assert c["events_captured"] + c["events_dropped"] == c["events_expected"] > 0, c

    # The reports show the failure.
    md = (run.out / "details.md").read_text()
    html = (run.out / "report.html").read_text()
    assert "Failed trials (1)" in md and error in md, md[-3000:]
    assert "1 trial(s) failed, in 1 case(s)" in (run.out / "report.md").read_text()
    assert error in html

    assert leftovers(run) == []
