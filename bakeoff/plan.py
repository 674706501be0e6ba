"""From what the user asked (benchmarks, profile, --variant, --param) to the list of cases.

Every problem with the request is found here, before anything runs: an unknown variant or
param, a malformed value, a case too large for this machine. Cases this machine cannot run
become Skips with the reason, so the report can say why a line is missing.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from bakeoff.errors import UsageError
from bakeoff.host import Capability
from bakeoff.model import Benchmark, Case, ParamValue, Profile, RunContext, RunRecord, Skip

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
        profile = replace(profile, trials=trials)
    if samples is not None:
        profile = replace(profile, samples=samples)
    wanted = [bench.variant(v) for v in variants] if variants else list(bench.variants)
    # The baseline always runs: without it there is no ratio, and ratios are the answer.
    if bench.baseline not in wanted:
        wanted.insert(0, bench.baseline)
    values = _param_values(bench, profile, overrides)
    bench_skip = _missing_capability(bench.requires, caps, bench.name)
    cases: list[Case] = []
    skips: list[Skip] = []
    for variant in wanted:
        for combo in itertools.product(*values.values()):
            case = Case(bench.name, variant.name, tuple(zip(values.keys(), combo, strict=True)))
            reason = bench_skip or _missing_capability(variant.requires, caps, variant.name)
            if reason is None and bench.skip_case is not None:
                reason = bench.skip_case(case, ctx)
            if reason is not None:
                skips.append(Skip(case, reason))
                continue
            if bench.check_case is not None:
                problem = bench.check_case(case, ctx)
                if problem:
                    raise UsageError(problem)
            cases.append(case)
    return BenchmarkPlan(bench, profile, cases, skips)


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
    if profile_name not in PROFILES:
        raise UsageError(f"--profile '{profile_name}' is unknown; use one of {', '.join(PROFILES)}")
    if trials is not None and trials < 1:
        raise UsageError("--trials must be at least 1")
    if samples is not None and samples < 1:
        raise UsageError("--samples must be at least 1")
    overrides = parse_param_overrides(raw_params)
    for name in overrides:
        if not any(p.name == name for b in benches for p in b.params):
            known = sorted({p.name for b in benches for p in b.params})
            raise UsageError(f"--param {name}: no selected benchmark has that param "
                             f"(known: {', '.join(known)})")
    for v in variants:
        if not any(x.name == v for b in benches for x in b.variants):
            known = sorted({x.name for b in benches for x in b.variants})
            raise UsageError(f"--variant {v}: no selected benchmark has that variant "
                             f"(known: {', '.join(known)})")
    plans = []
    for bench in benches:
        mine = [v for v in variants if any(x.name == v for x in bench.variants)]
        if variants and not mine:
            continue  # the variants asked for belong to other benchmarks
        own = {k: v for k, v in overrides.items() if any(p.name == k for p in bench.params)}
        plans.append(plan_benchmark(bench, profile_name, mine, own, trials, samples, caps, ctx))
    return plans


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
        profile = Profile(name=run.profile, params={}, **info.profile)
        plans.append(BenchmarkPlan(
            benchmark=known[name], profile=profile,
            cases=[c for c in run.cases if c.benchmark == name],
            skips=[s for s in run.skips if s.case.benchmark == name]))
    return plans
