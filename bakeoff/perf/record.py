"""`bakeoff profile RESULTS_DIR --case 'variant=V,param=value'`: where a case's time goes.

The case and its baseline at the same params are run again under `perf record -g`, through
the room's own path: its `session` (tracing-overhead's LTTng daemon), its `prepare_trial`
(the argv and environment a measured trial gets), the launcher and the CPUs a run pins its
trials to. So what is sampled is what was measured: a tracer the trial attaches is attached.
A process the room holds across trials that does a trial's work (TrialPlan.partners: a held
tracer consuming the trial's events) is outside the trial's process tree, so a second
`perf record -p` samples it for as long as the trial runs, folded into the same profile.
Nothing of it is recorded into the run; the folded stacks go to RESULTS_DIR/profiles/
(bakeoff/perf/store.py) and the report draws them as flame graphs.

Call graphs use frame pointers (`-g`, perf's default `fp`), not `--call-graph dwarf`: the
rooms' C programs keep theirs (-fno-omit-frame-pointer, benchmarks/common/common.mk), the
kernel's stacks need neither, and DWARF unwinding copies 8 KiB of stack per sample, which
makes perf.data some hundred times larger and `perf script` slow for a few seconds of
profile. What fp cannot unwind (libc built without frame pointers, an interpreter) shows as
[unknown] frames under the right process, and a leaf in libc (memcpy) is still named.

Everything made here goes on every way out: the perf.data files live in the scratch
directory (removed in a finally, and by a later sweep if bakeoff is SIGKILLed: its name
carries our PID), perf and the trial run in the trial's process group, which a signal
stops (bakeoff/run/trial_process.py), and the session is left like a run's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bakeoff.core import pids as procs
from bakeoff.core.errors import Interrupted, UsageError
from bakeoff.declare import registry
from bakeoff.declare.model import Benchmark, Case, Profile, RunContext, RunRecord
from bakeoff.machine import cpus
from bakeoff.machine import host as hostmod
from bakeoff.perf import flamegraph
from bakeoff.perf import store as profile_store
from bakeoff.plan.cases import BenchmarkPlan
from bakeoff.run import interrupts
from bakeoff.run.protocol import plan_trial
from bakeoff.run.trial_process import run_program
from bakeoff.store import results as store

FREQUENCY_HZ = 4000  # samples per second of CPU: 250 µs apart, 12k in a 3 s profile
CALL_GRAPH = "fp"
MAX_TRIALS = 10  # per case: a profile is a few long trials, not many short ones
MAX_SAMPLES = 1_000_000  # a lengthened trial's samples, at most
TOOL_TIMEOUT_S = 600.0  # perf script of a few seconds of samples takes about one
EXIT_USAGE = 2  # bench.h BENCH_EXIT_USAGE: the program refused its arguments
PARTNER_ATTACH_S = 10.0  # perf -p opening its events on a running process: well under it
PARTNER_STOP_S = 30.0  # perf writing its file after SIGTERM: about a second (BPF programs)


class ProfileFailed(Exception):
    """A trial under perf, or perf itself, failed: exit 1 with this one line."""


# ---- which case ------------------------------------------------------------------------------


def _spec_items(spec: str) -> dict[str, str]:
    """'variant=mremap,size=16MiB' → {'variant': 'mremap', 'size': '16MiB'}."""
    items: dict[str, str] = {}
    for part in (p.strip() for p in spec.split(",")):
        key, eq, value = part.partition("=")
        if not eq or not key.strip() or not value.strip():
            raise UsageError(f"--case '{spec}': '{part}' is not NAME=VALUE; give e.g. "
                             "--case 'variant=mremap,size=16MiB'")
        if key.strip() in items:
            raise UsageError(f"--case '{spec}': {key.strip()} is given twice; give it once")
        items[key.strip()] = value.strip()
    if "variant" not in items:
        raise UsageError(f"--case '{spec}' names no variant; give e.g. "
                         "--case 'variant=mremap,size=16MiB'")
    return items


def _matches(bench: Benchmark, case: Case, items: Mapping[str, str]) -> bool:
    if case.variant != items["variant"]:
        return False
    params = dict(case.params)
    for name, text in items.items():
        if name == "variant":
            continue
        try:
            given = bench.param(name).parse(text)
        except UsageError:
            return False  # not this benchmark's way of writing it (said below if no case fits)
        if name not in params or params[name] != given:
            return False
    return True


def _cases_text(plans: Sequence[BenchmarkPlan]) -> str:
    """'mremap-vs-memcpy: variant=memcpy|mremap, size=4096|16777216' for each benchmark."""
    parts = []
    for p in plans:
        variants = "|".join(dict.fromkeys(c.variant for c in p.cases))
        params = ", ".join(f"{name}=" + "|".join(str(v) for v in dict.fromkeys(
            c.param(name) for c in p.cases)) for name in (q.name for q in p.benchmark.params))
        parts.append(f"{p.benchmark.name}: variant={variants}" + (f", {params}" if params else ""))
    return "; ".join(parts)


def _check_items(bench: Benchmark, items: Mapping[str, str]) -> None:
    """One benchmark: each name is its param, each value parses as that param's kind."""
    known = [p.name for p in bench.params]
    for name, text in items.items():
        if name == "variant":
            continue
        if name not in known:
            raise UsageError(f"--case {name}={text}: {bench.name} has no param {name}; its "
                             f"params are {', '.join(known) or 'none'}")
        try:
            bench.param(name).parse(text)
        except UsageError as exc:
            raise UsageError(f"--case {name}={text}: "
                             f"{str(exc).removeprefix(f'--param {name}: ')}") from None


