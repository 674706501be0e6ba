"""What this machine is and what it can run: capabilities, facts, and noise warnings.

Capabilities are probed for real where that is cheap and harmless (a BPF map is created and
closed, perf_event_open is tried), because a file that merely exists proves little.
Nothing here changes the machine.
"""

from __future__ import annotations

import ctypes
import dataclasses
import errno
import gzip
import hashlib
import json
import os
import platform
import shutil
import socket
import struct
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from bakeoff.stats import drift


@dataclass(frozen=True)
class Capability:
    name: str
    available: bool
    detail: str  # what was found, or why not
    fix: str = ""  # how to get it, when missing


def _read(path: str, default: str = "") -> str:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return default


def _bracketed(text: str) -> str:
    """'always [madvise] never' -> 'madvise'."""
    if "[" in text and "]" in text:
        return text[text.index("[") + 1 : text.index("]")]
    return text


_libc = ctypes.CDLL(None, use_errno=True)
_SYSCALL_NR = {
    "x86_64": {"bpf": 321, "perf_event_open": 298},
    "aarch64": {"bpf": 280, "perf_event_open": 241},
}


def _syscall(name: str, *args: Any) -> tuple[int, int]:
    nr = _SYSCALL_NR.get(platform.machine(), {}).get(name)
    if nr is None:
        return -1, 38  # ENOSYS: we do not know this architecture's number
    ret = int(_libc.syscall(nr, *args))
    return ret, ctypes.get_errno()


def _probe_bpf() -> Capability:
    # BPF_MAP_CREATE (cmd 0) of a 1-entry array map: the smallest real use of the syscall.
    attr = ctypes.create_string_buffer(struct.pack("IIII", 2, 4, 4, 1) + bytes(112))
    fd, err = _syscall("bpf", 0, attr, len(attr.raw))
    if fd >= 0:
        os.close(fd)
        btf = Path("/sys/kernel/btf/vmlinux").exists()
        return Capability("bpf", True, "bpf() map create works" + ("" if btf else "; no BTF"))
    return Capability("bpf", False, f"bpf() map create failed: {os.strerror(err)}",
                      "run as root (CAP_BPF) on a kernel with CONFIG_BPF_SYSCALL")


def _probe_perf_counters() -> Capability:
    # perf_event_attr: type=PERF_TYPE_HARDWARE(0), size=128, config=CPU_CYCLES(0), rest zero.
    attr = ctypes.create_string_buffer(struct.pack("IIQ", 0, 128, 0) + bytes(112))
    fd, err = _syscall("perf_event_open", attr, 0, -1, -1, 0)
    if fd >= 0:
        os.close(fd)
        return Capability("perf_counters", True, "hardware cycle counter opens")
    if err in (errno.EACCES, errno.EPERM):
        # Refused, not absent: kernel.perf_event_paranoid keeps it from unprivileged users.
        paranoid = _read("/proc/sys/kernel/perf_event_paranoid", "unknown")
        return Capability("perf_counters", False,
                          f"perf_event_open(cycles): {os.strerror(err)} "
                          f"(uid {os.geteuid()}, perf_event_paranoid {paranoid})",
                          "run as root, or sysctl kernel.perf_event_paranoid=1")
    return Capability("perf_counters", False, f"perf_event_open(cycles): {os.strerror(err)}",
                      "no PMU in this VM: time with clock_gettime or rdtsc instead")


def _probe_root() -> Capability:
    if os.geteuid() == 0:
        return Capability("root", True, "running as root")
    return Capability("root", False, f"uid {os.geteuid()}", "run with sudo or as root")


def _probe_thp() -> Capability:
    mode = _bracketed(_read("/sys/kernel/mm/transparent_hugepage/enabled", "absent"))
    if mode in ("always", "madvise"):
        return Capability("thp", True, f"transparent hugepages: {mode}")
    return Capability("thp", False, f"transparent hugepages: {mode}",
                      "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled")


