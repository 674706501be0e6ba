"""cgroup-stat-read for real: the quick profile on this machine's memory controller, the BPF
iterator's values against memory.stat, clean-up after normal and interrupted runs, bad targets.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import live_runs
import pytest

from conftest import (
    IN_CI,
    REPO,
    agree,
    assert_usage_error,
    build_dir,
    cgroup_without_memory,
    counted_output,
    run_bakeoff,
    speedup_over_rounds,
    trials_on_disk,
)

# Its leftover checks count only its own runs' things (tests/live_runs.py: processes by a
# marker, cgroups by the run's PID, its bpffs mounts in a private TMPDIR): not machine-wide,
# it runs beside other live tests.
NAME = "cgroup-stat-read"
ROOM = REPO / "benchmarks" / "cgroup_stat_read"
MIB = 1024 * 1024


def _memory_controller() -> tuple[Path, str] | None:
    mounts = [line.split() for line in Path("/proc/self/mounts").read_text().splitlines()]
    for m in mounts:
        if m[2] == "cgroup" and "memory" in m[3].split(","):
            return Path(m[1]), "v1"
    for m in mounts:
        if m[2] == "cgroup2" and "memory" in Path(m[1], "cgroup.controllers").read_text().split():
            return Path(m[1]), "v2"
    return None


CONTROLLER = _memory_controller()


def _requirements_missing() -> str | None:
    if os.geteuid() != 0:
        return "needs root (creates cgroups, loads BPF)"
    if CONTROLLER is None:
        return "no memory controller mounted"
    return None


if (missing := _requirements_missing()) is not None:
    if IN_CI:  # this machine kind has root and the v1 memory controller: a skip would hide
        raise RuntimeError(f"cgroup-stat-read tests cannot run in CI: {missing}")
    pytest.skip(missing, allow_module_level=True)


@pytest.fixture(scope="module")
def programs() -> Path:
    out = build_dir() / "cgroup_stat_read"
    subprocess.run(["make", "-s", "-C", str(ROOM)], check=True)
    return out


@pytest.fixture(scope="module")
def quick_run(programs: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    top = tmp_path_factory.mktemp("cgstat")
    run = live_runs.LiveRun(top / "run", [NAME, "--profile", "quick", "--seed", "1"],
                            tmpdir=live_runs.private_tmp(top)).start()
    assert run.wait() == 0, run.transcript()
    return {"dir": run.out, "left": live_runs.leftovers(run),
            "data": json.loads((run.out / "results.json").read_text())}


@pytest.mark.slow
def test_independent_check_agrees_with_the_first_answer(quick_run: dict[str, Any]) -> None:
    """What a query by reopening costs against a held fd (3 fields), the room's ratio against
    indep_cgstat's, a program that shares no code with cgstat and times each query alone,
    taking the median (METHOD.md, "The independent check"): within +-15%, or the two 95% CIs
    overlap. It reads a cgroup of its own, made and removed here.

    cat's ratio is checked for its scale only (both read cat over 10x slower than held): a
    spawn waits for a CPU, so on a busy machine cat's cost is the machine's load (seen here:
    0.9 to 5 ms a spawn within one minute), and two programs run minutes apart read
    different loads."""
    from bakeoff.analysis.within_run import analyze
    from bakeoff.store import results as store

    (bench,) = analyze(store.load(quick_run["dir"])).benchmarks
    ratios = {r.case.variant: r.vs_baseline for r in bench.results
              if r.metric == "us_per_query" and r.case.param("content") == "legacy-parse"
              and r.case.param("fields") == 3 and r.vs_baseline is not None}
    reopen = ratios["reopen"]
    room = (reopen.ratio, reopen.ci_low, reopen.ci_high)  # times slower than held

    from tests.indep_checks import indep_cgstat_us

    assert CONTROLLER is not None
    us = indep_cgstat_us(CONTROLLER[0])
    # times slower than held: held's speed-up over reopen
    indep = speedup_over_rounds(us["reopen"], us["held"])
    assert agree(room, indep), ("room", room, "independent", indep)
    cat = speedup_over_rounds(us["cat"], us["held"])
    assert cat[0] > 10 and ratios["cat"].ratio > 10, (cat, ratios["cat"])


@pytest.mark.slow
def test_every_case_ran_and_gave_positive_times(quick_run: dict[str, Any]) -> None:
    data = quick_run["data"]
    assert data["status"] == "complete"
    assert all(t["status"] == "ok" for t in data["trials"]), [
        t["error"] for t in data["trials"] if t["status"] != "ok"]
    ran = {(t["case"]["variant"], t["case"]["params"]["content"]) for t in data["trials"]}
    files = {(v, c) for v in ("cat", "reopen", "held", "pread") for c in ("legacy", "legacy-parse")}
    bpf = {(v, "bpf-iter") for v in ("cat", "reopen", "held")}
    assert ran == files | bpf
    for t in data["trials"]:
        s = t["samples"]
        assert len(s["us_per_query"]) == 5 and all(v > 0 for v in s["us_per_query"])
        assert all(v > 0 for v in s["queries_per_s"])
        # One p50, p99 and max per trial; the slowest batch is at least as slow as the mean.
        assert len(s["p50_us"]) == len(s["p99_us"]) == len(s["max_us"]) == 1
        assert s["max_us"][0] >= s["p99_us"][0] >= s["p50_us"][0] > 0
        assert s["max_us"][0] >= min(s["us_per_query"])
        # us_per_query is a median batch of the sample, so no slower than the trial's slowest
        # batch; the sample's mean (the seed's figure) is kept beside it.
        assert all(v <= s["max_us"][0] for v in s["us_per_query"])
        assert len(s["mean_us_per_query"]) == 5 and all(v > 0 for v in s["mean_us_per_query"])
        assert s["queries_per_s"] == pytest.approx([1e6 / v for v in s["us_per_query"]])
        assert t["counters"]["missed_queries"] == 0
        assert t["counters"]["bytes_per_query"] > 0
        assert t["meta"]["cgroup_version"] == CONTROLLER[1]  # type: ignore[index]


@pytest.mark.slow
def test_skips_name_their_reason(quick_run: dict[str, Any]) -> None:
    reasons = {(s["case"]["variant"], s["case"]["params"]["content"]): s["reason"]
               for s in quick_run["data"]["skips"]}
    assert "no offset to pread" in reasons[("pread", "bpf-iter")]
    assert "memory.stat.ks" in reasons[("held", "ks")]  # this kernel has no .ks patch
    assert "css_rstat_flush" in reasons[("held", "bpf-iter-flush")]  # 6.18: no memcg flush
    # Only facts of the kernel or of the case: nothing this machine kind could provide.
    assert not any("needs" in r for r in reasons.values()), reasons


@pytest.mark.slow
def test_held_is_faster_than_cat(quick_run: dict[str, Any]) -> None:
    from bakeoff.analysis.within_run import analyze
    from bakeoff.store import results as store

    (bench,) = analyze(store.load(quick_run["dir"])).benchmarks
    cats = [r for r in bench.results if r.case.variant == "cat" and r.metric == "us_per_query"]
    assert len(cats) == 5  # legacy, legacy-parse x2, bpf-iter x2
    for r in cats:
        assert r.vs_baseline is not None and r.vs_baseline.ci_low > 1, (r.case, r.vs_baseline)


@pytest.mark.slow
def test_bpf_iter_agrees_with_memory_stat_in_every_trial(quick_run: dict[str, Any]) -> None:
    trials = [t for t in quick_run["data"]["trials"]
              if t["case"]["params"]["content"] == "bpf-iter"]
    assert trials
    for t in trials:
        assert t["counters"]["check_fields"] == t["case"]["params"]["fields"]
        assert t["counters"]["check_mismatches"] == 0
        # The child's charger is still after touching its memory: the values are exact.
        assert t["counters"]["check_max_abs_diff"] == 0


@pytest.mark.slow
def test_normal_run_leaves_nothing(quick_run: dict[str, Any]) -> None:
    assert quick_run["left"] == []  # its cgroups, bpffs mounts, chargers and temp files


# ---- the iterator's values, checked here independently of the program's own check ---------


@pytest.fixture
def charged_cgroup(programs: Path) -> Iterator[Path]:
    assert CONTROLLER is not None
    path = CONTROLLER[0] / f"bakeoff-{os.getpid()}-target"
    path.mkdir()
    charger = subprocess.Popen([str(programs / "cgstat_charger"), str(path), "32"],
                               stdout=subprocess.PIPE)
    try:
        assert charger.stdout is not None and charger.stdout.readline().strip() == b"ready"
        yield path
    finally:
        charger.kill()
        charger.wait()
        for _ in range(100):
            try:
                path.rmdir()
                break
            except OSError:
                time.sleep(0.02)
    assert not path.exists()


def _memory_stat(path: Path) -> dict[str, int]:
    lines = (path / "memory.stat").read_text().splitlines()
    return {name: int(value) for name, value in (line.split() for line in lines)}


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["held", "reopen", "cat"])
def test_bpf_iter_values_equal_memory_stat(programs: Path, charged_cgroup: Path,
                                           variant: str) -> None:
    res = subprocess.run(
        [str(programs / "cgstat"), "--variant", variant, "--param", f"target={charged_cgroup}",
         "--param", "content=bpf-iter", "--param", "fields=all", "--param", "reads=50",
         "--param", "emit_values=1", "--samples", "1"],
        capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr
    stat = _memory_stat(charged_cgroup)
    values = {}
    for line in res.stdout.splitlines():
        obj = json.loads(line)
        if obj["type"] == "counter" and obj["name"].startswith("value."):
            values[obj["name"][len("value."):]] = obj["value"]
    counters = {k for k in stat if k not in ("hierarchical_memory_limit",
                                             "hierarchical_memsw_limit", "slab", "pgscan",
                                             "pgsteal")}
    assert set(values) == counters
    assert {k: values[k] for k in counters} == {k: stat[k] for k in counters}
    # Units: memory.stat prints bytes, the kernel counts pages; the charger put 32 MiB of
    # anonymous memory and 8 MiB of shmem in the cgroup.
    anon, shmem = ("rss", "shmem") if CONTROLLER[1] == "v1" else ("anon", "shmem")  # type: ignore[index]
    assert values[anon] >= 32 * MIB and values[shmem] >= 8 * MIB


def _counted(programs: Path, cgroup: Path, variant: str, content: str,
             reads: int) -> tuple[dict[str, Any], dict[str, list[float]]]:
    res = subprocess.run(
        [str(programs / "cgstat"), "--variant", variant, "--param", f"target={cgroup}",
         "--param", f"content={content}", "--param", "fields=3", "--param", f"reads={reads}",
         "--samples", "2", "--counted-samples", "2"],
        capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr
    meta, values, _ = counted_output(res.stdout)
    return meta, values


# What one query must make, by variant and content: (system call, per query) the mechanism
# fixes; the counters of the process that queries (cat's child is not counted).
QUERY_CALLS = {
    ("reopen", "legacy"): {"openat": 2, "read": 2, "lseek": 0, "pread64": 0, "bpf": 0,
                           "clone": 0},
    ("held", "legacy"): {"openat": 0, "read": 2, "lseek": 2, "pread64": 0, "bpf": 0,
                         "clone": 0},
    ("pread", "legacy"): {"openat": 0, "read": 0, "lseek": 0, "pread64": 2, "bpf": 0,
                          "clone": 0},
    ("held", "bpf-iter"): {"openat": 0, "read": 1, "lseek": 0, "pread64": 0, "bpf": 1,
                           "clone": 0},
    ("reopen", "bpf-iter"): {"openat": 1, "read": 1, "lseek": 0, "pread64": 0, "bpf": 0,
                             "clone": 0},
    ("cat", "legacy"): {"openat": 0, "lseek": 0, "pread64": 0, "bpf": 0, "clone": 1},
}


@pytest.mark.slow
@pytest.mark.parametrize(("variant", "content"), list(QUERY_CALLS))
def test_counted_samples_count_each_querys_calls(programs: Path, charged_cgroup: Path,
                                                 variant: str, content: str) -> None:
    meta, values = _counted(programs, charged_cgroup, variant, content,
                            20 if variant == "cat" else 400)
    # Measured samples as asked and uncounted, then the counted ones, each with its counters.
    assert len(values["us_per_query"]) == 2 and len(values["counted.us_per_query"]) == 2
    assert len(values["counted.queries_per_s"]) == 2 and len(values["p50_us"]) == 1
    opened = meta["counters"].split(",")
    for name in opened:
        assert len(values[f"per_op.{name}"]) == 2, name
    if "syscalls.sys_enter_openat" not in opened:
        assert not IN_CI, meta["counters_absent"]
        pytest.skip(f"syscall tracepoints not countable here: {meta['counters_absent']}")
    for call, per_query in QUERY_CALLS[(variant, content)].items():
        assert values[f"per_op.syscalls.sys_enter_{call}"] == [per_query] * 2, call
    if variant == "cat":
        # cat reads the pipe until EOF: at least one read with bytes and the one that ends it;
        # the parent waits for its child, so it sleeps at least once per query.
        assert all(r >= 2 for r in values["per_op.syscalls.sys_enter_read"])
        assert all(c >= 1 for c in values["per_op.context_switches"])
        return
    # Every read of memory.stat and numa_stat asks memcg for a flush (the kernel decides
    # whether one is due); the BPF iterator reads the counters without asking.
    flushes = values["per_op.memcg.memcg_flush_stats"]
    assert flushes == [meta["files"] if content == "legacy" else 0] * 2, flushes


# ---- interrupted runs -------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_run_leaves_nothing(programs: Path, tmp_path: Path, signum: int) -> None:
    run = live_runs.LiveRun(tmp_path / "run", [NAME, "--profile", "quick", "--trials", "50"],
                            tmpdir=live_runs.private_tmp(tmp_path)).start()
    child = CONTROLLER[0] / f"bakeoff-{run.pid}-target"  # type: ignore[index]
    deadline = time.monotonic() + 120
    while (trials_on_disk(run.out) < 3 or not child.exists()) \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    assert child.exists() and trials_on_disk(run.out) >= 3, "never got going"
    os.kill(run.pid, signum)
    assert run.wait(timeout=60) == 128 + signum, run.transcript()
    assert "Traceback" not in run.stderr
    assert not child.exists()
    assert live_runs.leftovers(run) == []  # its cgroups, bpffs mounts, chargers, temp files


# ---- bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "needle"),
    [
        ("/nonexistent/cgroup", "does not exist"),
        ("/tmp", "is not a cgroup"),
        ("NOMEM", "is not a memory cgroup"),
        ("relative/path", "absolute"),
    ],
)
@pytest.mark.slow
def test_bad_target_is_one_line(programs: Path, target: str, needle: str) -> None:
    if target == "NOMEM":
        target = str(cgroup_without_memory())
    res = run_bakeoff("run", NAME, "--profile", "quick", "--param", f"target={target}")
    assert_usage_error(res, needle)
    # The program says the same by hand.
    res = subprocess.run([str(programs / "cgstat"), "--variant", "held", "--param",
                          f"target={target}"], capture_output=True, text=True, check=False)
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert needle in res.stderr


@pytest.mark.slow
def test_unreadable_target_is_one_line(programs: Path) -> None:
    """As an unprivileged user (root reads anything): the program and the spec's check."""
    assert CONTROLLER is not None
    path = CONTROLLER[0] / f"bakeoff-{os.getpid()}-target"
    path.mkdir()
    try:
        os.chmod(path / "memory.stat", 0)
        nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        res = subprocess.run([*nobody, str(programs / "cgstat"), "--variant", "held",
                              "--param", f"target={path}"], capture_output=True, text=True,
                             check=False)
        assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1, res.stderr
        assert "is not readable" in res.stderr
        # The room's params module, imported as the room's programs import it.
        check = ("import sys; sys.path[:0] = sys.argv[1:3]; "
                 "from cgroup_stat_read.params import check_target; "
                 "print(check_target(sys.argv[3]))")
        res = subprocess.run([*nobody, "/usr/bin/python3", "-c", check, str(REPO / "benchmarks"),
                              str(REPO), str(path)], capture_output=True,
                             text=True, check=False)
        assert res.returncode == 0, res.stderr
        assert "is not readable" in res.stdout and "Permission denied" in res.stdout
    finally:
        path.rmdir()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--variant", "held", "--param", "target=child"], "session"),
        (["--variant", "pread", "--param", "target=root", "--param", "content=bpf-iter"],
         "no offset to pread"),
        (["--variant", "held", "--param", "target=root", "--param", "content=nope"], "nope"),
        (["--variant", "held", "--param", "target=root", "--param", "fields=0"], "fields=0"),
    ],
)
@pytest.mark.slow
def test_program_rejects_bad_arguments(programs: Path, args: list[str], needle: str) -> None:
    res = subprocess.run([str(programs / "cgstat"), *args], capture_output=True, text=True,
                         check=False)
    assert res.returncode == 2, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and needle in res.stderr
    assert res.stdout == ""


