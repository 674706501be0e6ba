"""The suite's hooks, fixtures and helpers to run bakeoff as a user does: a subprocess, its
exit code, stdout and stderr.

At the repository's root, so it serves the harness's tests (tests/) and every room's own
(benchmarks/<room>/tests/, collected by `make test` through pyproject's testpaths) alike;
tests import it as `conftest`. The helper modules of tests/ (live_runs, room_cases, ...)
are importable from a room's tests too.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from bakeoff.core import pids as procs
from bakeoff.store import results as store

REPO = Path(__file__).resolve().parent
FIXTURES = REPO / "tests" / "fixtures"
# A room's tests import the suite's helper modules (live_runs, room_cases) as the harness's do.
if str(REPO / "tests") not in sys.path:
    sys.path.insert(1, str(REPO / "tests"))
IN_CI = os.environ.get("CI") == "true"


# `make test-fast` sets this: the edit-test loop's tier runs unit, property and in-process
# tests only. A test that starts a live benchmark there fails and says to mark it slow, so the
# split stays real as tests are added.
FAST_TIER = os.environ.get("BAKEOFF_TEST_TIER") == "fast"
LIVE_COMMANDS = frozenset({"run", "cmd", "fleet", "sample", "profile", "selftest"})


def _live_run(args: Any) -> str | None:
    """What a subprocess's argv starts, if it is a live benchmark: `bakeoff run` (or
    fleet, or a room's sampler), or a program of a room from build/."""
    argv = [str(a) for a in args] if isinstance(args, list | tuple) else [str(args)]
    for i, arg in enumerate(argv[:-1]):
        if (arg == "bakeoff" or arg.endswith("/bakeoff")) and (
                argv[i + 1] in LIVE_COMMANDS or (argv[i + 1] == "compare" and "--rerun" in argv)):
            return f"bakeoff {argv[i + 1]}"
    # bakeoff-launch is the harness's, not a room's: what it starts decides (a fixture
    # room's script is not a live benchmark).
    launcher = str(REPO / "build" / "common" / "bakeoff-launch")
    built_programs = [a for a in argv if a.startswith(str(REPO / "build") + "/")
                      and a != launcher]
    return f"the built program {built_programs[0]}" if built_programs else None


_RUNNING: list[str] = ["(collection)"]  # the test being set up, run or torn down


