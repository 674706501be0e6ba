"""The fleet record from playbook events, without hosts: phases, reasons, save and load.

The events are the shape fleet/callback_plugins/bakeoff_events.py writes; the live tests
(test_fleet.py) check the same record from real runs.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from bakeoff.core.errors import UsageError
from bakeoff.fleet import record
from bakeoff.fleet.driver import new_record
from conftest import REPO


def _rec(hosts: list[str]) -> record.FleetRecord:
    return new_record("f", "c" * 40, Path("inv.yml"), hosts, ["mremap-vs-memcpy"], 1,
                      ["mremap_vs_memcpy"], False, 5, 60)


def _ev(t: float, event: str, host: str, task: str, **kw: object) -> dict[str, object]:
    return {"t": t, "event": event, "host": host, "task": task, **kw}


def test_phases_are_timed_from_task_starts_and_the_first_failure_is_the_reason() -> None:
    rec = _rec(["a", "b"])
    ended = []
    for ev in [
        _ev(0, "start", "a", "connect: ping"), _ev(0, "start", "b", "connect: ping"),
        _ev(1, "ok", "a", "connect: ping"),
        _ev(1.5, "unreachable", "b", "connect: ping",
            msg="Failed to connect to the host via ssh: ssh: connect to host 10.0.0.2 port 22: "
                "Connection refused"),
        _ev(2, "start", "a", "push: checkout"), _ev(5, "ok", "a", "push: checkout"),
        _ev(5, "start", "a", "setup: make deps build"),
        _ev(9, "failed", "a", "setup: make deps build", rc=2,
            stderr="make: *** no rule\nbakeoff: missing Debian packages: lttng-tools\n"),
    ]:
        ended += record.apply_event(rec, ev)
    assert ended == [("b", "connect"), ("a", "connect"), ("a", "push"), ("a", "setup")]
    a, b = rec.hosts["a"], rec.hosts["b"]
    assert a.reachable is True and a.status == "failed"
    assert a.reason == "setup: make deps build: exit 2: bakeoff: missing Debian packages: lttng-tools"
    assert a.phase_seconds() == {"connect": 2, "push": 3, "setup": 4}
    assert b.reachable is False and b.status == "unreachable" and "Connection refused" in b.reason
    assert [h.host for h in rec.failed()] == ["a", "b"]


def test_a_host_that_fails_its_first_task_answered() -> None:
    """The connect phase's first task is the root check (no ping before it): a host that runs
    it and fails it answered, and is reachable; only an unreachable event says it is not."""
    rec = _rec(["a", "b"])
    for ev in [
        _ev(0, "start", "a", "connect: root"), _ev(0, "start", "b", "connect: root"),
        _ev(1, "failed", "a", "connect: root", rc=1,
            stderr="root without CAP_SYS_ADMIN (CapEff 000001fffedfffff: a container)"),
        _ev(1, "unreachable", "b", "connect: root", msg="Connection refused"),
    ]:
        record.apply_event(rec, ev)
    a, b = rec.hosts["a"], rec.hosts["b"]
    assert a.reachable is True and a.status == "failed" and "CAP_SYS_ADMIN" in a.reason
    assert b.reachable is False and b.status == "unreachable"


def test_the_run_exit_status_and_the_result_check() -> None:
    rec = _rec(["a"])
    for ev in [
        _ev(0, "start", "a", "run: bakeoff run"),
        # The look at the run (fleet/poll_run.py) says the run's exit status on its stdout.
        _ev(10, "ok", "a", "run: bakeoff run", rc=0,
            stdout='{"finished": true, "died": false, "rc": 1, "trials": 6}'),
        _ev(10, "start", "a", "fetch: copy the results"), _ev(11, "ok", "a", "fetch: copy the results"),
        # Outside the phases: does not reopen or time a phase, but its failure is the reason.
        _ev(11, "start", "a", "result: exit status of bakeoff run"),
        _ev(12, "failed", "a", "result: exit status of bakeoff run",
            msg="bakeoff run exited 1: 3 trial(s) failed; see the report"),
    ]:
        record.apply_event(rec, ev)
    record.close_phases(rec, 13)
    a = rec.hosts["a"]
    assert a.exit_status == 1 and a.status == "failed" and a.trials_recorded == 6
    assert a.reason == "bakeoff run exited 1: 3 trial(s) failed; see the report"
    assert a.phase_seconds() == {"run": 10, "fetch": 1}


def test_the_record_round_trips_and_a_bad_one_is_one_line(tmp_path: Path) -> None:
    rec = _rec(["a"])
    record.apply_event(rec, _ev(0, "start", "a", "connect: ping"))
    record.close_phases(rec, 2)
    record.save(rec, tmp_path)
    again = record.load(tmp_path)
    assert again == rec
    assert record.is_fleet_dir(tmp_path)
    (tmp_path / record.FLEET_JSON).write_text("{")
    with pytest.raises(UsageError, match="not a fleet record"):
        record.load(tmp_path)
    with pytest.raises(UsageError, match=r"holds no fleet\.json"):
        record.load(tmp_path / "elsewhere")


@pytest.mark.slow(live=False)
def test_a_dirty_tree_is_refused_naming_what_differs(tmp_path: Path,
                                                    tmp_path_factory: pytest.TempPathFactory) -> None:
    import subprocess

    from bakeoff.fleet import checkout

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "a.txt").write_text("x")
    subprocess.run(["git", "-C", str(tmp_path), "add", "a.txt"], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t",
                    "commit", "-qm", "a"], check=True)
    checkout.refuse_dirty(tmp_path)  # clean: no error
    commit = checkout.head_commit(tmp_path)
    (tmp_path / "a.txt").write_text("y")
    (tmp_path / "new.c").write_text("z")
    with pytest.raises(UsageError, match=r"uncommitted changes \(a.txt, new.c\)"):
        checkout.refuse_dirty(tmp_path)
    # What is pushed is the commit, not the edited file.
    archive = checkout.archive(tmp_path, commit, tmp_path / "cache")
    import tarfile
    with tarfile.open(archive) as tar:
        assert tar.extractfile("a.txt").read() == b"x"  # type: ignore[union-attr]
        assert "new.c" not in tar.getnames()
    with pytest.raises(UsageError, match="not a git checkout"):
        checkout.head_commit(tmp_path_factory.mktemp("not-git"))


def test_a_host_lost_mid_run_is_named_with_the_trials_it_had_recorded() -> None:
    rec = _rec(["a", "b"])
    for ev in [
        _ev(0, "start", "a", "connect: ping"), _ev(1, "ok", "a", "connect: ping"),
        _ev(0, "start", "b", "connect: ping"), _ev(1, "ok", "b", "connect: ping"),
        _ev(2, "start", "a", "run: bakeoff run"),
        _ev(4, "retry", "a", "run: bakeoff run", stdout='{"finished": false, "trials": 3}'),
        _ev(6, "retry", "a", "run: bakeoff run", stdout='{"finished": false, "trials": 4}'),
        _ev(9, "unreachable", "a", "run: bakeoff run",
            msg="Failed to connect to the host via ssh: Connection refused"),
        _ev(2, "start", "b", "setup: make deps build"),
        _ev(9, "unreachable", "b", "setup: make deps build", msg="Connection timed out"),
    ]:
        record.apply_event(rec, ev)
    a, b = rec.hosts["a"], rec.hosts["b"]
    # reachable says what the status says: it answered, then no more.
    assert a.status == "unreachable" and a.reachable is False and a.trials_recorded == 4
    assert a.reason.startswith("stopped answering mid-run, with 4 trial(s) recorded; they stay "
                               "on the host, and --resume goes on from them")
    assert a.reason.endswith("run: bakeoff run: Failed to connect to the host via ssh: "
                             "Connection refused")
    assert b.reason.startswith("stopped answering in its setup phase: ")


def test_an_interrupt_ends_open_phases_as_stopped_not_ok() -> None:
    rec = _rec(["a"])
    record.apply_event(rec, _ev(0, "start", "a", "run: bakeoff run"))
    assert record.close_phases(rec, 5, "stopped") == [("a", "run")]
    assert rec.hosts["a"].phases["run"].outcome == "stopped"
    assert rec.hosts["a"].phase_seconds() == {"run": 5}


def test_the_controller_tools_missing_names_the_one_install_command() -> None:
    from bakeoff.fleet.driver import ansible_tool

    with pytest.raises(UsageError, match=r"`make fleet-deps` installs ansible-core"):
        ansible_tool("ansible-no-such-tool")


def _poll_run() -> Any:
    spec = importlib.util.spec_from_file_location("poll_run", REPO / "fleet" / "poll_run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow(live=False)
def test_the_look_at_a_hosts_run_tells_running_finished_and_gone(tmp_path: Path) -> None:
    """fleet/poll_run.py on real processes and async_wrapper's real file shapes."""
    poll_run = _poll_run()
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "trials.jsonl").write_text('{"index": 0}\n{"index": 1}\n{"ind')  # torn last
    jid = f"j{os.getpid()}{time.monotonic_ns() % 10**6}"
    job = tmp_path / f"{jid}.4242"
    job.write_text(json.dumps({"started": True, "finished": False, "ansible_job_id": jid}))
    # A process of the job (async_wrapper carries the job's id as an argument) is alive.
    wrapper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", jid])
    try:
        # Until its exec is through, /proc shows an empty command line (seen under pytest).
        deadline = time.monotonic() + 10
        while jid.encode() not in Path(f"/proc/{wrapper.pid}/cmdline").read_bytes():
            assert time.monotonic() < deadline, "the stand-in process never started"
            time.sleep(0.01)
        look = poll_run.look(str(job), str(run_dir))
        # The torn last line is no trial (yet).
        assert look == {"finished": False, "died": False, "stalled": False, "stall": "",
                        "rc": None, "msg": "", "stderr": "", "trials": 2}
    finally:
        wrapper.kill()
        wrapper.wait(timeout=10)
    # Its processes gone without a result (the host restarted): finished, died.
    look = poll_run.look(str(job), str(run_dir))
    assert look["finished"] and look["died"] and look["rc"] is None
    # The command's result, written by async_wrapper at the end.
    job.write_text(json.dumps({"rc": 1, "stderr": "x\nbakeoff: 2 trial(s) failed\n",
                               "msg": "non-zero return code", "ansible_job_id": jid}))
    (run_dir / "trials.jsonl").unlink()
    (run_dir / "results.json").write_text(json.dumps({"trials": [{}, {}, {}, {}]}))
    look = poll_run.look(str(job), str(run_dir))
    assert look["finished"] and not look["died"] and look["rc"] == 1 and look["trials"] == 4
    assert look["stderr"].endswith("2 trial(s) failed\n")


