"""A run with 10M samples: the harness's memory stays flat, the record small, the report opens.

The firehose fixture room times real clock reads and prints as many samples as asked for.
Two variants x 5 trials x 1M samples = 10M samples, against the same run with 2k samples
per trial: the harness's peak RSS must not grow with the samples (they stream to
samples.csv; the record keeps stats.SKETCH_POINTS quantiles of a bigger trial).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_report_browser import _browse

from bakeoff.stats import estimates as stats
from bakeoff.store import results as store
from conftest import FIXTURES, REPO

FIREHOSE_ENV = {"BAKEOFF_BENCHMARKS_DIR": str(FIXTURES / "rooms"),
                "BAKEOFF_BUILD_DIR": str(FIXTURES / "build")}
TRIALS = 5
VARIANTS = 2


def _run_measuring_rss(out: Path, samples: int) -> tuple[int, float, str]:
    """Exit status, peak RSS in MiB (the harness and everything it waited for), stderr."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "bakeoff", "run", "firehose", "--samples", str(samples),
         "--trials", str(TRIALS), "--out", str(out), "--quiet", "--seed", "1"],
        cwd=REPO, env={**os.environ, **FIREHOSE_ENV}, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read().decode()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_maxrss / 1024, err


def _lines(path: Path) -> int:
    with path.open("rb") as f:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 24), b""))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[int, tuple[Path, float]]:
    base = tmp_path_factory.mktemp("scale")
    out: dict[int, tuple[Path, float]] = {}
    for samples in (2_000, 1_000_000):
        run_dir = base / f"samples-{samples}"
        code, rss_mib, err = _run_measuring_rss(run_dir, samples)
        assert code == 0, err
        print(f"{VARIANTS * TRIALS * samples} samples: harness peak RSS {rss_mib:.1f} MiB")
        out[samples] = (run_dir, rss_mib)
    return out


@pytest.mark.slow
def test_ten_million_samples_are_all_kept_and_memory_stays_flat(
        runs: dict[int, tuple[Path, float]]) -> None:
    (small_dir, small_rss), (big_dir, big_rss) = runs[2_000], runs[1_000_000]
    total = VARIANTS * TRIALS * 1_000_000
    # Every sample is in samples.csv (plus the header).
    assert _lines(big_dir / store.SAMPLES_CSV) == total + 1
    run = store.load(big_dir)
    assert run.status == "complete" and len(run.trials) == VARIANTS * TRIALS
    for t in run.trials:
        assert t.ok and t.n_samples("ns_per_read") == 1_000_000
        assert len(t.samples["ns_per_read"]) == stats.SKETCH_POINTS
    # The small run's trials are kept whole.
    assert all(not t.sample_counts and len(t.samples["ns_per_read"]) == 2_000
               for t in store.load(small_dir).trials)
    # 100x the samples, the same memory: 10M Python floats alone would be ~300 MiB more.
    assert big_rss < small_rss + 40, (small_rss, big_rss)
    assert (big_dir / store.RESULTS_JSON).stat().st_size < 2_000_000
    md = (big_dir / "details.md").read_text()
    assert "| 5,000,000 / 5 |" in md, md[:3000]


@pytest.mark.slow
def test_the_ten_million_sample_report_opens(runs: dict[int, tuple[Path, float]],
                                             tmp_path: Path) -> None:
    big_dir = runs[1_000_000][0]
    res = _browse(big_dir / "report.html", tmp_path, "--dump-dom")
    assert res.returncode == 0, res.stderr[-2000:]
    assert [ln for ln in res.stderr.splitlines() if ":CONSOLE" in ln] == []
    assert res.stdout.count('class="main-svg"') >= 3
    assert "per-trial medians" in res.stdout
