"""heap-sampling for real: libbakeoff_sampler.so under real programs (also in the tagged
header layout), its exact counts and its estimates against their derived error bounds, small
grids through the harness with the invariants of the method (the A/A check, the tagged
variant never looking up, >= 40 processes behind an error figure), and `bakeoff sample`."""

from __future__ import annotations

import json
import math
import os
import random
import secrets
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import live_runs
import pytest
from scipy.stats import binomtest

from bakeoff.stats import estimates as stats
from conftest import IN_CI, REPO, assert_usage_error, build_dir, counted_output, run_bakeoff

# Its leftover checks count only its own runs' things (a private TMPDIR, processes by
# tests/live_runs.py's marker): not machine-wide, it runs beside other live tests.
ROOM = build_dir() / "heap_sampling"
SAMPLER = ROOM / "libbakeoff_sampler.so"
PATTERNS = ROOM / "alloc_patterns"
BENCH = ROOM / "heap_bench"
SCHEMES = ("NONE", "POISSON", "POISSON_TAGGED", "STATELESS_HASH", "COMBINED")
MIB = 1024 * 1024


@pytest.fixture(scope="module")
def room() -> Path:
    if not all(p.exists() for p in (SAMPLER, PATTERNS, BENCH)):
        subprocess.run(["make", "-C", str(REPO / "benchmarks" / "heap_sampling")], check=True)
    return ROOM


def sampled(cmd: list[str], scheme: str, out: Path, *, mean: int = 4096, timing: bool = False,
            env: dict[str, str] | None = None, cwd: Path | None = None,
            timeout: float = 60) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None]:
    """Runs cmd with the sampler preloaded; returns the result and the summary (None if absent)."""
    full_env = {**os.environ, "LD_PRELOAD": str(SAMPLER), "SAMPLER_SCHEME": scheme,
                "SAMPLER_POISSON_MEAN_BYTES": str(mean), "SAMPLER_TIMING": "1" if timing else "0",
                "SAMPLER_OUTPUT": str(out), **(env or {})}
    res = subprocess.run(cmd, env=full_env, cwd=cwd, capture_output=True, text=True,
                         timeout=timeout, check=False)
    written = out.exists() and not out.is_symlink()
    return res, (json.loads(out.read_text()) if written else None)


def workload_counters(stdout: str) -> dict[str, float]:
    lines = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    return {d["name"]: d["value"] for d in lines if d["type"] == "counter"}


def four_sigma_bytes(mean: int, true_bytes: float) -> float:
    """4 x the bound on the estimator's std: Var <= m * bytes (METHOD.md, 'How accurate')."""
    return 4 * math.sqrt(mean * true_bytes)


def assert_consistent(summary: dict[str, Any], scheme: str) -> None:
    assert summary["scheme"] == scheme
    assert summary["frees"] <= summary["allocations"]
    assert summary["live_bytes"] == summary["allocated_bytes"] - summary["freed_bytes"]
    for prefix in {"POISSON": ["poisson"], "POISSON_TAGGED": ["poisson"],
                   "STATELESS_HASH": ["hash"], "COMBINED": ["poisson", "hash"],
                   "NONE": []}[scheme]:
        assert summary[f"{prefix}_samples"] <= summary["allocations"]
        assert summary[f"{prefix}_sampled_frees"] <= summary[f"{prefix}_samples"]
    assert summary.get("poisson_live_table_insert_failures", 0) == 0
    # The tagged scheme keeps no table: its frees test the header, never look anything up.
    if scheme == "POISSON_TAGGED":
        assert summary["header"] == 1
        assert summary["poisson_table_lookups"] == summary["poisson_live_table_entries"] == 0
    elif "poisson_table_lookups" in summary:
        assert summary["poisson_table_lookups"] == summary["frees"]


# ---- real programs keep working, exit codes unchanged -------------------------------------

@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.slow(live=False)
def test_python_script_runs_and_keeps_its_exit_code(room: Path, tmp_path: Path,
                                                    scheme: str) -> None:
    script = ("import json, sys\n"
              "d = {str(i): [i] * (i % 50) for i in range(20000)}\n"
              "print(len(json.dumps(d)) > 0)\n"
              "sys.exit(3)\n")
    res, summary = sampled([sys.executable, "-c", script], scheme, tmp_path / "s.json")
    assert res.returncode == 3, res.stderr
    assert res.stdout == "True\n"
    assert summary is not None, res.stderr
    assert_consistent(summary, scheme)
    assert summary["allocations"] > 1000
    if scheme != "NONE":
        prefix = "hash" if scheme == "STATELESS_HASH" else "poisson"
        assert summary[f"{prefix}_samples"] > 0


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.slow(live=False)
def test_sort_of_a_generated_file_is_unchanged(room: Path, tmp_path: Path, scheme: str) -> None:
    rng = random.Random(7)
    numbers = [rng.randrange(10**9) for _ in range(50000)]
    data = tmp_path / "numbers.txt"
    data.write_text("".join(f"{n}\n" for n in numbers))
    res, summary = sampled(["sort", "-n", str(data)], scheme, tmp_path / "s.json")
    assert res.returncode == 0, res.stderr
    assert res.stdout == "".join(f"{n}\n" for n in sorted(numbers))
    assert summary is not None and summary["allocations"] > 0
    assert_consistent(summary, scheme)


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.slow(live=False)
def test_git_status_on_a_temp_repo(room: Path, tmp_path: Path, scheme: str) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    ident = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
             "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org",
             "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    env = {**os.environ, **ident}
    for cmd in (["git", "init", "-q"], ["git", "add", "."], ["git", "commit", "-qm", "x"]):
        (repo / "tracked.txt").write_text("hello\n")
        subprocess.run(cmd, cwd=repo, env=env, check=True, capture_output=True)
    (repo / "new.txt").write_text("untracked\n")
    (repo / "tracked.txt").write_text("changed\n")
    res, summary = sampled(["git", "status", "--porcelain"], scheme, tmp_path / "s.json",
                           env=ident, cwd=repo)
    assert res.returncode == 0, res.stderr
    assert sorted(res.stdout.splitlines()) == [" M tracked.txt", "?? new.txt"]
    assert summary is not None and summary["allocations"] > 0
    assert_consistent(summary, scheme)
    # A failing git keeps its status too.
    res, _ = sampled(["git", "status"], scheme, tmp_path / "s2.json", env=ident, cwd=tmp_path)
    assert res.returncode == 128, res.stderr


