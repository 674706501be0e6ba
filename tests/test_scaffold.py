"""`bakeoff new ROOM`: the skeleton builds with `make -C benchmarks`, passes every check of the
conformance test and runs `bakeoff run ROOM --profile quick` unchanged; bad names exit 2.

Generated into a temporary benchmarks folder (BAKEOFF_BENCHMARKS_DIR, BAKEOFF_BUILD_DIR)
beside the repository's common/ build rules, so the repository's rooms are not touched.
"""

from __future__ import annotations

import statistics
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from test_doc_figures import check_document
from test_findings import report_md_budget

from bakeoff.analysis.within_run import analyze
from bakeoff.declare import registry
from bakeoff.declare.model import Benchmark
from bakeoff.report.findings import all_findings
from bakeoff.store import results as store
from conftest import REPO, assert_usage_error, run_bakeoff, saved_results
from test_conformance import (
    check_bad_arguments,
    check_nothing_to_sweep,
    check_quick_run,
    check_usage,
)

# The conformance checks sweep dead runs' things machine-wide (see test_conformance.py).
MACHINE_WIDE = True
NAME = "ipc-ping-pong"
FILES = {"spec.py", "ipc_ping_pong_bench.c", "Makefile", "METHOD.md", "debian-packages"}


@dataclass(frozen=True)
class NewRoom:
    rooms: Path
    build: Path
    env: dict[str, str]
    new: subprocess.CompletedProcess[str]


def _benchmarks_folder(root: Path) -> Path:
    """A benchmarks folder with no room, whose Makefile and common/ are the repository's."""
    rooms = root / "benchmarks"
    rooms.mkdir()
    (rooms / "common").symlink_to(REPO / "benchmarks" / "common")
    (rooms / "Makefile").symlink_to(REPO / "benchmarks" / "Makefile")
    return rooms


@pytest.fixture(scope="module")
def new_room(tmp_path_factory: pytest.TempPathFactory) -> NewRoom:
    root = tmp_path_factory.mktemp("scaffold")
    rooms, build = _benchmarks_folder(root), root / "build"
    env = {"BAKEOFF_BENCHMARKS_DIR": str(rooms), "BAKEOFF_BUILD_DIR": str(build)}
    return NewRoom(rooms, build, env, run_bakeoff("new", NAME, env=env))


