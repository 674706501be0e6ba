"""The words of docs/ARCHITECTURE.md as dataclasses: what a benchmark declares and what a run records.

Two halves:
- declared by a benchmark's spec.py: Benchmark, Variant, Param, Metric, Profile;
- recorded by a run and stored in results.json: Case, Trial, Rusage, Skip, RunRecord.

Everything a report needs is in the recorded half (BenchmarkInfo copies the declared facts),
so `bakeoff report DIR` works from results.json alone, without the spec that produced it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from bakeoff.core import units
from bakeoff.core.errors import UsageError

# Re-exported: rooms' specs import these from here (bakeoff/core/units.py owns them).
from bakeoff.core.units import format_bytes as format_bytes
from bakeoff.core.units import parse_bytes as parse_bytes

if TYPE_CHECKING:
    from bakeoff.machine.host import HostFacts

ParamValue = int | float | str
ParamKind = Literal["bytes", "int", "float", "str"]

_INT_RE = re.compile(r"^\s*[-+]?[0-9]+\s*$")


@dataclass(frozen=True)
class Param:
    """An axis a benchmark sweeps. Values are passed to the program as --param NAME=VALUE."""

    name: str
    kind: ParamKind
    description: str
    unit: str = ""
    # Returns None when the value is acceptable, else one sentence naming the fix. Checked
    # after choices, min and max.
    check: Callable[[ParamValue], str | None] | None = None
    # The only values allowed (as parsed: strings for kind "str"); empty: any.
    choices: tuple[ParamValue, ...] = ()
    # The least and greatest value allowed of a numeric param (inclusive); None: no bound.
    min: float | None = None
    max: float | None = None

    def __post_init__(self) -> None:
        if (self.min is not None or self.max is not None) and self.kind == "str":
            raise ValueError(f"param {self.name}: min and max need a numeric kind, not str")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"param {self.name}: min {self.min} is above max {self.max}")

    def parse(self, text: str) -> ParamValue:
        """Parse one value as a user types it; raises UsageError naming the fix."""
        try:
            value: ParamValue
            if self.kind == "bytes":
                value = parse_bytes(text)
            elif self.kind == "int":
                if not _INT_RE.match(text) or len(text.strip()) > units.MAX_DIGITS:
                    raise ValueError(f"{units.shown(text)} is not a whole number; give e.g. 100")
                value = int(text.strip())
            elif self.kind == "float":
                try:
                    value = float(text.strip())
                except ValueError:
                    raise ValueError(f"{units.shown(text)} is not a number; give e.g. 0.5") from None
                if not math.isfinite(value):
                    raise ValueError(f"{units.shown(text)} is not a finite number; give e.g. 0.5")
            else:
                value = text.strip()
                if not value:
                    raise ValueError("empty value")
        except ValueError as exc:
            raise UsageError(f"--param {self.name}: {exc}") from None
        self.validate(value, as_given=text.strip())
        return value

    def validate(self, value: ParamValue, as_given: str | None = None) -> None:
        """Refuses a bad value in one line naming it as the user wrote it (`2MiB`, not the
        bytes it parsed to), when that is known."""
        problem = self.bounds_problem(value)
        if problem is None and self.check is not None:
            problem = self.check(value)
        if problem:
            arg = as_given or self.to_arg(value)
            arg = arg if len(arg) <= 40 else arg[:37] + "..."
            raise UsageError(f"--param {self.name}={arg}: {problem}")

    def bounds_problem(self, value: ParamValue) -> str | None:
        """What is wrong with value against choices, min and max (one phrase naming what
        is allowed), or None."""
        if self.choices and value not in self.choices:
            shown = (format_bytes(float(c)) if self.kind == "bytes" else str(c)
                     for c in self.choices)
            return f"use one of {', '.join(shown)}"
        if isinstance(value, str) or (self.min is None and self.max is None):
            return None
        low = self.min is None or value >= self.min
        high = self.max is None or value <= self.max
        if low and high:
            return None
        if self.min is not None and self.max is not None:
            return (f"must be from {self.bound(self.min, unit=self.kind == 'bytes')} to "
                    f"{self.bound(self.max)}")
        bytes_unit = self.kind == "bytes"
        if self.min is not None:
            return f"must be at least {self.bound(self.min, unit=bytes_unit)}"
        assert self.max is not None
        return f"must be at most {self.bound(self.max, unit=bytes_unit)}"

    def bound(self, value: float, unit: bool = True) -> str:
        """A bound as a person reads it: bytes in B/KiB/..., whole numbers without '.0',
        the unit after it unless `unit` is False ("from 1 to 64 entries")."""
        if self.kind == "bytes":
            return format_bytes(value)
        shown = int(value) if float(value).is_integer() else value
        return f"{shown} {self.unit}".strip() if unit else str(shown)

    def to_arg(self, value: ParamValue) -> str:
        """How the program receives the value on its command line."""
        return str(value)

    def label(self, value: ParamValue) -> str:
        """How a person reads the value in a report."""
        if self.kind == "bytes":
            return format_bytes(float(value))
        return f"{value} {self.unit}".strip()

    @property
    def numeric(self) -> bool:
        return self.kind != "str"


@dataclass(frozen=True)
class Variant:
    name: str
    description: str
    baseline: bool = False
    # Capability names (see bakeoff.machine.host.PROBES) this variant needs to run at all.
    requires: tuple[str, ...] = ()
    # '#rrggbb' the report uses for this variant in every chart (a replaced tool's colours,
    # so its users recognise them); None picks from a colour-blind-safe palette.
    color: str | None = None
    # A check of the method rather than a contender (e.g. an A/A pair that should measure
    # 0): tables and charts show it, findings never name it the winner.
    control: bool = False
    # Kept to explain another variant (e.g. an ordering that shows why the real one costs
    # what it does), not a choice a user would make: tables and charts show it, but it never
    # answers a Question nor headlines a finding.
    diagnostic: bool = False


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str
    description: str
    lower_is_better: bool = True
    # The report also shows this metric as % overhead over the baseline, (ratio - 1) x 100,
    # with its CI: what a tracer or a sampler adds to the work it watches.
    overhead_pct: bool = False
    # Closer to zero is better (a signed estimation error): medians, CIs, quantiles, ratios,
    # verdicts, charts and `bakeoff compare` use |value|, so -50% never ranks above +1%;
    # the report adds the bias (mean signed value) and the RMS, each with its CI.
    signed: bool = False
    # What was taken off each value before it was recorded, the remainder floored at 0 (the
    # shell's start-up, for `bakeoff cmd --shell`). A case whose CI reaches 0 is below that
    # start-up's resolution: the report says so in place of its figure, and no ratio is
    # formed to or from it (a ratio of a figure that may be 0 has no finite CI).
    subtracted: str | None = None
    # A net difference: each value is the variant's figure minus a reference's taken beside
    # it (what a scheme adds over doing nothing), so it may be 0 or below. Its CI is never on
    # log scale (that needs every figure positive, and from few trials spans decades); a case
    # whose CI includes 0 is said as "not resolved from 0" with its interval, never as a
    # cost; and no ratio is formed to or from a case whose CI includes 0.
    net: bool = False

    def __post_init__(self) -> None:
        if self.net and self.signed:
            raise ValueError(f"metric {self.name}: a net difference is compared as it is, "
                             "not by |value|; drop signed=True or net=True")
        if self.signed and not self.lower_is_better:
            raise ValueError(f"metric {self.name}: a signed metric is better closer to zero; "
                             "drop lower_is_better=False")


@dataclass(frozen=True)
class Fit:
    """A straight line fitted along a numeric param, per variant, with CIs of a and b.

    What is fitted is the variant's difference to the baseline (median minus baseline median)
    of `metric`: e.g. tracing overhead = a + b * duration, which says whether a tracer costs a
    constant per call (b ~ 0) or a share of the work (a ~ 0).
    """

    metric: str
    param: str
    description: str


QuestionForm = Literal["ratio", "crossover", "overhead", "added", "error"]
QUESTION_FORMS: tuple[QuestionForm, ...] = ("ratio", "crossover", "overhead", "added", "error")
# An `at` value that stands for the largest (smallest) value of that param the run measured,
# so a question reads "at the largest map" whatever the profile's grid.
LARGEST, SMALLEST = "largest", "smallest"


@dataclass(frozen=True)
class Question:
    """A question the benchmark exists to answer (one to three per room); the findings
    answer these first, one sentence each, before any other contrast.

    ask: the question as its user would put it, one line.
    form: the shape of the answer —
      "ratio":     each of `variants` against `against`: the speed-up (ratio of `metric`) with
                   its CI, at each point of `at`;
      "crossover": along the numeric param `along`, where each of `variants` starts (or
                   stops) beating `against` (their ratio crosses 1);
      "overhead":  along `along`, what each of `variants` adds per operation over `against`
                   (the difference paired by round at the smallest value of `along`, and
                   at each other) and the value of `along` from which its overhead
                   falls under each of the benchmark's crossover_ratios (5% and 1%);
      "added":     what each of `variants` adds over `against` (difference of medians of
                   `metric`) at each point of `at`;
      "error":     the RMS of each metric in `metrics` (a signed estimate error) at each point
                   of `at`, for the variants named (all non-baseline ones when empty).
    against: the reference variant. variants: those compared with it (empty: every variant
    that is neither the baseline, a control nor diagnostic).
    param: when set, `against` and `variants` are values of this param, not variants (e.g.
    the BPF iterator against text content), compared within each variant of `within`.
    at: param -> the values where the answer is read (LARGEST/SMALLEST allowed); a param not
    named: every value the run measured.
    target_ci: the CI half-width (as a fraction of the answer) the default profile spends
    trials to reach on the cases this question reads.
    claim: a claim the answer tests, named beside it as written where it was made
    ("seed: hash 3–62× faster"); the answer then reads "<claim>; here: <answer>"
    (report/answers/claim.py).
    checked: what the question's independent check (a program written apart from the room's
    code, tests/indep_checks.py) leaves unsettled about the answer, in words and without
    figures (those change from run to run; the dated note it names has them); the answer
    then ends "Independent check: <checked>" (report/answers/checked.py). Empty where the
    check agrees.
    """

    ask: str
    form: QuestionForm
    against: str = ""
    variants: tuple[str, ...] = ()
    metric: str | None = None  # None: the benchmark's primary metric
    metrics: tuple[str, ...] = ()  # form "error": the signed metrics whose RMS answers it
    at: Mapping[str, tuple[ParamValue, ...]] = field(default_factory=dict)
    along: str | None = None
    param: str | None = None
    within: tuple[str, ...] = ()  # with `param`: the variants the values are compared in
    target_ci: float = 0.05
    claim: str = ""
    checked: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"ask": self.ask, "form": self.form, "against": self.against,
                "variants": list(self.variants), "metric": self.metric,
                "metrics": list(self.metrics),
                "at": {k: list(v) for k, v in self.at.items()}, "along": self.along,
                "param": self.param, "within": list(self.within),
                "target_ci": self.target_ci, "claim": self.claim, "checked": self.checked}


@dataclass(frozen=True)
class Profile:
    """A named grid: the param values swept and how many trials and samples each case gets.

    trials: the most a case gets. min_trials: with a value below trials, sequential
    allocation (bakeoff/run/allocation.py): every case gets min_trials, then only the cases whose
    answer is not settled get more, up to trials. None: every case gets trials.
    trial_s: the mean wall time of one trial of this profile where it was tuned (the
    comment beside it names the run); only the estimate of the time left reads it, for a
    benchmark none of whose trials has run yet, scaled by how fast this machine ran the
    benchmarks timed so far.
    trials_growth: where the profile was tuned, the trials a run kept over those its plan
    counted before any ran (each case's first trials; the rules add the rest where the
    spread asks); only the estimate of the time left reads it, for a benchmark not yet
    started that no earlier run of this profile on this machine measured.
    trial_s_busy: as trial_s, tuned beside two CPU hogs on the tuning machine's two CPUs
    (`stress-ng --cpu 2`): rooms slow unalike beside other work (a tight user-space loop
    more than a dump of kernel maps), so a run whose trials wait for a CPU prices the rooms
    not started between the two (run/progress.py, Estimate.load).
    counting_s: where the profile was tuned, what counting added to a counted trial (one of
    a case's first counted_trials) before its last measured sample, beyond a plain trial of
    the same case: the seconds its counted samples' tail does not show (run/progress.py,
    Estimate.counting_beyond_tail). Only the time left reads it, for a benchmark none of
    whose cases has had a plain trial yet.
    counted_samples: samples each trial takes after its measured ones with kernel counters on
    (--counted-samples; benchmarks/common/counters.h): they give the counters per operation
    and, against the measured samples of the same trial, what counting costs. Never part of
    the measured samples.
    answer_trials, other_trials: see the fields.
    counted_trials: how many of a case's trials (its first) take the counted samples; None:
    every trial. Counting has a price beyond the counted samples themselves: each tracepoint
    a program counts costs it ~40 ms at exit here (the kernel waits out an RCU grace period
    to unregister the probe; system calls share one, counters.c), so counting every trial
    made the default run half as long again. Two trials give each counter a CI; kernel
    counts barely vary from trial to trial. A case no question reads (other_trials) takes
    them in its first trial only (runner.UNREAD_COUNTED_TRIALS): its counters once, without
    a CI, for its table row."""

    name: str
    params: Mapping[str, tuple[ParamValue, ...]]
    trials: int
    samples: int
    warmup_samples: int = 1
    warmup_trials: int = 1
    timeout_s: float = 120.0
    min_trials: int | None = None
    trial_s: float | None = None
    trials_growth: float | None = None
    trial_s_busy: float | None = None
    counting_s: float | None = None
    counted_samples: int = 1
    counted_trials: int | None = 2
    # The most trials a case one of the benchmark's questions reads gets (its share of the
    # run): past the other rules, such a case keeps getting trials while its answer's CI
    # half-width is above the question's target_ci (bakeoff/run/allocation.py, "precision").
    # None: the questions' cases get what every case gets.
    answer_trials: int | None = None
    # The trials a case none of the benchmark's questions reads gets (bakeoff/declare/questions.py,
    # answer_cases), in place of trials and min_trials: such a case is still in the tables
    # with its CI, a wider one, but its time goes to the answers. Below 2 it has no CI.
    # Such a case takes counted samples in its first trial only (counted_trials above).
    # None (or a benchmark without questions): what every case gets.
    other_trials: int | None = None
    # Set only by `bakeoff profile` (Benchmark.profile_repeat): the program repeats its timed
    # operation this many times in each timed section (--profile-repeat N). 1 in every run.
    profile_repeat: int = 1


@dataclass(frozen=True)
class LegacyCsv:
    """A CSV a replaced tool wrote, kept so its users' scripts work: one row per sample.

    columns maps a CSV column to 'variant', 'param:<name>' or 'metric:<name>'.
    """

    filename: str
    columns: Mapping[str, str]


@dataclass(frozen=True)
class Case:
    """benchmark x variant x one value per param."""

    benchmark: str
    variant: str
    params: tuple[tuple[str, ParamValue], ...]

    @property
    def key(self) -> str:
        inner = ",".join(f"{k}={v}" for k, v in self.params)
        return f"{self.benchmark}/{self.variant}[{inner}]"

    def param(self, name: str) -> ParamValue:
        return dict(self.params)[name]

    def to_json(self) -> dict[str, Any]:
        return {"benchmark": self.benchmark, "variant": self.variant, "params": dict(self.params)}

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> Case:
        return Case(d["benchmark"], d["variant"], tuple(d["params"].items()))


@dataclass(frozen=True)
class TrialPlan:
    """How to start one trial: the argv and extra environment; or, when `failure` is set,
    a trial that cannot start (a helper it needs did not come up): the runner records it as
    failed with that reason and runs nothing."""

    argv: list[str]
    env: Mapping[str, str] = field(default_factory=dict)
    failure: str | None = None
    # PIDs of processes the room's session holds across trials that do this trial's work
    # (a tracer consuming its events): not in the trial's process tree, so `bakeoff
    # profile` records them beside it (-p) while the trial runs. A run ignores them.
    partners: tuple[int, ...] = ()

    @staticmethod
    def failed(reason: str) -> TrialPlan:
        """A planned trial that fails at once with `reason`; the run goes on."""
        return TrialPlan(argv=[], failure=reason)


@dataclass(frozen=True)
class RunContext:
    """What a spec's hooks may know about the run: where programs are built, scratch space."""

    build_dir: Path
    scratch_dir: Path
    capabilities: Mapping[str, bool]
    host: HostFacts
    # The cases this benchmark will run (set when its trials start; empty while planning),
    # so a session hook can start only what they need.
    cases: tuple[Case, ...] = ()
    # The CPUs claimed for this benchmark's trials (Benchmark.cpus of them), the measured
    # one first: the trial program is pinned to it; partner processes (a daemon, a consumer)
    # belong on the others. Also in the trial's environment as BAKEOFF_TRIAL_CPUS=3,1.
    # Empty when not pinned (one CPU, --no-pin) and while planning.
    trial_cpus: tuple[int, ...] = ()


