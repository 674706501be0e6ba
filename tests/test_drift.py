"""Run-to-run drift (bakeoff/stats/drift.py, compare, selftest), verdicts across hosts, a cmd
trial's timeout ending its case, and the CPU-shared warning.

The statistics are checked by simulation against their nominal coverage (seeded, many
draws); compare, selftest, the timeout and the warning by real `bakeoff cmd` runs of tiny
commands (seconds each), asserting on counts and invariants, not on timings.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import math
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from bakeoff.analysis.across_hosts import (
    CANT_TELL,
    DIFFERS,
    HOLDS,
    HostRun,
    across_verdict,
    same_machine_pairs,
    shared_hardware_warnings,
)
from bakeoff.analysis.within_run import BaselineComparison, CaseResult
from bakeoff.declare.model import Case, RunRecord
from bakeoff.machine import cpus
from bakeoff.report.across_hosts_findings import NO_WINNER, HostWinner, winners_separate
from bakeoff.report.grid import Point
from bakeoff.stats import drift
from bakeoff.stats import estimates as stats
from bakeoff.store import results as store
from conftest import run_bakeoff

# ---- the statistics, by simulation -------------------------------------------------------


@pytest.mark.slow(live=False)
def test_widened_ci_covers_at_its_nominal_rate() -> None:
    """A/A pairs of runs with a run-level drift of sigma and within-run noise se: the CI
    widened by a sigma *estimated* from 8 other pairs covers 1 about 95% of the time (the t
    quantile on the spread's pairs pays for the estimate); the within-run CI alone does not."""
    rng = np.random.default_rng(24)
    sigma, se, k, draws = 0.08, 0.01, 8, 3000
    covered = raw_covered = 0
    for _ in range(draws):
        # k pairs to estimate the spread from, then the pair judged.
        d = rng.normal(0, math.sqrt(2 * sigma**2 + 2 * se**2), k)
        est = drift.estimate_sigma(list(d), [2 * se**2] * k)
        spread = drift.Drift(est, k, "h", "now", "simulated")
        judged = rng.normal(0, math.sqrt(2 * sigma**2 + 2 * se**2))
        lo, hi, _ = drift.widened(math.exp(judged), math.sqrt(2) * se, spread)
        covered += lo <= 1 <= hi
        z = 1.959964 * math.sqrt(2) * se
        raw_covered += abs(judged) <= z
    rate = covered / draws
    # 3000 draws: the binomial SE of a 95% rate is 0.4%; 0.93-0.98 allows the t
    # approximation's own slack.
    assert 0.93 <= rate <= 0.98, rate
    assert raw_covered / draws < 0.5, raw_covered / draws


@pytest.mark.slow(live=False)
def test_runs_as_unit_covers_at_its_nominal_rate() -> None:
    rng = np.random.default_rng(7)
    draws, covered = 4000, 0
    for _ in range(draws):
        old, new = rng.normal(0, 0.1, 2), rng.normal(0, 0.1, 2)
        _, lo, hi, p = drift.runs_as_unit(list(old), list(new))
        covered += lo <= 1 <= hi
        assert (p < 0.05) == (not lo <= 1 <= hi) or math.isclose(p, 0.05, abs_tol=1e-6)
    assert 0.935 <= covered / draws <= 0.965, covered / draws


def test_sigma_estimate_recovers_the_simulated_drift() -> None:
    rng = np.random.default_rng(3)
    sigma, se = 0.05, 0.02
    d = rng.normal(0, math.sqrt(2 * sigma**2 + 2 * se**2), 4000)
    est = drift.estimate_sigma(list(d), [2 * se**2] * len(d))
    assert abs(est - sigma) < 0.004, est
    # Drift smaller than the runs' own noise reads 0, never a negative or NaN.
    assert drift.estimate_sigma([0.001, -0.001], [0.01, 0.01]) == 0.0


def test_a_drift_is_kept_with_its_run_and_applies_to_its_own_cases(tmp_path: Path) -> None:
    """drift.json beside results.json: a damaged one is none; a drift applies only to the
    host, benchmark, metric and cases it was measured for; the latest of several wins."""
    assert drift.load_drifts(tmp_path) == []
    path = drift.drift_path(tmp_path)
    bad = {"version": 2, "drifts": [{"sigma": -1, "pairs": 3, "host_key": "h",
                                     "measured_at": "", "how": "", "benchmark": "cmd",
                                     "metric": "wall_time", "cases": []}]}
    for text in ("{", "[]", json.dumps(bad), json.dumps({"version": 1, "sigma": 0.1})):
        path.write_text(text)
        assert drift.load_drifts(tmp_path) == [], text
    old = drift.Drift(0.05, 3, "h", "2026-11-01T00:00:00Z", "how", "cmd", "wall_time",
                      ("cmd/a[]",))
    new = dataclasses.replace(old, sigma=0.07, measured_at="2026-11-02T00:00:00Z")
    drift.save_drift(tmp_path, old)
    drift.save_drift(tmp_path, new)  # the same benchmark, metric and host: replaced
    assert drift.load_drifts(tmp_path) == [new]
    other = dataclasses.replace(old, metric="user_time")
    drift.save_drift(tmp_path, other)
    kept = drift.load_drifts(tmp_path)
    host = {"hostname": "h"}
    assert drift.latest(kept, host, "cmd", "wall_time", "cmd/a[]") == new
    assert drift.latest(kept, host, "cmd", "user_time", "cmd/a[]") == other
    assert drift.latest(kept, host, "cmd", "wall_time", "cmd/b[]") is None  # another case
    assert drift.latest(kept, host, "room", "wall_time", "cmd/a[]") is None
    assert drift.latest(kept, {"hostname": "h", "machine_id": "m"}, "cmd", "wall_time",
                        "cmd/a[]") is None  # another host
    assert new.words() == "±7.0% a run (3 run pairs, measured 2026-11-02 00:00 UTC)"


def _rerun_record(ratio: float, rounds: int, drift_sd: float, noise_sd: float,
                  seed: int) -> RunRecord:
    """A `compare --rerun` run as the runner records it: "old work" and "new work" once a
    round, each round's machine a factor slower or faster (drift_sd, on log scale) for both,
    new `ratio` times old, each trial's own noise noise_sd."""
    from bakeoff.cmd import definition as adhoc
    from bakeoff.declare.model import Trial

    bench = adhoc.benchmark(adhoc.Definition((adhoc.Command("old work", "true"),
                                              adhoc.Command("new work", "false"))),
                            rounds, 3, 0, 0, 60.0)
    rng = np.random.default_rng(seed)
    cases = [Case(bench.name, v.name, ()) for v in bench.variants]
    trials = []
    for r in range(rounds):
        level = 0.05 * math.exp(rng.normal(0, drift_sd))
        for case, factor in zip(cases, (1.0, ratio), strict=True):
            values = list(level * factor * np.exp(rng.normal(0, noise_sd, 3)))
            trials.append(Trial(case, r, r, "ok", "2026-11-27T00:00:00Z", 0.2, 0,
                                {"wall_time": values}, {}, {}, None))
    return RunRecord(store.SCHEMA_VERSION, f"rerun-{seed}", "complete", "2026-11-27T00:00:00Z",
                     "2026-11-27T00:01:00Z", ["bakeoff"], "default", seed,
                     {"hostname": "h"}, [], {bench.name: bench.info()}, cases, [], trials)


def test_a_rerun_pairs_old_and_new_by_round() -> None:
    """compare --rerun's CI is its run's own, paired by round: a machine that moves by 30%
    from round to round (both sides alike) leaves a 10% change plain to see, where an
    unpaired interval over the same trials would hold 1."""
    from bakeoff.analysis.across_runs import compare_runs
    from bakeoff.cmd import rerun

    run = _rerun_record(1.10, 12, 0.3, 0.01, seed=5)
    old, new = rerun.split(run)
    [change] = compare_runs(old, new, 0.02, interleaved=True).changes
    assert change.basis == "interleaved" and change.verdict == "slower"
    assert change.regressed_beyond(0.05)

    def side(r: RunRecord) -> tuple[list[list[float]], list[int]]:
        return [t.samples["wall_time"] for t in r.trials], [t.round for t in r.trials]

    (o, o_rounds), (n, n_rounds) = side(old), side(new)
    paired = stats.ratio_ci(n, o, variant_rounds=n_rounds, baseline_rounds=o_rounds)
    assert (change.ratio.ci_low, change.ratio.ci_high) == (paired.ci_low, paired.ci_high)
    unpaired = stats.ratio_ci(n, o)
    assert unpaired.ci_low < 1 < unpaired.ci_high  # the drift, counted against the ratio
    # A/A under the same drift: the paired CI holds 1 and calls nothing.
    old, new = rerun.split(_rerun_record(1.0, 12, 0.3, 0.01, seed=6))
    [same] = compare_runs(old, new, 0.02, interleaved=True).changes
    assert same.ratio.ci_low <= 1 <= same.ratio.ci_high
    assert same.verdict in ("inconclusive", "equivalent")


# ---- verdicts across hosts ---------------------------------------------------------------


def _ratio(r: float, lo: float, hi: float) -> stats.Ratio:
    return stats.Ratio(r, lo, hi, math.nan)


def test_hosts_differ_only_where_their_cis_separate() -> None:
    apart = {"a": _ratio(1.0, 0.95, 1.05), "b": _ratio(1.4, 1.3, 1.5)}
    assert across_verdict(apart, 0.001, 0.02, []) == DIFFERS
    overlapping = {"a": _ratio(1.0, 0.8, 1.3), "b": _ratio(1.4, 1.2, 1.6)}
    assert across_verdict(overlapping, 0.001, 0.02, []) == HOLDS
    assert across_verdict(apart, 0.2, 0.02, []) == HOLDS  # not beyond doubt
    near = {"a": _ratio(1.0, 0.999, 1.001), "b": _ratio(1.01, 1.009, 1.011)}
    assert across_verdict(near, 0.001, 0.02, []) == HOLDS  # within the threshold


def test_too_few_trials_on_a_host_cannot_tell() -> None:
    apart = {"a": _ratio(1.0, 0.95, 1.05), "b": _ratio(1.4, 1.3, 1.5)}
    verdict = across_verdict(apart, 1e-9, 0.02, ["b"])
    assert verdict.startswith(CANT_TELL) and "fewer than 5 trials on b" in verdict


def test_hosts_that_are_one_machine_cannot_differ() -> None:
    """Apart beyond doubt, but the two furthest apart are one machine: not a difference of
    hosts; a third host that is another machine still can differ from them."""
    apart = {"a": _ratio(1.0, 0.95, 1.05), "b": _ratio(1.4, 1.3, 1.5)}
    one = frozenset({frozenset({"a", "b"})})
    verdict = across_verdict(apart, 1e-9, 0.02, [], one)
    assert verdict == f"{CANT_TELL} (b and a are one machine: not a difference of hosts)"
    three = {**apart, "c": _ratio(2.0, 1.9, 2.1)}
    assert across_verdict(three, 1e-9, 0.02, [], one) == DIFFERS
    assert across_verdict(apart, 1e-9, 0.02, [], frozenset({frozenset({"a", "c"})})) == DIFFERS
    same = {"boot_id": "b1", "machine_id": "m1"}
    hosts = [_host("x", same, "2026-11-30T00:00:00+00:00", "2026-11-30T00:01:00+00:00"),
             _host("y", {"boot_id": "b2", "machine_id": "m1"},
                   "2026-11-30T01:00:00+00:00", "2026-11-30T01:01:00+00:00"),
             _host("z", {"boot_id": "b3", "machine_id": "m3"},
                   "2026-11-30T02:00:00+00:00", "2026-11-30T02:01:00+00:00")]
    assert same_machine_pairs(hosts) == frozenset({frozenset({"x", "y"})})


def _host(label: str, host: dict[str, str], start: str, end: str) -> HostRun:
    run = RunRecord(store.SCHEMA_VERSION, label, "complete", start, end, ["bakeoff"], "quick",
                    1, host, [], {}, [], [], [])
    return HostRun(label, Path(label), run, None)  # type: ignore[arg-type]


def test_hosts_on_one_machine_or_at_one_time_are_warned_about() -> None:
    t = "2026-01-01T00:{:02d}:00+00:00".format
    one_boot = [_host("a", {"boot_id": "b1", "machine_id": "m1"}, t(0), t(10)),
                _host("b", {"boot_id": "b1", "machine_id": "m1"}, t(5), t(15))]
    [w] = shared_hardware_warnings(one_boot)
    assert "a and b are one machine (the same boot id" in w and "same time" in w
    apart_in_time = [_host("a", {"boot_id": "b1"}, t(0), t(10)),
                     _host("b", {"boot_id": "b2"}, t(11), t(20))]
    assert shared_hardware_warnings(apart_in_time) == []
    overlap = [_host("a", {"boot_id": "b1"}, t(0), t(10)),
               _host("b", {"boot_id": "b2"}, t(9), t(20))]
    [w] = shared_hardware_warnings(overlap)
    assert "ran at the same time" in w
    same_machine = [_host("a", {"machine_id": "m"}, t(0), t(1)),
                    _host("b", {"machine_id": "m"}, t(30), t(31))]
    [w] = shared_hardware_warnings(same_machine)
    assert "same machine id" in w and "run-to-run drift" in w


# ---- real runs -----------------------------------------------------------------------------


COUNTS = ("--trials", "3", "--runs", "2", "--warmup", "0", "--warmup-trials", "0")


def _cmd(out: Path, *args: str, env: dict[str, str] | None = None) -> None:
    res = run_bakeoff("cmd", "--out", str(out), "--quiet", *COUNTS, *args, env=env)
    assert res.returncode == 0, res.stdout + res.stderr


def test_compare_real_runs_drift_and_verdicts(executor: Path, tmp_path: Path) -> None:
    """Real `bakeoff cmd` runs, a command 5x slower in the new runs. One run a side and no
    drift measured for it: inconclusive, and --fail-on-regression exits 0 saying why and
    naming `compare --rerun` as the fix. Two runs a side: the runs are the unit, and the gate
    fails on it. The same command in both: the gate passes."""
    for name, cmd in (("old1", "sleep 0.01"), ("old2", "sleep 0.01"), ("new1", "sleep 0.05"),
                      ("new2", "sleep 0.05"), ("same1", "sleep 0.01"), ("same2", "sleep 0.01")):
        _cmd(tmp_path / name, "-n", "work", cmd)
    old1, old2, new1, new2, same1, same2 = (str(tmp_path / n) for n in
                                            ("old1", "old2", "new1", "new2", "same1", "same2"))
    res = run_bakeoff("compare", old1, new1, "--fail-on-regression", "10")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "inconclusive" in res.stdout and "not failed: 1 case(s)" in res.stderr
    assert "--rerun" in res.stderr and "selftest --of" in res.stderr
    assert "same" not in res.stdout.split("CIs:")[0]
    res = run_bakeoff("compare", old1, new1, "--old", old2, "--new", new2,
                      "--fail-on-regression", "10")
    assert res.returncode == 1, res.stdout + res.stderr
    assert "regression: cmd/work[]" in res.stderr and "2 old and 2 new runs" in res.stdout
    res = run_bakeoff("compare", old1, same1, "--old", old2, "--new", same2,
                      "--fail-on-regression", "300")
    assert res.returncode == 0, res.stdout + res.stderr
    # --rerun: both runs' commands measured again, interleaved in one run: a verdict. A 5x
    # change needs no ±3% (the default measured up to 400 rounds: 110 s under load).
    res = run_bakeoff("compare", old1, new1, "--rerun", "--out", str(tmp_path / "rerun"),
                      "--fail-on-regression", "10", "--target-ratio-ci", "20")
    assert res.returncode == 1, res.stdout + res.stderr
    assert "interleaved (--rerun)" in res.stdout and "regression: cmd/work[]" in res.stderr
    rerun = json.loads((tmp_path / "rerun" / "results.json").read_text())
    assert {t["case"]["variant"] for t in rerun["trials"]} == {"old work", "new work"}
    # cmd --compare is compare: one run a side, no spread, not failed.
    res = run_bakeoff("cmd", "--out", str(tmp_path / "again"), "--quiet", *COUNTS,
                      "--compare", old1, "--fail-on-regression", "10", "-n", "work",
                      "sleep 0.05")
    assert res.returncode == 0 and "not failed" in res.stderr, res.stdout + res.stderr


def _tally(out: str, head: str) -> tuple[int, int]:
    """(intervals, cases below resolution) of a selftest line that starts with head."""
    line = next(x for x in out.splitlines() if x.startswith(head))
    n = re.search(r"coverage \d+% \(\d+/(\d+)\)", line)
    below = re.search(r"; (\d+) case\(s\) below resolution", line)
    return (int(n.group(1)) if n else 0), (int(below.group(1)) if below else 0)


def test_selftest_measures_the_spread_and_records_nothing_in_home(executor: Path,
                                                                   tmp_path: Path) -> None:
    """A short selftest (3 runs of a tiny loop): its three lines of figures, each an n that
    is the count the runs give, and the spread printed but kept nowhere: no hidden state in
    the user's home for later comparisons to pick up."""
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    before = set(Path("/tmp").glob("bakeoff-selftest-*"))
    # Work of some milliseconds: far less, and the shell's subtracted start-up leaves 0 s.
    res = run_bakeoff("selftest", "--runs", "3", "--trials", "3", "--executions", "1",
                      "--sizes", "200000", env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    # 3 runs x 1 size: 3 within-run ratios (b vs a); 2 pairs x 2 cases across runs. On a
    # busy machine a case can read 0 once the shell's start-up is subtracted (CI, stop 39):
    # it is said as such, and counted, so that each line still accounts for every case.
    within = _tally(res.stdout, "within a run (A' against A): ")
    across = _tally(res.stdout, "across runs, one run a side, the run's own CI: ")
    assert within[0] + within[1] == 3 and within[0] >= 1, res.stdout
    assert across[0] + across[1] == 4 and across[0] >= 1, res.stdout
    assert "not recorded" in res.stdout
    assert not (tmp_path / "state").exists()
    assert set(Path("/tmp").glob("bakeoff-selftest-*")) <= before  # its runs are removed
    res = run_bakeoff("selftest", "--runs", "2")
    assert res.returncode == 2 and "--runs must be at least 3" in res.stderr


def test_selftest_of_a_run_keeps_its_drift_with_it_and_compare_prints_it(
        executor: Path, tmp_path: Path) -> None:
    """`selftest --of OLD` runs OLD's command again and records its drift in OLD/drift.json,
    dated, for that benchmark, metric and case; `compare OLD NEW` then widens by it, prints
    which drift it used (value, date, pairs) and calls a 5x slower command slower (sleeps:
    little moved by CPU load, so their drift is far below 5x)."""
    _cmd(tmp_path / "old", "-n", "work", "sleep 0.01")
    _cmd(tmp_path / "new", "-n", "work", "sleep 0.05")
    res = run_bakeoff("selftest", "--of", str(tmp_path / "old"), "--runs", "3")
    assert res.returncode == 0, res.stdout + res.stderr
    kept = {d.metric: d for d in drift.load_drifts(tmp_path / "old")}
    # the primary metric's, and cpu_time's from the same runs (the run recorded it)
    assert sorted(kept) == ["cpu_time", "wall_time"], kept
    found = kept["wall_time"]
    assert (found.benchmark, found.metric, found.cases) == ("cmd", "wall_time", ("cmd/work[]",))
    assert kept["cpu_time"].pairs == 3 and "drift of cmd cpu_time" in res.stderr
    assert found.pairs == 3 and found.sigma >= 0  # the run itself, then 3 runs: 3 pairs
    assert found.measured_at[:2] == "20" and "--of" in found.how
    res = run_bakeoff("compare", str(tmp_path / "old"), str(tmp_path / "new"),
                      "--fail-on-regression", "5")
    assert res.returncode == 1, res.stdout + res.stderr
    said = " ".join(res.stdout.split())
    assert f"drift measured for cmd wall_time on this host, {found.words()}" in said, said
    assert "1 cases: 0 faster, 1 slower, 0 equivalent, 0 inconclusive" in said, said
    res = run_bakeoff("selftest", "--of", str(tmp_path / "nowhere"), "--runs", "3")
    assert res.returncode == 2 and "no results.json" in res.stderr


def test_a_timed_out_trial_ends_its_case(executor: Path, tmp_path: Path) -> None:
    """A command that hangs times out once, and its other trials are not run (they would
    each cost the timeout again); the other command's trials all run."""
    res = run_bakeoff("cmd", "--out", str(tmp_path / "run"), "--quiet", "--trials", "4",
                      "--runs", "1", "--warmup", "0", "--warmup-trials", "0", "--timeout", "1",
                      "-n", "quick", "-n", "hang", "true", "sleep 60")
    assert res.returncode == 1, res.stdout + res.stderr  # a failed trial
    data = json.loads((tmp_path / "run" / "results.json").read_text())
    by_variant: dict[str, list[str]] = {}
    for t in data["trials"]:
        by_variant.setdefault(t["case"]["variant"], []).append(t["status"])
    assert by_variant == {"quick": ["ok"] * 4, "hang": ["timeout"]}, by_variant
    assert any("hang" in w and "timed out after 1 s; its other trials were not run" in w
               for w in data["warnings"]), data["warnings"]
    # Stopped at its timeout, not waited out: under 60 s however busy the machine (a bound on
    # the whole command's wall time, 55 s, was a quiet machine's: the other trials and the
    # start-up add to it under load).
    hang = [t for t in data["trials"] if t["case"]["variant"] == "hang"]
    assert hang[0]["wall_s"] < 60, hang


@contextlib.contextmanager
def _other_runs_claim(cpu_ids: list[int], wait_s: float = 900.0) -> Iterator[None]:
    """Hold the CPU claims of another run on `cpu_ids` (the same flocks a run takes), each
    held by this test itself: a claim a real run held instead could end before the run
    under test claims its CPUs (CI, 2026-11-29), so the test waits its turn, bounded."""
    fds = []
    try:
        for cpu in cpu_ids:
            path = cpus._lock_dir() / f"bakeoff-cpu{cpu}.lock"
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
            fds.append(fd)
            deadline = time.monotonic() + wait_s
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    assert time.monotonic() < deadline, f"CPU {cpu} stayed claimed {wait_s} s"
                    time.sleep(0.2)
        yield
    finally:
        for fd in fds:
            os.close(fd)


def test_a_run_whose_harness_cpu_another_run_measures_on_says_so(executor: Path,
                                                                  tmp_path: Path) -> None:
    """Another run measures on every CPU but the lowest: this run gets the lowest to itself,
    and its harness runs where the other run measures. The warning is in results.json and
    in the report. (If a real run holds the lowest CPU too, this run shares a CPU, which
    the older warning names.)"""
    online = sorted(os.sched_getaffinity(0))
    if len(online) < 2:
        pytest.fail("this test needs 2 CPUs or more (the harness and a measured CPU)")
    with _other_runs_claim(online[1:]):
        _cmd(tmp_path / "run", "true")
    data = json.loads((tmp_path / "run" / "results.json").read_text())
    said = [w for w in data["warnings"] if "another bakeoff run measures on CPU" in w
            or "every CPU is measuring for another bakeoff run" in w]
    assert said, data["warnings"]
    report = (tmp_path / "run" / "report.md").read_text()
    assert said[0][:60] in report.replace("\\", "")


def _result(variant: str, ratio: stats.Ratio | None, verdict: str = "inconclusive") -> CaseResult:
    comparison = (BaselineComparison(ratio, 0.01, stats.Shift(0, 0, 0), 0.0,
                                     verdict)  # type: ignore[arg-type]
                  if ratio is not None else None)
    return CaseResult(Case("b", variant, ()), "ns", "ns", None, comparison, 0, [])


def test_the_winner_differs_only_where_its_cis_separate() -> None:
    """One host calls x faster, the other calls it the same (no winner): with x's ratio
    CIs overlapping across the hosts that is not a different winner; apart, it is."""
    def winners(ratio_h2: stats.Ratio) -> tuple[dict[str, HostWinner], dict[str, Point]]:
        h1 = _result("x", _ratio(0.80, 0.75, 0.97), "faster")
        h2 = _result("x", ratio_h2, "inconclusive")
        base = _result("base", None)
        points = {"h1": Point((), (base, h1)), "h2": Point((), (base, h2))}
        return ({"h1": HostWinner("x", h1, base), "h2": HostWinner(NO_WINNER, h2, base)},
                points)

    assert not winners_separate(*winners(_ratio(0.95, 0.85, 1.05)))
    assert winners_separate(*winners(_ratio(1.00, 0.99, 1.01)))
