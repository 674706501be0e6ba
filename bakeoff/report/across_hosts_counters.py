"""Kernel counters across hosts in words and tables (bakeoff/analysis/across_hosts_counters.py decides).

In report.md and report.html, per benchmark: one sentence on how many (case, counter) pairs
differ between hosts, the counters behind each case whose ratio differs between hosts (the
"why does host B differ" answer), and a table of every counter that differs. details.md
beside them holds every counter of every case on every host, differing or not. Cells and
sentences are raw text; each renderer escapes them.
"""

from __future__ import annotations

from bakeoff.analysis.across_hosts import DIFFERS, HostsAnalysis
from bakeoff.analysis.across_hosts_counters import DIFFERS as COUNTER_DIFFERS
from bakeoff.analysis.across_hosts_counters import CounterAcross
from bakeoff.analysis.within_run import MIN_TRIALS_FOR_VERDICT
from bakeoff.declare.model import BenchmarkInfo, Case
from bakeoff.report.counted import counter_words
from bakeoff.report.exporters import MarkdownExporter
from bakeoff.report.format import (
    MISSING,
    case_params_label,
    fmt_number,
    fmt_p,
    fmt_range,
    fmt_value,
    fmt_with_ci,
)
from bakeoff.report.sections import Block, Item, Items, Page, Paragraph, Section, table
from bakeoff.stats.estimates import Summary

# report.md and report.html list this many differing counters per benchmark; details.md all.
TABLE_LIMIT = 20
WHY_LIMIT = 3  # counters quoted per case in a "why" line, the furthest apart first
WHY_CASES_LIMIT = 10  # "why" lines in report.md and report.html; details.md has every one


def _info(a: HostsAnalysis, bench: str) -> BenchmarkInfo:
    return next(h.run.benchmarks[bench] for h in a.hosts if bench in h.run.benchmarks)


def per_op_cell(s: Summary | None) -> str:
    """'8.00 (8.00–8.00), 2 trials'; the median alone with one trial."""
    if s is None:
        return MISSING
    if s.n_trials < 2:
        return f"{fmt_value(s.median, '')} (no CI from one trial)"
    return f"{fmt_with_ci(s.median, s.ci_low, s.ci_high, '', '')}, {s.n_trials} trials"


def change_cell(c: CounterAcross) -> str:
    """Each other host against the reference, LKP compare's %change: 'beta +700%'."""
    parts = []
    for h in list(c.per_host)[1:]:
        ch = c.change(h)
        if ch is None and c.per_host[h].median == 0:
            parts.append(f"{h} 0 as well")
        elif ch is None:
            parts.append(f"{h} {fmt_value(c.per_host[h].median, '')} against 0")
        else:
            parts.append(f"{h} {'+' if ch >= 0 else ''}{fmt_number(ch * 100)}%")
    return f"vs {c.reference}: " + ", ".join(parts)


def test_cell(c: CounterAcross) -> str:
    if c.zero_on:
        return f"none counted on {', '.join(c.zero_on)} in every trial, some on another"
    if c.p_holm != c.p_holm:  # NaN
        return MISSING
    why = f" [tentative: {c.tentative}]" if c.verdict == COUNTER_DIFFERS and c.tentative else ""
    return f"{c.test.q:.3g} ({c.test.df}), {fmt_p(c.p_holm)}{why}"


def counter_clause(c: CounterAcross) -> str:
    """'tlb:tlb_flush events 8.00 per op on beta against 1.00 on alpha (95% CIs …)'."""
    lo, hi = c.extremes()
    a, b = c.per_host[hi], c.per_host[lo]
    cis = ("" if a.n_trials < 2 or b.n_trials < 2 else
           f" (95% CIs {fmt_range(a.ci_low, a.ci_high, '')} and {fmt_range(b.ci_low, b.ci_high, '')}"
           f"; {a.n_trials} + {b.n_trials} trials)")
    why = f" [tentative: {c.tentative}]" if c.tentative else ""
    return (f"{counter_words(c.counter)} {fmt_value(a.median, '')} per op on {hi} against "
            f"{fmt_value(b.median, '')} on {lo}{cis}{why}")


