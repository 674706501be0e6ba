"""The suite's own bookkeeping (conftest.py): the units pytest-xdist hands out and the time
summary printed at the end of `make test`."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import (
    MACHINE_WIDE_GROUP,
    TEST_SECONDS,
    UNIT_SECONDS_KEY,
    GroupTime,
    cpu_seconds,
    group_time_lines,
    measured_test_seconds,
    slowest_first,
    speed_loop_seconds,
    unit_of,
)


def _report(nodeid: str, when: str, start: float, seconds: float,
            lock_wait_s: float = 0.0, cpu_s: float = 0.0) -> pytest.TestReport:
    props = [("cpu_s", cpu_s)] + ([("lock_wait_s", lock_wait_s)] if lock_wait_s else [])
    return pytest.TestReport(nodeid, ("x.py", 1, "t"), {}, "passed", None, when,
                             duration=seconds, start=start, stop=start + seconds,
                             user_properties=props)


def test_a_unit_is_the_group_after_the_at_or_the_test_alone() -> None:
    assert unit_of("tests/test_a.py::test_x@all-rooms") == "all-rooms"
    assert unit_of("tests/test_a.py::test_x[p]@test_a.py") == "test_a.py"
    assert unit_of("tests/test_a.py::test_x") == "tests/test_a.py::test_x"
    assert unit_of("tests/test_a.py::test_x[a@b]") == "tests/test_a.py::test_x[a@b]"


def test_the_summary_ranks_groups_and_counts_lock_waits_and_workers() -> None:
    slow, fast = GroupTime(), GroupTime()
    slow.add(_report("t.py::a@g", "setup", 100.0, 30.0, lock_wait_s=12.5, cpu_s=9.0), "gw0")
    slow.add(_report("t.py::a@g", "call", 130.0, 5.0, cpu_s=4.5), "gw0")
    slow.add(_report("t.py::b@g", "call", 135.0, 5.0), "gw0")
    fast.add(_report("u.py::c", "call", 101.0, 1.0, cpu_s=0.5), "gw1")
    lines = group_time_lines({"fast.py": fast, "g": slow})
    assert lines[0].split()[:5] == ["group", "tests", "busy", "s", "cpu"], lines
    assert lines[1].split()[:5] == ["g", "2", "40.0", "13.5", "12.5"], lines
    assert lines[1].endswith("gw0") and "0-40" in lines[1].replace(" ", ""), lines
    assert lines[2].split()[:4] == ["fast.py", "1", "1.0", "0.5"], lines
    assert lines[-1] == "wall 40 s; busy by worker: gw0 ~40 s, gw1 ~1 s", lines
    assert slow.units == {"g": 40.0}


@pytest.mark.slow(live=False)
def test_a_phase_counts_the_cpu_of_the_programs_it_ran() -> None:
    """What cpu_s adds up: a child's CPU is in it once the child was waited for."""
    before = cpu_seconds()
    subprocess.run([sys.executable, "-c", "import time\nend = time.process_time() + 0.3\n"
                    "while time.process_time() < end: pass"], check=True)
    assert cpu_seconds() - before >= 0.3


def test_the_speed_line_times_a_fixed_piece_of_cpu_work() -> None:
    """The machine-speed figure is wall time around work on the CPU: never less than the
    CPU time the work took (a busy machine only adds waits), and not nothing."""
    cpu = time.process_time()
    wall = speed_loop_seconds()
    used = time.process_time() - cpu
    assert used > 0.01 and wall >= used * 0.95, (wall, used)


def test_groups_beyond_those_shown_are_summed_in_one_line() -> None:
    groups = {}
    for i in range(5):
        g = GroupTime()
        g.add(_report(f"m{i}.py::t", "call", float(i), float(i + 1), cpu_s=0.5), "main")
        groups[f"m{i}.py"] = g
    lines = group_time_lines(groups, shown=2)
    assert [ln.split()[0] for ln in lines[1:3]] == ["m4.py", "m3.py"]
    assert lines[3] == "3 more groups: 3 tests, 6.0 s busy, 1.5 s CPU", lines


class _Item:
    """What slowest_first reads of a pytest item."""

    def __init__(self, nodeid: str, group: str | None, slow: bool) -> None:
        self.nodeid, self.path = nodeid, Path(nodeid.split("::")[0])
        self._marks = {"slow": pytest.mark.slow.mark} if slow else {}
        if group is not None:
            self._marks["xdist_group"] = pytest.mark.xdist_group(group).mark

    def get_closest_marker(self, name: str) -> pytest.Mark | None:
        return self._marks.get(name)


class _Config:
    def __init__(self, known: dict[str, float] | None) -> None:
        self.cache = _Cache(known) if known is not None else None


class _Cache:
    def __init__(self, known: dict[str, float]) -> None:
        self.known = known

    def get(self, key: str, default: object) -> object:
        return self.known if key == UNIT_SECONDS_KEY else default