@pytest.mark.slow
def test_bad_content_and_fields_are_one_line() -> None:
    assert_usage_error(run_bakeoff("run", NAME, "--param", "content=nope"), "legacy-parse")
    assert_usage_error(run_bakeoff("run", NAME, "--param", "fields=0"), "or all")


# ---- the memcg layout, from BTF alone (memcg_layout.c) -----------------------------------------


def _layout(programs: Path, *btf: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(programs / "cgstat_layout"), *btf], capture_output=True,
                          text=True, check=False)


@pytest.mark.slow
def test_layout_of_this_kernel_places_every_memory_stat_field(programs: Path) -> None:
    """Where the iterator reads each field comes from this kernel's BTF: the layout is known,
    no two items share a slot and every slot is inside its array (exit 1 otherwise), and every
    counter this machine's memory.stat prints has a slot."""
    res = _layout(programs)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].split()[0] == "states" and lines[1].split()[0] == "events"
    assert int(lines[0].split()[1]) > 0 and int(lines[1].split()[1]) > 0
    version = CONTROLLER[1]  # type: ignore[index]
    placed = {f.split()[2] for f in lines if f.startswith(f"field {version} ")
              and not f.endswith(" absent")}
    stat = _memory_stat(CONTROLLER[0])  # type: ignore[index]
    counters = {k.removeprefix("total_") for k in stat
                if k not in ("hierarchical_memory_limit", "hierarchical_memsw_limit", "slab",
                             "pgscan", "pgsteal")}
    assert counters and counters <= placed, sorted(counters - placed)


@pytest.mark.slow
def test_layout_refuses_what_it_does_not_know(programs: Path) -> None:
    # BTF without struct memcg_vmstats (another room's BPF object): unknown layout, exit 3.
    other = build_dir() / "bpf_map_dump" / ".obj" / "dump_reader.bpf.o"
    subprocess.run(["make", "-s", "-C", str(REPO / "benchmarks" / "bpf_map_dump")], check=True)
    res = _layout(programs, str(other))
    assert res.returncode == 3 and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert "memcg_vmstats" in res.stderr and res.stdout == ""
    # Not BTF at all: a bad argument, one line.
    res = _layout(programs, str(ROOM / "cgstat.h"))
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1, res.stderr
