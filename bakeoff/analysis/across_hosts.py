"""Several hosts' runs of the same benchmarks: per case, does the result hold on every host?

Each host's run is analysed on its own (its ratios to the baseline, within that run, as
always). Across hosts, per case, Cochran's Q on the log ratios asks whether they differ more
than their CIs allow; Holm corrects across the cases of a benchmark, and a case "differs"
only when that holds, the hosts' ratios are further apart than the threshold, and the CIs
of the two furthest apart do not overlap. A host with fewer than MIN_TRIALS_FOR_VERDICT
trials of the case or its baseline makes it "can't tell": CIs on 2-4 trials are too narrow
to say hosts differ (two identical hosts at 2 trials read "42% apart, p < 0.001"); so
does a difference between two hosts that are one machine (one boot or machine id).
Host facts are compared row by row, differences first; hosts that are one machine (one boot
id) or whose runs overlapped in time are warned about: their timings disturbed each other.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from bakeoff.analysis.across_hosts_counters import CountersAcross, compare_counters
from bakeoff.analysis.within_run import MIN_TRIALS_FOR_VERDICT, Analysis, CaseResult, analyze
from bakeoff.core.errors import UsageError
from bakeoff.declare.model import Case, RunRecord
from bakeoff.machine.fact_rows import flatten_facts
from bakeoff.stats import estimates as stats
from bakeoff.store import fleet_record
from bakeoff.store import results as store

HOLDS = "holds on every host"
DIFFERS = "differs"
CANT_TELL = "can't tell"
# Facts that differ between any two runs and say nothing about the host (the machine and
# boot ids are hashes: the warnings speak of them).
_VOLATILE = ("loadavg_1m", "mem_available_kib", "busy_processes", "timer.", "hostname",
             "machine_id", "boot_id")


@dataclass
class HostRun:
    label: str  # the inventory host, or the run's hostname
    run_dir: Path
    run: RunRecord
    analysis: Analysis
    fleet: fleet_record.HostRecord | None = None


@dataclass
class CaseAcross:
    """One case (benchmark, variant, params) of the primary metric, on every host that has it."""

    case: Case
    metric: str
    results: dict[str, CaseResult]  # host label -> that host's result
    test: stats.Heterogeneity
    p_holm: float = float("nan")
    verdict: str = "—"
    spread: str = ""  # which hosts are furthest apart, and by how much

    def ratios(self) -> dict[str, stats.Ratio]:
        return {h: r.vs_baseline for h, r in self.results.items() if r.vs_baseline is not None}


@dataclass
class FactRow:
    fact: str
    values: dict[str, str]

    @property
    def differs(self) -> bool:
        return len(set(self.values.values())) > 1


@dataclass
class HostsAnalysis:
    hosts: list[HostRun]
    cases: dict[str, list[CaseAcross]]  # benchmark -> its cases
    facts: list[FactRow]
    threshold: float
    fleet: fleet_record.FleetRecord | None = None
    warnings: list[str] = field(default_factory=list)
    counters: CountersAcross | None = None  # per-op kernel counters across hosts

    @property
    def labels(self) -> list[str]:
        return [h.label for h in self.hosts]


def load_hosts(paths: list[Path]) -> tuple[list[HostRun], fleet_record.FleetRecord | None]:
    """A fleet directory (its hosts/<host>/ runs), or plain run directories, one per host."""
    if len(paths) == 1 and fleet_record.is_fleet_dir(paths[0]):
        fleet = fleet_record.load(paths[0])
        runs = []
        for name, h in fleet.hosts.items():
            hdir = fleet.host_dir(paths[0], name)
            if (hdir / store.RESULTS_JSON).exists():
                run = store.load(hdir)
                runs.append(HostRun(name, hdir, run, analyze(run, run.settings.threshold), h))
        if not runs:
            raise UsageError(f"{paths[0]}: no host sent results back (see its fleet.json); "
                             f"bakeoff fleet run --resume {paths[0]} tries again")
        return runs, fleet
    runs = []
    for p in paths:
        if fleet_record.is_fleet_dir(p):
            raise UsageError(f"{p} is a fleet directory; report it alone: bakeoff report {p}")
        run = store.load(p)
        runs.append(HostRun(str(run.host.get("hostname") or p.name), p, run,
                            analyze(run, run.settings.threshold)))
    # Two runs from one host (or hosts of one name) are told apart by their run ID, then by
    # their directory's name, then by its path.
    for key in (lambda r: r.run.run_id, lambda r: r.run_dir.name, lambda r: str(r.run_dir)):
        labels = [r.label for r in runs]
        dup = {lab for lab in labels if labels.count(lab) > 1}
        for r in runs:
            if r.label in dup:
                r.label = f"{r.run.host.get('hostname') or 'host'} ({key(r)})"
    if len({r.run_dir.resolve() for r in runs}) < len(runs):
        raise UsageError("the same run directory is given twice; give each host's run once")
    return runs, None


def _spread(ratios: dict[str, stats.Ratio]) -> tuple[float, str]:
    lo = min(ratios, key=lambda h: ratios[h].ratio)
    hi = max(ratios, key=lambda h: ratios[h].ratio)
    factor = ratios[hi].ratio / ratios[lo].ratio
    return factor, (f"{hi} {ratios[hi].ratio:.3g} vs {lo} {ratios[lo].ratio:.3g} "
                    f"({(factor - 1) * 100:.0f}% apart)")


def _test(results: list[CaseResult]) -> stats.Heterogeneity:
    measured = [r for r in results if r.vs_baseline is not None]
    return stats.heterogeneity([r.vs_baseline for r in measured if r.vs_baseline is not None],
                               [r.summary.n_trials if r.summary else 0 for r in measured])


def _trials(r: CaseResult | None) -> int:
    return r.summary.n_trials if r is not None and r.summary is not None else 0


def across_verdict(ratios: dict[str, stats.Ratio], p_holm: float, threshold: float,
                   few: list[str], one_machine: frozenset[frozenset[str]] = frozenset()) -> str:
    """A case's verdict across hosts: `few` are the hosts with too few trials of it;
    `one_machine` the pairs of hosts that are one machine (same_machine_pairs)."""
    if few:
        return (f"{CANT_TELL} (fewer than {MIN_TRIALS_FOR_VERDICT} trials on "
                f"{', '.join(few)})")
    lo = min(ratios, key=lambda h: ratios[h].ratio)
    hi = max(ratios, key=lambda h: ratios[h].ratio)
    apart = ratios[hi].ratio / ratios[lo].ratio - 1 > threshold
    separate = ratios[hi].ci_low > ratios[lo].ci_high
    if not (p_holm < 0.05 and apart and separate):
        return HOLDS
    # Two hosts that are one machine cannot differ as hosts: what parts their ratios is the
    # other's load (network namespaces running at once) or run-to-run drift, which the
    # within-run CIs this test weighs do not hold. Two namespaces on one 2-vCPU VM, running
    # their quick runs at once, were once called "differs" here.
    if frozenset((lo, hi)) in one_machine:
        return f"{CANT_TELL} ({hi} and {lo} are one machine: not a difference of hosts)"
    return DIFFERS


def same_machine_pairs(hosts: list[HostRun]) -> frozenset[frozenset[str]]:
    """The pairs of hosts that are one machine: one boot id (one kernel), or one machine id."""
    pairs = set()
    for i, a in enumerate(hosts):
        for b in hosts[i + 1:]:
            if any(a.run.host.get(k) and a.run.host.get(k) == b.run.host.get(k)
                   for k in ("boot_id", "machine_id")):
                pairs.add(frozenset((a.label, b.label)))
    return frozenset(pairs)


def compare_hosts(hosts: list[HostRun], threshold: float) -> dict[str, list[CaseAcross]]:
    out: dict[str, list[CaseAcross]] = {}
    benches = list(dict.fromkeys(b for h in hosts for b in h.run.benchmarks))
    one_machine = same_machine_pairs(hosts)
    for bench in benches:
        by_case: dict[Case, dict[str, CaseResult]] = {}
        # Per case, the fewest trials its variant or baseline has on each host.
        trials: dict[Case, dict[str, int]] = {}
        metric = ""
        for h in hosts:
            ba = next((b for b in h.analysis.benchmarks if b.info.name == bench), None)
            if ba is None:
                continue
            metric = ba.info.primary_metric
            results = ba.for_metric(metric)
            base = {r.case.params: r for r in results if r.case.variant == ba.info.baseline}
            for r in results:
                if r.case.variant != ba.info.baseline:
                    by_case.setdefault(r.case, {})[h.label] = r
                    trials.setdefault(r.case, {})[h.label] = min(
                        _trials(r), _trials(base.get(r.case.params)))
        cases = [CaseAcross(c, metric, res, _test(list(res.values())))
                 for c, res in sorted(by_case.items(), key=lambda kv: kv[0].key)]
        tested = [c for c in cases if c.test.p_value == c.test.p_value]  # not NaN
        for c, p in zip(tested, stats.holm([c.test.p_value for c in tested]), strict=True):
            c.p_holm = p
            _, c.spread = _spread(c.ratios())
            few = [h for h, n in trials[c.case].items()
                   if h in c.ratios() and n < MIN_TRIALS_FOR_VERDICT]
            c.verdict = across_verdict(c.ratios(), p, threshold, few, one_machine)
        for c in cases:
            if c not in tested:
                c.verdict = "only one host measured it" if len(c.ratios()) < 2 else "—"
        out[bench] = cases
    return out


def _window(run: RunRecord) -> tuple[datetime, datetime] | None:
    try:
        start = datetime.fromisoformat(run.started_at)
        end = datetime.fromisoformat(run.finished_at) if run.finished_at else start
    except (TypeError, ValueError):
        return None
    if start.tzinfo is None or end.tzinfo is None:
        return None
    if run.trials:  # a resumed run's record spans its pause; its trials say when it measured
        with contextlib.suppress(TypeError, ValueError):
            end = max(end, max(datetime.fromisoformat(t.started_at) for t in run.trials))
    return start, end


def shared_hardware_warnings(hosts: list[HostRun]) -> list[str]:
    """Hosts that are one machine (one boot id: one kernel, e.g. network namespaces), or one
    machine id, or whose runs overlapped in time: their timings are not independent."""
    out = []
    for i, a in enumerate(hosts):
        for b in hosts[i + 1:]:
            boot_a, boot_b = a.run.host.get("boot_id"), b.run.host.get("boot_id")
            mach_a, mach_b = a.run.host.get("machine_id"), b.run.host.get("machine_id")
            same = ""
            if boot_a and boot_a == boot_b:
                same = "are one machine (the same boot id: one kernel and its CPUs)"
            elif mach_a and mach_a == mach_b:
                same = "are one machine (the same machine id)"
            wa, wb = _window(a.run), _window(b.run)
            overlap = wa is not None and wb is not None and wa[0] < wb[1] and wb[0] < wa[1]
            if same and overlap:
                out.append(f"{a.label} and {b.label} {same} and ran at the same time: each "
                           "disturbed the other's timings, and what differs between them is "
                           "not their hardware")
            elif same:
                out.append(f"{a.label} and {b.label} {same}: what differs between them is "
                           "run-to-run drift, not hardware")
            elif overlap:
                out.append(f"{a.label} and {b.label} ran at the same time: if they share "
                           "hardware (VMs on one host), each disturbed the other's timings")
    return out


def _volatile(fact: str) -> bool:
    return any(fact == v or (v.endswith(".") and fact.startswith(v)) for v in _VOLATILE)


def fact_rows(hosts: list[HostRun]) -> list[FactRow]:
    """Host facts side by side, those that differ first (in the order facts are recorded)."""
    flat = {h.label: dict(flatten_facts(h.run.host)) for h in hosts}
    names = list(dict.fromkeys(k for f in flat.values() for k in f if not _volatile(k)))
    rows = [FactRow(k, {h: flat[h].get(k, "—") for h in flat}) for k in names]
    return [r for r in rows if r.differs] + [r for r in rows if not r.differs]


def analyze_hosts(paths: list[Path], threshold: float | None = None) -> HostsAnalysis:
    hosts, fleet = load_hosts(paths)
    thr = threshold if threshold is not None else hosts[0].run.settings.threshold
    analysis = HostsAnalysis(hosts=hosts, cases=compare_hosts(hosts, thr),
                             facts=fact_rows(hosts), threshold=thr, fleet=fleet)
    analysis.warnings += shared_hardware_warnings(hosts)
    seeds = {h.run.seed for h in hosts}
    if len(seeds) > 1:
        analysis.warnings.append("the hosts ran with different seeds: their trial orders differ")
    for h in hosts:
        if h.run.status != "complete":
            analysis.warnings.append(f"{h.label}: the run is {h.run.status}; its figures cover "
                                     "only the trials recorded before it stopped")
    if fleet is not None:
        for fh in fleet.failed():
            analysis.warnings.append(f"{fh.host}: {fh.status}: {fh.reason}")
    analysis.warnings += host_warnings(hosts)
    analysis.counters = counters_across(hosts, thr)
    return analysis


def host_warnings(hosts: list[HostRun]) -> list[str]:
    """Each host's own warnings (its run's: a busy machine, a shared CPU, no PMU; its
    analysis's: too few trials), named by host. A warning every host gave, word for word, is
    said once, for every host: 'virtualised' ten times over hides the one busy machine."""
    said = {h.label: list(dict.fromkeys([*h.run.warnings, *h.analysis.warnings])) for h in hosts}
    everyone = ([w for w in said[hosts[0].label] if all(w in ws for ws in said.values())]
                if len(hosts) > 1 else [])
    out = [f"every host: {w}" for w in everyone]
    return out + [f"{host}: {w}" for host, ws in said.items() for w in ws if w not in everyone]


def counters_across(hosts: list[HostRun], threshold: float) -> CountersAcross:
    """The per-op kernel counters of every case, host against host
    (bakeoff/analysis/across_hosts_counters.py)."""
    results: dict[str, dict[str, dict[Case, CaseResult]]] = {}
    for h in hosts:
        for ba in h.analysis.benchmarks:
            per_case = {r.case: r for r in ba.for_metric(ba.info.primary_metric) if r.per_op}
            if per_case:
                results.setdefault(ba.info.name, {})[h.label] = per_case
    return compare_counters(results, threshold)


def to_json(a: HostsAnalysis) -> str:
    """The verdicts across hosts, for scripts (hosts.json beside the report)."""
    return json.dumps({
        "hosts": a.labels,
        "threshold": a.threshold,
        "cases": [{"benchmark": b, "case": c.case.key, "verdict": c.verdict,
                   "q": c.test.q if c.test.q == c.test.q else None, "df": c.test.df,
                   "p_holm": c.p_holm if c.p_holm == c.p_holm else None, "spread": c.spread,
                   "ratios": {h: {"ratio": r.ratio, "ci_low": r.ci_low, "ci_high": r.ci_high}
                              for h, r in c.ratios().items()}}
                  for b, cases in a.cases.items() for c in cases],
        "facts_that_differ": {r.fact: r.values for r in a.facts if r.differs},
        "counters_that_differ": a.counters.as_json() if a.counters is not None else [],
    }, indent=2, allow_nan=False) + "\n"
