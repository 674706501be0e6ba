"""Real `bakeoff run`s in the background, and what each has on the machine while it runs.

A run is started with a marker in its environment (BAKEOFF_LIVE_RUN=<random tag>); every
process it starts inherits it, daemons that re-parent themselves to PID 1 included, so a
test finds the run's processes, and only them, even while other runs go on at the same
time. What the run creates is then attributed by the PIDs in its names (bakeoff-<pid>-...:
scratch and trial directories, cgroups, LTTng sessions) or, for BPF objects, by the file
descriptors its processes hold (/proc/PID/fdinfo: map_id, prog_id, link_id).

Used by test_part_failures.py and test_concurrent_runs.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import pytest

from bakeoff.core import pids as procs
from conftest import IN_CI, REPO

# The rooms' own modules, imported as their programs import them (tracing_trial.in).
sys.path.insert(0, str(REPO / "benchmarks"))
from tracing_overhead import lttng

MARKER = "BAKEOFF_LIVE_RUN"
MEMCG = Path("/sys/fs/cgroup/memory")
UPROBES = Path("/sys/kernel/tracing/uprobe_events")
TMP = Path(tempfile.gettempdir())
OWNED = re.compile(r"^bakeoff-(\d+)-")
# A private /run/lttng, /dev/shm and /run/lock for one run: its own root session daemon,
# which a test may kill without touching a daemon anyone else on the machine uses. unshare
# and sh exec in place, so the harness keeps the PID Popen returns.
PRIVATE_LTTNG = [
    "unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
    "mkdir -p /run/lttng && mount -t tmpfs -o mode=755 bakeoff-lttng /run/lttng && "
    "mount -t tmpfs -o mode=1777 bakeoff-shm /dev/shm && "
    "mount -t tmpfs -o mode=1777 bakeoff-lock /run/lock && exec \"$@\"", "sh",
]


def skip_unless_root_tools(*tools: str) -> None:
    """Skip the calling test module where this machine lacks root, a tool or the v1 memory
    controller; in CI this machine kind has all of them, so there it fails instead."""
    why = None
    if os.geteuid() != 0:
        why = "needs root (BPF, uprobes, the root LTTng daemon, cgroups, mount namespaces)"
    else:
        missing = [t for t in tools if shutil.which(t) is None]
        if missing:
            why = f"{missing[0]} is not installed"
        elif not MEMCG.is_dir():
            why = f"no cgroup v1 memory controller at {MEMCG}"
    if why and not IN_CI:  # in CI a skip would hide a failure
        pytest.skip(why, allow_module_level=True)


@contextlib.contextmanager
def shared_lttng_namespace() -> Iterator[list[str]]:
    """One private namespace as PRIVATE_LTTNG makes, for several runs to share: the prefix
    that runs a command in it. Its session daemon is the one those runs start and stop."""
    holder = subprocess.Popen([*PRIVATE_LTTNG, "sleep", "infinity"])
    try:
        deadline = time.monotonic() + 10
        while procs.live_name(holder.pid) != "sleep":
            assert holder.poll() is None and time.monotonic() < deadline, "no namespace"
            time.sleep(0.01)
        yield ["nsenter", f"--target={holder.pid}", "--mount", "--"]
    finally:
        holder.kill()
        holder.wait()


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    comm: str
    argv: tuple[str, ...]
    env: frozenset[str]


def _read_proc(proc: psutil.Process, needles: Sequence[str]) -> tuple[Proc, str] | None:
    """The process if it is alive (not a zombie) and its environment holds one of needles
    (NAME=VALUE)."""
    try:
        env = frozenset(f"{k}={v}" for k, v in proc.environ().items())
        hit = next((n for n in needles if n in env), None)
        if hit is None or not procs.alive(proc.pid):
            return None
        return Proc(proc.pid, proc.ppid(), proc.name(), tuple(proc.cmdline()), env), hit
    except psutil.Error:
        return None  # exited, or a kernel thread


def marked(tags: Iterable[str]) -> dict[str, list[Proc]]:
    """The live processes of each run, by its tag."""
    needles = {f"{MARKER}={t}": t for t in tags}
    found: dict[str, list[Proc]] = {t: [] for t in needles.values()}
    for proc in psutil.process_iter():
        if proc.pid != os.getpid():
            got = _read_proc(proc, list(needles))
            if got is not None:
                found[needles[got[1]]].append(got[0])
    return found


def bpf_ids(pids: Iterable[int]) -> dict[str, set[int]]:
    """The BPF maps, programs and links the processes hold, by kind ('map', 'prog', 'link')."""
    ids: dict[str, set[int]] = {"map": set(), "prog": set(), "link": set()}
    for pid in pids:
        fds = Path(f"/proc/{pid}/fd")
        try:
            entries = list(fds.iterdir())
        except OSError:
            continue
        for fd in entries:
            try:
                if not os.readlink(fd).startswith("anon_inode:bpf"):
                    continue
                info = Path(f"/proc/{pid}/fdinfo/{fd.name}").read_text()
            except OSError:
                continue
            for line in info.splitlines():
                key, _, value = line.partition(":")
                kind = key.removesuffix("_id")
                if kind in ids and key.endswith("_id") and value.strip().isdigit():
                    ids[kind].add(int(value))
                    break  # a link's fdinfo names its program too: the first id is its own
    return ids


def bpf_existing() -> dict[str, set[int]]:
    """Every BPF map, program and link on the machine, by kind."""
    out: dict[str, set[int]] = {}
    for kind in ("map", "prog", "link"):
        res = subprocess.run(["bpftool", "-j", kind, "show"], capture_output=True, text=True,
                             check=True)
        out[kind] = {int(o["id"]) for o in json.loads(res.stdout or "[]")}
    return out


def lttng_sessions(ns: Sequence[str] = ()) -> list[str]:
    """Session names the root session daemon knows ([] when none runs): the machine's, or
    the one in the namespace that the prefix ns enters."""
    res = subprocess.run([*ns, "lttng", "-n", "--mi", "xml", "list"], capture_output=True,
                         text=True, check=False)
    return lttng.session_names(res.stdout) if res.returncode == 0 else []


def owned_names(names: Iterable[str], pids: set[int]) -> set[str]:
    """The bakeoff-<pid>-... names whose pid is one of pids."""
    out = set()
    for name in names:
        m = OWNED.match(name)
        if m and int(m.group(1)) in pids:
            out.add(name)
    return out


def memcgs() -> list[str]:
    try:
        return [p.name for p in MEMCG.iterdir() if p.is_dir()]
    except OSError:
        return []


def tmp_names() -> list[str]:
    return [p.name for p in TMP.glob("bakeoff-*")]


def private_tmp(parent: Path) -> Path:
    """parent/tmp, made: a TMPDIR for one run (or program) alone, so that what it leaves
    there is its own, whatever else runs on the machine."""
    tmpdir = parent / "tmp"
    tmpdir.mkdir()
    return tmpdir


@dataclass
class LiveRun:
    """One `bakeoff run ... --out OUT --quiet` in the background."""

    out: Path
    args: Sequence[str]
    tmpdir: Path | None = None  # TMPDIR for the run (its scratch and trial directories)
    wrap: Sequence[str] = ()
    ns: Sequence[str] = ()  # the prefix that enters the run's namespace, if it has its own
    tag: str = field(default_factory=lambda: secrets.token_hex(6))
    # Every process of the run seen while it ran, and the BPF objects they held.
    seen: dict[int, Proc] = field(default_factory=dict)
    held: dict[str, set[int]] = field(default_factory=lambda: {"map": set(), "prog": set(),
                                                               "link": set()})
    started: float = 0.0
    ended: float = 0.0
    proc: subprocess.Popen[str] | None = None
    stdout: str = ""
    stderr: str = ""

    def start(self) -> LiveRun:
        env = {**os.environ, MARKER: self.tag, "COLUMNS": "200"}
        if self.tmpdir is not None:
            env["TMPDIR"] = str(self.tmpdir)
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            [*self.wrap, sys.executable, "-m", "bakeoff", "run", *self.args,
             "--out", str(self.out), "--quiet"],
            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def note(self, procs: list[Proc], with_bpf: bool = False) -> dict[str, set[int]]:
        """Remember processes (and, with_bpf, the BPF objects they hold) seen now; the BPF
        objects they hold now."""
        for p in procs:
            self.seen[p.pid] = p
        now: dict[str, set[int]] = {}
        if with_bpf:
            now = bpf_ids(p.pid for p in procs)
            for kind, ids in now.items():
                self.held[kind] |= ids
        return now

    def pids(self) -> set[int]:
        return {self.pid, *self.seen}

    def wait(self, timeout: float = 300) -> int:
        assert self.proc is not None
        try:
            self.stdout, self.stderr = self.proc.communicate(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.communicate()
        self.ended = time.monotonic()
        return self.proc.returncode

    def results(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.out / "results.json").read_text())
        return data

    def trials(self) -> list[dict[str, Any]]:
        """In the order they ran."""
        return sorted(self.results()["trials"], key=lambda t: str(t["started_at"]))

    def transcript(self) -> str:
        return f"exit {self.proc.returncode if self.proc else None}\n{self.stdout}\n{self.stderr}"


def watch(runs: Sequence[LiveRun], until: Callable[[dict[str, list[Proc]]], bool],
          timeout: float, with_bpf: bool = False, every: float = 0.02) -> dict[str, list[Proc]]:
    """Poll the runs' processes until `until` says so; what they were at that moment."""
    deadline = time.monotonic() + timeout
    while True:
        now = marked(r.tag for r in runs)
        for r in runs:
            r.note(now[r.tag], with_bpf)
        if until(now):
            return now
        if time.monotonic() > deadline or not any(r.running() for r in runs):
            raise AssertionError("the runs never got there: " +
                                 " | ".join(r.transcript() if not r.running() else
                                            f"{r.tag} still running" for r in runs))
        time.sleep(every)


