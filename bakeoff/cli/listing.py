"""`bakeoff list`: the rooms, their variants, params and profiles, and what runs here."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from bakeoff.app.console import out_console
from bakeoff.declare.model import Param, Profile


def trials_label(p: Profile) -> str:
    """'10', or '5–10' under sequential allocation (5 each, up to 10 where the answer is open);
    "(the questions' up to 20)" where their cases get more (Profile.answer_trials), "3 where
    no question reads" where the others get fewer (Profile.other_trials)."""
    low = p.min_trials
    text = f"{low}–{p.trials}" if low is not None and low < p.trials else str(p.trials)
    notes = []
    if p.answer_trials is not None and p.answer_trials > p.trials:
        notes.append(f"the questions' up to {p.answer_trials}")
    if p.other_trials is not None:
        notes.append(f"{p.other_trials} where no question reads")
    return f"{text} trials" + (f" ({'; '.join(notes)})" if notes else "")


def _allowed(p: Param) -> str:
    """The values a param takes, as its declaration bounds them (choices, or min to max)."""
    if p.choices:
        return ", ".join(p.label(c) for c in p.choices)
    if p.min is not None or p.max is not None:
        low = "" if p.min is None else p.bound(p.min, unit=False)
        high = "" if p.max is None else p.bound(p.max, unit=False)
        return f"{low}–{high}" if low and high else (f"≥ {low}" if low else f"≤ {high}")
    return ""


def cmd_list() -> None:
    """List benchmarks, their variants, params and profiles, and whether this machine can run each."""
    from bakeoff.app.runs import say_broken
    from bakeoff.declare import registry
    from bakeoff.machine import host as hostmod
    from bakeoff.plan.cases import PROFILES

    caps = hostmod.capabilities()
    rooms = registry.load_rooms()
    for bench in rooms.benchmarks.values():
        out_console.print(Text(bench.name, style="bold") + Text(f" — {bench.title}"))
        out_console.print(f"  {bench.summary}", highlight=False)
        table = Table("variant", "runs here?", "what it is", box=None, pad_edge=False)
        for v in bench.variants:
            missing = [caps[r] for r in (*bench.requires, *v.requires) if not caps[r].available]
            ok = "yes" if not missing else "no: " + "; ".join(
                f"needs {c.name} ({c.detail}); fix: {c.fix}" for c in missing)
            name = f"{v.name} (baseline)" if v.baseline else v.name
            table.add_row(name, ok, v.description)
        out_console.print(table)
        params = Table("param", "unit", "quick", "default", "full", "allowed", "meaning",
                       box=None, pad_edge=False)
        for p in bench.params:
            params.add_row(p.name, p.unit or p.kind,
                           *(", ".join(p.label(x) for x in bench.profiles[pr].params[p.name])
                             for pr in PROFILES), _allowed(p), p.description)
        out_console.print(params)
        prof = ", ".join(f"{n}: {trials_label(bench.profiles[n])} × "
                         f"{bench.profiles[n].samples} samples" for n in PROFILES)
        cpus = f"; a trial claims {bench.cpus} CPUs" if bench.cpus > 1 else ""
        out_console.print(f"  profiles — {prof}{cpus}\n", highlight=False)
    say_broken(rooms)
