"""HeldProcess (bakeoff.room.held) with real processes: a ready line, a start that times out
or is interrupted, revival, stop with a grace that escalates, and the sweep that stops a
helper whose holder was SIGKILLed. Last, the case that made it: a tracing-overhead run
SIGKILLed while its LTTng session daemon starts, before its first trial, and the sweep
(`bakeoff doctor --cleanup`) removing that daemon."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from bakeoff.core import pids as procs
from bakeoff.room import HeldProcess, HelperFailed
from bakeoff.room.held import HELD_ENV, held_name, sweep_held
from conftest import IN_CI, REPO

PY = sys.executable
# Bounds, not expectations: each is far above what the step takes on a loaded machine.
WAIT_S = 20.0


def _script(body: str) -> list[str]:
    return [PY, "-c", textwrap.dedent(body)]


def _wait_for(cond: object, what: str, timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while not cond():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"no {what} within {timeout} s"
        time.sleep(0.02)


@pytest.fixture
def helpers() -> Iterator[list[HeldProcess]]:
    """Helpers a test starts, stopped whatever happens to the test."""
    made: list[HeldProcess] = []
    yield made
    for h in made:
        h.stop()


READY_AFTER_TWO_LINES = _script("""
    import time
    print("filling", flush=True)
    print('{"type":"counter","name":"map_id","value":42}', flush=True)
    print("ready", flush=True)
    time.sleep(600)
