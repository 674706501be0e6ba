"""The fleet record from playbook events, without hosts: phases, reasons, save and load.

The events are the shape fleet/callback_plugins/bakeoff_events.py writes; the live tests
(test_fleet.py) check the same record from real runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bakeoff.errors import UsageError
from bakeoff.fleet import record
from bakeoff.fleet.driver import new_record


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


def test_the_run_exit_status_and_the_result_check() -> None:
    rec = _rec(["a"])
    for ev in [
        _ev(0, "start", "a", "run: bakeoff run"), _ev(10, "ok", "a", "run: bakeoff run", rc=1),
        _ev(10, "start", "a", "fetch: copy the results"), _ev(11, "ok", "a", "fetch: copy the results"),
        # Outside the phases: does not reopen or time a phase, but its failure is the reason.
        _ev(11, "start", "a", "result: exit status of bakeoff run"),
        _ev(12, "failed", "a", "result: exit status of bakeoff run",
            msg="bakeoff run exited 1: 3 trial(s) failed; see the report"),
    ]:
        record.apply_event(rec, ev)
    record.close_phases(rec, 13)
    a = rec.hosts["a"]
    assert a.exit_status == 1 and a.status == "failed"
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
