"""The profiles of a results directory: RESULTS_DIR/profiles/, written by `bakeoff profile`.

One `<case>.folded` per profiled case (stacks in flamegraph.pl's text format, each with its
summed period: ns of cpu-clock, or cycles) and `profiles.json`, the index: which case was profiled
against which baseline, with which event, how many trials and samples. The report reads
only these, so `bakeoff report DIR` draws them again without perf. Kept apart from
results.json on purpose: a profile is not a measurement, and nothing in the run's trials
changes when one is taken.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bakeoff.declare.model import Case
from bakeoff.perf import flamegraph
from bakeoff.store.results import write_atomic

PROFILES_DIR = "profiles"
# Under this share of its samples inside the timed operation, a profile mostly shows the
# set-up around it: the report and `bakeoff profile` say so.
MIN_TIMED_SHARE = 0.5
INDEX = "profiles.json"
INDEX_VERSION = 1


def timed_share_note(cp: CaseProfile) -> str:
    """One sentence on how much of a case's profile is its timed operation, with a warning
    under MIN_TIMED_SHARE; '' when the room declares no timed frames for it."""
    share = cp.timed_share
    if share is None:
        return ""
    frames = ", ".join(cp.timed_frames)
    repeated = f", the operation repeated {cp.repeat}× (--profile-repeat)" if cp.repeat > 1 else ""
    text = (f"{share:.1%} of the samples are inside the timed operation (stacks with a frame "
            f"matching {frames}{repeated})")
    if share < MIN_TIMED_SHARE:
        text += (f"; warning: under {MIN_TIMED_SHARE:.0%}, this profile mostly shows the "
                 "untimed set-up around the operation")
    return text + "."


def case_file(case: Case) -> str:
    """'mremap-vs-memcpy_mremap_size=16777216.folded': readable, one file per case."""
    params = "_".join(f"{k}={v}" for k, v in case.params)
    name = "_".join(p for p in (case.benchmark, case.variant, params) if p)
    return re.sub(r"[^A-Za-z0-9_.=+-]+", "-", name) + ".folded"


@dataclass(frozen=True)
class CaseProfile:
    """One case's profile: its folded stacks' file and what went into it."""

    case: Case
    file: str
    trials: int  # trials run under perf, through the room's own path
    wall_s: float  # their summed wall time
    samples: int  # perf samples folded
    period: int  # their summed period: ns of cpu-clock, or cycles
    # The frames the room declares only its timed operation runs (Benchmark.timed_frames)
    # and the period of the stacks holding one; () and None when it declares none.
    timed_frames: tuple[str, ...] = ()
    timed_period: int | None = None
    repeat: int = 1  # --profile-repeat the trials ran with (Benchmark.profile_repeat)

    @property
    def timed_share(self) -> float | None:
        """The share of the sampled time inside the timed operation; None when unknown."""
        if self.timed_period is None or self.period <= 0:
            return None
        return self.timed_period / self.period

    def to_json(self) -> dict[str, Any]:
        return {"case": self.case.to_json(), "file": self.file, "trials": self.trials,
                "wall_s": round(self.wall_s, 3), "samples": self.samples,
                "period": self.period, "timed_frames": list(self.timed_frames),
                "timed_period": self.timed_period, "repeat": self.repeat}

    @staticmethod
    def from_json(d: dict[str, Any]) -> CaseProfile:
        timed = d.get("timed_period")
        return CaseProfile(Case.from_json(d["case"]), str(d["file"]), int(d["trials"]),
                           float(d["wall_s"]), int(d["samples"]), int(d["period"]),
                           tuple(str(f) for f in d.get("timed_frames", ())),
                           None if timed is None else int(timed), int(d.get("repeat", 1)))


@dataclass(frozen=True)
class ProfilePair:
    """A case profiled beside its baseline at the same params (None when the case is the
    baseline), and how perf sampled them."""

    case: CaseProfile
    baseline: CaseProfile | None
    event: str  # as perf recorded it (perf evlist): cycles, or cpu-clock without a PMU
    frequency_hz: int
    call_graph: str
    taken_at: str

    def to_json(self) -> dict[str, Any]:
        return {"case": self.case.to_json(),
                "baseline": self.baseline.to_json() if self.baseline else None,
                "event": self.event, "frequency_hz": self.frequency_hz,
                "call_graph": self.call_graph, "taken_at": self.taken_at}

    @staticmethod
    def from_json(d: dict[str, Any]) -> ProfilePair:
        base = d.get("baseline")
        return ProfilePair(CaseProfile.from_json(d["case"]),
                           CaseProfile.from_json(base) if base else None, str(d["event"]),
                           int(d["frequency_hz"]), str(d["call_graph"]), str(d["taken_at"]))


@dataclass(frozen=True)
class LoadedPair:
    """A pair with its stacks read, for the report."""

    pair: ProfilePair
    case: flamegraph.Folded
    baseline: flamegraph.Folded | None


def load_index(run_dir: Path) -> list[ProfilePair]:
    """The pairs profiled in run_dir, oldest first; none when there is no index, or when it
    cannot be read (a report must still be written: its absence is then the news)."""
    path = run_dir / PROFILES_DIR / INDEX
    try:
        entries = json.loads(path.read_text())["profiles"]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    pairs = []
    for entry in entries if isinstance(entries, list) else []:
        try:  # one entry that does not read (edited by hand) does not hide the others
            pairs.append(ProfilePair.from_json(entry))
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
    return pairs


def save_pair(run_dir: Path, pair: ProfilePair) -> Path:
    """Adds pair to the index, replacing an earlier profile of the same case."""
    kept = [p for p in load_index(run_dir) if p.case.case != pair.case.case]
    path = run_dir / PROFILES_DIR / INDEX
    write_atomic(path, json.dumps({"version": INDEX_VERSION,
                                   "profiles": [p.to_json() for p in [*kept, pair]]},
                                  indent=1) + "\n")
    return path


def load(run_dir: Path) -> list[LoadedPair]:
    """Every indexed pair whose folded files are there and readable."""
    loaded = []
    for pair in load_index(run_dir):
        try:
            case = _read(run_dir, pair.case)
            base = _read(run_dir, pair.baseline) if pair.baseline else None
        except (OSError, ValueError):
            continue
        loaded.append(LoadedPair(pair, case, base))
    return loaded


def _read(run_dir: Path, profile: CaseProfile) -> flamegraph.Folded:
    return load_folded(run_dir / PROFILES_DIR / profile.file)


def load_folded(path: Path) -> flamegraph.Folded:
    return flamegraph.read_folded(path.read_text(encoding="utf-8"))
