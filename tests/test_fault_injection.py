"""Fault injection: SIGINT, SIGTERM and SIGKILL sent to `bakeoff run --profile quick` of each
benchmark at every kind of moment of a run: in start-up (before results.json), with the
session up (its daemon serving) before the first trial, between or during trials, and after
the last trial (tear-down, saving, analysis, reports). After each signal:

- nothing the run made is left: no cgroup, LTTng session, uprobe, BPF program/map/link,
  bpffs mount, process (a trial, a tracer, a loader, a daemon bakeoff started) or temp
  directory. After SIGKILL, what was left must be gone once `bakeoff doctor --cleanup` or
  the next run (the resume) has swept, and the sweep must name what it removed;
- the results directory loads (or, killed before it had one, holds no results.json), and
  every trial saved before the signal is in it, unchanged;
- `bakeoff run --resume` finishes the run (exit 0): every case has trials 0..n-1, each
  once, and the trials saved before are unchanged.

Each moment is found from the run's own progress, not from a clock: results.json and the
trial journal appearing, and the phases the run announces on BAKEOFF_PHASE_LOG (the first
trial's checkpoint comes once the session is up; "teardown", "saved", "analysis" and each
report after the last trial). A seeded random offset within the moment's window
(BAKEOFF_FI_SEED seeds random.Random) and a seeded late phase vary where it lands, so a room
needs no hand-tuned timing, a daemon room's serving moment included. Every signal meets
every kind of moment BAKEOFF_FI_PER_SIGNAL times (default 1), SIGINT and SIGTERM after the
last trial aside (test_signals_after_the_last_trial sends each at every late phase): 10
runs per room. A cycle that lands elsewhere (the run was faster than its offset) is sent
again. A failure message names the seed, the
benchmark, the cycle and the moment, so that it can be replayed. The summary printed per
benchmark says where the signals landed and what the sweeps removed.

Things are attributed to this test's runs, not to others on the same machine: processes by a
marker in their environment, names (bakeoff-<pid>-...) by the PID of a run of ours or a PID
that is gone, temp directories by a TMPDIR of our own. What belongs to someone else's live
process is not ours and is left alone.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import select
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pytest
from live_runs import lttng

from bakeoff.core import pids as procs
from bakeoff.store import results as store
from conftest import IN_CI, REPO
from room_cases import ROOMS, cheapest_args, check_tuned

SEED = int(os.environ.get("BAKEOFF_FI_SEED", "20261122"))
PER_SIGNAL = int(os.environ.get("BAKEOFF_FI_PER_SIGNAL", "1"))
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)
MARKER = "BAKEOFF_FI_MARKER"
RUN_TIMEOUT_S = 180
OWNED = re.compile(r"bakeoff-(\d+)-")


@dataclass(frozen=True)
class Grid:
    """A benchmark's quick profile cut to a few cases, so that a cycle takes seconds."""

    name: str
    args: tuple[str, ...]
    needs: tuple[str, ...] = ()  # tools without which the benchmark cannot run here
    # Run in a mount namespace of its own with empty /run/lttng and /run/lock: its runs then
    # start (and must stop) their own LTTng session daemon even if one runs on the machine
    # already, and no other run shares it.
    private_run: bool = False
    # The cases of the late-signal test (one trial each): the phases after the last trial do
    # not depend on the cases, only the session's tear-down does, so one case with the
    # benchmark's session is enough. None: the grid's own cases.
    late: tuple[str, ...] | None = None


TUNED = (
    Grid("mremap-vs-memcpy", ("--variant", "mremap", "--param", "size=16MiB", "--trials", "2",
                              "--samples", "10")),
    # tracers held by the run, a trial beginning and ending its part of each: LTTng (a
    # session daemon bakeoff starts), libbpf uprobes, bpftrace (a process of its own), and
    # the baseline.
    Grid("tracing-overhead", ("--variant", "lttng", "--variant", "ebpf-force", "--variant",
                              "bpftrace", "--param", "duration_us=0", "--param", "calls=1000",
                              "--trials", "1", "--samples", "2"),
         needs=("lttng", "lttng-sessiond", "babeltrace2", "bpftrace", "unshare", "nsenter"),
         private_run=True,
         late=("--variant", "lttng", "--param", "duration_us=0", "--param", "calls=1000",
               "--samples", "2")),
    # two loaders holding maps for the run; C readers, one with an iterator program.
    # 20,000 entries: the same kinds of things to clean up as at 100,000, at a fifth of the
    # kernel time (a run spent 5 s of it filling and walking the maps).
    Grid("bpf-map-dump", ("--variant", "bpf-iter", "--param", "entries=20000", "--trials",
                          "2"),
         late=("--variant", "bpf-iter", "--param", "entries=20000", "--param", "map=hash")),
    # the sampler's runs (a temp directory per trial) beside the baseline: one workload
    # leaves the same kinds of things as two, in half the trials.
    Grid("heap-sampling", ("--variant", "poisson", "--param", "workload=mode1",
                           "--param", "scale=0.001", "--trials", "2"),
         late=("--variant", "poisson", "--param", "workload=mode1", "--param", "scale=0.001")),
    # the child cgroup with its charger (the session's), and the BPF iterator pinned in a
    # private bpffs (content=bpf-iter; a text content leaves nothing more).
    Grid("cgroup-stat-read", ("--variant", "reopen", "--param", "content=bpf-iter",
                              "--param", "fields=3", "--trials", "2"),
         late=("--variant", "reopen", "--param", "content=bpf-iter", "--param", "fields=3")),
)
# Every discovered room: its tuned grid above, or its cheapest case of the quick profile.
check_tuned("test_fault_injection", (g.name for g in TUNED))
GRIDS = tuple(next((g for g in TUNED if g.name == name), None)
              or Grid(name, (*cheapest_args(bench), "--trials", "2"))
              for name, bench in ROOMS.items())


