"""A timed comparison of kernels: the boot is the unit of replication.

Each boot's run of a room is one observation of its kernel, as each run is in `bakeoff
compare --old … --new …`: the same analysis, `analysis.across_runs.compare_runs` on basis
"runs" (a pooled t interval over the boots' log medians; two or more boots a side) and the
same three-state verdicts (`stats/verdicts.py`). Trials within a boot share everything the
boot fixed (the image's layout, KASLR, where IRQs went), so they are never pooled as if
independent. The first kernel is booted twice a block; its second boots (A′) against its
first (A) are the A/A control: their spread is said, and any difference it calls, before
any kernel is compared with A.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bakeoff.analysis.across_runs import CaseChange, RunComparison, compare_runs
from bakeoff.declare.model import RunRecord
from bakeoff.kernels.plan import CONTROL_SUFFIX, Boot
from bakeoff.stats import verdicts
from bakeoff.store import results

KERNELS_JSON = "kernels.json"


@dataclass
class RoomTimed:
    """One room's comparison across kernels."""

    room: str
    reference: str  # the first kernel, A
    boots: dict[str, int]  # label ("a", "a′", "b") -> boots measured
    control: RunComparison  # A′ against A
    changes: dict[str, RunComparison]  # kernel -> it against A

    def control_called(self) -> list[CaseChange]:
        """Cases where the A/A control itself calls a difference: the boot-to-boot spread
        is beyond what the verdicts assume, and no A/B verdict of the room is to be trusted."""
        return [c for c in self.control.changes if verdicts.is_called(c.verdict)]


def analyze_room(room: str, boots: list[tuple[Boot, RunRecord]], threshold: float) -> RoomTimed:
    """The boots of one room: A′ against A first, then every other kernel against A."""
    reference = next(b.kernel for b, _ in boots if b.control)
    by_label: dict[str, list[RunRecord]] = defaultdict(list)
    for b, record in sorted(boots, key=lambda x: x[0].index):
        by_label[b.label].append(record)
    control_label = reference + CONTROL_SUFFIX
    if len(by_label[reference]) < 2 or len(by_label[control_label]) < 2:
        raise ValueError(f"{room}: the A/A control needs two boots of {reference} and two of "
                         f"{control_label}")
    control = compare_runs(by_label[reference], by_label[control_label], threshold)
    changes = {label: compare_runs(by_label[reference], records, threshold)
               for label, records in by_label.items()
               if label not in (reference, control_label)}
    return RoomTimed(room, reference, {k: len(v) for k, v in by_label.items()}, control, changes)


def load_boots(out: Path) -> dict[str, list[tuple[Boot, RunRecord]]]:
    """Room -> (boot, its run) for every boot whose room ran, from the run's files."""
    plan = json.loads((out / KERNELS_JSON).read_text())
    rooms: dict[str, list[tuple[Boot, RunRecord]]] = defaultdict(list)
    for b in plan["boots"]:
        boot = Boot(int(b["index"]), int(b["block"]), str(b["kernel"]), bool(b["control"]))
        for room in b.get("rooms", []):
            run_dir = out / b["dir"] / room["dir"]
            if room["status"] == "ran" and (run_dir / results.RESULTS_JSON).is_file():
                rooms[room["room"]].append((boot, results.load(run_dir)))
    return dict(rooms)


def analyze(out: Path, threshold: float) -> list[RoomTimed]:
    return [analyze_room(room, boots, threshold)
            for room, boots in sorted(load_boots(out).items())]


def _change_line(c: CaseChange) -> str:
    return (f"  {c.case.key}: ×{c.ratio.ratio:.3g} (95% CI {c.ratio.ci_low:.3g}–"
            f"{c.ratio.ci_high:.3g}), {c.verdict}")


def lines(timed: list[RoomTimed], threshold: float) -> list[str]:
    """The A/A control's spread first, then the comparisons (each against the first kernel)."""
    out: list[str] = []
    for room in timed:
        ref = room.reference
        out.append(f"{room.room}: boots {', '.join(f'{k} {n}' for k, n in room.boots.items())}")
        out.append(f" A/A control, {ref}{CONTROL_SUFFIX} against {ref} (the spread between "
                   "boots of one kernel):")
        out += [_change_line(c) for c in room.control.changes]
        called = room.control_called()
        if called:
            out.append(f" the A/A control calls {len(called)} case(s) different: boots of one "
                       "kernel differ beyond the verdicts' threshold, so no verdict below holds")
        for label, comparison in room.changes.items():
            out.append(f" {label} against {ref}:")
            out += [_change_line(c) for c in comparison.changes]
        out.append(" " + room.control.basis_sentence())
    if timed:
        out.append("Verdicts: " + verdicts.rule(threshold) + ".")
    return out


def to_json(timed: list[RoomTimed]) -> list[dict[str, Any]]:
    def change(c: CaseChange) -> dict[str, Any]:
        return {"case": c.case.key, "ratio": c.ratio.ratio, "ci": [c.ratio.ci_low, c.ratio.ci_high],
                "verdict": c.verdict, "basis": c.basis}
    return [{"room": t.room, "reference": t.reference, "boots": t.boots,
             "control": [change(c) for c in t.control.changes],
             "changes": {k: [change(c) for c in v.changes] for k, v in t.changes.items()}}
            for t in timed]
