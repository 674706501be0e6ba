"""Kernel counters across hosts: per case, which per-op counters differ between hosts.

LKP's `compare` sets every stat and counter of one kernel or host against another's; this is
that for bakeoff's counted samples (benchmarks/common/counters.h), so that "why does host B
differ" has an answer: host B makes 8 TLB flushes per move where host A makes 1.

Each host's per-op counter of a case is its own run's summary (median over the counted
samples, 95% CI by cluster bootstrap over trials: bakeoff/analysis/within_run.py). Across hosts the test
is the one the primary metric's ratios get (bakeoff/analysis/across_hosts.py): Cochran's Q on the hosts' log
medians, each weighted by its CI (stats.heterogeneity, with its small-sample widening), Holm
across every (case, counter) of a benchmark. A counter differs when that p is below 0.05 and
the hosts' medians lie more than the threshold apart. Where one host counted none in every
trial (a CI of [0, 0]) and another counted some in every trial, no log is possible: that
counter differs when the other's whole CI is above 0, a difference no interval bridges.

A CI of zero width (the same count in every counted trial) has no SE to weigh: Cochran's Q
would weigh it as exact and call any other host's slightly different median a difference
(Q of 1e11 between two runs of one machine). So a counter with such a CI on some host and not
on another is not tested (UNTESTED, never "differs"); where every host's count is exact, they
differ only when their counts lie more than the threshold apart (8 TLB flushes per move
against 1: no interval is needed to tell them apart).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from bakeoff.analysis.within_run import MIN_TRIALS_FOR_VERDICT, CaseResult
from bakeoff.declare.model import Case
from bakeoff.stats import estimates as stats

DIFFERS = "differs"
SAME = "same"  # no difference beyond the intervals and the threshold shown
UNTESTED = "—"  # fewer than two hosts with a usable interval


@dataclass
class CounterAcross:
    """One per-op counter of one case on every host that counted it."""

    benchmark: str
    case: Case
    counter: str
    per_host: dict[str, stats.Summary]  # host label -> that host's per-op summary
    test: stats.Heterogeneity
    p_holm: float = math.nan
    verdict: str = UNTESTED
    zero_on: list[str] = field(default_factory=list)  # hosts that counted none in every trial

    @property
    def reference(self) -> str:
        """The host the others are set against, as LKP compare sets them against its first."""
        return next(iter(self.per_host))

    def change(self, host: str) -> float | None:
        """host's median against the reference's, as a fraction (0.5 is 50% more); None when
        the reference's median is 0."""
        ref = self.per_host[self.reference].median
        return None if ref == 0 else self.per_host[host].median / ref - 1

    @property
    def tentative(self) -> str:
        """Why a difference is not settled ('' when it is): a count that varies between
        trials, with fewer trials on some host than a verdict needs (2 counted trials by
        default), has a CI too narrow to trust; an exact count (the same in every trial on
        every host, as most kernel events per operation are) needs no more trials."""
        varies = any(s.ci_high > s.ci_low for s in self.per_host.values())
        few = min(s.n_trials for s in self.per_host.values())
        if varies and few < MIN_TRIALS_FOR_VERDICT:
            return f"it varies between trials and some host has {few} trials"
        return ""

    def extremes(self) -> tuple[str, str]:
        """(lowest, highest) host by median."""
        hosts = list(self.per_host)
        return (min(hosts, key=lambda h: self.per_host[h].median),
                max(hosts, key=lambda h: self.per_host[h].median))


@dataclass
class CountersAcross:
    """Per benchmark, every (case, counter) counted on two hosts or more."""

    by_benchmark: dict[str, list[CounterAcross]]
    threshold: float

    def differing(self, benchmark: str) -> list[CounterAcross]:
        """Those that differ, the furthest apart first."""
        found = [c for c in self.by_benchmark.get(benchmark, []) if c.verdict == DIFFERS]
        return sorted(found, key=lambda c: -_apart(c))

    def of_case(self, benchmark: str, case: Case) -> list[CounterAcross]:
        return [c for c in self.by_benchmark.get(benchmark, []) if c.case == case]

    def as_json(self) -> list[dict[str, Any]]:
        """The counters that differ, for scripts (hosts.json): each host's median and CI,
        the test across hosts (None where no log could be taken: a count of 0)."""
        def finite(x: float) -> float | None:
            return x if math.isfinite(x) else None
        return [{"benchmark": c.benchmark, "case": c.case.key, "counter": c.counter,
                 "q": finite(c.test.q), "df": c.test.df, "p_holm": finite(c.p_holm),
                 "zero_on": c.zero_on,
                 "per_op": {h: {"median": s.median, "ci_low": s.ci_low, "ci_high": s.ci_high,
                                "trials": s.n_trials} for h, s in c.per_host.items()}}
                for bench in self.by_benchmark for c in self.differing(bench)]