# ---- what is on the machine -------------------------------------------------------------


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _marked(token: str) -> dict[int, str]:
    """Live processes started by our runs (they inherit the marker): pid -> command."""
    found = {}
    for proc in psutil.process_iter():
        try:
            if proc.environ().get(MARKER) != token:
                continue
            cmd = " ".join(proc.cmdline())
        except psutil.Error:
            continue
        if procs.alive(proc.pid):
            found[proc.pid] = cmd.strip()[:160]
    return found


def _bpf_ids() -> set[str]:
    ids = set()
    for kind in ("prog", "map", "link"):
        res = subprocess.run(["bpftool", "-j", kind, "show"], capture_output=True, text=True,
                             check=False)
        with contextlib.suppress(ValueError):
            ids |= {f"bpf {kind} {o['id']}" for o in json.loads(res.stdout or "[]")}
    return ids


def _bpf_holders() -> dict[str, set[int]]:
    """'bpf prog 12' -> the processes holding an fd to it (from /proc/*/fdinfo)."""
    holders: dict[str, set[int]] = {}
    keys = {"prog_id": "prog", "map_id": "map", "link_id": "link"}
    for fdinfo in Path("/proc").glob("[0-9]*/fdinfo/*"):
        text = _read(fdinfo)
        for line in text.splitlines():
            key, _, value = line.partition(":")
            if key in keys and value.strip().isdigit():
                holders.setdefault(f"bpf {keys[key]} {value.strip()}", set()).add(
                    int(fdinfo.parent.parent.name))
    return holders


def _lttng_sessions(prefix: list[str]) -> set[str]:
    if shutil.which("lttng") is None:
        return set()
    res = subprocess.run([*prefix, "lttng", "-n", "--mi", "xml", "list"], capture_output=True,
                         text=True, check=False, stdin=subprocess.DEVNULL)
    if res.returncode != 0:
        return set()
    return {f"lttng session {name}" for name in lttng.session_names(res.stdout)}


def _cgroups() -> set[str]:
    found = set()
    for line in _read(Path("/proc/self/mounts")).splitlines():
        fields = line.split()
        if len(fields) > 2 and fields[2] in ("cgroup", "cgroup2"):
            found |= {f"cgroup {p}" for p in Path(fields[1]).glob("bakeoff-*")}
    return found


def _uprobes() -> set[str]:
    for tracefs in ("/sys/kernel/tracing", "/sys/kernel/debug/tracing"):
        text = _read(Path(tracefs) / "uprobe_events")
        if text:
            return {f"uprobe {line}" for line in text.splitlines() if line.strip()}
    return set()


def _bpffs_mounts(mounts: Path) -> set[str]:
    return {f"bpffs {line.split()[1]}" for line in _read(mounts).splitlines()
            if len(line.split()) > 2 and line.split()[2] == "bpf" and "bakeoff-" in line}


def _temp_entries(tmpdir: Path) -> set[str]:
    found = {f"temp {p}" for p in Path("/tmp").glob("bakeoff-*")}
    found |= {f"temp {p}" for p in tmpdir.iterdir()}
    return found


@dataclass
class Ours:
    """What tells our runs' things from others': the marker, our runs' PIDs, our TMPDIR;
    and how to run a command where our runs run (nsenter into a private mount namespace)."""

    token: str
    tmpdir: Path
    pids: set[int] = field(default_factory=set)
    prefix: list[str] = field(default_factory=list)

    @property
    def mounts(self) -> Path:
        """The mount table our runs see (nsenter --target=PID: that process's)."""
        target = [a.split("=", 1)[1] for a in self.prefix if a.startswith("--target=")]
        return Path(f"/proc/{target[0]}/mounts" if target else "/proc/self/mounts")

    def snapshot(self) -> set[str]:
        """Everything a run may leave, as one string each."""
        return (_cgroups() | _lttng_sessions(self.prefix) | _uprobes() | _bpf_ids()
                | _bpffs_mounts(self.mounts) | _temp_entries(self.tmpdir)
                | {f"process {pid} {cmd}" for pid, cmd in _marked(self.token).items()})

    def leaks(self, baseline: set[str], at_kill: set[str] | None = None) -> list[str]:
        """What is new since baseline and not someone else's (a live process's of theirs).
        New things are looked at again over a few seconds: someone else's come and go. With
        `at_kill` (everything there just after our run was SIGKILLed): a thing named by a PID
        that is none of our runs', and made only after the kill, is someone else's; our
        run's processes were dead by then (a process of ours still alive is itself named)."""
        new = self.snapshot() - baseline
        if not new:
            return []
        holders = _bpf_holders() if any(x.startswith("bpf ") for x in new) else {}
        mine = set(_marked(self.token))
        left = []
        for item in sorted(new):
            if item.startswith("process "):
                left.append(item)
            elif item.startswith("bpf "):
                held = holders.get(item, set())
                if not held or held & mine:  # pinned or attached with no holder, or ours
                    left.append(item)
            elif str(self.tmpdir) in item:
                left.append(item)
            elif item.startswith("temp "):  # our runs have our TMPDIR: in /tmp, a run of ours
                # put it there by mistake, or someone else's run did (a fleet test's killed
                # run leaves its scratch to the resume that follows)
                if any(int(p) in self.pids for p in OWNED.findall(item)):
                    left.append(item)
            else:  # ours carry the PID of a run of ours or of one of its trials (gone now)
                owners = [int(p) for p in OWNED.findall(item)]
                if any(p in self.pids for p in owners):
                    left.append(item)
                elif at_kill is not None and item not in at_kill:
                    continue  # made after our run was killed, by a process none of ours
                elif any(not procs.alive(p) for p in owners):
                    left.append(item)
        deadline = time.monotonic() + 3.0
        while left and time.monotonic() < deadline:  # a foreign trial's clean-up may be going
            time.sleep(0.5)
            again = self.snapshot()
            left = [x for x in left if x in again]
        return left


# ---- one injection ---------------------------------------------------------------------------


def _saved(run_dir: Path) -> dict[tuple[str, int], str] | None:
    """The trials on disk (results.json and its journal), each as JSON; None before the run
    wrote results.json."""
    if not (run_dir / store.RESULTS_JSON).exists():
        return None
    run = store.load(run_dir)
    trials = store.run_to_json(run)["trials"]
    return {(json.dumps(t["case"], sort_keys=True), int(t["index"])): json.dumps(t, sort_keys=True)
            for t in trials}


