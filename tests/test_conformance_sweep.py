"""The last check of the room contract (tests/test_conformance.py): after a clean quick
run of every room, neither the room's sweep nor the harness's finds anything left.

A module of its own because a sweep removes dead runs' things machine-wide: it holds the
suite lock exclusively (MACHINE_WIDE), for seconds, while the shared quick run it reads is
made under the ordinary shared lock by whichever module of the group needs it first.
"""

from __future__ import annotations

from typing import Any

import pytest

from test_conformance import ROOMS, check_nothing_to_sweep, quick_run  # noqa: F401

MACHINE_WIDE = True


@pytest.mark.parametrize("room", list(ROOMS))
def test_nothing_is_left_to_sweep_after_a_clean_run(room: str, quick_run: dict[str, Any]) -> None:  # noqa: F811
    check_nothing_to_sweep(ROOMS[room], quick_run)