@dataclass(frozen=True)
class Benchmark:
    """Declared by benchmarks/<room>/spec.py as the module-level BENCHMARK."""

    name: str
    title: str
    summary: str
    variants: tuple[Variant, ...]
    params: tuple[Param, ...]
    metrics: tuple[Metric, ...]
    profiles: Mapping[str, Profile]
    # The program, relative to the build directory; it speaks the program protocol.
    program: str
    # Further programs (relative to the build directory) that speak the protocol for some of
    # the variants, which prepare_trial runs instead of `program` (bpf-map-dump's Go
    # reader). The conformance test checks the usage and bad arguments of these and
    # `program` only: helpers (a loader, a charger) are not run with --help.
    other_programs: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()
    # CPUs one trial needs: 1 for the measured program, plus one per partner process that
    # must not share its CPU (a tracer's consumer, a ping-pong peer). The harness claims them
    # and passes them as RunContext.trial_cpus and BAKEOFF_TRIAL_CPUS (docs/ARCHITECTURE.md).
    cpus: int = 1
    legacy_csv: LegacyCsv | None = None
    # A case this machine cannot run (e.g. THP off) -> reason; the run records it as a skip.
    skip_case: Callable[[Case, RunContext], str | None] | None = None
    # A case the user asked for that cannot work anywhere like this (e.g. too large for
    # memory) -> one sentence naming the fix; the run stops before measuring, exit 2.
    check_case: Callable[[Case, RunContext], str | None] | None = None
    # Run-wide set-up and tear-down (a tracing daemon, a cgroup); entered once per benchmark
    # per run. What it yields is the session's state, handed to every prepare_trial (None
    # when the benchmark has no session).
    session: Callable[[RunContext], AbstractContextManager[Any]] | None = None
    # Removes what runs that died without cleaning up (SIGKILL) left of this room's things
    # (a cgroup, a tracing session or daemon, a probe, a mount), found by the
    # `bakeoff-<pid>-...` names they carry when that PID is gone; never a live run's, so
    # two runs side by side stay safe. One line per thing removed. Called at the start of
    # every run and by `bakeoff doctor --cleanup` (bakeoff/run/cleanup.py, which also stops the
    # dead runs' processes and removes their $TMPDIR/bakeoff-<pid>-* before and after).
    sweep: Callable[[], list[str]] | None = None
    # Prepares one trial, warm-ups included: (case, profile, ctx, session state) -> its
    # argv and environment (start from bakeoff.run.protocol.trial_argv), or TrialPlan.failed.
    # The default is trial_argv for the benchmark's program.
    prepare_trial: Callable[[Case, Profile, RunContext, Any], TrialPlan] | None = None
    # Besides ratio = 1 (where a variant starts to win), the ratios whose crossing along a
    # sweep the report names, e.g. (1.05, 1.01): where an overhead falls under 5% and 1%.
    crossover_ratios: tuple[float, ...] = ()
    fits: tuple[Fit, ...] = ()
    # Counters (one value per trial, e.g. a tracer daemon's peak RSS) the report charts per
    # case as the median over trials, next to the metrics. Others still show in the tables.
    counters: tuple[Metric, ...] = ()
    # The kernel counters that explain this benchmark's differences, most telling first, as
    # its program prints them after "per_op." (e.g. "tlb.tlb_flush", "page_faults_minor"):
    # the findings quote them beside the time (counted samples, Profile.counted_samples).
    why_counters: tuple[str, ...] = ()
    # What this benchmark exists to answer (Question): the findings answer these first.
    questions: tuple[Question, ...] = ()
    # For `bakeoff profile`: per variant, the frames (fnmatch patterns of a function name,
    # e.g. "*sys_mremap", "__memmove_*") that only the timed operation runs. A sample with
    # such a frame in its stack is inside the timed operation; the profile reports their
    # share and warns under half. A variant not named: the share is not known.
    timed_frames: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # For `bakeoff profile`: how many times the program repeats its timed operation in each
    # timed section (--profile-repeat N, bench.h), for a room whose operation is short
    # against its set-up; only for a program that implements the flag. 1: not repeated.
    profile_repeat: int = 1
    # Extra subcommands this room adds to the CLI (`bakeoff NAME ARGS...`): each gets the raw
    # arguments after its name and returns an exit status. Errors it raises as UsageError
    # are printed as one line, exit 2, like the harness's own.
    commands: Mapping[str, Callable[[list[str]], int]] = field(default_factory=dict)
    # A benchmark built at run time (bakeoff cmd, bakeoff/cmd/definition.py) has no spec.py to come
    # back to: what it was built from, copied into results.json so --resume can rebuild it.
    definition: Mapping[str, Any] | None = None
    # A trial that times out ends its case: its other trials are not run (a hung command
    # would cost (trials + 1) x the timeout). For benchmarks whose trials run user commands.
    timeout_ends_case: bool = False

    @property
    def baseline(self) -> Variant:
        return next(v for v in self.variants if v.baseline)

    @property
    def primary_metric(self) -> Metric:
        return self.metrics[0]

    def variant(self, name: str) -> Variant:
        for v in self.variants:
            if v.name == name:
                return v
        known = ", ".join(v.name for v in self.variants)
        raise UsageError(f"benchmark '{self.name}' has no variant '{name}' (known: {known})")

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        known = ", ".join(p.name for p in self.params)
        raise UsageError(f"benchmark '{self.name}' has no param '{name}' (known: {known})")

    def info(self) -> BenchmarkInfo:
        return BenchmarkInfo(
            name=self.name,
            title=self.title,
            summary=self.summary,
            baseline=self.baseline.name,
            variants=[
                {"name": v.name, "description": v.description,
                 **({"color": v.color} if v.color else {}),
                 **({"control": True} if v.control else {}),
                 **({"diagnostic": True} if v.diagnostic else {})}
                for v in self.variants
            ],
            params=[
                {"name": p.name, "kind": p.kind, "unit": p.unit, "description": p.description}
                for p in self.params
            ],
            metrics=[
                {"name": m.name, "unit": m.unit, "description": m.description,
                 "lower_is_better": m.lower_is_better, "overhead_pct": m.overhead_pct,
                 **({"signed": True} if m.signed else {}),
                 **({"subtracted": m.subtracted} if m.subtracted else {}),
                 **({"net": True} if m.net else {})}
                for m in self.metrics
            ],
            crossover_ratios=list(self.crossover_ratios),
            counters=[{"name": c.name, "unit": c.unit, "description": c.description,
                       "lower_is_better": c.lower_is_better} for c in self.counters],
            why_counters=list(self.why_counters),
            questions=[q.to_dict() for q in self.questions],
            fits=[{"metric": f.metric, "param": f.param, "description": f.description}
                  for f in self.fits],
            legacy_csv=(
                {"filename": self.legacy_csv.filename, "columns": dict(self.legacy_csv.columns)}
                if self.legacy_csv else None
            ),
            definition=dict(self.definition) if self.definition is not None else None,
        )


