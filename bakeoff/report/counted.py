"""What the counted samples say, for every report: kernel counters per operation beside the
time (a narrow table per benchmark), what counting cost, and the "why" finding that quotes a
benchmark's why_counters where its winner finding is made.

Generated from the analysis and BenchmarkInfo.why_counters alone: counter names are the ones
benchmarks/common/counters.h gives (software and PMU events by name, tracepoints as
"subsystem.event"), so nothing here knows a benchmark. Cells and sentences are raw text;
each renderer escapes them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from bakeoff.analysis.within_run import BenchmarkAnalysis, CaseResult
from bakeoff.report.format import (
    MISSING,
    case_params_label,
    fmt_estimate,
    fmt_number,
    fmt_ratio,
    fmt_value,
    fmt_with_ci,
    is_time_unit,
    ratio_with_ci,
)
from bakeoff.report.tables import measured_results
from bakeoff.stats.estimates import Summary

# counters.h's own events in words; a tracepoint ("tlb.tlb_flush") reads as its events.
_EVENT_WORDS = {
    "task_clock_ns": "ns on CPU",
    "context_switches": "context switches",
    "cpu_migrations": "CPU migrations",
    "page_faults_minor": "minor page faults",
    "page_faults_major": "major page faults",
    "cycles": "CPU cycles",
    "instructions": "instructions",
    "branch_misses": "branch misses",
    "cache_misses": "cache misses",
    "dtlb_load_misses": "dTLB load misses",
}


def counter_words(name: str) -> str:
    """'tlb.tlb_flush' -> 'tlb:tlb_flush events'; 'page_faults_minor' -> 'minor page faults
    (page_faults_minor)': readable, and still the name to grep for."""
    if name in _EVENT_WORDS:
        return f"{_EVENT_WORDS[name]} ({name})"
    subsystem, dot, event = name.partition(".")
    return f"{subsystem}:{event} events" if dot else name


# Counted samples come from few trials (Profile.counted_trials: often 2). A t interval from 2
# (t = 12.7 on one degree of freedom, on log scale) spans orders of magnitude and says
# nothing a reader can use ("2.88e-13–73.8 M" from trials of 1.25 and 17.0): below this many
# counted trials a counter's median is given with its trial count and no CI.
MIN_COUNTED_TRIALS_FOR_CI = 3


def _few(s: Summary) -> str:
    """Why a counter's median from few counted trials has no CI: it was the same in each
    (an exact count), or they are too few to give one."""
    if s.n_trials > 1 and s.ci_low == s.ci_high == s.median:
        return f"the same in {'both' if s.n_trials == 2 else f'all {s.n_trials}'} counted trials"
    return f"{s.n_trials} counted trial{'s' if s.n_trials != 1 else ''}: too few for a CI"


def per_op_figure(s: Summary) -> str:
    """'1.00 (95% CI 0.990–1.01)', '1.00 (the same in every trial)', or the median alone
    with how few counted trials it is from."""
    if s.n_trials < MIN_COUNTED_TRIALS_FOR_CI:
        return f"{fmt_value(s.median, '')} ({_few(s)})"
    return fmt_with_ci(s.median, s.ci_low, s.ci_high, "")


# ---- the cost of counting ----------------------------------------------------------------


def counting_cost_line(ba: BenchmarkAnalysis) -> str | None:
    """'counting cost: counted samples took 8.10% longer than measured ones (ns_per_op;
    median over 6 cases, range 2.00–14.0%; at least 3 trials each)'; None for a run
    without counted samples. Each case's figure with its CI: counting_cost_table."""
    cost = ba.counting_cost
    if cost is None:
        return None
    metric = ba.info.metric(cost.metric)
    # A time, or a rate (its slowdown is measured/counted): how much longer an operation
    # took. Another lower-is-better metric: how much higher it was.
    timed = is_time_unit(str(metric["unit"])) or not bool(metric["lower_is_better"])
    up, down = ("longer", "shorter") if timed else ("higher", "lower")

    def pct(x: float) -> str:
        return fmt_number((x - 1) * 100)

    how = (f"{pct(cost.median)}% {up}" if cost.median >= 1 else
           f"{fmt_number((1 - cost.median) * 100)}% {down}")
    said = (f"counted samples took {how} than measured ones" if timed else
            f"counted samples' {cost.metric} was {how} than measured ones'")
    spread = (f"median over {cost.n_cases} cases, range {pct(cost.low)}–{pct(cost.high)}%"
              if cost.n_cases > 1 else "1 case")
    n = f"at least {cost.n_trials} trials each" if cost.n_cases > 1 else f"{cost.n_trials} trials"
    return f"counting cost: {said} ({cost.metric}; {spread}; {n})"