def counters_sentence(a: HostsAnalysis, bench: str) -> str | None:
    """How many counters differ between hosts; None when no two hosts counted this benchmark."""
    if a.counters is None or not a.counters.by_benchmark.get(bench):
        return None
    rows = a.counters.by_benchmark[bench]
    differ = _why_first(_info(a, bench), a.counters.differing(bench))
    text = (f"Kernel counters (counted samples): {len(differ)} of {len(rows)} (case, counter) "
            "pairs counted on two hosts or more differ between hosts beyond their 95% CIs "
            f"and ±{a.threshold * 100:g}%")
    unsure = sum(bool(c.tentative) for c in differ)
    if unsure:
        text += (f" ({unsure} of them tentative: counts that vary between trials, from fewer "
                 f"than {MIN_TRIALS_FOR_VERDICT} trials)")
    if differ:
        info = _info(a, bench)
        text += "; first: " + "; ".join(
            f"{c.case.variant} at {case_params_label(info, c.case)}, {counter_clause(c)}"
            for c in differ[:WHY_LIMIT])
    return text + "."


def _why_first(info: BenchmarkInfo, differ: list[CounterAcross]) -> list[CounterAcross]:
    """The benchmark's why_counters first (its author's explanation), each group furthest
    apart first (the order differing() gives, kept by a stable sort)."""
    return sorted(differ, key=lambda c: c.counter not in info.why_counters)


def _baseline_case(info: BenchmarkInfo, case: Case) -> Case:
    return Case(case.benchmark, info.baseline, case.params)


def why_lines(a: HostsAnalysis, bench: str) -> list[str]:
    """For each case whose ratio differs between hosts: the counters of it and of its
    baseline (the ratio's two sides) that differ between hosts too, or that none does."""
    if a.counters is None:
        return []
    info = _info(a, bench)
    out = []
    for c in a.cases.get(bench, []):
        if c.verdict != DIFFERS:
            continue
        where = f"{c.case.variant} at {case_params_label(info, c.case)} ({c.spread})"
        said = []
        for side in (c.case, _baseline_case(info, c.case)):
            differ = _why_first(info, [x for x in a.counters.differing(bench) if x.case == side])
            if differ:
                said.append(f"{side.variant}: " + "; ".join(counter_clause(x)
                                                            for x in differ[:WHY_LIMIT])
                            + (f"; and {len(differ) - WHY_LIMIT} more" if len(differ) > WHY_LIMIT
                               else ""))
        counted = a.counters.of_case(bench, c.case)
        if said:
            out.append(f"{where}: " + " — ".join(said) + ".")
        elif counted:
            out.append(f"{where}: no kernel counter of it or of {info.baseline} differs between "
                       "hosts beyond its CI; what differs is not what the counters count.")
        else:
            out.append(f"{where}: no counted samples on two hosts to say why.")
    return out


def differing_table(a: HostsAnalysis, bench: str, limit: int | None = TABLE_LIMIT
                    ) -> tuple[list[str], list[list[str]], int]:
    """Headers, rows (why_counters first, then the furthest apart, at most limit) and how
    many differ in all."""
    assert a.counters is not None
    info = _info(a, bench)
    differ = _why_first(info, a.counters.differing(bench))
    headers = ["variant", "params", "counter", *(f"{h}: per op (95% CI)" for h in a.labels),
               "change", "Cochran's Q (df), p after Holm"]
    rows = [[c.case.variant, case_params_label(info, c.case), counter_words(c.counter),
             *(per_op_cell(c.per_host.get(h)) for h in a.labels), change_cell(c), test_cell(c)]
            for c in (differ if limit is None else differ[:limit])]
    return headers, rows, len(differ)


