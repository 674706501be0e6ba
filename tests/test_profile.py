"""`bakeoff profile`: real runs re-run under real perf, folded, drawn, and nothing left behind."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from bakeoff.machine import host as hostmod
from bakeoff.perf import flamegraph
from bakeoff.perf import store as profile_store
from browser import Browser
from conftest import (
    IN_CI,
    REPO,
    assert_usage_error,
    marked_env,
    marked_processes,
    run_bakeoff,
)

MIB16 = 16 * 1024 * 1024


@pytest.fixture(scope="module")
def mremap_run(built: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """mremap against its baseline memcpy at 16 MiB, two trials each: a few seconds."""
    out = tmp_path_factory.mktemp("profile") / "run"
    res = run_bakeoff("run", "mremap-vs-memcpy", "--profile", "quick", "--variant", "mremap",
                      "--param", "size=16MiB", "--trials", "2", "--out", str(out), "--seed", "3",
                      "-q")
    assert res.returncode == 0, res.stdout + res.stderr
    return out


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _scratch_of(pid: int) -> list[Path]:
    return list(Path(tempfile.gettempdir()).glob(f"bakeoff-{pid}-*"))


def _profile(run_dir: Path, case: str, marker: str, *extra: str,
             ) -> tuple[subprocess.CompletedProcess[str], int]:
    """`bakeoff profile` as a user starts it; returns the result and its PID."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "bakeoff", "profile", str(run_dir), "--case", case, *extra],
        cwd=REPO, env=marked_env(marker), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    out, err = proc.communicate(timeout=300)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), proc.pid


def _frames(folded: flamegraph.Folded) -> set[str]:
    return {frame for stack in folded for frame in stack}


@pytest.fixture(scope="module")
def profiled(mremap_run: Path) -> Path:
    """The mremap case profiled once, four seconds of samples per case. The move is a thin
    slice of an mremap trial (the page faults that fill each source are the rest): four
    half-second profiles on an idle machine (2026-11-26) held 1, 2, 1 and 4 samples of it,
    and one in a CI run that day held none; two four-second ones held 15 of 25,691 and 12 of 20,147
    (about 0.06%), where none at all has odds near 1e-6."""
    results = _digest(mremap_run / "results.json")
    res, pid = _profile(mremap_run, "variant=mremap,size=16MiB", "profile-ok",
                        "--seconds", "4")
    assert res.returncode == 0, res.stdout + res.stderr
    # The run's record is untouched: a profile is not a measurement.
    assert _digest(mremap_run / "results.json") == results
    # Nothing of it is left: no perf, no trial, no scratch directory, no perf.data.
    assert marked_processes("profile-ok") == []
    assert _scratch_of(pid) == []
    return mremap_run


def test_the_mremap_profile_shows_the_move_and_the_baseline_the_copy(profiled: Path) -> None:
    [loaded] = profile_store.load(profiled)
    pair = loaded.pair
    assert pair.case.case.variant == "mremap" and pair.case.case.param("size") == MIB16
    assert pair.baseline is not None and pair.baseline.case.variant == "memcpy"
    assert pair.baseline.case.params == pair.case.case.params
    assert loaded.baseline is not None
    mremap_frames, memcpy_frames = _frames(loaded.case), _frames(loaded.baseline)
    # The system call's kernel side, symbolised (__do_sys_mremap, do_mremap, move_vma...).
    assert any("mremap" in f and f.endswith("[kernel]") for f in mremap_frames), \
        sorted(mremap_frames)[:60]
    assert not any("mremap" in f and f.endswith("[kernel]") for f in memcpy_frames)
    # The copy: glibc's memmove (a leaf), or the program's own frame around it.
    copy = [f for f in memcpy_frames if re.search(r"mem(cpy|move)", f)]
    assert copy, sorted(memcpy_frames)[:60]
    copy_share = sum(v for s, v in loaded.baseline.items() if any(f in copy for f in s)) \
        / sum(loaded.baseline.values())
    assert copy_share > 0.3, copy_share  # the copy is most of what a hot memcpy trial does
    # User frames are walked (frame pointers): the program's main is under its process.
    assert any(s[:1] == ("mremap_bench [process]",) and "main [mremap_bench]" in s
               for s in loaded.case)
    # The room repeats each move under a profile (--profile-repeat), so the move, not the
    # faults that fill its source, is most of the samples; the hot copy needs no repeat.
    assert pair.case.repeat == 10_000 and pair.baseline.repeat == 1
    assert pair.case.timed_frames == ("*sys_mremap",)
    assert pair.case.timed_share is not None and pair.case.timed_share >= 0.5, pair.case
    assert pair.baseline.timed_share is not None and pair.baseline.timed_share >= 0.5
    assert pair.case.timed_period == flamegraph.matching_period(loaded.case, ("*sys_mremap",))
    # What the index says is what the files hold.
    assert pair.case.period == sum(loaded.case.values()) > 0
    assert pair.case.samples > 0 and pair.case.trials >= 1
    assert pair.event in ("cpu-clock", "cycles")
    if not hostmod.capabilities()["perf_counters"].available:
        assert pair.event == "cpu-clock"


