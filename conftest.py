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
import time
from collections.abc import Iterable, Iterator
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


def pytest_runtest_setup(item: pytest.Item) -> None:
    _RUNNING[0] = item.nodeid


_STATE_DIR: list[str] = []


def pytest_unconfigure(config: pytest.Config) -> None:
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
    _STATE_DIR.append(tempfile.mkdtemp(prefix="bakeoff-test-state-"))
    os.environ["XDG_STATE_HOME"] = _STATE_DIR[0]
    real_init = subprocess.Popen.__init__

    def guarded(self: subprocess.Popen[Any], args: Any, *rest: Any, **kw: Any) -> None:
        if (what := _live_run(args)) is not None:
            if FAST_TIER:
                pytest.fail(f"{_RUNNING[0]} starts {what}: the fast tier runs no live "
                            "benchmark; mark the test @pytest.mark.slow", pytrace=False)
            if not _LOCKS_HELD:
                pytest.fail(f"{_RUNNING[0]} starts {what} without the suite lock (a session "
                            "fixture's run? wrap it in `with live_run_lock(...)`)",
                            pytrace=False)
        real_init(self, args, *rest, **kw)

    subprocess.Popen.__init__ = guarded  # type: ignore[method-assign]


# Modules whose tests share nothing but the build: pytest-xdist hands their tests out one by
# one. Every other module's tests go to one worker together (`--dist loadgroup`), so that its
# module-scoped fixtures (a live run, a fleet of hosts) are set up once, not once per worker.
INDEPENDENT_MODULES = frozenset({"test_fault_injection.py", "test_bad_input.py",
                                 "test_properties.py", "test_stats.py"})
# Modules that take the suite lock test by test rather than for the whole module: the
# independent ones, and the fleet's (both modules), whose tests run on one worker (its module fixture, three
# hosts each set up once, is made once) but last minutes each: a module-long shared hold
# would keep a machine-wide module, and behind it every other test, waiting that long.
LOCK_PER_TEST = INDEPENDENT_MODULES | {"test_fleet.py", "test_fleet_overnight.py"}


# Modules whose costly session fixture is the same run (every room's quick profile): one
# worker runs them all, so the run is made once.
SHARED_FIXTURE_GROUPS = {"test_findings.py": "all-rooms", "test_report_browser.py": "all-rooms",
                         "test_conformance.py": "all-rooms",
                         "test_conformance_sweep.py": "all-rooms"}


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
        _LOCKS_HELD.append((holder, exclusive))
        try:
            yield
        finally:
            _LOCKS_HELD.pop()
    finally:
        for held in (gate, fd):
            if held >= 0:
                os.close(held)  # closing drops the flock


def live_run_lock(holder: str) -> contextlib.AbstractContextManager[None]:
    """The suite lock, shared, around a fixture's live runs. pytest sets a session or module
    fixture up before a narrower lock (wider scopes first; LOCK_PER_TEST modules lock per
    test), so without this such a run would go on beside a machine-wide module: stop 24's
    CI failed when tracing-overhead's tracer-crash test, holding the lock alone, killed the
    all-rooms run's bpftrace."""
    return suite_lock(False, holder)


def _starts_live_runs(items: Iterable[pytest.Item]) -> bool:
    return any(item.get_closest_marker("slow") is not None for item in items)


@pytest.fixture(scope="module", autouse=True)
def _suite_lock_per_module(request: pytest.FixtureRequest) -> Iterator[None]:
    machine_wide = getattr(request.module, "MACHINE_WIDE", False)
    mine = [i for i in request.session.items if i.path == request.path]
    if request.path.name in LOCK_PER_TEST or not (machine_wide or _starts_live_runs(mine)):
        yield
        return
    with suite_lock(machine_wide, request.path.name):
        yield


@pytest.fixture(autouse=True)
def _suite_lock_per_test(request: pytest.FixtureRequest) -> Iterator[None]:
    alone = request.node.get_closest_marker("machine_wide") is not None
    if request.path.name not in LOCK_PER_TEST or not (
            alone or _starts_live_runs([request.node])):
        yield
        return
    with suite_lock(alone, request.node.nodeid):
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


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Tests that count things (where signals landed, what sweeps removed) hand a summary
    over with record_property("summary", text); it reaches here from xdist workers too."""
    if report.when == "call":
        _SUMMARIES.extend(str(v) for k, v in report.user_properties if k == "summary")
    if not os.environ.get("PYTEST_XDIST_WORKER"):  # the controller: once per phase
        node = getattr(report, "node", None)
        _timeline({"worker": node.gateway.id if node is not None else "main",
                   "test": report.nodeid, "phase": report.when, "outcome": report.outcome,
                   "start": report.start, "stop": report.stop})


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _SUMMARIES:
        terminalreporter.section("what the fault-injection tests counted")
        for text in _SUMMARIES:
            terminalreporter.write_line(text)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that needs the built benchmarks (the `built` fixture, directly or through
    another fixture) runs them: slow, whether or not it says so. And the xdist groups:
    before xdist's own hook reads them into the test IDs (tryfirst; without it the groups
    were added too late and every module's tests went to every worker, each worker making
    the module's live runs again)."""
    for item in items:
        if "built" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)
        if item.path.name not in INDEPENDENT_MODULES:
            group = SHARED_FIXTURE_GROUPS.get(item.path.name, item.path.name)
            item.add_marker(pytest.mark.xdist_group(group))


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


@pytest.fixture(scope="session")
def mremap_quick_run(built: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One real `bakeoff run mremap-vs-memcpy --profile quick`, shared by the tests that
    check its results directory and its report."""
    out = tmp_path_factory.mktemp("mremap") / "run"
    with live_run_lock("mremap_quick_run"):
        res = run_bakeoff("run", "mremap-vs-memcpy", "--profile", "quick", "--out", str(out),
                          "--seed", "11")
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"wrote {out}/report.html" in res.stdout
    return out


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
    out = tmp_path_factory.mktemp("all-rooms") / "run"
    with live_run_lock("all_rooms_quick_run"):
        res = run_bakeoff("run", *rooms_the_session_reads(request.session.items), "--profile",
                          "quick", "--trials", "3", "--out", str(out), "--seed", "7")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return out


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
