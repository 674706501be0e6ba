"""A benchmark that needs more than one CPU (Benchmark.cpus) gets them: the harness claims
that many, pins the trial program to the first, passes all of them to the session
(RunContext.trial_cpus) and to the trial (BAKEOFF_TRIAL_CPUS), records them in the host's
pinning facts and warns when it cannot have them to itself.

The live tests run the fixture room `affinity` (cpus=2), whose program reports its own
affinity and environment. Other runs on the machine may hold CPU claims too, so the tests
check what the run recorded against what its program saw, never a CPU number guessed ahead.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from bakeoff.machine import cpus
from conftest import FIXTURES, run_bakeoff

# Other runs of this suite hold CPU claims too: none runs beside these tests (conftest).
MACHINE_WIDE = True
ENV = {"BAKEOFF_BENCHMARKS_DIR": str(FIXTURES / "rooms"),
       "BAKEOFF_BUILD_DIR": str(FIXTURES / "build")}
N_CPUS = len(os.sched_getaffinity(0))


def test_a_claim_of_two_cpus_keeps_one_for_the_harness() -> None:
    assert N_CPUS >= 2, "this machine kind has 2 CPUs"
    claim = cpus.claim(pin=True, count=2)
    try:
        assert len(claim.cpus) == 2 and len(set(claim.cpus)) == 2
        assert claim.harness, "the harness must keep a CPU"
        assert set(claim.owned) <= set(claim.cpus) and not set(claim.owned) & claim.harness
        assert len(claim.owned) <= N_CPUS - 1
        if claim.owned:
            assert claim.measured == claim.owned[0], "the measured CPU is the run's own"
        if len(claim.owned) < 2:  # a CPU it shares: said so
            assert claim.warning is not None and "share" in claim.warning
        if N_CPUS == 2 and claim.owned:  # the partner's CPU can only be the harness's
            assert claim.harness == {claim.cpus[1]}
            assert claim.warning is not None and "shared with the harness" in claim.warning
        assert claim.for_trial(1) == claim.cpus[:1]
        assert claim.for_trial(2) == claim.cpus
    finally:
        claim.release()


def test_two_runs_never_own_the_same_cpu_and_the_one_short_says_so() -> None:
    """Claims are flocks: a second open file in this process cannot take one either."""
    first = cpus.claim(pin=True, count=N_CPUS - 1)
    try:
        second = cpus.claim(pin=True, count=N_CPUS - 1)
        try:
            assert not set(first.owned) & set(second.owned)
            for claim in (first, second):
                assert len(claim.cpus) == N_CPUS - 1
                if len(claim.owned) < N_CPUS - 1:
                    assert claim.warning is not None and "share" in claim.warning
        finally:
            second.release()
    finally:
        first.release()


def test_no_pin_claims_nothing() -> None:
    claim = cpus.claim(pin=False, count=2)
    assert claim.cpus == () and claim.measured is None and claim.harness is None
    assert cpus.trial_env(claim.cpus) == {"BAKEOFF_TRIAL_CPUS": ""}


def _run(tmp_path: Path, *extra: str) -> tuple[dict[str, Any], list[str]]:
    log = tmp_path / "session.log"
    out = tmp_path / "run"
    res = run_bakeoff("run", "affinity", "--profile", "quick", "--out", str(out), "--quiet",
                      *extra, env={**ENV, "AFFINITY_SESSION_LOG": str(log),
                                   "BAKEOFF_TRIAL_CPUS": "99"})  # never inherited
    assert res.returncode == 0, res.stdout + res.stderr
    return json.loads((out / "results.json").read_text()), log.read_text().splitlines()


@pytest.mark.slow
def test_the_trial_runs_on_the_first_claimed_cpu_and_sees_them_all(tmp_path: Path) -> None:
    data, session = _run(tmp_path)
    pinning = data["host"]["pinning"]
    claimed = pinning["trial_cpus"]
    assert len(claimed) == 2 and len(set(claimed)) == 2
    assert pinning["measured_cpu"] == claimed[0]
    assert claimed[0] not in pinning["harness_cpus"]
    assert session == [",".join(map(str, claimed))]
    assert len(data["trials"]) == 4  # 2 variants x 2 trials; the warm-ups are not recorded
    for t in data["trials"]:
        assert t["status"] == "ok", t["error"]
        assert t["meta"]["affinity"] == str(claimed[0])
        assert t["meta"]["trial_cpus_env"] == ",".join(map(str, claimed))
    if N_CPUS == 2:  # its partner shares the harness's CPU, or another run's: said so
        assert any("shared with the harness" in w or "shares CPU" in w
                   for w in data["warnings"]), data["warnings"]


@pytest.mark.slow
def test_without_pinning_the_trial_gets_every_cpu_and_an_empty_list(tmp_path: Path) -> None:
    data, session = _run(tmp_path, "--no-pin")
    assert data["host"]["pinning"]["trial_cpus"] is None
    assert session == [""]
    every = ",".join(map(str, sorted(os.sched_getaffinity(0))))
    for t in data["trials"]:
        assert t["meta"]["affinity"] == every
        assert t["meta"]["trial_cpus_env"] == ""