@dataclass(frozen=True)
class Tick:
    """One look at the runs: their live processes and the BPF objects those hold, by tag."""

    procs: dict[str, list[Proc]]
    bpf: dict[str, dict[str, set[int]]]


def follow(runs: Sequence[LiveRun], on_tick: Callable[[Tick], None] | None = None,
           timeout: float = 300, with_bpf: bool = True, every: float = 0.1) -> None:
    """Poll the runs' processes (and their BPF objects) until every run has exited; then
    collect each run's output. (--quiet runs print little: their pipes cannot fill.)"""
    deadline = time.monotonic() + timeout
    while any(r.running() for r in runs) and time.monotonic() < deadline:
        now = marked(r.tag for r in runs)
        held = {r.tag: r.note(now[r.tag], with_bpf) for r in runs}
        if on_tick is not None:
            on_tick(Tick(now, held))
        time.sleep(every)
    for r in runs:
        r.wait(timeout=max(1.0, deadline - time.monotonic()))


def settled(tag: str, settle_s: float = 15.0) -> list[str]:
    """The processes with tag in their environment still alive once settle_s has passed or
    none is left, as findings (empty: none)."""
    deadline = time.monotonic() + settle_s
    while (procs := marked([tag])[tag]) and time.monotonic() < deadline:
        time.sleep(0.1)  # a daemon's last exit, or PID 1 reaping, takes a moment
    return [f"process left: {p.pid} {p.comm} {' '.join(p.argv)[:160]}" for p in procs]