def _probe_uprobes() -> Capability:
    for root in ("/sys/kernel/tracing", "/sys/kernel/debug/tracing"):
        events = Path(root, "uprobe_events")
        try:
            events.stat()
        except PermissionError:
            # tracefs is mode 0700 for root: as another user it is there but closed.
            return Capability("uprobes", False, f"{root} is not readable by uid {os.geteuid()}",
                              "run as root (uprobes are created through tracefs)")
        except OSError:
            continue
        if not os.access(events, os.W_OK):
            return Capability("uprobes", False, f"{events} is not writable by uid "
                              f"{os.geteuid()}", "run as root (uprobes are created through tracefs)")
        return Capability("uprobes", True, str(events))
    return Capability("uprobes", False, "no uprobe_events in tracefs",
                      "mount -t tracefs nodev /sys/kernel/tracing (kernel needs CONFIG_UPROBE_EVENTS)")


def _probe_lttng() -> Capability:
    path = shutil.which("lttng")
    if path:
        return Capability("lttng", True, path)
    return Capability("lttng", False, "lttng not on PATH",
                      "apt-get install lttng-tools liblttng-ust-dev babeltrace2")


def _probe_cgroup_memory() -> Capability:
    v1 = Path("/sys/fs/cgroup/memory/memory.stat")
    if v1.exists():
        return Capability("cgroup_memory", True, "cgroup v1 memory controller at /sys/fs/cgroup/memory")
    for root in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
        if "memory" in _read(f"{root}/cgroup.controllers").split():
            return Capability("cgroup_memory", True, f"cgroup v2 memory controller at {root}")
    return Capability("cgroup_memory", False, "no memory controller mounted",
                      "mount the cgroup v1 memory controller or enable memory in cgroup v2")


PROBES: tuple[Callable[[], Capability], ...] = (
    _probe_root, _probe_bpf, _probe_uprobes, _probe_lttng, _probe_cgroup_memory, _probe_thp,
    _probe_perf_counters,
)


# What Variant.requires and Benchmark.requires may name.
CAPABILITY_NAMES = ("root", "bpf", "uprobes", "lttng", "cgroup_memory", "thp", "perf_counters")


def capabilities() -> dict[str, Capability]:
    return {c.name: c for c in (probe() for probe in PROBES)}


