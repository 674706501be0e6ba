"""scripts/indep-checks: bad input is one line and exit 2, before anything runs; and the rule
it prints is conftest.agree's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO
from tests.indep_checks import Row

SCRIPT = REPO / "scripts" / "indep-checks"


@pytest.mark.slow(live=False)
def test_unknown_room_is_one_line_naming_the_rooms() -> None:
    res = subprocess.run([sys.executable, str(SCRIPT), "--rooms", "nope"], capture_output=True,
                         text=True, timeout=60, check=False)
    assert res.returncode == 2, res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert "unknown room 'nope'" in line and "tracing-overhead" in line, line
    assert "Traceback" not in res.stderr and not res.stdout


def test_a_row_agrees_by_the_issues_rule() -> None:
    """Within 15% agrees whatever the CIs; 20% apart with CIs apart does not; 20% apart with
    overlapping CIs does."""
    assert Row("r", "w", "ns", (100, 99, 101), (114, 113, 115)).agrees
    assert not Row("r", "w", "ns", (100, 99, 101), (120, 119, 121)).agrees
    assert Row("r", "w", "ns", (100, 80, 125), (120, 110, 130)).agrees


def test_the_force_row_says_both_sides_wake_up_rates(tmp_path: Path) -> None:
    """ebpf-force's row carries how often each side's records found the consumer asleep,
    the room's from its counted trials at duration_us=0 only, and says so where a side
    counted none."""
    from tests.indep_checks import _wakeups_note, room_wakeups_per_call

    (tmp_path / "counted.csv").write_text(
        "benchmark,variant,duration_us,calls,trial,name,value\n"
        "t,ebpf-force,0,auto/50,0,per_op.sched.sched_waking,0.41\n"
        "t,ebpf-force,0,auto/50,1,per_op.sched.sched_waking,0.25\n"
        "t,ebpf-force,100,auto/50,0,per_op.sched.sched_waking,0.9\n"
        "t,ebpf-batched,0,auto/50,0,per_op.sched.sched_waking,0.0\n"
        "t,ebpf-force,0,auto/50,0,counted.per_call_ns,18000\n")
    room = room_wakeups_per_call(tmp_path)
    assert room == [0.41, 0.25]
    note = _wakeups_note(room, [0.3, 0.43, 0.29])
    assert "room, counted trials 0.25–0.41 (n=2)" in note
    assert "independent, rounds 0.29–0.43 (n=3)" in note
    assert "independent, rounds not counted" in _wakeups_note(room, [])
    assert room_wakeups_per_call(tmp_path / "none") == []