def test_the_differential_has_both_profiles(profiled: Path) -> None:
    [loaded] = profile_store.load(profiled)
    assert loaded.baseline is not None
    # Every frame (min_share=0): the mremap call is a thin one beside the trial's page faults.
    trace = flamegraph.differential(loaded.case, loaded.baseline, "d", min_share=0)["data"][0]
    delta = dict(zip(trace["ids"], trace["customdata"], strict=True))
    # mremap's frames are the case's alone: all their share is more than the baseline's.
    moved = [i for i in delta if "mremap" in i.rsplit(";", 1)[-1]
             and i.endswith("[kernel]")]
    assert moved and all(delta[i] > 0 for i in moved)
    # The baseline's copy takes a larger share there: drawn where the case has it too (the
    # process's frame, both profiles' root), and less of the case's time.
    process = f"{flamegraph.ROOT};mremap_bench [process]"
    assert delta[process] == pytest.approx(0.0, abs=1e-9)
    base = flamegraph.tree(loaded.baseline).shares()
    copy_paths = [i for i in base if re.search(r"mem(cpy|move)[^;]*$", i)]
    assert copy_paths and sum(base[i] for i in copy_paths) > \
        sum(flamegraph.tree(loaded.case).shares().get(i, 0.0) for i in copy_paths)


def test_the_report_has_the_profiles_section(profiled: Path) -> None:
    html = (profiled / "report.html").read_text()
    assert '<section id="profiles"><h2>Profiles</h2>' in html
    assert '<a href="#profiles">Profiles</a>' in html
    section = html.split('<section id="profiles">', 1)[1].split("</section>", 1)[0]
    assert len(re.findall(r'class="chart plotly-chart tall" id="chart-\d+"', section)) == 3
    figures = json.loads(re.search(r'id="bakeoff-figures">(.*?)</script>', html, re.S)[1])
    icicles = [f for f in figures.values() if f["data"][0]["type"] == "icicle"]
    assert len(icicles) == 3
    labels = [set(f["data"][0]["labels"]) for f in icicles]
    # The case's own work (moves are prepared in batch_prepare), the kernel's, and the copy.
    assert "batch_prepare [mremap_bench]" in labels[0]
    assert any(lab.endswith("[kernel]") for lab in labels[0])
    assert any(re.search(r"mem(cpy|move)", lab) for lab in labels[1])
    # Frames narrower than a pixel are left out of the drawing, not out of the files.
    [loaded] = profile_store.load(profiled)
    drawn = len(icicles[0]["data"][0]["ids"])
    assert 10 < drawn <= len(flamegraph.tree(loaded.case).ids)
    # Each profile says how much of it is the timed operation.
    assert re.search(r"\d+\.\d% of the samples are inside the timed operation", section)
    assert "repeated 10000×" in section
    # `bakeoff report` draws them again from the files alone.
    (profiled / "report.html").unlink()
    res = run_bakeoff("report", str(profiled), "-q")
    assert res.returncode == 0, res.stderr
    assert '<section id="profiles">' in (profiled / "report.html").read_text()


