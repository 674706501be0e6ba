"""tracing-overhead: what tracing a function costs it (seed 002, eBPF vs LTTng overhead suite).

No tracing against LTTng-UST tracepoints, bakeoff's own libbpf uprobe tracer under three
ring-buffer wake-up policies, the same uprobes with empty programs (the floor), and bpftrace,
on a library function that busy-waits 0 µs to 1 ms. Each trial is one run of
build/tracing_overhead/tracing_trial (a driver: tracer up, app, tracer down, events counted,
trace deleted); METHOD.md says what is timed and why.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

from bakeoff.cleanup import RUN_PID_ENV, pid_alive
from bakeoff.errors import UsageError
from bakeoff.model import (
    Benchmark,
    Case,
    Fit,
    Metric,
    Param,
    ParamValue,
    Profile,
    RunContext,
    TrialPlan,
    Variant,
)

ROOM = "tracing_overhead"
PROGRAM = f"{ROOM}/tracing_trial"

# The seed's six scenarios: function duration (µs) -> calls the app makes. Its counts keep
# every scenario at a few seconds of work and the 0 µs one at 200k events.
SEED_CALLS: dict[int, int] = {0: 100_000, 5: 100_000, 50: 50_000, 100: 10_000, 500: 5_000,
                              1000: 2_000}
SEED_SCENARIOS = (
    (0, "Empty Function", "worst case: minimal work"),
    (5, "5 µs Function", "ultra-fast API"),
    (50, "50 µs Function", "fast API (e.g. hipGetDevice)"),
    (100, "100 µs Function", "typical API (e.g. hipMalloc)"),
    (500, "500 µs Function", "medium API (e.g. hipMemcpy)"),
    (1000, "1000 µs Function", "slow API (large allocations)"),
)
# Durations outside the table get about this much work per trial (the seed's 2-5 s).
AUTO_WORK_US = 2_000_000
MIN_CALLS, MAX_CALLS = 100, 10_000_000
MAX_DURATION_US = 1_000_000
MAX_TRIAL_WORK_S = 600  # more busy-waiting than this in one trial is a typo, not a plan


# ---- params ---------------------------------------------------------------------------------


def _is_count(text: str) -> bool:
    """ASCII digits, few enough for int(): str.isdigit() alone takes '²' (int() refuses it)
    and 5000 nines (int() refuses more than 4300 digits)."""
    return text.isascii() and text.isdigit() and len(text) <= 18


def calls_for(duration_us: int, calls: str) -> int:
    """The number of calls a case makes.

    'auto': the seed's count for its durations; elsewhere about 2 s of work, between 100 and
    100k calls. 'auto/K': that count divided by K (at least 100): the quick and default
    profiles keep the seed's proportions at a fraction of its time. A number: that many.
    """
    if _is_count(calls):
        return int(calls)
    base, _, divisor = calls.partition("/")
    assert base == "auto", calls  # _check_calls let nothing else through
    if duration_us in SEED_CALLS:
        n = SEED_CALLS[duration_us]
    else:
        n = max(100, min(100_000, round(AUTO_WORK_US / max(duration_us, 1))))
    return max(MIN_CALLS, n // int(divisor or 1))


def _check_duration(value: ParamValue) -> str | None:
    if not 0 <= int(value) <= MAX_DURATION_US:
        return f"give 0 to {MAX_DURATION_US} microseconds (the seed's scenarios: 0,5,50,100,500,1000)"
    return None


def _check_calls(value: ParamValue) -> str | None:
    text = str(value)
    if _is_count(text):
        if not MIN_CALLS <= int(text) <= MAX_CALLS:
            return f"give {MIN_CALLS} to {MAX_CALLS:,} calls, or auto"
        return None
    base, slash, divisor = text.partition("/")
    if base == "auto" and (not slash or (_is_count(divisor) and int(divisor) >= 1)):
        return None
    return ("give a number of calls (e.g. 10000), auto (the seed's count for each duration) "
            "or auto/K (that count divided by K, e.g. auto/10)")


def _not_for_ever(case: Case, _ctx: RunContext) -> str | None:
    duration = int(case.param("duration_us"))
    calls = calls_for(duration, str(case.param("calls")))
    work_s = duration * calls / 1e6
    if work_s > MAX_TRIAL_WORK_S:
        return (f"--param duration_us={duration} with calls={calls} busy-waits {work_s:,.0f} s "
                f"per trial (limit {MAX_TRIAL_WORK_S} s); lower calls or duration_us")
    return None


# ---- what this machine can run --------------------------------------------------------------


def _missing_tool(*tools: str) -> str | None:
    for tool in tools:
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt-get install {_PACKAGE_OF.get(tool, tool)})"
    return None


_PACKAGE_OF = {"lttng": "lttng-tools", "lttng-sessiond": "lttng-tools",
               "babeltrace2": "babeltrace2", "bpftrace": "bpftrace"}


def _skip_case(case: Case, ctx: RunContext) -> str | None:
    built = ctx.build_dir / ROOM
    if case.variant == "lttng":
        if not (built / "libbakeoff_traced_lttng.so").exists():
            return ("the LTTng build of the library is missing: apt-get install "
                    "liblttng-ust-dev, then make")
        return _missing_tool("lttng", "lttng-sessiond", "babeltrace2")
    if case.variant.startswith("ebpf-"):
        if not Path("/sys/kernel/btf/vmlinux").exists():
            return "the kernel has no BTF (/sys/kernel/btf/vmlinux): CO-RE cannot load"
        if not (built / "bakeoff_tracer").exists():
            return "bakeoff_tracer is not built: run make"
    if case.variant == "bpftrace":
        return _missing_tool("bpftrace")
    return None


# ---- per trial -------------------------------------------------------------------------------


def _plan_trial(case: Case, profile: Profile, ctx: RunContext) -> TrialPlan:
    duration = int(case.param("duration_us"))
    calls = calls_for(duration, str(case.param("calls")))
    argv = [str(ctx.build_dir / PROGRAM), "--variant", case.variant,
            "--param", f"duration_us={duration}", "--param", f"calls={calls}",
            "--samples", str(profile.samples), "--warmup", str(profile.warmup_samples)]
    if case.variant == "lttng":
        _revive_sessiond()
    # The driver names its LTTng session bakeoff-<this pid>-<its pid>, so the session hook
    # can destroy whatever a killed trial of this run left.
    return TrialPlan(argv=argv, env={"BAKEOFF_RUN_PID": str(os.getpid())})


# ---- the LTTng session daemon, once per run -----------------------------------------------


def _lttng(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str] | None:
    # -n: the lttng client must never spawn a daemon on its own.
    try:
        return subprocess.run(["lttng", "-n", *args], capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None


def _sessiond_answers() -> bool:
    res = _lttng("list")
    return res is not None and res.returncode == 0


def _sessiond_pidfile() -> Path:
    if os.geteuid() == 0:
        return Path("/var/run/lttng/lttng-sessiond.pid")
    return Path(os.environ.get("LTTNG_HOME", os.path.expanduser("~"))) / ".lttng" / \
        "lttng-sessiond.pid"


def _sessiond_pid() -> int:
    """The PID in the daemon's pid file: its first line. lttng-sessiond rewrites the file
    without truncating it, so after a killed daemon with a longer PID (32565) the file of
    the next one (639) reads '639\\n5\\n'. Raises OSError or ValueError when there is none."""
    return int(_sessiond_pidfile().read_text().split("\n", 1)[0])


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _live_comm(pid: int) -> str:
    """The name of a live process; '' when it is gone or a zombie. A killed daemon may stay
    a zombie for a while (PID 1 reaps it late here) and keeps its name in /proc."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""
    return "" if state in ("Z", "X") else _comm(pid)


