"""Sequential allocation of trials: spend them where they can still change an answer.

Every case first gets `min_trials`. From then on, each round gives one more trial only to the
cases whose answer is not settled, up to the profile's `trials`:

- a variant's case is *settled* when an interval of its ratio to the baseline, widened by
  STOP_MARGIN, contains none of the levels an answer turns on: the verdict's thresholds
  1 - t and 1 + t (t = --threshold) and the benchmark's declared crossover ratios. Then later
  trials would most likely leave its verdict, and the side of each level its ratio is on,
  as they are;
- the baseline's case needs a trial while any variant's case at the same params does (both
  sides of a ratio carry its error);
- a case without a usable ratio (failed trials, a baseline median of 0, a metric the baseline
  does not report) is never settled: it gets every trial the profile allows, as without
  this rule.

The interval is the report's own (stats.ratio_ci, a Welch t interval on the logs of the
per-trial medians), widened by STOP_MARGIN (log_ratio_interval says more).

What this does to the statistics (tests/test_allocation.py checks it by simulation): the
stopping rule looks at the data several times, so the final CI is not a fixed-n CI. The error
that matters, a verdict that names the wrong winner or claims a difference beyond the
threshold that is not there, stays within a stated bound of the fixed design's at `trials`;
the final CI's coverage of the true ratio stays within a stated bound of the fixed design's.
Cases near a threshold get the most trials, which is where the fixed design's verdicts are
least sure; cases far from every level stop at `min_trials` with the answer they would have
had at `trials`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from bakeoff.declare import questions
from bakeoff.declare.model import Case
from bakeoff.run.target import rounds_needed
from bakeoff.stats import estimates as stats

# How much wider than the 95% t interval (in log ratio) the interval a case must keep clear of
# every level is. Larger is more careful and costs more trials. Of 1.0 and 1.5, tried with
# the simulation of tests/test_allocation.py (3 to 10 trials a case), only 1.5 kept the
# share of wrong verdicts within its bound at a 15% trial-to-trial spread.
STOP_MARGIN = 1.5


@dataclass(frozen=True)
class Rule:
    """When cases stop getting trials. min_trials == max_trials is the fixed design."""

    min_trials: int
    max_trials: int
    levels: tuple[float, ...]  # ratios an answer turns on: 1 ± threshold, crossover ratios
    margin: float = STOP_MARGIN

    @classmethod
    def for_benchmark(cls, min_trials: int | None, max_trials: int, threshold: float,
                      crossover_ratios: Sequence[float]) -> Rule:
        low = max_trials if min_trials is None else max(1, min(min_trials, max_trials))
        levels = tuple(sorted({1.0 - threshold, 1.0 + threshold, *crossover_ratios}))
        return cls(low, max_trials, levels)

    @property
    def sequential(self) -> bool:
        return self.min_trials < self.max_trials


def log_ratio_interval(variant: stats.Trials, baseline: stats.Trials,
                       confidence: float) -> tuple[float, float] | None:
    """The report's interval of the ratio (stats.ratio_ci: Welch t on the logs of the
    per-trial medians, centred on the pooled ratio); None when it cannot be formed (fewer
    than 2 trials a side, a median <= 0).

    The same interval the report prints and its verdicts use: it was chosen for covering
    94-97% from 3 trials a side on (docs/STATISTICS.md), where the percentile bootstrap
    that was printed before is too narrow, and a stopping rule on a too-narrow interval
    stops too early, exactly where stopping is a bet."""
    v = [np.asarray(t, dtype=np.float64) for t in variant if len(t)]
    b = [np.asarray(t, dtype=np.float64) for t in baseline if len(t)]
    if len(v) < 2 or len(b) < 2:
        return None
    if min(float(np.median(t)) for t in [*v, *b]) <= 0:
        return None
    r = stats.ratio_ci(v, b, confidence)
    return r.ci_low, r.ci_high


def settled(variant: stats.Trials, baseline: stats.Trials, rule: Rule) -> bool:
    """True when the ratio's interval, widened by the rule's margin, lies clear of every level
    of the rule, and the ratio of pooled medians lies in it too (the report's point is the
    interval's own centre; a pooled ratio outside says the trials disagree with their
    samples, which more trials settle)."""
    interval = log_ratio_interval(variant, baseline, stats.CONFIDENCE)
    if interval is None:
        return False
    low, high = interval
    centre = math.sqrt(low * high)
    lo = centre * (low / centre) ** rule.margin
    hi = centre * (high / centre) ** rule.margin
    pooled_b = float(np.median(np.concatenate([np.asarray(t, dtype=float) for t in baseline])))
    pooled_v = float(np.median(np.concatenate([np.asarray(t, dtype=float) for t in variant])))
    # (The tolerance: exp(log(a) - log(b)) is a/b to a few ulps.)
    if pooled_b <= 0 or not lo * (1 - 1e-9) <= pooled_v / pooled_b <= hi * (1 + 1e-9):
        return False
    return not any(lo <= level <= hi for level in rule.levels)


@dataclass(frozen=True)
class Others:
    """The cases none of the benchmark's questions reads, and the trials each gets
    (Profile.other_trials): that many and no more, whatever the rules above would add.
    They still show in the tables, with the CI their trials give."""

    cases: frozenset[Case]
    trials: int


def cases_needing_trials(
    cases: Sequence[Case],
    counts: Mapping[Case, int],
    samples: Callable[[Case], stats.Trials],
    baseline: str,
    rule: Rule,
    precision: Precision | None = None,
    values: Values | None = None,
    others: Others | None = None,
) -> list[Case]:
    """The cases that get a trial in the next round, in the order of `cases`.

    samples(case): the case's ok trials' values of the metric the verdict ranks.
    precision, values: the questions' readings, and each case's values of a metric: once
    every case has min_trials, the cases whose answers are not yet precise get trials too
    (answer_cases_needing_trials), also in a fixed design.
    others: the cases no question reads, which get others.trials (in place of min_trials)
    and are left out of the rules that add trials, so they never hold the questions' cases
    back nor open a baseline case for more.
    """
    extra = others.cases if others is not None else frozenset()

    def least(case: Case) -> int:
        return others.trials if others is not None and case in extra else rule.min_trials

    below_min = [c for c in cases if counts[c] < least(c)]
    if below_min or not (rule.sequential or precision is not None):
        return below_min
    chosen = (_open_by_levels(cases, counts, samples, baseline, rule, extra)
              if rule.sequential else set())
    if precision is not None and values is not None:
        # The questions' cases beyond: until their answers are as precise as asked.
        chosen |= answer_cases_needing_trials(counts, values, precision)
    return [c for c in cases if c in chosen and c not in extra]


def _open_by_levels(cases: Sequence[Case], counts: Mapping[Case, int],
                    samples: Callable[[Case], stats.Trials], baseline: str,
                    rule: Rule, skip: frozenset[Case] = frozenset()) -> set[Case]:
    """The cases the levels leave open (see the module's docstring), below rule.max_trials;
    a variant's case in `skip` opens nothing, not even its baseline's."""
    open_variants: list[Case] = []
    open_params: set[tuple[tuple[str, object], ...]] = set()
    base_of = {c.params: c for c in cases if c.variant == baseline}
    for case in cases:
        if case.variant == baseline or case in skip:
            continue
        base = base_of.get(case.params)
        if base is None or not settled(samples(case), samples(base), rule):
            # Open: its baseline keeps getting trials even once the variant's own are spent.
            open_params.add(case.params)
            if counts[case] < rule.max_trials:
                open_variants.append(case)
    return set(open_variants) | {c for c in base_of.values()
                                 if c.params in open_params and counts[c] < rule.max_trials}


# ---- precision where the answer needs it -------------------------------------------------------
#
# The levels above decide which side of a threshold a ratio is on. A question the benchmark
# exists for (model.Question) needs more: its figure with an interval narrow enough to quote,
# a CI half-width within the question's target_ci (5% of the figure by default). The cases a
# question reads (bakeoff/declare/questions.py) therefore keep getting trials, after the rule above
# is done with them, until each figure's interval is that narrow or the case has the
# profile's answer_trials (its share of the run), and no other case gets more for it.
#
# The intervals are t intervals on per-trial summaries, as log_ratio_interval is and for the
# same reason: at 3 to 10 trials the percentile bootstrap the report quotes is narrower than
# the spread it should cover, and stopping on a too-narrow interval stops too early. Stopping
# when this interval is within the target leaves the report's interval within it too, as a
# rule (tests/test_allocation.py checks it by simulation).


# Resamples of the report's interval while deciding: a decision, not a figure to print.
DECISION_BOOT = 500


@dataclass(frozen=True)
class Precision:
    """The readings of a benchmark's questions, and the most trials a case they read gets.
    rng: draws the resamples of the report's interval each decision also checks."""

    readings: tuple[questions.Reading, ...]
    max_trials: int
    rng: np.random.Generator = dataclasses.field(
        default_factory=lambda: np.random.default_rng(0))


# values(case, metric): the case's ok trials' values of that metric, as compared (|value| of
# a signed metric).
Values = Callable[[Case, str], stats.Trials]


def _trial_medians(trials: stats.Trials) -> list[float]:
    return [float(np.median(t)) for t in trials if len(t)]


def _mean_interval(values: Sequence[float], confidence: float) -> tuple[float, float] | None:
    """A one-sample t interval of the mean of per-trial values; None below 2 values."""
    if len(values) < 2:
        return None
    a = np.asarray(values, dtype=float)
    half = stats.t_quantile(len(a) - 1, confidence) * float(a.std(ddof=1)) / math.sqrt(len(a))
    centre = float(a.mean())
    return centre - half, centre + half


def difference_interval(case: stats.Trials, reference: stats.Trials,
                        confidence: float) -> tuple[float, float] | None:
    """A Welch t interval of the difference of the two sides' typical trial (per-trial
    medians); with no reference values, the interval of the case's own typical trial (a
    metric that already is a difference, as heap-sampling's added ns). None below 2 trials
    a side."""
    v = _trial_medians(case)
    if not reference:
        return _mean_interval(v, confidence)
    b = _trial_medians(reference)
    if len(v) < 2 or len(b) < 2:
        return None
    var_v = float(np.var(v, ddof=1)) / len(v)
    var_b = float(np.var(b, ddof=1)) / len(b)
    diff = float(np.mean(v) - np.mean(b))
    se = math.sqrt(var_v + var_b)
    if se == 0:
        return diff, diff
    df = (var_v + var_b) ** 2 / ((var_v**2 / (len(v) - 1) if var_v else 0.0)
                                 + (var_b**2 / (len(b) - 1) if var_b else 0.0))
    half = stats.t_quantile(df, confidence) * se
    return diff - half, diff + half


def relative_half_width(low: float, high: float, centre: float) -> float:
    """(high - low) / 2 as a fraction of |centre|; inf when centre is 0."""
    return (high - low) / 2 / abs(centre) if centre != 0 else math.inf


def answer_interval(kind: questions.ReadingKind, case: stats.Trials, reference: stats.Trials,
                    rng: np.random.Generator, n_boot: int = stats.N_BOOT,
                    rounds: tuple[Sequence[int], Sequence[int]] | None = None,
                    ) -> tuple[float, float, float] | None:
    """The figure of a reading and the 95% CI the report quotes for it, by stats' calibrated
    interval: (value, low, high); None when there is none (no values; a ratio to 0).

    ratio: stats.ratio_ci, paired by round when `rounds` gives each side's (the answer's own
    figure); difference: median(case) - median(reference), or the case's median when the
    reference has no values; error: the RMS of the case's values."""
    if not case:
        return None
    if kind == "ratio":
        if not reference or float(np.median(np.concatenate(
                [np.asarray(t, dtype=float) for t in reference]))) == 0:
            return None
        r = stats.ratio_ci(case, reference, variant_rounds=rounds[0] if rounds else None,
                           baseline_rounds=rounds[1] if rounds else None)
        return r.ratio, r.ci_low, r.ci_high
    if kind == "error":
        e = stats.signed_error(case, rng, n_boot=n_boot)
        return e.rms, e.rms_ci_low, e.rms_ci_high
    pooled = float(np.median(np.concatenate([np.asarray(t, dtype=float) for t in case])))
    if reference:
        pooled -= float(np.median(np.concatenate(
            [np.asarray(t, dtype=float) for t in reference])))
    # The calibrated method (trial-t, docs/STATISTICS.md): the t interval's half-width from
    # the trials' spread, centred on the pooled figure the report prints (estimate ± t·SE).
    interval = difference_interval(case, reference, stats.CONFIDENCE)
    if interval is None:
        return None
    half = (interval[1] - interval[0]) / 2
    return pooled, pooled - half, pooled + half


def reading_half_width(reading: questions.Reading, values: Values,
                       rng: np.random.Generator | None = None) -> float:
    """The half-width of a reading's figure, as a fraction of the figure, that decides
    whether its cases need more trials: the wider of the stopping interval (a t interval,
    below) and the interval the report will quote (answer_interval; the median's is wider
    than the mean's t interval once trials are many). inf when it cannot be formed yet."""
    stopping = _stopping_half_width(reading, values)
    if rng is None or math.isinf(stopping):
        return stopping
    ref = values(reading.reference, reading.metric) if reading.reference is not None else []
    quoted = answer_interval(reading.kind, values(reading.case, reading.metric), ref, rng,
                             DECISION_BOOT)
    if quoted is None:
        return math.inf
    return max(stopping, relative_half_width(quoted[1], quoted[2], quoted[0]))


def _stopping_half_width(reading: questions.Reading, values: Values) -> float:
    case = values(reading.case, reading.metric)
    if reading.kind == "error":
        rms = [math.sqrt(float(np.mean(np.square(t)))) for t in case if len(t)]
        interval = _mean_interval(rms, stats.CONFIDENCE)
        return math.inf if interval is None else relative_half_width(*interval, float(np.mean(rms)))
    ref = values(reading.reference, reading.metric) if reading.reference is not None else []
    if reading.kind == "ratio":
        interval = log_ratio_interval(case, ref, stats.CONFIDENCE)
        if interval is None:
            return math.inf
        return relative_half_width(*interval, math.sqrt(interval[0] * interval[1]))
    interval = difference_interval(case, ref, stats.CONFIDENCE)
    if interval is None:
        return math.inf
    return relative_half_width(*interval, (interval[0] + interval[1]) / 2)


def _open_level_points(readings: Sequence[questions.Reading], values: Values) -> set[Case]:
    """Of a crossover's or an overhead's points: the two either side of the first crossing
    of each level along the line (from the axis's start: where a variant starts winning, or
    where its overhead first falls under 5%), each while its interval still contains the
    level. Only the first: where a ratio hovers about a level further on (an overhead of
    0.5% against the 1% level, at the longest durations) noise makes crossings that more
    trials would not settle, and the answer reads the first."""
    lines: dict[tuple[object, ...], list[questions.Reading]] = {}
    for r in readings:
        others = tuple((k, v) for k, v in r.case.params if k != r.along)
        lines.setdefault((r.question, r.case.variant, others), []).append(r)
    open_points: set[Case] = set()
    for line in lines.values():
        line.sort(key=lambda r: float(r.case.param(r.along or "")))
        intervals = [log_ratio_interval(values(r.case, r.metric),
                                        values(r.reference, r.metric) if r.reference else [],
                                        stats.CONFIDENCE) for r in line]
        if any(i is None for i in intervals):
            # Not every point has a ratio yet: they all need trials before any crossing
            # can be read.
            open_points.update(r.case for r, i in zip(line, intervals, strict=True) if i is None)
            continue
        bounds = [i for i in intervals if i is not None]
        centres = [math.sqrt(low * high) for low, high in bounds]
        for level in line[0].levels:
            for k in range(len(line) - 1):
                if (centres[k] - level) * (centres[k + 1] - level) < 0:
                    open_points.update(line[j].case for j in (k, k + 1)
                                       if bounds[j][0] <= level <= bounds[j][1])
                    break
    return open_points


def _reported_by_none(reading: questions.Reading, counts: Mapping[Case, int],
                      values: Values) -> bool:
    """Trials of the reading's case ran and none reports its metric (an error question's
    metric of another variant: Poisson's trials give no hash_total_error_pct; a metric
    reported only where it applies): no trial gives it a figure, so it asks for none."""
    return bool(counts.get(reading.case, 0)) and not any(
        len(t) for t in values(reading.case, reading.metric))


def answer_cases_needing_trials(counts: Mapping[Case, int], values: Values,
                                precision: Precision) -> set[Case]:
    """The cases the questions' readings still need a trial on: both sides of each reading
    whose interval is wider than its target (or, for a crossover's point, still holds the
    level it crosses), each below precision.max_trials."""
    needed: set[Case] = set()
    levels = [r for r in precision.readings if r.kind == "level"]
    open_points = _open_level_points(levels, values) if levels else set()
    for r in precision.readings:
        if _reported_by_none(r, counts, values):
            continue
        if r.kind == "level":
            wide = r.case in open_points
        else:
            wide = (r.target_ci is not None
                    and reading_half_width(r, values, precision.rng) > r.target_ci)
        if wide:
            needed.update(c for c in (r.case, r.reference)
                          if c is not None and counts.get(c, precision.max_trials)
                          < precision.max_trials)
    return needed


# ---- the plan: how many trials each case will most likely take ---------------------------------
#
# What the rules above will most likely give each case in all, at the spread measured so far:
# the estimate of the time left (run/progress.py) is made from it after every round, so that
# it counts the trials the rules will add, not only the round being decided. A t interval
# narrows as t(n-1)/√n (run/target.py rounds_needed): a case open on the levels needs its
# widened interval to shrink to its distance from the nearest level; a reading wider than its
# target, to its target; each within its cap. A case with one trial has no interval yet: it
# is planned at FIRST_TRIAL_SPREAD (below) rather than at its cap.


# The trial-to-trial spread (SD of the logs of a case's trial medians) a case is planned with
# while it has one trial: one trial cannot show it, and planning every case at its cap until
# a second round counted 12 trials more than the rule took in every mremap-vs-memcpy run
# measured (docs/notes/time-left-plan-20261129-epyc.md). 0.15: the spread STOP_MARGIN was
# chosen at (tests/test_allocation.py), near the median of a real run's cases (the note). A
# case whose samples scatter more within its one trial is planned at that instead.
FIRST_TRIAL_SPREAD = 0.15


def _first_trial_spread(trials: stats.Trials) -> tuple[float, float] | None:
    """(log of the median, the spread to plan with) of a side with one trial or more and no
    interval yet: the larger of FIRST_TRIAL_SPREAD and its samples' own spread (SD of their
    logs); None without a positive sample."""
    pooled = [np.asarray(t, dtype=float) for t in trials if len(t)]
    if not pooled:
        return None
    values = np.concatenate(pooled)
    if values.size == 0 or float(values.min()) <= 0:
        return None
    logs = np.log(values)
    own = float(logs.std(ddof=1)) if values.size > 1 else 0.0
    return float(np.median(logs)), max(FIRST_TRIAL_SPREAD, own)


def _first_trial_rounds(variant: stats.Trials, baseline: stats.Trials, bound: float,
                        margin: float, cap: int) -> int:
    """Before two trials a side: the rounds after which the ratio's t interval (Welch, on
    the logs of trial medians, as log_ratio_interval), widened by margin, is within bound
    of its centre, at each side's first-trial spread; cap when never within it. bound <= 0
    (the ratio sits on a level): cap."""
    sides = _first_trial_spread(variant), _first_trial_spread(baseline)
    if bound <= 0:
        return cap
    # A side not yet run: FIRST_TRIAL_SPREAD alone.
    sv, sb = ((FIRST_TRIAL_SPREAD if side is None else side[1]) ** 2 for side in sides)
    for n in range(2, cap):
        a, b = sv / n, sb / n
        df = (n - 1) * (a + b) ** 2 / (a * a + b * b) if a + b > 0 else math.inf
        if margin * stats.t_quantile(df) * math.sqrt(a + b) <= bound:
            return n
    return cap


def _trials_to_settle(variant: stats.Trials, baseline: stats.Trials, rule: Rule) -> int:
    """The trials a variant's case most likely needs before the levels settle it."""
    interval = log_ratio_interval(variant, baseline, stats.CONFIDENCE)
    n = min(sum(1 for t in variant if len(t)), sum(1 for t in baseline if len(t)))
    if interval is None:
        sides = _first_trial_spread(variant), _first_trial_spread(baseline)
        if sides[0] is None or sides[1] is None:
            return rule.max_trials
        centre = sides[0][0] - sides[1][0]
        distance = min((abs(centre - math.log(level)) for level in rule.levels),
                       default=math.inf)
        return _first_trial_rounds(variant, baseline, distance, rule.margin, rule.max_trials)
    low, high = interval
    centre = math.sqrt(low * high)
    half = math.log(high / low) / 2 * rule.margin
    distance = min((abs(math.log(centre / level)) for level in rule.levels), default=math.inf)
    if distance == 0:
        return rule.max_trials
    needed = n if half <= distance else rounds_needed(half, distance, n)
    needed = rule.max_trials if needed is None else needed
    if n < rule.min_trials:
        # A spread of 1 to 3 degrees of freedom is no plan: it planned a pair at less than
        # half the trials it took (docs/notes/time-left-plan-20261129-epyc.md). Until the
        # case has min_trials (which it gets whatever its spread), no fewer than the first
        # trial's spread plans.
        needed = max(needed, _first_trial_rounds(variant, baseline, distance, rule.margin,
                                                 rule.max_trials))
    return needed


def expected_trials(
    cases: Sequence[Case],
    counts: Mapping[Case, int],
    samples: Callable[[Case], stats.Trials],
    baseline: str,
    rule: Rule,
    precision: Precision | None = None,
    values: Values | None = None,
    others: Others | None = None,
) -> dict[Case, int]:
    """Each case's trials in all, as the rules above will most likely leave them (never
    below what it has, nor above its cap); arguments as cases_needing_trials takes them."""
    extra = others.cases if others is not None else frozenset()
    out = {c: max(counts[c], others.trials if others is not None and c in extra
                  else rule.min_trials) for c in cases}
    if rule.sequential:
        base_of = {c.params: c for c in cases if c.variant == baseline}
        for case in cases:
            base = base_of.get(case.params)
            if case.variant == baseline or case in extra or base is None:
                continue
            if not counts[case] or not counts[base]:
                continue  # a side not yet run (in the first round): nothing to plan with
            n = min(rule.max_trials, max(counts[case], _trials_to_settle(
                samples(case), samples(base), rule)))
            out[case] = max(out[case], n)
            out[base] = max(out[base], n)
    if precision is not None and values is not None:
        for r in precision.readings:
            if r.target_ci is None or r.kind == "level":
                continue
            if _reported_by_none(r, counts, values):
                # As the rule passes it over (answer_cases_needing_trials): planned at its
                # cap, heap-sampling's error readings of the other scheme's metric kept
                # every mode case at its cap while the rule stopped them at the minimum, and
                # the time left at half a `make bench` was far too long
                # (docs/notes/make-bench-time-20261129b-epyc.md).
                continue
            sides = [c for c in (r.case, r.reference) if c is not None and c in out]
            n = min((counts[c] for c in sides), default=0)
            if not n:
                # A side not yet run (in the first round): the first trial's spread, which
                # is all a precision target needs to be planned (mremap-vs-memcpy's 5% at
                # 16 MiB: answer_trials); planned at min_trials, as the levels are, the
                # first round's time left counted too few (the note above).
                if r.kind == "ratio" and r.reference is not None:
                    first = _first_trial_rounds([], [], r.target_ci, 1.0, precision.max_trials)
                    for c in sides:
                        if c not in extra:
                            out[c] = max(out[c], first)
                continue
            # The width the rule decides on (answer_cases_needing_trials): the wider of the
            # stopping interval and the one the report quotes (an error reading's is a
            # bootstrap's), so the plan stops where the rule does. Its own generator, so that
            # planning leaves the rule's resamples as they were.
            # Below min_trials (which the case gets whatever its spread), the stopping
            # interval alone: the quoted one is a bootstrap of 2 to 4 trials, which at 2
            # can be hundreds of times wider than the t interval and planned each of
            # heap-sampling's mode cases at its cap, where the rule stopped near the minimum
            # (docs/notes/make-bench-time-20261129b-epyc.md).
            width = reading_half_width(r, values, np.random.default_rng(0)
                                       if n >= rule.min_trials else None)
            needed = rounds_needed(width, r.target_ci, n)
            if needed is None and r.kind == "error":
                # One trial: an RMS error has no spread yet to plan with; planned at
                # min_trials, as the levels are. At the cap, every heap-sampling mode case
                # was planned at its cap between its first and second trial, where the rule
                # stopped near the minimum. (A difference stays at its cap: heap-sampling's
                # inline cases take it.)
                continue
            if n < rule.min_trials and r.kind == "ratio" and r.reference is not None:
                # One trial a side, or fewer than min_trials: planned at no less than the
                # first trial's spread, as the levels are.
                first = _first_trial_rounds(values(r.case, r.metric),
                                            values(r.reference, r.metric), r.target_ci, 1.0,
                                            precision.max_trials)
                needed = first if needed is None else max(needed, first)
            for c in sides:
                if c not in extra:
                    out[c] = max(out[c], min(precision.max_trials,
                                             needed if needed is not None
                                             else precision.max_trials))
    return out