def _planned(run_dir: Path) -> int:
    run = store.load(run_dir)
    return sum(int(run.benchmarks[c.benchmark].profile["trials"]) for c in run.cases)


def _bakeoff(args: list[str], ours: Ours, timeout: float = RUN_TIMEOUT_S
             ) -> subprocess.CompletedProcess[str]:
    proc = subprocess.Popen([*ours.prefix, sys.executable, "-m", "bakeoff", *args], cwd=REPO,
                            env=_env(ours), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    ours.pids.add(proc.pid)
    out, err = proc.communicate(timeout=timeout)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _env(ours: Ours) -> dict[str, str]:
    return {**os.environ, MARKER: ours.token, "TMPDIR": str(ours.tmpdir), "COLUMNS": "200"}


PHASES = ("before results.json", "before the first trial", "between or during trials",
          "after the last trial", "after exit")


@dataclass
class Tally:
    phases: dict[str, Counter[str]] = field(default_factory=dict)
    swept: dict[str, Counter[str]] = field(default_factory=dict)  # by whom -> kind -> n
    notes: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)  # kind -> the first such line
    seconds: float = 0.0
    startup_s: float | None = None  # when results.json appeared, in the first cycle that saw it

    def count_swept(self, lines: list[str], by: str) -> None:
        for line in lines:
            if line != "nothing to clean up":
                self.swept.setdefault(by, Counter())[_kind(line)] += 1
                self.examples.setdefault(_kind(line), line)

    def landed(self, signum: int) -> int:
        return sum(n for p, n in self.phases.get(signal.Signals(signum).name, Counter()).items()
                   if p != "after exit")


def _before_bakeoff_ran(err: str) -> bool:
    """A KeyboardInterrupt traceback whose every frame is the interpreter's own (frozen
    runpy and importlib): no file of bakeoff had started."""
    frames = re.findall(r'^\s*File "([^"]+)"', err, re.M)
    return (err.rstrip().endswith("KeyboardInterrupt") and bool(frames)
            and all(f.startswith("<frozen ") for f in frames))


def _decided_exit_before(phase_log: Path, sent_ns: int) -> bool:
    """Whether bakeoff logged its "exit" (its decision to exit 0, taken with SIGINT and SIGTERM
    blocked and none pending) before sent_ns, on the same CLOCK_MONOTONIC. A signal sent
    earlier must have been seen there, so exit 0 after one is a signal lost."""
    for line in _read(phase_log).splitlines():
        phase, _pid, at_ns = line.split()
        if phase == "exit":
            return int(at_ns) < sent_ns
    return False


def _check_clean(ours: Ours, baseline: set[str], where: str,
                 at_kill: set[str] | None = None) -> None:
    left = ours.leaks(baseline, at_kill)
    assert not left, f"{where}: left behind:\n  " + "\n  ".join(left)


# ---- where a signal lands: the run's own progress ---------------------------------------------

# The kinds of moment every signal meets (PHASES without "after exit"), in the order a run
# passes them. Each is found from what the run does, on any machine and at any load.
MOMENTS = PHASES[:4]
# The phases after the last trial (bakeoff/run/interrupts.py), one drawn per cycle aimed there.
LATE_PHASES = ("teardown", "saved", "analysis", "analysis:", "report:report.html",
               "report:report.md", "report:details.md", "report:csv")
# Before a first look at this room's start-up (how long until its results.json appeared):
# bakeoff's own start-up takes longer than this at any load.
FIRST_STARTUP_GUESS_S = 0.3
MOMENT_WAIT_S = 120  # for the moment to come: a whole run of the grid, at load 4


@dataclass(frozen=True)
class Aim:
    """Where one cycle's signal goes: a kind of moment, and seeded choices within it."""

    moment: str  # one of MOMENTS
    fraction: float  # how far into the moment's window (start-up, a trial)
    late_phase: str  # for "after the last trial": the announced phase to signal at

    def __str__(self) -> str:
        late = f" at {self.late_phase!r}" if self.moment == MOMENTS[3] else ""
        return f"aimed {self.moment}{late} (fraction {self.fraction:.2f})"


def _phases(phase_log: Path) -> list[tuple[str, float]]:
    """The phases the run announced, with their CLOCK_MONOTONIC time in seconds."""
    out = []
    for line in _read(phase_log).splitlines():
        fields = line.split()
        if len(fields) == 3:
            out.append((fields[0], int(fields[2]) / 1e9))
    return out


def _journal_lines(out: Path) -> int:
    return _read(out / store.TRIALS_JOURNAL).count("\n")


def _await(aim: Aim, proc: subprocess.Popen[str], out: Path, phase_log: Path,
           tally: Tally) -> str:
    """Block until the moment aimed at (or the run's end); what was waited for, for the
    failure message. Notes when this room's results.json appeared (its start-up)."""
    start = time.monotonic()
    deadline = start + MOMENT_WAIT_S

    def until(done: Callable[[], bool]) -> None:
        while proc.poll() is None and not done():
            assert time.monotonic() < deadline, f"{aim}: the moment never came"
            if tally.startup_s is None and (out / store.RESULTS_JSON).exists():
                tally.startup_s = time.monotonic() - start
            time.sleep(0.005)

    def first(prefix: str) -> float | None:
        return next((t for p, t in _phases(phase_log) if p.startswith(prefix)), None)

    if aim.moment == MOMENTS[0]:  # a fraction of the start-up an earlier cycle saw
        wait_s = aim.fraction * (tally.startup_s or FIRST_STARTUP_GUESS_S)
        until(lambda: time.monotonic() - start >= wait_s)
        return f"{wait_s:.2f} s after start ({aim})"
    if aim.moment == MOMENTS[1]:  # the first trial's checkpoint: the session is up
        until(lambda: first("trial") is not None)
        return f"at the first trial's checkpoint ({aim})"
    if aim.moment == MOMENTS[2]:  # a fraction of a trial's time after the first is saved
        until(lambda: _journal_lines(out) >= 1)
        began = first("trial")
        trial_s = time.monotonic() - began if began is not None else 0.0
        saved_at = time.monotonic()
        until(lambda: time.monotonic() - saved_at >= aim.fraction * trial_s)
        return f"{aim.fraction * trial_s:.2f} s after the first trial was saved ({aim})"
    until(lambda: first(aim.late_phase) is not None)
    return f"at {aim.late_phase!r} ({aim})"


