"""Runs side by side (before and after a kernel patch): per case, did it get slower?

Cases match by benchmark, variant and params. The ratio is new median / old median. Runs
drift (bakeoff/stats/drift.py): the whole machine can be slower during one run, so a run's own CI
does not bound a change between runs. The CI of a change therefore rests on one of:

- "runs": two or more runs a side; each run is one observation (its log median), and a
  pooled t interval over the runs gives the CI;
- "drift": one run a side, widened by the drift measured for that benchmark and metric on
  this host (`bakeoff selftest --of DIR`, kept in DIR/drift.json with the run, dated);
- "interleaved": `compare --rerun` measured both sides again in one run, paired by round:
  the drift hits both alike and the run's own CI holds;
- "one run": one run a side and no drift measured for it: the within-run CI is shown, and
  the verdict is inconclusive, naming `compare --rerun` or `selftest --of` as the fix: a
  change of one run a side cannot be told from drift on within-run CIs alone.

Verdicts are stats/verdicts.py's three (faster/slower, equivalent, inconclusive), by the CI's
p Holm-corrected across every matched case that has one, and the CI against the practical
threshold, as within a run. The gate (`regressed_beyond`) fails only a case that verdict
calls slower.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Final, Literal

import numpy as np

from bakeoff.core.errors import UsageError
from bakeoff.declare.model import BenchmarkInfo, Case, RunRecord
from bakeoff.stats import drift, verdicts
from bakeoff.stats import estimates as stats

ChangeVerdict = verdicts.Verdict
Basis = Literal["runs", "drift", "one run", "interleaved"]
# What an inconclusive case of one run a side with no measured drift needs: for `cmd` runs,
# a rerun or the command's drift; for a room's, more runs a side (--rerun and selftest --of
# measure commands, and a room's runs record none).
NO_DRIFT_FIX: Final = ("`bakeoff compare OLD NEW --rerun` (`cmd` runs: both measured again, "
                       "interleaved), or `bakeoff selftest --of OLD` (measures this command's "
                       "drift and keeps it with the run), or two or more runs a side")
NO_DRIFT_FIX_ROOM: Final = ("two or more runs a side (`bakeoff compare OLD NEW --old OLD2 --new "
                            "NEW2`): each run is then one observation, drift and all")


@dataclass
class CaseChange:
    case: Case
    info: BenchmarkInfo
    metric: str
    unit: str
    old: stats.Summary  # every old run's trials pooled
    new: stats.Summary
    ratio: stats.Ratio  # new / old, its CI on the basis below
    p_holm: float
    verdict: ChangeVerdict  # of new against old
    lower_is_better: bool
    signed: bool = False  # old and new are summaries of |value|
    basis: Basis = "one run"
    drift: drift.Drift | None = None  # basis "drift": the one used
    settle: str = ""  # an inconclusive verdict's: what would settle it

    @property
    def tellable(self) -> bool:
        return self.basis != "one run"

    def regressed_beyond(self, fraction: float) -> bool:
        """The gate's rule: the table's verdict is slower (Holm-corrected p below ALPHA, the
        whole CI beyond the threshold) and the whole CI lies beyond `fraction` worse. Never
        for a case the table does not call slower (an inconclusive one among them)."""
        if self.verdict != verdicts.SLOWER:
            return False
        if self.lower_is_better:
            return self.ratio.ci_low > 1 + fraction
        return self.ratio.ci_high < 1 - fraction

    def looks_beyond(self, fraction: float) -> bool:
        """The CI lies beyond `fraction` worse though the verdict is not slower (the drift
        is not measured, or Holm's correction): what an uncorrected gate would fail on."""
        if self.lower_is_better:
            return self.ratio.ci_low > 1 + fraction
        return self.ratio.ci_high < 1 - fraction


@dataclass
class RunComparison:
    old: RunRecord  # the first of each side (their headers)
    new: RunRecord
    changes: list[CaseChange]
    only_old: list[Case]
    only_new: list[Case]
    # Measured in both, but no ratio new / old means anything: the old median's CI holds 0,
    # or the two medians have opposite signs (a difference metric near zero, an A/A
    # control). The report names them instead of ranking them.
    no_ratio: list[Case] = field(default_factory=list)
    olds: list[RunRecord] = field(default_factory=list)
    news: list[RunRecord] = field(default_factory=list)
    drifts: list[drift.Drift] = field(default_factory=list)  # those used, per case

    def basis_sentence(self) -> str:
        """How the CIs of this comparison allow for drift, in one sentence."""
        bases = {c.basis for c in self.changes}
        parts = []
        if "runs" in bases:
            parts.append(f"{len(self.olds)} old and {len(self.news)} new runs, each run one "
                         "observation (a t interval over the runs' log medians)")
        for d in self.drifts:
            parts.append(f"one run a side, widened by the drift measured for {d.benchmark} "
                         f"{d.metric} on this host, {d.words()}{_apart(d, self.new)}, kept "
                         f"with the run (drift.json; {d.how})")
        if "interleaved" in bases:
            parts.append("old and new measured again in one run, interleaved (--rerun): the "
                         "machine's drift hit both alike, so the run's own CI holds")
        if "one run" in bases:
            rooms = any(c.basis == "one run" and c.info.definition is None
                        for c in self.changes)
            parts.append("one run a side and no drift measured for these cases: the runs' "
                         "own CIs are shown, but a change between runs cannot be told from "
                         "drift on them, so the verdict is inconclusive; to settle it: "
                         + (NO_DRIFT_FIX_ROOM if rooms else NO_DRIFT_FIX))
        return "CIs: " + "; ".join(parts) + "."

    def rule_sentence(self, threshold: float) -> str:
        """How the verdicts and the gate decide, said once under the table."""
        return ("Verdicts (Holm across the compared cases): " + verdicts.rule(threshold)
                + ". --fail-on-regression fails a case only where that verdict is slower and "
                "its whole CI lies beyond the given percentage.")


def _apart(d: drift.Drift, new: RunRecord) -> str:
    """How far from the new run the drift was measured: a drift measured at another load
    than the runs' understates or overstates theirs (docs/STATISTICS.md measures how much)."""
    try:
        gap = (datetime.fromisoformat(d.measured_at.replace("Z", "+00:00"))
               - datetime.fromisoformat(new.started_at.replace("Z", "+00:00")))
    except (ValueError, TypeError):
        return ""
    minutes = gap.total_seconds() / 60
    when = "after" if minutes >= 0 else "before"
    return f", {abs(minutes):.0f} min {when} the new run started"


def _samples_by_case(run: RunRecord, metric_of: dict[str, str],
                     signed: set[str]) -> dict[Case, list[list[float]]]:
    """Per case, the samples compared: |value| for a signed metric (closer to zero is better;
    `signed`: the benchmarks whose compared metric is, as the new run declares it)."""
    out: dict[Case, list[list[float]]] = defaultdict(list)
    for t in run.trials:
        metric = metric_of.get(t.case.benchmark)
        if t.ok and metric and t.samples.get(metric):
            out[t.case].append([abs(v) for v in t.samples[metric]]
                               if t.case.benchmark in signed else t.samples[metric])
    return out


def _rounds_by_case(run: RunRecord, metric_of: dict[str, str]) -> dict[Case, list[int]]:
    """Per case, the round of each trial _samples_by_case keeps, in the same order."""
    out: dict[Case, list[int]] = defaultdict(list)
    for t in run.trials:
        metric = metric_of.get(t.case.benchmark)
        if t.ok and metric and t.samples.get(metric):
            out[t.case].append(t.round)
    return out


def _ratio_means_something(old: stats.Summary, new: stats.Summary) -> bool:
    """new / old is a change only when old is told apart from 0 (its CI excludes it) and new
    lies on the same side: -0.7 ns then 0.3 ns is noise around zero, not a "-147%"."""
    return (old.ci_low > 0 or old.ci_high < 0) and new.median * old.median >= 0


def _log_median(trials: list[list[float]]) -> float | None:
    m = float(np.median(np.concatenate([np.asarray(t, dtype=float) for t in trials])))
    return math.log(m) if m > 0 else None


def _across_runs(per_run_old: list[list[list[float]]], per_run_new: list[list[list[float]]],
                 pooled_old: list[list[float]], pooled_new: list[list[float]],
                 spread: drift.Drift | None, rng: np.random.Generator,
                 rounds: tuple[list[int], list[int]] | None = None) -> tuple[stats.Ratio, Basis]:
    """The ratio new / old and its CI on the strongest basis the runs allow. rounds (old's,
    new's): the two sides are one interleaved run's, and their trials' rounds pair them."""
    if rounds is not None:
        # The report's own CI of that run: paired by round, so the drift a round shares
        # cancels (unpaired, it would count against the ratio, as it does between runs).
        return stats.ratio_ci(pooled_new, pooled_old, baseline_rounds=rounds[0],
                              variant_rounds=rounds[1]), "interleaved"
    within = stats.ratio_of_medians(pooled_new, pooled_old, rng)
    if len(per_run_old) >= 2 and len(per_run_new) >= 2:
        logs_o = [_log_median(t) for t in per_run_old]
        logs_n = [_log_median(t) for t in per_run_new]
        if all(x is not None for x in logs_o + logs_n):
            r, lo, hi, p = drift.runs_as_unit([x for x in logs_o if x is not None],
                                              [x for x in logs_n if x is not None])
            return stats.Ratio(r, lo, hi, within.p_value, p_ci=p), "runs"
    if spread is not None and within.ratio > 0:
        lo, hi, p = drift.widened(within.ratio, drift.log_se_of_ci(within.ci_low,
                                                                    within.ci_high), spread)
        return stats.Ratio(within.ratio, lo, hi, within.p_value, p_ci=p), "drift"
    return within, "one run"


def _settle(ratio: stats.Ratio, basis: Basis, threshold: float, tests: int, units: int,
            info: BenchmarkInfo, metric: str) -> str:
    """What would settle an inconclusive change, in words."""
    if basis == "one run":
        return (f"no drift measured for {info.name} {metric} on this host; to settle it: "
                + (NO_DRIFT_FIX if info.definition is not None else NO_DRIFT_FIX_ROOM))
    found = verdicts.to_settle(ratio, threshold, tests)
    if found is None:
        return "no CI to settle it from"
    if basis == "interleaved":
        return found.words(units, "rounds (compare --rerun --target-ratio-ci)")
    return found.words(units, "runs a side (--old/--new), or compare --rerun")


def compare_runs(old: RunRecord | Sequence[RunRecord], new: RunRecord | Sequence[RunRecord],
                 threshold: float, drifts: Sequence[drift.Drift] | drift.Drift | None = None,
                 interleaved: bool = False, metric: str | None = None) -> RunComparison:
    """Compare the primary metric of every case measured on both sides. `drifts`: those
    recorded with the runs (drift.json); one is used for a case with one run a side when it
    was measured for that case's benchmark, metric and case on the runs' host.
    `interleaved`: old and new are the two sides of one run (bakeoff/cmd/rerun.py), whose
    own CI holds. `metric`: compare that metric of every benchmark that has it, instead of
    each one's primary metric."""
    olds = [old] if isinstance(old, RunRecord) else list(old)
    news = [new] if isinstance(new, RunRecord) else list(new)
    known = [drifts] if isinstance(drifts, drift.Drift) else list(drifts or ())
    first_old, first_new = olds[0], news[0]
    rng = np.random.default_rng(first_new.seed)
    metric_of = {name: metric or info.primary_metric
                 for name, info in first_new.benchmarks.items()
                 if all(name in r.benchmarks for r in olds)
                 and (metric is None or any(m["name"] == metric for m in info.metrics))}
    if metric is not None and not metric_of:
        names = sorted({m["name"] for info in first_new.benchmarks.values()
                        for m in info.metrics})
        raise UsageError(f"--metric {metric}: no benchmark of these runs measured it; give "
                         f"one of {', '.join(names)}")
    signed = {name for name, metric in metric_of.items()
              if first_new.benchmarks[name].is_signed(metric)}
    runs_old = [_samples_by_case(r, metric_of, signed) for r in olds]
    runs_new = [_samples_by_case(r, metric_of, signed) for r in news]
    rounds_old = _rounds_by_case(first_old, metric_of) if interleaved else {}
    rounds_new = _rounds_by_case(first_new, metric_of) if interleaved else {}
    old_samples = {c: [t for r in runs_old for t in r.get(c, [])]
                   for c in dict.fromkeys(c for r in runs_old for c in r)}
    new_samples = {c: [t for r in runs_new for t in r.get(c, [])]
                   for c in dict.fromkeys(c for r in runs_new for c in r)}
    one_host = len({drift.host_key(r.host) for r in [*olds, *news]}) == 1
    matched = [c for c in new_samples if c in old_samples]
    pending = []
    no_ratio = []
    for case in sorted(matched, key=lambda c: c.key):
        info = first_new.benchmarks[case.benchmark]
        metric = metric_of[case.benchmark]
        o, n = old_samples[case], new_samples[case]
        s_old, s_new = stats.summarize(o, rng), stats.summarize(n, rng)
        if not _ratio_means_something(s_old, s_new):
            no_ratio.append(case)
            continue
        # A drift measured on another host, benchmark, metric or case says nothing of this.
        used = (drift.latest(known, first_new.host, case.benchmark, metric, case.key)
                if one_host else None)
        ratio, basis = _across_runs([r[case] for r in runs_old if case in r],
                                    [r[case] for r in runs_new if case in r], o, n, used, rng,
                                    (rounds_old[case], rounds_new[case]) if interleaved else None)
        pending.append((case, info, metric, s_old, s_new, ratio, basis,
                        used if basis == "drift" else None))
    tellable = [p for p in pending if p[6] != "one run"]
    adjusted = dict(zip((p[0] for p in tellable),
                        stats.holm([p[5].p_ci for p in tellable]), strict=True))
    changes = []
    for case, info, metric, s_old, s_new, ratio, basis, used in pending:
        lower = bool(info.metric(metric)["lower_is_better"])
        p_holm = adjusted.get(case, math.nan)
        verdict: ChangeVerdict = (stats.verdict(ratio, p_holm, lower, threshold)
                                  if basis != "one run" else verdicts.INCONCLUSIVE)
        # The units a wider or narrower CI comes from: runs a side, or the rerun's rounds.
        units = (min(sum(case in r for r in runs_old), sum(case in r for r in runs_new))
                 if basis in ("runs", "drift") else min(s_old.n_trials, s_new.n_trials))
        settle = (_settle(ratio, basis, threshold, max(1, len(tellable)), units,
                          info, metric)
                  if verdict == verdicts.INCONCLUSIVE else "")
        changes.append(CaseChange(
            case=case, info=info, metric=metric, unit=str(info.metric(metric)["unit"]),
            old=s_old, new=s_new, ratio=ratio, p_holm=p_holm, verdict=verdict,
            lower_is_better=lower, signed=info.is_signed(metric), basis=basis, drift=used,
            settle=settle))
    return RunComparison(
        old=first_old, new=first_new, changes=changes,
        only_old=sorted((c for c in old_samples if c not in new_samples), key=lambda c: c.key),
        only_new=sorted((c for c in new_samples if c not in old_samples), key=lambda c: c.key),
        no_ratio=no_ratio, olds=olds, news=news,
        drifts=list(dict.fromkeys(c.drift for c in changes if c.drift is not None)),
    )
