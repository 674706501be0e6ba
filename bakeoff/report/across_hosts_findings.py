"""Findings across hosts: per benchmark, whether the winner and its ratio hold on every host.

The same rules as a single run's findings (report/findings.py): every figure is a ratio with
its 95% CI and its trials, one per host; a finding says why it is tentative. The points
spoken of are those a single run's findings speak of: in each group of the reference host's
grid (the first host), the two ends of the swept axis, or every point when nothing numeric is
swept. Whether a ratio holds is the test across hosts (bakeoff/analysis/across_hosts.py: Cochran's Q, Holm).
"""

from __future__ import annotations

from dataclasses import dataclass

from bakeoff.analysis.across_hosts import CANT_TELL, DIFFERS, HOLDS, CaseAcross, HostsAnalysis
from bakeoff.analysis.within_run import MIN_TRIALS_FOR_VERDICT, BenchmarkAnalysis, CaseResult
from bakeoff.report.findings import Finding, ratio_figure
from bakeoff.report.format import fmt_number, fmt_p, params_label, swept_label
from bakeoff.report.grid import Params, Point, grid, trials_of
from bakeoff.report.words import change_phrase, lower_is_better
from bakeoff.stats.estimates import MIN_TRIALS_FOR_CI

NO_WINNER = "no variant"  # no variant differs from the baseline beyond the threshold


@dataclass(frozen=True)
class HostWinner:
    """Who wins at a point on one host, and the result that says so (the best variant's)."""

    winner: str  # a variant, the baseline, or NO_WINNER
    best: CaseResult
    base: CaseResult | None


def _bench(a: HostsAnalysis, host: str, name: str) -> BenchmarkAnalysis | None:
    run = next(h for h in a.hosts if h.label == host)
    return next((b for b in run.analysis.benchmarks if b.info.name == name), None)


def winner_at(ba: BenchmarkAnalysis, point: Point) -> HostWinner | None:
    """The variant whose ratio is best at the point and what its verdict makes the winner."""
    compared = [r for r in point.results if r.comparison is not None
                and not ba.info.is_control(r.case.variant)
                and not ba.info.is_diagnostic(r.case.variant)]
    if not compared:
        return None
    lower = lower_is_better(ba, ba.info.primary_metric)
    best = sorted(compared, key=lambda r: r.vs_baseline.ratio if r.vs_baseline else 0.0,
                  reverse=not lower)[0]
    verdict = best.verdict
    winner = (best.case.variant if verdict == "faster" else
              ba.info.baseline if verdict == "slower" else NO_WINNER)
    return HostWinner(winner, best, point.of(ba.info.baseline))


def _points(ba: BenchmarkAnalysis) -> list[tuple[str, Params]]:
    """(where, params) of the points findings speak of, as in report/findings.py."""
    g = grid(ba)
    out = []
    for fixed, points in g.groups:
        ends = [points[0], points[-1]] if g.axis and len(points) > 1 else points
        for p in ends:
            parts = []
            if g.axis:
                parts.append(swept_label(ba.info, g.axis, float(dict(p.params)[g.axis])))
            varying = [(k, v) for k, v in (fixed if g.axis else p.params)
                       if k not in dict(g.constant)]
            if varying:
                parts.append(params_label(ba.info, varying))
            out.append((" with ".join(parts), p.params))
    return out


def _host_clause(ba: BenchmarkAnalysis, host: str, w: HostWinner, named: bool) -> str:
    """'vm: 51.6× faster (ratio 0.0194, 95% CI …; 5 + 5 trials)', with the variant's name
    when the hosts' best variants differ."""
    r = w.best.vs_baseline
    assert r is not None
    n = f"{trials_of(w.best)} + {trials_of(w.base)} trials"
    name = f"{w.best.case.variant} " if named else ""
    # From 2 trials a side the ratio's CI spans decades: its point and trial counts.
    figure = (f"ratio {fmt_number(r.ratio)}; {n}: too few for a CI"
              if min(trials_of(w.best), trials_of(w.base)) < MIN_TRIALS_FOR_CI else
              f"{ratio_figure(r)}; {n}")
    return f"{host}: {name}{change_phrase(ba, ba.info.primary_metric, r.ratio)} ({figure})"


def _across(c: CaseAcross | None) -> tuple[str, str]:
    """The test across hosts in words, and why it is tentative ('' when settled)."""
    if c is not None and c.verdict.startswith(CANT_TELL):
        why = "too few trials to tell" if "fewer than" in c.verdict else "one machine"
        return f"whether the ratio differs between hosts: {c.verdict}", why
    if c is None or c.verdict not in (HOLDS, DIFFERS):
        return "no test across hosts (fewer than two hosts have a ratio with a CI)", \
            "no test across hosts"
    p = f"Cochran's Q, p after Holm {fmt_p(c.p_holm)}"
    if c.verdict == DIFFERS:
        return f"the ratio differs between hosts: {c.spread} ({p})", ""
    return f"the ratio holds on every host ({p})", ""


def _separated(x: CaseResult | None, y: CaseResult | None) -> bool:
    rx = x.vs_baseline if x is not None else None
    ry = y.vs_baseline if y is not None else None
    return rx is not None and ry is not None and (rx.ci_high < ry.ci_low or
                                                  ry.ci_high < rx.ci_low)


