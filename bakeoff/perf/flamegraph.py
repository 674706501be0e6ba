"""Flame graphs from `perf record -g`, drawn offline with plotly's icicle chart.

`perf script -F comm,period,ip,sym,dso` prints each sample as its process's name and period
(ns for cpu-clock) and its call stack, leaf first. `fold()` turns that into stacks root first
with their summed period, as Brendan Gregg's stackcollapse-perf.pl does, the process name as
the first frame when perf printed it (a trial that starts a tracer shows both processes);
`write_folded()` and `read_folded()` keep them in that tool's text format; `icicle()` draws
one profile (root on top, each frame as wide as its share of the samples); `differential()`
draws one profile's frames coloured by how much more (red) or less (blue) of the time they
take than in a baseline profile, the differential flame graph of the same tools.
"""

from __future__ import annotations

import fnmatch
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

Stack = tuple[str, ...]  # root first
Folded = Counter[Stack]

_FRAME = re.compile(r"^\s*[0-9a-f]+\s+(?P<sym>.*?)\s+\((?P<dso>[^()]*)\)\s*$")
_HEADER = re.compile(r"^\s*(?P<period>[0-9]+)\s*$")
# With comm: "mremap_bench     250000" (a name may hold spaces; the period ends the line).
_HEADER_COMM = re.compile(r"^(?P<comm>\S.*?)\s+(?P<period>[0-9]+)\s*$")
ROOT = "all"
PROCESS = "[process]"


def _frame_name(sym: str, dso: str) -> str:
    """'do_anonymous_page [kernel]', 'batch_prepare [mremap_bench]'; an unsymbolised frame
    keeps its module, so a reader still sees where the time went."""
    # A BPF program's "module" is its own name again (bpf_prog_<tag>_<name>): say bpf.
    module = ("kernel" if dso == "[kernel.kallsyms]" else "bpf" if dso.startswith("bpf_prog_")
              else dso.rsplit("/", 1)[-1] or "?")
    name = sym if sym and sym != "[unknown]" else "[unknown]"
    return f"{name} [{module}]"


def fold(perf_script: Iterable[str]) -> Folded:
    """Stacks (root first) → summed period, from `perf script -F [comm,]period,ip,sym,dso`;
    with comm, each stack starts with 'NAME [process]'."""
    return fold_counting(perf_script)[0]


def fold_counting(perf_script: Iterable[str]) -> tuple[Folded, int]:
    """fold(), and how many samples perf printed (one with no frame is not folded)."""
    folded: Folded = Counter()
    samples = 0
    period: int | None = None
    frames: list[str] = []
    process: str | None = None

    def flush() -> None:
        if period is not None and frames:
            root = (f"{process} {PROCESS}",) if process is not None else ()
            folded[root + tuple(reversed(frames))] += period

    for line in perf_script:
        header = _HEADER.match(line) or _HEADER_COMM.match(line)
        if header:
            flush()
            samples += 1
            period, frames = int(header["period"]), []
            process = header.groupdict().get("comm")
            continue
        frame = _FRAME.match(line)
        if frame and period is not None:
            frames.append(_frame_name(frame["sym"], frame["dso"]))
    flush()
    return folded, samples


def write_folded(folded: Mapping[Stack, int]) -> str:
    """The stacks as flamegraph.pl and speedscope read them: 'root;child;leaf PERIOD' per line,
    heaviest first. A ';' inside a frame (rare: C++ templates) becomes ':' so it cannot split
    the frame."""
    lines = [";".join(f.replace(";", ":") for f in stack) + f" {period}"
             for stack, period in sorted(folded.items(), key=lambda sp: (-sp[1], sp[0]))]
    return "".join(f"{line}\n" for line in lines)


def read_folded(text: str) -> Folded:
    """write_folded()'s text back into stacks; a line without a period is refused."""
    folded: Folded = Counter()
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        stack, _, period = line.rpartition(" ")
        if not stack or not period.isdigit():
            raise ValueError(f"line {n} is not 'frame;frame;... PERIOD': {line[:80]!r}")
        folded[tuple(stack.split(";"))] += int(period)
    return folded


@dataclass(frozen=True)
class Tree:
    """The folded stacks as an icicle's nodes: id (the path), label, parent id, value."""

    ids: list[str]
    labels: list[str]
    parents: list[str]
    values: list[int]

    @property
    def total(self) -> int:
        return self.values[0] if self.values else 0

    def shares(self) -> dict[str, float]:
        total = self.total or 1
        return {i: v / total for i, v in zip(self.ids, self.values, strict=True)}


# Frames below this share of the time are left out of a drawn flame graph: narrower than a
# pixel of the report's chart (about 1200 px wide), they only made the page megabytes larger.
MIN_DRAWN_SHARE = 0.0005


def tree(folded: Mapping[Stack, int], min_share: float = 0.0) -> Tree:
    """Every prefix of every stack is a node; a node's value is the period of all stacks
    through it (plotly's branchvalues='total'). Nodes below min_share of the total are
    left out (with all below them: a child never has more than its parent); their time
    stays in their parent's value."""
    through: Counter[Stack] = Counter()
    for stack, period in folded.items():
        for depth in range(len(stack) + 1):
            through[stack[:depth]] += period
    least = min_share * through[()]
    ordered = sorted((s for s in through if through[s] >= least),
                     key=lambda s: (len(s), -through[s], s))
    ids = [";".join((ROOT, *s)) for s in ordered]
    labels = [s[-1] if s else ROOT for s in ordered]
    parents = ["" if not s else ";".join((ROOT, *s[:-1])) for s in ordered]
    return Tree(ids, labels, parents, [through[s] for s in ordered])


