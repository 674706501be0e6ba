"""mremap-vs-memcpy's program by hand: what a sample may hold, and which pages a move moves.

Two invariants behind the room's 16 MiB answer (benchmarks/mremap_vs_memcpy/METHOD.md, "Time
off the CPU" and "Which pages a move moves"), checked on the real program with real mremap
and a real scheduler, never on a timing bound:

- a sample is time the operation had the CPU: a copy that another task preempts is retaken
  or has its wait subtracted, so it never exceeds the thread's own CPU time over the same
  window (perf's task-clock, counted by the kernel, independently of the program's timer);
- the plain moves move 4 KiB pages (no AnonHugePages at the destination, every byte of the
  source mapped there, one whole page-table page per 2 MiB, nothing allocated), and
  mremap-thp moves huge ones.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import IN_CI, counted_output

MIB = 1024 * 1024
SIZE = 16 * MIB  # the size the room's first question reads


def _program(built: Path) -> str:
    return str(built / "mremap_vs_memcpy" / "mremap_bench")


def _run(built: Path, variant: str, *, samples: int = 3, counted: int = 2,
         cpu: int | None = None) -> tuple[dict[str, Any], dict[str, list[float]],
                                          dict[str, float]]:
    argv = [_program(built), "--variant", variant, "--param", f"size={SIZE}",
            "--samples", str(samples), "--counted-samples", str(counted)]
    res = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=120,
                         preexec_fn=None if cpu is None else lambda: os.sched_setaffinity(0, {cpu}))
    assert res.returncode == 0, res.stderr
    return counted_output(res.stdout)


@pytest.mark.parametrize("variant", ["mremap", "mremap-after-munmap", "mremap-dontunmap"])
def test_a_plain_move_moves_4_kib_pages_a_page_table_at_a_time(built: Path,
                                                                variant: str) -> None:
    meta, values, _ = _run(built, variant)
    # After every move (the program exits 3 otherwise): the destination maps the whole
    # source, none of it in huge pages, so the move carried size/4096 page-table entries.
    assert meta["thp"] == "off"
    assert meta["moved_page_bytes"] == 4096 and meta["moved_huge_kib"] == 0, meta
    if "tlb.tlb_flush" not in meta["counters"].split(","):
        assert not IN_CI, meta["counters_absent"]
        return
    # Those entries went as whole page-table pages, one per 2 MiB (a flush each), source
    # and hole both 2 MiB-aligned: no page-table page allocated at the destination, as a
    # move entry by entry would need.
    assert meta["src_pmd_offset"] == 0 and meta["dst_pmd_offset"] == 0
    assert all(f >= SIZE // (2 * MIB) for f in values["per_op.tlb.tlb_flush"]), values
    assert values["per_op.kmem.mm_page_alloc"] == [0, 0]
    assert values["per_op.page_faults_minor"] == [0, 0]


def test_mremap_thp_moves_huge_pages(built: Path) -> None:
    meta, _, _ = _run(built, "mremap-thp", counted=1)
    assert meta["thp"] == "verified"
    assert meta["moved_page_bytes"] == 2 * MIB and meta["moved_huge_kib"] == SIZE // 1024, meta


def _kernel_at_least(major: int, minor: int) -> bool:
    release = os.uname().release.split("-")[0].split(".")
    return (int(release[0]), int(release[1])) >= (major, minor)


def test_sources_are_populated_by_the_kernel_yet_written_page_by_page(built: Path) -> None:
    # MADV_POPULATE_WRITE (Linux 5.14) faults a source in: the program then verifies after
    # every move that the destination maps all of it (Rss: no page left unfaulted or on the
    # shared zero page) and holds each page's own pattern, in 4 KiB pages (exit 3 otherwise).
    meta, _, _ = _run(built, "mremap")
    want = "MADV_POPULATE_WRITE" if _kernel_at_least(5, 14) else "a write per page"
    assert meta["fault_in"].startswith(want), meta["fault_in"]
    assert meta["thp"] == "off" and meta["moved_huge_kib"] == 0, meta
    # The cold copy's destination is left alone: the copy still takes one fault per page,
    # inside the timer, and nothing before it did.
    _, _, counters = _run(built, "memcpy-cold")
    assert counters["minor_faults_per_op"] == SIZE // 4096, counters


# A real-time task on the copy's CPU that wakes every millisecond and spins 0.3 ms: it
# preempts a normal task at once, so a hot 16 MiB copy (a millisecond or more on this
# machine) is interrupted in (nearly) every attempt. Bounded: the test kills it, and it
# never holds the CPU for more than 0.3 ms at a time.
HOG = """
import time
while True:
    t = time.monotonic()
    while time.monotonic() - t < 0.0003:
        pass
    time.sleep(0.0007)
"""


def _start_hog(cpu: int) -> subprocess.Popen[bytes]:
    def pin_and_raise() -> None:
        os.sched_setaffinity(0, {cpu})
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))

    return subprocess.Popen([sys.executable, "-c", HOG], preexec_fn=pin_and_raise)


def test_a_preempted_copy_reports_only_its_time_on_the_cpu(built: Path) -> None:
    if os.geteuid() != 0:
        assert not IN_CI, "CI runs as root: SCHED_FIFO is needed to preempt for certain"
        pytest.skip("needs root for a SCHED_FIFO task")
    cpu = max(os.sched_getaffinity(0))
    hog = _start_hog(cpu)
    try:
        meta, values, counters = _run(built, "memcpy", samples=4, counted=4, cpu=cpu)
    finally:
        hog.kill()
        hog.wait(timeout=10)
    assert meta["offcpu_source"] == "/proc/thread-self/schedstat run_delay", meta
    # The hog did preempt the copy (else this test would show nothing): attempts were
    # retaken, or kept with their wait subtracted.
    assert counters["offcpu_retaken_per_sample"] + counters["offcpu_kept_share"] > 0, counters
    # Each counted sample's time is at most the task-clock of its counters' window, which
    # holds the timed section and a few system calls more: time on the CPU, none of the
    # hog's (the landed program's wall-clock samples were several times their task-clock
    # here). The 5% and 20 µs allow for interrupts, which task-clock may not count.
    for ns, on_cpu in zip(values["counted.ns_per_op"], values["per_op.task_clock_ns"],
                          strict=True):
        assert ns <= on_cpu * 1.05 + 20_000, (values["counted.ns_per_op"],
                                              values["per_op.task_clock_ns"])
