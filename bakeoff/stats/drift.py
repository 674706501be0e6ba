"""Run-to-run drift: what a comparison of two runs must allow for beyond each run's own CI.

A run's CI says how well it pinned its medians down *during that run*. Between runs the whole
machine moves (other work, frequency, the host's neighbours): on a 2-vCPU VM a run can read
every case 10-30% slower than the run before it. A comparison of runs that ignores that calls
drift a regression. The model: each run carries one multiplicative offset per case,
log-normal with a standard deviation `sigma` (the run-to-run spread); a ratio new / old of
one run a side then has variance se_within^2 + 2 sigma^2 on the log scale.

`sigma` comes from `bakeoff selftest` (bakeoff/selftest/aa_runs.py), which measures it on this host
and records it in the user's state directory ($XDG_STATE_HOME/bakeoff/run-spread.json); its
degrees of freedom (the run pairs it rests on) widen the t quantile, so a spread measured on
few pairs widens more. A spread applies only to runs of the host it was measured on.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bakeoff.core import lazy

SPREAD_FILE = "run-spread.json"
SPREAD_VERSION = 1


def state_dir() -> Path:
    """The user's state directory for bakeoff (XDG: $XDG_STATE_HOME, else ~/.local/state)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "bakeoff"


def _hashed(text: str) -> str:
    # A machine or boot id identifies a machine; results travel, so only a hash is recorded:
    # enough to tell "the same machine" without publishing the id.
    return hashlib.sha256(text.strip().encode()).hexdigest()[:16] if text.strip() else ""


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def machine_hash() -> str:
    """This machine (or container image's) /etc/machine-id, hashed; '' when it has none."""
    return _hashed(_read("/etc/machine-id") or _read("/var/lib/dbus/machine-id"))


def boot_hash() -> str:
    """This boot of the kernel, hashed: two hosts with one boot id are one kernel (network
    namespaces or containers on one machine), whatever their names."""
    return _hashed(_read("/proc/sys/kernel/random/boot_id"))


def host_key(host: dict[str, Any]) -> str:
    """Which host a run's facts are of: its machine id hash, else (older runs) its name."""
    return str(host.get("machine_id") or host.get("hostname") or "")


@dataclass(frozen=True)
class RunSpread:
    """The run-to-run spread measured on one host."""

    sigma: float  # SD of one run's log-scale offset
    pairs: int  # the run pairs it was estimated from: its degrees of freedom
    host_key: str
    measured_at: str
    how: str  # what was measured (command, runs, trials), for the report

    def applies_to(self, host: dict[str, Any]) -> bool:
        return bool(self.host_key) and host_key(host) == self.host_key


def spread_path() -> Path:
    return state_dir() / SPREAD_FILE


def load_spread() -> RunSpread | None:
    """The recorded spread, or None: none recorded, or a file this version cannot read (a
    damaged file is as good as none: compare then says the change cannot be told)."""
    try:
        d = json.loads(spread_path().read_text())
        if d.get("version") != SPREAD_VERSION:
            return None
        spread = RunSpread(float(d["sigma"]), int(d["pairs"]), str(d["host_key"]),
                           str(d["measured_at"]), str(d["how"]))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    if not (math.isfinite(spread.sigma) and spread.sigma >= 0 and spread.pairs >= 1):
        return None
    return spread


def save_spread(spread: RunSpread, path: Path | None = None) -> Path:
    path = path or spread_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"version": SPREAD_VERSION, **asdict(spread)}, indent=2) + "\n")
    tmp.replace(path)
    return path


def estimate_sigma(log_diffs: list[float], within_vars: list[float]) -> float:
    """sigma from run pairs: each pair's log ratio d = offset_new - offset_old + within-run
    error, so E[d^2] = 2 sigma^2 + (se_old^2 + se_new^2); `within_vars` holds each pair's
    se_old^2 + se_new^2. Never below 0 (drift smaller than the runs' own noise reads 0)."""
    if not log_diffs:
        raise ValueError("no run pairs")
    excess = float(sum(d * d for d in log_diffs) - sum(within_vars)) / len(log_diffs)
    return math.sqrt(max(0.0, excess) / 2)


def log_se_of_ci(ci_low: float, ci_high: float, confidence: float = 0.95) -> float:
    """The log-scale standard error a (log-symmetric enough) ratio CI implies."""
    z = float(lazy.load("scipy.stats").norm.ppf(0.5 + confidence / 2))
    if not (ci_low > 0 and ci_high > 0 and math.isfinite(ci_low) and math.isfinite(ci_high)):
        return math.inf
    return (math.log(ci_high) - math.log(ci_low)) / (2 * z)


def widened(ratio: float, se_within: float, spread: RunSpread,
            confidence: float = 0.95) -> tuple[float, float, float]:
    """(ci_low, ci_high, p) of a one-run-a-side ratio with the run-to-run spread added:
    log ratio +- t * sqrt(se^2 + 2 sigma^2), t on Welch-Satterthwaite degrees of freedom
    (the spread's pairs; the within-run part counts as known)."""
    st = lazy.load("scipy.stats")
    drift_var = 2 * spread.sigma ** 2
    total = se_within ** 2 + drift_var
    if not math.isfinite(total):
        return 0.0, math.inf, 1.0
    if total == 0:
        return ratio, ratio, 0.0 if ratio != 1 else 1.0
    df = spread.pairs * (total / drift_var) ** 2 if drift_var > 0 else math.inf
    se = math.sqrt(total)
    t = float(st.t.ppf(0.5 + confidence / 2, df))
    lr = math.log(ratio)
    p = float(2 * st.t.sf(abs(lr) / se, df))
    return math.exp(lr - t * se), math.exp(lr + t * se), p


def runs_as_unit(old_logs: list[float], new_logs: list[float],
                 confidence: float = 0.95) -> tuple[float, float, float, float]:
    """(ratio, ci_low, ci_high, p) with each run one observation: the runs' log medians,
    a pooled-variance t interval on the difference of their means (df = runs - 2). Two runs
    a side give 2 degrees of freedom: wide, as the evidence is."""
    st = lazy.load("scipy.stats")
    n_o, n_n = len(old_logs), len(new_logs)
    if n_o < 2 or n_n < 2:
        raise ValueError("two runs a side at least")
    m_o, m_n = sum(old_logs) / n_o, sum(new_logs) / n_n
    ss = sum((x - m_o) ** 2 for x in old_logs) + sum((x - m_n) ** 2 for x in new_logs)
    df = n_o + n_n - 2
    se = math.sqrt(ss / df * (1 / n_o + 1 / n_n))
    diff = m_n - m_o
    if se == 0:
        return math.exp(diff), math.exp(diff), math.exp(diff), 0.0 if diff != 0 else 1.0
    t = float(st.t.ppf(0.5 + confidence / 2, df))
    p = float(2 * st.t.sf(abs(diff) / se, df))
    return math.exp(diff), math.exp(diff - t * se), math.exp(diff + t * se), p
