"""The CLI as a user runs it: exit codes, the one-line errors, and what it prints."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, assert_usage_error, run_bakeoff

BENCH = "mremap-vs-memcpy"


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["run", "nosuch"], "benchmark 'nosuch' not found (known: "),
        (["run", BENCH, "--param", "size"], "expected NAME=V1,V2"),
        (["run", BENCH, "--param", "size=5000"], "multiple of the page size"),
        (["run", BENCH, "--param", "size=abc"], "is not a size"),
        (["run", BENCH, "--param", "size=4KiB,"], "empty value"),
        (["run", BENCH, "--param", "size=4KiB,4096"], "listed twice"),
        (["run", BENCH, "--param", "size=4KiB", "--param", "size=8KiB"], "given twice"),
        (["run", BENCH, "--param", "colour=red"], "no selected benchmark has that param"),
        (["run", BENCH, "--param", "size=64GiB"], "choose a smaller size"),
        (["run", BENCH, "--variant", "mmove"], "no selected benchmark has that variant"),
        (["run", BENCH, "--profile", "huge"], "--profile 'huge' is unknown"),
        (["run", BENCH, "--trials", "0"], "--trials must be at least 1"),
        (["run", BENCH, "--trials", "many"], "--trials"),
        (["run", BENCH, "--bogus"], "--bogus"),
        (["run", BENCH, "--profile", "quick", "--out", "/sys/bakeoff-test-out"],
         "cannot write there"),
        (["report", "/nonexistent/bakeoff-results"], "no such results directory"),
        (["frobnicate"], "frobnicate"),
    ],
)
@pytest.mark.slow
def test_bad_input_is_one_line_and_exit_2(args: list[str], needle: str) -> None:
    assert_usage_error(run_bakeoff(*args), needle)


@pytest.mark.slow
def test_out_that_is_a_file_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "afile"
    f.write_text("keep me")
    assert_usage_error(run_bakeoff("run", BENCH, "--profile", "quick", "--out", str(f)),
                       "not a directory")
    assert f.read_text() == "keep me"


@pytest.mark.slow
def test_bad_input_creates_no_results_directory(tmp_path: Path) -> None:
    out = tmp_path / "never"
    assert_usage_error(run_bakeoff("run", BENCH, "--param", "size=5000", "--out", str(out)),
                       "page size")
    assert not out.exists()


@pytest.mark.slow
def test_help_everywhere() -> None:
    for args in ([], ["run"], ["report"], ["list"], ["doctor"]):
        res = run_bakeoff(*args, "--help")
        assert res.returncode == 0, res.stderr
        assert "Usage" in res.stdout


def _imported(*args: str) -> tuple[int, set[str]]:
    """`bakeoff ARGS` under -X importtime: its exit status and the modules it imported."""
    res = subprocess.run([sys.executable, "-X", "importtime", "-m", "bakeoff", *args],
                         capture_output=True, text=True, check=False, timeout=120)
    loaded = {ln.rsplit("|", 1)[1].strip() for ln in res.stderr.splitlines()
              if ln.startswith("import time:")}
    assert len(loaded) > 50, res.stderr[-2000:]  # the timings were read
    return res.returncode, loaded


@pytest.mark.slow(live=False)
def test_a_command_that_analyses_nothing_loads_no_numpy_scipy_or_plotly(tmp_path: Path) -> None:
    """Every bakeoff process imports every command module (docs/ARCHITECTURE.md, "Start-up");
    help and a refused input load none of the libraries the analysis needs, and a report
    loads scipy.special, never scipy.stats (each a large share of a small command's CPU)."""
    heavy = ("numpy", "scipy", "plotly")
    for args in (["--help"], ["report", str(tmp_path / "none")],
                 ["compare", str(tmp_path / "a"), str(tmp_path / "b")], ["bisect", "--help"]):
        code, loaded = _imported(*args)
        assert code in (0, 2), args
        assert not {m for m in loaded if m.split(".")[0] in heavy}, (args, sorted(
            m for m in loaded if m.split(".")[0] in heavy)[:10])
    copy = tmp_path / "run"
    shutil.copytree(FIXTURES / "fleet_runs" / "a", copy)
    code, loaded = _imported("report", str(copy), "-q")
    assert code == 0
    # importlib.import_module (core.lazy) times a package's modules, not the package's line.
    assert any(m.startswith("scipy.special.") for m in loaded)
    assert not any(m.startswith("scipy.stats") for m in loaded)


@pytest.mark.slow(live=False)
def test_list_shows_variants_params_and_whether_each_runs() -> None:
    res = run_bakeoff("list")
    assert res.returncode == 0, res.stderr
    for word in ("mremap-vs-memcpy", "memcpy (baseline)", "memcpy-cold", "mremap-thp",
                 "mremap-dontunmap", "size", "4 KiB", "128 MiB", "runs here?", "allowed"):
        assert word in res.stdout, word
    # What a room's declaration bounds and claims is shown: a trial of more than one CPU.
    flat = " ".join(res.stdout.split())
    from bakeoff.declare import registry
    for bench in registry.discover().values():
        assert (f"a trial claims {bench.cpus} CPUs" in flat) == (bench.cpus > 1), bench.name


@pytest.mark.slow(live=False)
def test_doctor_lists_capabilities_and_facts() -> None:
    res = run_bakeoff("doctor")
    assert res.returncode == 0, res.stderr
    for word in ("root", "bpf", "uprobes", "cgroup_memory", "thp", "perf_counters",
                 "kernel", "clocksource", "loadavg_1m", "virtualisation", "turbo",
                 "busy_processes", "governor", "smt_active", "aslr", "bpf_jit"):
        assert word in res.stdout, word


@pytest.mark.slow
def test_failed_trials_are_recorded_and_the_run_goes_on(tmp_path: Path) -> None:
    env = {"BAKEOFF_BENCHMARKS_DIR": str(FIXTURES / "rooms"),
           "BAKEOFF_BUILD_DIR": str(FIXTURES / "build")}
    out = tmp_path / "run"
    res = run_bakeoff("run", "flaky", "--profile", "quick", "--out", str(out), "--quiet",
                      *[f"--variant={v}" for v in ("crash", "garbage", "hang", "nosamples")],
                      env=env)
    assert res.returncode == 1, res.stderr  # some trials failed: reported, not hidden
    assert "Traceback" not in res.stderr
    data = json.loads((out / "results.json").read_text())
    assert data["status"] == "complete"
    by_variant: dict[str, set[str]] = {}
    errors: dict[str, str] = {}
    for t in data["trials"]:
        by_variant.setdefault(t["case"]["variant"], set()).add(t["status"])
        errors[t["case"]["variant"]] = t["error"] or ""
    assert by_variant == {"good": {"ok"}, "crash": {"failed"}, "garbage": {"failed"},
                          "hang": {"timeout"}, "nosamples": {"failed"}}
    assert "exit status 1: flaky: failed to frobnicate" in errors["crash"]
    assert "protocol error" in errors["garbage"]
    assert "no exit within 2 s" in errors["hang"]
    assert "printed no samples" in errors["nosamples"]
    # Every case ran its two trials: one failure did not stop the others.
    assert len(data["trials"]) == 5 * 2 * 2
    assert "frobnicate" in (out / "details.md").read_text()  # the failures, with their errors
    assert "trial(s) failed" in (out / "report.md").read_text()  # counted among the findings
    # The report regenerates from results.json alone.
    (out / "report.md").unlink()
    res = run_bakeoff("report", str(out), "--quiet", env=env)
    assert res.returncode == 0, res.stderr
    assert (out / "report.md").exists()


@pytest.mark.slow
def test_a_failed_warm_up_trial_is_reported(tmp_path: Path) -> None:
    """Warm-up trials are not measurements, but one that fails must not pass in silence."""
    env = {"BAKEOFF_BENCHMARKS_DIR": str(FIXTURES / "rooms"),
           "BAKEOFF_BUILD_DIR": str(FIXTURES / "build")}
    out = tmp_path / "run"
    res = run_bakeoff("run", "flaky", "--profile", "full", "--variant", "crash", "--param", "n=1",
                      "--out", str(out), "--quiet", env=env)
    assert res.returncode == 1, res.stderr  # the measured trials of crash fail too
    warnings = json.loads((out / "results.json").read_text())["warnings"]
    warm = [w for w in warnings if w.startswith("a warm-up trial of flaky crash")]
    assert len(warm) == 1 and "failed to frobnicate" in warm[0], warnings
    assert "a warm-up trial of flaky crash" in (out / "report.md").read_text()


@pytest.mark.slow(live=False)
def test_a_room_can_add_a_subcommand() -> None:
    env = {"BAKEOFF_BENCHMARKS_DIR": str(FIXTURES / "rooms"),
           "BAKEOFF_BUILD_DIR": str(FIXTURES / "build")}
    res = run_bakeoff("--help", env=env)
    assert "echo-args" in res.stdout and "From flaky: Print the arguments" in res.stdout
    res = run_bakeoff("echo-args", "--", "ls", "--help", "-l", env=env)
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == ["--", "ls", "--help", "-l"]
    assert run_bakeoff("echo-args", "fail", env=env).returncode == 3
    assert_usage_error(run_bakeoff("echo-args", "--bad", env=env), "drop it")