def _argv0(args: Any) -> str:
    return str(args[0] if isinstance(args, list | tuple) and args else args).split()[0]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Before the test's fixtures: a test that starts live runs, in a module whose hold took
    no lock (set up for its tests that start none), takes it for the rest of the module."""
    _RUNNING[0] = item.nodeid
    _RUNNING_ITEM[:] = [item]
    if _MODULE_HOLDS and not _LOCKS_HELD and starts_live_runs(item):
        _MODULE_HOLDS[-1].enter_context(suite_lock(False, item.nodeid))


_STATE_DIR: list[str] = []
_STATE_PREFIX = "bakeoff-test-state-"


def _sweep_dead_state_dirs() -> None:
    """Remove the state directories of test sessions whose process is gone."""
    for d in Path(tempfile.gettempdir()).glob(f"{_STATE_PREFIX}*-*"):
        pid = d.name[len(_STATE_PREFIX):].partition("-")[0]
        if pid.isdigit() and not psutil.pid_exists(int(pid)):
            shutil.rmtree(d, ignore_errors=True)


def _term_as_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_unconfigure(config: pytest.Config) -> None:
    _end_alone()
    for d in _STATE_DIR:
        shutil.rmtree(d, ignore_errors=True)


def pytest_configure(config: pytest.Config) -> None:
    """Children start with SIGINT as a terminal gives it. Starting a live benchmark fails the
    test, module fixtures too, in the fast tier; in the slow one, unless this process holds
    the suite lock (SUITE_LOCK: a run made without it can meet a machine-wide check)."""
    # A suite started in the background by a script (`make test &` without job control)
    # inherits SIGINT ignored, and so would every bakeoff it starts: a test's Ctrl-C would
    # then be lost in the interpreter's start-up, where bakeoff has no handler yet. A
    # Python handler here is reset to the default in each child at exec.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    # A run-to-run spread the developer's `bakeoff selftest` recorded would change what
    # `bakeoff compare` says (bakeoff/stats/drift.py): tests see an empty state directory of their
    # own (a test that wants a spread writes one there), removed at the end.
    # Named by our PID: one a session killed outright (SIGKILL, a worker that crashed) left
    # is removed by the next session to start (_sweep_dead_state_dirs); SIGTERM ends this
    # one as Ctrl-C does, through pytest_unconfigure.
    _sweep_dead_state_dirs()
    _STATE_DIR.append(tempfile.mkdtemp(prefix=f"{_STATE_PREFIX}{os.getpid()}-"))
    if not hasattr(config, "workerinput") and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _term_as_interrupt)
    # The work units go out in the order the workers collected them (slowest_first), not
    # pytest-xdist's (the units with the most tests first).
    if getattr(config.option, "dist", "no") == "loadgroup":
        config.option.loadscopereorder = False
    os.environ["XDG_STATE_HOME"] = _STATE_DIR[0]
    real_init = subprocess.Popen.__init__

    def guarded(self: subprocess.Popen[Any], args: Any, *rest: Any, **kw: Any) -> None:
        if FAST_TIER and _RUNNING[0] != "(collection)" and _live_run(args) is None:
            # The fast tier is the edit-test loop: each program started (the CLI's own
            # interpreter start-up) made it minutes long (docs/RELIABILITY.md).
            pytest.fail(f"{_RUNNING[0]} starts the program {_argv0(args)}: the fast tier "
                        "starts none; mark the test @pytest.mark.slow(live=False)",
                        pytrace=False)
        if (what := _live_run(args)) is not None:
            if FAST_TIER:
                pytest.fail(f"{_RUNNING[0]} starts {what}: the fast tier runs no live "
                            "benchmark; mark the test @pytest.mark.slow", pytrace=False)
            if not _LOCKS_HELD and _LAZY_HOLDS:
                with _LAZY_GUARD:  # outcomes' threads start runs at once: one takes it
                    if not _LOCKS_HELD:
                        _LAZY_HOLDS[-1].enter_context(suite_lock(False, _RUNNING[0]))
            if not _LOCKS_HELD:
                pytest.fail(f"{_RUNNING[0]} starts {what} without the suite lock (a session "
                            "fixture's run? wrap it in `with live_run_lock(...)`)",
                            pytrace=False)
        real_init(self, args, *rest, **kw)

    subprocess.Popen.__init__ = guarded  # type: ignore[method-assign]


# Modules whose tests share nothing but the build: pytest-xdist hands their tests out one by
# one. Every other module's tests go to one worker together (`--dist loadgroup`), so that its
# module-scoped fixtures (a live run, a fleet of hosts) are set up once, not once per worker.
INDEPENDENT_MODULES = frozenset({"test_fault_injection.py", "test_properties.py",
                                 "test_stats.py"})
# Modules that take the suite lock test by test rather than for the whole module: the
# independent ones; the fleet's (both modules), whose tests run on one worker (its module
# fixture, hosts each set up once, is made once) but last minutes each: a module-long shared
# hold would keep a machine-wide module, and behind it every other test, waiting that long;
# and bad input's, whose module fixture runs the whole catalogue under the lock before its
# first test. (Bad input's tests were handed out one by one until 2026-11-29: every worker
# that got one ran the whole catalogue, 145 s and 129 s of set-up on two workers in CI.)
LOCK_PER_TEST = INDEPENDENT_MODULES | {"test_fleet.py", "test_fleet_overnight.py",
                                       "test_bad_input.py"}


# Modules whose costly session fixture is the same run (every room's quick profile): one
# worker runs them all, so the run is made once.
SHARED_FIXTURE_GROUPS = {"test_findings.py": "all-rooms", "test_report_browser.py": "all-rooms",
                         "test_conformance.py": "all-rooms"}

# Modules that read the shared run but hold the suite lock alone (MACHINE_WIDE) for seconds:
# a unit of their own, handed out last (slowest_first). In the all-rooms group, mid-run, the
# sweep's hold first waited for the other workers' module-long shared holds to end, with the
# turnstile shut on them meanwhile, a worker or two idle (docs/RELIABILITY.md has the fresh-
# clone timelines that showed it). Last, it waits only
# for the other workers' last units, which the session waits for anyway; the shared run is
# made by then (made_once), or by this unit if it alone reads it.
AT_THE_END = frozenset({"test_conformance_sweep.py"})


# Some modules check the machine as a whole after a run: no lttng-sessiond, uprobe, BPF program
# or room process left, whoever's. They set MACHINE_WIDE = True and hold this lock
# exclusively for the whole module (a test of LOCK_PER_TEST: @pytest.mark.machine_wide);
# every other test that starts a live run holds it shared (a module at a time, or a test at a
# time in LOCK_PER_TEST). So under pytest-xdist, or beside another suite on the same
# machine, no other test of ours makes the things such a check would count. Tests that start
# nothing (the fast tier) make nothing to count: they take no lock and run beside anything.
SUITE_LOCK = Path("/tmp/bakeoff-test-suite.lock")
# flock has no writer preference: with two workers taking the lock shared test after test,
# an exclusive request could wait for minutes (the suite's timeline showed 270 s) while the
# lock never fell free. Whoever wants it exclusively first holds the turnstile; every shared
# taker passes through the turnstile first, so it queues behind a waiting exclusive one.
TURNSTILE = Path("/tmp/bakeoff-test-suite.turnstile")


def _open_lock(path: Path) -> int:
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)


# Modules of LOCK_PER_TEST whose tests take the suite lock only when one starts a live run
# (the Popen guard in pytest_configure), held to the test's end: most of bad input's tests
# read outcomes its module fixture made, and queueing at the turnstile for each of 150 of
# them cost minutes behind other engineers' exclusive modules. A test that makes things
# before its first run (and so needs the lock from its start) does not belong here.
LOCK_WHEN_RUNNING = frozenset({"test_bad_input.py"})
_LAZY_HOLDS: list[contextlib.ExitStack] = []
_LAZY_GUARD = threading.Lock()


# Seconds this process waited for the suite lock since its last test report: each report
# carries them (pytest_runtest_makereport), so the group summary can say who waited.
_LOCK_WAITS: list[float] = []


# The holds of the suite lock this process has (a worker's module or test, a fixture's
# runs): a live run started with none could overlap a machine-wide module.
_LOCKS_HELD: list[tuple[str, bool]] = []


@contextlib.contextmanager
def suite_lock(exclusive: bool, holder: str) -> Iterator[None]:
    """Hold SUITE_LOCK, shared or alone, for the block. Already held by this process: held
    on, not taken again, as a second request would queue at the turnstile behind a worker
    waiting to hold the lock alone, which waits for us."""
    if _LOCKS_HELD:
        if exclusive and not _LOCKS_HELD[0][1]:
            raise RuntimeError(f"{holder} wants the suite lock alone, inside "
                               f"{_LOCKS_HELD[0][0]}'s shared hold")
        yield
        return
    if _RUNNING_ITEM and item_unit(_RUNNING_ITEM[0]).endswith(NO_LIVE_RUN):
        # Such a unit is handed out to run while the machine-wide group holds the lock
        # alone: here it would wait for all of it (test_history's PostgreSQL case waited
        # 195 s in CI, then made its module's live runs a second time).
        pytest.fail(f"{holder} takes the suite lock in {_RUNNING_ITEM[0].nodeid}, a test of "
                    "a unit that takes none (no `slow` mark, or a closer slow(live=False) "
                    "one): mark the test @pytest.mark.slow", pytrace=False)
    start = time.time()
    gate, fd = _open_lock(TURNSTILE), _open_lock(SUITE_LOCK)
    try:
        fcntl.flock(gate, fcntl.LOCK_EX)
        if exclusive:
            fcntl.flock(fd, fcntl.LOCK_EX)  # the turnstile stays shut until we are done
        else:
            fcntl.flock(fd, fcntl.LOCK_SH)
            os.close(gate)
            gate = -1
        _timeline({"worker": os.environ.get("PYTEST_XDIST_WORKER", "main"), "test": holder,
                   "phase": "lock-wait", "start": start, "stop": time.time()})
        _LOCK_WAITS.append(time.time() - start)
        _LOCKS_HELD.append((holder, exclusive))
        try:
            yield
        finally:
            _LOCKS_HELD.pop()
    finally:
        for held in (gate, fd):
            if held >= 0:
                os.close(held)  # closing drops the flock


def required_tool(name: str) -> str:
    """The path of a program a test needs. Under CI=true its absence fails the test (`make
    test` installs it from debian-packages: a skip there would hide that); elsewhere it skips."""
    found = shutil.which(name)
    if found is None:
        if IN_CI:
            pytest.fail(f"{name} is not installed; make test installs it (debian-packages)")
        pytest.skip(f"{name} is not installed (make deps installs it)")
    return found


def live_run_lock(holder: str) -> contextlib.AbstractContextManager[None]:
    """The suite lock, shared, around a fixture's live runs. pytest sets a session or module
    fixture up before a narrower lock (wider scopes first; LOCK_PER_TEST modules lock per
    test), so without this such a run would go on beside a machine-wide module: stop 24's
    CI failed when tracing-overhead's tracer-crash test, holding the lock alone, killed the
    all-rooms run's bpftrace."""
    return suite_lock(False, holder)