def find_case(plans: Sequence[BenchmarkPlan], spec: str,
              benchmark: str | None) -> tuple[BenchmarkPlan, Case]:
    """The one measured case --case (and --benchmark) name; UsageError naming the run's
    cases when it names none or several."""
    items = _spec_items(spec)
    if benchmark is not None:
        chosen = [p for p in plans if p.benchmark.name == benchmark]
        if not chosen:
            raise UsageError(f"--benchmark {benchmark}: the run has no such benchmark; give "
                             f"one of {', '.join(p.benchmark.name for p in plans) or 'none'}")
        plans = chosen
    if len(plans) == 1:
        _check_items(plans[0].benchmark, items)
    found = [(p, c) for p in plans for c in p.cases if _matches(p.benchmark, c, items)]
    if len(found) == 1:
        return found[0]
    if not found:
        raise UsageError(f"--case '{spec}' matches no case of the run; its cases are "
                         f"{_cases_text(plans)}")
    names = "; ".join(f"{c.variant} " + ",".join(f"{k}={v}" for k, v in c.params)
                      for _, c in found[:6])
    more = f" and {len(found) - 6} more" if len(found) > 6 else ""
    bench = (" (and --benchmark)" if len({p.benchmark.name for p, _ in found}) > 1 else "")
    raise UsageError(f"--case '{spec}' matches {len(found)} cases ({names}{more}); give every "
                     f"param{bench} to name one")


# ---- perf ------------------------------------------------------------------------------------


def _perf() -> str:
    path = shutil.which("perf")
    if path is None:
        raise UsageError("perf is not installed; install it with apt-get install linux-perf "
                         "(make deps does)")
    return path


def perf_event(caps: Mapping[str, hostmod.Capability]) -> str:
    """cycles where the CPU has a PMU; else cpu-clock, a software timer. Chosen, not left to
    perf: asked for cycles without a PMU, perf falls back to cpu-clock silently."""
    counters = caps.get("perf_counters")
    return "cycles" if counters is not None and counters.available else "cpu-clock"


