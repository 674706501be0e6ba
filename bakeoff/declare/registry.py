"""Finds the benchmarks: every benchmarks/<room>/spec.py that defines BENCHMARK.

The harness learns benchmark names only from here; adding a room needs no harness change.
"""

from __future__ import annotations

import importlib
import os
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path

from bakeoff.core.errors import Interrupted, UsageError, one_line
from bakeoff.declare.model import QUESTION_FORMS, Benchmark, Question
from bakeoff.machine.host import CAPABILITY_NAMES

REPO_ROOT = Path(__file__).resolve().parents[2]


def benchmarks_dir() -> Path:
    return Path(os.environ.get("BAKEOFF_BENCHMARKS_DIR", REPO_ROOT / "benchmarks"))


def build_dir() -> Path:
    return Path(os.environ.get("BAKEOFF_BUILD_DIR", REPO_ROOT / "build"))


def launcher() -> Path | None:
    """build/common/bakeoff-launch, which gives each trial's own rusage (see launch.c)."""
    for build in (build_dir(), REPO_ROOT / "build"):
        path = build / "common" / "bakeoff-launch"
        if path.exists():
            return path
    return None


# Rooms are imported as packages under this name, so a spec.py may import the modules
# beside it relatively (`from . import lttng`): bakeoff_benchmarks.<room dir>.spec.
PACKAGE = "bakeoff_benchmarks"


def _fresh_room_package(room: Path) -> str:
    """bakeoff_benchmarks.<room dir> as a package whose path is the room's folder, with
    nothing of an earlier import of it left (BAKEOFF_BENCHMARKS_DIR may point elsewhere
    now, or the files may have changed)."""
    if PACKAGE not in sys.modules:
        top = types.ModuleType(PACKAGE, "bakeoff's rooms, each a subpackage (registry.py)")
        top.__path__ = []  # rooms are entered one by one below, never searched for
        sys.modules[PACKAGE] = top
    name = f"{PACKAGE}.{room.name}"
    for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[loaded]
    package = types.ModuleType(name)
    package.__path__ = [str(room)]
    package.__package__ = name
    sys.modules[name] = package
    importlib.invalidate_caches()  # a room written since the last look is seen
    return name


def _load_spec(path: Path) -> Benchmark:
    package = _fresh_room_package(path.parent)
    module = importlib.import_module(f"{package}.spec")
    bench = getattr(module, "BENCHMARK", None)
    if not isinstance(bench, Benchmark):
        raise RuntimeError(f"{path} defines no BENCHMARK = Benchmark(...)")
    _check_declaration(bench, path)
    return bench


def _check_declaration(bench: Benchmark, path: Path) -> None:
    """A malformed spec is the developer's bug: fail loudly at discovery, not mid-run."""
    baselines = [v.name for v in bench.variants if v.baseline]
    if len(baselines) != 1:
        raise RuntimeError(f"{path}: exactly one variant must be the baseline, got {baselines}")
    for needs in (bench.requires, *(v.requires for v in bench.variants)):
        unknown = set(needs) - set(CAPABILITY_NAMES)
        if unknown:
            raise RuntimeError(f"{path}: unknown capability {sorted(unknown)}; "
                               f"known: {', '.join(CAPABILITY_NAMES)}")
    param_names = {p.name for p in bench.params}
    for profile in bench.profiles.values():
        if set(profile.params) != param_names:
            raise RuntimeError(f"{path}: profile '{profile.name}' must give values for "
                               f"every param {sorted(param_names)}")
    for required in ("quick", "default", "full"):
        if required not in bench.profiles:
            raise RuntimeError(f"{path}: profile '{required}' is missing")
    for question in bench.questions:
        problem = question_problem(bench, question)
        if problem:
            raise RuntimeError(f"{path}: question '{question.ask}': {problem}")