def _cpu_model() -> str:
    for line in _read("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def _detect_virt(flag: str) -> str:
    if not shutil.which("systemd-detect-virt"):
        return ""
    res = subprocess.run(["systemd-detect-virt", flag], capture_output=True, text=True,
                         check=False)
    return res.stdout.strip()


def _virtualisation() -> str:
    vm = _detect_virt("--vm")
    if vm:
        return vm
    flags = next((ln for ln in _read("/proc/cpuinfo").splitlines() if ln.startswith("flags")), "")
    if " hypervisor" in flags:
        vendor = _read("/sys/class/dmi/id/sys_vendor")
        return f"vm ({vendor})" if vendor else "vm"
    return "none"


def _meminfo_kib(field: str) -> int:
    for line in _read("/proc/meminfo").splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def _timer_probe(build_dir: Path | None) -> dict[str, Any]:
    """The C timer's own cost, as the measured programs see it (build/common/timer-probe)."""
    if build_dir is None:
        return {}
    probe = build_dir / "common" / "timer-probe"
    if not probe.exists():
        return {}
    try:
        res = subprocess.run([str(probe)], capture_output=True, text=True, timeout=10, check=True)
        meta = json.loads(res.stdout.splitlines()[0])
    except (subprocess.SubprocessError, ValueError, IndexError, OSError):
        return {}
    return {k: v for k, v in meta.items() if k != "type"} if isinstance(meta, dict) else {}


def _turbo() -> str:
    no_turbo = _read("/sys/devices/system/cpu/intel_pstate/no_turbo")
    if no_turbo in ("0", "1"):
        return "on" if no_turbo == "0" else "off"
    boost = _read("/sys/devices/system/cpu/cpufreq/boost")
    if boost in ("0", "1"):
        return "on" if boost == "1" else "off"
    return "not exposed"


def _cpu_seconds() -> dict[int, tuple[str, float]]:
    """pid -> (name, user+system CPU seconds so far), for every process we can read."""
    out: dict[int, tuple[str, float]] = {}
    for proc in psutil.process_iter(["name", "cpu_times"]):
        times = proc.info["cpu_times"]
        if times is not None:  # None: not ours to read
            out[proc.pid] = (proc.info["name"] or "?", times.user + times.system)
    return out


def busy_processes(window_s: float = 0.25, threshold: float = 0.10) -> list[str]:
    """Other processes using more than `threshold` of a CPU over a short window."""
    first = _cpu_seconds()
    time.sleep(window_s)
    second = _cpu_seconds()
    mine = {os.getpid(), os.getppid()}
    busy = []
    for pid, (comm, seconds) in second.items():
        if pid in mine or pid not in first:
            continue
        share = (seconds - first[pid][1]) / window_s
        if share > threshold:
            busy.append(f"{comm} (pid {pid}, {share * 100:.0f}% CPU)")
    return sorted(busy)


@dataclass(frozen=True)
class HostFacts:
    """The machine facts a run records (results.json "host"), read by name, not by string key:
    by the noise warnings, the rooms' checks (RunContext.host) and the reports. The defaults
    are what an older record that lacks a fact reads as."""

    hostname: str = "unknown"
    kernel: str = "unknown"
    kernel_build: str = ""
    arch: str = ""
    os: str = "unknown"
    cpu_model: str = "unknown"
    cpus_online: str = ""
    cores: int = 1
    smt_active: str = "not exposed"
    clocksource: str = "unknown"
    thp: str = "absent"
    governor: str = "not exposed"
    turbo: str = "not exposed"
    virtualisation: str = "none"
    container: str = "none"
    aslr: str = "unknown"
    bpf_jit: str = "unknown"
    loadavg_1m: float = 0.0
    mem_total_kib: int = 0
    mem_available_kib: int = 0  # 0: unknown (a check then assumes enough)
    page_size: int = 4096
    python: str = ""
    timer: dict[str, Any] = field(default_factory=dict)
    perf_counters: bool | None = None
    busy_processes: list[str] = field(default_factory=list)
    microcode: str = "not exposed"
    smt_control: str = "not exposed"
    thp_defrag: str = "absent"
    mitigations: dict[str, str] = field(default_factory=dict)
    sysctls: dict[str, str] = field(default_factory=dict)
    kernel_config: dict[str, Any] = field(default_factory=dict)
    # /proc/cmdline's digest: mitigations=, isolcpus= and the like change what is measured (the
    # history splits a series on it); the text itself may hold what a shared result should not.
    kernel_cmdline_sha256: str = ""
    # Hashes of /etc/machine-id and the boot id (bakeoff/stats/drift.py): two "hosts" with one boot
    # id share a kernel and its CPUs; a run-to-run spread applies to one machine id.
    machine_id: str = ""
    boot_id: str = ""

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, recorded: Mapping[str, Any]) -> HostFacts:
        """The facts of a record: keys it does not know (pinning, trial_rusage, a newer
        bakeoff's) are left to the record; facts it lacks take the defaults."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in recorded.items() if k in names})


def facts(build_dir: Path | None = None) -> HostFacts:
    """Machine facts recorded with every run. No absolute paths: results travel between hosts."""
    uname = os.uname()
    governor = _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "not exposed")
    online = _read("/sys/devices/system/cpu/online")
    smt = _read("/sys/devices/system/cpu/smt/active", "")
    return HostFacts(
        hostname=socket.gethostname(),
        kernel=uname.release,
        kernel_build=uname.version,
        arch=uname.machine,
        os=next((ln.split("=", 1)[1].strip('"') for ln in _read("/etc/os-release").splitlines()
                 if ln.startswith("PRETTY_NAME=")), "unknown"),
        cpu_model=_cpu_model(),
        cpus_online=online,
        cores=os.cpu_count() or 1,
        smt_active={"1": "yes", "0": "no"}.get(smt, "not exposed"),
        clocksource=_read("/sys/devices/system/clocksource/clocksource0/current_clocksource", "unknown"),
        thp=_bracketed(_read("/sys/kernel/mm/transparent_hugepage/enabled", "absent")),
        governor=governor,
        turbo=_turbo(),
        virtualisation=_virtualisation(),
        container=_detect_virt("--container") or "none",
        aslr=_read("/proc/sys/kernel/randomize_va_space", "unknown"),
        bpf_jit=_read("/proc/sys/net/core/bpf_jit_enable", "unknown"),
        loadavg_1m=os.getloadavg()[0],
        mem_total_kib=_meminfo_kib("MemTotal"),
        mem_available_kib=_meminfo_kib("MemAvailable"),
        page_size=os.sysconf("SC_PAGE_SIZE"),
        python=platform.python_version(),
        timer=_timer_probe(build_dir),
        perf_counters=_probe_perf_counters().available,
        busy_processes=busy_processes(),
        microcode=_microcode(),
        smt_control=_read("/sys/devices/system/cpu/smt/control", "not exposed"),
        thp_defrag=_bracketed(_read("/sys/kernel/mm/transparent_hugepage/defrag", "absent")),
        mitigations=_mitigations(),
        sysctls=sysctls(),
        kernel_config=kernel_config(),
        kernel_cmdline_sha256=cmdline_digest(),
        machine_id=drift.machine_hash(),
        boot_id=drift.boot_hash(),
    )


# Kernel options that change what these mechanisms cost (preemption, timer tick, BPF JIT,
# THP, uprobes, memcg, page-table isolation, debugging that slows the mm). Prefixes end in '_'.
_CONFIG_OPTIONS = (
    "CONFIG_PREEMPT", "CONFIG_PREEMPT_", "CONFIG_HZ", "CONFIG_NO_HZ_", "CONFIG_BPF_JIT",
    "CONFIG_BPF_JIT_", "CONFIG_BPF_SYSCALL", "CONFIG_TRANSPARENT_HUGEPAGE",
    "CONFIG_TRANSPARENT_HUGEPAGE_", "CONFIG_UPROBES", "CONFIG_UPROBE_EVENTS", "CONFIG_MEMCG",
    "CONFIG_MITIGATION_PAGE_TABLE_ISOLATION", "CONFIG_MITIGATION_RETPOLINE", "CONFIG_KASAN",
    "CONFIG_DEBUG_VM", "CONFIG_PROVE_LOCKING", "CONFIG_HAVE_MOVE_PMD", "CONFIG_HAVE_MOVE_PUD",
    "CONFIG_NUMA_BALANCING", "CONFIG_INIT_ON_ALLOC_DEFAULT_ON",
)
# Sysctls the benchmarked mechanisms depend on: BPF (JIT, hardening, unprivileged use),
# perf events, address-space layout, mappings and overcommit, NUMA balancing.
SYSCTLS = (
    "net.core.bpf_jit_enable", "net.core.bpf_jit_harden", "kernel.unprivileged_bpf_disabled",
    "kernel.perf_event_paranoid", "kernel.randomize_va_space", "kernel.numa_balancing",
    "vm.max_map_count", "vm.overcommit_memory", "vm.nr_hugepages", "vm.swappiness",
)


def _config_text() -> tuple[str, str]:
    """The running kernel's config and where it came from, or ('', '') when unreadable."""
    try:
        with gzip.open("/proc/config.gz", "rt") as f:
            return f.read(), "/proc/config.gz"
    except OSError:
        pass
    path = f"/boot/config-{os.uname().release}"
    text = _read(path)
    return (text, path) if text else ("", "")


