"""The default profile's modes take one cost sample (spec.MODE_SAMPLES), and the error
question's figures, from the accuracy processes, are what they were (issue 34)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from bakeoff.declare import registry
from bakeoff.declare.model import Case, RunContext
from bakeoff.machine import host
from conftest import build_dir

BENCH = registry.discover()["heap-sampling"]


def _case(workload: str) -> Case:
    return Case("heap-sampling", "poisson", (("workload", workload), ("mean", 524288),
                                             ("scale", 0.01), ("accuracy_runs", 4)))


def _argv(workload: str, profile: str, samples: int | None = None) -> list[str]:
    prof = BENCH.profiles[profile]
    if samples is not None:  # as --samples gives it
        prof = dataclasses.replace(prof, samples=samples)
    ctx = RunContext(build_dir=build_dir(), scratch_dir=Path("/nonexistent"), capabilities={},
                     host=host.HostFacts())
    assert BENCH.prepare_trial is not None
    return BENCH.prepare_trial(_case(workload), prof, ctx, None).argv


def _samples(argv: list[str]) -> int:
    return int(argv[argv.index("--samples") + 1])


def test_only_the_default_modes_take_one_cost_sample() -> None:
    assert _samples(_argv("mode1", "default")) == 1
    assert _samples(_argv("inline-64", "default")) == BENCH.profiles["default"].samples == 2
    assert _samples(_argv("mode1", "quick")) == BENCH.profiles["quick"].samples
    assert _samples(_argv("mode4", "full")) == BENCH.profiles["full"].samples
    assert _samples(_argv("mode2", "default", samples=5)) == 5  # --samples 5 as given


@pytest.mark.slow
def test_a_mode_trial_with_one_cost_sample_keeps_every_estimate() -> None:
    """The error question reads the accuracy processes' estimates: a trial of the default
    profile's argv gives as many as one with the profile's two cost samples (accuracy_runs),
    and one cost sample of each cost metric."""
    counts = []
    one_sample = _argv("mode2", "default")
    two_samples = [*one_sample]  # as the profile's samples had it
    two_samples[two_samples.index("--samples") + 1] = str(BENCH.profiles["default"].samples)
    for argv in (one_sample, two_samples):
        out = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True)
        counts.append(Counter(json.loads(line)["metric"] for line in out.stdout.splitlines()
                              if json.loads(line)["type"] == "sample"))
    one, two = counts
    assert one["poisson_total_error_pct"] == two["poisson_total_error_pct"] == 4, counts
    assert one["poisson_live_error_pct"] == two["poisson_live_error_pct"], counts
    assert one["decide_ns_per_alloc"] == 1 and two["decide_ns_per_alloc"] == 2, counts