def _tool(argv: Sequence[str], stdout: Path) -> str:
    """A perf command (not a trial) to completion, its output to a file, stopped at once by
    a signal bakeoff received (SIGTERM, then SIGKILL after a second): its own session, so
    a Ctrl-C at the terminal reaches bakeoff only, which decides. Returns stderr's tail."""
    with open(stdout, "wb") as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                start_new_session=True)
        deadline = time.monotonic() + TOOL_TIMEOUT_S
        try:
            while proc.poll() is None:
                if interrupts.received() is not None or time.monotonic() > deadline:
                    break
                time.sleep(0.02)
        finally:
            if proc.poll() is None:
                procs.stop_child(proc, 1.0)
        interrupts.checkpoint("profile:perf")
        err.seek(0)
        tail = err.read()[-2000:].decode("utf-8", errors="replace").strip()
        if proc.returncode != 0:
            last = tail.splitlines()[-1] if tail else f"exit status {proc.returncode}"
            raise ProfileFailed(f"{Path(argv[0]).name} {argv[1]} failed: {last}")
        return tail


@dataclass
class _Accumulated:
    """One case's profile so far: its folded stacks over every trial run under perf."""

    case: Case
    folded: flamegraph.Folded = dataclasses.field(default_factory=flamegraph.Folded)
    trials: int = 0
    wall_s: float = 0.0
    samples: int = 0
    next_samples: int = 0
    as_run: bool = False  # the program refused longer trials: the run's own length only
    # --profile-repeat as the program applied it (its meta "profile_repeat", e.g. 1 for a
    # variant it cannot repeat), else as asked.
    repeat: int = 1

    @property
    def sampled_s(self) -> float:
        """CPU time perf sampled (FREQUENCY_HZ samples a second of CPU, for cpu-clock and
        cycles alike): what the trials spent working, without perf's own start and finish
        (about a second of wall time a trial, reading the BPF programs loaded)."""
        return self.samples / FREQUENCY_HZ

    def needs_more(self, seconds: float) -> bool:
        """At least one trial; then until `seconds` of CPU are sampled, within bounds for a
        case that mostly waits: MAX_TRIALS trials, or four times that in wall time."""
        return self.trials == 0 or (self.sampled_s < seconds and self.wall_s < 4 * seconds
                                    and self.trials < MAX_TRIALS)


