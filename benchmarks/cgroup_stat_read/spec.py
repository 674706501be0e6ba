"""cgroup-stat-read: how to read a memory cgroup's statistics, and what each way costs (seed 000).

Variants are access methods (cat, reopen, held = baseline, pread); params are what a query
returns (content, fields) and whose statistics (target). The default target is a child cgroup
this room creates, with a process charging memory to it, and removes at the end of the run.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from bakeoff.cleanup import pid_alive
from bakeoff.errors import UsageError
from bakeoff.model import (
    Benchmark,
    Case,
    Metric,
    Param,
    ParamValue,
    Profile,
    RunContext,
    TrialPlan,
    Variant,
)

PROGRAM = "cgroup_stat_read/cgstat"
CHARGER = "cgroup_stat_read/cgstat_charger"
CHARGE_MIB = 64

CONTENTS = ("legacy", "legacy-parse", "ks", "bpf-iter", "bpf-iter-flush")
BPF_CONTENTS = ("bpf-iter", "bpf-iter-flush")
# memory.stat lines that are not counters (v1 limits) or are sums of other lines (v2); the
# C side (memstat.c, is_counter_field) leaves out the same ones.
NOT_COUNTERS = frozenset({"hierarchical_memory_limit", "hierarchical_memsw_limit", "slab",
                          "pgscan", "pgsteal"})
# Queries per trial by profile: file and iterator reads, and cat spawns (about 1 ms each here,
# so the seed's selftest did 1000 of them, not 1M).
READS = {"quick": 10_000, "default": 50_000, "full": 1_000_000}
CAT_READS = {"quick": 200, "default": 500, "full": 10_000}

CGROUP_MAGIC_TYPES = ("cgroup", "cgroup2")
TARGET_NAME = re.compile(r"^bakeoff-(\d+)-target$")
BPFFS_NAME = re.compile(r"^bakeoff-(\d+)-bpffs-")


# ---- the machine's memory controller -----------------------------------------------------


class Mount(NamedTuple):
    point: Path
    fstype: str
    options: frozenset[str]


def _mounts() -> list[Mount]:
    out = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mounts").read_text().splitlines():
            fields = line.split()
            if len(fields) >= 4:
                point = fields[1].replace("\\040", " ")
                out.append(Mount(Path(point), fields[2], frozenset(fields[3].split(","))))
    return out


def memory_controller() -> tuple[Path, str] | None:
    """(mount point, 'v1' or 'v2') of the memory controller, v1 first as the kernel does."""
    mounts = _mounts()
    for m in mounts:
        if m.fstype == "cgroup" and "memory" in m.options:
            return m.point, "v1"
    for m in mounts:
        if m.fstype == "cgroup2":
            with contextlib.suppress(OSError):
                if "memory" in (m.point / "cgroup.controllers").read_text().split():
                    return m.point, "v2"
    return None


def _mount_of(path: Path) -> Mount | None:
    best: Mount | None = None
    for m in _mounts():
        if (path == m.point or m.point in path.parents) and (
                best is None or len(str(m.point)) > len(str(best.point))):
            best = m
    return best


def counter_fields(cgroup: Path) -> list[str]:
    """The memory.stat fields a consumer may select (what fields=all means)."""
    try:
        text = (cgroup / "memory.stat").read_text()
    except OSError:
        return []
    names = [line.split(" ", 1)[0] for line in text.splitlines() if " " in line]
    return [n for n in names if n not in NOT_COUNTERS]


def _all_fields_here() -> int:
    controller = memory_controller()
    count = len(counter_fields(controller[0])) if controller else 0
    return count or 40  # cgroup v1 on 6.18; only a label on a machine with no memcg at all


ALL_FIELDS = _all_fields_here()


# ---- params ---------------------------------------------------------------------------------


def check_target(value: ParamValue) -> str | None:
    """One sentence naming the problem with a target, or None when it can be read."""
    text = str(value)
    if text in ("child", "root"):
        return None
    path = Path(text)
    if not path.is_absolute():
        return ("give child, root, or an absolute memory cgroup path "
                "(e.g. /sys/fs/cgroup/memory/NAME); a path with ',' cannot be given, since "
                "--param splits its values at ','")
    controller = memory_controller()
    # Every refusal names the fix: the targets that do work here.
    fix = (f"; give child, root, or a memory cgroup directory under {controller[0]}"
           if controller else "; this machine has no memory controller (see bakeoff doctor)")
    if not path.is_dir():
        return f"{text} does not exist (or is not a directory){fix}"
    mount = _mount_of(path)
    if mount is None or mount.fstype not in CGROUP_MAGIC_TYPES:
        return f"{text} is not a cgroup (not on a cgroup file system){fix}"
    stat = path / "memory.stat"
    if not stat.exists():
        return f"{text} is not a memory cgroup (it has no memory.stat){fix}"
    try:
        with stat.open("rb") as f:
            f.read(1)
    except OSError as exc:
        return f"{text} is not readable: {stat}: {exc.strerror}{fix}"
    return None


def check_content(value: ParamValue) -> str | None:
    if str(value) in CONTENTS:
        return None
    return f"use one of {', '.join(CONTENTS)}"


class FieldCountParam(Param):
    """An int param that also takes 'all': every counter field of memory.stat here.

    (No @dataclass here: the harness loads spec.py without registering it as a module, and
    dataclasses needs the module; the parent's fields and __init__ are inherited as they are.)
    """

    def parse(self, text: str) -> ParamValue:
        if text.strip() == "all":
            return ALL_FIELDS
        return super().parse(text)


def check_fields(value: ParamValue) -> str | None:
    if int(value) < 1:
        return f"give a number of fields from 1 to {ALL_FIELDS}, or all"
    return None


# ---- cases this machine or this kernel cannot run ----------------------------------------


def _kallsyms_has(symbol: str) -> bool:
    with contextlib.suppress(OSError), open("/proc/kallsyms") as f:
        return any(line.rstrip().endswith(f" {symbol}") for line in f)
    return False


FLUSH_UNAVAILABLE = (
    "no memcg flush from BPF on this kernel: its rstat kfunc css_rstat_flush (6.16+) flushes "
    "the subsystem of the css it is given, and the verifier lets a program pass only a trusted "
    "css: &cgrp->self (base stats), not the memory css read from cgrp->subsys[] (METHOD.md)")


def _target_dir(case: Case) -> Path | None:
    target = str(case.param("target"))
    if target in ("child", "root"):
        controller = memory_controller()
        return controller[0] if controller else None  # a child has its parent's fields
    return Path(target)


def skip_case(case: Case, ctx: RunContext) -> str | None:
    content, fields = str(case.param("content")), int(case.param("fields"))
    if content == "legacy" and fields != ALL_FIELDS:
        return ("not applicable: legacy reads every field; fields selects for legacy-parse, ks "
                "and bpf-iter")
    if content in BPF_CONTENTS:
        if case.variant == "pread":
            return ("not applicable: an iterator fd has no offset to pread at; held "
                    "re-creates the iterator fd per query instead")
        if not ctx.capabilities.get("bpf", False):
            return "bpf-iter needs BPF (bpf() as root); fix: run as root, see bakeoff doctor"
        if content == "bpf-iter-flush" and not _kallsyms_has("cgroup_rstat_flush"):
            return FLUSH_UNAVAILABLE
    where = _target_dir(case)
    if where is None:
        return "no memory controller is mounted"
    if str(case.param("target")) == "child" and not os.access(where, os.W_OK):
        # The child is made with mkdir under the controller's root: only root may.
        return (f"target=child needs root: it creates a memory cgroup under {where}, which "
                f"uid {os.geteuid()} cannot write; fix: run as root, or --param target=root")
    if content == "ks" and not (where / "memory.stat.ks").exists():
        return ("this kernel has no memory.stat.ks (the out-of-tree patch that filters "
                "memory.stat in the kernel)")
    available = len(counter_fields(where))
    if fields > available:
        return f"{where}/memory.stat has {available} counter fields here; fields={fields} is more"
    return None


# ---- the child cgroup: created on first use, removed at the end of the run ---------------


def _pid_alive(pid: int) -> bool:
    return pid_alive(pid)  # a zombie counts as gone: it can no longer clean up


def _move_out(cgroup: Path) -> None:
    """Every process still in cgroup goes to its parent, so that rmdir can succeed."""
    with contextlib.suppress(OSError):
        for pid in (cgroup / "cgroup.procs").read_text().split():
            with contextlib.suppress(OSError):
                (cgroup.parent / "cgroup.procs").write_text(pid)


def _rmdir(cgroup: Path) -> None:
    for _ in range(50):  # a just-killed task leaves the cgroup a moment after it is reaped
        try:
            cgroup.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno != errno.EBUSY:
                raise
            _move_out(cgroup)
            time.sleep(0.02)
    cgroup.rmdir()


def sweep_leftovers() -> list[str]:
    """Remove what runs that died without cleaning up (SIGKILL) left: their child cgroups and
    their trials' private bpffs mounts (which pin an iterator link, its program and map).
    Only those whose creating PID is gone. One line per thing removed (Benchmark.sweep)."""
    lines = []
    controller = memory_controller()
    if controller:
        for entry in controller[0].glob("bakeoff-*-target"):
            m = TARGET_NAME.match(entry.name)
            if m and not _pid_alive(int(m.group(1))):
                _move_out(entry)
                try:
                    _rmdir(entry)
                    lines.append(f"removed cgroup {entry} (its run, {m.group(1)}, is gone)")
                except OSError as exc:
                    lines.append(f"could not remove cgroup {entry}: {exc.strerror or exc}")
    for mount in _mounts():
        m = BPFFS_NAME.match(mount.point.name)
        if mount.fstype == "bpf" and m and not _pid_alive(int(m.group(1))):
            subprocess.run(["umount", "-l", str(mount.point)], check=False, capture_output=True)
            with contextlib.suppress(OSError):
                mount.point.rmdir()
            lines.append(f"unmounted and removed bpffs {mount.point} with the BPF iterator it "
                         f"pinned (its trial, {m.group(1)}, is gone)")
    return lines


class ChargerFailed(Exception):
    pass


class ChildCgroup:
    """bakeoff-<pid>-target under the memory controller, with a charger process in it."""

    def __init__(self, build_dir: Path) -> None:
        self.build_dir = build_dir
        self.path: Path | None = None
        self.charger: subprocess.Popen[bytes] | None = None
        self.enabled_memory_in: Path | None = None  # v2: a subtree_control we changed

    def ensure(self) -> Path:
        """The child cgroup with a live charger in it. Made on first use; a charger that died
        since (killed, OOM) is replaced, so that its death fails the trial it hit (cgstat
        watches the charger) and not, silently, every trial after it on an empty cgroup."""
        if self.path is None:
            self._create()
        elif self.charger is None or self.charger.poll() is not None:
            self._stop_charger()
            self._start_charger()
        assert self.path is not None
        return self.path

    def _create(self) -> None:
        controller = memory_controller()
        if controller is None:
            raise UsageError("target=child needs a memory controller; see bakeoff doctor")
        root, version = controller
        if version == "v2":
            self._enable_memory(root)
        path = root / f"bakeoff-{os.getpid()}-target"
        path.mkdir(mode=0o755)
        self.path = path
        self._start_charger()

    def _start_charger(self) -> None:
        """Raises ChargerFailed (the trial fails with it, the run goes on)."""
        assert self.path is not None
        charger = self.build_dir / CHARGER
        # Its own session: a Ctrl-C at the terminal reaches the harness, which removes it.
        self.charger = subprocess.Popen([str(charger), str(self.path), str(CHARGE_MIB)],
                                        stdout=subprocess.PIPE, start_new_session=True)
        assert self.charger.stdout is not None
        line = self.charger.stdout.readline()
        if line.strip() != b"ready":
            self._stop_charger()
            raise ChargerFailed(f"the memory charger for {self.path} did not start")

    def _stop_charger(self) -> None:
        if self.charger is not None:
            with contextlib.suppress(ProcessLookupError):
                self.charger.send_signal(signal.SIGKILL)
            self.charger.wait()
            if self.charger.stdout:
                self.charger.stdout.close()
            self.charger = None

    def _enable_memory(self, root: Path) -> None:
        control = root / "cgroup.subtree_control"
        if "memory" not in control.read_text().split():
            control.write_text("+memory")
            self.enabled_memory_in = control

    def remove(self) -> None:
        self._stop_charger()
        if self.path is not None:
            _move_out(self.path)
            _rmdir(self.path)
            self.path = None
        if self.enabled_memory_in is not None:
            with contextlib.suppress(OSError):  # fails when others use it now: leave it on
                self.enabled_memory_in.write_text("-memory")
            self.enabled_memory_in = None


_CHILD: ChildCgroup | None = None


@contextlib.contextmanager
def session(ctx: RunContext) -> Iterator[None]:
    """The child cgroup is made on the first trial that needs it (plan_trial), so a run on
    root or a path of the user's creates nothing; whatever was made goes on exit."""
    global _CHILD
    sweep_leftovers()
    _CHILD = ChildCgroup(ctx.build_dir)
    try:
        yield
    finally:
        child, _CHILD = _CHILD, None
        child.remove()
        sweep_leftovers()


def plan_trial(case: Case, profile: Profile, ctx: RunContext) -> TrialPlan:
    target = str(case.param("target"))
    env: dict[str, str] = {}
    if target == "child":
        if _CHILD is None:
            raise RuntimeError("target=child outside the benchmark's session")
        try:
            target = str(_CHILD.ensure())
        except ChargerFailed as exc:  # this trial fails with the reason; the run goes on
            return TrialPlan(argv=[sys.executable, "-c", "import sys; sys.exit(sys.argv[1])",
                                   str(exc)])
        assert _CHILD.charger is not None
        # cgstat fails the trial if the charger dies while it reads (the cgroup would empty).
        env["BAKEOFF_CGSTAT_CHARGER_PID"] = str(_CHILD.charger.pid)
    table = CAT_READS if case.variant == "cat" else READS
    reads = max(table.get(profile.name, table["default"]), profile.samples)
    argv = [str(ctx.build_dir / PROGRAM), "--variant", case.variant,
            "--param", f"target={target}",
            "--param", f"content={case.param('content')}",
            "--param", f"fields={case.param('fields')}",
            "--param", f"reads={reads}",
            "--samples", str(profile.samples), "--warmup", str(profile.warmup_samples)]
    return TrialPlan(argv=argv, env=env)


# ---- the declaration ----------------------------------------------------------------------

QUICK_CONTENTS = ("legacy", "legacy-parse", "ks", "bpf-iter", "bpf-iter-flush")
FIELD_COUNTS = tuple(sorted({3, 16, 32, 64, ALL_FIELDS}))

BENCHMARK = Benchmark(
    name="cgroup-stat-read",
    title="Reading memory cgroup statistics: cat, reopen, held fd, pread, BPF iterator",
    summary=(
        "The cost of one query of a memory cgroup's statistics (memory.stat + memory.numa_stat "
        "in full, N fields of them, or N counters from a BPF cgroup iterator), by how the "
        "consumer reads them. cat and reopen are per-query latency: what a script or tool "
        "that opens (or spawns) per query waits each time. held and pread are read-path "
        "throughput: what a daemon holding the file open pays per read, the kernel's "
        "flush-and-format work alone. Both are right for their use (seed section 3)."),
    variants=(
        Variant("cat", "per-query latency: fork+exec of cat per query, output read from a "
                "pipe, as a script does (process spawn, path lookup, open/read/close)",
                color="#d62728"),
        Variant("reopen", "per-query latency: open+read+close of each file per query, as a "
                "tool that does not keep files open (path lookup included)", color="#ff7f0e"),
        Variant("held", "read-path throughput: lseek(0)+read on files opened once, the seed's "
                "binary_read_test (for bpf-iter: a fresh iterator fd from the held link)",
                baseline=True, color="#1f77b4"),
        Variant("pread", "read-path throughput: pread at offset 0 on files opened once "
                "(one syscall instead of lseek+read)", color="#2ca02c"),
    ),
    params=(
        Param("content", "str", "what one query returns: legacy (both files in full, as the "
              "seed), legacy-parse (legacy + extracting N named fields), ks (the out-of-tree "
              "memory.stat.ks filter, N fields, flush first), bpf-iter (N counters from a BPF "
              "cgroup iterator), bpf-iter-flush (the same after an rstat flush)",
              check=check_content),
        FieldCountParam("fields", "int", f"N fields selected by legacy-parse, ks and bpf-iter; "
                        f"all = every counter field of memory.stat ({ALL_FIELDS} here)",
                        unit="fields", check=check_fields),
        Param("target", "str", "whose statistics: child (a cgroup bakeoff creates with "
              f"{CHARGE_MIB} MiB charged to it; default), root (the root memcg), or an "
              "absolute memory cgroup path", check=check_target),
    ),
    metrics=(
        Metric("us_per_query", "µs", "time of one query, as its consumer pays it (see "
               "variants); mean of a sample's queries"),
        Metric("queries_per_s", "queries/s", "queries per second one thread can make",
               lower_is_better=False),
        Metric("p50_us", "µs", "median per-query time in a trial (per timed batch for the fast "
               "variants): unlike the mean, untouched by the odd preemption of a busy machine"),
        Metric("p99_us", "µs", "99th percentile of per-query time in a trial (per timed batch "
               "for the fast variants: see METHOD.md); flushes show here"),
        Metric("max_us", "µs", "slowest query (or batch) of a trial"),
    ),
    profiles={
        "quick": Profile("quick", {"content": QUICK_CONTENTS, "fields": (3, ALL_FIELDS),
                                   "target": ("child",)},
                         trials=3, samples=5, warmup_samples=1, warmup_trials=0, timeout_s=60),
        # No warm-up round: every case's first trial is measured in the same shuffled round,
        # so a cold start falls on all variants alike; the session's charger has filled the
        # cgroup before any trial. A fixed count: the cases whose CIs are wide are the ones
        # level with the baseline (pread, held), which sequential allocation would only
        # extend. trial_s: the mean trial of the run of 2026-11-25 on this 2-vCPU VM (load 7).
        "default": Profile("default", {"content": CONTENTS, "fields": FIELD_COUNTS,
                                       "target": ("child",)},
                           trials=5, samples=10, warmup_samples=1, warmup_trials=0,
                           timeout_s=120, trial_s=1.0),
        "full": Profile("full", {"content": CONTENTS, "fields": FIELD_COUNTS,
                                 "target": ("child",)},
                        trials=10, samples=20, warmup_samples=2, warmup_trials=1,
                        timeout_s=300),
    },
    program=PROGRAM,
    requires=("cgroup_memory",),
    skip_case=skip_case,
    session=session,
    sweep=sweep_leftovers,
    plan_trial=plan_trial,
)