def kernel_config() -> dict[str, Any]:
    """The kernel options that matter here and a digest of the whole config, so two hosts'
    configs compare at a glance (same digest: same config)."""
    text, source = _config_text()
    if not text:
        return {"source": "not readable (no /proc/config.gz or /boot/config-<release>)"}
    options: dict[str, str] = {}
    for line in text.splitlines():
        name, _, value = line.partition("=")
        if value and any(name == o or (o.endswith("_") and name.startswith(o))
                         for o in _CONFIG_OPTIONS):
            options[name] = value
    return {"source": source, "sha256": hashlib.sha256(text.encode()).hexdigest()[:16],
            "options": options}


def cmdline_digest() -> str:
    """The running kernel's command line, hashed ('' when unreadable)."""
    text = _read("/proc/cmdline").strip()
    return hashlib.sha256(text.encode()).hexdigest()[:16] if text else ""


def _microcode() -> str:
    for line in _read("/proc/cpuinfo").splitlines():
        if line.startswith("microcode"):
            return line.split(":", 1)[1].strip()
    return "not exposed"


def _mitigations() -> dict[str, str]:
    root = Path("/sys/devices/system/cpu/vulnerabilities")
    try:
        return {p.name: _read(str(p)) for p in sorted(root.iterdir())}
    except OSError:
        return {}


