"""The primary metric of a benchmark as points: each combination of param values with every
variant measured there, grouped by the params other than the axis (the first numeric param
swept over two values or more), each group in axis order. Findings, the compact table and
the findings chart read the run through it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from bakeoff.analysis.within_run import BenchmarkAnalysis, CaseResult
from bakeoff.declare.model import ParamValue
from bakeoff.report.format import params_label
from bakeoff.report.tables import case_sort_key, measured_results

Params = tuple[tuple[str, ParamValue], ...]


@dataclass(frozen=True)
class Point:
    """One combination of param values and every variant measured there."""

    params: Params
    results: tuple[CaseResult, ...]  # in the benchmark's variant order

    def of(self, variant: str) -> CaseResult | None:
        return next((r for r in self.results if r.case.variant == variant), None)


@dataclass(frozen=True)
class Grid:
    """The primary metric's points: grouped by the params other than the axis (the first
    numeric param swept over two values or more), each group in axis order."""

    metric: str
    axis: str | None
    groups: list[tuple[Params, list[Point]]]
    with_ratios: bool  # some variant has a ratio to the baseline at some point
    # Params with one value in every case: said once, left out of every label.
    constant: Params = ()

    @property
    def points(self) -> list[Point]:
        return [p for _, points in self.groups for p in points]


def _value_key(v: ParamValue) -> tuple[int, float, str]:
    return (0, float(v), "") if isinstance(v, int | float) else (1, 0.0, str(v))


def grid(ba: BenchmarkAnalysis, metric: str | None = None) -> Grid:
    metric = metric or ba.info.primary_metric
    rows = measured_results(ba, metric)
    measured = [r for r in rows if r.summary is not None]
    axis = next((p["name"] for p in ba.info.params if ba.info.param_is_numeric(p["name"])
                 and len({r.case.param(p["name"]) for r in measured
                          if p["name"] in dict(r.case.params)}) >= 2), None)
    values: dict[str, set[ParamValue]] = defaultdict(set)
    by_params: dict[Params, list[CaseResult]] = defaultdict(list)
    for r in rows:
        by_params[r.case.params].append(r)
        for k, v in r.case.params:
            values[k].add(v)
    constant = tuple((k, next(iter(vs))) for k, vs in values.items() if len(vs) == 1)
    groups: dict[Params, list[Point]] = defaultdict(list)
    for params, results in by_params.items():
        fixed = tuple((k, v) for k, v in params if k != axis and k not in dict(constant))
        ordered = sorted(results, key=lambda r: case_sort_key(ba, r.case))
        groups[fixed].append(Point(params, tuple(ordered)))
    ordered_groups = sorted(groups.items(), key=lambda g: tuple(_value_key(v) for _, v in g[0]))
    for _, points in ordered_groups:
        points.sort(key=lambda p: float(dict(p.params)[axis]) if axis else 0.0)
    return Grid(metric, axis, ordered_groups,
                with_ratios=any(r.vs_baseline is not None for r in rows), constant=constant)


def point_label(ba: BenchmarkAnalysis, g: Grid, params: Params) -> str:
    """The params that vary, as a label: 'size=16 MiB'; constant ones are said once."""
    varying = [(k, v) for k, v in params if k not in dict(g.constant)]
    return params_label(ba.info, varying)


def trials_of(r: CaseResult | None) -> int:
    return r.summary.n_trials if r is not None and r.summary is not None else 0
