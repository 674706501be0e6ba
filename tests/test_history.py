"""bakeoff history end to end: sixteen real quick `bakeoff cmd` runs made in a temp dir, each of
a baseline command and a command that gets slower from the ninth run on, interleaved, recorded
with `bakeoff history add` into an SQLite file and into a PostgreSQL server; `bakeoff history`
lists them and the change of the slower command's per-round ratio to the baseline; `history
page` draws them in Chromium.

Sixteen, not ten: the change-point test is a permutation test at p <= 0.001
(bakeoff/history/changes.py), and a split of 5 runs against 5 can reach no p below
2 / C(10, 5) = 0.008; 8 against 8 can (2 / C(16, 8) = 0.00016)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from bakeoff.history.listing import DRIFT_NOTE
from bakeoff.history.store import open_history
from browser import Browser
from conftest import REPO, live_run_lock

pytestmark = pytest.mark.slow
# The fixtures history_url and postgres: each test on an SQLite file and on a PostgreSQL
# server of the module's own.
pytest_plugins = ["pg_server"]

RUNS = 16
# work: runs 0-7 sleep 100 ms a go, as base does in every run; runs 8-15 sleep 300 ms. Load adds
# about the same wait to both, so the ratio after the step reads lower on a busy machine
# (a wait of w ms makes x3 into (300 + w) / (100 + w)), never near x1. A step from a 1 ms
# base swung with the load far more than that and hid under it (docs/RELIABILITY.md, "The
# whole suite beside two CPU hogs"); from 20 ms to 60 ms, a load that changed between runs
# by a few ms of w moved the ratio by 5% and read as a second change (docs/RELIABILITY.md,
# "The suite's CPU, process by process"): at 100 ms a ms of w moves it a fifth as much. The
# sleeps cost the suite little: a sleeping worker leaves the CPUs to the others.
STEP_AT = 8
SLEEP_BEFORE, SLEEP_AFTER = "sleep 0.1", "sleep 0.3"
BASE = "base"
FIXTURE_RUN = REPO / "tests" / "fixtures" / "fleet_runs" / "a"  # another benchmark's real run


def _bakeoff(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bakeoff", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300, check=False, env=None)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    work = tmp_path_factory.mktemp("history-runs")
    out = []
    with live_run_lock("test_history.py"):
        for i in range(RUNS):
            command = SLEEP_BEFORE if i < STEP_AT else SLEEP_AFTER
            run_dir = work / f"run{i:02d}"
            res = _bakeoff("cmd", "-n", BASE, "-n", "work", "--trials", "3", "--runs", "3",
                           "--warmup-trials", "0", "-q", "--out", str(run_dir), SLEEP_BEFORE,
                           command, cwd=work)
            assert res.returncode == 0, res.stderr[-2000:]
            out.append(run_dir)
    return out


def _add(run_dirs: list[Path], history_url: str, *labels: str) -> str:
    args = [a for label in labels for a in ("--label", label)]
    res = _bakeoff("history", "add", *map(str, run_dirs), *args, "--history", history_url,
                   cwd=run_dirs[0].parent)
    assert res.returncode == 0, res.stderr
    return res.stdout


# Slow for its live runs (the `runs` fixture), on both backends: history_url's PostgreSQL
# param is marked slow(live=False) (it starts a server, no benchmark), and that mark, the
# closest, made the PostgreSQL case a unit of its own that takes no lock: in CI it made the
# sixteen runs again on another worker, after waiting 195 s for the lock it was not to need.
@pytest.mark.slow
def test_history_lists_the_runs_and_the_change(runs: list[Path], history_url: str) -> None:
    said = _add(runs[:STEP_AT], history_url, "commit=old")
    assert said.count(": recorded: ") == STEP_AT
    _add(runs[STEP_AT:], history_url, "commit=new", "machine=ci")
    again = _add(runs[:1], history_url, "reviewed=yes")  # one run twice: one record
    assert "already recorded" in again
    with open_history(history_url) as h:
        assert h.run_count() == RUNS
    res = _bakeoff("history", "--history", history_url, cwd=runs[0].parent)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    # work is listed as its ratio to base, round by round within each run: n is the rounds.
    head = next(i for i, ln in enumerate(lines) if ln.startswith("cmd/work wall_time on "))
    assert lines[head].endswith(f" / {BASE} (ratio to {BASE}, lower is better): {RUNS} runs")
    # Exactly one change: the step. The runs are made beside the rest of the suite, so load
    # preempts some trials (2x) and drifts whole runs; none of that may read as a change
    # (changes.py: a run's level is its median, the spread weighted by each run's error).
    block = lines[head:next((i for i in range(head + 1, len(lines)) if not lines[i]),
                            len(lines))]
    assert sum("level changed" in ln for ln in block) == 1, "\n".join(block)
    body = lines[head + 2: head + 2 + RUNS + 1]
    run_lines = [ln for ln in body if not ln.lstrip().startswith("──")]
    assert len(run_lines) == RUNS
    assert "commit=old reviewed=yes" in run_lines[0]
    assert all("commit=old" in ln for ln in run_lines[:STEP_AT])
    assert all("commit=new machine=ci" in ln for ln in run_lines[STEP_AT:])
    assert all(re.search(r"\s3$", ln) for ln in run_lines)  # n: three trials each
    # The change is listed just before the first slower run, with the labels either side.
    change = body[STEP_AT]
    assert change.lstrip().startswith("── level changed (worse):"), body
    assert "labels commit=old → commit=new machine=ci" in change
    # the change's ratio after/before, past the two levels (themselves ratios: ×0.98 [...])
    ratio = float(re.search(r"runs, ×(\d+\.\d+) \[", change).group(1))  # type: ignore[union-attr]
    assert ratio > 1.5  # 300 ms against 100 ms of sleep, and the process start around both
    level = re.search(r"changed \(worse\): ×(\d+\.?\d*) \[", change)
    assert level is not None, change
    before = float(level.group(1))
    assert 0.5 < before < 2  # before the step, work and base both sleep 100 ms
    assert sum("level changed" in ln for ln in lines[head:head + 2 + RUNS + 1]) == 1
    # base is its absolute time: listed, any change of it marked as the machine's drift too.
    base = next(i for i, ln in enumerate(lines) if ln.startswith(f"cmd/{BASE} wall_time on "))
    assert lines[base].endswith(f"(s, lower is better): {RUNS} runs")
    assert all(DRIFT_NOTE in ln for ln in lines[base:base + 2 + RUNS + 3] if "level changed" in ln)
    # Filters: a benchmark or machine that matches nothing lists nothing.
    none = _bakeoff("history", "--history", history_url, "--benchmark", "nope", cwd=runs[0].parent)
    assert none.returncode == 0 and "no series that match" in none.stdout


def test_page_draws_every_series_in_chromium(runs: list[Path], tmp_path: Path) -> None:
    history = str(tmp_path / "history.sqlite")
    _add(runs[:STEP_AT], history, "commit=old")
    _add(runs[STEP_AT:], history, "commit=new")
    _add([FIXTURE_RUN], history, "commit=other")
    page = tmp_path / "history.html"
    res = _bakeoff("history", "page", "--history", history, "--out", str(page), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    with open_history(history) as h:
        expected = len([s for s in h.series() if s.metric_order == 0])
    assert f"({expected} series)" in res.stdout and expected > 2
    browser = Browser(tmp_path / "profile")
    try:
        events = browser.open(page.as_uri(), size=(1300, 900))
        drawn = browser.eval("""(async () => {
          const charts = [...document.querySelectorAll('.plotly-chart')];
          for (let i = 0; i < 300 && charts.some(c => !c.querySelector('.main-svg')); i++)
            await new Promise(r => setTimeout(r, 50));
          const work = [...document.querySelectorAll('section.series')]
            .find(s => s.querySelector('h2').textContent.startsWith('cmd/work wall_time'));
          const chart = work.querySelector('.plotly-chart');
          return {charts: charts.length,
                  svgs: charts.filter(c => c.querySelector('.main-svg')).length,
                  points: chart.data[2].x.length,
                  markers: chart.querySelectorAll('.scatterlayer .point').length,
                  dashed: [...chart.querySelectorAll('.shapelayer path')]
                    .filter(p => (p.style.strokeDasharray || '') !== '').length,
                  note: [...chart.querySelectorAll('.annotation-text')].map(a => a.textContent),
                  changes: work.querySelectorAll('table.changes tr').length - 1,
                  title: work.querySelector('h2').textContent,
                  yaxis: chart.layout.yaxis.title.text};
        })()""")
        assert drawn["charts"] == drawn["svgs"] == expected
        assert drawn["title"].endswith(f" / {BASE}") and drawn["yaxis"] == f"ratio to {BASE}"
        assert drawn["points"] == drawn["markers"] == RUNS
        assert drawn["dashed"] == 1 and drawn["changes"] == 1, drawn  # the step alone
        assert any("commit=old → commit=new" in n for n in drawn["note"]), drawn["note"]
        # Filter by benchmark: only cmd's series stay shown; then all again.
        shown = browser.eval("""(() => {
          const pick = v => { const s = document.getElementById('filter-benchmark');
            s.value = v; s.dispatchEvent(new Event('change')); };
          const visible = () => [...document.querySelectorAll('section.series')]
            .filter(s => !s.classList.contains('hidden')).map(s => s.dataset.benchmark);
          pick('cmd'); const cmd = visible();
          pick('mremap-vs-memcpy'); const other = visible();
          pick(''); const all = visible();
          return {cmd, other, all, count: document.getElementById('shown').textContent};
        })()""")
        assert shown["cmd"] == ["cmd", "cmd"]  # base and work
        assert shown["other"] and set(shown["other"]) == {"mremap-vs-memcpy"}
        assert len(shown["all"]) == expected and shown["count"] == str(expected)
        noisy = [e for e in events if e["method"] in (
            "Runtime.consoleAPICalled", "Runtime.exceptionThrown", "Log.entryAdded")]
        assert noisy == []
    finally:
        browser.close()


def test_a_run_given_history_records_itself_when_complete(tmp_path: Path) -> None:
    """`--history` is a run option (app/request.py): once the run and its reports are done,
    the run is in the history with its labels; a resumed run may be given it too."""
    history = tmp_path / "h.sqlite"
    run_dir = tmp_path / "run"
    with live_run_lock("test_history.py"):
        res = _bakeoff("cmd", "-n", BASE, "-n", "work", "--trials", "2", "--runs", "2",
                       "--warmup-trials", "0", "-q", "--out", str(run_dir), "--label",
                       "commit=abc123", "--history", str(history), "true", "sleep 0.001",
                       cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    said = re.search(r"^recorded in the history: (\d+) trials of (\d+) series$", res.stdout, re.M)
    assert said, res.stdout
    with open_history(str(history)) as h:
        assert h.run_count() == 1
        # A series per variant and metric: both variants, each of the run's metrics.
        assert len(h.series()) == int(said[2]) and {s.variant for s in h.series()} == {BASE, "work"}
    listing = _bakeoff("history", "--history", str(history), cwd=tmp_path)
    assert listing.returncode == 0, listing.stderr
    assert "commit=abc123" in listing.stdout, listing.stdout
    # Recording again (the same run) adds nothing; an empty --history is refused in one line.
    again = _bakeoff("history", "add", str(run_dir), "--history", str(history), cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    with open_history(str(history)) as h:
        assert h.run_count() == 1
    bad = _bakeoff("cmd", "--history", " ", "true", cwd=tmp_path)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    assert "--history names the history" in bad.stderr