def starts_live_runs(item: pytest.Item) -> bool:
    """Marked slow for a live run. `@pytest.mark.slow(live=False)` is slow for its own work
    (a simulation of thousands of runs, the CLI started as a program, over and over): out of
    the fast tier, but it takes no suite lock and runs beside anything."""
    mark = item.get_closest_marker("slow")
    return mark is not None and mark.kwargs.get("live", True)


def _starts_live_runs(items: Iterable[pytest.Item]) -> bool:
    return any(starts_live_runs(item) for item in items)


# The machine-wide modules are one xdist group (MACHINE_WIDE_GROUP), handed out first, and
# its worker holds the suite lock alone from the first of them to the first test of another
# kind: one hold, taken at the session's start, where no shared hold has to drain. Held
# module by module, spread over the run, each exclusive request first waited for the other
# workers' module-long shared holds to end and shut the turnstile on them meanwhile: in the
# two fresh-clone timelines of 2026-11-29, 740 s and 1,073 s of the workers' time went in
# waits for the lock, where the exclusive holds themselves took 260 s and 282 s.
MACHINE_WIDE_GROUP = "machine-wide"
_ALONE: list[contextlib.ExitStack] = []  # this worker's hold alone, while it lasts


def _hold_alone(holder: str) -> None:
    """Hold the suite lock alone from here on (until _end_alone), if not already held so."""
    if not _ALONE:
        held = contextlib.ExitStack()
        held.enter_context(suite_lock(True, holder))
        _ALONE.append(held)