def counting_cost_table(ba: BenchmarkAnalysis) -> tuple[list[str], list[list[str]]] | None:
    """Per case: counted / measured median of the primary metric with its 95% CI (trials
    resampled in pairs) and what that means per operation; None without counted samples."""
    rows = [r for r in measured_results(ba, ba.info.primary_metric) if r.counting_cost]
    if not rows:
        return None
    headers = ["variant", "params", "trials", "counted / measured (95% CI)",
               "slowdown while counted (95% CI)"]
    out = []
    for r in rows:
        c = r.counting_cost
        assert c is not None
        few = c.n_trials < MIN_COUNTED_TRIALS_FOR_CI
        ratio = (f"{fmt_number(c.ratio.ratio)} ({c.n_trials} counted trials: too few for a CI)"
                 if few else fmt_ratio(c.ratio.ratio, c.ratio.ci_low, c.ratio.ci_high))
        e = fmt_estimate((c.slowdown - 1) * 100, (c.slowdown_low - 1) * 100,
                         (c.slowdown_high - 1) * 100, "")
        slow = f"{e.point}%" + ("" if few or e.interval is None else f" ({e.interval}%)")
        out.append([r.case.variant, case_params_label(ba.info, r.case), str(c.n_trials),
                    ratio, slow])
    return headers, out


# ---- the counters table ------------------------------------------------------------------


@dataclass(frozen=True)
class CounterPerOpTable:
    """One counter per operation as a narrow table: a row per case, its median with the 95%
    CI, and its ratio to the baseline case at the same params (95% CI)."""

    name: str
    headers: list[str]
    rows: list[list[str]]


def counter_order(ba: BenchmarkAnalysis) -> list[str]:
    """Every counter some case counted: the why_counters first (in their order), then by name."""
    found = {n for r in ba.for_metric(ba.info.primary_metric) for n in r.per_op}
    why = [n for n in ba.info.why_counters if n in found]
    return why + sorted(found - set(why))


def per_op_tables(ba: BenchmarkAnalysis) -> list[CounterPerOpTable]:
    """A table per counter some case counted (why_counters first); none for a run without
    counted samples."""
    results = [r for r in measured_results(ba, ba.info.primary_metric) if r.per_op]
    headers = ["variant", "params", "trials", "per op: median (95% CI)",
               f"ratio to {ba.info.baseline} (95% CI)"]
    tables = []
    for name in counter_order(ba):
        rows = [[r.case.variant, case_params_label(ba.info, r.case), str(s.n_trials),
                 _median_cell(s), _ratio_cell(ba, r, name)]
                for r in results if (s := r.per_op.get(name)) is not None]
        tables.append(CounterPerOpTable(name, headers, rows))
    return tables


def _median_cell(s: Summary) -> str:
    if s.n_trials < MIN_COUNTED_TRIALS_FOR_CI:
        return f"{fmt_value(s.median, '')} ({_few(s)})"
    return fmt_with_ci(s.median, s.ci_low, s.ci_high, "", "")


def _ratio_cell(ba: BenchmarkAnalysis, r: CaseResult, name: str) -> str:
    if r.case.variant == ba.info.baseline:
        return "(baseline)"
    if name not in r.per_op_vs_baseline:
        return MISSING
    ratio = r.per_op_vs_baseline[name]
    if ratio is None:
        return f"{MISSING} (both 0)" if r.per_op[name].median == 0 else f"{MISSING} (baseline 0)"
    base = next((x for x in ba.for_metric(r.metric) if x.case.variant == ba.info.baseline
                 and x.case.params == r.case.params and name in x.per_op), None)
    if base is None or min(r.per_op[name].n_trials,
                           base.per_op[name].n_trials) < MIN_COUNTED_TRIALS_FOR_CI:
        return f"{fmt_number(ratio.ratio)} (too few counted trials for a CI)"
    return fmt_ratio(ratio.ratio, ratio.ci_low, ratio.ci_high)


# ---- why: the counters where a winner finding is made ------------------------------------


def _strength(a: float, b: float) -> float:
    """How far apart two per-op medians are: |log(a/b)|; infinite when one alone is 0."""
    if a == b:
        return 0.0
    if a <= 0 or b <= 0:
        return math.inf
    return abs(math.log(a / b))


def _apart(a: Summary, b: Summary) -> float:
    """_strength of two per-op summaries whose CIs do not overlap; 0 when they do (a
    difference the counted samples do not show is no explanation)."""
    if a.n_trials >= 2 and b.n_trials >= 2 and a.ci_low <= b.ci_high and b.ci_low <= a.ci_high:
        return 0.0
    return _strength(a.median, b.median)


def _costs_less(ba: BenchmarkAnalysis, a: CaseResult, b: CaseResult) -> bool | None:
    """Whether case a costs less than case b on their metric (None when either lacks a
    median, or they cost the same)."""
    if a.summary is None or b.summary is None or a.summary.median == b.summary.median:
        return None
    lower = a.summary.median < b.summary.median
    return lower if ba.info.metric(a.metric).get("lower_is_better", True) else not lower