# ---- recorded by a run ------------------------------------------------------------------


@dataclass
class BenchmarkInfo:
    """The declared facts a report needs, copied into results.json."""

    name: str
    title: str
    summary: str
    baseline: str
    variants: list[dict[str, Any]]
    params: list[dict[str, Any]]
    metrics: list[dict[str, Any]]
    legacy_csv: dict[str, Any] | None = None
    crossover_ratios: list[float] = field(default_factory=list)
    fits: list[dict[str, Any]] = field(default_factory=list)
    # The profile as run (after --trials/--samples): trials, samples, warmup_samples,
    # warmup_trials, timeout_s. --resume reads it.
    profile: dict[str, Any] = field(default_factory=dict)
    counters: list[dict[str, Any]] = field(default_factory=list)
    # Benchmark.why_counters: the per-operation kernel counters its findings quote.
    why_counters: list[str] = field(default_factory=list)
    # Benchmark.questions as Question.to_dict() gives them: what the findings answer first.
    questions: list[dict[str, Any]] = field(default_factory=list)
    # Set for a benchmark built at run time (Benchmark.definition): what rebuilds it.
    definition: dict[str, Any] | None = None

    def metric(self, name: str) -> dict[str, Any]:
        return next(m for m in self.metrics if m["name"] == name)

    def is_control(self, variant: str) -> bool:
        """A check of the method, never ranked as a winner (Variant.control)."""
        return any(v["name"] == variant and v.get("control") for v in self.variants)

    def is_diagnostic(self, variant: str) -> bool:
        """Kept to explain another variant: never answers a question (Variant.diagnostic)."""
        return any(v["name"] == variant and v.get("diagnostic") for v in self.variants)

    def subtracted(self, metric: str) -> str | None:
        """What was taken off the metric's values, floored at 0 (Metric.subtracted)."""
        found = self.metric(metric).get("subtracted")
        return str(found) if found else None

    def is_net(self, metric: str) -> bool:
        """A difference to a reference measured beside it, which may be 0 or below
        (Metric.net)."""
        return bool(self.metric(metric).get("net", False))

    def is_signed(self, metric: str) -> bool:
        """Closer to zero is better: compared and ranked by |value| (Metric.signed)."""
        return bool(self.metric(metric).get("signed", False))

    @property
    def primary_metric(self) -> str:
        return str(self.metrics[0]["name"])

    def param_label(self, name: str, value: ParamValue) -> str:
        p = next(p for p in self.params if p["name"] == name)
        if p["kind"] == "bytes":
            return format_bytes(float(value))
        if p["kind"] == "int" and isinstance(value, float) and value.is_integer():
            value = int(value)  # a chart axis passes swept values as floats: '2 ops', not '2.0'
        return f"{value} {p['unit']}".strip()

    def param_is_numeric(self, name: str) -> bool:
        return any(p["name"] == name and p["kind"] != "str" for p in self.params)


