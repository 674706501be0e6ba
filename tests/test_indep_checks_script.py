"""scripts/indep-checks: bad input is one line and exit 2, before anything runs; and the rule
it prints is conftest.agree's."""

from __future__ import annotations

import subprocess
import sys

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
