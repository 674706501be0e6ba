"""The HTML report in a real browser: it draws every chart, offline, with no console error."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import IN_CI

CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    # The machine has no network: without these Chromium retries its own connections.
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--enable-logging=stderr", "--v=0", "--virtual-time-budget=15000",
]


def _chromium() -> str:
    path = shutil.which("chromium")
    if path is None:
        if IN_CI:
            pytest.fail("chromium is not installed: make test installs it (debian-packages)")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return path


def _browse(report: Path, tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *extra,
         report.as_uri()],
        capture_output=True, text=True, timeout=180, check=False)


def test_every_chart_draws_without_console_errors(mremap_quick_run: Path, tmp_path: Path) -> None:
    report = mremap_quick_run / "report.html"
    res = _browse(report, tmp_path, "--dump-dom")
    assert res.returncode == 0, res.stderr[-2000:]
    # Chromium logs every console message (log, warning, error, uncaught exception) as
    # CONSOLE: the report has no reason to say anything, so any line is a failure.
    console = [ln for ln in res.stderr.splitlines() if ":CONSOLE" in ln]
    assert console == [], console
    dom = res.stdout
    ids = re.findall(r'<div class="chart[^"]*" id="(chart-\d+)"', dom)
    assert len(ids) >= 4  # metric, ratio, distribution, resources at least
    pieces = re.split(r'<div class="chart[^"]*" id="chart-\d+"', dom)[1:]
    for chart_id, piece in zip(ids, pieces, strict=True):
        assert 'class="main-svg"' in piece, f"{chart_id} drew no plot"
        points = len(re.findall(r'class="point"', piece))
        assert points > 0, f"{chart_id} drew no data points"
    # The modebar (zoom, PNG download) is there: plotly's interactivity loaded; and no button
    # offers to upload the chart anywhere.
    assert 'data-title="Download plot as a PNG"' in dom and 'data-title="Zoom"' in dom
    assert "Share chart" not in re.sub(r"<script.*?</script>", "", dom, flags=re.S)


def test_screenshot_for_people(mremap_quick_run: Path, tmp_path: Path) -> None:
    shot = tmp_path / "report.png"
    res = _browse(mremap_quick_run / "report.html", tmp_path, "--window-size=1300,4000",
                  f"--screenshot={shot}")
    assert res.returncode == 0, res.stderr[-2000:]
    assert shot.stat().st_size > 50_000  # a page of charts, not a blank one
    print(f"screenshot: {shot}")