def _explains(a: float, b: float, a_costs_less: bool | None) -> int:
    """How well a counter explains a cost, best first: 0 when the case that costs more
    makes more of it (a slower reader that makes more system calls per op); 1 when the
    cheaper case makes more (a child process's events that the parent's counters never see,
    a faster reader's rare read(), a move's TLB flushes against a copy's none: still a
    difference); 2 when both make the same."""
    if a == b:
        return 2
    if a_costs_less is None:
        return 0
    return 0 if (a < b) == a_costs_less else 1


@dataclass(frozen=True)
class WhySentence:
    text: str
    tentative: str  # '' when settled
    counters: tuple[str, ...]  # what it quotes, most telling first
    rival: CaseResult  # whom the winner's counters are set against
    differs: bool = True  # False: the lead counter is the same for both (nothing explained)


def why_sentence(ba: BenchmarkAnalysis, where: str, best: CaseResult,
                 base: CaseResult, rival: CaseResult | None = None,
                 called: tuple[str, str] | None = None) -> WhySentence | None:
    """At a winner finding's point: the why_counters of its best variant against the case
    the finding or answer sets it against (`rival`, else `base`): a why explains the
    difference that is stated, per operation, or is left out.
    A why explains a cost: it names only counters (per operation) that the costlier case
    makes more of, shown apart (their CIs do not overlap), the one furthest apart first,
    each with its CI. None when there is no such counter (a counter the cheaper case makes
    more of, such as a move's TLB flush against a copy's none, says what the cheaper one
    costs, not why it is cheaper), or the two cost the same, or the benchmark names none;
    `called` says what the two cases are called when not their variants (an answer that
    sets one value of a param against another)."""
    other = rival if rival is not None else base
    costs_less = _costs_less(ba, best, other)
    if costs_less is None:
        return None
    names = [n for n in ba.info.why_counters if n in best.per_op and n in other.per_op
             and _explains(best.per_op[n].median, other.per_op[n].median, costs_less) == 0
             and _apart(best.per_op[n], other.per_op[n]) > 0]
    if not names:
        return None
    names.sort(key=lambda n: (-_apart(best.per_op[n], other.per_op[n]),
                              -_strength(best.per_op[n].median, other.per_op[n].median)))
    a, b = best.per_op, other.per_op
    lead = names[0]
    at = f"At {where}, " if where else ""
    is_baseline = other.case.variant == ba.info.baseline and \
        other.case.params == best.case.params
    named = other.case.variant + (" (the baseline)" if is_baseline
                                  and other.case.variant != "baseline" else "")
    best_name = best.case.variant
    if called is not None:
        best_name, named = called
    text = (f"{at}{best_name} makes {per_op_figure(a[lead])} "
            f"{counter_words(lead)} per op against {per_op_figure(b[lead])} for {named}")
    ratio = best.per_op_vs_baseline.get(lead) if is_baseline else None
    if ratio is not None and min(a[lead].n_trials, b[lead].n_trials) >= \
            MIN_COUNTED_TRIALS_FOR_CI and math.isfinite(ratio.ci_low) and \
            math.isfinite(ratio.ci_high):
        text += f" ({ratio_with_ci(ratio.ratio, ratio.ci_low, ratio.ci_high)})"
    others = [f"{counter_words(n)} {fmt_value(a[n].median, '')} against {fmt_value(b[n].median, '')}"
              + _ci_pair(a[n], b[n]) for n in names[1:]
              if not (a[n].median == b[n].median == 0 and a[n].ci_high == b[n].ci_high == 0)]
    if others:
        text += "; " + "; ".join(others)
    trials = min(a[lead].n_trials, b[lead].n_trials)
    text += f" ({a[lead].n_trials} + {b[lead].n_trials} trials, counted samples)"
    why = []
    if trials < MIN_COUNTED_TRIALS_FOR_CI and not (
            a[lead].ci_low == a[lead].ci_high and b[lead].ci_low == b[lead].ci_high):
        why.append("too few counted trials for a CI")
    text += f" [tentative: {', '.join(why)}]." if why else "."
    return WhySentence(text, "; ".join(why), tuple(names), other,
                       differs=_apart(a[lead], b[lead]) > 0)


def _ci_pair(a: Summary, b: Summary) -> str:
    if min(a.n_trials, b.n_trials) < MIN_COUNTED_TRIALS_FOR_CI:
        return f" ({_few(a if a.n_trials <= b.n_trials else b)})"
    ea = fmt_estimate(a.median, a.ci_low, a.ci_high, "").interval or "the same in every trial"
    eb = fmt_estimate(b.median, b.ci_low, b.ci_high, "").interval or "the same in every trial"
    return f" (95% CIs {ea} and {eb})"