def _end_alone() -> None:
    if _ALONE:
        _ALONE.pop().close()


@pytest.fixture(scope="module", autouse=True)
def _suite_lock_per_module(request: pytest.FixtureRequest) -> Iterator[None]:
    machine_wide = getattr(request.module, "MACHINE_WIDE", False)
    if request.path.name in LOCK_PER_TEST:
        yield  # each test decides (_suite_lock_per_test)
        return
    # The tests of this module in the unit the test being set up belongs to: a module's
    # tests that start no live run are a unit apart (NO_LIVE_RUN).
    unit = item_unit(_RUNNING_ITEM[0]) if _RUNNING_ITEM else None
    mine = [i for i in request.session.items if i.path == request.path
            and (unit is None or item_unit(i) == unit)]
    if machine_wide:
        # Only if its selected tests start programs (any slow test: a sweep's test starts
        # no live run but plants what one would sweep): the fast tier runs a machine-wide
        # module's unit tests, which make nothing to count, and waiting to hold the lock
        # alone behind another clone's suite kept `make test-fast` waiting for minutes.
        if any(i.get_closest_marker("slow") is not None for i in mine):
            _hold_alone(request.path.name)
        yield
        return
    _end_alone()
    with contextlib.ExitStack() as held:
        if _starts_live_runs(mine):
            held.enter_context(suite_lock(False, request.path.name))
        _MODULE_HOLDS.append(held)
        try:
            yield
        finally:
            _MODULE_HOLDS.remove(held)


# The module holds of this worker (one at a time): a module set up for its unit of tests
# that start no live run, followed on the same worker by its unit that does, is not set up
# again; the first test that starts one takes the lock into it (pytest_runtest_setup).
_MODULE_HOLDS: list[contextlib.ExitStack] = []
_RUNNING_ITEM: list[pytest.Item] = []


def item_unit(item: pytest.Item) -> str:
    group = item.get_closest_marker("xdist_group")
    return str(group.args[0]) if group is not None else item.nodeid


@pytest.fixture(autouse=True)
def _suite_lock_per_test(request: pytest.FixtureRequest) -> Iterator[None]:
    alone = request.node.get_closest_marker("machine_wide") is not None
    if request.path.name not in LOCK_PER_TEST:
        yield
        return
    if alone:
        _hold_alone(request.node.nodeid)
        yield
        return
    _end_alone()
    if not _starts_live_runs([request.node]):
        yield
        return
    if request.path.name in LOCK_WHEN_RUNNING:
        with contextlib.ExitStack() as held:  # taken by the first live run, if any
            _LAZY_HOLDS.append(held)
            try:
                yield
            finally:
                _LAZY_HOLDS.pop()
        return
    with suite_lock(False, request.node.nodeid):
        yield


# BAKEOFF_TEST_TIMELINE=FILE: each test phase appends a JSON line (worker, test, phase, start
# and stop on the wall clock), from every xdist worker, so the suite's wall time can be read
# as a timeline: which worker waited for the suite lock, which ran what beside what.
TIMELINE = os.environ.get("BAKEOFF_TEST_TIMELINE")
_SUMMARIES: list[str] = []


def _timeline(line: dict[str, Any]) -> None:
    if TIMELINE:
        with open(TIMELINE, "a") as f:  # one short line per write: appends do not interleave
            f.write(json.dumps(line) + "\n")


# ---- the time of each test group, printed at the end and remembered for the next order ----

UNIT_SECONDS_KEY = "bakeoff/unit-seconds"


def unit_of(nodeid: str) -> str:
    """The unit pytest-xdist hands to one worker: the test's xdist group (the suffix after
    '@' that --dist loadgroup gives its ID), or the test alone."""
    head, _, group = nodeid.rpartition("@")
    return group if head and "]" not in group else nodeid


def _group_of(nodeid: str) -> str:
    """What the summary adds up: a unit, or the module of a test handed out alone."""
    unit = unit_of(nodeid)
    return unit.split("::", 1)[0].rsplit("/", 1)[-1] if unit == nodeid else unit


def _property(report: pytest.TestReport, key: str) -> float:
    return sum(float(v) for k, v in report.user_properties if k == key)  # type: ignore[arg-type]