@dataclass
class Rusage:
    user_s: float
    sys_s: float
    max_rss_kib: int


@dataclass(frozen=True)
class Contention:
    """What other work did to one trial (bakeoff/run/contention.py measures it).

    cpu_s: the trial's processes' user + system CPU time (wait4, over the trial and the
    descendants it reaped). run_delay_s: their run-queue wait, time runnable but not on a CPU
    (schedstat's run_delay of the trial process, plus what the trial reports of children it
    measured); None where the kernel keeps no schedstat. steal_s: the machine's steal time
    over the trial (/proc/stat, every CPU: time the hypervisor ran someone else). nivcsw:
    involuntary context switches (wait4). load: the 1-minute load average when the trial
    ended. cpus: the CPUs online. trial_cpus: the CPUs the run claimed for the trial, which
    its processes run on (0: not pinned, any of cpus)."""

    cpu_s: float
    run_delay_s: float | None
    steal_s: float
    nivcsw: int
    load: float
    cpus: int
    trial_cpus: int = 0

    def others_wait_s(self, wall_s: float) -> float | None:
        """The run-queue wait other work can have caused. A trial's own processes or threads
        waiting for one another on its CPUs are not contention (a Go reader's runtime
        threads on its one CPU; docs/ARCHITECTURE.md, "Contention and retakes"): while one
        of them waited, each of its k CPUs ran either one of its own (its CPU time) or
        other work, so other work held them for at most k x wall - cpu_s."""
        if self.run_delay_s is None or wall_s <= 0:
            return None
        k = self.trial_cpus or self.cpus
        return min(self.run_delay_s, max(0.0, k * wall_s - self.cpu_s))

    def wait_share(self, wall_s: float) -> float | None:
        """The wait other work caused (others_wait_s) as a share of the trial's wall time."""
        wait = self.others_wait_s(wall_s)
        return None if wait is None else wait / wall_s