@dataclass
class _Profiler:
    """The cases' trials under perf, in the room's session, each folded as it ends."""

    bench: Benchmark
    profile: Profile
    ctx: RunContext
    state: Any
    event: str
    seconds: float
    scratch: Path
    repeat: int = 1
    recorded_event: str = ""

    def trial(self, acc: _Accumulated) -> None:
        profile = dataclasses.replace(
            self.profile, samples=acc.next_samples, counted_samples=0,
            profile_repeat=self.repeat,
            # A lengthened trial may take longer than the run's timeout allowed for.
            timeout_s=max(self.profile.timeout_s, 3 * self.seconds + 60))
        plan = plan_trial(self.bench, acc.case, profile, self.ctx, self.state)
        if plan.failure is not None:
            raise ProfileFailed(f"{acc.case.key}: the trial could not start: {plan.failure}")
        data = self.scratch / "perf.data"
        partners_data = self.scratch / "partners.data"
        argv = [_perf(), "record", "-q", "-e", self.event, "-F", str(FREQUENCY_HZ), "-g",
                "-o", str(data), "--", *plan.argv]
        env = {**plan.env, **cpus.trial_env(self.ctx.trial_cpus)}
        interrupts.checkpoint("profile:trial")
        try:
            with self._partners_recorded(plan.partners, partners_data):
                result = run_program(argv, env, profile.timeout_s,
                                     self.ctx.trial_cpus[0] if self.ctx.trial_cpus else None,
                                     registry.launcher())
        except BaseException:
            data.unlink(missing_ok=True)
            partners_data.unlink(missing_ok=True)
            raise
        try:
            if interrupts.received() or result.status == "interrupted":
                raise Interrupted(interrupts.received() or signal.SIGINT)
            if (result.exit_code == EXIT_USAGE and not acc.as_run
                    and acc.next_samples != self.profile.samples):
                # The program refused the lengthened trial (tracing-overhead: more batches
                # than its calls): trials of the run's own length from now on.
                acc.as_run, acc.next_samples = True, self.profile.samples
                return
            if result.status != "ok":
                raise ProfileFailed(f"{acc.case.key}: the trial under perf failed: "
                                    f"{result.error}")
            before = acc.sampled_s
            done = result.output.meta.get("profile_repeat", self.repeat)
            acc.repeat = int(done) if isinstance(done, int | float) else self.repeat
            self._fold(acc, data)
            if plan.partners:
                self._fold(acc, partners_data)
        finally:
            data.unlink(missing_ok=True)
            partners_data.unlink(missing_ok=True)
        acc.trials += 1
        acc.wall_s += result.wall_s
        # Lengthen the next trial to fill what is left of --seconds (at most 100 times as
        # many samples at a step): a profile of the operation more than of a program
        # starting up.
        this = acc.sampled_s - before
        scale = (self.seconds - acc.sampled_s) / this if this > 0 else 1.0
        if not acc.as_run:
            acc.next_samples = int(min(MAX_SAMPLES, acc.next_samples * 100, max(
                acc.next_samples, math.ceil(acc.next_samples * scale))))

    @contextlib.contextmanager
    def _partners_recorded(self, pids: Sequence[int], data: Path) -> Iterator[None]:
        """`perf record -p` of the trial's partners while the body (the trial) runs: started
        and attached before it, stopped with SIGTERM after it (perf then writes its file),
        on every way out. Its own session, as _tool's: a Ctrl-C reaches bakeoff only."""
        if not pids:
            yield
            return
        argv = [_perf(), "record", "-q", "-e", self.event, "-F", str(FREQUENCY_HZ), "-g",
                "-o", str(data), "-p", ",".join(str(p) for p in pids)]
        with tempfile.TemporaryFile() as err:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=err, start_new_session=True)
            try:
                _wait_attached(proc)
                yield
            finally:
                procs.stop_child(proc, PARTNER_STOP_S)
            if proc.returncode not in (0, -signal.SIGTERM) or not data.exists():
                err.seek(0)
                tail = err.read()[-2000:].decode("utf-8", errors="replace").strip()
                last = tail.splitlines()[-1] if tail else f"exit status {proc.returncode}"
                raise ProfileFailed(f"perf record -p {argv[-1]} (the trial's partners) "
                                    f"failed: {last}")

    def _fold(self, acc: _Accumulated, data: Path) -> None:
        script = self.scratch / "perf.script"
        try:
            if not self.recorded_event:  # what perf sampled, as it says
                _tool([_perf(), "evlist", "-i", str(data)], script)
                self.recorded_event = (script.read_text().split() or [self.event])[0]
            _tool([_perf(), "script", "-F", "comm,period,ip,sym,dso", "-i", str(data)],
                  script)
            with open(script, encoding="utf-8", errors="replace") as lines:
                folded, samples = flamegraph.fold_counting(lines)
        finally:
            script.unlink(missing_ok=True)
        acc.folded.update(folded)
        acc.samples += samples


def _wait_attached(proc: subprocess.Popen[bytes]) -> None:
    """Until perf has opened its events on the partners (a perf_event descriptor among its
    files), it exits, a signal arrives, or PARTNER_ATTACH_S pass: the trial's first
    wake-ups of its partner are then sampled too."""
    deadline = time.monotonic() + PARTNER_ATTACH_S
    fds = Path(f"/proc/{proc.pid}/fd")
    while proc.poll() is None and time.monotonic() < deadline and not interrupts.received():
        with contextlib.suppress(OSError):
            if any(os.readlink(fd) == "anon_inode:[perf_event]" for fd in fds.iterdir()):
                return
        time.sleep(0.01)