class GroupTime:
    """A group's tests, the workers they ran on, their set-up, call and tear-down seconds
    (which include a set-up's live run and its wait for the suite lock), that wait alone,
    the CPU seconds its phases used (the worker's and the programs it waited for), and the
    wall-clock span from its first phase's start to its last's stop."""

    def __init__(self) -> None:
        self.tests: set[str] = set()
        self.workers: set[str] = set()
        self.busy_s = self.lock_wait_s = self.cpu_s = 0.0
        self.start, self.stop = float("inf"), 0.0
        self.units: dict[str, float] = {}

    def add(self, report: pytest.TestReport, worker: str) -> None:
        self.tests.add(report.nodeid)
        self.workers.add(worker)
        self.busy_s += report.duration
        self.lock_wait_s += _property(report, "lock_wait_s")
        self.cpu_s += _property(report, "cpu_s")
        self.start, self.stop = min(self.start, report.start), max(self.stop, report.stop)
        unit = unit_of(report.nodeid).split("@", 1)[0]
        self.units[unit] = self.units.get(unit, 0.0) + report.duration


_GROUP_TIMES: dict[str, GroupTime] = {}


def group_time_lines(groups: dict[str, GroupTime], shown: int = 15) -> list[str]:
    """The slowest groups, one line each, the rest in one line, and each worker's busy time
    against the wall: where the suite's time went, and whether the workers stayed busy."""
    t0 = min(g.start for g in groups.values())
    wall = max(g.stop for g in groups.values()) - t0
    ranked = sorted(groups.items(), key=lambda kv: -kv[1].busy_s)
    lines = [f"{'group':44} {'tests':>5} {'busy s':>7} {'cpu s':>7} {'lock wait s':>11} "
             f"{'span s':>13}  workers"]
    for name, g in ranked[:shown]:
        lines.append(f"{name[-44:]:44} {len(g.tests):5} {g.busy_s:7.1f} {g.cpu_s:7.1f} "
                     f"{g.lock_wait_s:11.1f} {g.start - t0:6.0f}-{g.stop - t0:<6.0f}  "
                     f"{','.join(sorted(g.workers))}")
    rest = ranked[shown:]
    if rest:
        lines.append(f"{len(rest)} more groups: {sum(len(g.tests) for _, g in rest)} tests, "
                     f"{sum(g.busy_s for _, g in rest):.1f} s busy, "
                     f"{sum(g.cpu_s for _, g in rest):.1f} s CPU")
    by_worker: dict[str, float] = {}
    for g in groups.values():
        for w in g.workers:  # a group on several workers (tests handed out alone): shared out
            by_worker[w] = by_worker.get(w, 0.0) + g.busy_s / len(g.workers)
    lines.append(f"wall {wall:.0f} s; busy by worker: "
                 + ", ".join(f"{w} ~{s:.0f} s" for w, s in sorted(by_worker.items())))
    return lines


def _remember_unit_seconds(config: pytest.Config) -> None:
    """Each unit's seconds, for the next run's order (pytest's cache, .pytest_cache/)."""
    cache = getattr(config, "cache", None)  # None, or absent with -p no:cacheprovider
    if cache is None:
        return
    seconds = dict(cache.get(UNIT_SECONDS_KEY, {}))
    for g in _GROUP_TIMES.values():
        seconds.update({u: round(s, 1) for u, s in g.units.items()})
    cache.set(UNIT_SECONDS_KEY, seconds)


# Each test's seconds in a fresh-clone run of the whole suite (scripts/test_seconds.py makes
# it from a timeline): the order of a clone that has no pytest cache yet, as CI's has not.
TEST_SECONDS = REPO / "tests" / "test-seconds.json"


def measured_test_seconds() -> dict[str, float]:
    try:
        return {str(k): float(v) for k, v in json.loads(TEST_SECONDS.read_text()).items()}
    except (OSError, ValueError):
        return {}


