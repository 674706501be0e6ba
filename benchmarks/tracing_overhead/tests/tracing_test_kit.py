"""What tracing-overhead's two test modules share: the built programs, and the reason (if any)
this machine cannot trace. A module of its own: test modules do not import each other."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import IN_CI, REPO

ROOM = REPO / "build" / "tracing_overhead"
DRIVER = ROOM / "tracing_trial"


def _machine_can_trace() -> str | None:
    if os.geteuid() != 0:
        return "needs root (uprobes, BPF, the root LTTng session daemon)"
    for tool in ("lttng", "lttng-sessiond", "babeltrace2", "bpftrace", "bpftool"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    return None


def skip_unless_tracing() -> None:
    """Skip the calling module where this machine cannot trace; in CI this machine kind has
    all of it, so a skip there would hide a failure."""
    why_not = _machine_can_trace()
    if why_not and not IN_CI:
        pytest.skip(why_not, allow_module_level=True)


@pytest.fixture(scope="module")
def room() -> Path:
    """The room's programs, built by make (make test builds them first)."""
    if not DRIVER.exists() or not (ROOM / "bakeoff_tracer").exists():
        subprocess.run(["make", "-C", str(REPO / "benchmarks" / "tracing_overhead")], check=True)
    return ROOM