def sysctls() -> dict[str, str]:
    return {name: _read("/proc/sys/" + name.replace(".", "/"), "absent") for name in SYSCTLS}


def noise_warnings(host: HostFacts) -> list[str]:
    """Conditions that make numbers noisy. Printed with every run, never hidden."""
    out: list[str] = []
    cores, load = host.cores, host.loadavg_1m
    if load > 0.5 * cores:
        out.append(f"load average {load:.2f} is above 0.5 per core ({cores} cores): "
                   "other work is competing; close it or expect wider intervals")
    if host.virtualisation != "none":
        out.append(f"virtualised ({host.virtualisation}): steal time and exits add noise; "
                   "compare ratios within one run, not absolute times across runs")
    if host.clocksource not in ("tsc", "arch_sys_counter"):
        out.append(f"clocksource is {host.clocksource}: clock reads are slow or coarse")
    if host.governor not in ("performance", "not exposed"):
        out.append(f"CPU governor is {host.governor}: frequency scaling adds noise "
                   "(cpupower frequency-set -g performance)")
    if cores < 2:
        out.append("one CPU: the measured program shares it with the harness")
    if host.turbo == "on":
        out.append("turbo boost is on: the clock speed follows temperature and load "
                   "(echo 1 > /sys/devices/system/cpu/intel_pstate/no_turbo)")
    if host.smt_active == "yes":
        out.append("SMT is on: a sibling hyperthread shares the measured core's resources")
    if host.thp == "always":
        out.append("THP is 'always': khugepaged may collapse pages during a trial "
                   "(echo madvise > /sys/kernel/mm/transparent_hugepage/enabled)")
    if host.aslr not in ("0", "unknown"):
        out.append("ASLR is on: every trial gets a different address layout; the spread "
                   "across trials includes that (echo 0 > /proc/sys/kernel/randomize_va_space "
                   "to remove it)")
    if host.bpf_jit == "0":
        out.append("the BPF JIT is off: BPF programs run interpreted "
                   "(echo 1 > /proc/sys/net/core/bpf_jit_enable)")
    if host.perf_counters is False:
        out.append("no hardware perf counters: times come from clock_gettime/rdtsc, "
                   "cycle counts are not available")
    busy = host.busy_processes
    if busy:
        out.append(f"other busy processes: {', '.join(busy[:5])}"
                   + (f" and {len(busy) - 5} more" if len(busy) > 5 else ""))
    return out