def slowest_first(config: pytest.Config, items: list[pytest.Item],
                  measured: dict[str, float] | None = None) -> None:
    """Under --dist loadgroup, the units in the order their worker is to take them. The
    machine-wide group first (its worker holds the suite lock alone: at the start no shared
    hold has to drain), then the units that take no lock (the other workers run them
    meanwhile), then the rest longest first (a unit's seconds in the last run's cache, else
    its tests' in TEST_SECONDS, else a guess from its live runs), so that no unit of minutes
    starts last and leaves two workers idle; AT_THE_END's last of all. pytest-xdist's own
    order (the most tests first) put the fault-injection tests, a unit each, at the end. A
    unit's tests keep their order, so a module's fixtures are set up once."""
    cache = getattr(config, "cache", None)
    known: dict[str, float] = cache.get(UNIT_SECONDS_KEY, {}) if cache is not None else {}
    per_test = measured_test_seconds() if measured is None else measured

    unit = item_unit
    # Modules the file measured: a test of theirs not in it took under half a second. A
    # module new since the file was made is guessed as without it: guessed at half a second
    # a test, a new module of live runs was handed out last and ran alone at the end
    # (docs/RELIABILITY.md, "Where the 1,144 s went").
    measured_modules = {t.split("::", 1)[0] for t in per_test}

    def guess(item: pytest.Item) -> float:
        """Seconds: as measured, or roughly, by what a test with a live run does: a test
        handed out alone makes whole runs of its own (fault injection: minutes); a fleet
        test, minutes; a test that reads outcomes its module fixture made, little; any
        other, a run."""
        name = item.path.name
        if item.nodeid.split("@")[0] in per_test:
            return per_test[item.nodeid.split("@")[0]]
        if not starts_live_runs(item):
            return 0.1
        if item.nodeid.split("::", 1)[0] in measured_modules:
            return 0.5  # measured under half a second
        if name in INDEPENDENT_MODULES:
            return 120.0
        if name in LOCK_WHEN_RUNNING:
            return 1.0
        return 60.0 if name in LOCK_PER_TEST else 10.0

    cost: dict[str, float] = {}
    lock_free: dict[str, bool] = {}
    for item in items:
        cost[unit(item)] = cost.get(unit(item), 0.0) + guess(item)
        lock_free[unit(item)] = lock_free.get(unit(item), True) and \
            not starts_live_runs(item) and not machine_wide_test(item)
    cost = {u: known.get(u, c) for u, c in cost.items()}
    tier = {u: 0 if u == MACHINE_WIDE_GROUP else 1 if lock_free[u] else 2 for u in cost}
    if MACHINE_WIDE_GROUP not in cost:
        tier = dict.fromkeys(cost, 2)  # nothing holds the lock alone for long: longest first
    tier.update({u: 3 for u in cost if u in AT_THE_END})
    first_seen = {u: i for i, u in reversed(list(enumerate(unit(x) for x in items)))}
    items.sort(key=lambda x: (tier[unit(x)], -cost[unit(x)], first_seen[unit(x)]))


