"""Host facts and capabilities, probed for real; noise warnings from known facts."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from bakeoff.machine import cpus, host
from conftest import IN_CI


def test_every_capability_is_probed_and_named() -> None:
    caps = host.capabilities()
    assert tuple(caps) == host.CAPABILITY_NAMES
    for c in caps.values():
        assert c.detail
        assert c.available or c.fix, f"{c.name} is missing without a fix"
    if IN_CI:  # this machine kind has all of these
        for name in ("root", "bpf", "uprobes", "lttng", "cgroup_memory", "thp"):
            assert caps[name].available, caps[name]


@pytest.mark.slow(live=False)
def test_facts_name_the_machine_without_absolute_paths() -> None:
    facts = host.facts()
    assert facts.kernel and facts.cpu_model and facts.cores >= 1
    assert facts.clocksource and facts.thp and facts.mem_available_kib > 0
    recorded = facts.to_json()
    assert not any(isinstance(v, str) and v.startswith("/work") for v in recorded.values())
    # The record reads back as the same facts; keys it does not know stay in the record.
    assert host.HostFacts.from_json({**recorded, "pinning": {"measured_cpu": 1}}) == facts
    assert host.HostFacts.from_json({"kernel": "6.1"}).mem_available_kib == 0  # older run


def test_noise_warnings_follow_the_facts() -> None:
    quiet = host.HostFacts(**{"cores": 2, "loadavg_1m": 0.1, "virtualisation": "none", "clocksource": "tsc",
             "governor": "performance", "turbo": "off", "smt_active": "no", "thp": "madvise",
             "aslr": "0", "bpf_jit": "1", "perf_counters": True, "busy_processes": []})
    assert host.noise_warnings(quiet) == []
    noisy = dataclasses.replace(quiet, **{"loadavg_1m": 3.0, "virtualisation": "kvm", "governor": "powersave",
             "turbo": "on", "smt_active": "yes", "thp": "always", "aslr": "2", "bpf_jit": "0",
             "perf_counters": False, "busy_processes": ["stress (pid 9, 99% CPU)"]})
    text = "\n".join(host.noise_warnings(noisy))
    for needle in ("load average 3.00", "virtualised (kvm)", "governor is powersave",
                   "turbo boost is on", "SMT is on", "THP is 'always'", "ASLR is on",
                   "BPF JIT is off", "no hardware perf counters", "stress (pid 9, 99% CPU)"):
        assert needle in text, needle


def test_concurrent_runs_claim_different_cpus_and_the_one_too_many_is_warned(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each run measures on a CPU no other run claims; when none is left it shares one
    and says so. (Claims are flocks: a second open file in this process cannot take one.)
    The locks live in a directory of the test's own: on a machine where other runs (this
    suite's, a user's) hold the CPUs, every claim here would share one, and the test would
    check nothing."""
    monkeypatch.setattr(cpus, "LOCK_DIRS", (tmp_path,))
    n_cpus = len(os.sched_getaffinity(0))
    assert n_cpus >= 2, "this machine kind has 2 CPUs"
    claims = [cpus.claim(pin=True) for _ in range(n_cpus + 1)]
    held = [fd for c in claims for fd in c._fds]
    try:
        alone = [c for c in claims if c.warning is None]
        assert alone, [c.warning for c in claims]
        assert len({c.measured for c in alone}) == len(alone)
        for c in alone:
            assert c.harness is not None and c.measured not in c.harness
        assert claims[-1].warning is not None and "disturb each other" in claims[-1].warning
    finally:
        for c in claims:
            c.release()
    # Released: every lock's file is closed, so the kernel has dropped its flock.
    assert held
    for fd in held:
        with pytest.raises(OSError):
            os.fstat(fd)
    assert cpus.claim(pin=False).measured is None
