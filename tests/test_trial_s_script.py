"""scripts/trial_s.py: Profile.trial_s and trials_growth from measured runs, written into the
spec they name."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest
from test_report import make_run

from bakeoff.store import results as store
from conftest import FIXTURES, REPO, assert_usage_error, run_script

SPEC = '''PROFILES = {
    "quick": Profile("quick", {"n": (1,)}, trials=3, samples=5, trial_s=9.99),
    "default": Profile("default", {"n": (1, 2)}, trials=5,
                       samples=(2), timeout_s=60, trial_s=0.29),
}
'''


@pytest.fixture(scope="module")
def script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("trial_s", REPO / "scripts" / "trial_s.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_it_rewrites_trial_s_of_the_profile_named_only(script: ModuleType,
                                                       tmp_path: Path) -> None:
    spec = tmp_path / "spec.py"
    spec.write_text(SPEC)
    assert script.rewrite(spec, "default", 1.234)
    text = spec.read_text()
    assert "trial_s=1.23)" in text and "trial_s=9.99)" in text and "trial_s=0.29" not in text
    assert not script.rewrite(spec, "full", 1.0)  # no such profile: nothing written
    assert spec.read_text() == text


def test_it_adds_trials_growth_beside_trial_s_then_replaces_it(script: ModuleType,
                                                               tmp_path: Path) -> None:
    spec = tmp_path / "spec.py"
    spec.write_text(SPEC)
    assert script.rewrite(spec, "default", 0.5, 1.456)
    text = spec.read_text()
    # Added after trial_s, lined up with the call's arguments; the other profile untouched.
    assert ("samples=(2), timeout_s=60, trial_s=0.50,\n"
            "                       trials_growth=1.46)," in text), text
    assert text.count("trials_growth") == 1
    compile(text, "spec.py", "exec")
    assert script.rewrite(spec, "default", 0.5, 1.2)
    assert "trials_growth=1.20)" in spec.read_text() and spec.read_text().count("trials_growth") == 1


def test_busy_runs_write_trial_s_busy_alone_after_trials_growth(script: ModuleType,
                                                              tmp_path: Path) -> None:
    """--busy: only trial_s_busy, added after trials_growth (else after trial_s), then
    replaced; trial_s and trials_growth as they were."""
    spec = tmp_path / "spec.py"
    spec.write_text(SPEC)
    assert script.rewrite(spec, "default", None, busy=0.377)
    text = spec.read_text()
    assert ("samples=(2), timeout_s=60, trial_s=0.29,\n"
            "                       trial_s_busy=0.38)," in text), text
    assert script.rewrite(spec, "default", 0.5, 1.456)
    assert script.rewrite(spec, "default", None, busy=0.41)
    text = spec.read_text()
    assert "trial_s=0.50," in text and "trials_growth=1.46" in text, text
    assert text.count("trial_s_busy") == 1 and "trial_s_busy=0.41)" in text, text
    assert '"quick": Profile("quick", {"n": (1,)}, trials=3, samples=5, trial_s=9.99),' in text
    compile(text, "spec.py", "exec")


def test_counting_s_goes_after_the_last_of_those_before_it(script: ModuleType,
                                                         tmp_path: Path) -> None:
    """counting_s: added after trials_growth where there is no trial_s_busy, after
    trial_s_busy where there is, then replaced in place."""
    spec = tmp_path / "spec.py"
    spec.write_text(SPEC)
    assert script.rewrite(spec, "default", 0.5, 1.456, counting_s=0.126)
    text = spec.read_text()
    assert ("trials_growth=1.46,\n"
            "                       counting_s=0.13)," in text), text
    assert script.rewrite(spec, "default", None, busy=0.41)
    assert script.rewrite(spec, "default", 0.5, 1.456, counting_s=0.2)
    text = spec.read_text()
    assert text.count("counting_s") == 1 and "counting_s=0.20)" in text, text
    assert text.index("trial_s_busy=0.41") < text.index("counting_s=0.20")
    compile(text, "spec.py", "exec")


def test_counting_is_what_the_estimate_learned_by_the_end_of_the_run(script: ModuleType) -> None:
    """counting(): the run's estimate_log told again, read at its end: per room, what counting
    added before a counted trial's last measured sample (the recorded run of 2026-12-01 01:53:
    0.127 s in tracing-overhead, a few ms in mremap-vs-memcpy, nothing for heap-sampling,
    which counts nothing)."""
    data = json.loads((FIXTURES / "time-left" / "make-bench-counted-only-xeon.json").read_text())
    added = script.counting(SimpleNamespace(timings=data["timings"]))
    assert added["tracing-overhead"] == pytest.approx(0.127, abs=0.001), added
    assert 0 <= added["mremap-vs-memcpy"] < 0.01 and "heap-sampling" not in added, added
    assert script.counting(SimpleNamespace(timings={})) == {}


@pytest.mark.slow(live=False)
def test_room_times_are_the_runs_own(script: ModuleType, tmp_path: Path) -> None:
    run = make_run()
    [(name, (n, mean, span))] = script.room_times(run).items()
    ok = [t for t in run.trials if t.ok]
    assert name == "fake-move" and n == len(ok)
    assert mean == pytest.approx(sum(t.wall_s for t in ok) / len(ok))
    assert span >= max(t.wall_s for t in ok) - 1e-5  # timedelta keeps whole µs
    store.save(run, tmp_path)
    res = run_script("trial_s.py", str(tmp_path))
    assert res.returncode == 0, res.stderr
    assert f"fake-move: {n} ok trials, mean {mean:.3f} s a trial" in res.stdout
    # A run without the estimate's log (this one is made, not run) has no growth to give.
    assert script.growth(run) == {}
    bad = run_script("trial_s.py", str(tmp_path / "nope"))
    assert_usage_error(bad, "no such results directory", "give one written by bakeoff run")


def test_growth_is_the_trials_kept_over_the_plan_before_any_ran(script: ModuleType) -> None:
    """On a real `make bench` log (tests/fixtures/time-left/): bpf-map-dump's cases were
    planned at 51 trials in all before any ran and kept 86; mremap-vs-memcpy's 150 and 180."""
    data = json.loads((FIXTURES / "time-left" / "make-bench-tuning-out-xeon.json").read_text())
    grown = script.growth(SimpleNamespace(timings=data["timings"]))
    assert grown["bpf-map-dump"] == pytest.approx(86 / 51)
    assert grown["mremap-vs-memcpy"] == pytest.approx(180 / 150)
    assert set(grown) == {"bpf-map-dump", "cgroup-stat-read", "heap-sampling",
                          "mremap-vs-memcpy", "tracing-overhead"}


def test_the_share_a_run_waited_for_a_cpu_is_over_every_attempt(script: ModuleType) -> None:
    """What --busy runs waited, beside the BUSY_WAIT_SHARE the time left divides by: the
    trials' and the retaken attempts' run-queue waits over their wall time; None where no
    trial recorded its wait."""
    def trial(wall: float, delay: float | None) -> SimpleNamespace:
        return SimpleNamespace(wall_s=wall, contention=None if delay is None
                               else SimpleNamespace(run_delay_s=delay))
    run = SimpleNamespace(trials=[trial(1.0, 0.1), trial(2.0, 0.1), trial(5.0, None)],
                          retaken=[trial(1.0, 0.6)])
    assert script.waited(run) == pytest.approx(0.8 / 4.0)
    assert script.waited(SimpleNamespace(trials=[trial(1.0, None)], retaken=[])) is None
