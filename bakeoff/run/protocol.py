"""The program protocol: what a measured program prints on stdout, one JSON object per line.

    {"type":"meta","timer":"clock_gettime(CLOCK_MONOTONIC_RAW)","timer_overhead_ns":18.5}
    {"type":"sample","metric":"ns_per_op","value":7084.0}
    {"type":"counter","name":"events_lost","value":0}

Anything else on stdout is a protocol error: the trial fails with the offending line quoted,
because a program that prints garbage cannot be trusted to have measured what it claims.
"""

from __future__ import annotations

import json
import math
import re
from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field
from os import PathLike
from typing import Any

from bakeoff.declare.model import Benchmark, Case, ParamValue, Profile, RunContext, TrialPlan


class ProtocolError(ValueError):
    pass


def trial_argv(program: str | PathLike[str], case: Case, profile: Profile,
               params: Iterable[tuple[str, ParamValue]] | None = None) -> list[str]:
    """The protocol's argv for one trial: --variant, one --param NAME=VALUE per axis,
    --samples, --warmup, --counted-samples (what bench_parse_args and bakeoff.room.program
    accept; the last only when the profile asks for counted samples). A room that
    passes a param in another form (a count resolved from 'auto', a cgroup path for
    'child') gives `params` in its place; one that passes more appends to the result."""
    argv = [str(program), "--variant", case.variant]
    for name, value in case.params if params is None else params:
        argv += ["--param", f"{name}={value}"]
    argv += ["--samples", str(profile.samples), "--warmup", str(profile.warmup_samples)]
    if profile.profile_repeat > 1:  # only under `bakeoff profile` (Benchmark.profile_repeat)
        argv += ["--profile-repeat", str(profile.profile_repeat)]
    return [*argv, "--counted-samples", str(profile.counted_samples)] \
        if profile.counted_samples else argv


def plan_trial(bench: Benchmark, case: Case, profile: Profile, ctx: RunContext,
               state: Any) -> TrialPlan:
    """One trial as its room prepares it (Benchmark.prepare_trial, given its session's
    state), else the protocol's argv for the room's program: what a run measures and what
    `bakeoff profile` samples alike."""
    if bench.prepare_trial is not None:
        return bench.prepare_trial(case, profile, ctx, state)
    return TrialPlan(trial_argv(ctx.build_dir / bench.program, case, profile))


@dataclass
class ProgramOutput:
    meta: dict[str, Any] = field(default_factory=dict)
    # Machine doubles, 8 bytes a sample: a trial may print millions (a Python list of
    # floats would take 32 bytes each).
    samples: dict[str, array[float]] = field(default_factory=dict)
    counters: dict[str, float] = field(default_factory=dict)


# The sample line exactly as benchmarks/common/bench.c prints it. Matching it without
# json.loads makes parsing several times faster for programs that print millions of samples;
# anything else (spacing, key order, escapes) takes the general path below.
_PLAIN_SAMPLE = re.compile(r'\{"type":"sample","metric":"([A-Za-z0-9_.]+)",'
                           r'"value":(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)\}')


def _number(obj: dict[str, Any], key: str, lineno: int) -> float:
    value = obj.get(key)
    # bool is an int subclass in Python; true/false is not a measurement.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ProtocolError(f"line {lineno}: '{key}' must be a number, got {value!r}")
    if not math.isfinite(value):
        raise ProtocolError(f"line {lineno}: '{key}' is not finite")
    return float(value)


def _name(obj: dict[str, Any], key: str, lineno: int) -> str:
    value = obj.get(key)
    if not isinstance(value, str) or not value:
        raise ProtocolError(f"line {lineno}: '{key}' must be a non-empty string")
    return value


def parse_line(line: str, lineno: int, out: ProgramOutput) -> None:
    """Fold one stdout line into out; raises ProtocolError naming the line."""
    text = line.strip()
    if not text:
        return
    plain = _PLAIN_SAMPLE.fullmatch(text)
    if plain:
        value = float(plain.group(2))  # JSON's number grammar is a subset of float()'s
        if math.isfinite(value):  # 1e999 is not: the general path names it
            _samples_of(out, plain.group(1)).append(value)
            return
    try:
        # parse_constant rejects NaN/Infinity, which Python's json accepts by default.
        obj = json.loads(text, parse_constant=_reject_constant)
    except (json.JSONDecodeError, ValueError) as exc:
        raise ProtocolError(f"line {lineno}: not a JSON object: {text[:120]!r} ({exc})") from None
    if not isinstance(obj, dict):
        raise ProtocolError(f"line {lineno}: not a JSON object: {text[:120]!r}")
    kind = obj.get("type")
    if kind == "sample":
        metric = _name(obj, "metric", lineno)
        _samples_of(out, metric).append(_number(obj, "value", lineno))
    elif kind == "counter":
        name = _name(obj, "name", lineno)
        out.counters[name] = _number(obj, "value", lineno)
    elif kind == "meta":
        out.meta.update({k: v for k, v in obj.items() if k != "type"})
    else:
        raise ProtocolError(f"line {lineno}: unknown type {kind!r} (expected meta, sample, counter)")


def _samples_of(out: ProgramOutput, metric: str) -> array[float]:
    values = out.samples.get(metric)
    if values is None:
        values = out.samples[metric] = array("d")
    return values


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a measurement")


def parse_output(text: str) -> ProgramOutput:
    out = ProgramOutput()
    for lineno, line in enumerate(text.splitlines(), start=1):
        parse_line(line, lineno, out)
    return out
