"""Host facts as (label, text) rows and the one-line machine they name, the same in every
report and in the analysis across hosts (which compares the rows host by host)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# host.py is written in parallel; accept the names it is likely to use, first match wins.
_HOSTNAME_KEYS = ("hostname", "host", "nodename", "node")
_KERNEL_KEYS = ("kernel", "kernel_release", "release", "uname.release", "os.kernel")
_CPU_KEYS = ("cpu_model", "cpu.model", "cpu.model_name", "cpu", "model_name", "cpu_name")


def fact_text(value: Any) -> str:
    """One fact value as text: yes/no for flags, comma lists for short sequences."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list | tuple):
        return ", ".join(fact_text(v) for v in value)
    return str(value)


def flatten_facts(facts: Mapping[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    """Nested facts as dotted rows ('thp.enabled', 'madvise'), so one table shows them all.

    Lists of mappings (one per CPU, per NUMA node) get an index: 'nodes[0].mem_total'.
    """
    rows: list[tuple[str, str]] = []
    for key, value in facts.items():
        label = f"{prefix}{key}"
        if isinstance(value, Mapping):
            nested = flatten_facts(value, label + ".")
            rows.extend(nested or [(label, "—")])
        elif isinstance(value, list | tuple) and any(isinstance(v, Mapping) for v in value):
            for i, item in enumerate(value):
                if isinstance(item, Mapping):
                    rows.extend(flatten_facts(item, f"{label}[{i}]."))
                else:
                    rows.append((f"{label}[{i}]", fact_text(item)))
        else:
            rows.append((label, fact_text(value)))
    return rows


@dataclass(frozen=True)
class Machine:
    hostname: str
    kernel: str
    cpu: str

    def sentence(self) -> str:
        return f"{self.hostname}, Linux {self.kernel}, {self.cpu}"


def machine(host: Mapping[str, Any]) -> Machine:
    flat = dict(flatten_facts(host))

    def first(keys: tuple[str, ...]) -> str:
        return next((flat[k] for k in keys if flat.get(k) not in (None, "", "—")), "unknown")

    return Machine(first(_HOSTNAME_KEYS), first(_KERNEL_KEYS), first(_CPU_KEYS))