def test_without_repeats_the_move_is_a_sliver_and_the_profile_warns(
        mremap_run: Path, tmp_path: Path) -> None:
    """--repeat 1 profiles trials as measured: the move is a fraction of a percent of an
    mremap trial's samples (faulting in its source is the rest), and the profile says so."""
    run_dir = tmp_path / "run"
    shutil.copytree(mremap_run, run_dir)
    res, _ = _profile(run_dir, "variant=mremap,size=16MiB", "profile-once", "--seconds", "1",
                      "--repeat", "1")
    assert res.returncode == 0, res.stdout + res.stderr
    [pair] = profile_store.load_index(run_dir)
    assert pair.case.repeat == 1
    assert pair.case.timed_share is not None and pair.case.timed_share < 0.5
    assert re.search(r"mremap\[size=16777216\]: \d+\.\d% of the samples are inside the timed "
                     r"operation \(stacks with a frame matching \*sys_mremap\); warning: under "
                     r"50%, this profile mostly shows the untimed set-up", res.stdout), res.stdout


@pytest.mark.slow  # starts `bakeoff profile` (refused, but the fast tier cannot tell)
def test_a_repeat_below_one_is_exit_2(tmp_path: Path) -> None:
    res = run_bakeoff("profile", str(tmp_path), "--case", "variant=x", "--repeat", "0")
    assert_usage_error(res, "--repeat is a whole number from 1")


def test_the_profiles_draw_in_a_browser(profiled: Path, tmp_path: Path) -> None:
    if not any(Path(d, "chromium").exists() for d in os.environ["PATH"].split(":")):
        if IN_CI:
            pytest.fail("chromium is not installed: make test installs it (debian-packages)")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    browser = Browser(tmp_path / "chromium")
    try:
        events = browser.open((profiled / "report.html").as_uri(), size=(1400, 900))
        deadline = time.monotonic() + 60
        drawn: list[int] = []
        while time.monotonic() < deadline:
            drawn = browser.eval("Array.from(document.querySelectorAll('#profiles "
                                 ".plotly-chart')).map(e => e.querySelectorAll('g.slice')"
                                 ".length)")
            if len(drawn) == 3 and all(drawn):
                break
            time.sleep(0.2)
        assert len(drawn) == 3 and all(n > 10 for n in drawn), drawn
        problems = [e for e in browser.events if e["method"] in (
            "Runtime.exceptionThrown", "Runtime.consoleAPICalled", "Log.entryAdded")]
        assert problems == [], problems[:3]
        assert not any(e["method"] == "Page.javascriptDialogOpening" for e in events)
    finally:
        browser.close()


@pytest.mark.parametrize(("case", "needle", "fix"), [
    ("variant=nope,size=16MiB", "matches no case of the run", "variant=memcpy|mremap"),
    ("size=16MiB", "names no variant", "--case 'variant="),
    ("variant=mremap,size=3", "--case size=3", "page size"),
    ("variant=mremap,bogus=1", "has no param bogus", "its params are size"),
    ("variant=mremap,size", "is not NAME=VALUE", "--case 'variant="),
])
def test_a_case_the_run_lacks_is_one_line_and_exit_2(mremap_run: Path, case: str, needle: str,
                                                      fix: str) -> None:
    res = run_bakeoff("profile", str(mremap_run), "--case", case)
    assert_usage_error(res, needle, fix)
    assert not (mremap_run / profile_store.PROFILES_DIR / "perf.data").exists()


