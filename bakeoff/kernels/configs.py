"""Each kernel's config as facts: its digest, and the options that differ between kernels."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

_SET = re.compile(r"^(CONFIG_\w+)=(.*)$")
_UNSET = re.compile(r"^# (CONFIG_\w+) is not set$")
# The options the rooms' mechanisms hang on, listed first (bakeoff/machine/host.py records
# the same prefixes of the running kernel).
WATCHED = ("CONFIG_BPF", "CONFIG_DEBUG_INFO_BTF", "CONFIG_MEMCG", "CONFIG_CGROUP",
           "CONFIG_TRANSPARENT_HUGEPAGE", "CONFIG_UPROBE", "CONFIG_PREEMPT", "CONFIG_HZ",
           "CONFIG_MITIGATION_", "CONFIG_HAVE_MOVE_P", "CONFIG_NUMA_BALANCING",
           "CONFIG_INIT_ON_ALLOC", "CONFIG_KASAN", "CONFIG_DEBUG_VM")


def parse(text: str) -> dict[str, str]:
    """CONFIG_X -> its value; an option "is not set" is "n" (as Kconfig reads it)."""
    options = {}
    for line in text.splitlines():
        m = _SET.match(line)
        if m:
            options[m.group(1)] = m.group(2)
        else:
            m = _UNSET.match(line)
            if m:
                options[m.group(1)] = "n"
    return options


def digest(path: Path | None) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path else ""


def differing(configs: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    """Option -> kernel -> value, for the options whose value is not the same in every
    kernel (absent: "-")."""
    names = sorted({o for c in configs.values() for o in c})
    out = {}
    for option in names:
        values = {k: c.get(option, "-") for k, c in configs.items()}
        if len(set(values.values())) > 1:
            out[option] = values
    return out


def watched(options: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    return {o: v for o, v in options.items() if o.startswith(WATCHED)}