def test_a_stalled_look_ends_the_run_phase_stalled_with_its_reason() -> None:
    rec = _rec(["a"])
    stall = ("no trial recorded for 31 s, past its bound of 30 s (10x its slowest trial, at "
             "least --stall-after 20 s); stopped with SIGTERM (it saved its trials)")
    ended = []
    for ev in [
        _ev(0, "start", "a", "connect: ping"), _ev(1, "ok", "a", "connect: ping"),
        _ev(2, "start", "a", "run: start bakeoff run"), _ev(3, "ok", "a", "run: start bakeoff run"),
        _ev(3, "start", "a", "run: bakeoff run"),
        _ev(40, "ok", "a", "run: bakeoff run", stdout=json.dumps(
            {"finished": True, "stalled": True, "stall": stall, "rc": None, "trials": 5})),
        _ev(41, "start", "a", "fetch: pack the results"), _ev(42, "ok", "a", "fetch: pack the results"),
        _ev(43, "failed", "a", "result: exit status of bakeoff run", msg=f"stalled: {stall}"),
    ]:
        ended += record.apply_event(rec, ev)
    a = rec.hosts["a"]
    assert a.status == "stalled" and a.reason == stall and a.trials_recorded == 5
    assert a.run_started and a.reachable is True
    assert a.phases["run"].outcome == "stalled" and ("a", "run") in ended
    assert [h.host for h in rec.failed()] == ["a"]