def question_problem(bench: Benchmark, q: Question) -> str | None:
    """What in a declared Question names nothing the benchmark has, or None."""
    variant_names = {v.name for v in bench.variants}
    params = {p.name: p for p in bench.params}
    metric_names = {m.name for m in bench.metrics}
    if q.form not in QUESTION_FORMS:
        return f"form '{q.form}' is not one of {', '.join(QUESTION_FORMS)}"
    if q.metric is not None and q.metric not in metric_names:
        return f"no metric '{q.metric}'"
    if q.form == "error" and not q.metrics:
        return "form 'error' needs metrics (the signed estimate errors whose RMS answers it)"
    for m in q.metrics:
        if m not in metric_names:
            return f"no metric '{m}'"
    for name in (*q.at, *((q.along,) if q.along else ()), *((q.param,) if q.param else ())):
        if name not in params:
            return f"no param '{name}'"
    if q.form in ("crossover", "overhead") and (not q.along or params[q.along].kind == "str"):
        return f"form '{q.form}' needs along= a numeric param"
    compared = (q.against, *q.variants) if q.against else q.variants
    if q.param:
        for v in q.within:
            if v not in variant_names:
                return f"no variant '{v}'"
        return None
    for v in compared:
        if v not in variant_names:
            return f"no variant '{v}'"
    never = {v.name for v in bench.variants if v.diagnostic or v.control}
    for v in q.variants:
        if v in never:
            return f"variant '{v}' is diagnostic or a control: it never answers a question"
    if q.form != "error" and not q.against:
        return f"form '{q.form}' needs against= the reference variant"
    return None


@dataclass(frozen=True)
class BrokenRoom:
    """A room whose spec.py did not load: its folder, and why, in one line."""

    folder: str
    problem: str

    def line(self) -> str:
        return (f"room {self.folder}/ not loaded: {self.problem} "
                f"(fix {self.folder}/spec.py; the other rooms are unaffected)")


@dataclass(frozen=True)
class Rooms:
    """Every room that loaded, by benchmark name, and each that did not."""

    benchmarks: dict[str, Benchmark]
    broken: tuple[BrokenRoom, ...] = ()
    folders: dict[str, str] = field(default_factory=dict)  # benchmark name -> its folder


def load_rooms() -> Rooms:
    """The rooms, each on its own: one whose spec fails to import or declares something
    malformed is set aside as a BrokenRoom, and the others still load. Commands use this,
    so one broken room stops neither `list` of the others nor a report."""
    found: dict[str, Benchmark] = {}
    broken: list[BrokenRoom] = []
    folders: dict[str, str] = {}
    for spec_path in sorted(benchmarks_dir().glob("*/spec.py")):
        folder = spec_path.parent.name
        try:
            bench = _load_spec(spec_path)
        except Interrupted:  # SIGTERM while a spec loads (bakeoff/run/interrupts.py): a stop
            raise
        except Exception as exc:  # a room's own bug, whatever it is: named, not raised
            broken.append(BrokenRoom(folder, one_line(f"{type(exc).__name__}: {exc}")))
            continue
        if bench.name in found:
            broken.append(BrokenRoom(folder, f"a second benchmark named '{bench.name}'"))
            continue
        found[bench.name] = bench
        folders[bench.name] = folder
    return Rooms(found, tuple(broken), folders)


def discover() -> dict[str, Benchmark]:
    """Every room; raises on the first that does not load (tests and scripts want to know)."""
    found: dict[str, Benchmark] = {}
    for spec_path in sorted(benchmarks_dir().glob("*/spec.py")):
        bench = _load_spec(spec_path)
        if bench.name in found:
            raise RuntimeError(f"two benchmarks are named '{bench.name}'")
        found[bench.name] = bench
    return found


def select(names: list[str], rooms: Rooms | None = None) -> list[Benchmark]:
    """The benchmarks named, or all that load when none is; an unknown name lists the real
    ones, and the rooms that did not load (it may be one of them)."""
    rooms = load_rooms() if rooms is None else rooms
    known = rooms.benchmarks
    if not names:
        return list(known.values())
    chosen = []
    for name in names:
        if name not in known:
            broken = "".join(f"; {b.line()}" for b in rooms.broken)
            raise UsageError(f"benchmark '{name}' not found (known: {', '.join(known) or 'none'})"
                             f"{broken}; see bakeoff list")
        if known[name] not in chosen:
            chosen.append(known[name])
    return chosen


def room_dirs(names: list[str]) -> list[str]:
    """The room folders (benchmarks/<room>/) of the benchmarks named, or of all that load:
    what a host must build to run them (`make build ROOMS=...`)."""
    rooms = load_rooms()
    return sorted(folder for name, folder in rooms.folders.items() if not names or name in names)
