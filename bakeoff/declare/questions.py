"""Which cases a declared Question reads: the one place that resolves a question against a
run's grid, for the allocation of trials (bakeoff/run/allocation.py) and for the analysis.

A Question (model.py) names variants, params and points; a run measures some grid of them.
`question_readings()` turns the two into Readings: each figure the answer quotes, as the case
it is read on and the case it is compared with. LARGEST and SMALLEST are resolved against
the values the run measured, so "at the largest map" follows a profile's or --param's grid.

Pure: it reads declarations and cases only, no record, no samples.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from bakeoff.declare.model import LARGEST, SMALLEST, Case, ParamValue, Question

# What a reading's figure is, and so which interval its precision is judged on:
#   ratio:      median(case) / median(reference), relative CI half-width;
#   difference: median(case) - median(reference) (or the case's own median when the
#               reference does not report the metric), relative CI half-width;
#   error:      the RMS of the case's signed metric, relative CI half-width;
#   level:      a point of a crossover or overhead line: only which side of each level its
#               ratio lies on matters, not the width of its interval.
ReadingKind = Literal["ratio", "difference", "error", "level"]


@dataclass(frozen=True)
class Reading:
    """One figure a question's answer reads from the run."""

    question: int  # its index in the benchmark's questions
    kind: ReadingKind
    case: Case
    reference: Case | None  # None for kind "error"
    metric: str
    # The CI half-width, as a fraction of the figure, the default profile spends trials to
    # reach; None for kind "level".
    target_ci: float | None
    # kind "level": the ratios whose side matters (1 for a crossover; the benchmark's
    # crossover_ratios for an overhead), and the line the point is on: the param swept and
    # the case's other params, so neighbouring points can be found.
    levels: tuple[float, ...] = ()
    along: str | None = None


def question_from_dict(d: Mapping[str, Any]) -> Question:
    """A Question as BenchmarkInfo.questions records it (Question.to_dict) back."""
    return Question(
        ask=str(d["ask"]), form=d["form"], against=str(d.get("against", "")),
        variants=tuple(d.get("variants", ())), metric=d.get("metric"),
        metrics=tuple(d.get("metrics", ())),
        at={k: tuple(v) for k, v in dict(d.get("at", {})).items()},
        along=d.get("along"), param=d.get("param"), within=tuple(d.get("within", ())),
        target_ci=float(d.get("target_ci", 0.05)), claim=str(d.get("claim", "")),
        checked=str(d.get("checked", "")))


def _resolve_at(at: Mapping[str, Sequence[ParamValue]],
                measured: Mapping[str, list[ParamValue]]) -> dict[str, set[ParamValue]]:
    """param -> the values a question reads there, LARGEST/SMALLEST replaced by the run's
    largest/smallest value of that param; a param the run did not measure reads nothing."""
    out: dict[str, set[ParamValue]] = {}
    for name, wanted in at.items():
        values = measured.get(name, [])
        chosen: set[ParamValue] = set()
        for w in wanted:
            if w in (LARGEST, SMALLEST) and values:
                numeric = [v for v in values if not isinstance(v, str)]
                if numeric:
                    chosen.add(max(numeric) if w == LARGEST else min(numeric))
            elif w in values:
                chosen.add(w)
        out[name] = chosen
    return out


def _at_point(case: Case, at: Mapping[str, set[ParamValue]], skip: str | None = None) -> bool:
    return all(case.param(name) in values for name, values in at.items()
               if name != skip and name in dict(case.params))


def question_readings(
    q: Question,
    index: int,
    cases: Sequence[Case],
    baseline: str,
    not_answers: Iterable[str] = (),
    crossover_ratios: Sequence[float] = (),
    primary_metric: str = "",
) -> list[Reading]:
    """The readings of question `q` (the benchmark's `index`-th) in a run of `cases`.

    baseline: the benchmark's baseline variant; not_answers: its control and diagnostic
    variants, which never answer (they are left out of an empty `variants`, and of a named
    one too); crossover_ratios: the benchmark's, the levels of an "overhead" question;
    primary_metric: what a question without `metric` reads."""
    excluded = set(not_answers)
    present = set(cases)
    measured: dict[str, list[ParamValue]] = {}
    for c in cases:
        for k, v in c.params:
            if v not in measured.setdefault(k, []):
                measured[k].append(v)
    at = _resolve_at(q.at, measured)
    metric = q.metric or primary_metric
    reads: list[Reading] = []

    def ref_of(case: Case) -> Case | None:
        if q.param:
            params = tuple((k, q.against if k == q.param else v) for k, v in case.params)
            ref = Case(case.benchmark, case.variant, params)
        else:
            ref = Case(case.benchmark, q.against, case.params)
        return ref if ref in present else None

    if q.param:
        # Values of a param compared within each of `within`'s variants.
        within = set(q.within) or {c.variant for c in cases} - excluded
        values = set(q.variants) or set(measured.get(q.param, [])) - {q.against}
        compared = [c for c in cases if c.variant in within and c.param(q.param) in values]
    else:
        names = set(q.variants) or {c.variant for c in cases} - {baseline, q.against}
        compared = [c for c in cases if c.variant in names - excluded - {q.against}]

    if q.form in ("ratio", "added", "error"):
        for case in compared:
            if not _at_point(case, at):
                continue
            if q.form == "error":
                for m in q.metrics:
                    reads.append(Reading(index, "error", case, None, m, q.target_ci))
                continue
            ref = ref_of(case)
            if ref is not None:
                kind: ReadingKind = "ratio" if q.form == "ratio" else "difference"
                reads.append(Reading(index, kind, case, ref, metric, q.target_ci))
        return reads

    # crossover / overhead: every point along the axis (the other params at `at`'s values).
    along = q.along or ""
    line = [c for c in compared if along in dict(c.params) and _at_point(c, at, skip=along)]
    levels = (1.0,) if q.form == "crossover" else tuple(crossover_ratios)
    for case in line:
        ref = ref_of(case)
        if ref is None:
            continue
        reads.append(Reading(index, "level", case, ref, metric, None, levels, along))
    if q.form == "overhead":
        # What each variant adds per operation (the paired difference) is read where the
        # work is least: the smallest point of the axis, with the question's target.
        smallest = min((float(c.param(along)) for c in line), default=None)
        for case in line:
            ref = ref_of(case)
            if ref is not None and float(case.param(along)) == smallest:
                reads.append(Reading(index, "difference", case, ref, metric, q.target_ci))
    return reads


def benchmark_readings(questions: Sequence[Question], cases: Sequence[Case], baseline: str,
                       not_answers: Iterable[str] = (), crossover_ratios: Sequence[float] = (),
                       primary_metric: str = "") -> list[Reading]:
    """Every question's readings, in the order of the questions."""
    skip = tuple(not_answers)
    return [r for i, q in enumerate(questions)
            for r in question_readings(q, i, cases, baseline, skip, crossover_ratios,
                                       primary_metric)]


def answer_cases(readings: Iterable[Reading]) -> set[Case]:
    """The cases some question reads (both sides of each reading)."""
    out: set[Case] = set()
    for r in readings:
        out.add(r.case)
        if r.reference is not None:
            out.add(r.reference)
    return out