def _is_sessiond(pid: int) -> bool:
    return _live_comm(pid) == "lttng-sessiond"


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(stat.parent.name))
    return out


def _start_sessiond() -> int | None:
    """lttng-sessiond --daemonize --no-kernel (UST only); its PID, or None if it failed.

    It inherits the harness's CPU affinity, so the LTTng daemons run beside the harness and
    not on the measured CPU, like the other tracers' user-space sides (METHOD.md)."""
    try:
        # Without the run's mark: the daemon is shared by runs and outlives this one when
        # another still uses it, so the sweep of a dead run's processes must not stop it.
        res = subprocess.run(["lttng-sessiond", "--daemonize", "--no-kernel"],
                             capture_output=True, text=True, timeout=30, check=False,
                             stdin=subprocess.DEVNULL,
                             env={k: v for k, v in os.environ.items() if k != RUN_PID_ENV})
    except (OSError, subprocess.TimeoutExpired) as exc:
        print(f"tracing-overhead: cannot start lttng-sessiond: {exc}", file=sys.stderr)
        return None
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError, ValueError):
            pid = _sessiond_pid()
            if _is_sessiond(pid) and _sessiond_answers():
                return pid
        time.sleep(0.05)
    detail = (res.stderr.strip().splitlines() or ["no answer"])[-1]
    print(f"tracing-overhead: lttng-sessiond did not come up: {detail}", file=sys.stderr)
    return None


