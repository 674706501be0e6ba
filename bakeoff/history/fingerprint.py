"""Which machine a run was measured on, as a series key: a fingerprint stable across reboots
that still splits a series wherever the measured ground changed.

Kept in the key (a change starts a new series): the machine id's hash, the kernel release, the
kernel config's digest, the kernel command line's digest, the CPU model and its microcode. A
reboot into the same kernel with the same command line keeps the series; a new kernel, a new
`mitigations=` or a microcode update starts another, because numbers across such a change are
not the same measurement. Left out: the boot id, the hostname (renaming a machine changes
nothing measured), load and free memory (they change run to run and are the run's own facts).

A fleet host's run carries its inventory name (the label fleet_host, which bakeoff fleet run
gives every host's run): it is kept in the key and is the name the history shows, because
hosts of one fleet may share everything else (containers of one box, cloned VMs with one
machine id and hostname) and are still different hosts, each its own series.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from typing import Any

from bakeoff.machine import host as hostmod
from bakeoff.stats import drift


@dataclass(frozen=True)
class Fingerprint:
    machine_id: str  # /etc/machine-id hashed (stats/drift.py); '' when the host had none
    hostname: str  # shown, and the identity only when there is no machine id
    kernel: str
    kernel_config: str  # sha256 prefix of the whole running config (machine/host.py)
    kernel_cmdline: str  # sha256 prefix of /proc/cmdline; '' when not recorded
    cpu_model: str
    microcode: str
    fleet_host: str = ""  # the inventory name of a fleet run's host; '' for any other run

    @property
    def key(self) -> str:
        """The series-splitting facts hashed: 16 hex digits."""
        facts = asdict(self)
        if self.machine_id:
            facts.pop("hostname")
        if not self.fleet_host:  # runs recorded before fleets named their hosts keep their key
            facts.pop("fleet_host")
        text = json.dumps(facts, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @property
    def name(self) -> str:
        """How a reader tells the machine: its hostname and the key's first digits."""
        return f"{self.shown_host}/{self.key[:8]}"

    @property
    def shown_host(self) -> str:
        """The fleet's name of the host where it has one (what `--machine` filters on)."""
        return self.fleet_host or self.hostname


def _cmdline(host: dict[str, Any]) -> str:
    """The record's command-line digest; for a run of this very boot (an import right after
    the run, or a record made before hosts recorded it) today's /proc/cmdline is that boot's."""
    recorded = str(host.get("kernel_cmdline_sha256") or "")
    if recorded:
        return recorded
    if host.get("boot_id") and host.get("boot_id") == drift.boot_hash():
        return hostmod.cmdline_digest()
    return ""


FLEET_HOST_LABEL = "fleet_host"


def of_host(host: dict[str, Any], fleet_host: str = "") -> Fingerprint:
    """The fingerprint of a run's recorded host facts (results.json "host"); fleet_host: the
    run's label of that name."""
    config = host.get("kernel_config") or {}
    return Fingerprint(
        machine_id=str(host.get("machine_id") or ""),
        hostname=str(host.get("hostname") or "unknown"),
        kernel=str(host.get("kernel") or "unknown"),
        kernel_config=str(config.get("sha256", "")) if isinstance(config, dict) else "",
        kernel_cmdline=_cmdline(host),
        cpu_model=str(host.get("cpu_model") or "unknown"),
        microcode=str(host.get("microcode") or "not exposed"),
        fleet_host=fleet_host,
    )