def _moments(signum: int) -> tuple[str, ...]:
    """The kinds of moment this test sends signum at. SIGINT and SIGTERM after the last
    trial: test_signals_after_the_last_trial sends each at every late phase, on purpose."""
    return MOMENTS if signum == signal.SIGKILL else MOMENTS[:3]


# Every signal meets every kind of moment over the session, not in every room: a room's
# things to leave are made by its session and trials whatever the signal, so each room gets
# every kind of moment and every signal, and the pairs of the two are dealt among the rooms
# the session selected (all of them with one room selected, or BAKEOFF_FI_FULL=1).
FULL = os.environ.get("BAKEOFF_FI_FULL") == "1"


def selected_rooms(session: pytest.Session, test: str) -> list[str]:
    """The rooms whose `test` this session runs, in GRIDS order: the same on every xdist
    worker (each collects and deselects alike), so the deal below is too."""
    chosen = {item.callspec.params["grid"].name for item in session.items
              if getattr(item, "originalname", "") == test and hasattr(item, "callspec")}
    return [g.name for g in GRIDS if g.name in chosen]


def dealt(room: str, rooms: list[str], hands: int) -> list[int]:
    """Which of `hands` hands (0..hands-1) the room takes, dealt in turn among rooms, every
    hand to one room at least and every room one hand at least (more rooms than hands: the
    deal goes round again); every hand when it is the only room, or under BAKEOFF_FI_FULL.
    The seed turns the deal, so another seed gives a room other hands."""
    if FULL or room not in rooms:
        return list(range(hands))
    turn = (rooms.index(room) + SEED) % len(rooms)
    return sorted({h % hands for h in range(max(hands, len(rooms))) if h % len(rooms) == turn})


def early_pairs(room: str, rooms: list[str]) -> list[tuple[int, str]]:
    """(signal, moment) before the last trial: diagonal d gives moment j the signal
    SIGNALS[(d + j) % 3], so one diagonal meets every early moment and every signal once,
    and three rooms' diagonals make every pair. A SIGKILL with the room's session up (what
    only the sweeps can remove is the room's own) in every room: added where its diagonal
    kills in start-up. After the last trial SIGKILL always (the late SIGINT and SIGTERM are
    the other test's)."""
    pairs = [(SIGNALS[(d + j) % len(SIGNALS)], moment)
             for d in dealt(room, rooms, len(SIGNALS)) for j, moment in enumerate(MOMENTS[:3])]
    if not any(n == signal.SIGKILL and m in MOMENTS[1:3] for n, m in pairs):
        pairs.append((signal.SIGKILL, MOMENTS[2]))
    return [*pairs, (signal.SIGKILL, MOMENTS[3])]


def _aims(rng: random.Random, pairs: list[tuple[int, str]]) -> list[tuple[int, Aim]]:
    """Each (signal, moment) pair PER_SIGNAL times, in a seeded order; never a start-up
    one first (its window is the start-up an earlier cycle saw)."""
    plan = [(signum, Aim(moment, rng.random(), rng.choice(LATE_PHASES)))
            for _ in range(PER_SIGNAL) for signum, moment in pairs]
    rng.shuffle(plan)
    first = next(i for i, (_, aim) in enumerate(plan) if aim.moment != MOMENTS[0])
    return plan[first:] + plan[:first]