@pytest.mark.slow  # starts `bakeoff profile` (refused, but the fast tier cannot tell)
def test_a_run_dir_that_is_not_one_is_exit_2(tmp_path: Path) -> None:
    res = run_bakeoff("profile", str(tmp_path / "nothing"), "--case", "variant=a")
    assert_usage_error(res, "no such results directory")
    res = run_bakeoff("profile", str(tmp_path), "--case", "variant=a", "--seconds", "0")
    assert_usage_error(res, "--seconds", "e.g. --seconds 3")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_profiling_leaves_nothing(mremap_run: Path, signum: int) -> None:
    before = {p.name: _digest(p) for p in (mremap_run / profile_store.PROFILES_DIR).glob("*")} \
        if (mremap_run / profile_store.PROFILES_DIR).exists() else {}
    results = _digest(mremap_run / "results.json")
    proc = subprocess.Popen(
        [sys.executable, "-m", "bakeoff", "profile", str(mremap_run), "--case",
         "variant=mremap,size=16MiB", "--seconds", "60"],
        cwd=REPO, env=marked_env(f"profile-signal-{signum}"), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not _perf_running(f"profile-signal-{signum}"):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "perf never started"
            time.sleep(0.05)
        time.sleep(0.3)  # perf and the trial well under way
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signum, out + err
    assert "no profile was saved" in err
    assert marked_processes(f"profile-signal-{signum}") == []
    assert _scratch_of(proc.pid) == []
    after = {p.name: _digest(p) for p in (mremap_run / profile_store.PROFILES_DIR).glob("*")} \
        if (mremap_run / profile_store.PROFILES_DIR).exists() else {}
    assert after == before
    assert _digest(mremap_run / "results.json") == results


def _perf_running(marker: str) -> bool:
    import psutil

    for pid in marked_processes(marker):
        try:
            if psutil.Process(pid).name() == "perf":
                return True
        except psutil.Error:
            continue
    return False


def test_ebpf_force_is_profiled_with_its_tracer_attached(built: Path, tmp_path: Path) -> None:
    caps = hostmod.capabilities()
    missing = [c for c in ("root", "bpf", "uprobes") if not caps[c].available]
    if missing:
        if IN_CI:
            pytest.fail(f"this machine lacks {missing}")
        pytest.skip(f"needs {missing}")
    out = tmp_path / "run"
    res = run_bakeoff("run", "tracing-overhead", "--profile", "quick", "--variant", "ebpf-force",
                      "--param", "duration_us=0", "--param", "calls=20000", "--trials", "1",
                      "--out", str(out), "--seed", "5", "-q")
    assert res.returncode == 0, res.stdout + res.stderr
    res, pid = _profile(out, "variant=ebpf-force,duration_us=0", "profile-ebpf",
                        "--seconds", "0.5")
    assert res.returncode == 0, res.stdout + res.stderr
    [loaded] = profile_store.load(out)
    assert loaded.baseline is not None
    traced, untraced = _frames(loaded.case), _frames(loaded.baseline)
    # The probes fire in the app: the kernel's uprobe handling is in the traced case's stacks.
    # (Not asserted absent from the baseline's: a uprobe is on the library's file, so another
    # tracing run on this machine, a parallel test's, fires it in our baseline app too.)
    uprobe = [f for f in traced if "uprobe" in f and f.endswith("[kernel]")]
    assert uprobe, sorted(traced)[:80]
    # The tracer, held by the run's session outside the trial's process tree, is recorded as
    # the trial's partner (TrialPlan.partners); the baseline has none.
    assert "bakeoff_tracer [process]" in traced
    assert "bakeoff_tracer [process]" not in untraced
    assert marked_processes("profile-ebpf") == []
    assert _scratch_of(pid) == []


def test_a_case_that_fits_several_names_them_and_the_fix() -> None:
    from bakeoff.core.errors import UsageError
    from bakeoff.declare import registry
    from bakeoff.declare.model import Case
    from bakeoff.perf.record import find_case
    from bakeoff.plan.cases import BenchmarkPlan

    bench = registry.discover()["mremap-vs-memcpy"]
    cases = [Case(bench.name, v, (("size", s),)) for v in ("memcpy", "mremap")
             for s in (4096, MIB16)]
    plan = BenchmarkPlan(benchmark=bench, profile=bench.profiles["quick"], cases=cases,
                         skips=[])
    with pytest.raises(UsageError, match=r"matches 2 cases \(mremap size=4096; mremap "
                                         r"size=16777216\); give every param"):
        find_case([plan], "variant=mremap", None)
    # A size as a person types it names the same case as the bytes the record holds.
    assert find_case([plan], "variant=mremap,size=16MiB", None) == (plan, cases[3])
    with pytest.raises(UsageError, match="--benchmark nope: the run has no such benchmark; "
                                         "give one of mremap-vs-memcpy"):
        find_case([plan], "variant=mremap", "nope")
