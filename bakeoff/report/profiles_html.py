"""The report's Profiles section: the flame graphs `bakeoff profile` left in RESULTS_DIR/profiles/.

Per profiled case: the frames with the most self time in words, then three icicles (the case,
its baseline at the same params, and the case coloured by how its share of each frame
differs from the baseline's). Built as sections (report/sections.py), drawn by the same
plotly.js the rest of the report inlines.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from bakeoff.declare.model import BenchmarkInfo, Case
from bakeoff.perf import flamegraph
from bakeoff.perf.store import CaseProfile, LoadedPair, timed_share_note
from bakeoff.report.format import case_params_label
from bakeoff.report.sections import (
    Block,
    Columns,
    Drawing,
    Item,
    Items,
    Only,
    Paragraph,
    Section,
    code,
    strong,
)


def _label(infos: Mapping[str, BenchmarkInfo], case: Case) -> str:
    info = infos.get(case.benchmark)
    params = (case_params_label(info, case) if info is not None
              else ", ".join(f"{k}={v}" for k, v in case.params))
    return f"{case.variant}, {params}" if params else case.variant


def _top(name: str, folded: flamegraph.Folded) -> list[Block]:
    items = tuple(Item((code(frame), f" {share:.1%}"))
                  for frame, share in flamegraph.top_frames(folded, n=5))
    return [Paragraph(("Most self time in ", strong(name), ":")), Items(items)]


def _counts(cp: CaseProfile) -> str:
    note = timed_share_note(cp)
    return (f"{cp.samples:,} samples in {cp.trials} trial(s), {cp.wall_s:.1f} s of wall time, "
            f"file profiles/{cp.file}" + (f". {note[:-1]}" if note else ""))


def _pair(lp: LoadedPair, infos: Mapping[str, BenchmarkInfo]) -> list[Block]:
    p = lp.pair
    case = _label(infos, p.case.case)
    slug = f"{p.case.case.benchmark}-{p.case.case.variant}"
    how = (f"perf record -g, {p.event} at {p.frequency_hz} Hz, {p.call_graph} call graphs, "
           f"taken {p.taken_at}. The whole trial process is sampled, its untimed setup "
           "included; these trials are not part of the run's figures.")
    if p.case.repeat > 1:
        how += (f" The trials repeated the timed operation {p.case.repeat}× in each timed "
                "section where the program can (--profile-repeat), so it fills the samples; a "
                "repeated operation may run warmer than the single one the run measured.")
    counts = f"{case}: {_counts(p.case)}." + (
        f" {_label(infos, p.baseline.case)}: {_counts(p.baseline)}." if p.baseline else "")
    tops = _top(case, lp.case)
    if p.baseline is not None and lp.baseline is not None:
        tops += _top(_label(infos, p.baseline.case), lp.baseline)
    unit = "ns" if p.event == "cpu-clock" else p.event  # the period's unit: cpu-clock's is ns
    drawn = [Drawing(flamegraph.icicle(lp.case, case, unit), f"{slug}-flame")]
    if p.baseline is not None and lp.baseline is not None:
        base = _label(infos, p.baseline.case)
        drawn.append(Drawing(flamegraph.icicle(lp.baseline, f"{base} (baseline)", unit),
                             f"{slug}-baseline-flame"))
        drawn.append(Drawing(flamegraph.differential(
            lp.case, lp.baseline, f"{p.case.case.variant} against {p.baseline.case.variant}: "
            "red a larger share of the time, blue a smaller"), f"{slug}-differential"))
    title = f"{p.case.case.benchmark}: {case}" + (
        f" against {p.baseline.case.variant}" if p.baseline else "")
    return [Section(title, (Paragraph((how,), "note"), Paragraph((counts,), "note"),
                            Columns((tuple(tops), ())), *drawn), level=3)]


def profiles_section(pairs: Sequence[LoadedPair],
                     infos: Mapping[str, BenchmarkInfo]) -> list[Block]:
    """Nothing without profiles; else the section, id 'profiles' (report.html only: a flame
    graph has no text form)."""
    if not pairs:
        return []
    intro = Paragraph(("Flame graphs from ", code("bakeoff profile"), ": each frame is as wide "
                       "as its share of the sampled time, callers above callees; click a frame "
                       "to zoom into it. Colours: orange the kernel, purple BPF programs, blue "
                       "the program, green shared libraries, grey processes and frames nothing "
                       "could name; in a differential, red frames take a larger share of the "
                       "time than in the baseline, blue a smaller one."), "note")
    body = [b for lp in pairs for b in _pair(lp, infos)]
    return [Only("html", (Section("Profiles", (intro, *body), anchor="profiles"),))]
