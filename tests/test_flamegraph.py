"""Flame graphs of real `perf record -g` profiles of a program with known work."""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path

import pytest

from bakeoff.declare.model import Case
from bakeoff.perf import flamegraph
from bakeoff.perf import store as profile_store


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


def test_the_timed_share_counts_stacks_with_a_declared_frame() -> None:
    """matching_period: a stack is inside the timed operation when a frame below the process
    matches a pattern; the process's own name never does (mremap_bench is not mremap)."""
    folded: flamegraph.Folded = Counter({
        ("mremap_bench [process]", "main [mremap_bench]", "__GI___mremap [libc.so.6]",
         "__do_sys_mremap [kernel]", "move_page_tables [kernel]"): 30,
        ("mremap_bench [process]", "main [mremap_bench]", "batch_prepare [mremap_bench]",
         "exc_page_fault [kernel]"): 60,
        ("mremap_bench [process]", "[unknown] [libc.so.6]"): 10,
    })
    assert flamegraph.matching_period(folded, ("*sys_mremap",)) == 30
    assert flamegraph.matching_period(folded, ("mremap_bench*",)) == 0
    assert flamegraph.matching_period(folded, ("batch_*", "move_page_tables")) == 90
    assert flamegraph.matching_period(folded, ()) == 0
    assert flamegraph.frame_symbol("move_page_tables [kernel]") == "move_page_tables"


def test_the_share_note_warns_under_half_and_old_indexes_still_read() -> None:
    case = Case("b", "v", (("n", 1),))
    low = profile_store.CaseProfile(case, "f", 1, 1.0, 100, 1000, ("*sys_mremap",), 2)
    assert low.timed_share == 0.002
    note = profile_store.timed_share_note(low)
    assert note.startswith("0.2% of the samples are inside the timed operation")
    assert "warning: under 50%" in note
    high = profile_store.CaseProfile(case, "f", 1, 1.0, 100, 1000, ("x",), 800, repeat=9)
    assert "warning" not in profile_store.timed_share_note(high)
    assert "repeated 9×" in profile_store.timed_share_note(high)
    assert profile_store.CaseProfile.from_json(high.to_json()) == high
    # An index written before the share: read, share unknown, no note.
    old = {k: v for k, v in low.to_json().items()
           if k not in ("timed_frames", "timed_period", "repeat")}
    back = profile_store.CaseProfile.from_json(old)
    assert back.timed_share is None and profile_store.timed_share_note(back) == ""
