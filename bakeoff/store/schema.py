"""The shape of results.json, checked before a record is built from it.

A results directory may be hand-edited, cut short, or written by another version. The
loader must refuse anything the analysis and reports could not take, in one line naming
where it is wrong (e.g. "benchmarks.demo.metrics[0].unit: missing"), so no damaged record
gets as far as a traceback in `bakeoff report` or `compare`.

Shapes are plain values: a type (str, bool, int, float: int or float, finite), a tuple of
allowed strings, a list [shape] (any length) or NonEmpty(shape), a dict of key -> shape
(keys ending '?' optional; other keys allowed), Map(shape) (any keys, each value that
shape), Optional(shape), or ANY.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from dataclasses import dataclass
from typing import Any

from bakeoff.declare.model import RunSettings


@dataclass(frozen=True)
class Map:
    values: Any


@dataclass(frozen=True)
class NonEmpty:
    item: Any


@dataclass(frozen=True)
class Optional:
    shape: Any


@dataclass(frozen=True)
class AtLeast:
    minimum: int


ANY = object()
SCALAR = object()  # a param value: str, or a finite int/float (not bool)

CASE = {"benchmark": str, "variant": str, "params": Map(SCALAR)}
NUMBER_MAP = Map(float)
BENCHMARK_INFO = {
    "name": str, "title": str, "summary": str, "baseline": str,
    "variants": NonEmpty({"name": str, "control?": bool, "diagnostic?": bool}),
    "params": [{"name": str, "kind": ("int", "float", "bytes", "str"), "unit?": str}],
    "metrics": NonEmpty({"name": str, "unit": str, "lower_is_better": bool,
                         "overhead_pct?": bool, "signed?": bool,
                         "subtracted?": str, "net?": bool}),
    "legacy_csv?": Optional({"filename": str, "columns": Map(str)}),
    "crossover_ratios?": [float],
    "fits?": [{"metric": str, "param": str, "description": str}],
    "profile?": dict,
    "counters?": [{"name": str, "unit": str, "lower_is_better": bool}],
    "why_counters?": [str],
    "questions?": [{"ask": str, "form": ("ratio", "crossover", "overhead", "added", "error")}],
    "definition?": Optional(dict),
}
TRIAL = {
    "case": CASE, "index": AtLeast(0), "round": AtLeast(0),
    "status": ("ok", "failed", "timeout", "interrupted"), "started_at": str,
    "wall_s": float, "exit_code": Optional(int), "samples": Map([float]),
    "counters": NUMBER_MAP, "meta": dict,
    "rusage": Optional({"user_s": float, "sys_s": float, "max_rss_kib": int}),
    "error?": Optional(str), "stderr_tail?": str, "sample_counts?": Map(AtLeast(1)),
    "contention?": Optional({"cpu_s": float, "run_delay_s": Optional(float), "steal_s": float,
                             "nivcsw": AtLeast(0), "load": float, "cpus": AtLeast(1),
                             "trial_cpus?": AtLeast(0)}),
    "retaken_because?": Optional(str),
}
def _shape_of(hint: Any) -> Any:
    """The shape of a RunSettings field's type: float, bool, int, str, X | None and
    dict[str, X] (what its fields are made of)."""
    args = typing.get_args(hint)
    if type(None) in args:
        (inner,) = [a for a in args if a is not type(None)]
        return Optional(_shape_of(inner))
    if typing.get_origin(hint) is dict:
        return Map(_shape_of(args[1]))
    return hint


def _settings_shape() -> dict[str, Any]:
    """Every RunSettings field, optional (older records lack the newer ones), each of the
    shape its type gives: a new setting is checked as soon as RunSettings has it."""
    hints = typing.get_type_hints(RunSettings)
    shape = {f"{f.name}?": _shape_of(hints[f.name]) for f in dataclasses.fields(RunSettings)}
    return {**shape, "max_trials?": Optional(AtLeast(1))}  # a count, not any integer


RUN = {
    "schema_version": AtLeast(1), "run_id": str,
    "status": ("running", "complete", "interrupted", "failed"),
    "started_at": str, "finished_at": Optional(str), "argv": [str], "profile": str,
    "seed": AtLeast(0), "host": dict, "warnings": [str], "benchmarks": Map(BENCHMARK_INFO),
    "cases": [CASE], "skips": [{"case": CASE, "reason": str}], "trials": [TRIAL],
    "settings?": _settings_shape(),
    "stop_reason?": Optional(str), "capped?": [CASE], "timings?": dict,
    "retaken?": [TRIAL],
}


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    if not (_is_int(v) or isinstance(v, float)):
        return False
    try:
        return math.isfinite(v)
    except OverflowError:  # an integer beyond any float (10**400): no measurement is that
        return False


def check(value: Any, shape: Any, where: str = "") -> None:
    """Raise ValueError naming the first place value does not have shape."""
    def fail(what: str) -> None:
        raise ValueError(f"{where or 'top level'}: {what}")

    def inner(key: str) -> str:
        return f"{where}.{key}" if where else key

    if shape is ANY:
        return
    if shape is SCALAR:
        if not (isinstance(value, str) or _is_number(value)):
            fail(f"{value!r} is not a text or a finite number")
    elif shape is str:
        if not isinstance(value, str):
            fail(f"{value!r} is not a text")
    elif shape is bool:
        if not isinstance(value, bool):
            fail(f"{value!r} is not true or false")
    elif shape is int:
        # Counts are averaged as floats later: one beyond any float is no measurement either.
        if not (_is_int(value) and _is_number(value)):
            fail(f"{value!r} is not an integer a float can hold")
    elif shape is float:
        if not _is_number(value):
            fail(f"{value!r} is not a finite number")
    elif shape is dict:
        if not isinstance(value, dict):
            fail("is not an object")
    elif isinstance(shape, AtLeast):
        if not _is_int(value) or value < shape.minimum:
            fail(f"{value!r} is not an integer >= {shape.minimum}")
    elif isinstance(shape, tuple):
        if value not in shape:
            fail(f"{value!r} is not one of {', '.join(shape)}")
    elif isinstance(shape, Optional):
        if value is not None:
            check(value, shape.shape, where)
    elif isinstance(shape, list | NonEmpty):
        item = shape[0] if isinstance(shape, list) else shape.item
        if not isinstance(value, list):
            fail("is not a list")
        if isinstance(shape, NonEmpty) and not value:
            fail("is empty")
        for i, v in enumerate(value):
            check(v, item, f"{where}[{i}]")
    elif isinstance(shape, Map):
        if not isinstance(value, dict):
            fail("is not an object")
        for k, v in value.items():
            check(v, shape.values, inner(str(k)))
    elif isinstance(shape, dict):
        if not isinstance(value, dict):
            fail("is not an object")
        for key, sub in shape.items():
            name = key.rstrip("?")
            if name in value:
                check(value[name], sub, inner(name))
            elif not key.endswith("?"):
                fail(f"'{name}' is missing")
    else:  # pragma: no cover - a shape this module does not know is a programming error
        raise TypeError(f"unknown shape {shape!r}")


def check_run(doc: Any) -> None:
    """The whole record: its shape, then what must agree across it."""
    check(doc, RUN)
    infos = doc["benchmarks"]
    for name, info in infos.items():
        variants = [v["name"] for v in info["variants"]]
        if info["baseline"] not in variants:
            raise ValueError(f"benchmarks.{name}.baseline {info['baseline']!r} is "
                             "not one of its variants")
    cases = [*doc["cases"], *(s["case"] for s in doc["skips"]), *(t["case"] for t in doc["trials"]),
             *doc.get("capped", [])]
    for case in cases:
        if case["benchmark"] not in infos:
            raise ValueError(f"a case of {case['benchmark']!r}, a benchmark the "
                             "record does not describe")