TrialStatus = Literal["ok", "failed", "timeout", "interrupted"]


# Samples of a trial's counted samples (Profile.counted_samples; benchmarks/common/counters.h):
# a metric's time taken with kernel counters on, and each counter divided by the operations
# timed there. The same measurement disturbed by counting: never one of the metric's values.
COUNTED_PREFIX = "counted."
PER_OP_PREFIX = "per_op."


def is_counted(name: str) -> bool:
    """A sample name of counted samples (counted.<metric>, per_op.<counter>): never a metric
    of the timing statistics, verdicts, crossovers, fits or the measured CSVs."""
    return name.startswith((COUNTED_PREFIX, PER_OP_PREFIX))


@dataclass
class Trial:
    """One measured execution of a case. Warm-up trials are never recorded."""

    case: Case
    index: int  # 0-based among this case's recorded trials
    round: int
    status: TrialStatus
    started_at: str
    wall_s: float
    exit_code: int | None
    # metric -> values in the order measured; or, for a metric with more samples than
    # stats.SKETCH_POINTS, that many evenly spaced quantiles of them (min, median and max
    # exact), so a run's memory and results.json do not grow with samples per trial.
    # samples.csv keeps every value.
    samples: dict[str, list[float]]
    counters: dict[str, float]
    meta: dict[str, Any]
    rusage: Rusage | None
    error: str | None = None  # why it failed, with the program's stderr tail
    stderr_tail: str = ""
    # metric -> how many samples were measured, for the metrics kept as quantiles.
    sample_counts: dict[str, int] = field(default_factory=dict)
    contention: Contention | None = None  # None in records older than the measurement
    # Set on a trial the run discarded and measured again (Trial.retaken_because; kept in
    # RunRecord.retaken, never among the trials analysed): why, e.g. "waited 41% of its
    # wall time for a CPU (retake above 20%)".
    retaken_because: str | None = None

    def n_samples(self, metric: str) -> int:
        """Samples measured of one metric (not how many values are kept)."""
        return self.sample_counts.get(metric, len(self.samples.get(metric, ())))

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass
class Skip:
    case: Case
    reason: str