def cpu_seconds() -> float:
    """This process's CPU seconds and those of its children it (or they) waited for: the
    programs a test runs. Daemons a test leaves to others to reap are not in it."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


_CPU_MARK = [cpu_seconds()]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport() -> Iterator[None]:
    """Each report carries the seconds its worker waited for the suite lock since the last,
    and the CPU seconds the worker and the programs it ran used since the last report (one
    test phase at a time runs on a worker): the suite's CPU is what two cores share out, so
    a group's CPU, not its wall time, says what cutting it would give back."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    now = cpu_seconds()
    report.user_properties.append(("cpu_s", round(now - _CPU_MARK[0], 3)))
    _CPU_MARK[0] = now
    if _LOCK_WAITS:
        report.user_properties.append(("lock_wait_s", sum(_LOCK_WAITS)))
        _LOCK_WAITS.clear()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Tests that count things (where signals landed, what sweeps removed) hand a summary
    over with record_property("summary", text); it reaches here from xdist workers too."""
    if report.when == "call":
        _SUMMARIES.extend(str(v) for k, v in report.user_properties if k == "summary")
    if not os.environ.get("PYTEST_XDIST_WORKER"):  # the controller: once per phase
        node = getattr(report, "node", None)
        _GROUP_TIMES.setdefault(_group_of(report.nodeid), GroupTime()).add(
            report, node.gateway.id if node is not None else "main")
        _timeline({"worker": node.gateway.id if node is not None else "main",
                   "test": report.nodeid, "phase": report.when, "outcome": report.outcome,
                   "start": report.start, "stop": report.stop, "cpu_s": _property(
                       report, "cpu_s")})


# A fixed piece of pure-Python work, timed by the controller before the first test and after
# the last: how fast this machine ran for the suite. A VM's speed moves within an hour (one
# commit's suite took a quarter longer 25 minutes after its first run: docs/RELIABILITY.md,
# "Where the suite's CPU went"), so two suites' times compare only beside these figures.
SPEED_LOOP = 3_000_000
_SPEED_S: list[float] = []


def speed_loop_seconds() -> float:
    start = time.perf_counter()
    total = 0
    for i in range(SPEED_LOOP):
        total += i
    return time.perf_counter() - start


def pytest_sessionstart(session: pytest.Session) -> None:
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        _SPEED_S.append(speed_loop_seconds())


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _SUMMARIES:
        terminalreporter.section("what the fault-injection tests counted")
        for text in _SUMMARIES:
            terminalreporter.write_line(text)
    if _GROUP_TIMES:
        terminalreporter.section("time per test group")
        for line in group_time_lines(_GROUP_TIMES):
            terminalreporter.write_line(line)
        _remember_unit_seconds(terminalreporter.config)
        if _SPEED_S:
            terminalreporter.write_line(
                f"machine speed: {SPEED_LOOP:,} Python additions took {_SPEED_S[0]:.3f} s "
                f"before the first test and {speed_loop_seconds():.3f} s after the last")


def machine_wide_test(item: pytest.Item) -> bool:
    """A test of the machine-wide group: of a MACHINE_WIDE module (but those that read a
    shared run, which stay in that run's group), or marked machine_wide itself."""
    if item.get_closest_marker("machine_wide") is not None:
        return True
    module = getattr(item, "module", None)
    return bool(getattr(module, "MACHINE_WIDE", False)) and \
        item.path.name not in SHARED_FIXTURE_GROUPS and item.path.name not in AT_THE_END


# The tests of a module that start no live run (no `slow` mark) are a unit of their own,
# apart from its tests that do: that unit takes no lock, so it runs while the machine-wide
# group holds the lock alone (the other two workers had 150 s of such units for its 280 s
# in the timelines of 2026-11-29; the fast tests of mixed modules are about 190 s more). The
# modules whose fixtures both kinds share (beyond a temporary directory) are not split:
# those of LOCK_PER_TEST, the machine-wide ones and the shared-run groups.
NO_LIVE_RUN = " (no live run)"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test that needs the built benchmarks (the `built` fixture, directly or through
    another fixture) runs them: slow, whether or not it says so. And the xdist groups:
    before xdist's own hook reads them into the test IDs (tryfirst; without it the groups
    were added too late and every module's tests went to every worker, each worker making
    the module's live runs again)."""
    for item in items:
        if "built" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)
    with_live_runs = {i.path for i in items if starts_live_runs(i)}
    for item in items:
        # A test that names its own group (test_fleet.py's three) keeps it.
        if item.get_closest_marker("xdist_group") is not None:
            continue
        if machine_wide_test(item):
            item.add_marker(pytest.mark.xdist_group(MACHINE_WIDE_GROUP))
        elif item.path.name not in INDEPENDENT_MODULES:
            group = SHARED_FIXTURE_GROUPS.get(item.path.name, item.path.name)
            if item.path in with_live_runs and not starts_live_runs(item) and \
                    group == item.path.name and group not in LOCK_PER_TEST:
                group += NO_LIVE_RUN  # a unit of its own, that takes no lock
            item.add_marker(pytest.mark.xdist_group(group))
    if getattr(config.option, "loadgroup", False):  # an xdist worker of --dist loadgroup
        slowest_first(config, items)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Under `--dist loadgroup` every grouped test's ID carries its group by now; if none does,
    the groups are silently ignored (pytest 9 with pytest-xdist 3.8 did that): say so."""
    if not getattr(session.config.option, "loadgroup", False):
        return
    grouped = [i for i in session.items if i.get_closest_marker("xdist_group") is not None]
    if grouped and not any("@" in i.nodeid for i in grouped):
        raise pytest.UsageError("pytest-xdist ignored the xdist groups (no test ID carries its "
                                "group): install the pytest version pyproject.toml pins")


def run_bakeoff(*args: str, env: dict[str, str] | None = None,
                timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bakeoff", *args], cwd=REPO, capture_output=True, text=True,
        env={**os.environ, "COLUMNS": "200", **(env or {})}, timeout=timeout, check=False,
    )


def run_script(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    """One of scripts/ run as a user would, with this interpreter."""
    return subprocess.run([sys.executable, str(REPO / "scripts" / name), *args],
                          capture_output=True, text=True, check=False, timeout=120)


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


@pytest.fixture(scope="module")
def executor(built: Path) -> Path:
    """`bakeoff cmd`'s executor. Through `built`, so every test that runs commands is marked
    slow (starts_live_runs)."""
    path = built / "common" / "bakeoff-cmd-exec"
    assert path.exists(), "make build builds bakeoff-cmd-exec"
    return path


def made_once(tmp_path_factory: pytest.TempPathFactory, name: str,
              make: Callable[[Path], None]) -> Path:
    """A directory made by `make` once per test session, by whichever pytest-xdist worker
    asks first; the others wait for it and read it (a session fixture alone is made once per
    worker: the mremap quick run was made by up to three). Its readers must not write in it.
    The suite lock is taken before the session's lock on the name, so that whoever holds
    the latter never waits at the turnstile, behind a worker that waits for it."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the session's own directory, above each worker's
    shared = root / "made-once"
    shared.mkdir(exist_ok=True)
    out, done, failed = shared / name, shared / f"{name}.done", shared / f"{name}.failed"
    with live_run_lock(name):
        fd = _open_lock(shared / f"{name}.lock")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if failed.exists():
                pytest.fail(f"{name}, made by another worker, failed: {failed.read_text()}",
                            pytrace=False)
            if not done.exists():
                try:
                    make(out)
                except BaseException as e:
                    failed.write_text(str(e)[-4000:])
                    raise
                done.touch()
        finally:
            os.close(fd)
    return out