def leftovers(run: LiveRun, settle_s: float = 15.0) -> list[str]:
    """What the finished run left on the machine, as findings (empty: nothing)."""
    found = settled(run.tag, settle_s)
    pids = run.pids()
    found += [f"/tmp entry left: {n}" for n in owned_names(tmp_names(), pids)]
    if run.tmpdir is not None and any(run.tmpdir.iterdir()):
        found.append(f"TMPDIR entries left: {sorted(p.name for p in run.tmpdir.iterdir())}")
    found += [f"cgroup left: {MEMCG / n}" for n in owned_names(memcgs(), pids)]
    found += [f"LTTng session left: {n}"
              for n in owned_names(lttng_sessions(run.ns), {run.pid})]
    try:
        probes = UPROBES.read_text()
    except OSError:
        probes = ""
    for line in probes.splitlines():
        # A probe on a file in the run's own TMPDIR is the run's, whoever made it.
        if any(f"/bakeoff-{pid}-" in line for pid in pids) or \
                (run.tmpdir is not None and f"{run.tmpdir}/" in line):
            found.append(f"uprobe left: {line}")
    for line in Path("/proc/self/mounts").read_text().splitlines():
        point = line.split()[1]
        if owned_names([Path(point).name], pids):
            found.append(f"mount left: {line}")
    existing = bpf_existing()
    for kind, ids in run.held.items():
        if ids & existing[kind]:
            found.append(f"BPF {kind}s left: {sorted(ids & existing[kind])}")
    return found
