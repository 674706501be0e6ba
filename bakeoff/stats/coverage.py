"""How often a 95% interval covers the truth: by simulation, and on real trials resampled A/A.

This is how stats' interval method was chosen and how its stated coverage is checked
(docs/STATISTICS.md has the table; scripts/coverage regenerates it; tests/test_coverage.py
checks the chosen method's figures). Nothing here runs in a benchmark run.

A draw is one simulated (or resampled) comparison: n trials a side, each trial a few samples.
A method maps (variant trials, baseline trials) to an interval of the ratio of their medians;
its coverage is the share of draws whose interval holds the true ratio. In simulation the
variant is the baseline's distribution scaled by a factor, so the true ratio is that factor
for any scale-equivariant method and A/A (factor 1) loses nothing. On real trials, both sides
are drawn without overlap from the trials of one recorded case: A/A by construction.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bakeoff.stats import estimates as stats

TRIAL_COUNTS = (3, 5, 10, 20)

# A comparison's sides: per trial, its round and its samples.
Side = list[tuple[int, list[float]]]
Interval = tuple[float, float]
RatioMethod = Callable[[Side, Side, np.random.Generator], Interval]


# ---- noise models: how one case's trials vary ------------------------------------------


@dataclass(frozen=True)
class NoiseModel:
    """Log-scale noise of one case's trials. A trial's samples are exp(offset + round drift +
    sample noise); offset is the trial's own level (process placement, page layout)."""

    name: str
    description: str
    trial_sd: float  # per-trial offset, normal on log scale
    sample_sd: float  # within a trial, normal on log scale
    samples: int  # per trial
    outlier_share: float = 0.0  # share of trials slowed by outlier_factor
    outlier_factor: float = 1.0
    sample_outlier_share: float = 0.0  # share of samples slowed 3x (preemption, a page fault)
    drift_sd: float = 0.0  # sd of the log-drift per round's span (random slope, both sides)

    def draw(self, n: int, rng: np.random.Generator, drift: FloatArray | None = None) -> Side:
        offsets = rng.normal(0.0, self.trial_sd, n)
        slow = rng.random(n) < self.outlier_share
        offsets = offsets + np.where(slow, math.log(self.outlier_factor), 0.0)
        if drift is not None:
            offsets = offsets + drift
        out: Side = []
        for i in range(n):
            s = offsets[i] + rng.normal(0.0, self.sample_sd, self.samples)
            if self.sample_outlier_share:
                s = s + np.where(rng.random(self.samples) < self.sample_outlier_share,
                                 math.log(3.0), 0.0)
            out.append((i, [float(v) for v in np.exp(s)]))
        return out

    def drift(self, n: int, rng: np.random.Generator) -> FloatArray | None:
        """A drift across rounds that hits both sides alike (they are interleaved): a random
        slope, centred on the run's middle round."""
        if not self.drift_sd:
            return None
        rounds = np.arange(n, dtype=np.float64)
        slope = float(rng.normal(0.0, self.drift_sd))
        out: FloatArray = slope * (rounds - rounds.mean()) / max(n - 1, 1)
        return out


FloatArray = stats.FloatArray

NOISE_MODELS = (
    NoiseModel("lognormal", "per-trial level lognormal (sd 10%), 5 samples sd 3%",
               trial_sd=0.10, sample_sd=0.03, samples=5),
    NoiseModel("heavy-tail", "lognormal (sd 5%), 10% of trials 1.5x slower, 5% of samples 3x",
               trial_sd=0.05, sample_sd=0.03, samples=5, outlier_share=0.10,
               outlier_factor=1.5, sample_outlier_share=0.05),
    NoiseModel("drift", "lognormal (sd 5%) and a drift across rounds (sd 20% end to end)",
               trial_sd=0.05, sample_sd=0.03, samples=5, drift_sd=0.20),
    NoiseModel("within-trial", "small per-trial level (sd 2%), 50 skewed samples (sd 30%)",
               trial_sd=0.02, sample_sd=0.30, samples=50),
)


# ---- candidate methods ------------------------------------------------------------------


def _samples(side: Side) -> list[list[float]]:
    return [s for _, s in side]


def percentile_bootstrap(v: Side, b: Side, rng: np.random.Generator) -> Interval:
    """What bakeoff printed before: trials resampled, pooled medians, 2.5/97.5 percentiles."""
    boot = (stats.bootstrap_medians(_samples(v), rng, 1000)
            / stats.bootstrap_medians(_samples(b), rng, 1000))
    lo, hi = np.quantile(boot, [0.025, 0.975])
    return float(lo), float(hi)