@pytest.fixture(scope="module")
def built_room(new_room: NewRoom) -> NewRoom:
    make = subprocess.run(["make", "-C", str(new_room.rooms), f"BUILD={new_room.build}"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert make.returncode == 0, make.stdout + make.stderr
    return new_room


@pytest.fixture(scope="module")
def bench(new_room: NewRoom) -> Iterator[Benchmark]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BAKEOFF_BENCHMARKS_DIR", str(new_room.rooms))
        yield registry.discover()[NAME]


@pytest.fixture(scope="module")
def quick_run_dir(built_room: NewRoom, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("scaffold-run") / "run"
    res = run_bakeoff("run", NAME, "--profile", "quick", "--out", str(out), "--seed", "3",
                      env=built_room.env)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def quick_run(quick_run_dir: Path) -> dict[str, Any]:
    return saved_results(quick_run_dir)


@pytest.mark.slow(live=False)
def test_new_writes_the_room(new_room: NewRoom) -> None:
    assert new_room.new.returncode == 0, new_room.new.stderr
    room = new_room.rooms / "ipc_ping_pong"
    assert {p.name for p in room.iterdir()} == FILES
    assert not list(new_room.rooms.glob(".bakeoff-new-*")), "the staging folder was left"
    for f in room.iterdir():
        assert "{{" not in f.read_text(), f"{f.name} keeps a template placeholder"
    assert f"wrote {room}/" in new_room.new.stdout


@pytest.mark.slow(live=False)
def test_the_skeleton_declares_a_question(new_room: NewRoom, bench: Benchmark) -> None:
    """A question the registry accepts, stated in METHOD.md, that the skeleton's quick run
    can answer (the test below reads the answer in its report)."""
    [question] = bench.questions
    assert registry.question_problem(bench, question) is None
    method = (new_room.rooms / "ipc_ping_pong" / "METHOD.md").read_text()
    assert question.ask in method.split("## Questions", 1)[1].split("\n## ", 1)[0]


@pytest.mark.slow(live=False)
def test_the_skeletons_method_passes_the_figures_check(new_room: NewRoom) -> None:
    """METHOD.md as `bakeoff new` writes it keeps the convention test_doc_figures.py checks in
    every room: a new room is a folder that leaves the suite green unchanged."""
    assert check_document(new_room.rooms / "ipc_ping_pong" / "METHOD.md") == []


@pytest.mark.slow
def test_the_skeleton_builds(built_room: NewRoom) -> None:
    assert (built_room.build / "ipc_ping_pong" / "ipc_ping_pong_bench").is_file()


@pytest.mark.slow
def test_the_skeleton_passes_the_conformance_checks(
        built_room: NewRoom, bench: Benchmark, quick_run: dict[str, Any]) -> None:
    check_usage(bench, built_room.build)
    check_bad_arguments(bench, built_room.build)
    check_quick_run(bench, quick_run)
    check_nothing_to_sweep(bench, quick_run)


@pytest.mark.slow
def test_the_skeleton_measures_its_quick_profile(bench: Benchmark, quick_run: dict[str, Any],
                                                 quick_run_dir: Path) -> None:
    quick = bench.profiles["quick"]
    assert quick_run["status"] == "complete"
    assert len(quick_run["cases"]) == len(bench.variants) * len(quick.params["size"])
    per_case: dict[tuple[str, int], list[float]] = {}
    for t in quick_run["trials"]:
        assert t["status"] == "ok", t["error"]
        values = t["samples"]["ns_per_op"]
        assert len(values) == quick.samples
        assert all(v > 0 for v in values)
        key = (t["case"]["variant"], t["case"]["params"]["size"])
        per_case.setdefault(key, []).extend(values)
    assert all(len(v) == quick.trials * quick.samples for v in per_case.values())
    # Single-byte volatile stores cannot beat memset over 64 KiB: a check that the two
    # variants run what they say, not just that numbers came out.
    biggest = max(quick.params["size"])
    assert statistics.median(per_case[("byte-loop", biggest)]) > statistics.median(
        per_case[("memset", biggest)])
    # The report opens with the answer to the skeleton's question, at the largest size.
    md = (quick_run_dir / "report.md").read_text()
    top = md.split("## Findings\n\n")[1].splitlines()[0]
    assert top.startswith(f"- **{NAME}**: At size=64 KiB against memset: byte-loop "), top
    assert "95% CI" in top and f"{quick.trials} + {quick.trials} trials" in top


@pytest.mark.slow
def test_the_skeletons_report_keeps_the_rules_every_rooms_report_keeps(
        bench: Benchmark, quick_run_dir: Path) -> None:
    """What tests/test_findings.py asks of each room in the all-rooms report, asked of the
    skeleton's: report.md within one room's share of the budget, and no "why" finding from
    a room that names no why_counters (the skeleton names none: they are optional)."""
    lines = (quick_run_dir / "report.md").read_text().splitlines()
    assert len(lines) <= report_md_budget(1)
    run = store.load(quick_run_dir)
    found = all_findings(analyze(run, run.settings.threshold))
    assert not bench.why_counters
    assert [f.text for bf in found for f in bf.findings if f.kind == "why"] == []


@pytest.mark.parametrize(("name", "problem"), [
    ("Bad_Name", "cannot name a benchmark"),
    ("ping-", "cannot name a benchmark"),
    ("ping--pong", "cannot name a benchmark"),
    ("../ping", "cannot name a benchmark"),
    ("p" * 41, "cannot name a benchmark"),
    ("common", "shared build rules"),
    (NAME, "exists already"),
])
@pytest.mark.slow(live=False)
def test_bad_names_exit_2(new_room: NewRoom, name: str, problem: str) -> None:
    before = sorted(p.name for p in new_room.rooms.iterdir())
    assert_usage_error(run_bakeoff("new", name, env=new_room.env), problem,
                       fix="choose another name" if "exists" in problem or
                       name == "common" else "use lower-case letters")
    assert sorted(p.name for p in new_room.rooms.iterdir()) == before


@pytest.mark.slow(live=False)
def test_an_empty_title_is_refused(new_room: NewRoom) -> None:
    before = sorted(p.name for p in new_room.rooms.iterdir())
    assert_usage_error(run_bakeoff("new", "other-room", "--title", " ", env=new_room.env),
                       "--title is empty", fix="give one line")
    assert sorted(p.name for p in new_room.rooms.iterdir()) == before


@pytest.mark.slow(live=False)
def test_new_refuses_a_missing_benchmarks_folder(tmp_path: Path) -> None:
    assert_usage_error(run_bakeoff("new", NAME, env={
        "BAKEOFF_BENCHMARKS_DIR": str(tmp_path / "nowhere")}), "is not a folder of rooms",
        fix="BAKEOFF_BENCHMARKS_DIR")
