"""Flame graphs of real `perf record -g` profiles of a program with known work."""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path

import pytest

from bakeoff import flamegraph


def _profile(built: Path, tmp_path: Path, variant: str) -> tuple[flamegraph.Folded, int]:
    """The folded stacks of counters-check, and the period total perf itself reports."""
    data = tmp_path / f"{variant}.data"
    prog = built / "common" / "counters-check"
    subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", "4000", "-g", "-o",
                    str(data), "--", str(prog), "--variant", variant, "--samples", "200",
                    "--param", "ops=2000"], check=True, capture_output=True, timeout=120)
    script = subprocess.run(["perf", "script", "-F", "period,ip,sym,dso", "-i", str(data)],
                            check=True, capture_output=True, text=True, timeout=120).stdout
    periods = [int(line) for line in script.splitlines() if line.strip().isdigit()]
    return flamegraph.fold(script.splitlines()), sum(periods)


def test_folding_keeps_every_sample_and_the_tree_adds_up(built: Path, tmp_path: Path) -> None:
    folded, total = _profile(built, tmp_path, "getppid")
    assert total > 0 and sum(folded.values()) == total  # no sample lost or counted twice
    t = flamegraph.tree(folded)
    assert t.ids[0] == flamegraph.ROOT and t.total == total
    children: Counter[str] = Counter()
    for parent, value in zip(t.parents, t.values, strict=True):
        if parent:
            children[parent] += value
    for node, value in zip(t.ids, t.values, strict=True):
        assert children[node] <= value  # a frame's own time is never negative


def test_the_profile_shows_the_work_the_program_does(built: Path, tmp_path: Path) -> None:
    folded, _ = _profile(built, tmp_path, "getppid")
    frames = {frame for stack in folded for frame in stack}
    # the system call's kernel side, symbolised
    assert any("getppid" in f and f.endswith("[kernel]") for f in frames), sorted(frames)[:40]
    top = flamegraph.top_frames(folded, n=50)
    assert abs(sum(share for _, share in flamegraph.top_frames(folded, n=10**6)) - 1) < 1e-9
    assert top == sorted(top, key=lambda fs: -fs[1])


def test_a_differential_colours_what_only_one_profile_does(built: Path, tmp_path: Path) -> None:
    calls, _ = _profile(built, tmp_path, "getppid")
    faults, _ = _profile(built, tmp_path, "fault")
    fig = flamegraph.differential(faults, calls, "fault vs getppid")
    trace = fig["data"][0]
    delta = dict(zip(trace["ids"], trace["customdata"], strict=True))
    assert delta[flamegraph.ROOT] == pytest.approx(0.0)  # the whole is 100% of both
    fault_paths = [i for i in trace["ids"] if "handle_mm_fault" in i]
    assert fault_paths, "the fault profile has no page-fault frames"
    assert max(delta[i] for i in fault_paths) > 0  # more of the time here than in getppid
    assert max(abs(d) for d in delta.values()) <= 100


def test_an_icicle_is_a_plotly_figure_that_validates(built: Path, tmp_path: Path) -> None:
    import plotly.graph_objects as go

    folded, _ = _profile(built, tmp_path, "fault")
    go.Figure(flamegraph.icicle(folded, "fault"))  # raises on an invalid property
    go.Figure(flamegraph.differential(folded, folded, "fault vs itself"))
