"""scripts/trial_s.py: Profile.trial_s from a measured run, written into the spec it names."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest
from test_report import make_run

from bakeoff.store import results as store
from conftest import REPO, assert_usage_error, run_script

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
    bad = run_script("trial_s.py", str(tmp_path / "nope"))
    assert_usage_error(bad, "no such results directory", "give one written by bakeoff run")