def counters_rule(threshold: float) -> str:
    return ("Each host's per-op counter is the median over its counted samples with a 95% CI "
            "over trials. Across hosts: Cochran's Q on the hosts' log medians (each weighted "
            "by its CI), Holm-corrected across the benchmark's (case, counter) pairs; a counter "
            f"differs when that p is below 0.05 and the hosts lie more than {threshold * 100:g}% "
            "apart, or when one host counted none in every trial and another some in every "
            "trial. A count that varies between trials, from fewer than "
            f"{MIN_TRIALS_FOR_VERDICT} trials on some host (2 counted trials by default), is "
            "tentative: its CI is too narrow to trust; an exact count needs no more. The "
            "change is each host against the first, as LKP's compare shows it.")


def counters_section(a: HostsAnalysis, bench: str) -> list[Block]:
    """The benchmark's counters across hosts in report.md and report.html: nothing when no
    two hosts counted."""
    sentence = counters_sentence(a, bench)
    if sentence is None:
        return []
    blocks: list[Block] = [Paragraph((sentence,))]
    why = why_lines(a, bench)
    if why:
        blocks += [Paragraph(("Why the ratios differ, by counter:",)),
                   Items(tuple(Item((w,)) for w in why[:WHY_CASES_LIMIT]))]
        if len(why) > WHY_CASES_LIMIT:
            blocks.append(Paragraph((f"{len(why) - WHY_CASES_LIMIT} more cases in details.md.",),
                                    "note"))
    headers, rows, n = differing_table(a, bench)
    if rows:
        blocks.append(table(headers, rows))
    if n > len(rows):
        blocks.append(Paragraph((f"{n - len(rows)} more in details.md, with every counter of "
                                 "every case.",), "note"))
    blocks.append(Paragraph((counters_rule(a.threshold),), "note"))
    return [Section("Kernel counters across hosts", tuple(blocks), level=3)]


# ---- details.md: every counter, every case, every host ------------------------------------


def _bench_details(a: HostsAnalysis, bench: str,
                   by_bench: dict[str, list[CounterAcross]]) -> Section:
    info = _info(a, bench)
    rows_of = by_bench.get(bench, [])
    if not rows_of:
        return Section(info.title, (Paragraph(("No counted samples on two hosts or more.",)),),
                       aside=info.name)
    blocks: list[Block] = []
    why = why_lines(a, bench)
    if why:
        blocks += [Paragraph(("Why the ratios differ, by counter:",)),
                   Items(tuple(Item((w,)) for w in why))]
    names = list(dict.fromkeys(
        [n for n in info.why_counters if any(c.counter == n for c in rows_of)]
        + sorted({c.counter for c in rows_of})))
    headers = ["variant", "params", *(f"{h}: per op (95% CI)" for h in a.labels),
               "change", "Cochran's Q (df), p after Holm", "across hosts"]
    for name in names:
        rows = [[c.case.variant, case_params_label(info, c.case),
                 *(per_op_cell(c.per_host.get(h)) for h in a.labels), change_cell(c),
                 test_cell(c), c.verdict] for c in rows_of if c.counter == name]
        blocks.append(Section(counter_words(name), (table(headers, rows),), level=3))
    return Section(info.title, tuple(blocks), aside=info.name)


def hosts_details_page(a: HostsAnalysis) -> Page:
    """details.md across hosts: every kernel counter of every case on every host."""
    by_bench = a.counters.by_benchmark if a.counters is not None else {}
    return Page(
        title=(f"bakeoff details across {len(a.hosts)} hosts: {', '.join(a.labels)}"
               if len(a.hosts) >= 2 else
               f"bakeoff details on one host, {', '.join(a.labels)}: nothing compared"),
        intro=(Paragraph(("Every kernel counter of every case on every host (counted "
                          "samples), the test across hosts beside it; the findings and the "
                          "differing counters are in report.md.",)),
               Paragraph((counters_rule(a.threshold),))),
        body=tuple(_bench_details(a, bench, by_bench) for bench in a.cases))


def render_hosts_details(a: HostsAnalysis) -> str:
    return MarkdownExporter().page(hosts_details_page(a))
