"""Two runs side by side (before and after a kernel patch): per case, did it get slower?

Cases match by benchmark, variant and params. The ratio is new median / old median with a
cluster-bootstrap CI; verdicts use the bootstrap p of that ratio, Holm-corrected across
every matched case, and the CI against the practical threshold, as within a run.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from bakeoff import stats
from bakeoff.model import BenchmarkInfo, Case, RunRecord


@dataclass
class CaseChange:
    case: Case
    info: BenchmarkInfo
    metric: str
    unit: str
    old: stats.Summary
    new: stats.Summary
    ratio: stats.Ratio  # new / old
    p_holm: float
    verdict: stats.Verdict  # of new against old
    lower_is_better: bool
    signed: bool = False  # old and new are summaries of |value|

    def regressed_beyond(self, fraction: float) -> bool:
        """The whole CI lies beyond `fraction` worse: a regression beyond doubt and size."""
        if self.lower_is_better:
            return self.ratio.ci_low > 1 + fraction
        return self.ratio.ci_high < 1 - fraction


@dataclass
class RunComparison:
    old: RunRecord
    new: RunRecord
    changes: list[CaseChange]
    only_old: list[Case]
    only_new: list[Case]
    # Measured in both, but no ratio new / old means anything: the old median's CI holds 0,
    # or the two medians have opposite signs (a difference metric near zero, an A/A
    # control). The report names them instead of ranking them.
    no_ratio: list[Case] = field(default_factory=list)


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


def _ratio_means_something(old: stats.Summary, new: stats.Summary) -> bool:
    """new / old is a change only when old is told apart from 0 (its CI excludes it) and new
    lies on the same side: -0.7 ns then 0.3 ns is noise around zero, not a "-147%"."""
    return (old.ci_low > 0 or old.ci_high < 0) and new.median * old.median >= 0


def compare_runs(old: RunRecord, new: RunRecord, threshold: float) -> RunComparison:
    """Compare the primary metric of every case measured in both runs."""
    rng = np.random.default_rng(new.seed)
    metric_of = {name: info.primary_metric for name, info in new.benchmarks.items()
                 if name in old.benchmarks}
    signed = {name for name, metric in metric_of.items()
              if new.benchmarks[name].is_signed(metric)}
    old_samples = _samples_by_case(old, metric_of, signed)
    new_samples = _samples_by_case(new, metric_of, signed)
    matched = [c for c in new_samples if c in old_samples]
    pending = []
    no_ratio = []
    for case in sorted(matched, key=lambda c: c.key):
        info = new.benchmarks[case.benchmark]
        metric = metric_of[case.benchmark]
        o, n = old_samples[case], new_samples[case]
        s_old, s_new = stats.summarize(o, rng), stats.summarize(n, rng)
        if not _ratio_means_something(s_old, s_new):
            no_ratio.append(case)
            continue
        pending.append((case, info, metric, s_old, s_new, stats.ratio_of_medians(n, o, rng)))
    adjusted = stats.holm([p[-1].p_boot for p in pending])
    changes = []
    for (case, info, metric, s_old, s_new, ratio), p_holm in zip(pending, adjusted, strict=True):
        lower = bool(info.metric(metric)["lower_is_better"])
        changes.append(CaseChange(
            case=case, info=info, metric=metric, unit=str(info.metric(metric)["unit"]),
            old=s_old, new=s_new, ratio=ratio, p_holm=p_holm,
            verdict=stats.verdict(ratio, p_holm, lower, threshold), lower_is_better=lower,
            signed=info.is_signed(metric)))
    return RunComparison(
        old=old, new=new, changes=changes,
        only_old=sorted((c for c in old_samples if c not in new_samples), key=lambda c: c.key),
        only_new=sorted((c for c in new_samples if c not in old_samples), key=lambda c: c.key),
        no_ratio=no_ratio,
    )
