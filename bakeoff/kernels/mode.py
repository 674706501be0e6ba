"""Functional or timed: the machine decides, and a refusal says why, never silently.

Timed needs hardware virtualization (`kvm_intel` or `kvm_amd` loaded and /dev/kvm there):
under qemu's emulator (TCG) a guest's timings measure the emulator, not the kernel (three
boots of one kernel under TCG here gave a memcpy/mremap ratio spread as wide as the gap
between 6.1 and 6.12: docs/KERNELS.md). A paravirtual KVM (`kvm_pvm`, nested on a cloud
host) does not boot stock kernels, so it counts as none.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from bakeoff.core.errors import UsageError

Mode = Literal["functional", "timed"]
HARDWARE_KVM = ("kvm_intel", "kvm_amd")
OTHER_KVM = ("kvm_pvm",)


@dataclass(frozen=True)
class Accel:
    """What this machine gives a guest: hardware KVM, or the emulator and why."""

    hardware: bool
    why: str  # "kvm_intel", or what stands in the way of timing ("kvm_pvm", "no /dev/kvm")


def probe(sys_module: Path = Path("/sys/module"), dev_kvm: Path = Path("/dev/kvm")) -> Accel:
    loaded = [m for m in (*HARDWARE_KVM, *OTHER_KVM) if (sys_module / m).is_dir()]
    hardware = [m for m in loaded if m in HARDWARE_KVM]
    if hardware and dev_kvm.exists():
        return Accel(True, hardware[0])
    if not dev_kvm.exists():
        return Accel(False, "no /dev/kvm")
    if loaded:
        return Accel(False, f"/dev/kvm is {loaded[0]}, not kvm_intel or kvm_amd")
    return Accel(False, "/dev/kvm has no kvm_intel or kvm_amd behind it")


def choose(functional: bool, accel: Accel) -> Mode:
    """--functional asks for the check; otherwise a timed run, refused where it would time
    an emulator, in one line offering the check."""
    if functional:
        return "functional"
    if not accel.hardware:
        raise UsageError(f"--kernel: a timed run needs hardware KVM and here {accel.why}: "
                         "guests would run under qemu's emulator, whose timings measure the "
                         "emulator; add --functional to check what runs on each kernel")
    return "timed"