@dataclass
class RunRecord:
    """Everything results.json holds."""

    schema_version: int
    run_id: str
    status: Literal["running", "complete", "interrupted", "failed"]
    started_at: str
    finished_at: str | None
    argv: list[str]
    profile: str
    seed: int
    host: dict[str, Any]
    warnings: list[str]
    benchmarks: dict[str, BenchmarkInfo]
    cases: list[Case]
    skips: list[Skip]
    trials: list[Trial]
    settings: RunSettings = field(default_factory=lambda: RunSettings())
    # Why measuring stopped when it was not simply the planned trials being done, and the
    # cases an adaptive run left above its CI target because a cap stopped them.
    stop_reason: str | None = None
    capped: list[Case] = field(default_factory=list)
    # Where the run's time went (bakeoff/run/timings.py): its set-up, each benchmark's
    # set-up, warm-up, trials and tear-down, and the time left it said against the truth.
    timings: dict[str, Any] = field(default_factory=dict)
    # Trials discarded because other work held them off the CPU past the run's threshold
    # (RunSettings.retake_wait), each measured again (bakeoff/run/contention.py).
    retaken: list[Trial] = field(default_factory=list)

    def trials_of(self, case: Case) -> Iterator[Trial]:
        return (t for t in self.trials if t.case == case)


@dataclass
class RunSettings:
    """How the run was asked to measure; kept so --resume goes on exactly as started."""

    threshold: float = 0.02  # the practical difference a verdict needs (2%)
    target_ci: float | None = None  # adaptive: stop a case once its median CI half-width
    # is within this fraction of the median
    max_trials: int | None = None  # adaptive: per case, at most
    # adaptive: add rounds until each variant's ratio to the baseline has a CI half-width
    # (the report's, paired by round) within this fraction of it (`cmd --target-ratio-ci`)
    target_ratio_ci: float | None = None
    time_budget_s: float | None = None  # the whole run, at most (one trial over, at worst)
    pin: bool = True
    # The user's own KEY=VALUE labels (--label): what the run was of, for a history of runs.
    labels: dict[str, str] = field(default_factory=dict)
    # A trial whose run-queue wait passes this share of its wall time is measured again
    # (--retake-above; None: never), at most `retakes` times (bakeoff/run/contention.py).
    retake_wait: float | None = 0.25
    retakes: int = 2
