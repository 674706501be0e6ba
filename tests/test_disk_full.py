"""A results directory on a full disk: a clear error, and no half-written results.json."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import IN_CI, REPO, assert_usage_error, run_bakeoff, saved_results, wait_for_trials

PAGE = os.sysconf("SC_PAGE_SIZE")


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 80 MiB tmpfs, mounted for the test and unmounted after."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=80m", "tmpfs", str(mnt)],
                         capture_output=True, text=True, check=False)
    if res.returncode != 0:
        if IN_CI:
            pytest.fail(f"cannot mount a tmpfs: {res.stderr.strip()}")
        pytest.skip(f"cannot mount a tmpfs here: {res.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _fill(disk: Path, leave_bytes: int) -> None:
    """Allocate all but leave_bytes of the disk's free space (to within a page).

    A run may be writing to the disk meanwhile, so the free space read can already be gone
    when the allocation happens (CI saw ENOSPC here): on ENOSPC, ask for half as much and
    go on until less than a page is left to take."""
    size = 0
    with (disk / "filler").open("wb") as f:
        want = shutil.disk_usage(disk).free - leave_bytes
        while want >= PAGE:
            try:
                os.posix_fallocate(f.fileno(), size, want)
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise
                want //= 2
                continue
            size += want
            want = shutil.disk_usage(disk).free - leave_bytes


def test_too_little_space_is_refused_before_measuring(built: Path, small_disk: Path) -> None:
    _fill(small_disk, 8 * 1024**2)
    out = small_disk / "run"
    assert_usage_error(run_bakeoff("run", "mremap-vs-memcpy", "--profile", "quick", "--out",
                                   str(out)), "MiB free")
    assert not (out / "results.json").exists()


def test_disk_filling_up_mid_run_keeps_the_last_good_results(built: Path,
                                                            small_disk: Path) -> None:
    out = small_disk / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "bakeoff", "run", "mremap-vs-memcpy", "--profile", "quick",
         "--trials", "30", "--out", str(out), "--quiet"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_trials(out, 3, timeout_s=60)
    _fill(small_disk, 0)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, err
    lines = err.strip().splitlines()
    assert "Traceback" not in err
    assert "No space left on device" in lines[-1] and "--resume" in lines[-1]
    # results.json is a whole file; with the journal it has every trial saved before.
    json.loads((out / "results.json").read_text())
    data = saved_results(out)
    assert len(data["trials"]) >= 3
    assert all(t["status"] == "ok" for t in data["trials"])
    assert not list(out.glob(".results.json.*.tmp"))