@pytest.mark.slow(live=False)
def test_exit_status_3_is_kept(room: Path, tmp_path: Path) -> None:
    for scheme in SCHEMES:
        res, _ = sampled(["sh", "-c", "ls / > /dev/null; exit 3"], scheme, tmp_path / "s.json")
        assert res.returncode == 3, res.stderr


# ---- threads, counts, accuracy ------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("scheme", SCHEMES)
def test_eight_threads_churn_a_million_allocations(room: Path, tmp_path: Path,
                                                   scheme: str) -> None:
    """Cross-thread frees included; a deadlock would hit the timeout, a race the counts."""
    res, summary = sampled([str(PATTERNS), "3", "8", "125000", "64", "4096"], scheme,
                           tmp_path / "s.json", timeout=120)
    assert res.returncode == 0, res.stderr
    did = workload_counters(res.stdout)
    assert did["allocations"] == did["frees"] == 1_000_000
    assert summary is not None
    assert_consistent(summary, scheme)
    # glibc callocs each new thread's DTV and frees it when the stack cache drops it: at most
    # one extra allocation per thread, nothing missed.
    assert 0 <= summary["allocations"] - did["allocations"] <= 8
    assert summary["frees"] >= did["frees"]
    assert summary["requested_bytes"] - did["requested_bytes"] <= 8 * 4096
    if "poisson_est_total_bytes" in summary:  # the hash is not held to it: pools reuse addresses
        err = abs(summary["poisson_est_total_bytes"] - summary["allocated_bytes"])
        assert err <= four_sigma_bytes(4096, summary["allocated_bytes"]), summary


@pytest.mark.parametrize("args", [["1", "20000", "64", "4096"],
                                  ["2", "200", "50", "64", "4096", "50"],
                                  ["4", "100", "50", "64", "4096"]])
@pytest.mark.slow
def test_true_counts_equal_what_the_workload_did(room: Path, tmp_path: Path,
                                                 args: list[str]) -> None:
    res, summary = sampled([str(PATTERNS), *args, "--samples", "2", "--warmup", "1"],
                           "COMBINED", tmp_path / "s.json")
    assert res.returncode == 0, res.stderr
    did = workload_counters(res.stdout)
    assert summary is not None
    assert summary["allocations"] == did["allocations"] == summary["malloc_calls"]
    assert summary["frees"] == did["frees"] == summary["free_calls"]
    assert summary["requested_bytes"] == did["requested_bytes"]
    assert summary["live_blocks"] == did["leaked_blocks"]


@pytest.mark.slow
@pytest.mark.parametrize("mean", [4096, 512 * 1024])
def test_poisson_estimates_within_four_sigma_on_mode1(room: Path, tmp_path: Path,
                                                      mean: int) -> None:
    """Var(estimate) <= m * true bytes (METHOD.md); 3 fresh processes, each within 4 sigma."""
    for run in range(3):
        res, s = sampled([str(PATTERNS), "1", "100000", "64", "4096"], "POISSON",
                         tmp_path / f"s{run}.json", mean=mean)
        assert res.returncode == 0, res.stderr
        assert s is not None
        total, live = s["allocated_bytes"], s["live_bytes"]
        assert total > 150 * MIB and live > 5 * MIB  # 100k blocks of ~2 KiB, 5% leaked
        assert abs(s["poisson_est_total_bytes"] - total) <= four_sigma_bytes(mean, total), s
        assert abs(s["poisson_est_live_bytes"] - live) <= four_sigma_bytes(mean, live), s
    if mean == 4096:  # the bound is tight enough to mean something
        assert four_sigma_bytes(mean, total) / total < 0.02


@pytest.mark.slow
def test_address_reuse_makes_the_hash_error_larger(room: Path, tmp_path: Path) -> None:
    """Mode 4: the same 500 addresses reused 200 times. Poisson decides every allocation
    afresh; the hash decides once per address, so its error does not shrink with reuse."""
    poisson, hashed = [], []
    # 40 fresh processes (a few ms each): the heap's random base gives each its own hashes.
    # Measured here over 1,000 processes: sd of the hash's error 3.5%, Poisson's 0.36% (9.6x);
    # with 8 processes the ratio of sample sds fell under 3x about 1 run in 500 (a CI failure).
    for run in range(40):
        res, s = sampled([str(PATTERNS), "4", "500", "200", "64", "4096"], "COMBINED",
                         tmp_path / f"s{run}.json")
        assert res.returncode == 0, res.stderr
        assert s is not None
        assert workload_counters(res.stdout)["address_reuse_pct"] > 95
        poisson.append(s["poisson_total_error_pct"])
        hashed.append(s["hash_total_error_pct"])
    # With 40 each, resampling the 1,000 above never put the ratio under 3x in 20,000 draws.
    assert statistics.stdev(hashed) > 3 * statistics.stdev(poisson), (hashed, poisson)