def widened_bootstrap(v: Side, b: Side, rng: np.random.Generator) -> Interval:
    """The percentile interval, widened about the point on log scale by t(n-1)/z·sqrt(n/(n-1))
    (n: the smaller side): the small-sample correction a bootstrap of n clusters lacks."""
    lo, hi = percentile_bootstrap(v, b, rng)
    point = math.log(_pooled(v) / _pooled(b))
    n = min(len(v), len(b))
    t = _t_quantile(n - 1)
    k = t / 1.959963984540054 * math.sqrt(n / (n - 1))
    return (math.exp(point - k * (point - math.log(lo))),
            math.exp(point + k * (math.log(hi) - point)))


def welch_t_log(v: Side, b: Side, rng: np.random.Generator) -> Interval:
    """Welch t interval of the difference of mean log per-trial medians (allocation's rule)."""
    lv, lb = _log_medians(v), _log_medians(b)
    se2v, se2b = lv.var(ddof=1) / lv.size, lb.var(ddof=1) / lb.size
    df = _welch_df(se2v, se2b, lv.size, lb.size)
    d, half = float(lv.mean() - lb.mean()), _t_quantile(df) * math.sqrt(se2v + se2b)
    return math.exp(d - half), math.exp(d + half)


def bakeoff_ratio_ci(v: Side, b: Side, rng: np.random.Generator) -> Interval:
    """The method bakeoff uses (stats.ratio_ci): paired by round, t on log per-trial medians,
    centred on the pooled ratio."""
    r = stats.ratio_ci(_samples(v), _samples(b), variant_rounds=[r for r, _ in v],
                       baseline_rounds=[r for r, _ in b])
    return r.ci_low, r.ci_high


def round_paired_t(v: Side, b: Side, rng: np.random.Generator) -> Interval:
    """One-sample t on per-round log ratios of trial medians (the rounds pair the sides:
    what a round shares, drift or a busy machine, cancels); n - 1 degrees of freedom."""
    by_round = {r: float(np.median(s)) for r, s in b}
    pairs = [(math.log(float(np.median(s))), math.log(by_round[r])) for r, s in v if r in by_round]
    d = np.array([a - c for a, c in pairs])
    half = _t_quantile(d.size - 1) * float(d.std(ddof=1)) / math.sqrt(d.size)
    return math.exp(float(d.mean()) - half), math.exp(float(d.mean()) + half)


METHODS: dict[str, RatioMethod] = {
    "percentile-bootstrap": percentile_bootstrap,
    "widened-bootstrap": widened_bootstrap,
    "welch-t-log": welch_t_log,
    "round-paired-t": round_paired_t,
    stats.INTERVAL_METHOD: bakeoff_ratio_ci,
}
# Bootstraps cost ~1000x a t interval: they get fewer draws.
_SLOW = {"percentile-bootstrap", "widened-bootstrap"}


def _pooled(side: Side) -> float:
    return float(np.median(np.concatenate([np.asarray(s) for _, s in side])))


def _log_medians(side: Side) -> FloatArray:
    out: FloatArray = np.log(np.array([float(np.median(s)) for _, s in side]))
    return out


def _welch_df(a: float, b: float, na: int, nb: int) -> float:
    return stats.welch_df(a, b, na, nb)


def _t_quantile(df: float) -> float:
    return stats.t_quantile(df, stats.CONFIDENCE)


# ---- coverage --------------------------------------------------------------------------


@dataclass(frozen=True)
class Cell:
    method: str
    source: str  # a noise model's name, or "real: <what>"
    n: int  # trials a side
    draws: int
    covered: int

    @property
    def coverage(self) -> float:
        return self.covered / self.draws


def simulated(method: str, model: NoiseModel, n: int, draws: int, seed: int) -> Cell:
    """Share of `draws` simulated A/A comparisons whose interval holds 1."""
    rng = np.random.default_rng([seed, n, *map(ord, model.name), *map(ord, method)])
    fn = METHODS[method]
    covered = 0
    for _ in range(draws):
        drift = model.drift(n, rng)
        lo, hi = fn(model.draw(n, rng, drift), model.draw(n, rng, drift), rng)
        covered += lo <= 1.0 <= hi
    return Cell(method, model.name, n, draws, covered)