def _wait_gone(pids: list[int], timeout: float) -> list[int]:
    deadline = time.monotonic() + timeout
    alive = pids
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = [p for p in alive if _live_comm(p).startswith("lttng-")]
    return alive


def _stop_sessiond(pid: int) -> None:
    """By PID, with its consumer daemons and run-as helper: SIGTERM, then SIGKILL."""
    if not _is_sessiond(pid):
        return  # already gone; the number may belong to someone else by now
    family = [pid, *[c for c in _children(pid) if _comm(c).startswith("lttng-")]]
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    for straggler in _wait_gone(family, 10):
        with contextlib.suppress(ProcessLookupError):
            os.kill(straggler, signal.SIGKILL)
    _wait_gone(family, 5)


def _destroy_sessions_of_this_run() -> None:
    """A trial killed before it could clean up (SIGKILL after the grace) leaves its session;
    its name says which run it belongs to."""
    res = _lttng("--mi", "xml", "list")
    if res is None or res.returncode != 0:
        return
    prefix = f"bakeoff-{os.getpid()}-"
    with contextlib.suppress(ET.ParseError):
        root = ET.fromstring(res.stdout)
        ns = {"mi": "https://lttng.org/xml/ns/lttng-mi"}
        for name in root.iterfind(".//mi:session/mi:name", ns):
            if name.text and name.text.startswith(prefix):
                _lttng("destroy", name.text)


def _lock_path(suffix: str = "") -> Path:
    # Not under /tmp: the tests look there for leftovers, and these files are meant to stay.
    run_lock = Path("/run/lock")
    base = run_lock if os.access(run_lock, os.W_OK) else Path(tempfile.gettempdir())
    return base / f"bakeoff-lttng-sessiond-{os.geteuid()}{suffix}.lock"