@pytest.mark.slow
def test_timing_reports_ticks_with_the_floor_beside(room: Path, tmp_path: Path) -> None:
    res, s = sampled([str(PATTERNS), "4", "500", "200", "64", "4096"], "COMBINED",
                     tmp_path / "s.json", timing=True)
    assert res.returncode == 0, res.stderr
    assert s is not None and s["timing"] == 1
    assert 0.5 < s["tsc_ghz"] < 10 and s["timer_floor_ticks"] > 0
    assert "timer" in s["timing_method"]
    for prefix in ("poisson", "hash"):
        for path in ("malloc", "free"):
            assert s[f"{prefix}_{path}_decisions"] > 90_000
            assert s[f"{prefix}_{path}_floor_ticks_per_decision"] > 0
            assert s[f"{prefix}_{path}_ns_per_decision"] == pytest.approx(
                s[f"{prefix}_{path}_ticks_per_decision"] / s["tsc_ghz"])
    # NONE times an empty decision: with the in-place floor subtracted it is ~0 ticks, within
    # the noise its own pairs show (a busy CPU's short interruptions land in either pair).
    res, s = sampled([str(PATTERNS), "4", "500", "200", "64", "4096"], "NONE",
                     tmp_path / "n.json", timing=True)
    assert s is not None
    for path in ("malloc", "free"):
        se = s[f"none_{path}_ticks_per_decision_se"]
        assert 0 <= se < 100, s
        assert abs(s[f"none_{path}_ticks_per_decision"]) < 10 + 4 * se, s


# ---- the summary file, the environment ----------------------------------------------------

