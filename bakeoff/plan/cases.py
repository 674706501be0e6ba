"""From what the user asked (benchmarks, profile, --variant, --param) to the list of cases.

Every problem with the request is found here, before anything runs: an unknown variant or
param, a malformed value, a case too large for this machine. Cases this machine cannot run
become Skips with the reason, so the report can say why a line is missing.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from bakeoff.core.errors import UsageError
from bakeoff.declare.model import Benchmark, Case, ParamValue, Profile, RunContext, RunRecord, Skip
from bakeoff.machine.host import Capability

PROFILES = ("quick", "default", "full")


@dataclass(frozen=True)
class BenchmarkPlan:
    benchmark: Benchmark
    profile: Profile  # with --trials/--samples applied
    cases: list[Case]
    skips: list[Skip]


def parse_param_overrides(raw: Sequence[str]) -> dict[str, list[str]]:
    """['size=4KiB,1MiB'] -> {'size': ['4KiB', '1MiB']}; a name given twice is an error."""
    out: dict[str, list[str]] = {}
    for item in raw:
        name, sep, values = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise UsageError(f"--param '{item}': expected NAME=V1,V2,... (e.g. --param size=4KiB,1MiB)")
        if name in out:
            raise UsageError(f"--param {name} is given twice; list all values once: "
                             f"--param {name}=V1,V2")
        parts = [v.strip() for v in values.split(",")]
        if not parts or any(not v for v in parts):
            raise UsageError(f"--param '{item}': empty value; give e.g. {name}=V1,V2")
        out[name] = parts
    return out


def _param_values(
    bench: Benchmark, profile: Profile, overrides: Mapping[str, list[str]]
) -> dict[str, tuple[ParamValue, ...]]:
    values: dict[str, tuple[ParamValue, ...]] = {}
    for p in bench.params:
        if p.name in overrides:
            parsed = [p.parse(text) for text in overrides[p.name]]
            if len(set(parsed)) != len(parsed):
                raise UsageError(f"--param {p.name}: a value is listed twice; list each once")
            values[p.name] = tuple(sorted(parsed) if p.numeric else parsed)
        else:
            values[p.name] = tuple(profile.params[p.name])
    return values


def _missing_capability(
    needs: Sequence[str], caps: Mapping[str, Capability], what: str
) -> str | None:
    for name in needs:
        cap = caps.get(name)
        if cap is None or not cap.available:
            detail = cap.detail if cap else "not probed"
            fix = f"; fix: {cap.fix}" if cap and cap.fix else ""
            return f"{what} needs {name} ({detail}){fix}"
    return None


def plan_benchmark(
    bench: Benchmark,
    profile_name: str,
    variants: Sequence[str],
    overrides: Mapping[str, list[str]],
    trials: int | None,
    samples: int | None,
    caps: Mapping[str, Capability],
    ctx: RunContext,
) -> BenchmarkPlan:
    profile = bench.profiles[profile_name]
    if trials is not None:
        # --trials asks for a count: every case gets it (no sequential allocation).
        profile = replace(profile, trials=trials, min_trials=None, answer_trials=None,
                          other_trials=None)
    if samples is not None:
        profile = replace(profile, samples=samples)
    wanted = [bench.variant(v) for v in variants] if variants else list(bench.variants)
    # The baseline always runs: without it there is no ratio, and ratios are the answer.
    if bench.baseline not in wanted:
        wanted.insert(0, bench.baseline)
    values = _param_values(bench, profile, overrides)
    # Every value typed: the user asked for exactly these cases of the variants they named.
    all_typed = all(p.name in overrides for p in bench.params)
    bench_skip = _missing_capability(bench.requires, caps, bench.name)
    cases: list[Case] = []
    skips: list[Skip] = []
    for variant in wanted:
        for combo in itertools.product(*values.values()):
            case = Case(bench.name, variant.name, tuple(zip(values.keys(), combo, strict=True)))
            reason = bench_skip or _missing_capability(variant.requires, caps, variant.name)
            if reason is None and bench.skip_case is not None:
                reason = bench.skip_case(case, ctx)
                if reason is not None and all_typed and variant.name in variants:
                    raise UsageError(_explicit_case_refused(case, bench, reason))
            if reason is not None:
                skips.append(Skip(case, reason))
                continue
            if bench.check_case is not None:
                problem = bench.check_case(case, ctx)
                if problem:
                    raise UsageError(problem)
            cases.append(case)
    return BenchmarkPlan(bench, profile, cases, skips)


def _explicit_case_refused(case: Case, bench: Benchmark, reason: str) -> str:
    """A case the user spelled out (its variant and every value) that cannot apply is a
    request to fix, not a skip to find in the report: the run would measure something else."""
    typed = " ".join(f"--param {k}={bench.param(k).to_arg(v)}" for k, v in case.params)
    return (f"--variant {case.variant} {typed}".strip() + f": {reason}; ask for values that "
            "apply (see bakeoff list), or leave out --variant to run those that do")


# Beyond these a run would never end (--trials) or the programs refuse the count (--samples).
MAX_TRIALS = 10_000
MAX_SAMPLES = 100_000_000


def _check_count(flag: str, value: int | None, example: int, most: int) -> None:
    if value is None:
        return
    if value < 1:
        raise UsageError(f"{flag} must be at least 1, e.g. {flag} {example}")
    if value > most:
        raise UsageError(f"{flag} {value} is too many; give at most {most:,}, e.g. {flag} {example}")


Request = list[tuple[Benchmark, list[str], dict[str, list[str]]]]


def check_request(
    benches: Sequence[Benchmark],
    profile_name: str,
    variants: Sequence[str],
    raw_params: Sequence[str],
    trials: int | None,
    samples: int | None,
) -> Request:
    """Every check that needs no host facts: names, counts, the syntax and the value of each
    --param. Per benchmark that runs: the variants asked for and its own --param values."""
    if profile_name not in PROFILES:
        raise UsageError(f"--profile '{profile_name}' is unknown; use one of {', '.join(PROFILES)}")
    _check_count("--trials", trials, 10, MAX_TRIALS)
    _check_count("--samples", samples, 10, MAX_SAMPLES)
    overrides = parse_param_overrides(raw_params)
    for name in overrides:
        if not any(p.name == name for b in benches for p in b.params):
            known = sorted({p.name for b in benches for p in b.params})
            raise UsageError(f"--param {name}: no selected benchmark has that param "
                             f"(known: {', '.join(known)}); see bakeoff list")
    for v in variants:
        if not any(x.name == v for b in benches for x in b.variants):
            known = sorted({x.name for b in benches for x in b.variants})
            raise UsageError(f"--variant {v}: no selected benchmark has that variant "
                             f"(known: {', '.join(known)}); see bakeoff list")
    request: Request = []
    for bench in benches:
        mine = [v for v in variants if any(x.name == v for x in bench.variants)]
        if variants and not mine:
            continue  # the variants asked for belong to other benchmarks
        own = {k: v for k, v in overrides.items() if any(p.name == k for p in bench.params)}
        _param_values(bench, bench.profiles[profile_name], own)  # each value parsed and checked
        request.append((bench, mine, own))
    return request


def plan_run(
    benches: Sequence[Benchmark],
    profile_name: str,
    variants: Sequence[str],
    raw_params: Sequence[str],
    trials: int | None,
    samples: int | None,
    caps: Mapping[str, Capability],
    ctx: RunContext,
) -> list[BenchmarkPlan]:
    request = check_request(benches, profile_name, variants, raw_params, trials, samples)
    return [plan_benchmark(bench, profile_name, mine, own, trials, samples, caps, ctx)
            for bench, mine, own in request]


def plans_from_record(run: RunRecord, known: Mapping[str, Benchmark]) -> list[BenchmarkPlan]:
    """The plans of a recorded run, for --resume: its cases, skips and profile as run."""
    plans = []
    for name, info in run.benchmarks.items():
        if name not in known:
            raise UsageError(f"the run measured '{name}', which this bakeoff does not have; "
                             "resume it with the bakeoff that started it")
        if not info.profile:
            raise UsageError(f"the run has no recorded profile for '{name}' (written by an "
                             "older bakeoff); start a new run instead")
        profile = _recorded_profile(run.profile, name, info.profile)
        for case in run.cases:
            if case.benchmark == name:
                _check_recorded_case(known[name], case)
        plans.append(BenchmarkPlan(
            benchmark=known[name], profile=profile,
            cases=[c for c in run.cases if c.benchmark == name],
            skips=[s for s in run.skips if s.case.benchmark == name]))
    return plans


_PROFILE_FIELDS = {"trials": 1, "samples": 1, "warmup_samples": 0, "warmup_trials": 0,
                   "timeout_s": 0, "min_trials": 1, "counted_samples": 0,
                   "counted_trials": 1, "answer_trials": 1,
                   "other_trials": 1}  # field -> least value


def _recorded_profile(profile_name: str, bench: str, recorded: Mapping[str, object]) -> Profile:
    """The profile a run recorded, checked: --resume goes on with exactly these counts."""
    for key, value in recorded.items():
        least = _PROFILE_FIELDS.get(key)
        kind = float if key == "timeout_s" else int
        if (least is None or isinstance(value, bool) or not isinstance(value, int | kind)
                or not value >= least):  # `not >=` also refuses NaN
            raise UsageError(f"the run's recorded profile of '{bench}' has a bad {key!r} "
                             f"({value!r}); results.json was edited or damaged: start a new run")
    missing = {"trials", "samples"} - set(recorded)
    if missing:
        raise UsageError(f"the run's recorded profile of '{bench}' has no {sorted(missing)[0]}; "
                         "results.json was edited or damaged: start a new run")
    # A run records counted_samples only when it took some (runs before it took none), and
    # counted_trials only when not every trial took them.
    counts: dict[str, Any] = {"counted_samples": 0, "counted_trials": None, **recorded}
    return Profile(name=profile_name, params={}, **counts)


def _check_recorded_case(bench: Benchmark, case: Case) -> None:
    """A case this bakeoff's benchmark cannot run as recorded (a variant or param renamed
    since) would fail every trial; say so before anything runs."""
    variants = {v.name for v in bench.variants}
    params = {p.name for p in bench.params}
    if case.variant not in variants or {k for k, _ in case.params} != params:
        raise UsageError(f"the run's case {case.key} is not one this bakeoff's {bench.name} "
                         "has; resume it with the bakeoff that started it, or start a new run")