# A frame's colour says where it runs, as in perf's and Gregg's flame graphs: the kernel, the
# program itself, a shared library, or a frame nothing could name.
KIND_COLORS = {"process": "#9aa5b1", "kernel": "#e8743b", "bpf": "#b5509c",
               "library": "#5aa469", "program": "#4c8bd6", "unknown": "#c9ced6",
               "root": "#6b7785"}


# Percentage points of the time against the baseline: blue less, white the same, red more.
DIFF_COLORSCALE = [[0.0, "#2166ac"], [0.5, "#f7f7f7"], [1.0, "#b2182b"]]


def frame_kind(label: str) -> str:
    """'kernel', 'bpf', 'library', 'program', 'unknown', 'process' or 'root', from a frame's
    name."""
    if label == ROOT:
        return "root"
    if label.endswith(PROCESS):
        return "process"
    if label.startswith("[unknown]"):
        return "unknown"
    module = label.rsplit(" [", 1)[-1].rstrip("]")
    if module in ("kernel", "bpf"):
        return module
    return "library" if ".so" in module else "program"


def icicle(folded: Mapping[Stack, int], title: str, unit: str = "ns",
           min_share: float = MIN_DRAWN_SHARE) -> dict[str, Any]:
    """A plotly figure (as a dict) of one profile, each frame coloured by where it runs."""
    t = tree(folded, min_share)
    shares = t.shares()
    return {
        "data": [{
            "type": "icicle", "ids": t.ids, "labels": t.labels, "parents": t.parents,
            "values": t.values, "branchvalues": "total", "tiling": {"orientation": "v"},
            "marker": {"colors": [KIND_COLORS[frame_kind(label)] for label in t.labels]},
            "customdata": [100 * shares[i] for i in t.ids],
            "hovertemplate": (f"%{{label}}<br>%{{value:,}} {unit} sampled, "
                              "%{customdata:.1f}% of all<extra></extra>"),
            "maxdepth": 40,
        }],
        "layout": {"title": {"text": title}, "margin": {"t": 40, "l": 0, "r": 0, "b": 0},
                   "height": 720},
    }


def differential(folded: Mapping[Stack, int], baseline: Mapping[Stack, int], title: str,
                 min_share: float = MIN_DRAWN_SHARE) -> dict[str, Any]:
    """One profile's icicle, each frame coloured by its share of this profile minus its
    share of the baseline's (percentage points): red takes more of the time here, blue
    less. Frames only the baseline has are not drawn: their absence is the difference."""
    t, base = tree(folded, min_share), tree(baseline)
    shares, base_shares = t.shares(), base.shares()
    delta = [100 * (shares[i] - base_shares.get(i, 0.0)) for i in t.ids]
    limit = max((abs(d) for d in delta), default=1.0) or 1.0
    return {
        "data": [{
            "type": "icicle", "ids": t.ids, "labels": t.labels, "parents": t.parents,
            "values": t.values, "branchvalues": "total", "tiling": {"orientation": "v"},
            "customdata": delta, "maxdepth": 40,
            # Spelled out: plotly's own "RdBu" runs blue to red, ColorBrewer's red to blue.
            "marker": {"colors": delta, "colorscale": DIFF_COLORSCALE,
                       "cmin": -limit, "cmax": limit, "cmid": 0,
                       "colorbar": {"title": {"text": "share vs baseline (pp)"}}},
            "hovertemplate": "%{label}<br>%{customdata:+.1f} percentage points of the time "
                             "vs the baseline<extra></extra>",
        }],
        "layout": {"title": {"text": title}, "margin": {"t": 40, "l": 0, "r": 0, "b": 0},
                   "height": 720},
    }


def top_frames(folded: Mapping[Stack, int], n: int = 5) -> list[tuple[str, float]]:
    """The frames with the most self time (leaf of the stack), with their share: what a
    report says in words beside the chart."""
    self_time: Counter[str] = Counter()
    for stack, period in folded.items():
        if stack:
            self_time[stack[-1]] += period
    total = sum(self_time.values()) or 1
    return [(frame, v / total) for frame, v in self_time.most_common(n)]


def frame_symbol(frame: str) -> str:
    """'move_page_tables [kernel]' → 'move_page_tables': the function, without its module."""
    name, sep, module = frame.rpartition(" [")
    return name if sep and module.endswith("]") else frame


def matching_period(folded: Mapping[Stack, int], patterns: Iterable[str]) -> int:
    """The summed period of the stacks with a frame whose function matches one of the fnmatch
    patterns (the process's own first frame is never matched: a program named like its
    operation, mremap_bench, is not inside it)."""
    pats = tuple(patterns)
    if not pats:
        return 0
    total = 0
    for stack, period in folded.items():
        frames = stack[1:] if stack and stack[0].endswith(f" {PROCESS}") else stack
        if any(fnmatch.fnmatchcase(frame_symbol(f), p) for f in frames for p in pats):
            total += period
    return total