def _order(items: list[_Item], known: dict[str, float] | None = None,
           measured: dict[str, float] | None = None) -> list[str]:
    listed: list[Any] = list(items)
    slowest_first(_Config(known), listed, measured or {})  # type: ignore[arg-type]
    return [i.nodeid for i in listed]


def test_the_longest_units_go_first_and_a_unit_keeps_its_order() -> None:
    items = [_Item("tests/test_a.py::x", "test_a.py", False),
             _Item("tests/test_b.py::y1", "b", True), _Item("tests/test_c.py::z", "b", False),
             _Item("tests/test_b.py::y2", "b", True),
             _Item("tests/test_fault_injection.py::f", None, True)]
    # A guess: a fault-injection test (a unit alone, whole runs of its own) before a group
    # of two tests with a live run, before one with none.
    assert _order(items) == ["tests/test_fault_injection.py::f", "tests/test_b.py::y1",
                             "tests/test_c.py::z", "tests/test_b.py::y2", "tests/test_a.py::x"]
    # The last run's seconds, where known, over the guess.
    assert _order(items, {"test_a.py": 500.0, "b": 1.0})[:2] == [
        "tests/test_a.py::x", "tests/test_fault_injection.py::f"]


def test_a_fresh_clone_orders_by_the_measured_seconds_of_each_test() -> None:
    items = [_Item("tests/test_a.py::x", "a", True), _Item("tests/test_a.py::y", "a", True),
             _Item("tests/test_fault_injection.py::f", None, True)]
    # Without a cache, the tests' measured seconds add up to their unit's.
    assert _order(items, measured={"tests/test_a.py::x": 100.0, "tests/test_a.py::y": 30.0,
                                   "tests/test_fault_injection.py::f": 90.0})[0] == \
        "tests/test_a.py::x"
    # A module the file does not know (new since it was made) is guessed as without it: a
    # live test a run (10 s), not a test the file found under half a second.
    items = [_Item("tests/test_a.py::x", "a", True), _Item("tests/test_new.py::y", "new", True),
             _Item("tests/test_a.py::z", "a2", True)]
    assert _order(items, measured={"tests/test_a.py::x": 5.0}) == [
        "tests/test_new.py::y", "tests/test_a.py::x", "tests/test_a.py::z"]
    # The committed file is the order's when there is no cache, and it holds real tests.
    seconds = measured_test_seconds()
    assert seconds and all(s >= 0.5 for s in seconds.values()), TEST_SECONDS
    assert any(t.startswith("tests/test_fleet.py::") for t in seconds)


def test_the_machine_wide_group_goes_first_then_what_takes_no_lock() -> None:
    items = [_Item("tests/test_long.py::x", "long", True),
             _Item("tests/test_fast.py::y", "fast", False),
             _Item("tests/test_mw.py::z", MACHINE_WIDE_GROUP, True),
             _Item("tests/test_short.py::w", "short", True)]
    order = _order(items, {"long": 500.0, "fast": 1.0, MACHINE_WIDE_GROUP: 200.0,
                           "short": 5.0})
    # The group alone first, the lock-free unit while it runs, then the longest.
    assert order == ["tests/test_mw.py::z", "tests/test_fast.py::y", "tests/test_long.py::x",
                     "tests/test_short.py::w"]


def test_a_hold_alone_on_a_shared_run_goes_last() -> None:
    """test_conformance_sweep holds the lock alone after reading the all-rooms run: last,
    however long it is, where mid-run it waited for the other workers' module holds."""
    items = [_Item("tests/test_conformance_sweep.py::s", "test_conformance_sweep.py", True),
             _Item("tests/test_long.py::x", "long", True),
             _Item("tests/test_mw.py::z", MACHINE_WIDE_GROUP, True),
             _Item("tests/test_fast.py::y", "fast", False)]
    order = _order(items, {"long": 500.0, "fast": 1.0, MACHINE_WIDE_GROUP: 200.0,
                           "test_conformance_sweep.py": 900.0})
    assert order == ["tests/test_mw.py::z", "tests/test_fast.py::y", "tests/test_long.py::x",
                     "tests/test_conformance_sweep.py::s"]


