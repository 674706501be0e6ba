"""Kernel counters in the measured window (benchmarks/common/counters.c), checked against a
program whose counts are known: build/common/counters-check."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from bakeoff.run.protocol import ProgramOutput, parse_output

PMU_EVENTS = ("cycles", "instructions", "branch_misses", "cache_misses", "dtlb_load_misses")


def _run(built: Path, variant: str, *args: str, env: dict[str, str] | None = None,
         ) -> ProgramOutput:
    prog = built / "common" / "counters-check"
    res = subprocess.run([str(prog), "--variant", variant, *args], capture_output=True,
                         text=True, timeout=60, env={**os.environ, **(env or {})}, check=False)
    assert res.returncode == 0, res.stderr
    return parse_output(res.stdout)


def _opened(out: ProgramOutput) -> list[str]:
    return str(out.meta["counters"]).split(",")


def test_a_tracepoint_counts_each_call_in_the_window_and_none_outside(built: Path) -> None:
    # Each sample also makes 1000 getppid calls just before its window: not counted; nor are
    # the 3 measured samples' windows (1000 calls each, which the first counted sample's
    # delta would hold if they were): only the 5 counted ones.
    out = _run(built, "getppid", "--samples", "3", "--counted-samples", "5", "--warmup", "2",
               "--param", "ops=1000")
    assert "syscalls.sys_enter_getppid" in _opened(out)
    assert list(out.samples["per_op.syscalls.sys_enter_getppid"]) == [1.0] * 5
    assert len(out.samples["ns_per_op"]) == 3  # warm-ups are not emitted, counters neither
    assert len(out.samples["counted.ns_per_op"]) == 5


def test_without_counted_samples_nothing_is_counted(built: Path) -> None:
    out = _run(built, "getppid", "--samples", "4", "--param", "ops=100")
    assert "counters" not in out.meta  # opened at the first counted sample: none here
    assert len(out.samples["ns_per_op"]) == 4
    assert not [m for m in out.samples if m.startswith(("per_op.", "counted."))]


def test_page_faults_are_counted_in_the_window_only(built: Path) -> None:
    # Every sample faults in as many pages again outside its window, as set-up.
    out = _run(built, "fault", "--samples", "1", "--counted-samples", "4", "--param", "ops=256")
    faults = list(out.samples["per_op.page_faults_minor"])
    assert len(faults) == 4
    assert all(0.99 <= f <= 1.02 for f in faults), faults
    assert list(out.samples["per_op.page_faults_major"]) == [0.0] * 4


def test_task_clock_stays_within_the_timed_window(built: Path) -> None:
    # On-CPU time of the window can't exceed its wall time (the timer's readings), give or
    # take the two prctl calls at its edges: a counter left enabled between samples would.
    out = _run(built, "getppid", "--samples", "1", "--counted-samples", "5", "--param",
               "ops=2000")
    for on_cpu, wall in zip(out.samples["per_op.task_clock_ns"],
                            out.samples["counted.ns_per_op"], strict=True):
        assert 0 < on_cpu <= wall * 1.05 + 5, (on_cpu, wall)


def test_each_pmu_event_is_counted_or_named_absent_with_a_reason(built: Path) -> None:
    out = _run(built, "getppid", "--samples", "1", "--counted-samples", "1")
    absent = str(out.meta["counters_absent"])
    for event in PMU_EVENTS:
        if event in _opened(out):
            assert f"per_op.{event}" in out.samples
        else:  # this VM: no PMU
            assert f"{event}: not supported" in absent or f"{event}: not permitted" in absent


def test_the_present_pmu_path_runs_through_a_software_stand_in(built: Path) -> None:
    out = _run(built, "getppid", "--samples", "1", "--counted-samples", "2", "--param",
               "ops=2000", env={"BAKEOFF_PMU_STANDIN": "1"})
    assert "stand-in" in str(out.meta["counters_absent"])  # it cannot pass for a real PMU
    for event in PMU_EVENTS:
        assert event in _opened(out)
        # cpu-clock in the window: positive, and no more than the window's wall time
        for value, wall in zip(out.samples[f"per_op.{event}"],
                               out.samples["counted.ns_per_op"], strict=True):
            assert 0 < value <= wall * 1.05 + 5


@pytest.mark.parametrize("spec,reason", [
    ("bogus", "not a tracepoint; write it as subsystem:event"),
    ("nosuch:event", "no such tracepoint"),
])
def test_tracepoints_from_the_environment_are_added_or_refused_with_a_reason(
        built: Path, spec: str, reason: str) -> None:
    out = _run(built, "fault", "--samples", "1", "--counted-samples", "1", "--param", "ops=64",
               env={"BAKEOFF_TRACEPOINTS": f"tlb:tlb_flush,{spec}"})
    assert "tlb.tlb_flush" in _opened(out)
    assert "per_op.tlb.tlb_flush" in out.samples
    assert f"{spec}: {reason}" in str(out.meta["counters_absent"])


SYSCALLS = ("sys_enter_getppid", "sys_exit_getppid", "sys_enter_read", "sys_enter_openat",
            "sys_enter_lseek")


def test_syscall_tracepoints_are_counted_on_one_filtered_tracepoint_with_the_same_counts(
        built: Path) -> None:
    # Closing the last event on a tracepoint costs the exiting program an RCU grace period
    # (~40 ms here) per distinct tracepoint, so counters.c counts syscalls:sys_enter_NAME on
    # raw_syscalls:sys_enter filtered on NAME's number: one tracepoint for them all. The
    # counts must be those of the per-call tracepoints: 1 getppid entry and exit per
    # operation, and none of the calls the window does not make.
    out = _run(built, "getppid", "--samples", "1", "--counted-samples", "3", "--param",
               "ops=1000",
               env={"BAKEOFF_TRACEPOINTS": ",".join(f"syscalls:{e}" for e in SYSCALLS[1:])})
    names = [f"syscalls.{e}" for e in SYSCALLS]
    assert [n for n in _opened(out) if n.startswith("syscalls.")] == names
    assert str(out.meta["counters_on_raw_syscalls"]).split(",") == names
    for name in names:
        want = 1.0 if name.endswith("_getppid") else 0.0
        assert list(out.samples[f"per_op.{name}"]) == [want] * 3, name


def test_a_system_call_the_table_lacks_gets_its_own_tracepoint_and_still_counts(
        built: Path) -> None:
    # The table of numbers comes from the build's headers (common.mk): a call newer than them
    # (uretprobe on Debian 12's, kernel 6.11+) is counted on its own tracepoint, as before.
    table = (built / "common" / ".obj" / "common" / "syscall_nrs.h").read_text()
    known = set(re.findall(r'\{ "(\w+)", __NR_', table))
    assert {"getppid", "read", "openat", "bpf"} <= known
    traced = Path("/sys/kernel/tracing/events/syscalls")
    unknown = sorted(p.name for p in traced.glob("sys_enter_*")
                     if p.name.removeprefix("sys_enter_") not in known)
    if not unknown:
        pytest.skip("every system call this kernel traces is in the build's table")
    out = _run(built, "getppid", "--samples", "1", "--counted-samples", "2", "--param",
               "ops=1000", env={"BAKEOFF_TRACEPOINTS": f"syscalls:{unknown[0]}"})
    assert f"syscalls.{unknown[0]}" in _opened(out), out.meta["counters_absent"]
    assert out.meta["counters_on_raw_syscalls"] == "syscalls.sys_enter_getppid"
    assert list(out.samples[f"per_op.syscalls.{unknown[0]}"]) == [0.0] * 2
    assert list(out.samples["per_op.syscalls.sys_enter_getppid"]) == [1.0] * 2
