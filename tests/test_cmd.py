"""`bakeoff cmd`: bad input, a real run counted execution by execution, the shell's start-up
subtracted, the exports, --check-output, scans as params, --resume from results.json alone.
(The drift test against hyperfine is test_cmd_load_order.py: it loads the machine.)

Every run here is real: real processes, real timings; assertions are on measured figures and
on invariants (counts of executions), with margins wide enough for a shared 2-CPU VM.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from bakeoff.cmd import definition as adhoc
from bakeoff.declare.registry import question_problem
from bakeoff.stats import drift
from conftest import REPO, assert_usage_error, run_bakeoff, saved_results


def _cmd(out: Path, *args: str, timeout: float = 600,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_bakeoff("cmd", "--out", str(out), "--seed", "7", "--quiet", *args,
                       timeout=timeout, env=env)


def _ok(res: subprocess.CompletedProcess[str]) -> None:
    assert res.returncode == 0, res.stdout + res.stderr


# ---- bad input: one line, exit 2, nothing made --------------------------------------------

BAD = [
    (("",), "command 1 is empty"),
    (("   ",), "command 1 is empty"),
    (("nosuchcommand-bakeoff -x",), "'nosuchcommand-bakeoff' is not found on PATH"),
    (("nosuchcommand-bakeoff | cat",), "'nosuchcommand-bakeoff' is not found on PATH"),
    (("X=1 nosuchcommand-bakeoff",), "'nosuchcommand-bakeoff' is not found on PATH"),
    (("echo $((1+",), "the shell cannot parse it"),
    (("--setup", "if true; then", "true"), "--setup 'if true; then': the shell cannot parse"),
    (("-P", "n", "4", "1", "head -c {n} /dev/zero"), "the range is empty"),
    (("-P", "n", "1", "4", "-D", "0", "head -c {n} /dev/zero"), "the step must be above 0"),
    (("head -c {n} /dev/zero",), "{n} names no scan"),
    (("-L", "n", "1,,2", "head -c {n} /dev/zero"), "an empty value"),
    (("-P", "n", "1", "2", "true"), "scan n is used by no command"),
    (("true", "true"), "'true' is given twice"),
    (("-n", "a", "-n", "b", "true"), "2 --name for 1 command(s)"),
    (("--prepare", "", "true"), "--prepare is empty"),
    (("--fail-on-regression", "5", "true"), "--fail-on-regression goes with --compare"),
    (("--runs", "0", "true"), "--runs must be at least 1"),
    (("--target-ratio-ci", "0", "true", "false"), "--target-ratio-ci is a percentage above 0"),
    (("--max-trials", "5", "true"), "--max-trials goes with --target-ci"),
    (("--export-json", "/nonexistent-dir/x.json", "true"), "is not a directory"),
    ((), "no command given"),
]


@pytest.mark.slow  # `bakeoff cmd` in a subprocess, though refused before anything runs
@pytest.mark.parametrize(("args", "needle"), BAD, ids=[n for _, n in BAD])
def test_bad_input_is_one_line_and_exit_2_before_anything_runs(
        tmp_path: Path, args: tuple[str, ...], needle: str) -> None:
    out = tmp_path / "run"
    res = run_bakeoff("cmd", "--out", str(out), *args)
    assert_usage_error(res, needle)
    assert not out.exists()


# ---- the parts that need no run: shell detection, scans, substitution -----------------------


def test_shell_syntax_and_the_words_checked_on_path() -> None:
    assert not adhoc.needs_shell("cat /proc/self/stat")
    assert not adhoc.needs_shell("head -c {n}M /dev/zero")  # a placeholder is not syntax
    for text in ("a | b", "a > f", "echo $HOME", "ls *.c", "X=1 cmd", "a && b", "(a)"):
        assert adhoc.needs_shell(text), text
    # Only the program a line certainly starts with is looked up before the run: after any
    # assignments, a plain first word that is not a keyword nor a function being defined.
    assert adhoc._first_word("X=1 a 2>/dev/null | b >> log && c < in") == "a"
    for text in ("echo $((1+1))", "/bin/echo x", "a|b"):
        assert adhoc._first_word(text) == text.split(" ")[0].split("|")[0], text
    for text in ("f() { :; }; f", "if a; then b; fi", "(a)", "$CMD x", "'a b' c", "{ a; }"):
        assert adhoc._first_word(text) is None, text


def test_the_question_is_each_command_against_the_first() -> None:
    defn = adhoc.Definition((adhoc.Command("a", "true"), adhoc.Command("b", "false")),
                            (adhoc.range_scan("n", "1", "4", None),))
    bench = adhoc.benchmark(defn, 3, 3, 1, 0, 10.0)
    [q] = bench.questions
    assert (q.form, q.against, q.variants, q.metric) == ("ratio", "a", (), "wall_time")
    assert question_problem(bench, q) is None
    alone = adhoc.Definition((adhoc.Command("a", "true"),))
    assert adhoc.benchmark(alone, 3, 3, 1, 0, 10.0).questions == ()


def test_scans_parse_like_hyperfines() -> None:
    assert adhoc.range_scan("n", "1", "4", None) == adhoc.Scan("n", "int", (1, 2, 3, 4))
    assert adhoc.range_scan("x", "0", "1", "0.25") == adhoc.Scan(
        "x", "float", (0.0, 0.25, 0.5, 0.75, 1.0))
    assert adhoc.list_scan("k", "1,4,16") == adhoc.Scan("k", "int", (1, 4, 16))
    assert adhoc.list_scan("s", "a,b") == adhoc.Scan("s", "str", ("a", "b"))
    assert adhoc.substitute("head -c {n}K {{n}} {m}", {"n": 4}) == "head -c 4K {n} {m}"


# ---- a small real run: every execution counted --------------------------------------------


def test_each_trial_runs_the_command_k_times_and_counts_every_execution(
        executor: Path, tmp_path: Path) -> None:
    log = tmp_path / "executions.log"
    out = tmp_path / "run"
    trials, runs, warmup, warmup_trials = 3, 4, 2, 1
    res = _cmd(out, "--trials", str(trials), "--runs", str(runs), "--warmup", str(warmup),
               "--warmup-trials", str(warmup_trials),
               "--setup", f"echo setup >> {log}", "--prepare", f"echo prepare >> {log}",
               "--cleanup", f"echo cleanup >> {log}",
               # Every process counted: a retake (tests/test_contention.py) would add one.
               "--retakes", "0",
               "-n", "true", "-n", "cat", "true", "cat /proc/self/stat")
    _ok(res)
    doc = saved_results(out)
    assert doc["status"] == "complete"
    by_variant: dict[str, list[dict[str, Any]]] = {}
    for t in doc["trials"]:
        by_variant.setdefault(t["case"]["variant"], []).append(t)
    assert sorted(by_variant) == ["cat", "true"]
    for ts in by_variant.values():
        assert len(ts) == trials
        for t in ts:
            assert t["status"] == "ok"
            for metric in ("wall_time", "user_time", "sys_time", "cpu_time", "peak_rss"):
                assert len(t["samples"][metric]) == runs, (metric, t["samples"])
            assert t["samples"]["cpu_time"] == [
                pytest.approx(u + s, abs=1e-9)
                for u, s in zip(t["samples"]["user_time"], t["samples"]["sys_time"], strict=True)]
            assert all(v > 0 for v in t["samples"]["wall_time"])
            assert all(v > 0 for v in t["samples"]["peak_rss"])
            assert t["meta"]["executions"] == runs + warmup
            assert t["meta"]["shell"] == "none"
    lines = log.read_text().split()
    processes = 2 * (trials + warmup_trials)  # warm-up trials run too, and are discarded
    assert lines.count("setup") == processes
    assert lines.count("cleanup") == processes
    # --prepare before every execution: warm-ups, measured runs, and the counted one of each
    # command's first two trials (Profile.counted_trials)
    assert lines.count("prepare") == processes * (runs + warmup) + 2 * 2
    # The per-trial hooks bracket each trial's executions.
    assert lines[0] == "setup" and lines[-1] == "cleanup"
    # samples.csv has every sample of every metric.
    rows = [r for r in csv.DictReader((out / "samples.csv").open())
            if r["metric"] in ("wall_time", "user_time", "sys_time", "peak_rss")]
    assert len(rows) == 2 * trials * runs * 4
    # The reports were written, with findings that carry a CI.
    md = (out / "report.md").read_text()
    assert "95% CI" in md
    assert "## true vs cat (cmd)" in md and "| case | cat | trials |" in md


def test_a_counted_execution_counts_the_commands_whole_process_tree(
        executor: Path, tmp_path: Path) -> None:
    # The script is exec'd once (posix_spawnp; the kernel runs its #! line in the same
    # execve), then it runs /bin/true twice: 3 execve calls in three processes, all counted
    # through the inherited events; none of the measured runs' executions.
    script = tmp_path / "two-trues"
    script.write_text("#!/bin/sh\n/bin/true\n/bin/true\n")
    script.chmod(0o755)
    out = tmp_path / "run"
    env = {**os.environ, "BAKEOFF_TRACEPOINTS": "syscalls:sys_enter_execve"}
    res = run_bakeoff("cmd", "--out", str(out), "--seed", "7", "--quiet", "--trials", "2",
                      "--runs", "3", str(script), env=env)
    _ok(res)
    trials = saved_results(out)["trials"]
    assert len(trials) == 2
    for t in trials:
        assert t["meta"]["shell"] == "none"
        assert t["samples"]["per_op.syscalls.sys_enter_execve"] == [3.0]
        assert len(t["samples"]["wall_time"]) == 3  # the measured runs, uncounted
        assert len(t["samples"]["counted.wall_time"]) == 1
        # the shell and both children were on a CPU for some of the counted execution
        assert t["samples"]["per_op.task_clock_ns"][0] > 0
        assert t["samples"]["per_op.page_faults_minor"][0] > 0
        assert "task_clock_ns" in t["meta"]["counters"]


def test_a_failing_command_fails_its_trials_unless_ignore_failure(
        executor: Path, tmp_path: Path) -> None:
    res = _cmd(tmp_path / "a", "--trials", "2", "--runs", "2", "true", "false")
    assert res.returncode == 1, res.stdout + res.stderr
    doc = saved_results(tmp_path / "a")
    failed = [t for t in doc["trials"] if t["case"]["variant"] == "false"]
    assert failed and all(t["status"] == "failed" for t in failed)
    assert "exited with status 1" in failed[0]["error"]
    assert "--ignore-failure" in failed[0]["error"]

    res = _cmd(tmp_path / "b", "--trials", "2", "--runs", "3", "-i", "true", "false")
    _ok(res)
    doc = saved_results(tmp_path / "b")
    counted = [t["counters"]["failed_executions"] for t in doc["trials"]
               if t["case"]["variant"] == "false"]
    assert counted == [3.0, 3.0]  # warm-up executions are not counted, measured ones are


# ---- the shell ------------------------------------------------------------------------------


def test_the_shells_start_up_is_measured_and_subtracted(executor: Path, tmp_path: Path) -> None:
    """A shell that takes 0.2 s to start (it sleeps, then execs sh), so its start-up stands
    far above this VM's noise: `true`, a builtin, leaves almost nothing once the start-up is
    subtracted; `sleep 0.1` keeps its 0.1 s and loses the shell's 0.2 s."""
    slow_shell = tmp_path / "slowsh"
    slow_shell.write_text('#!/bin/sh\nsleep 0.2\nexec /bin/sh "$@"\n')
    slow_shell.chmod(0o755)
    out = tmp_path / "run"
    res = _cmd(out, "--shell", "--shell-program", str(slow_shell), "--trials", "3", "--runs",
               "3", "--warmup", "0", "--warmup-trials", "0", "true", "sleep 0.1")
    _ok(res)
    doc = saved_results(out)
    info = doc["benchmarks"]["cmd"]
    assert info["definition"]["shell"] == str(slow_shell)
    assert "shell's start-up" in info["summary"]  # said in the report
    assert "is subtracted from wall, user and sys time" in (out / "report.html").read_text()
    shell_walls, true_walls, sleep_walls = [], [], []
    for t in doc["trials"]:
        assert t["meta"]["shell"] == str(slow_shell)
        shell_walls.append(t["counters"]["shell_wall_time"])
        (true_walls if t["case"]["variant"] == "true" else sleep_walls).extend(
            t["samples"]["wall_time"])
    assert min(shell_walls) >= 0.2, shell_walls
    true_median = sorted(true_walls)[len(true_walls) // 2]
    sleep_median = sorted(sleep_walls)[len(sleep_walls) // 2]
    # Not subtracted, these would be at least 0.2 s and 0.3 s. What is subtracted is an
    # estimate of the start-up, not each run's own: a run whose shell started a little
    # quicker keeps a little under its 0.1 s (a CI run of 2026-11-26: 0.0998 s, the shell's
    # starts 0.2029-0.2062 s), so the floor allows the starts' spread and 5 ms more.
    assert true_median < 0.1, (true_median, shell_walls)
    floor = 0.1 - (max(shell_walls) - min(shell_walls)) - 0.005
    assert floor <= sleep_median < 0.2, (sleep_median, shell_walls)
    # `true` is work far below the start-up's spread: no figure of it is ever below 0, and
    # where it cannot be told from 0 the report says so and forms no ratio with it (sleep's
    # would be its figure over one that may be 0).
    _assert_below_resolution_said(out)


def _assert_below_resolution_said(out: Path) -> None:
    from bakeoff.analysis.within_run import analyze
    from bakeoff.store import results as store

    run = store.load(out)
    report = (out / "report.md").read_text()
    for ba in analyze(run).benchmarks:
        for metric in ("wall_time", "user_time", "sys_time"):
            for r in ba.for_metric(metric):
                assert r.summary is not None
                assert r.summary.median >= 0 and r.summary.ci_low >= 0, (metric, r)
                medians = [sorted(t.samples[metric])[len(t.samples[metric]) // 2]
                           for t in run.trials if t.case == r.case and t.ok]
                if 0 in medians or r.summary.ci_low == 0:
                    assert r.below_resolution == "the shell start-up", (metric, r)
                    assert r.vs_baseline is None
                if r.vs_baseline is not None:
                    assert r.vs_baseline.ci_low > 0, (metric, r.vs_baseline)
        walls = ba.for_metric("wall_time")
        if any(r.below_resolution for r in walls):
            assert "below the shell start-up's resolution: " in report
            assert not any(r.vs_baseline for r in walls)


def test_any_line_sh_takes_runs(executor: Path, tmp_path: Path) -> None:
    """Arithmetic, a function, a loop: lines whose words are not all programs run as
    `sh -c` runs them; one whose later program is missing fails its trials with the reason."""
    out = tmp_path / "run"
    _ok(_cmd(out, "--trials", "1", "--runs", "2", "--warmup-trials", "0",
             "echo $((1+1))", "f() { :; }; f", "for i in 1 2; do :; done"))
    assert {t["case"]["variant"] for t in saved_results(out)["trials"] if t["status"] == "ok"} \
        == {"echo $((1+1))", "f() { :; }; f", "for i in 1 2; do :; done"}
    res = _cmd(tmp_path / "missing", "--trials", "1", "--runs", "1", "--warmup-trials", "0",
               "echo a | nosuchcommand-bakeoff")
    said = " ".join((res.stdout + res.stderr).split())  # as one line, whatever the wrapping
    assert res.returncode == 1 and "127 (a program it names was not found)" in said, said


def test_shell_syntax_picks_the_shell_and_plain_commands_run_without(
        executor: Path, tmp_path: Path) -> None:
    res = _cmd(tmp_path / "a", "--trials", "1", "--runs", "1", "--warmup-trials", "0",
               "echo a | cat")
    _ok(res)
    assert saved_results(tmp_path / "a")["benchmarks"]["cmd"]["definition"]["shell"]
    res = _cmd(tmp_path / "b", "--trials", "1", "--runs", "1", "--warmup-trials", "0",
               "echo a")
    _ok(res)
    assert saved_results(tmp_path / "b")["benchmarks"]["cmd"]["definition"]["shell"] is None


# ---- exports --------------------------------------------------------------------------------


def test_exports_are_hyperfine_shaped_and_agree_with_the_samples(
        executor: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    paths = {k: tmp_path / f"export.{k}" for k in ("json", "md", "csv")}
    res = _cmd(out, "--trials", "3", "--runs", "4", "--export-json", str(paths["json"]),
               "--export-markdown", str(paths["md"]), "--export-csv", str(paths["csv"]),
               "-n", "status", "-n", "stat", "cat /proc/self/status", "cat /proc/self/stat")
    _ok(res)
    exported = json.loads(paths["json"].read_text())
    assert exported["unit"] == "s"
    results = {r["command"]: r for r in exported["results"]}
    assert sorted(results) == ["stat", "status"]
    samples: dict[str, list[float]] = {}
    for row in csv.DictReader((out / "samples.csv").open()):
        if row["metric"] == "wall_time":
            samples.setdefault(row["variant"], []).append(float(row["value"]))
    for name, r in results.items():
        assert len(r["times"]) == r["n"] == 12
        assert sorted(r["times"]) == pytest.approx(sorted(samples[name]))
        assert r["mean"] == pytest.approx(sum(samples[name]) / 12)
        # A t interval from 3 trials may reach past the samples seen (t(2) = 4.3): only the
        # order around the median holds, not the bootstrap's bound by the extremes.
        assert r["median_ci_low"] <= r["median"] <= r["median_ci_high"]
        assert r["min"] <= r["median"] <= r["max"]
        assert r["trials"] == 3
        assert set(r) >= {"command", "mean", "stddev", "median", "user", "system", "min", "max",
                          "times", "parameters", "relative"}
    assert results["status"]["relative"] == 1.0 and results["status"]["verdict"] == "baseline"
    stat = results["stat"]
    assert stat["relative_ci_low"] <= stat["relative"] <= stat["relative_ci_high"]
    # The ratio the report prints: the centre of its paired interval (stats.ratio_ci), which
    # lies near, not at, median / median.
    from bakeoff.analysis.within_run import analyze
    from bakeoff.store import results as store

    (bench,) = analyze(store.load(out)).benchmarks
    (row,) = [r for r in bench.for_metric("wall_time") if r.case.variant == "stat"]
    assert row.vs_baseline is not None
    assert stat["relative"] == pytest.approx(row.vs_baseline.ratio)

    rows = list(csv.DictReader(paths["csv"].open()))
    assert [r["command"] for r in rows] == [r["command"] for r in exported["results"]]
    assert float(rows[0]["mean"]) == pytest.approx(exported["results"][0]["mean"])

    md = paths["md"].read_text().splitlines()
    assert md[0].startswith("| Command | Median [")
    assert len(md) == 2 + 2  # header, rule, one row per command
    assert md[2].startswith("| `status` |") and "(baseline)" in md[2]


# ---- --check-output -------------------------------------------------------------------------


def test_check_output_catches_commands_that_print_different_output(
        executor: Path, tmp_path: Path) -> None:
    res = _cmd(tmp_path / "same", "--check-output", "--trials", "2", "--runs", "2",
               "echo hello", "printf 'hello\\n'")
    _ok(res)
    res = _cmd(tmp_path / "differ", "--check-output", "--trials", "2", "--runs", "2",
               "echo hello", "echo goodbye")
    assert res.returncode == 1, res.stdout + res.stderr
    assert "'echo goodbye' printed other output than 'echo hello'" in res.stderr
    doc = saved_results(tmp_path / "differ")
    assert any("printed other output" in w for w in doc["warnings"])
    hashes = {t["case"]["variant"]: t["meta"]["output_hash"] for t in doc["trials"]}
    assert hashes["echo hello"] != hashes["echo goodbye"]
    # A command whose own output changes from one execution to the next fails its trial.
    res = _cmd(tmp_path / "varies", "--check-output", "--trials", "1", "--runs", "3",
               "cat /proc/self/stat")
    assert res.returncode == 1
    trial = saved_results(tmp_path / "varies")["trials"][0]
    assert trial["status"] == "failed" and "output varies" in trial["error"]


# ---- scans ----------------------------------------------------------------------------------


def test_scans_become_params_with_fits_and_the_report_regenerates_from_disk(
        executor: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    res = _cmd(out, "--trials", "3", "--runs", "3", "-P", "n", "1", "3", "-L", "unit", "K,M",
               "-n", "zero", "-n", "urandom",
               "head -c {n}{unit} /dev/zero", "head -c {n}{unit} /dev/urandom")
    _ok(res)
    doc = saved_results(out)
    info = doc["benchmarks"]["cmd"]
    assert [(p["name"], p["kind"]) for p in info["params"]] == [("n", "int"), ("unit", "str")]
    assert info["fits"] == [{"metric": "wall_time", "param": "n",
                             "description": "wall time against the first command along n"}]
    # Its question: each command against the first, at both ends of the numeric scan; the
    # report opens with its answer.
    [question] = info["questions"]
    assert (question["form"], question["against"], question["at"]) == (
        "ratio", "zero", {"n": ["smallest", "largest"]})
    top = (out / "report.md").read_text().split("## Findings\n\n")[1].splitlines()[0]
    assert top.startswith("- **cmd**: At n=1") and "against zero: urandom" in top, top
    assert "n=3" in top and "95% CI" in top
    cases = {(c["variant"], c["params"]["n"], c["params"]["unit"]) for c in doc["cases"]}
    assert cases == {(v, n, u) for v in ("zero", "urandom") for n in (1, 2, 3) for u in "KM"}
    # Reading 3 MiB of urandom costs more than 1 KiB of it: the scan reached the command.
    wall: dict[tuple[str, int, str], list[float]] = {}
    for t in doc["trials"]:
        c = t["case"]
        wall.setdefault((c["variant"], c["params"]["n"], c["params"]["unit"]), []).extend(
            t["samples"]["wall_time"])
    def median(xs: list[float]) -> float:
        return sorted(xs)[len(xs) // 2]

    assert median(wall[("urandom", 3, "M")]) > 2 * median(wall[("urandom", 1, "K")]), wall
    # -L with numbers only is a numeric param, so crossovers and fits work along it.
    res = _cmd(tmp_path / "num", "--trials", "1", "--runs", "1", "--warmup-trials", "0",
               "-L", "k", "1,4,16", "head -c {k}K /dev/zero")
    _ok(res)
    params = saved_results(tmp_path / "num")["benchmarks"]["cmd"]["params"]
    assert params == [{"name": "k", "kind": "int", "unit": "", "description": "{k} in the commands"}]
    # One command alone: its own wall time is fitted along the scan, not a difference.
    assert "wall_time = a + b·k" in (tmp_path / "num" / "report.md").read_text()
    # The reports come back from results.json alone.
    for name in ("report.md", "report.html", "details.md"):
        (out / name).unlink()
    res = run_bakeoff("report", str(out))
    assert res.returncode == 0, res.stderr
    assert "urandom" in (out / "report.md").read_text()


# ---- --resume from results.json alone -------------------------------------------------------


def test_an_interrupted_run_resumes_from_its_recorded_definition(
        executor: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    log = tmp_path / "hooks.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "bakeoff", "cmd", "--out", str(out), "--seed", "3", "--quiet",
         "--trials", "30", "--runs", "2", "--setup", f"echo setup >> {log}",
         "--cleanup", f"echo cleanup >> {log}",
         "-n", "a", "-n", "b", "sleep 0.02", "sleep 0.03"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        journal = out / "trials.jsonl"
        # Trials recorded: the journal's lines but those of retaken attempts.
        while time.monotonic() < deadline and (
                not journal.exists() or sum('"retaken_because"' not in line for line in
                                            journal.read_text().splitlines()) < 4):
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    # The trial the signal stopped ran its --cleanup too.
    hooks = log.read_text().split()
    assert hooks.count("setup") == hooks.count("cleanup") > 0, hooks
    doc = saved_results(out)
    assert doc["status"] == "interrupted"
    before = len(doc["trials"])
    assert 4 <= before < 60
    res = run_bakeoff("cmd", "--resume", str(out), "--quiet")
    assert res.returncode == 0, res.stdout + res.stderr
    doc = saved_results(out)
    assert doc["status"] == "complete"
    assert len(doc["trials"]) == 60
    assert {t["case"]["variant"] for t in doc["trials"]} == {"a", "b"}


# ---- --compare and --fail-on-regression -----------------------------------------------------


def test_compare_with_an_earlier_run_fails_on_a_regression(executor: Path, tmp_path: Path) -> None:
    """The same name, a command five times slower: `--compare OLD --fail-on-regression 10`
    with one run a side and no drift measured is inconclusive and does not fail; with the
    command's drift kept with the old run (as `bakeoff selftest --of` does) it fails;
    compared with its equal, it passes."""
    counts = ("--trials", "3", "--runs", "2", "--warmup", "0", "--warmup-trials", "0")
    _ok(_cmd(tmp_path / "old", *counts, "-n", "work", "sleep 0.01"))
    res = _cmd(tmp_path / "untold", *counts, "--compare", str(tmp_path / "old"),
               "--fail-on-regression", "10", "-n", "work", "sleep 0.05")
    _ok(res)
    assert "not failed: 1 case(s)" in res.stderr and "selftest --of" in res.stderr
    drift.save_drift(tmp_path / "old", drift.Drift(0.05, 10, drift.host_key(
        saved_results(tmp_path / "old")["host"]), "2026-01-01", "test", "cmd", "wall_time",
        ("cmd/work[]",)))
    env: dict[str, str] = {}
    res = _cmd(tmp_path / "new", *counts, "--compare", str(tmp_path / "old"),
               "--fail-on-regression", "10", "-n", "work", "sleep 0.05", env=env)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "regression: cmd/work[]" in res.stderr
    res = _cmd(tmp_path / "same", *counts, "--compare", str(tmp_path / "old"),
               "--fail-on-regression", "300", "-n", "work", "sleep 0.01", env=env)
    _ok(res)


# ---- --target-ratio-ci -----------------------------------------------------------------------


def test_target_ratio_ci_adds_rounds_up_to_the_cap(executor: Path, tmp_path: Path) -> None:
    """An impossible target on the ratio: both commands run to --max-trials, in rounds (each
    round has a trial of each), and the report says which cases hit the cap and why."""
    out = tmp_path / "run"
    _ok(_cmd(out, "--trials", "2", "--runs", "1", "--warmup", "0", "--warmup-trials", "0",
             "--target-ratio-ci", "0.0001", "--max-trials", "4", "-n", "a", "-n", "b",
             "true", "sleep 0"))
    data = saved_results(out)
    rounds: dict[str, list[int]] = {}
    for t in data["trials"]:
        rounds.setdefault(t["case"]["variant"], []).append(t["round"])
    assert {v: sorted(r) for v, r in rounds.items()} == {"a": [0, 1, 2, 3], "b": [0, 1, 2, 3]}
    assert data["settings"]["target_ratio_ci"] == pytest.approx(1e-6)
    assert len(data["capped"]) == 2
    assert "2 case(s) hit the cap before its ratio's CI was within ±0.0001%" in (
        out / "report.md").read_text()