def inject(grid: Grid, signum: int, aim: Aim, cycle: int, out: Path, ours: Ours,
           baseline: set[str], tally: Tally, doctor: bool) -> str:
    """One cycle: start the run, signal it at the moment aimed at, check, resume; returns
    the kind of moment the signal landed in (one of PHASES). After SIGKILL, what was left
    is removed by `bakeoff doctor --cleanup` (doctor=True, or when there is nothing to
    resume) or by the sweep at the start of the resumed run itself."""
    sig = signal.Signals(signum).name
    phase_log = out.with_name(f"{out.name}.phases")
    # nsenter (--mount only) execs bakeoff in place: the signal goes to the harness itself.
    proc = subprocess.Popen(
        [*ours.prefix, sys.executable, "-m", "bakeoff", "run", grid.name, "--profile", "quick",
         *grid.args, "--out", str(out), "--seed", str(cycle), "--quiet"],
        cwd=REPO, env={**_env(ours), "BAKEOFF_PHASE_LOG": str(phase_log)},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    ours.pids.add(proc.pid)
    at = _await(aim, proc, out, phase_log, tally)
    where = f"BAKEOFF_FI_SEED={SEED} {grid.name} cycle {cycle}: {sig} {at}"
    # What is on disk now is what the signal must not lose.
    before = _saved(out)
    exited = proc.poll() is not None
    sent_ns = time.monotonic_ns()
    if not exited:
        os.kill(proc.pid, signum)
    _, err = proc.communicate(timeout=RUN_TIMEOUT_S)
    if not exited and proc.returncode == 0 and _decided_exit_before(phase_log, sent_ns):
        # Between our last poll and the kill, bakeoff had decided to exit 0 and got past its
        # last look for a signal (the kill found it exiting, or a zombie): the run was over.
        exited = True
    if exited:
        phase = "after exit"
    elif before is None:
        phase = "before results.json"
    elif not before:
        phase = "before the first trial"
    elif len(before) < _planned(out):
        phase = "between or during trials"
    else:
        phase = "after the last trial"
    tally.phases.setdefault(sig, Counter())[phase] += 1
    where += f" ({phase})"

    after = _saved(out)
    complete = after is not None and store.load(out).status == "complete"
    resumable = after is not None and not complete
    if exited:
        assert proc.returncode == 0, f"{where}: the run failed by itself: {err[-2000:]}"
    elif signum == signal.SIGKILL:
        assert proc.returncode == -signal.SIGKILL, f"{where}: exit {proc.returncode}: {err}"
    elif before is None and proc.returncode == 1 and "Fatal Python error" in err:
        # SIGINT while the interpreter itself initialises: Python's own fatal error, before
        # any of bakeoff ran (nothing made, which the checks below confirm).
        tally.notes["ended in Python's initialisation"] += 1
    elif before is None and proc.returncode == 1 and _before_bakeoff_ran(err):
        # SIGINT while `python -m` looks for the module (runpy, importlib): Python's own
        # KeyboardInterrupt, before a line of bakeoff ran (seen at 0.04 s, at load 4).
        tally.notes["ended in Python's start-up, before bakeoff's code"] += 1
    else:
        # 128 + signal from bakeoff's handlers; or killed by the signal itself, which a shell
        # reports as the same status: a signal before Python (SIGINT) or bakeoff (SIGTERM)
        # has a handler for it, or after the interpreter reset the handlers on exit.
        assert proc.returncode in (128 + signum, -signum), (
            f"{where}: exit {proc.returncode}: {err[-2000:]}")
        if proc.returncode == -signum:
            tally.notes[f"killed by the {sig} itself (status {128 + signum} in a shell)"] += 1
        # Not even in start-up (bakeoff/__main__.py) or while scipy loads (bakeoff/core/lazy.py).
        assert "Traceback" not in err, f"{where}: {err[-3000:]}"

    left: list[str] = []
    scratch: list[str] = []
    at_kill: set[str] | None = None
    if signum == signal.SIGKILL:
        at_kill = ours.snapshot()
        left = sorted(at_kill - baseline)
        if left:
            tally.notes["SIGKILL left something"] += 1
        # The harness's scratch directory stays (nobody else sweeps our TMPDIR): the sweep
        # that removes it must say so.
        scratch = [x.removeprefix("temp ") for x in left
                   if x.startswith(f"temp {ours.tmpdir}/bakeoff-{proc.pid}-")]
        if doctor or not resumable:
            res = _bakeoff(["doctor", "--cleanup"], ours)
            assert res.returncode == 0, f"{where}: doctor --cleanup: {res.stdout}{res.stderr}"
            removed = [ln for ln in res.stdout.splitlines() if ln.strip()]
            tally.count_swept(removed, "doctor --cleanup")
            assert all(any(d in ln for ln in removed) for d in scratch), (
                f"{where}: doctor --cleanup did not name {scratch}: {removed}")
            _check_clean(ours, baseline, f"{where}, after doctor --cleanup (it said: "
                         f"{removed}; left at the kill: {left})", at_kill)
    else:
        _check_clean(ours, baseline, where)
    stale = sorted(p.name for p in out.glob(".*.tmp"))
    if stale:  # a write_atomic temp file of the killed run (not results.json itself)
        tally.notes["temp file left in the results directory"] += 1

    # The results directory: loads, keeps every trial saved before the signal, unchanged.
    if after is None:
        assert before is None, f"{where}: results.json disappeared"
        assert not list(out.glob("results.json*")), f"{where}: {list(out.iterdir())}"
        return phase
    saved = before or {}
    lost = [k for k in saved if after.get(k) != saved[k]]
    assert not lost, f"{where}: trials saved before the signal lost or changed: {lost}"
    if not resumable:  # the signal came as the run was writing its reports
        res = _bakeoff(["report", str(out), "--quiet"], ours)
        assert res.returncode == 0, f"{where}: bakeoff report: {res.stderr}"
        return phase

    # Not --quiet: the run's sweep says what it removed, one note each, on stderr.
    res = _bakeoff(["run", "--resume", str(out)], ours)
    assert res.returncode == 0, f"{where}: --resume exit {res.returncode}: {res.stderr[-3000:]}"
    notes = [ln.removeprefix("note: ") for ln in res.stderr.splitlines()
             if ln.startswith("note: ")]
    if signum == signal.SIGKILL and not doctor:
        tally.count_swept(notes, "the next run")
        assert all(any(d in ln for ln in notes) for d in scratch), (
            f"{where}: the resumed run did not note removing {scratch}: {res.stderr}")
    _check_clean(ours, baseline, f"{where}, after --resume (left at the kill: {left})")
    run = store.load(out)
    assert run.status == "complete", f"{where}: after --resume: {run.status}"
    final = _saved(out)
    assert final is not None
    changed = [k for k in after if final.get(k) != after[k]]
    assert not changed, f"{where}: --resume changed or dropped trials it had: {changed}"
    for case in run.cases:
        n = int(run.benchmarks[case.benchmark].profile["trials"])
        indices = sorted(t.index for t in run.trials if t.case == case)
        assert indices == list(range(n)), f"{where}: {case.key}: trial indices {indices}"
    return phase


def _kind(line: str) -> str:
    """A line of doctor --cleanup -> what it removed ('cgroup', 'temp dir', ...), for the
    summary. Lines are '[benchmark: ]what was done'."""
    text = line.split(": ", 1)[1] if re.match(r"^[a-z][\w-]*: ", line) else line
    for start, kind in (("stopped process", "process"), ("stopped lttng-sessiond", "sessiond"),
                        ("removed cgroup", "cgroup"), ("unmounted", "bpffs"),
                        ("destroyed LTTng", "LTTng session"), ("removed uprobe", "uprobe"),
                        ("stopped", "tracer"), ("removed /", "temp dir"),
                        ("could not", "failure")):
        if text.startswith(start):
            return kind
    return text[:40]


# ---- the tests ---------------------------------------------------------------------------------


def _missing(grid: Grid) -> str | None:
    if os.geteuid() != 0:
        return "needs root (cgroups, BPF, uprobes, a tracing daemon)"
    for tool in ("bpftool", *grid.needs):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    return None


@contextlib.contextmanager
def _private_run_dirs() -> Iterator[list[str]]:
    """A mount namespace with empty /run/lttng and /run/lock, held by a sleeping process;
    yields the command prefix that runs a command in it."""
    holder = subprocess.Popen(
        ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
         "mkdir -p /run/lttng /run/lock && mount -t tmpfs tmpfs /run/lttng && "
         "mount -t tmpfs tmpfs /run/lock && echo ready && exec sleep 3600"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        yield ["nsenter", f"--target={holder.pid}", "--mount", "--"]
    finally:
        holder.kill()
        holder.wait()


@pytest.fixture
def ours(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Ours]:
    grid: Grid = request.node.callspec.params["grid"]
    if (missing := _missing(grid)) is not None:
        if IN_CI:  # this machine kind has all of it: a skip would hide a broken set-up
            pytest.fail(f"{grid.name}: {missing}")
        pytest.skip(missing)
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    with contextlib.ExitStack() as stack:
        prefix = stack.enter_context(_private_run_dirs()) if grid.private_run else []
        o = Ours(token=uuid.uuid4().hex, tmpdir=tmpdir, prefix=prefix)
        yield o
        # Whatever a failed cycle left: stopped and swept, so the next test starts clean.
        _bakeoff(["doctor", "--cleanup"], o)
        _kill_marked(o.token)


@pytest.mark.parametrize("grid", GRIDS, ids=[g.name for g in GRIDS])
def test_signals_at_every_moment(grid: Grid, built: Path, ours: Ours, tmp_path: Path,
                                 request: pytest.FixtureRequest,
                                 record_property: Callable[[str, object], None]) -> None:
    rng = random.Random(f"{SEED}:{grid.name}")
    baseline = ours.snapshot()
    tally = Tally()
    start = time.monotonic()
    pairs = early_pairs(grid.name, selected_rooms(request.session, "test_signals_at_every_moment"))
    plan = _aims(rng, pairs)
    planned = len(plan)
    cycle = 0
    while plan:
        signum, aim = plan.pop(0)
        cycle += 1
        assert cycle <= 2 * planned, (
            f"BAKEOFF_FI_SEED={SEED} {grid.name}: too many signals landed elsewhere than aimed")
        landed = inject(grid, signum, aim, cycle, tmp_path / f"run-{cycle}", ours, baseline,
                        tally, doctor=rng.random() < 0.5)
        if landed != aim.moment:  # the run was quicker than the aim: again, earlier in it
            plan.append((signum, Aim(aim.moment, aim.fraction / 2, aim.late_phase)))
    tally.seconds = time.monotonic() - start
    for signum, moment in pairs:  # every pair dealt to this room was met
        phases = tally.phases.get(signal.Signals(signum).name, Counter())
        assert phases[moment] >= PER_SIGNAL, (signal.Signals(signum).name, moment, phases)
    startup = f"{tally.startup_s:.1f} s" if tally.startup_s is not None else "not seen"
    lines = [f"{grid.name}: {cycle} runs in {tally.seconds:.0f} s (seed {SEED}); "
             f"results.json at {startup} in the first run that wrote it; dealt: "
             + ", ".join(f"{signal.Signals(n).name} {m}" for n, m in pairs)]
    lines += [f"  {sig:8} " + ", ".join(f"{p}: {phases[p]}" for p in PHASES if phases[p])
              for sig, phases in tally.phases.items()]
    lines += [f"  removed after SIGKILL by {by}: "
              + ", ".join(f"{k} x{n}" for k, n in kinds.most_common())
              for by, kinds in tally.swept.items()]
    lines += [f"  e.g. {kind}: {line}" for kind, line in tally.examples.items()]
    lines += [f"  {note}: {n}" for note, n in tally.notes.items()]
    record_property("summary", "\n".join(lines))  # printed at the end (conftest.py)


# ---- signals after the last trial, on purpose ------------------------------------------------

# Where a late signal is sent: as the harness announces each phase after the last trial
# (LATE_PHASES, which bakeoff/run/interrupts.py writes to BAKEOFF_PHASE_LOG). Per round,
# SIGINT and SIGTERM each at the tear-down and at the later phases dealt to the room
# (late_pairs): over the session, each signal at every phase.
LATE_ROUNDS = int(os.environ.get("BAKEOFF_FI_LATE_ROUNDS", "1"))
PHASE_WAIT_S = 120  # for the phase to come: a whole run of the grid, at load 4


def _late_args(grid: Grid) -> list[str]:
    """The grid's late cases at one trial each: the late phases are the same, the run is
    shorter. (A repeated option counts its last value.)"""
    return [*(grid.late if grid.late is not None else grid.args), "--trials", "1"]


def _read_phases(fd: int, until: float, stop_at: str | None) -> list[str]:
    """Phase lines from the FIFO until one starts with stop_at (or the deadline)."""
    lines: list[str] = []
    buf = b""
    while time.monotonic() < until:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if not ready:
            if stop_at is None:
                break
            continue
        buf += os.read(fd, 65536)
        *done, buf = buf.split(b"\n")
        lines += [ln.decode().split()[0] for ln in done if ln.strip()]
        if stop_at is not None and any(ln.startswith(stop_at) for ln in lines):
            break
    return lines


def late_signal(grid: Grid, signum: int, phase: str, cycle: int, out: Path, ours: Ours,
                baseline: set[str], fifo: Path, fd: int, tally: Counter[str],
                report_after: bool) -> bool:
    """One run, signalled as it enters phase; False if it had ended before the signal."""
    sig = signal.Signals(signum).name
    where = f"{grid.name} late cycle {cycle}: {sig} at {phase!r}"
    proc = subprocess.Popen(
        [*ours.prefix, sys.executable, "-m", "bakeoff", "run", grid.name, "--profile", "quick",
         *_late_args(grid), "--out", str(out), "--seed", str(cycle), "--quiet"],
        cwd=REPO, env={**_env(ours), "BAKEOFF_PHASE_LOG": str(fifo)},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    ours.pids.add(proc.pid)
    seen = _read_phases(fd, time.monotonic() + PHASE_WAIT_S, phase)
    assert any(p.startswith(phase) for p in seen), f"{where}: phase never came: {seen}"
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signum)
    _, err = proc.communicate(timeout=RUN_TIMEOUT_S)
    seen += _read_phases(fd, time.monotonic() + 1, None)
    if "exit" in seen and proc.returncode == 0:
        return False  # it had decided to exit 0 before the signal came: does not count
    # Where it stopped: the last phase it entered before it said it was stopped.
    stopped = [p for p in seen if not p.startswith(("stopped-by", "exit"))][-1]
    tally[f"{sig} sent at {phase}, stopped at {stopped}"] += 1
    assert proc.returncode in (128 + signum, -signum), f"{where}: exit {proc.returncode}: {err}"
    assert "Traceback" not in err, f"{where}: {err[-3000:]}"
    if proc.returncode == 128 + signum:
        assert "the run is complete" in err, f"{where}: {err[-2000:]}"
    _check_clean(ours, baseline, where)
    run = store.load(out)
    assert run.status == "complete", f"{where}: {run.status}"
    for case in run.cases:
        indices = sorted(t.index for t in run.trials if t.case == case)
        assert indices == [0], f"{where}: {case.key}: trial indices {indices}"
    # Each report is whole or absent; no temp file of one is left.
    html = out / "report.html"
    assert not html.exists() or html.read_text().rstrip().endswith("</html>"), where
    assert not list(out.glob(".*.tmp")), f"{where}: {sorted(out.iterdir())}"
    if report_after:  # what the message promises
        res = _bakeoff(["report", str(out), "--quiet"], ours)
        assert res.returncode == 0, f"{where}: bakeoff report: {res.stderr}"
        assert html.read_text().rstrip().endswith("</html>"), where
    return True


def late_pairs(room: str, rooms: list[str]) -> list[tuple[str, int]]:
    """(late phase, signal): both signals at the session's tear-down, which is the room's
    own; the later phases (the harness's save, analysis and reports, the same for every
    room) dealt among the rooms, each pair to one, so the session sends both signals at
    every late phase."""
    both = (signal.SIGINT, signal.SIGTERM)
    harness = [(phase, signum) for phase in LATE_PHASES[1:] for signum in both]
    return [*((LATE_PHASES[0], signum) for signum in both),
            *(harness[h] for h in dealt(room, rooms, len(harness)))]


@pytest.mark.parametrize("grid", GRIDS, ids=[g.name for g in GRIDS])
def test_signals_after_the_last_trial(grid: Grid, built: Path, ours: Ours, tmp_path: Path,
                                      request: pytest.FixtureRequest,
                                      record_property: Callable[[str, object], None]) -> None:
    """SIGINT and SIGTERM sent as the run enters each phase after its last trial (tear-down,
    final save, analysis, each report): the run is complete and saved, the exit status is
    128 + signal with 'the run is complete', nothing is left, no report is half-written,
    and `bakeoff report` writes them (docs/RELIABILITY.md)."""
    baseline = ours.snapshot()
    tally: Counter[str] = Counter()
    fifo = tmp_path / "phases"
    os.mkfifo(fifo)
    fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # RDWR: no EOF between the runs' writes
    start = time.monotonic()
    pairs = late_pairs(grid.name,
                       selected_rooms(request.session, "test_signals_after_the_last_trial"))
    plan = [pair for _ in range(LATE_ROUNDS) for pair in pairs]
    planned = len(plan)
    landed = cycle = 0
    try:
        while plan:
            phase, signum = plan.pop(0)
            cycle += 1
            assert cycle <= 2 * planned, (
                f"{grid.name}: too many runs ended before their late signal")
            if late_signal(grid, signum, phase, cycle, tmp_path / f"late-{cycle}", ours,
                           baseline, fifo, fd, tally, report_after=landed == 0):
                landed += 1
            else:
                plan.append((phase, signum))
    finally:
        os.close(fd)
    assert landed == planned
    lines = [f"{grid.name}: {landed} late signals in {cycle} runs, "
             f"{time.monotonic() - start:.0f} s"]
    lines += [f"  {what}: {n}" for what, n in sorted(tally.items())]
    record_property("summary", "\n".join(lines))


# ---- the sweep itself: only what dead runs left --------------------------------------------


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def _memory_cgroup_root() -> Path | None:
    for line in _read(Path("/proc/self/mounts")).splitlines():
        fields = line.split()
        if fields[2] == "cgroup" and "memory" in fields[3].split(","):
            return Path(fields[1])
    for line in _read(Path("/proc/self/mounts")).splitlines():
        fields = line.split()
        if fields[2] == "cgroup2" and "memory" in _read(Path(fields[1], "cgroup.controllers")):
            return Path(fields[1])
    return None


# Alone: its dead run's cgroup and uprobe are machine-wide, and any other test's `bakeoff run`
# would sweep them at its start, before this test's doctor --cleanup can say it did.
@pytest.mark.machine_wide
@pytest.mark.slow(live=False)
def test_sweep_removes_what_dead_runs_left_and_nothing_of_live_ones(tmp_path: Path) -> None:
    """Fake leftovers of every kind the sweeps know, half of a dead run (a PID that is gone),
    half of a live one (a process that runs): doctor --cleanup removes the first half, says
    so line by line, and leaves the second; the next time there is nothing of ours to say."""
    missing = [t for t in ("lttng", "lttng-sessiond", "unshare", "nsenter", "mount")
               if shutil.which(t) is None]
    cgroot = _memory_cgroup_root()
    if os.geteuid() != 0 or missing or cgroot is None:
        why = f"needs root, a memory cgroup and {', '.join(missing) or 'lttng'}"
        if IN_CI:
            pytest.fail(why)
        pytest.skip(why)
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    token = uuid.uuid4().hex
    dead = _dead_pid()
    live = subprocess.Popen(["sleep", "600"])  # stands for a run that is going on
    events = Path("/sys/kernel/tracing/uprobe_events")
    made: dict[str, list[str]] = {"dead": [], "live": []}
    started: list[subprocess.Popen[bytes]] = [live]
    with contextlib.ExitStack() as stack:
        prefix = stack.enter_context(_private_run_dirs())
        ours = Ours(token=token, tmpdir=tmpdir, prefix=prefix)
        stack.callback(_kill_marked, token)  # the daemon, if a check failed before it went
        stack.callback(_kill_all, started)
        for who, pid in (("dead", dead), ("live", live.pid)):
            scratch = tmpdir / f"bakeoff-{pid}-scratch"
            (scratch / "lib").mkdir(parents=True)
            (scratch / "lib" / "libtraced.so").write_bytes(os.urandom(8192))
            heap = tmpdir / f"bakeoff-{pid}-heap-abc123"
            heap.mkdir()
            (heap / "summary.json").write_text("{}")
            cgroup = cgroot / f"bakeoff-{pid}-target"
            cgroup.mkdir()
            stack.callback(_rmdir, cgroup)
            bpffs = Path(f"/tmp/bakeoff-{pid}-bpffs-{token[:6]}")
            bpffs.mkdir()
            subprocess.run([*prefix, "mount", "-t", "bpf", "bpf", str(bpffs)], check=True)
            stack.callback(_unmount, prefix, bpffs)
            probe = f"bakeoff_fi_{token[:8]}/{who}"
            _append(events, f"p:{probe} {scratch}/lib/libtraced.so:0x10\n")
            stack.callback(_remove_probe, events, probe)
            child = subprocess.Popen(["sleep", "600"], env={**os.environ, MARKER: token,
                                                            "BAKEOFF_RUN_PID": str(pid)})
            started.append(child)
            made[who] += [scratch.name, heap.name, cgroup.name, bpffs.name, probe,
                          f"process {child.pid}"]
        # A session daemon bakeoff started (recorded in its lock file), with a session of each.
        env = {**os.environ, MARKER: token}
        subprocess.run([*prefix, "lttng-sessiond", "--daemonize", "--no-kernel"], env=env,
                       check=True, capture_output=True)
        sessiond = _wait_for_sessiond(token)
        subprocess.run([*prefix, "sh", "-c", f"echo {sessiond} > "
                        "/run/lock/bakeoff-lttng-sessiond-0.lock"], check=True)
        for who, pid in (("dead", dead), ("live", live.pid)):
            name = f"bakeoff-{pid}-{dead}"
            subprocess.run([*prefix, "lttng", "-n", "create", name, "--snapshot"], check=True,
                           capture_output=True)
            made[who].append(name)
        # The live run holds the daemon (a shared lock, as its session hook does).
        holder = subprocess.Popen(
            [*prefix, "flock", "--shared", "--no-fork", "/run/lock/bakeoff-lttng-sessiond-0.lock",
             "sleep", "600"])
        started.append(holder)
        time.sleep(0.3)

        res = _bakeoff(["doctor", "--cleanup"], ours)
        assert res.returncode == 0, res.stdout + res.stderr
        said = res.stdout
        for thing in made["dead"]:
            assert thing in said, f"{thing} is not in doctor --cleanup's output:\n{said}"
        for thing in made["live"]:
            assert thing not in said, f"a live run's {thing} was touched:\n{said}"
        left = ours.snapshot() | {f"uprobe {ln}" for ln in _read(events).splitlines()}
        for thing in made["dead"]:
            assert not any(thing in x for x in left), f"{thing} is still there"
        for thing in made["live"]:
            if not thing.startswith("process"):
                assert any(thing in x for x in left), f"the live run's {thing} is gone"
        assert procs.alive(sessiond), "the daemon in use was stopped"
        # The live run ends (without cleaning up): now the daemon is nobody's, and goes.
        holder.kill()
        holder.wait()
        res = _bakeoff(["doctor", "--cleanup"], ours)
        assert f"stopped lttng-sessiond {sessiond}" in res.stdout, res.stdout
        assert not procs.alive(sessiond)


def _kill_all(started: list[subprocess.Popen[bytes]]) -> None:
    for proc in started:
        proc.kill()
        proc.wait()


def _kill_marked(token: str) -> None:
    for pid in _marked(token):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _rmdir(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.rmdir()


def _unmount(prefix: list[str], path: Path) -> None:
    subprocess.run([*prefix, "umount", "-l", str(path)], capture_output=True, check=False)
    _rmdir(path)


def _wait_for_sessiond(token: str) -> int:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for pid, cmd in _marked(token).items():
            with contextlib.suppress(psutil.Error):  # the daemon, not its child
                if cmd.startswith("lttng-sessiond") and psutil.Process(pid).ppid() == 1:
                    return pid
        time.sleep(0.05)
    raise AssertionError("lttng-sessiond did not start")


def _append(path: Path, text: str) -> None:
    """O_APPEND without Python's seek to the end, which tracefs refuses."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _remove_probe(events: Path, name: str) -> None:
    if name in _read(events):
        with contextlib.suppress(OSError):
            _append(events, f"-:{name}\n")


# ---- the deal: every pair over the session -------------------------------------------------


@pytest.mark.parametrize("n_rooms", range(1, 8))
def test_the_deal_sends_every_signal_at_every_moment_over_the_session(n_rooms: int) -> None:
    """However many rooms a session selects: every (signal, moment) pair and every (late
    phase, signal) pair is dealt to a room; every room meets every early moment, every
    signal, a SIGKILL with its session up and both signals at its tear-down."""
    rooms = [f"room-{i}" for i in range(n_rooms)]
    early = {pair for r in rooms for pair in early_pairs(r, rooms)}
    assert early == {(n, m) for n in SIGNALS for m in MOMENTS[:3]} | {
        (signal.SIGKILL, MOMENTS[3])}
    late = {pair for r in rooms for pair in late_pairs(r, rooms)}
    assert late == {(p, n) for p in LATE_PHASES for n in (signal.SIGINT, signal.SIGTERM)}
    for r in rooms:
        mine = early_pairs(r, rooms)
        assert {m for _, m in mine} == set(MOMENTS) and {n for n, _ in mine} == set(SIGNALS)
        assert any(n == signal.SIGKILL and m in MOMENTS[1:3] for n, m in mine), mine
        assert {(LATE_PHASES[0], signal.SIGINT), (LATE_PHASES[0], signal.SIGTERM)} <= set(
            late_pairs(r, rooms))
    if n_rooms >= 3:  # the point of the deal: fewer runs per room than every pair
        assert all(len(early_pairs(r, rooms)) <= 5 for r in rooms)