""")


@pytest.mark.slow(live=False)
def test_start_waits_for_the_ready_line_in_a_session_of_its_own(
        helpers: list[HeldProcess]) -> None:
    h = HeldProcess("ready-helper", READY_AFTER_TWO_LINES, ready="ready")
    helpers.append(h)
    h.start()
    assert h.alive() and h.starts == 1
    assert h.lines == ["filling", '{"type":"counter","name":"map_id","value":42}', "ready"]
    assert os.getsid(h.pid) == h.pid  # setsid: the terminal's Ctrl-C reaches the harness only
    env = psutil.Process(h.pid).environ()
    assert env[HELD_ENV] == held_name("ready-helper") == f"bakeoff-{os.getpid()}-ready-helper"
    assert h.watch_env("BAKEOFF_X_PID") == {"BAKEOFF_X_PID": str(h.pid)}
    pid = h.pid
    assert h.stop() is False  # SIGTERM was enough
    assert not procs.alive(pid) and not psutil.pid_exists(pid)  # gone and reaped


@pytest.mark.slow(live=False)
def test_a_ready_function_and_a_ready_probe(tmp_path: Path, helpers: list[HeldProcess]) -> None:
    by_line = HeldProcess("by-line", READY_AFTER_TWO_LINES,
                          ready=lambda line: '"map_id"' in line)
    helpers.append(by_line)
    by_line.start()
    assert by_line.lines[-1].endswith('"value":42}') and len(by_line.lines) == 2
    flag = tmp_path / "up"
    by_probe = HeldProcess("by-probe", _script(f"""
        import pathlib, time
        time.sleep(0.3)
        pathlib.Path({str(flag)!r}).touch()
        time.sleep(600)
    """), ready_probe=flag.exists)
    helpers.append(by_probe)
    by_probe.start()
    assert flag.exists() and by_probe.alive()


@pytest.mark.slow(live=False)
def test_a_start_that_never_gets_ready_times_out_and_leaves_nothing(
        helpers: list[HeldProcess]) -> None:
    h = HeldProcess("mute", _script("import time; time.sleep(600)"), ready="ready",
                    start_timeout_s=0.5, stop_grace_s=1.0)
    helpers.append(h)
    t0 = time.monotonic()
    with pytest.raises(HelperFailed, match=r"^mute was not ready within 0.5 s$"):
        h.start()
    assert time.monotonic() - t0 < WAIT_S
    assert h.proc is None and not h.alive()
    assert h.ensure() == "mute was not ready within 0.5 s"  # what a trial fails with


@pytest.mark.slow(live=False)
def test_a_helper_that_exits_before_ready_says_why(tmp_path: Path,
                                                   helpers: list[HeldProcess]) -> None:
    err = tmp_path / "helper.stderr"
    h = HeldProcess("crasher", _script("""
        import sys
        print("crasher: cannot open the map: Operation not permitted", file=sys.stderr)
        sys.exit(3)
    """), ready="ready", stderr=err)
    helpers.append(h)
    with pytest.raises(HelperFailed) as exc:
        h.start()
    assert str(exc.value) == ("crasher exited (status 3) before it was ready: crasher: cannot "
                              "open the map: Operation not permitted")
    closer = HeldProcess("closer", _script("""
        import os, time
        os.close(1)
        time.sleep(600)
    """), ready="ready")
    helpers.append(closer)
    with pytest.raises(HelperFailed, match=r"^closer closed its stdout before it was ready$"):
        closer.start()
    assert closer.proc is None  # stopped, not left running
    missing = HeldProcess("missing", ["/nonexistent/helper"], ready="ready")
    with pytest.raises(HelperFailed, match="missing could not be started: No such file"):
        missing.start()


@pytest.mark.slow(live=False)
def test_revive_starts_a_new_one_after_it_died(helpers: list[HeldProcess]) -> None:
    h = HeldProcess("reviver", READY_AFTER_TWO_LINES, ready="ready")
    helpers.append(h)
    assert h.ensure() is None
    first = h.pid
    assert h.ensure() is None and h.pid == first and h.starts == 1  # alive: left alone
    os.kill(first, signal.SIGKILL)
    _wait_for(lambda: not h.alive(), "death")
    assert h.ensure() is None
    assert h.alive() and h.pid != first and h.starts == 2
    assert not psutil.pid_exists(first)  # the dead one was reaped, not left a zombie


@pytest.mark.slow(live=False)
def test_stop_escalates_to_sigkill_for_the_whole_group(tmp_path: Path,
                                                       helpers: list[HeldProcess]) -> None:
    """A helper that ignores SIGTERM, with a child of its own (a daemon's worker): after the
    grace both get SIGKILL (its process group), and the helper is reaped."""
    kid_file = tmp_path / "kid"
    h = HeldProcess("stubborn", _script(f"""
        import pathlib, signal, subprocess, sys, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        kid = subprocess.Popen([sys.executable, "-c",
                                "import signal, time; signal.signal(signal.SIGTERM, "
                                "signal.SIG_IGN); time.sleep(600)"])
        pathlib.Path({str(kid_file)!r}).write_text(str(kid.pid))
        print("ready", flush=True)
        time.sleep(600)
    """), ready="ready", stop_grace_s=0.5)
    helpers.append(h)
    h.start()
    pid, kid = h.pid, int(kid_file.read_text())
    assert procs.alive(kid) and os.getpgid(kid) == pid
    t0 = time.monotonic()
    assert h.stop() is True  # it needed SIGKILL
    assert 0.5 <= time.monotonic() - t0 < WAIT_S
    assert not psutil.pid_exists(pid)
    _wait_for(lambda: not procs.alive(kid), "the helper's child gone")


# ---- a start interrupted, and a holder SIGKILLed: in a harness of its own -------------------

HARNESS = """
import os, signal, sys, time
from bakeoff.core.errors import Interrupted
from bakeoff.room import HeldProcess
mode, pidfile = sys.argv[1], sys.argv[2]
if mode == "latched":  # after the run's first trial: the harness's handlers only record
    from bakeoff.run import interrupts
    interrupts.latch()
argv = [sys.executable, "-c", f'''
import os, pathlib, time
pathlib.Path({pidfile!r}).write_text(str(os.getpid()))
time.sleep(600)
''']
if mode == "shared":  # a holder killed while it holds a ready helper
    helper = HeldProcess("held-helper", argv, ready_probe=lambda: os.path.exists(pidfile),
                         shared=True)
else:  # a start that hangs: the helper never says it is ready
    helper = HeldProcess("never-ready", argv, ready="ready", start_timeout_s=600)
try:
    helper.start()
except KeyboardInterrupt:
    print("KeyboardInterrupt", flush=True)
    sys.exit(130)
except Interrupted as exc:
    print(f"Interrupted {exc.signum}", flush=True)
    sys.exit(128 + exc.signum)
print("held", flush=True)
time.sleep(600)
"""


def _harness(mode: str, pidfile: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([PY, "-c", HARNESS, mode, str(pidfile)], cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _helper_pid(harness: subprocess.Popen[str], pidfile: Path) -> int:
    _wait_for(lambda: (pidfile.exists() and pidfile.read_text()) or harness.poll() is not None,
              "helper")
    assert harness.poll() is None, harness.communicate()
    return int(pidfile.read_text())


@pytest.mark.parametrize(("mode", "signum", "said", "status"), [
    ("before-latch", signal.SIGINT, "KeyboardInterrupt", 130),
    ("latched", signal.SIGINT, "Interrupted 2", 130),
    ("latched", signal.SIGTERM, "Interrupted 15", 143),
])
@pytest.mark.slow(live=False)
def test_a_signal_ends_a_hung_start_and_stops_the_helper(
        tmp_path: Path, mode: str, signum: int, said: str, status: int) -> None:
    """The hang the issue saw: a start that never gets ready ignored two Ctrl-Cs. Here the
    wait would last 600 s; the signal ends it at once, whether the harness's handler raises
    (before the run's first trial) or only records (after it), and the helper goes."""
    pidfile = tmp_path / "helper.pid"
    harness = _harness(mode, pidfile)
    try:
        helper = _helper_pid(harness, pidfile)
        harness.send_signal(signum)
        out, err = harness.communicate(timeout=WAIT_S)
        assert harness.returncode == status, (out, err)
        assert out.strip() == said, err
        assert not procs.alive(helper), "the helper outlived the interrupted start"
    finally:
        harness.kill()
        harness.wait()


@pytest.mark.slow(live=False)
def test_the_sweep_stops_a_helper_whose_holder_was_sigkilled(tmp_path: Path) -> None:
    """SIGKILL gives the holder no tear-down: the helper (own session, shared: no run PID
    in its environment) lives on; sweep_held finds it by the dead holder's PID in its
    name and stops it. While the holder lives, the sweep leaves it be."""
    pidfile = tmp_path / "helper.pid"
    harness = _harness("shared", pidfile)
    try:
        helper = _helper_pid(harness, pidfile)
        assert harness.stdout is not None and harness.stdout.readline().strip() == "held"
        assert "BAKEOFF_RUN_PID" not in psutil.Process(helper).environ()
        assert sweep_held("held-helper") == [] and procs.alive(helper)  # its holder lives
        harness.kill()
        harness.wait()
        assert procs.alive(helper), "the helper died with its holder: nothing to sweep"
        lines = sweep_held("held-helper", grace_s=5.0)
        assert lines == [f"stopped held-helper (held by bakeoff {harness.pid}, which is "
                         f"gone), pid {helper}"]
        _wait_for(lambda: not procs.alive(helper), "the swept helper gone")
        assert sweep_held("held-helper") == []
    finally:
        harness.kill()
        harness.wait()
        if procs.alive(int(pidfile.read_text() or 0) if pidfile.exists() else 0):
            os.kill(int(pidfile.read_text()), signal.SIGKILL)


@pytest.mark.slow(live=False)
def test_the_sweep_leaves_a_helper_of_another_mount_namespace(tmp_path: Path) -> None:
    """CI (stop 39): a concurrent test's `bakeoff run`, in the root mount namespace, swept the
    session daemon a SIGKILLed run had left in a test's private /run, before that test's
    own `doctor --cleanup` could. Whether live runs still share a daemon is known only from
    the lock in its namespace's /run: a sweep from elsewhere must leave it, and a sweep in
    its namespace stops it."""
    if os.geteuid() != 0 or not _which("unshare") or not _which("nsenter"):
        if IN_CI:
            pytest.fail("needs root, unshare and nsenter")
        pytest.skip("needs root, unshare and nsenter")
    pidfile = tmp_path / "helper.pid"
    harness = subprocess.Popen(  # unshare execs the harness in place: its PID is harness.pid
        ["unshare", "--mount", "--propagation", "private", "--", PY, "-c", HARNESS, "shared",
         str(pidfile)], cwd=REPO, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    helper = 0
    try:
        helper = _helper_pid(harness, pidfile)
        assert harness.stdout is not None and harness.stdout.readline().strip() == "held"
        harness.kill()
        harness.wait()
        assert procs.alive(helper), "the helper died with its holder: nothing to sweep"
        assert sweep_held("held-helper", grace_s=5.0) == [] and procs.alive(helper)
        inside = subprocess.run(
            ["nsenter", f"--target={helper}", "--mount", "--", PY, "-c",
             "from bakeoff.room.held import sweep_held; print(*sweep_held('held-helper'))"],
            cwd=REPO, capture_output=True, text=True, timeout=WAIT_S)
        assert inside.stdout.strip() == (f"stopped held-helper (held by bakeoff {harness.pid}, "
                                         f"which is gone), pid {helper}"), inside.stderr
        _wait_for(lambda: not procs.alive(helper), "the swept helper gone")
    finally:
        harness.kill()
        harness.wait()
        if helper and procs.alive(helper):
            os.kill(helper, signal.SIGKILL)


# ---- the case that made it: tracing-overhead's session daemon ------------------------------


def _daemons_held_by(pid: int) -> list[psutil.Process]:
    marker = held_name("lttng-sessiond", pid)
    found = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if proc.environ().get(HELD_ENV) == marker and procs.alive(proc.pid):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def test_a_run_sigkilled_while_its_lttng_daemon_starts_leaves_it_to_the_sweep(
        built: Path, tmp_path: Path) -> None:
    """`test_signals_at_random_moments[tracing-overhead]` (seed 20261122, cycle 8): a SIGKILL
    2.6 s into the run, before its first trial, left `lttng-sessiond --daemonize
    --no-kernel` and its run-as helper, which `doctor --cleanup` did not remove: the daemon
    was not yet recorded, and carried no run PID. Here the run is killed the moment its
    daemon exists, and the sweep must stop it and its helper."""
    from live_runs import shared_lttng_namespace  # its private /run/lttng and /run/lock

    missing = [t for t in ("lttng", "lttng-sessiond", "unshare", "nsenter")
               if not _which(t)]
    if os.geteuid() != 0 or missing:
        why = f"needs root and {', '.join(missing) or 'LTTng'}"
        if IN_CI:
            pytest.fail(why)
        pytest.skip(why)
    env = {**os.environ, "TMPDIR": str(tmp_path), "COLUMNS": "200"}
    with shared_lttng_namespace() as prefix:
        run = subprocess.Popen(
            [*prefix, PY, "-m", "bakeoff", "run", "tracing-overhead", "--variant", "lttng",
             "--param", "duration_us=0", "--param", "calls=1000", "--trials", "1",
             "--samples", "2", "--out", str(tmp_path / "run")],
            cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:  # nsenter execs bakeoff in place: the run's PID is the one Popen returned
            _wait_for(lambda: _daemons_held_by(run.pid) or run.poll() is not None,
                      "session daemon", timeout=120)
            assert run.poll() is None, f"the run ended first: {run.communicate()[1]}"
            run.kill()
        finally:
            run.kill()
            run.wait()
        daemons = _daemons_held_by(run.pid)
        assert daemons, "the daemon died with the run: nothing left to sweep"
        res = subprocess.run([*prefix, PY, "-m", "bakeoff", "doctor", "--cleanup"], cwd=REPO,
                             env=env, capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stdout + res.stderr
        assert "stopped lttng-sessiond" in res.stdout, res.stdout
        _wait_for(lambda: not any(procs.alive(d.pid) for d in daemons), "daemons gone")
        assert _daemons_held_by(run.pid) == []


def _which(tool: str) -> bool:
    import shutil
    return shutil.which(tool) is not None