def _load_script(name: str) -> Any:
    import importlib.util
    spec = importlib.util.spec_from_file_location(name.removesuffix(".py"),
                                                  TEST_SECONDS.parent.parent / "scripts" / name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_tests_seconds_leave_out_its_waits_for_the_lock() -> None:
    seconds = _load_script("test_seconds.py").seconds
    lines = [{"worker": "gw0", "test": "m.py", "phase": "lock-wait", "start": 1.0, "stop": 31.0},
             {"worker": "gw0", "test": "t.py::a@m.py", "phase": "setup", "start": 0.0,
              "stop": 40.0},
             {"worker": "gw0", "test": "t.py::a@m.py", "phase": "call", "start": 40.0,
              "stop": 45.0},
             {"worker": "gw1", "test": "t.py::b[x@y]", "phase": "call", "start": 0.0,
              "stop": 2.0},
             {"worker": "gw1", "test": "t.py::c", "phase": "call", "start": 0.0, "stop": 0.2}]
    # a: 45 s less the 30 s wait; b: its ID keeps its "@" (a parameter, not a group); c: too
    # short to list.
    assert seconds(lines) == {"t.py::a": 15.0, "t.py::b[x@y]": 2.0}


def test_the_schedule_waits_for_the_machine_wide_group_only_where_a_unit_runs_live() -> None:
    schedule = _load_script("suite_schedule.py").schedule
    units = [(MACHINE_WIDE_GROUP, 0, ["mw::a"]), ("fast", 1, ["f::a"]), ("live", 2, ["l::a"]),
             ("live2", 2, ["l2::a"])]
    plan = schedule(units, {"mw::a": 100.0, "f::a": 30.0, "l::a": 50.0, "l2::a": 10.0}, 3, {})
    at = {s["unit"]: (s["start"], s["stop"]) for s in plan["spans"]}
    assert at["fast"] == (0.0, 30.0)  # beside the group: it takes no lock
    assert at["live"] == (100.0, 150.0) and at["live2"] == (100.0, 110.0)
    assert plan["wall_s"] == 150.0
    # A unit held alone at the end starts once every other has ended.
    plan = schedule([*units, ("end", 3, ["e::a"])], {"mw::a": 100.0, "f::a": 30.0,
                                                     "l::a": 50.0, "l2::a": 10.0, "e::a": 1.0},
                    3, {})
    assert {s["unit"]: s["start"] for s in plan["spans"]}["end"] == 150.0


def _locked(path: Path, how: int) -> bool:
    """Whether another open file of path is refused the lock `how` now."""
    import fcntl
    import os
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, how | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def test_the_hold_alone_lasts_until_ended_and_a_module_hold_takes_the_lock_late(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On lock files of its own (not the machine's): the machine-wide group's hold is taken
    once and kept until ended; a live test in a module set up without the lock takes it into
    the module's hold before its fixtures, until the module ends."""
    import contextlib
    import fcntl

    import conftest
    lock = tmp_path / "suite.lock"
    monkeypatch.setattr(conftest, "SUITE_LOCK", lock)
    monkeypatch.setattr(conftest, "TURNSTILE", tmp_path / "turnstile")
    assert not conftest._LOCKS_HELD
    conftest._hold_alone("first")
    conftest._hold_alone("second")
    try:
        assert conftest._LOCKS_HELD == [("first", True)]
        assert _locked(lock, fcntl.LOCK_SH)
    finally:
        conftest._end_alone()
    assert not conftest._LOCKS_HELD and not _locked(lock, fcntl.LOCK_EX)

    running = list(conftest._RUNNING), list(conftest._RUNNING_ITEM)
    with contextlib.ExitStack() as module_hold:
        conftest._MODULE_HOLDS.append(module_hold)
        try:
            conftest.pytest_runtest_setup(_Item("tests/test_m.py::fast", None, False))  # type: ignore[arg-type]
            assert not _locked(lock, fcntl.LOCK_EX)
            conftest.pytest_runtest_setup(_Item("tests/test_m.py::live", None, True))  # type: ignore[arg-type]
            assert conftest._LOCKS_HELD == [("tests/test_m.py::live", False)]
            assert _locked(lock, fcntl.LOCK_EX) and not _locked(lock, fcntl.LOCK_SH)
        finally:
            conftest._MODULE_HOLDS.remove(module_hold)
            conftest._RUNNING[:], conftest._RUNNING_ITEM[:] = running
    assert not conftest._LOCKS_HELD and not _locked(lock, fcntl.LOCK_EX)


def test_a_test_of_a_unit_that_takes_no_lock_may_not_take_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A unit apart for tests without live runs runs while the machine-wide group holds the
    lock alone: a fixture of it that takes the lock (test_history's runs, reached by a test
    whose closest mark said slow(live=False)) fails it in one line, naming the fix, without
    taking the lock; a live unit's test takes it as before."""
    import fcntl

    import conftest
    lock = tmp_path / "suite.lock"
    monkeypatch.setattr(conftest, "SUITE_LOCK", lock)
    monkeypatch.setattr(conftest, "TURNSTILE", tmp_path / "turnstile")
    assert not conftest._LOCKS_HELD
    running = list(conftest._RUNNING_ITEM)
    try:
        conftest._RUNNING_ITEM[:] = [_Item("tests/test_m.py::pg", "test_m.py"
                                           + conftest.NO_LIVE_RUN, False)]
        with pytest.raises(pytest.fail.Exception, match=r"mark the test @pytest.mark.slow"), \
                conftest.live_run_lock("test_m.py: runs"):
            pass
        assert not conftest._LOCKS_HELD and not _locked(lock, fcntl.LOCK_EX)
        conftest._RUNNING_ITEM[:] = [_Item("tests/test_m.py::live", "test_m.py", True)]
        with conftest.live_run_lock("test_m.py: runs"):
            assert conftest._LOCKS_HELD == [("test_m.py: runs", False)]
    finally:
        conftest._RUNNING_ITEM[:] = running
    assert not conftest._LOCKS_HELD
