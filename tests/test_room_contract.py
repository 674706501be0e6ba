"""The room contract as the harness keeps it: rooms are packages (a spec imports its sibling
modules), a session's yielded state reaches prepare_trial, TrialPlan.failed fails a trial
with its reason and runs nothing; and the shared helpers rooms build on: the protocol's argv
(bakeoff.run.protocol.trial_argv), its program side in Python (bakeoff.room.program) and processes
(bakeoff.core.pids). Real runs of a fixture room (tests/fixtures/contract_rooms/prepared)."""

from __future__ import annotations

import io
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bakeoff.core import pids as procs
from bakeoff.declare import registry
from bakeoff.declare.model import Case, Profile
from bakeoff.room import program
from bakeoff.run.protocol import parse_output, trial_argv
from conftest import FIXTURES, run_bakeoff, saved_results

ROOMS = FIXTURES / "contract_rooms"
ENV = {"BAKEOFF_BENCHMARKS_DIR": str(ROOMS), "BAKEOFF_BUILD_DIR": str(FIXTURES / "build")}
PROGRAM = FIXTURES / "build" / "prepared" / "prepared.py"
REFUSAL = "the helper this trial needs refused to start (a reason, not a crash)"


# ---- a room is a package ---------------------------------------------------------------------


def test_a_spec_imports_its_siblings_and_is_imported_fresh(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BAKEOFF_BENCHMARKS_DIR", str(ROOMS))
    bench = registry.discover()["prepared"]
    assert sys.modules["bakeoff_benchmarks.prepared.spec"].BENCHMARK is bench
    assert sys.modules["bakeoff_benchmarks.prepared.helper"].REFUSAL == REFUSAL
    # Another folder with a room of the same name: its own modules, not the cached ones.
    copy = tmp_path / "prepared"
    shutil.copytree(ROOMS / "prepared", copy)
    helper = copy / "helper.py"
    helper.write_text(helper.read_text().replace("refused to start", "said no"))
    monkeypatch.setenv("BAKEOFF_BENCHMARKS_DIR", str(tmp_path))
    registry.discover()
    assert "said no" in sys.modules["bakeoff_benchmarks.prepared.helper"].REFUSAL


# ---- session state, prepare_trial, TrialPlan.failed: one real run -------------------------------


@pytest.fixture(scope="module")
def contract_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    out = tmp_path_factory.mktemp("contract") / "run"
    # No retakes: a contended trial measured again is prepared again, and the tests below
    # count the preparations of a run whose trials are all taken once.
    res = run_bakeoff("run", "prepared", "--profile", "quick", "--out", str(out),
                      "--seed", "3", "--retakes", "0", env=ENV)
    assert res.returncode == 1, res.stdout + res.stderr  # the refused trials failed
    assert "Traceback" not in res.stderr
    return saved_results(out)


@pytest.mark.slow
def test_a_failed_plan_is_a_failed_trial_that_never_ran(contract_run: dict[str, object]) -> None:
    trials = contract_run["trials"]
    assert isinstance(trials, list)
    refused = [t for t in trials if t["case"]["variant"] == "refused"]
    assert len(refused) == 4  # 2 values of n x 2 trials, warm-ups not recorded
    for t in refused:
        assert t["status"] == "failed" and t["error"] == REFUSAL
        assert t["exit_code"] is None and t["wall_s"] == 0.0 and t["rusage"] is None
        assert t["samples"] == {} and t["stderr_tail"] == ""


@pytest.mark.slow
def test_the_session_state_reaches_every_trial(contract_run: dict[str, object]) -> None:
    trials = contract_run["trials"]
    assert isinstance(trials, list)
    good = [t for t in trials if t["case"]["variant"] == "good"]
    assert len(good) == 4 and all(t["status"] == "ok" for t in good)
    tokens = {t["meta"]["token"] for t in good}
    assert len(tokens) == 1 and len(tokens.pop()) == 16  # one session, its token
    # One Ledger counted every prepared trial: the warm-up round's 2, then the measured 4.
    indexes = sorted(int(t["counters"]["prepared_index"]) for t in good)
    assert indexes == [3, 4, 5, 6]
    for t in good:
        n = int(t["case"]["params"]["n"])
        assert t["samples"]["ns_per_op"] == [100.0 * n + i for i in range(3)]


# ---- the protocol's argv, and its program side in Python -------------------------------------


@pytest.mark.slow(live=False)
def test_trial_argv_is_what_a_program_parses() -> None:
    case = Case("prepared", "good", (("n", 2),))
    profile = Profile("quick", {"n": (2,)}, trials=1, samples=4, warmup_samples=2)
    argv = trial_argv(PROGRAM, case, profile)
    assert argv == [str(PROGRAM), "--variant", "good", "--param", "n=2", "--samples", "4",
                    "--warmup", "2", "--counted-samples", "1"]
    assert trial_argv("p", case, profile, [("n", 7), ("extra", "x")])[3:7] == [
        "--param", "n=7", "--param", "extra=x"]
    res = subprocess.run([sys.executable, *argv], capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr
    out = parse_output(res.stdout)
    assert list(out.samples["ns_per_op"]) == [200.0, 201.0, 202.0, 203.0]


@pytest.mark.parametrize(("args", "message"), [
    ([], "error: missing --variant (one of: good, refused)"),
    (["--variant", "bad", "--param", "n=1"], "error: unknown variant 'bad' (known: good, "
     "refused)"),
    (["--variant", "good"], "error: missing --param n=VALUE (a whole number)"),
    (["--variant", "good", "--param", "n=x"], "error: --param n=x is not a whole number"),
    (["--variant", "good", "--param", "n=1", "--param", "n=2"], "error: --param n given "
     "twice (give each param once)"),
    (["--variant", "good", "--param", "m=1"], "error: unknown param 'm' in --param m=1 "
     "(known: n)"),
    (["--variant=good", "--param=n=1", "--samples", "0"], "error: --samples 0 is not a whole "
     "number >= 1 (e.g. --samples 10)"),
    (["--variant", "good", "--param", "n=1", "--frob"], "error: unknown option '--frob' "
     "(known: --variant, --param, --samples, --warmup, --counted-samples, --profile-repeat, "
     "--help)"),
    (["--variant", "good", "stray"], "error: unexpected argument 'stray' (see --help)"),
])
@pytest.mark.slow(live=False)
def test_bad_arguments_are_one_line_and_exit_2(args: list[str], message: str) -> None:
    res = subprocess.run([sys.executable, str(PROGRAM), *args], capture_output=True,
                         text=True, check=False)
    assert res.returncode == program.EXIT_USAGE
    assert res.stderr == f"prepared: {message}\n" and res.stdout == ""


@pytest.mark.slow(live=False)
def test_help_lists_the_table_and_exits_0() -> None:
    res = subprocess.run([sys.executable, str(PROGRAM), "--variant", "nope", "--help"],
                         capture_output=True, text=True, check=False)
    assert res.returncode == 0 and res.stderr == ""
    assert res.stdout.startswith("usage: prepared --variant V")
    assert "  good " in res.stdout and "  n " in res.stdout and "(required)" in res.stdout


def test_output_lines_parse_back_and_refuse_what_is_not_a_measurement() -> None:
    buf = io.StringIO()
    out = program.Output(buf)
    out.meta(variant="good", batch=3)
    out.sample("ns_per_op", 7084.0)
    out.counter("events_lost", 0)
    parsed = parse_output(buf.getvalue())
    assert parsed.meta == {"variant": "good", "batch": 3}
    assert list(parsed.samples["ns_per_op"]) == [7084.0]
    assert parsed.counters == {"events_lost": 0.0}
    with pytest.raises(program.Failure, match="not a measurement"):
        out.sample("ns_per_op", float("nan"))


# ---- processes ----------------------------------------------------------------------------------


@pytest.mark.slow(live=False)
def test_a_zombie_is_not_alive() -> None:
    child = subprocess.Popen(["true"])
    deadline = time.monotonic() + 10
    while procs.live_name(child.pid) and time.monotonic() < deadline:
        time.sleep(0.01)  # exited but not reaped: a zombie still in the process table
    assert not procs.alive(child.pid) and procs.live_name(child.pid) == ""
    child.wait()
    assert not procs.alive(child.pid) and not procs.alive(0)


@pytest.mark.slow(live=False)
def test_stop_kills_what_outlives_its_grace_and_says_so() -> None:
    stubborn = subprocess.Popen([sys.executable, "-c", "import signal, time; "
                                 "signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                                 "print('ready', flush=True); time.sleep(60)"],
                                stdout=subprocess.PIPE)
    polite = subprocess.Popen(["sleep", "60"])
    try:
        assert stubborn.stdout is not None and stubborn.stdout.readline() == b"ready\n"
        started = time.monotonic()
        done = procs.stop([stubborn.pid, polite.pid], grace_s=0.5)
        # Not waited out: both would sleep 60 s (a bound of 10 s held only on a quiet machine).
        assert time.monotonic() - started < 60
        assert done.signalled == [stubborn.pid, polite.pid] and done.killed == [stubborn.pid]
        assert done.how(stubborn.pid) == "SIGKILL: it outlived the 0.5 s grace"
        assert done.how(polite.pid) == ""
        assert stubborn.wait(5) == -signal.SIGKILL and polite.wait(5) == -signal.SIGTERM
    finally:
        for p in (stubborn, polite):
            p.kill()
            p.wait()
