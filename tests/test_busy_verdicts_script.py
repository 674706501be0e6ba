"""scripts/verdict_runs.py: busy-verdicts' pure parts (the pairs and histories it builds from
real runs, its tallies and their exact CIs, a run cut to one command), without measuring."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from scipy.stats import binomtest

from bakeoff.analysis.across_runs import compare_runs
from bakeoff.store import results as store
from conftest import REPO


@pytest.fixture(scope="module")
def vr() -> ModuleType:
    spec = importlib.util.spec_from_file_location("verdict_runs",
                                                  REPO / "scripts" / "verdict_runs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["verdict_runs"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_pairs_are_of_two_runs_and_repeat_only_when_none_is_left(vr: ModuleType) -> None:
    rng = np.random.default_rng(1)
    pairs = vr.distinct_pairs(range(5), 20, rng)
    assert len(pairs) == 20 == len(set(pairs))  # 5 runs give 20 ordered pairs: each once
    assert all(i != j and 0 <= i < 5 and 0 <= j < 5 for i, j in pairs)
    more = vr.distinct_pairs([3, 7], 5, np.random.default_rng(2))
    assert set(more) == {(3, 7), (7, 3)} and len(more) == 5
    assert vr.distinct_pairs(range(5), 20, np.random.default_rng(1)) == pairs  # seeded
    with pytest.raises(ValueError):
        vr.distinct_pairs([4], 1, rng)


def test_a_history_is_consecutive_runs_the_change_at_its_boundary(vr: ModuleType) -> None:
    before = [[float(k)] for k in range(10)]  # run k's unchanged command
    after = [[100.0 + k] for k in range(10)]  # run k's changed one
    h = vr.history(before, after, 6, 5, start=7)
    # runs 7, 8, 9, 0, 1, 2 unchanged, then 3..7 changed: measured order, wrapping round
    assert h == [[7.0], [8.0], [9.0], [0.0], [1.0], [2.0],
                 [103.0], [104.0], [105.0], [106.0], [107.0]]
    assert vr.history(before, after, 4, 0, start=0) == [[0.0], [1.0], [2.0], [3.0]]
    with pytest.raises(ValueError):
        vr.history(before, after[:3], 4, 2, start=0)


def test_found_and_false_change_points_by_their_distance(vr: ModuleType) -> None:
    assert vr.found_at([9], 8) and vr.found_at([7], 8) and vr.found_at([8], 8)
    assert not vr.found_at([6, 10], 8) and not vr.found_at([], 8)
    assert vr.false_before([6], 8) and not vr.false_before([7, 9, 12], 8)


def test_tallies_and_their_exact_intervals(vr: ModuleType) -> None:
    t = vr.Tally()
    for called in (True, False, False, True, False):
        t = t.add(called)
    assert (t.called, t.n) == (2, 5)
    for k, n in ((0, 20), (1, 20), (19, 20), (20, 20), (3, 500)):
        ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
        lo, hi = vr.exact_bounds(k, n)
        assert lo == pytest.approx(ci.low, abs=1e-9) and hi == pytest.approx(ci.high, abs=1e-9)
    # 0 of 20: the upper bound is 1 - 0.025^(1/20)
    assert vr.exact_ci(0, 20) == "0/20 = 0.0% (95% CI 0.0–16.8%)"
    assert vr.exact_ci(0, 0) == "none"


# One real pool run of scripts/busy-verdicts (2026-11-29, beside two CPU hogs): a1 and a2 the
# same awk loop, p10 and p2 its work +10% and +2%, interleaved round by round.
POOL_RUN = REPO / "tests" / "fixtures" / "busy" / "pool-run"


def test_a_run_cut_to_one_command_compares_as_its_own_run(vr: ModuleType,
                                                          tmp_path: Path) -> None:
    """Each command of a four-command `bakeoff cmd` run written as a run of its own: the
    trials keep their rounds, so two of them compare paired by round as --rerun's halves
    do, and the instruction count's ratio is the work's."""
    run = store.load(POOL_RUN)
    parts = {}
    for name in ("a1", "p10"):
        cut = vr.one_command(run, name)
        (tmp_path / name).mkdir()
        store.save(cut, tmp_path / name)
        parts[name] = store.load(tmp_path / name)
        assert {t.case.variant for t in parts[name].trials} == {"work"}
        (info,) = parts[name].benchmarks.values()
        assert info.baseline == "work" and [v["name"] for v in info.variants] == ["work"]
        (recorded,) = (info.definition or {})["commands"]
        assert recorded["command"] == next(c["command"] for c in (
            run.benchmarks["cmd"].definition or {})["commands"] if c["name"] == name)
        assert sorted(t.round for t in parts[name].trials) == sorted(
            t.round for t in run.trials if t.case.variant == name)
    (change,) = compare_runs(parts["a1"], parts["p10"], 0.02, interleaved=True,
                             metric="instructions").changes
    # 10% more loop iterations, awk's start-up unchanged: a little under +10% instructions
    assert change.basis == "interleaved" and 1.09 < change.ratio.ratio < 1.10
    assert change.verdict == "slower"
    with pytest.raises(ValueError):
        vr.one_command(run, "z")


@pytest.mark.slow(live=False)
def test_compare_names_the_metric_that_decides_better(vr: ModuleType, tmp_path: Path) -> None:
    """The runs counted instructions, so compare decides on them and says so; asked for
    wall time, one run a side is inconclusive and compare names the count and how to decide
    on it; --rerun would count them again."""
    from bakeoff.cmd import rerun

    run = store.load(POOL_RUN)
    for name in ("a1", "p10"):
        (tmp_path / name).mkdir()
        store.save(vr.one_command(run, name), tmp_path / name)
    said = subprocess.run([sys.executable, "-m", "bakeoff", "compare", str(tmp_path / "a1"),
                           str(tmp_path / "p10"), "--metric", "wall_time"], cwd=REPO,
                          capture_output=True, text=True, check=True).stdout
    assert "decided on wall_time" in said and "--rerun --metric instructions" in said
    on_count = subprocess.run([sys.executable, "-m", "bakeoff", "compare",
                               str(tmp_path / "a1"), str(tmp_path / "p10")], cwd=REPO,
                              capture_output=True, text=True, check=True).stdout
    assert "decided on wall_time" not in on_count
    assert "decided on instructions, not the primary wall_time" in " ".join(on_count.split())
    defn, _ = rerun.definition(store.load(tmp_path / "a1"), store.load(tmp_path / "p10"))
    assert defn.instructions == 1