def _apart(c: CounterAcross) -> float:
    """How far apart the extreme hosts are, as |log(high/low)|; infinite when the low is 0."""
    lo, hi = (c.per_host[h].median for h in c.extremes())
    if hi == lo:
        return 0.0
    return math.inf if lo <= 0 else math.log(hi / lo)


def _as_estimate(s: stats.Summary) -> stats.Ratio:
    """A per-op counter is itself a ratio (events / operations): its median and CI are the
    estimate and interval Cochran's Q weighs (no rank test behind it)."""
    return stats.Ratio(ratio=s.median, ci_low=s.ci_low, ci_high=s.ci_high, p_value=math.nan)


def _none_every_trial(s: stats.Summary) -> bool:
    return s.n_trials >= 2 and s.ci_high == 0


def _some_every_trial(s: stats.Summary) -> bool:
    return s.n_trials >= 2 and s.ci_low > 0


def compare_counters(results: dict[str, dict[str, dict[Case, CaseResult]]],
                     threshold: float) -> CountersAcross:
    """results: benchmark -> host label -> case -> that host's result of the primary metric
    (whose per_op holds the counters), hosts in the report's order."""
    out: dict[str, list[CounterAcross]] = {}
    for bench, by_host in results.items():
        cases = list(dict.fromkeys(c for per_case in by_host.values() for c in per_case))
        rows: list[CounterAcross] = []
        for case in sorted(cases, key=lambda c: c.key):
            names = sorted({n for per_case in by_host.values() if case in per_case
                            for n in per_case[case].per_op})
            for name in names:
                per_host = {h: per_case[case].per_op[name] for h, per_case in by_host.items()
                            if case in per_case and name in per_case[case].per_op}
                if len(per_host) < 2:
                    continue
                usable = {h: s for h, s in per_host.items() if s.ci_low > 0}
                if any(s.ci_high == s.ci_low for s in usable.values()):
                    test = stats.Heterogeneity(math.nan, max(len(usable) - 1, 0), math.nan)
                else:
                    test = stats.heterogeneity([_as_estimate(s) for s in usable.values()],
                                               [s.n_trials for s in usable.values()])
                rows.append(CounterAcross(bench, case, name, per_host, test))
        tested = [r for r in rows if not math.isnan(r.test.p_value)]
        for r, p in zip(tested, stats.holm([r.test.p_value for r in tested]), strict=True):
            r.p_holm = p
        for r in rows:
            r.verdict = _verdict(r, threshold)
        out[bench] = rows
    return CountersAcross(out, threshold)


def _verdict(r: CounterAcross, threshold: float) -> str:
    zero = [h for h, s in r.per_host.items() if _none_every_trial(s)]
    some = [h for h, s in r.per_host.items() if _some_every_trial(s)]
    if zero and some:  # none in every trial against some in every trial: no log to take
        r.zero_on = zero
        return DIFFERS
    if math.isnan(r.p_holm):
        same_zero = all(s.median == 0 and s.ci_high == 0 for s in r.per_host.values())
        if same_zero:
            return SAME
        if all(s.n_trials >= 2 and s.ci_high == s.ci_low for s in r.per_host.values()):
            lo, hi = (r.per_host[h].median for h in r.extremes())  # exact counts everywhere
            return DIFFERS if lo > 0 and hi / lo - 1 > threshold else SAME
        return UNTESTED
    lo, hi = (r.per_host[h].median for h in r.extremes())
    far = lo > 0 and hi / lo - 1 > threshold
    return DIFFERS if r.p_holm < stats.ALPHA and far else SAME