def winners_separate(per_host: dict[str, HostWinner], points: dict[str, Point]) -> bool:
    """Two hosts' winners differ beyond their CIs: for some pair of hosts naming different
    winners, a variant either names has ratio CIs on the two hosts that do not overlap. A
    verdict that flips between 'faster' and 'same' on overlapping CIs is not a difference."""
    hosts = list(per_host)
    for i, h1 in enumerate(hosts):
        for h2 in hosts[i + 1:]:
            if per_host[h1].winner == per_host[h2].winner:
                continue
            for v in {per_host[h1].best.case.variant, per_host[h2].best.case.variant}:
                if _separated(points[h1].of(v), points[h2].of(v)):
                    return True
    return False


def benchmark_findings_across(a: HostsAnalysis, bench: str) -> list[Finding]:
    ref = next((ba for h in a.hosts if (ba := _bench(a, h.label, bench)) is not None), None)
    if ref is None:
        return []
    across = {c.case: c for c in a.cases.get(bench, [])}
    grids = {h.label: grid(ba) for h in a.hosts if (ba := _bench(a, h.label, bench))}
    found: list[Finding] = []
    same_winner = 0
    shown = _points(ref)
    all_points = [p.params for p in grid(ref).points]
    for params in all_points:
        winners = {h: w.winner for h, g in grids.items()
                   for p in g.points if p.params == params
                   if (w := winner_at(_bench(a, h, bench) or ref, p)) is not None}
        same_winner += len(winners) == len(grids) and len(set(winners.values())) == 1
    for where, params in shown:
        per_host: dict[str, HostWinner] = {}
        points: dict[str, Point] = {}
        for h, g in grids.items():
            point = next((p for p in g.points if p.params == params), None)
            ba = _bench(a, h, bench)
            if point is not None and ba is not None and (w := winner_at(ba, point)) is not None:
                per_host[h] = w
                points[h] = point
        if not per_host:
            continue
        why: list[str] = []
        if len(per_host) < len(grids):
            why.append(f"measured on {len(per_host)} of {len(grids)} hosts")
        if any(min(trials_of(w.best), trials_of(w.base)) < MIN_TRIALS_FOR_VERDICT
               for w in per_host.values()):
            why.append(f"fewer than {MIN_TRIALS_FOR_VERDICT} trials on some host")
        names = {w.winner for w in per_host.values()}
        best = {w.best.case for w in per_host.values()}
        lead = f"At {where}" if where else "On the hosts"
        clauses = "; ".join(_host_clause(ref, h, w, len(best) > 1) for h, w in per_host.items())
        variant = next(iter(best)).variant
        base = ref.info.baseline
        # Of one host, "on every host" would claim a comparison: its name instead.
        every = "on every host" if len(a.hosts) >= 2 else f"on {a.labels[0]}"
        if len(names) == 1:
            name = names.pop()
            if name == NO_WINNER:
                head = (f"{lead}, no variant is shown to differ from {base} beyond "
                        f"±{a.threshold * 100:g}% "
                        "on any host; the best" + (f", {variant}, is" if len(best) == 1 else ":"))
            elif name == base:
                head = (f"{lead}, {base} (the baseline) wins {every}; the closest"
                        + (f", {variant}, is" if len(best) == 1 else ":"))
            else:
                head = f"{lead}, {name} wins {every} against {base}:"
            # The case the hosts share: its ratio tested across hosts.
            if len(best) == 1:
                words, untested = _across(across.get(next(iter(best))))
            else:
                words, untested = "the closest variant is not the same on every host", ""
            if untested:
                why.append(untested)
            text = f"{head} {clauses}; {words}"
        elif winners_separate(per_host, points) and not any(
                min(trials_of(w.best), trials_of(w.base)) < MIN_TRIALS_FOR_VERDICT
                for w in per_host.values()):
            by = ", ".join(f"{h}: {w.winner}" for h, w in per_host.items())
            text = f"{lead}, the winner differs between hosts ({by}): {clauses}"
            why.append("the winner differs between hosts")
        else:
            by = ", ".join(f"{h}: {w.winner}" for h, w in per_host.items())
            text = (f"{lead}, the hosts' verdicts differ ({by}) but their CIs overlap: the "
                    f"winner is not shown to differ between hosts: {clauses}")
            why.append("the hosts' CIs overlap")
        text += f" [tentative: {', '.join(why)}]." if why else "."
        found.append(Finding("winner", text, "; ".join(why),
                             results=tuple(w.best for w in per_host.values())))
    cases = a.cases.get(bench, [])
    differs = [c for c in cases if c.verdict == DIFFERS]
    tested = [c for c in cases if c.verdict in (HOLDS, DIFFERS)]
    at = (f"at all {len(all_points)} points" if same_winner == len(all_points) else
          f"at {same_winner} of {len(all_points)} points")
    summary = (f"The winner is the same on every host {at}; of the {len(tested)} cases with a "
               "ratio on two hosts or more, "
               f"{len(differs)} differ between hosts beyond ±{a.threshold * 100:g}%")
    if differs:
        worst = sorted(differs, key=lambda c: c.p_holm)[:3]
        summary += ": " + "; ".join(f"{c.case.variant} at {params_label(ref.info, c.case.params)}"
                                    f", {c.spread}" for c in worst)
        if len(differs) > 3:
            summary += f" and {len(differs) - 3} more"
    if len(a.hosts) < 2:  # one host's results: nothing is the same or differs across hosts
        summary = (f"One host's results ({', '.join(a.labels)}): nothing compared across "
                   "hosts; its winner at each point is below")
    found.insert(0, Finding("winner", summary + "."))
    return found


def all_findings_across(a: HostsAnalysis) -> dict[str, list[Finding]]:
    return {bench: benchmark_findings_across(a, bench) for bench in a.cases}