def _checked_requirements(bench: Benchmark, case: Case,
                          caps: Mapping[str, hostmod.Capability]) -> None:
    for name in (*bench.requires, *bench.variant(case.variant).requires):
        cap = caps[name]
        if not cap.available:
            raise UsageError(f"{case.key} needs {name} ({cap.detail}) to run here; fix: "
                             f"{cap.fix}")


def profile_case(run: RunRecord, run_dir: Path, plan: BenchmarkPlan, case: Case,
                 seconds: float, ctx: RunContext, caps: Mapping[str, hostmod.Capability],
                 repeat: int | None = None) -> profile_store.ProfilePair:
    """Profiles case and its baseline at the same params for `seconds` of trials each
    (whole trials, at least one), writes their folded stacks and the index; returns the
    pair. ctx: the run environment's (bakeoff/app/runs.py), its scratch directory where
    perf.data goes. repeat: --profile-repeat for the trials (None: the room's
    profile_repeat). Raises Interrupted on a signal (nothing saved), ProfileFailed when a
    trial fails."""
    bench = plan.benchmark
    repeat = bench.profile_repeat if repeat is None else repeat
    baseline = Case(bench.name, bench.baseline.name, case.params)
    cases = [case] if case == baseline else [case, baseline]
    for c in cases:
        _checked_requirements(bench, c, caps)
    if not (ctx.build_dir / bench.program).exists():
        raise UsageError(f"{bench.name}: program {bench.program} is not built in "
                         f"{ctx.build_dir}; run make build")
    _perf()
    with cpus.held(run.settings.pin, bench.cpus) as claim:
        # From here a signal is recorded and stops the trial; the session is left whole.
        interrupts.latch()
        interrupts.tell(lambda: f"no profile was saved; the run in {run_dir} is as it was")
        trial_cpus = claim.for_trial(bench.cpus) if claim.cpus else ()
        ctx = dataclasses.replace(ctx, cases=tuple(cases), trial_cpus=trial_cpus)
        accs = [_Accumulated(c, next_samples=plan.profile.samples) for c in cases]
        with ExitStack() as stack:
            state = stack.enter_context(bench.session(ctx)) if bench.session else None
            profiler = _Profiler(bench, plan.profile, ctx, state, perf_event(caps), seconds,
                                 ctx.scratch_dir, repeat)
            # Alternated, as a run's rounds are, so a drift of the machine hits both alike.
            while any(a.needs_more(seconds) for a in accs):
                for acc in accs:
                    if acc.needs_more(seconds):
                        profiler.trial(acc)
            interrupts.log_phase("teardown")
        interrupts.checkpoint("profile:save")
        return _save(run_dir, accs, profiler)


def _save(run_dir: Path, accs: list[_Accumulated],
          profiler: _Profiler) -> profile_store.ProfilePair:
    out = run_dir / profile_store.PROFILES_DIR
    out.mkdir(exist_ok=True)
    saved = []
    for acc in accs:
        name = profile_store.case_file(acc.case)
        store.write_atomic(out / name, flamegraph.write_folded(acc.folded))
        frames = tuple(profiler.bench.timed_frames.get(acc.case.variant, ()))
        saved.append(profile_store.CaseProfile(
            acc.case, name, acc.trials, acc.wall_s, acc.samples, sum(acc.folded.values()),
            frames, flamegraph.matching_period(acc.folded, frames) if frames else None,
            acc.repeat))
    pair = profile_store.ProfilePair(
        case=saved[0], baseline=saved[1] if len(saved) > 1 else None,
        event=profiler.recorded_event or profiler.event, frequency_hz=FREQUENCY_HZ,
        call_graph=CALL_GRAPH, taken_at=store.utc_now())
    profile_store.save_pair(run_dir, pair)
    return pair