@contextlib.contextmanager
def _deciding() -> Iterator[None]:
    """The start lock: one run at a time decides whether to start the daemon (as it begins,
    or when the daemon died mid-run) or, leaving last, to stop it. Never held while a run
    measures, so a second run starts at once instead of waiting for the first to end."""
    fd = os.open(_lock_path("-start"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


class _Held:
    """This run's hold on the daemon: the counted lock file, open while the session lasts.
    (A class, not a dataclass: the registry loads spec.py outside sys.modules' usual path.)"""

    fd: int | None = None


def _revive_sessiond() -> None:
    """Before an lttng trial: a daemon that died mid-run (killed, crashed) is started again,
    so that its death fails the trial it hit, not every lttng trial after it. The new one is
    bakeoff's, recorded, and stopped by the last run out like the first."""
    fd = _Held.fd
    if fd is None:
        return
    with contextlib.suppress(OSError, ValueError):
        if _is_sessiond(_sessiond_pid()):
            return
    with _deciding():
        if not _sessiond_answers():
            _record_pid(fd, _start_sessiond())


def _recorded_pid(fd: int) -> int | None:
    os.lseek(fd, 0, os.SEEK_SET)
    text = os.read(fd, 64).decode(errors="replace").strip()
    return int(text) if text.isdigit() else None


def _record_pid(fd: int, pid: int | None) -> None:
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    if pid is not None:
        os.write(fd, f"{pid}\n".encode())


@contextlib.contextmanager
def _lttng_session_daemon(ctx: RunContext) -> Iterator[None]:
    """A session daemon for the run: the one already running, or one started here.

    Several bakeoff runs may share the daemon, so it is counted: each run holds a shared
    lock on a file that names the daemon bakeoff started (if it did); the last run out (the
    one that gets the lock exclusively) stops that daemon by its PID. Starting and stopping
    are decided under a second lock (_deciding), never the counted one, so concurrent runs
    measure at the same time. A daemon someone else started is never stopped; one that dies
    mid-run is started again before the next lttng trial (_revive_sessiond). Exited on
    success, error, Ctrl-C and SIGTERM alike.
    """
    if (not ctx.capabilities.get("lttng") or shutil.which("lttng-sessiond") is None
            or not any(c.variant == "lttng" for c in ctx.cases)):
        yield  # nothing here needs a daemon: a run of eBPF tracers leaves the daemon be
        return
    fd = os.open(_lock_path(), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        with _deciding():
            if not _sessiond_answers():
                _record_pid(fd, _start_sessiond())
            fcntl.flock(fd, fcntl.LOCK_SH)  # only a run leaving, under _deciding, holds EX
        _Held.fd = fd
        try:
            yield
        finally:
            _Held.fd = None
            _destroy_sessions_of_this_run()
            with _deciding():
                fcntl.flock(fd, fcntl.LOCK_UN)
                with contextlib.suppress(BlockingIOError):
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    pid = _recorded_pid(fd)
                    if pid is not None:
                        _stop_sessiond(pid)
                        _record_pid(fd, None)
    finally:
        os.close(fd)


# ---- what dead runs left (Benchmark.sweep) ---------------------------------------------------

# bakeoff-<run pid>-<trial pid> (a trial under bakeoff run), bakeoff-<trial pid> (by hand).
SESSION_NAME = re.compile(r"^bakeoff-(\d+)(?:-(\d+))?$")
# A trial's temp directory in a path (its private library, its trace): bakeoff-<trial pid>-x.
TRIAL_DIR = re.compile(r"/bakeoff-(\d+)-[^/\s]*/")
TRACER_COMMS = ("bpftrace", "bakeoff_tracer")


def _all_gone(pids: list[str]) -> bool:
    return bool(pids) and not any(pid_alive(int(p)) for p in pids)


def _sweep_sessions() -> list[str]:
    """LTTng sessions of trials whose run and trial processes are both gone."""
    if shutil.which("lttng") is None:
        return []
    res = _lttng("--mi", "xml", "list")
    if res is None or res.returncode != 0:
        return []  # no session daemon: no sessions
    lines = []
    with contextlib.suppress(ET.ParseError):
        root = ET.fromstring(res.stdout)
        ns = {"mi": "https://lttng.org/xml/ns/lttng-mi"}
        for name in root.iterfind(".//mi:session/mi:name", ns):
            m = SESSION_NAME.match(name.text or "")
            if m and _all_gone([g for g in m.groups() if g]):
                done = _lttng("destroy", m.group(0))
                ok = done is not None and done.returncode == 0
                lines.append(f"{'destroyed' if ok else 'could not destroy'} LTTng session "
                             f"{m.group(0)} (its run is gone)")
    return lines


def _sweep_uprobe_events() -> list[str]:
    """Probes in tracefs uprobe_events on a dead trial's private library (libbpf's and
    bpftrace's fallback on kernels without the uprobe PMU; here they use perf_event_open,
    and such probes go with their file descriptors)."""
    for tracefs in (Path("/sys/kernel/tracing"), Path("/sys/kernel/debug/tracing")):
        events = tracefs / "uprobe_events"
        if events.exists():
            break
    else:
        return []
    try:
        text = events.read_text()
    except OSError:
        return []
    lines = []
    for line in text.splitlines():
        kind_name, _, where = line.partition(" ")
        name = kind_name.partition(":")[2]
        if name and _all_gone(TRIAL_DIR.findall(where)):
            try:  # O_APPEND without Python's seek to the end, which tracefs refuses
                fd = os.open(events, os.O_WRONLY | os.O_APPEND)
                try:
                    os.write(fd, f"-:{name}\n".encode())
                finally:
                    os.close(fd)
                lines.append(f"removed uprobe {name} on {where.split()[0]} (its trial is gone)")
            except OSError as exc:
                lines.append(f"could not remove uprobe {name}: {exc.strerror or exc}")
    return lines


def _sweep_tracers() -> list[str]:
    """bpftrace or bakeoff_tracer processes still attached to a dead trial's library (a
    trial run by hand and killed: under bakeoff run, bakeoff.cleanup stops them)."""
    lines = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or _live_comm(int(proc.name)) not in TRACER_COMMS:
            continue
        with contextlib.suppress(OSError):
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(
                errors="replace")
            if _all_gone(TRIAL_DIR.findall(cmdline)):
                pid = int(proc.name)
                os.kill(pid, signal.SIGTERM)
                if _wait_dead(pid, 5):
                    os.kill(pid, signal.SIGKILL)
                lines.append(f"stopped {_comm(pid) or 'tracer'} {pid}, left running by a "
                             "trial that is gone")
    return lines


def _wait_dead(pid: int, timeout: float) -> bool:
    """True if pid still runs after timeout."""
    deadline = time.monotonic() + timeout
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return pid_alive(pid)


def _sweep_sessiond() -> list[str]:
    """The session daemon a bakeoff run started, when no run uses it any more: the runs that
    did were killed before they could stop it (their shared locks went with them)."""
    try:
        fd = os.open(_lock_path(), os.O_RDWR)  # none: no run ever started a daemon here
    except OSError:
        return []
    try:
        with _deciding():
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return []  # a live run holds it: the daemon is in use
            pid = _recorded_pid(fd)
            if pid is None:
                return []
            lines = []
            if _is_sessiond(pid):
                _stop_sessiond(pid)
                lines.append(f"stopped lttng-sessiond {pid} (and its consumer daemons), "
                             "started by bakeoff runs that are gone")
            _record_pid(fd, None)
            return lines
    finally:
        os.close(fd)


def _sweep() -> list[str]:
    """What killed runs of this room left: LTTng sessions, uprobes, tracer processes, and the
    session daemon bakeoff started. Named by PIDs that are gone; never a live run's."""
    return [*_sweep_tracers(), *_sweep_sessions(), *_sweep_uprobe_events(), *_sweep_sessiond()]


# ---- a room command: the seed's --list-scenarios ------------------------------------------


def _scenarios_command(argv: list[str]) -> int:
    """bakeoff tracing-scenarios [INDEX...]: the seed's scenario table, and the --param that
    selects the given ones (the seed's --scenarios 3 4 5)."""
    picked = []
    for arg in argv:
        if not _is_count(arg) or int(arg) >= len(SEED_SCENARIOS):
            raise UsageError(f"tracing-scenarios: '{arg}' is not a scenario index; "
                             f"give 0 to {len(SEED_SCENARIOS) - 1}")
        picked.append(int(arg))
    print(f"{'index':>5}  {'scenario':18} {'duration':>9} {'calls (auto)':>13}  represents")
    for i, (us, name, what) in enumerate(SEED_SCENARIOS):
        print(f"{i:>5}  {name:18} {us:>6} µs {SEED_CALLS[us]:>13,}  {what}")
    if picked:
        durations = ",".join(str(SEED_SCENARIOS[i][0]) for i in sorted(set(picked)))
        print(f"\nbakeoff run tracing-overhead --param duration_us={durations} --param calls=auto")
    return 0


# ---- the benchmark ----------------------------------------------------------------------------

EBPF_NEEDS = ("root", "bpf", "uprobes")

BENCHMARK = Benchmark(
    name="tracing-overhead",
    title="Tracing overhead: none vs LTTng-UST vs eBPF uprobes vs bpftrace",
    summary=("Time per call of a library function that busy-waits 0 µs to 1 ms, and of the "
             "whole app making the calls, with no tracer, with LTTng-UST entry/exit "
             "tracepoints, with eBPF uprobes streaming events through a ring buffer (three "
             "wake-up policies), with empty uprobes (the floor), and with bpftrace counting."),
    variants=(
        Variant("baseline", "no tracing", baseline=True, color="#7f8c8d"),
        Variant("lttng", "LTTng-UST entry/exit tracepoints in an LD_PRELOADed build of the "
                "library; session per trial, per-uid buffers 8 x 1 MiB", requires=("lttng",),
                color="#e67e22"),
        Variant("ebpf-force", "libbpf uprobe + uretprobe, events to a ring buffer, "
                "BPF_RB_FORCE_WAKEUP on every event (the seed's eBPF tracer)",
                requires=EBPF_NEEDS, color="#3498db"),
        Variant("ebpf-adaptive", "as ebpf-force, wake-up flags 0: the kernel wakes the "
                "consumer only when it had caught up", requires=EBPF_NEEDS, color="#16a085"),
        Variant("ebpf-batched", "as ebpf-force, BPF_RB_NO_WAKEUP: no wake-ups, the consumer "
                "drains every 1 ms", requires=EBPF_NEEDS, color="#8e44ad"),
        Variant("ebpf-floor", "the same uprobe + uretprobe with empty BPF programs: the cost "
                "of the probes alone", requires=EBPF_NEEDS, color="#2c3e50"),
        Variant("bpftrace", "bpftrace count() on the same uprobe + uretprobe (in-kernel "
                "aggregation, nothing streamed)", requires=EBPF_NEEDS, color="#c0392b"),
    ),
    params=(
        Param("duration_us", "int", "how long one call of the traced function busy-waits",
              unit="µs", check=_check_duration),
        Param("calls", "str", "calls the app makes: a number, auto (the seed's count for the "
              "duration: 100k at 0 and 5 µs, 50k at 50, 10k at 100, 5k at 500, 2k at 1000) or "
              "auto/K (that divided by K)", check=_check_calls),
    ),
    metrics=(
        Metric("per_call_ns", "ns", "time of one call as the app measures it (a timed batch "
               "of calls / its size), the tracer's probes included", overhead_pct=True),
        Metric("app_wall_ms", "ms", "whole-app wall time: fork to exit of the app process, "
               "loading, tracer registration and exit included", overhead_pct=True),
        Metric("app_cpu_ms", "ms", "user + system CPU of the app process (probe traps and "
               "BPF programs run in it, as system time)", overhead_pct=True),
        Metric("app_max_rss_kib", "KiB", "peak RSS of the app process (LTTng's buffers are "
               "mapped into it)", overhead_pct=True),
    ),
    profiles={
        "quick": Profile("quick", {"duration_us": (0, 100), "calls": ("auto/50",)},
                         trials=4, samples=5, warmup_samples=1, warmup_trials=0,
                         timeout_s=60),
        # As it was: about a second a trial here, the cheapest room per case. A fixed count:
        # at the long durations every tracer is level with the baseline and its CI reaches
        # the threshold and the 1% level, so sequential allocation would only add trials
        # there. trial_s: the mean trial of the run of 2026-11-25 on this 2-vCPU VM (load 7).
        "default": Profile("default", {"duration_us": tuple(SEED_CALLS), "calls": ("auto/10",)},
                           trials=5, samples=10, warmup_samples=1, warmup_trials=0,
                           timeout_s=120, trial_s=0.95),
        "full": Profile("full", {"duration_us": tuple(SEED_CALLS), "calls": ("auto",)},
                        trials=10, samples=20, warmup_samples=1, warmup_trials=1,
                        timeout_s=300),
    },
    program=PROGRAM,
    skip_case=_skip_case,
    check_case=_not_for_ever,
    session=_lttng_session_daemon,
    sweep=_sweep,
    plan_trial=_plan_trial,
    crossover_ratios=(1.05, 1.01),
    fits=(
        Fit("per_call_ns", "duration_us", "per-call overhead = a + b x duration: a is the "
            "tracer's cost per call, b ~ 0 says it does not grow with the work traced"),
    ),
    commands={"tracing-scenarios": _scenarios_command},
    # The seed's resource chart: what the tracer itself costs, beside the app's figures.
    counters=(
        Metric("tracer_cpu_ms", "ms", "CPU time of the tracer during the trial (LTTng's "
               "session and consumer daemons, the eBPF consumer, bpftrace)"),
        Metric("tracer_rss_kib", "KiB", "peak RSS of the tracer (for LTTng: session + "
               "consumer daemons)"),
        Metric("trace_bytes", "B", "trace written to disk (deleted once counted)"),
        Metric("events_dropped", "events", "events the tracer lost (a trial fails unless "
               "captured + dropped = expected)"),
    ),
)
