"""A room whose spec.py does not load is one line naming it; the other rooms, and the commands
that need no room (report, compare), work as before (bakeoff/declare/registry.py load_rooms,
bakeoff/cli/rooms.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bakeoff.core.errors import UsageError
from bakeoff.declare import registry
from conftest import FIXTURES, run_bakeoff

RUNS = FIXTURES / "fleet_runs"  # two recorded runs of mremap-vs-memcpy
BROKEN_SPEC = "import bakeoff_room_helper_that_is_not_there  # the room's own mistake\n"


def _rooms_with_a_broken_one(tmp: Path, others: bool = True) -> Path:
    """A benchmarks directory: the fixture rooms (others=True) and broken/, whose spec fails
    to import."""
    rooms = tmp / "rooms"
    rooms.mkdir()
    if others:
        for room in (FIXTURES / "rooms").iterdir():
            (rooms / room.name).symlink_to(room, target_is_directory=True)
    (rooms / "broken").mkdir()
    (rooms / "broken" / "spec.py").write_text(BROKEN_SPEC)
    return rooms


def _broken_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "broken" in line]


def test_load_rooms_sets_a_broken_room_aside(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BAKEOFF_BENCHMARKS_DIR", str(_rooms_with_a_broken_one(tmp_path)))
    rooms = registry.load_rooms()
    assert "order" in rooms.benchmarks and rooms.folders["order"] == "order"
    assert [b.folder for b in rooms.broken] == ["broken"]
    assert "ModuleNotFoundError" in rooms.broken[0].problem
    assert "bakeoff_room_helper_that_is_not_there" in rooms.broken[0].line()
    with pytest.raises(ModuleNotFoundError):  # tests and scripts still see it fail loudly
        registry.discover()


@pytest.mark.slow(live=False)
def test_list_and_help_name_a_broken_room_in_one_line(tmp_path: Path) -> None:
    env = {"BAKEOFF_BENCHMARKS_DIR": str(_rooms_with_a_broken_one(tmp_path))}
    for args in (("list",), ("--help",), ("doctor", "--cleanup")):
        res = run_bakeoff(*args, env=env)
        assert res.returncode == 0, (args, res.stdout, res.stderr)
        assert "Traceback" not in res.stderr, args
        (line,) = _broken_lines(res.stderr)
        assert line.startswith("warning: room broken/ not loaded: ModuleNotFoundError"), line
    listed = run_bakeoff("list", env=env).stdout
    for room in ("order", "flaky", "affinity"):
        assert room in listed


def test_a_broken_room_named_to_run_is_named_in_the_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`bakeoff run broken` gets this message as its one line, exit 2 (UsageError); checked
    in process, since a `bakeoff run` subprocess counts as a live run for the suite."""
    monkeypatch.setenv("BAKEOFF_BENCHMARKS_DIR", str(_rooms_with_a_broken_one(tmp_path)))
    with pytest.raises(UsageError) as exc:
        registry.select(["broken"])
    message = str(exc.value)
    assert message.startswith("benchmark 'broken' not found (known: ")
    assert "room broken/ not loaded: ModuleNotFoundError" in message
    assert "\n" not in message
    assert [b.name for b in registry.select(["order"])] == ["order"]


@pytest.mark.slow(live=False)
def test_report_and_compare_load_no_room(tmp_path: Path) -> None:
    """With only a broken room in the tree, a recorded run's reports and a comparison work,
    and say nothing of the room: neither imports any spec."""
    env = {"BAKEOFF_BENCHMARKS_DIR": str(_rooms_with_a_broken_one(tmp_path, others=False))}
    runs = []
    for name in ("a", "b"):
        shutil.copytree(RUNS / name, tmp_path / name)
        runs.append(str(tmp_path / name))
    res = run_bakeoff("report", runs[0], "--quiet", env=env)
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "a" / "report.md").is_file()
    assert not _broken_lines(res.stderr), res.stderr
    res = run_bakeoff("compare", *runs, env=env)
    assert res.returncode == 0, res.stderr
    assert "cases differ beyond" in res.stdout
    assert not _broken_lines(res.stderr), res.stderr