@pytest.mark.slow(live=False)
def test_a_failed_set_up_is_named_by_the_first_line_of_its_cause(tmp_path: Path) -> None:
    """Real make output: the cause comes first (a tool not found), make's `*** ... Error`
    summaries last; the reason is the cause."""
    (tmp_path / "Makefile").write_text("build:\n\t$(MAKE) -C sub\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "Makefile").write_text("all:\n\tbpftool-not-installed gen skeleton x.o\n")
    made = subprocess.run(["make", "-C", str(tmp_path), "build"], capture_output=True, text=True,
                          check=False, timeout=60)
    assert made.returncode == 2 and made.stderr.strip().splitlines()[-1].endswith("Error 2")
    rec = _rec(["a"])
    record.apply_event(rec, _ev(0, "start", "a", "setup: make deps build"))
    record.apply_event(rec, _ev(9, "failed", "a", "setup: make deps build", rc=2,
                                stderr=made.stderr))
    reason = rec.hosts["a"].reason
    assert reason.startswith("setup: make deps build: exit 2: ") and "Error 2" not in reason
    assert "bpftool-not-installed" in reason
    assert "No such file" in reason or "not found" in reason


def _stand_in_run(tmp_path: Path, run_dir: Path) -> subprocess.Popen[bytes]:
    """A process whose command line is a host's `bakeoff run --out RUN_DIR`; on SIGTERM it
    saves (a file) and exits, as bakeoff run does."""
    tool = tmp_path / "bin" / "bakeoff"
    tool.parent.mkdir()
    tool.write_text(f"#!{sys.executable}\n"
                    "import signal, sys, time, pathlib\n"
                    "def bye(*_):\n"
                    "    pathlib.Path(sys.argv[-1], 'saved').write_text('yes')\n"
                    "    sys.exit(143)\n"
                    "signal.signal(signal.SIGTERM, bye)\n"
                    "time.sleep(120)\n")
    tool.chmod(0o755)
    # Through sh: the suite's guard against live runs sees one word, not `bakeoff run`.
    proc = subprocess.Popen(["sh", "-c", f"exec {tool} run --out {run_dir}"])
    deadline = time.monotonic() + 10
    while str(run_dir).encode() not in Path(f"/proc/{proc.pid}/cmdline").read_bytes():
        assert time.monotonic() < deadline, "the stand-in run never started"
        time.sleep(0.01)
    time.sleep(0.3)  # its SIGTERM handler is in place
    return proc


@pytest.mark.slow(live=False)
def test_a_frozen_run_is_stalled_past_its_bound_and_stopped(tmp_path: Path) -> None:
    """fleet/poll_run.py on a real SIGSTOPped process: within its bound it is running; past
    it (10x its slowest trial, at least STALL_AFTER_S) it is stalled, woken, SIGTERMed."""
    import signal

    poll_run = _poll_run()
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    journal = run_dir / "trials.jsonl"
    journal.write_text('{"index": 0, "wall_s": 2.0}\n{"index": 1, "wall_s": 3.0}\n')
    jid = f"j{os.getpid()}{time.monotonic_ns() % 10**6}"
    job = tmp_path / f"{jid}.4242"
    job.write_text(json.dumps({"started": True, "finished": False, "ansible_job_id": jid}))
    assert poll_run.stall_bound([{"wall_s": 2.0}, {"wall_s": 3.0}], 20) == 30
    assert poll_run.stall_bound([{"wall_s": 1.0}], 20) == 20
    assert poll_run.stall_bound([], 20) == 60  # before the first trial: 3x, from the start
    wrapper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", jid])
    run = _stand_in_run(tmp_path, run_dir)
    try:
        run.send_signal(signal.SIGSTOP)
        past = time.time() - 25
        os.utime(journal, (past, past))
        os.utime(job, (past - 60, past - 60))
        look = poll_run.look(str(job), str(run_dir), 20)  # 25 s quiet, bound 30 s
        assert not look["finished"] and not look["stalled"] and look["trials"] == 2
        past = time.time() - 31
        os.utime(journal, (past, past))
        look = poll_run.look(str(job), str(run_dir), 20)
        assert look["finished"] and look["stalled"] and not look["died"], look
        assert look["stall"].startswith("no trial recorded for 31 s, past its bound of 30 s")
        assert look["stall"].endswith("stopped with SIGTERM (it saved its trials)")
        assert run.wait(timeout=10) == 143 and (run_dir / "saved").read_text() == "yes"
        # Its trials done (results.json final, no journal), a run that analyses and writes
        # its reports records no trial and is not stalled, however long it takes.
        journal.unlink()
        (run_dir / "results.json").write_text(json.dumps({"status": "complete", "trials": []}))
        look = poll_run.look(str(job), str(run_dir), 20)
        assert not look["finished"] and not look["stalled"], look
    finally:
        for p in (wrapper, run):
            if p.poll() is None:
                p.kill()
                p.wait(timeout=10)


def test_an_interrupted_hosts_state_says_what_is_true(tmp_path: Path) -> None:
    """Not started, stopped before its run started, stopped with the count read at the
    stop, or left running (a second Ctrl-C skipped the stop) with how to stop it."""
    from bakeoff.fleet.command import _cut_short

    rec = _rec(["a"])
    h = rec.hosts["a"]
    assert _cut_short(h, tmp_path, rec) == "not started; --resume runs it from the start"
    for ev in [_ev(0, "start", "a", "connect: ping"), _ev(1, "ok", "a", "connect: ping"),
               _ev(2, "start", "a", "run: state of an earlier attempt")]:
        record.apply_event(rec, ev)
    assert _cut_short(h, tmp_path, rec).startswith("stopped in its run phase before its run "
                                                   "started")
    record.apply_event(rec, _ev(3, "ok", "a", "run: start bakeoff run"))
    h.trials_recorded, h.stop = 41, "stopped"
    assert _cut_short(h, tmp_path, rec).startswith(
        "stopped mid-run with 41 trial(s) recorded at the stop; they stay on the host")
    h.stop = "left running"
    said = _cut_short(h, tmp_path, rec)
    assert said.startswith("left running on the host") and "at the last look" in said
    assert f"bakeoff fleet run --resume {tmp_path}" in said and \
        f"pkill -TERM -f 'bakeoff run .*<bakeoff_remote_dir>/a/results/{rec.remote_name}$'" in said
