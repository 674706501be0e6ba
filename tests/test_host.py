"""Host facts and capabilities, probed for real; noise warnings from known facts."""

from __future__ import annotations

from bakeoff import host
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


def test_facts_name_the_machine_without_absolute_paths() -> None:
    facts = host.facts()
    assert facts["kernel"] and facts["cpu_model"] and facts["cores"] >= 1
    assert facts["clocksource"] and facts["thp"]
    assert not any(isinstance(v, str) and v.startswith("/work") for v in facts.values())


def test_noise_warnings_follow_the_facts() -> None:
    quiet = {"cores": 2, "loadavg_1m": 0.1, "virtualisation": "none", "clocksource": "tsc",
             "governor": "performance", "turbo": "off", "smt_active": "no", "thp": "madvise",
             "aslr": "0", "bpf_jit": "1", "perf_counters": True, "busy_processes": []}
    assert host.noise_warnings(quiet) == []
    noisy = {**quiet, "loadavg_1m": 3.0, "virtualisation": "kvm", "governor": "powersave",
             "turbo": "on", "smt_active": "yes", "thp": "always", "aslr": "2", "bpf_jit": "0",
             "perf_counters": False, "busy_processes": ["stress (pid 9, 99% CPU)"]}
    text = "\n".join(host.noise_warnings(noisy))
    for needle in ("load average 3.00", "virtualised (kvm)", "governor is powersave",
                   "turbo boost is on", "SMT is on", "THP is 'always'", "ASLR is on",
                   "BPF JIT is off", "no hardware perf counters", "stress (pid 9, 99% CPU)"):
        assert needle in text, needle