@pytest.mark.slow
def test_summary_never_follows_a_symlink(room: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    link = tmp_path / "summary.json"
    link.symlink_to(victim)
    res, _ = sampled([str(PATTERNS), "1", "1000", "64", "128"], "POISSON", link)
    assert res.returncode == 0
    assert victim.read_text() == "precious\n"
    assert link.is_symlink()
    warnings = [line for line in res.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "symbolic link" in warnings[0], res.stderr
    assert '"scheme":"POISSON"' in res.stderr  # the summary went to stderr instead


@pytest.mark.slow
def test_nonsense_environment_falls_back_with_one_warning_each(room: Path,
                                                               tmp_path: Path) -> None:
    env = {"SAMPLER_TIMING": "yes", "SAMPLER_POISSON_MEAN_BYTES": "-5"}
    res, s = sampled(["sh", "-c", f"{PATTERNS} 1 1000 64 128 > /dev/null; "
                      f"{PATTERNS} 1 1000 64 128"], "BOGUS", tmp_path / "s.json", env=env)
    assert res.returncode == 0, res.stderr
    warnings = [line for line in res.stderr.splitlines() if "warning" in line]
    # One each, from the process started; its children fall back silently.
    assert len(warnings) == 3, res.stderr
    assert sum("SAMPLER_SCHEME='BOGUS'" in w and "using NONE" in w for w in warnings) == 1
    assert sum("SAMPLER_TIMING='yes'" in w for w in warnings) == 1
    assert sum("SAMPLER_POISSON_MEAN_BYTES='-5'" in w and "4096" in w for w in warnings) == 1
    # The children (sh is the root; it ends with _exit, so no summary of its own), and a
    # direct run confirms the fallbacks themselves.
    res, s = sampled([str(PATTERNS), "1", "1000", "64", "128"], "BOGUS", tmp_path / "d.json",
                     env={"SAMPLER_POISSON_MEAN_BYTES": "0x10"})
    assert res.returncode == 0 and s is not None
    assert s["scheme"] == "NONE" and s["mean_bytes"] == 4096 and s["timing"] == 0


# ---- bakeoff sample ------------------------------------------------------------------------

@pytest.mark.slow
def test_bakeoff_sample_runs_a_program_and_prints_its_summary(room: Path,
                                                              tmp_path: Path) -> None:
    saved, tmpdir = tmp_path / "summary.json", live_runs.private_tmp(tmp_path)
    res = run_bakeoff("sample", "--scheme", "combined", "--mean", "4KiB", "--timing",
                      "--json", str(saved), "--", sys.executable, "-c",
                      "import sys; x = [bytes(i % 3000) for i in range(20000)]; "
                      "print('out'); sys.exit(5)", env={"TMPDIR": str(tmpdir)})
    assert res.returncode == 5, res.stderr
    assert res.stdout == "out\n"  # the program's stdout is untouched
    assert "heap sampling of" in res.stderr and "Poisson:" in res.stderr
    assert "stateless hash:" in res.stderr and "decision cost" in res.stderr
    summary = json.loads(saved.read_text())
    assert summary["scheme"] == "COMBINED" and summary["mean_bytes"] == 4096
    assert summary["allocations"] > 10000  # bytes below 512 B come from pymalloc's arenas
    assert not any(tmpdir.iterdir()), list(tmpdir.iterdir())


@pytest.mark.slow
def test_bakeoff_sample_without_separator_and_exit_status(room: Path) -> None:
    res = run_bakeoff("sample", "--scheme", "poisson", str(PATTERNS), "1", "2000", "64", "4096")
    assert res.returncode == 0, res.stderr
    assert "Poisson:" in res.stderr and "stateless hash" not in res.stderr
    res = run_bakeoff("sample", "--", "/nonexistent/program")
    assert res.returncode == 127 and "not found" in res.stderr


@pytest.mark.parametrize(("argv", "needle"), [
    (["sample", "--scheme", "bogus", "--", "true"], "--scheme bogus"),
    (["sample", "--mean", "lots", "--", "true"], "--mean"),
    (["sample", "--mean", "0", "--", "true"], "--mean"),
    (["sample", "--frobnicate", "--", "true"], "unknown option --frobnicate"),
    (["sample", "--scheme"], "needs a value"),
    (["sample", "--"], "no command"),
])
@pytest.mark.slow
def test_bakeoff_sample_bad_flags_are_one_line(argv: list[str], needle: str) -> None:
    assert_usage_error(run_bakeoff(*argv), needle)


# ---- the programs by hand, bad input ------------------------------------------------------

@pytest.mark.slow
def test_bad_params_are_one_line_exit_2(room: Path) -> None:
    res = subprocess.run([str(BENCH), "--variant", "poisson", "--param", "workload=mode9"],
                         capture_output=True, text=True, check=False)
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1, res.stderr
    res = subprocess.run([str(PATTERNS), "2", "10", "10", "64", "32", "50"],
                         capture_output=True, text=True, check=False)
    assert res.returncode == 2 and "min <= max" in res.stderr
    assert_usage_error(run_bakeoff("run", "heap-sampling", "--param", "workload=bogus"),
                       "--param workload=bogus")
    assert_usage_error(run_bakeoff("run", "heap-sampling", "--param", "scale=0"), "scale")


def ours(tmpdir: Path) -> set[Path]:
    """Temp dirs of heap_bench trials (bakeoff-<pid>-heap-XXXXXX) in a test's own TMPDIR."""
    return set(tmpdir.glob("bakeoff-*-heap-*"))


@pytest.mark.slow
def test_sigterm_mid_trial_removes_the_temp_dir(room: Path, tmp_path: Path) -> None:
    tmpdir, tag = live_runs.private_tmp(tmp_path), secrets.token_hex(6)
    proc = subprocess.Popen([str(BENCH), "--variant", "poisson", "--param", "workload=mode4",
                             "--param", "scale=1", "--samples", "3"],
                            env={**os.environ, "TMPDIR": str(tmpdir), live_runs.MARKER: tag},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    while not ours(tmpdir) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert ours(tmpdir), "the trial never made its temp dir"
    time.sleep(0.3)  # a child is running now
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=10)
    assert proc.returncode == 128 + signal.SIGTERM
    assert not any(tmpdir.iterdir())
    assert live_runs.settled(tag) == []


def _accuracy_runs_at_once(tmp_path: Path, trial_cpus: tuple[int, ...] = ()
                           ) -> tuple[subprocess.Popen[str], Path, str, list[live_runs.Proc]]:
    """A mode-1 trial whose accuracy runs (untimed, as many at once as it has CPUs) are under
    way: the trial, its TMPDIR, its tag and the alloc_patterns processes it runs. With
    trial_cpus, started as the harness starts a pinned trial: on the first of them, told
    them all in BAKEOFF_TRIAL_CPUS."""
    tmpdir, tag = live_runs.private_tmp(tmp_path), secrets.token_hex(6)
    env = {**os.environ, "TMPDIR": str(tmpdir), live_runs.MARKER: tag}
    env.pop("BAKEOFF_TRIAL_CPUS", None)
    if trial_cpus:
        env["BAKEOFF_TRIAL_CPUS"] = ",".join(map(str, trial_cpus))
    proc = subprocess.Popen([str(BENCH), "--variant", "poisson", "--param", "workload=mode1",
                             "--param", "scale=0.3", "--param", "accuracy_runs=8",
                             "--samples", "1", "--warmup", "0"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=(lambda: os.sched_setaffinity(0, trial_cpus[:1]))
                            if trial_cpus else None)
    deadline, children = time.monotonic() + 30, []
    while len(children) < 2 and time.monotonic() < deadline:
        children = [p for p in live_runs.marked([tag])[tag]
                    if p.comm == "alloc_patterns" and "SAMPLER_COUNT=1" in p.env]
        time.sleep(0.02)
    return proc, tmpdir, tag, children


@pytest.mark.slow
def test_accuracy_runs_two_at_once_and_sigterm_leaves_none(room: Path, tmp_path: Path) -> None:
    """A trial the run pinned to CPU 1 of the two it claimed (1, 0) runs two accuracy runs at
    once (they are untimed), one on each CPU; SIGTERM then kills and reaps both and removes
    the temp dir."""
    assert len(os.sched_getaffinity(0)) >= 2, "this machine kind has 2 CPUs"
    proc, tmpdir, tag, children = _accuracy_runs_at_once(tmp_path, (1, 0))
    assert len(children) == 2, f"accuracy runs at once: {children}"
    assert {p.ppid for p in children} == {proc.pid}
    assert sorted(tuple(os.sched_getaffinity(p.pid)) for p in children) == [(0,), (1,)]
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=10)
    assert proc.returncode == 128 + signal.SIGTERM
    assert live_runs.settled(tag) == []
    assert not any(tmpdir.iterdir())


@pytest.mark.slow
def test_one_accuracy_run_failing_stops_the_other(room: Path, tmp_path: Path) -> None:
    """An accuracy run killed from outside fails the trial with one line naming it, and the
    run beside it does not outlive the trial."""
    proc, tmpdir, tag, children = _accuracy_runs_at_once(tmp_path)
    assert len(children) == 2, f"accuracy runs at once: {children}"
    os.kill(min(p.pid for p in children), signal.SIGKILL)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 1, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("heap_bench: failed to run alloc_patterns ")
    assert lines[0].endswith(" under POISSON: signal 9"), err
    assert live_runs.settled(tag) == []
    assert not any(tmpdir.iterdir())


@pytest.mark.slow
def test_sigint_mid_run_leaves_nothing(room: Path, tmp_path: Path) -> None:
    tmpdir = live_runs.private_tmp(tmp_path)
    run = live_runs.LiveRun(tmp_path / "run", ["heap-sampling", "--variant", "poisson",
                                               "--param", "workload=mode4", "--param",
                                               "scale=1", "--trials", "3"],
                            tmpdir=tmpdir).start()
    deadline = time.monotonic() + 60
    while not ours(tmpdir) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert ours(tmpdir), "no trial got going"
    time.sleep(0.5)  # alloc_patterns is running under the sampler now
    os.kill(run.pid, signal.SIGINT)
    assert run.wait(timeout=60) == 130, run.transcript()
    assert "Traceback" not in run.stderr
    assert live_runs.leftovers(run) == []


# ---- small grids through the harness -----------------------------------------------------

@pytest.fixture(scope="module")
def quick_run(room: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    top = tmp_path_factory.mktemp("heap")
    run = live_runs.LiveRun(top / "run", ["heap-sampling", "--profile", "quick", "--seed", "1"],
                            tmpdir=live_runs.private_tmp(top)).start()
    assert run.wait() == 0, run.transcript()
    assert live_runs.leftovers(run) == []
    out = run.out
    assert (out / "report.html").is_file() and (out / "report.md").is_file()
    data: dict[str, Any] = json.loads((out / "results.json").read_text())
    data["_report_md"] = (out / "report.md").read_text()
    data["_details_md"] = (out / "details.md").read_text()
    return data


def _trials(data: dict[str, Any], variant: str, workload: str) -> list[dict[str, Any]]:
    return [t for t in data["trials"] if t["case"]["variant"] == variant
            and t["case"]["params"]["workload"] == workload]


def _values(trials: list[dict[str, Any]], metric: str) -> list[float]:
    return [v for t in trials for v in t["samples"].get(metric, [])]


VARIANTS = ("no-preload", "none", "poisson", "poisson-tagged", "stateless-hash", "hash-equal-p")
SAMPLING = ("poisson", "poisson-tagged", "stateless-hash", "hash-equal-p")
# The modes' cost decomposition: each a difference of two runs of one round.
DECOMPOSITION = ("decide_ns_per_alloc", "live_heap_ns_per_alloc", "interposer_ns_per_alloc",
                 "bookkeeping_ns_per_alloc")


@pytest.mark.slow
def test_quick_profile_measures_every_case(quick_run: dict[str, Any]) -> None:
    assert quick_run["status"] == "complete"
    assert all(t["status"] == "ok" for t in quick_run["trials"]), [
        t["error"] for t in quick_run["trials"] if t["status"] != "ok"]
    assert len(quick_run["trials"]) == len(VARIANTS) * 5 * 3
    for t in quick_run["trials"]:
        assert len(t["samples"]["ns_per_alloc"]) == 3
        assert all(v > 0 for v in t["samples"]["ns_per_alloc"])
        # Every variant but the baseline is paired, sample for sample, with NONE, and its
        # cost decomposed: by path in the micro, by the runs of a round in the modes; the
        # inline workloads time the decision alone (malloc + decision + free batches).
        workload = t["case"]["params"]["workload"]
        parts = (DECOMPOSITION if workload.startswith("mode") else
                 ("decide_ns_per_alloc",) if workload.startswith("inline") else
                 ("decide_ns_per_alloc", "live_heap_ns_per_alloc"))
        if workload.startswith("inline"):
            assert "added_ns_per_alloc" not in t["samples"], t
        else:
            parts = ("added_ns_per_alloc", *parts)
        for metric in parts:
            paired = len(t["samples"].get(metric, []))
            assert paired == (0 if t["case"]["variant"] == "no-preload" else 3), (metric, t)
    report = quick_run["_details_md"]
    # The details lead with the decision's cost; errors are ranked by |value| with bias and
    # RMS.
    assert (report.index("### Cases: decide_ns_per_alloc")
            < report.index("### Cases: live_heap_ns_per_alloc")
            < report.index("### Cases: added_ns_per_alloc")
            < report.index("### Cases: ns_per_alloc"))
    assert "### Cases: hash_total_error_pct (%, closer to zero is better" in report
    assert "bias: mean signed (95% CI)" in report and "RMS (95% CI)" in report


@pytest.mark.slow
def test_none_against_none_adds_nothing(quick_run: dict[str, Any]) -> None:
    """The A/A check: NONE paired with itself. The micro runs the same code on both sides,
    so only noise separates them. The modes' rounds time NONE as the sampler ships it
    against NONE through the cost parts' lean dispatch (the reference every part is
    measured against), which skips two tests of the configuration per call: a real but
    small difference, about +1 ns of 40 per allocation at mode4 (8 of 9 pairs positive in
    each of two quick runs, AMD EPYC, idle), so a sign test there fails a right program.
    There the check is that the dispatch costs a small share of the allocation."""
    # The micro's pairs are a few µs each, too short for a preemption to land in often. Its
    # added cost is 0 within the report's own CI (stats.median_ci over the trials, at 99.9%
    # so a right program fails about once in 1000 runs; on the linear scale: a difference
    # that may be 0), not within a fixed 0.2 ns: a fixed bound tests the machine (0.57 ns
    # seen in a make test on a busy machine).
    micro_trials = [t["samples"]["added_ns_per_alloc"]
                    for t in _trials(quick_run, "none", "micro-64")]
    ci = stats.median_ci(micro_trials, confidence=0.999, log=False)
    # Or, where the trials agree so closely that the CI is a sliver, within ±0.2 ns of 0.
    assert ci.low <= 0 <= ci.high or max(-ci.low, ci.high) < 0.2, (ci, micro_trials)
    for workload in ("mode2", "mode4"):
        added = _values(_trials(quick_run, "none", workload), "added_ns_per_alloc")
        per_alloc = statistics.median(_values(_trials(quick_run, "none", workload),
                                              "ns_per_alloc"))
        assert len([a for a in added if a != 0]) >= 9, (workload, added)
        # A preemption inflates one side of a pair by tens of ns, either side alike, so
        # single pairs stray (seen: +25 ns of 40); their median does not. A sampler that
        # did a scheme's work under NONE would add more than a tenth (a Poisson decision
        # alone is a few ns; its table insert tens), steadily. On a busy machine the pairs
        # spread by hundreds of ns either way (seen: -277 to +268 ns, median +92, against
        # 750 ns an allocation), so the bound also scales with their spread: the median
        # within 4 of its standard errors (from the pairs' MAD) of 0.
        assert abs(statistics.median(added)) < max(0.1 * per_alloc, 4 * _median_se(added)), \
            (workload, added, per_alloc)


def _median_se(values: list[float]) -> float:
    """The standard error of a median, from the values' MAD (normal-consistent) and the
    median's asymptotic efficiency (sqrt(pi/2)): robust to the single strays a preemption
    makes."""
    median = statistics.median(values)
    mad = statistics.median(abs(v - median) for v in values) * 1.4826
    return 1.2533 * mad / len(values) ** 0.5


def _not_below_zero(values: list[float]) -> bool:
    """A cost part is not shown to be negative: a one-sided sign test does not reject
    'as many above zero as below' in favour of 'mostly below' at p = 0.005 (every one of 9
    below is p = 0.002). Noise on a busy machine moves single values either way; a sign
    error or a part timed against the wrong run puts nearly all of them below."""
    nonzero = [v for v in values if v != 0]
    above = sum(v > 0 for v in nonzero)
    return binomtest(above, len(nonzero), alternative="less").pvalue > 0.005


@pytest.mark.slow
def test_decomposition_adds_up_to_the_added_cost(quick_run: dict[str, Any]) -> None:
    """Per round: decide + live heap + bookkeeping = added (modes), decide + live heap =
    added (micro: the malloc path and the free path of the same batches); the parts come
    from the runs of one round, not from different rounds."""
    for t in quick_run["trials"]:
        # The inline workloads time the decision alone: nothing to decompose.
        if t["case"]["variant"] == "no-preload" or \
                t["case"]["params"]["workload"].startswith("inline"):
            continue
        got = t["samples"]
        modes = t["case"]["params"]["workload"].startswith("mode")
        for i, added in enumerate(got["added_ns_per_alloc"]):
            total = got["decide_ns_per_alloc"][i] + got["live_heap_ns_per_alloc"][i]
            if modes:
                total += got["bookkeeping_ns_per_alloc"][i]
            assert math.isclose(total, added, rel_tol=1e-9, abs_tol=1e-9), (t["case"], i)


@pytest.mark.slow
def test_none_decides_and_tracks_nothing(quick_run: dict[str, Any]) -> None:
    """NONE's decision and live-heap parts compare identical code (the decision run and the
    reference are NONE through the same dispatch; NONE tracks nothing on free), so each is
    zero within its noise: a two-sided sign test, as the A/A check of the added cost."""
    for metric in ("decide_ns_per_alloc", "live_heap_ns_per_alloc"):
        # The micro's batches are a few µs, too short for a preemption to land in often
        # (one that does moves a value by ~1 ns: the median stays).
        micro = _values(_trials(quick_run, "none", "micro-64"), metric)
        assert abs(statistics.median(micro)) < 0.2, (metric, micro)
    for workload in ("mode2", "mode4"):
        trials = _trials(quick_run, "none", workload)
        per_alloc = statistics.median(_values(trials, "ns_per_alloc"))
        for metric in ("decide_ns_per_alloc", "live_heap_ns_per_alloc"):
            values = _values(trials, metric)
            nonzero = [v for v in values if v != 0]
            assert len(nonzero) >= 9, (workload, metric, values)  # whole runs never tie
            positive = sum(v > 0 for v in nonzero)
            p = binomtest(positive, len(nonzero)).pvalue
            assert p > 0.005, (workload, metric, f"{positive} of {len(nonzero)} > 0", values)
            assert abs(statistics.median(values)) < 0.5 * per_alloc, (workload, metric, values)


@pytest.mark.slow
def test_decomposition_parts_are_not_negative(quick_run: dict[str, Any]) -> None:
    """Each part is work added, so none may come out below zero beyond its noise: the
    decision and the tracking of every scheme, and the interposer under every variant."""
    for workload in ("mode2", "mode4"):
        for variant in SAMPLING:
            trials = _trials(quick_run, variant, workload)
            for metric in ("decide_ns_per_alloc", "live_heap_ns_per_alloc"):
                assert _not_below_zero(_values(trials, metric)), (workload, variant, metric)
        for variant in ("none", *SAMPLING):
            values = _values(_trials(quick_run, variant, workload), "interposer_ns_per_alloc")
            assert _not_below_zero(values), (workload, variant, values)


@pytest.mark.slow
def test_quick_profile_counts_and_estimates(quick_run: dict[str, Any]) -> None:
    for workload in ("mode2", "mode4"):
        for variant in ("poisson", "poisson-tagged", "stateless-hash", "hash-equal-p"):
            for t in _trials(quick_run, variant, workload):
                c = t["counters"]
                assert c["untracked_allocations"] == 0, t  # alloc_patterns allocates nothing else
                assert c["accuracy_processes"] == 4  # the quick profile's accuracy_runs
                prefix = "hash" if "hash" in variant else "poisson"
                errors = t["samples"][f"{prefix}_total_error_pct"]
                assert len(errors) == 4  # one per process
                if prefix == "poisson":
                    # Independent decisions: each process within 4 sigma of its own bound.
                    bound = 4 * c["poisson_total_error_sigma_bound_pct"]
                    assert all(abs(e) <= bound for e in errors), (errors, bound)
                    assert c["poisson_independent_decisions"] == c["poisson_samples"]
                    # The integrated variant tags; the LD_PRELOAD one looks up every free.
                    lookups = c["poisson_table_lookups_per_free"]
                    assert lookups == (0 if variant == "poisson-tagged" else 1), t
                else:
                    assert 0 < c["hash_independent_decisions"] <= c["hash_samples"]
        for t in _trials(quick_run, "no-preload", workload):
            assert "poisson_total_error_pct" not in t["samples"]
            assert "added_ns_per_alloc" not in t["samples"]


@pytest.mark.slow
def test_inline_decisions_sample_at_their_rates(quick_run: dict[str, Any]) -> None:
    """The inline workloads decide on the class of the request (64 B: 72 usable bytes;
    4096 B: 4104) at the seed's 4 KiB mean: Poisson samples 1 - exp(-u/m) of the blocks
    (1.7%, 63%), the hash min(1, u/m) (1.8%, every block, without hashing); and the cost of
    Poisson's sample work shows: at 4 KiB its decision costs more than the hash's, whose
    test returns at its first compare (measured together, in one run: a ratio, not a
    bound on time)."""
    def counter(variant: str, workload: str, name: str) -> float:
        return statistics.median(t["counters"][name]
                                 for t in _trials(quick_run, variant, workload))
    assert counter("poisson", "inline-4096", "sampled_pct") == pytest.approx(
        100 * (1 - math.exp(-4104 / 4096)), abs=1.0)
    assert counter("stateless-hash", "inline-4096", "sampled_pct") == 100
    assert counter("stateless-hash", "inline-4096", "hash_hashes") == 0
    assert counter("poisson", "inline-64", "sampled_pct") == pytest.approx(
        100 * (1 - math.exp(-72 / 4096)), abs=0.3)
    decide = {v: statistics.median(_values(_trials(quick_run, v, "inline-4096"),
                                           "decide_ns_per_alloc"))
              for v in ("poisson", "stateless-hash")}
    assert decide["poisson"] > decide["stateless-hash"], decide


@pytest.mark.slow
def test_equal_p_hash_samples_as_often_as_poisson(quick_run: dict[str, Any]) -> None:
    """hash-equal-p raises the hash's mean so both schemes take as many samples (mode 2:
    sizes uniform in 64..4096; at m = 4 KiB the plain hash takes ~36% more)."""
    prefix = {"poisson": "poisson", "stateless-hash": "hash", "hash-equal-p": "hash"}
    pct = {v: statistics.median(t["counters"][f"{p}_sampled_pct"]
                                for t in _trials(quick_run, v, "mode2"))
           for v, p in prefix.items()}
    assert pct["hash-equal-p"] == pytest.approx(pct["poisson"], rel=0.05), pct
    assert pct["stateless-hash"] > 1.2 * pct["poisson"], pct


@pytest.mark.slow
def test_micro_splits_the_test_from_the_sample_work(room: Path, tmp_path: Path) -> None:
    """micro-4096 at m = 4 KiB: the plain hash never hashes (u >= m); Poisson's per-sample
    work (log, expm1, table) is many times its decrement; tagging makes the free path cheaper
    than the table's lookup and delete. Each figure is its least of 2 trials x 3 samples:
    other work only adds ticks, and it added them unevenly (a suite beside this run read
    Poisson's decrement at 41 ticks where it reads 12 idle, its sample work at 121 as
    idle). One retake, said, when an ordering does not hold."""
    def attempt(out: Path) -> list[str]:
        res = run_bakeoff("run", "heap-sampling", "--param", "workload=micro-4096",
                          "--param", "mean=4KiB", "--variant", "poisson", "--variant",
                          "poisson-tagged", "--variant", "stateless-hash", "--variant",
                          "hash-equal-p", "--trials", "2", "--samples", "3", "--out",
                          str(out), "--quiet")
        assert res.returncode == 0, res.stdout + res.stderr
        data = json.loads((out / "results.json").read_text())

        def least(variant: str, metric: str) -> float:
            return min(_values(_trials(data, variant, "micro-4096"), metric))

        hashes = {v: {t["counters"]["hash_hashes"] for t in _trials(data, v, "micro-4096")}
                  for v in ("stateless-hash", "hash-equal-p")}
        assert hashes == {"stateless-hash": {0}, "hash-equal-p": {1}}  # counts, not times
        work = least("poisson", "ticks_per_sample_work")
        checks = {
            "Poisson's sample work > 3x its test":
                work > 3 * least("poisson", "ticks_per_test"),
            "Poisson's sample work > 3x the hash's": work > 3 * least(
                "stateless-hash", "ticks_per_sample_work"),
            "tagged free < Poisson's free": least("poisson-tagged", "ticks_per_decision_free")
                < least("poisson", "ticks_per_decision_free"),
        }
        return [name for name, held in checks.items() if not held]

    missed = attempt(tmp_path / "micro")
    if missed:
        print(f"retaken: {missed} did not hold in the first run")
        missed = attempt(tmp_path / "micro-again")
    assert not missed, missed


@pytest.mark.slow
def test_errors_come_from_forty_processes_and_reuse_hurts_the_hash(room: Path,
                                                                   tmp_path: Path) -> None:
    """5 trials x 8 processes (--param accuracy_runs=8, as the full profile): 40 independent
    estimates per case, enough for p5/p95. Mode 4 reuses 500 addresses: the hash decides once
    per (address, size), so its error is far larger than Poisson's and its independent
    decisions far fewer than its samples."""
    out = tmp_path / "acc"
    res = run_bakeoff("run", "heap-sampling", "--param", "workload=mode4", "--param",
                      "mean=4KiB", "--param", "scale=0.002", "--param", "accuracy_runs=8",
                      "--variant", "poisson",
                      "--variant", "stateless-hash", "--trials", "5", "--samples", "1",
                      "--out", str(out), "--quiet")
    assert res.returncode == 0, res.stdout + res.stderr
    data = json.loads((out / "results.json").read_text())
    poisson = _values(_trials(data, "poisson", "mode4"), "poisson_total_error_pct")
    hashed = _values(_trials(data, "stateless-hash", "mode4"), "hash_total_error_pct")
    assert len(poisson) == len(hashed) == 40
    rms = {k: math.sqrt(statistics.fmean(e * e for e in v))
           for k, v in (("poisson", poisson), ("hash", hashed))}
    assert rms["hash"] > 3 * rms["poisson"], rms
    for t in _trials(data, "stateless-hash", "mode4"):
        assert t["counters"]["hash_independent_decisions"] < 0.05 * t["counters"]["hash_samples"]
    report = (out / "details.md").read_text()
    row = next(line for line in report.splitlines()
               if line.startswith("| stateless-hash |") and "40 / 5" in line)
    assert "< 20" not in row  # 40 values: the quantiles are shown


# ---- counted samples: what the kernel does per allocation ------------------------------------


def _counted_run(room: Path, variant: str, workload: str) -> tuple[dict[str, Any],
                                                                   dict[str, list[float]],
                                                                   dict[str, float]]:
    res = subprocess.run([str(room / "heap_bench"), "--variant", variant, "--param",
                          f"workload={workload}", "--param", "scale=0.005", "--samples", "2",
                          "--counted-samples", "2"],
                         capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    # modes: the counters are opened at alloc_patterns' first counted run
    return counted_output(res.stdout)


@pytest.mark.slow
@pytest.mark.parametrize("workload", ["micro-64", "mode4"])
@pytest.mark.parametrize("variant", ["no-preload", "poisson", "poisson-tagged", "stateless-hash"])
def test_counted_samples_show_no_kernel_work_per_allocation(room: Path, variant: str,
                                                            workload: str) -> None:
    """A sampling decision is user-space work: after the warm-up, neither the decisions
    (micro) nor the sampler in a warm heap (mode 4: the same slots round after round) make a
    system call for memory or fault a page, per allocation; so the differences in time
    between the variants are CPU work alone, which this PMU-less VM cannot count."""
    meta, values, counters = _counted_run(room, variant, workload)
    paired = variant != "no-preload"
    # The measured samples as asked, the counted ones after them, each with its counters.
    assert len(values["ns_per_alloc"]) == 2 and len(values["counted.ns_per_alloc"]) == 2
    assert len(values.get("added_ns_per_alloc", [])) == (2 if paired else 0)
    assert len(values.get("counted.added_ns_per_alloc", [])) == (2 if paired else 0)
    opened = meta["counters"].split(",")
    assert "page_faults_minor" in opened
    for name in opened:
        assert len(values[f"per_op.{name}"]) == 2, name
    if workload == "micro-64":
        assert values["per_op.page_faults_minor"] == [0, 0]
    else:
        # The accuracy processes are not counted: the sampler still sees exactly the
        # pattern's allocations (its counted run does not leak into them).
        if variant != "no-preload":
            assert counters["untracked_allocations"] == 0
        # Fewer than one fault per 100 allocations: the heap was faulted in by the warm-up.
        assert all(f < 0.01 for f in values["per_op.page_faults_minor"])
    if "syscalls.sys_enter_mmap" not in opened:
        assert not IN_CI, meta["counters_absent"]
        return
    for call in ("mmap",):
        assert values[f"per_op.syscalls.sys_enter_{call}"] == [0, 0], call
    assert all(b < 0.001 for b in values["per_op.syscalls.sys_enter_brk"])
