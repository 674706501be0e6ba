"""heap-sampling's decision figure against an independent implementation of the same decision
(benchmarks/heap_sampling/indep_interposer.c and indep_check.c, which share no code with the
sampler): both preloaded in one process, the runs interleaved, and the ratio of what each adds
per allocation judged by its confidence interval over processes, not by a fixed timing
(METHOD.md "The independent check").

What it asserts is the scale, not the issue's +-15% (AGREE): at these means what a decision
adds in an interposer is set by the branches its deciding path takes, not by its arithmetic.
The same instructions behind one changed branch hint in the independent interposer measure a
twentieth (Poisson) or under half (hash) of the committed build's figure, while bakeoff's
stays put in the same processes (docs/notes/heap-sampling-decision-20261127-epyc.md, which
ran `compare(..., library=...)` on such builds). So the two agree to within +-15% only by
accident of layout (the hash nearly does; Poisson's independent figure is about twice
bakeoff's), and agreement would be a claim about two compilations. Both are well under 2 ns;
the earlier headline (5-28 ns, the shipped preload's bookkeeping, 10x-30x the independent
figure) fails the factor of 3 asserted here.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest
from scipy import stats

from conftest import REPO, build_dir

ROOM = build_dir() / "heap_sampling"
SAMPLER = ROOM / "libbakeoff_sampler.so"
INDEP = ROOM / "libindep_interposer.so"
CHECK = ROOM / "indep_check"
MEAN = 512 * 1024
# Processes per scheme, and seconds each: a process fixes one layout of code and heap, which
# moves a sub-ns figure by up to a third (seen: ratio 0.6 to 1.36 in single processes, 1.00 in
# most), so the interval is over processes.
PROCESSES = 5
SECONDS = 1.0
AGREE = 0.15  # the tolerance: within +-15% (the report says where it holds)
SCALE = 3.0  # what this test asserts: the same scale, within a factor of 3 either way


def run_check(scheme: str, mean: int, seconds: float,
              library: Path = INDEP) -> dict[str, np.ndarray]:
    """One indep_check process: per round, ns per allocation of the run with no decision
    ("off"), with the independent one ("indep") and with bakeoff's ("bakeoff"). library: the
    independent interposer (another build of it, for the layout experiment METHOD.md cites)."""
    env = {**os.environ, "LD_PRELOAD": f"{library}:{SAMPLER}",
           "SAMPLER_SCHEME": "POISSON" if scheme == "poisson" else "STATELESS_HASH",
           "SAMPLER_REFERENCE": "NONE", "SAMPLER_COUNT": "0",
           "SAMPLER_POISSON_MEAN_BYTES": str(mean), "INDEP_MEAN_BYTES": str(mean),
           "SAMPLER_OUTPUT": os.devnull}
    res = subprocess.run([str(CHECK), scheme, "100000", "2000", str(seconds), "cycle"], env=env,
                         capture_output=True, text=True, timeout=60 + 2 * seconds, check=False)
    assert res.returncode == 0, res.stderr
    rounds = [json.loads(line) for line in res.stdout.splitlines()]
    assert len(rounds) >= 50, res.stdout[-500:]
    return {leg: np.array([r[leg] for r in rounds]) for leg in ("off", "indep", "bakeoff")}


def added(rounds: dict[str, np.ndarray], leg: str) -> float:
    """What a decision adds per allocation in one process: the interquartile mean of the
    per-round differences (a preempted run lands in the trimmed quarters)."""
    return float(stats.trim_mean(rounds[leg] - rounds["off"], 0.25))


def ratio_ci(bakeoff: np.ndarray, indep: np.ndarray, seed: int = 1) -> tuple[float, float,
                                                                            float]:
    """bakeoff / independent (ratio of the means over processes) and its 95% CI from the
    bootstrap over processes."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(bakeoff), (4000, len(bakeoff)))
    boot = bakeoff[idx].mean(axis=1) / indep[idx].mean(axis=1)
    return (float(bakeoff.mean() / indep.mean()), float(np.percentile(boot, 2.5)),
            float(np.percentile(boot, 97.5)))


@pytest.fixture(scope="module")
def built() -> Path:
    if not all(p.exists() for p in (SAMPLER, INDEP, CHECK)):
        subprocess.run(["make", "-C", str(REPO / "benchmarks" / "heap_sampling")], check=True)
    return ROOM


class Comparison(NamedTuple):
    ours: np.ndarray  # bakeoff's decision, ns per allocation, one per process
    indep: np.ndarray  # the independent one's, same processes
    ratio: float
    low: float
    high: float


def compare(scheme: str, processes: int = PROCESSES, seconds: float = SECONDS,
            mean: int = MEAN, library: Path = INDEP) -> Comparison:
    """Both decisions' figures per process and their ratio with its CI (also what METHOD.md's
    figures came from, with more processes)."""
    runs = [run_check(scheme, mean, seconds, library) for _ in range(processes)]
    indep = np.array([added(p, "indep") for p in runs])
    ours = np.array([added(p, "bakeoff") for p in runs])
    return Comparison(ours, indep, *ratio_ci(ours, indep))


@pytest.mark.slow
@pytest.mark.parametrize("scheme", ["poisson", "hash"])
def test_decision_has_the_independent_implementations_scale(built: Path, scheme: str) -> None:
    got = compare(scheme)
    where = (f"{scheme}: ratio {got.ratio:.3f} (95% CI {got.low:.3f}-{got.high:.3f}); "
             f"ours {got.ours}, indep {got.indep}")
    # Both are measured, not a rounding of zero: the decision costs something, under 2 ns.
    assert 0.05 < got.indep.mean() < 2 and 0.05 < got.ours.mean() < 2, where
    # The whole interval within a factor of 3: bakeoff's figure is the decision's, and the
    # earlier headline's bookkeeping (10x-30x) would be far outside.
    assert got.low > 1 / SCALE and got.high < SCALE, where


def test_ratio_ci_covers_the_ratio_it_was_built_from() -> None:
    """The interval arithmetic itself, on made-up per-process figures: equal figures give a
    ratio of 1 with a zero-width interval; a 2x shift is outside the band."""
    same = np.array([0.5, 0.6, 0.55, 0.52, 0.58])
    assert ratio_ci(same, same) == (1.0, 1.0, 1.0)
    ratio, low, _ = ratio_ci(2 * same, same)
    assert ratio == pytest.approx(2.0) and low > 1 + AGREE
    assert ratio_ci(10 * same, same)[1] > SCALE  # the earlier headline's size fails