def median_coverage(model: NoiseModel, n: int, draws: int, seed: int) -> Cell:
    """Share of simulated cases whose stats.median_ci holds the true median of the typical
    trial (the geometric mean of trial medians, from 20000 trials): what the interval is of."""
    rng = np.random.default_rng([seed, n, *map(ord, model.name)])
    truth = float(np.exp(np.mean(_log_medians(model.draw(20000, rng)))))
    covered = 0
    for _ in range(draws):
        s = stats.median_ci(_samples(model.draw(n, rng, model.drift(n, rng))))
        covered += s.low <= truth <= s.high
    return Cell("median: " + stats.INTERVAL_METHOD, model.name, n, draws, covered)


def real_aa(method: str, cases: dict[str, Side], n: int, draws: int, seed: int,
            label: str) -> Cell:
    """Coverage of 1 by A/A comparisons drawn from recorded trials: per draw a case (in turn),
    then 2n of its trials without replacement, split into two sides of n. Sides keep their
    trials' rounds, so a round-paired method pairs the trials that ran closest in time."""
    rng = np.random.default_rng([seed, n, *map(ord, label), *map(ord, method)])
    usable = [side for side in cases.values() if len(side) >= 2 * n]
    if not usable:
        raise ValueError(f"no case has {2 * n} trials")
    fn = METHODS[method]
    covered = 0
    for k in range(draws):
        side = usable[k % len(usable)]
        picks = rng.permutation(len(side))[: 2 * n]
        # Pair trial j of one side with trial j of the other by renumbering rounds: two
        # trials of one case never share a round, so a pair is two neighbours in time, each
        # going to either side by a coin (so 2n trials give 2^n splits, not one).
        chosen = sorted((side[i] for i in picks), key=lambda t: t[0])
        flips = rng.random(n) < 0.5
        a = [(j, chosen[2 * j + int(f)][1]) for j, f in enumerate(flips)]
        b = [(j, chosen[2 * j + 1 - int(f)][1]) for j, f in enumerate(flips)]
        lo, hi = fn(a, b, rng)
        covered += lo <= 1.0 <= hi
    return Cell(method, label, n, draws, covered)


def load_trials(path: Path) -> dict[str, Side]:
    """A fixture written by extract_trials: case key -> [(round, samples)]."""
    data = json.loads(path.read_text())
    return {k: [(int(r), [float(x) for x in s]) for r, s in v] for k, v in data["cases"].items()}


def extract_trials(results_json: Path, metric: str | None = None) -> dict[str, object]:
    """The ok trials of every case of a recorded run, for one metric (the first benchmark's
    primary by default): a small fixture of real trials."""
    run = json.loads(results_json.read_text())
    name, info = next(iter(run["benchmarks"].items()))
    metric = metric or str(info.get("primary_metric") or info["metrics"][0]["name"])
    cases: dict[str, list[tuple[int, list[float]]]] = {}
    for t in run["trials"]:
        if t["status"] != "ok" or not t["samples"].get(metric):
            continue
        c = t["case"]
        key = c["variant"] + " " + ",".join(f"{k}={v}" for k, v in sorted(c["params"].items()))
        cases.setdefault(key, []).append((int(t["round"]), [float(x) for x in
                                                           t["samples"][metric]]))
    return {"benchmark": name, "metric": metric, "run_id": run["run_id"],
            "started_at": run["started_at"], "profile": run["profile"], "cases": cases}


def table(cells: Sequence[Cell]) -> str:
    """A markdown table: a row per (method, source), a column per trial count."""
    ns = sorted({c.n for c in cells})
    rows: dict[tuple[str, str], dict[int, Cell]] = {}
    for c in cells:
        rows.setdefault((c.method, c.source), {})[c.n] = c
    lines = ["| method | data | " + " | ".join(f"n = {n}" for n in ns) + " |",
             "|---|---|" + "---|" * len(ns)]
    for (method, source), by_n in rows.items():
        figures = [f"{by_n[n].coverage * 100:.1f}% ({by_n[n].draws})" if n in by_n else "—"
                   for n in ns]
        lines.append(f"| {method} | {source} | " + " | ".join(figures) + " |")
    return "\n".join(lines)


def binomial_tolerance(p: float, draws: int, z: float = 3.0) -> float:
    """z standard errors of a share p over draws: a test's bound that a right method fails
    about 3 times in 1000 runs."""
    return z * math.sqrt(p * (1 - p) / draws)


def slow(method: str) -> bool:
    return method in _SLOW
