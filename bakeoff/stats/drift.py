"""Run-to-run drift: what a comparison of two runs must allow for beyond each run's own CI.

A run's CI says how well it pinned its medians down *during that run*. Between runs the whole
machine moves (other work, frequency, the host's neighbours): on a 2-vCPU VM a run can read
every case 10-30% slower than the run before it. A comparison of runs that ignores that calls
drift a regression. The model: each run carries one multiplicative offset per case,
log-normal with a standard deviation `sigma` (the run-to-run spread); a ratio new / old of
one run a side then has variance se_within^2 + 2 sigma^2 on the log scale.

Nothing here is hidden state. A `Drift` is measured for one benchmark and metric on one host
(`bakeoff selftest --of DIR` runs DIR's commands again, back to back) and kept *with the run*
it was measured for (DIR/drift.json), dated; `bakeoff compare` reads it from the runs it is
given, uses it only for those cases on that host, and prints which it used. Its degrees of
freedom (the run pairs it rests on) widen the t quantile, so a drift measured on few pairs
widens more.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bakeoff.stats import distributions

DRIFT_FILE = "drift.json"  # in a results directory, beside results.json
DRIFT_VERSION = 2


def state_dir() -> Path:
    """The user's state directory for bakeoff (XDG: $XDG_STATE_HOME, else ~/.local/state):
    where the history's default file lives. No drift is kept there: a drift belongs to the
    run it was measured for (drift.json beside its results.json)."""
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
class Drift:
    """The run-to-run spread of one benchmark's metric, measured on one host."""

    sigma: float  # SD of one run's log-scale offset
    pairs: int  # the run pairs it was estimated from: its degrees of freedom
    host_key: str
    measured_at: str  # UTC, ISO 8601
    how: str  # what was measured (command, runs, trials), for the report
    benchmark: str = ""
    metric: str = ""
    cases: tuple[str, ...] = ()  # the case keys it was measured on

    def applies_to(self, host: dict[str, Any], benchmark: str = "", metric: str = "",
                   case: str = "") -> bool:
        """Measured on this host, for this benchmark, metric and case (each when given)."""
        return (bool(self.host_key) and host_key(host) == self.host_key
                and (not benchmark or benchmark == self.benchmark)
                and (not metric or metric == self.metric)
                and (not case or case in self.cases))

    def words(self) -> str:
        """'±4.1% a run (8 run pairs, measured 2026-11-29 08:10 UTC)'."""
        return (f"±{self.sigma * 100:.1f}% a run ({self.pairs} run pairs, measured "
                f"{self.measured_at[:16].replace('T', ' ')} UTC)")


# The name this record had when one spread served every benchmark (kept for callers).
RunSpread = Drift


def drift_path(run_dir: Path) -> Path:
    return Path(run_dir) / DRIFT_FILE


def load_drifts(run_dir: Path) -> list[Drift]:
    """The drifts recorded with a run (none when it has no drift.json, or one this version
    cannot read: a damaged file is as good as none, and compare then says inconclusive)."""
    try:
        d = json.loads(drift_path(run_dir).read_text())
        if d.get("version") != DRIFT_VERSION:
            return []
        out = [Drift(float(e["sigma"]), int(e["pairs"]), str(e["host_key"]),
                     str(e["measured_at"]), str(e["how"]), str(e["benchmark"]),
                     str(e["metric"]), tuple(str(c) for c in e["cases"]))
               for e in d["drifts"]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return []
    return [x for x in out if math.isfinite(x.sigma) and x.sigma >= 0 and x.pairs >= 1]


def save_drift(run_dir: Path, drift: Drift) -> Path:
    """Record a drift with the run (replacing one of the same benchmark, metric and host)."""
    path = drift_path(run_dir)
    kept = [d for d in load_drifts(run_dir)
            if (d.benchmark, d.metric, d.host_key) != (drift.benchmark, drift.metric,
                                                        drift.host_key)]
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"version": DRIFT_VERSION,
                               "drifts": [asdict(d) for d in [*kept, drift]]}, indent=2) + "\n")
    tmp.replace(path)
    return path


def latest(drifts: list[Drift], host: dict[str, Any], benchmark: str, metric: str,
           case: str) -> Drift | None:
    """The most recently measured drift that applies to this case, or None."""
    fitting = [d for d in drifts if d.applies_to(host, benchmark, metric, case)]
    return max(fitting, key=lambda d: d.measured_at) if fitting else None


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
    z = distributions.norm_ppf(0.5 + confidence / 2)
    if not (ci_low > 0 and ci_high > 0 and math.isfinite(ci_low) and math.isfinite(ci_high)):
        return math.inf
    return (math.log(ci_high) - math.log(ci_low)) / (2 * z)


def widened(ratio: float, se_within: float, spread: Drift,
            confidence: float = 0.95) -> tuple[float, float, float]:
    """(ci_low, ci_high, p) of a one-run-a-side ratio with the run-to-run spread added:
    log ratio +- t * sqrt(se^2 + 2 sigma^2), t on Welch-Satterthwaite degrees of freedom
    (the spread's pairs; the within-run part counts as known)."""
    drift_var = 2 * spread.sigma ** 2
    total = se_within ** 2 + drift_var
    if not math.isfinite(total):
        return 0.0, math.inf, 1.0
    if total == 0:
        return ratio, ratio, 0.0 if ratio != 1 else 1.0
    df = spread.pairs * (total / drift_var) ** 2 if drift_var > 0 else math.inf
    se = math.sqrt(total)
    t = distributions.t_ppf(0.5 + confidence / 2, df)
    lr = math.log(ratio)
    p = 2 * distributions.t_sf(abs(lr) / se, df)
    return math.exp(lr - t * se), math.exp(lr + t * se), p


def runs_as_unit(old_logs: list[float], new_logs: list[float],
                 confidence: float = 0.95) -> tuple[float, float, float, float]:
    """(ratio, ci_low, ci_high, p) with each run one observation: the runs' log medians,
    a pooled-variance t interval on the difference of their means (df = runs - 2). Two runs
    a side give 2 degrees of freedom: wide, as the evidence is."""
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
    t = distributions.t_ppf(0.5 + confidence / 2, df)
    p = 2 * distributions.t_sf(abs(diff) / se, df)
    return math.exp(diff), math.exp(diff - t * se), math.exp(diff + t * se), p