@pytest.fixture(scope="session")
def mremap_quick_run(built: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One real `bakeoff run mremap-vs-memcpy --profile quick`, shared by the tests that
    check its results directory and its report: made once per session (made_once)."""
    def make(out: Path) -> None:
        res = run_bakeoff("run", "mremap-vs-memcpy", "--profile", "quick", "--out", str(out),
                          "--seed", "11")
        assert res.returncode == 0, res.stdout + res.stderr
        assert f"wrote {out}/report.html" in res.stdout
    return made_once(tmp_path_factory, "mremap-quick-run", make)


def rooms_the_session_reads(items: Iterable[pytest.Item]) -> list[str]:
    """The rooms whose part of the all-rooms quick run the selected tests read: every room
    ([]: `bakeoff run` with no name) when a test of the whole report is selected; otherwise
    those of the selected tests parametrized by room, so `pytest tests/test_conformance.py
    -k ROOM` (the docs' per-room command) runs that room's quick run only, in seconds."""
    readers = [i for i in items if "all_rooms_quick_run" in getattr(i, "fixturenames", ())]
    rooms = {getattr(getattr(i, "callspec", None), "params", {}).get("room") for i in readers}
    if not readers or None in rooms:
        return []
    return sorted(str(r) for r in rooms)


@pytest.fixture(scope="session")
def all_rooms_quick_run(built: Path, tmp_path_factory: pytest.TempPathFactory,
                        request: pytest.FixtureRequest) -> Path:
    """One real `bakeoff run` of every benchmark (as `make bench` runs them) at the quick
    profile with 3 trials: the report a user gets, for the tests of its findings, its
    length and its first screen. Only the rooms the selected tests read, when every one of
    them is a room's own (rooms_the_session_reads)."""
    rooms = rooms_the_session_reads(request.session.items)

    def make(out: Path) -> None:
        res = run_bakeoff("run", *rooms, "--profile", "quick", "--trials", "3", "--out",
                          str(out), "--seed", "7")
        assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return made_once(tmp_path_factory, "all-rooms-quick-run", make)


def counted_output(stdout: str) -> tuple[dict[str, Any], dict[str, list[float]],
                                         dict[str, float]]:
    """A program's output with counted samples (--counted-samples): its meta lines merged,
    its samples by metric, its counters. The counters must be named in a second meta line,
    printed when they were opened: right before the first counted sample, so that no measured
    sample ran with them open (bench_counters_open_late, benchmarks/common/counters.h)."""
    lines = [json.loads(line) for line in stdout.splitlines()]
    values: dict[str, list[float]] = {}
    for x in lines:
        if x["type"] == "sample":
            values.setdefault(x["metric"], []).append(x["value"])
    metas = [x for x in lines if x["type"] == "meta"]
    assert len(metas) == 2 and "counters" not in metas[0], metas
    return ({**metas[0], **metas[1]}, values,
            {x["name"]: x["value"] for x in lines if x["type"] == "counter"})


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
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get("BAKEOFF_TEST_MARKER") == marker and procs.alive(proc.pid):
                found.append(proc.pid)
        except psutil.Error:
            continue  # exited, a kernel thread, or another user's
    return found


# ---- the rooms' independent checks ----------------------------------------------------------
# An independent check times the same quantity as a room's headline with code written apart
# from the room's (heap_sampling/indep_check.c, bpf_map_dump/indep_dump.c,
# mremap_vs_memcpy/indep_move.c). It runs every way in each round, so its interval is
# bakeoff's paired one over rounds.

AGREE_WITHIN = 0.15  # issue 33's tolerance: the point estimates within +-15% of each other
Speedup = tuple[float, float, float]  # (point, low, high): times faster, 95% CI


def speedup_over_rounds(base: list[float], other: list[float]) -> Speedup:
    """How many times faster other is than base, rounds paired (base[i] and other[i] ran in
    round i), with its 95% CI (stats.ratio_ci with rounds)."""
    from bakeoff.stats import estimates

    rounds = list(range(len(base)))
    r = estimates.ratio_ci([[x] for x in other], [[x] for x in base],
                           variant_rounds=rounds, baseline_rounds=rounds)
    return 1 / r.ratio, 1 / r.ci_high, 1 / r.ci_low


def agree(room: Speedup, independent: Speedup) -> bool:
    """Within AGREE_WITHIN of each other, or the two 95% CIs overlap (on a busy machine both
    widen; an overlap says neither excludes the other's range)."""
    within = abs(independent[0] / room[0] - 1) <= AGREE_WITHIN
    overlap = independent[1] <= room[2] and room[1] <= independent[2]
    return within or overlap
