"""The functional check's table: per kernel, each room's variants: runs, skips (why), error.

Read from each boot's files alone: a room's results.json and trials.jsonl (the ordinary
record), or its outcome in done.json when the room did not run at all. A variant *runs* when
its trial finished ok, *skips* when the plan set it aside with a reason (the capability it
lacks, as on the host), and is an *error* when its trial failed, timed out, or the room
crashed: the row carries the message. `make test-kernels` fails on any error.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bakeoff.kernels.guest import BootResult
from bakeoff.store import results

RUNS, SKIPS, ERROR = "runs", "skips", "error"
NOTHING_TO_RUN = "nothing this machine can run"
NOT_APPLICABLE = "not applicable"


@dataclass(frozen=True)
class Row:
    kernel: str
    room: str
    variant: str
    params: str
    state: str  # RUNS, SKIPS, ERROR
    why: str = ""


def _first_line(text: str | None) -> str:
    lines = [x.strip() for x in (text or "").splitlines() if x.strip()]
    return lines[0][:300] if lines else "no message"


def _room_rows(kernel: str, run_dir: Path) -> list[Row]:
    record = results.load(run_dir)
    rows = []
    for case in record.cases:
        params = ",".join(f"{k}={v}" for k, v in case.params)
        trials = [t for t in record.trials if t.case == case]
        bad = [t for t in trials if t.status != "ok"]
        if bad:
            why = f"{bad[0].status}: {_first_line(bad[0].error or bad[0].stderr_tail)}"
            rows.append(Row(kernel, case.benchmark, case.variant, params, ERROR, why))
        elif trials:
            rows.append(Row(kernel, case.benchmark, case.variant, params, RUNS))
        else:
            rows.append(Row(kernel, case.benchmark, case.variant, params, ERROR,
                            f"no trial recorded (run {record.status})"))
    for skip in record.skips:
        params = ",".join(f"{k}={v}" for k, v in skip.case.params)
        rows.append(Row(kernel, skip.case.benchmark, skip.case.variant, params, SKIPS,
                        skip.reason))
    return rows


def rows(result: BootResult) -> list[Row]:
    """Every variant of every room on the boot's kernel; one error row when the boot brought
    nothing back."""
    kernel = result.boot.kernel
    if result.problem is not None:
        return [Row(kernel, "*", "*", "", ERROR, result.problem)]
    out = []
    for room in result.rooms:
        run_dir = result.work / room["dir"]
        if room["status"] == "ran" and (run_dir / results.RESULTS_JSON).is_file():
            out += _room_rows(kernel, run_dir)
        elif room["status"] == "refused" and (NOTHING_TO_RUN in room.get("message", "")
                                              or NOT_APPLICABLE in room.get("message", "")):
            out.append(Row(kernel, room["room"], "*", "", SKIPS, room["message"]))
        else:
            out.append(Row(kernel, room["room"], "*", "", ERROR,
                           room.get("message") or f"room {room['status']}, no results.json"))
    # A variant a room's first run set aside as not applicable at its params ran in a second
    # run at params where it applies: that row stands for it.
    covered = {(r.room, r.variant) for r in out if r.state != SKIPS}
    out = [r for r in out if not (r.state == SKIPS and r.why.startswith(NOT_APPLICABLE)
                                  and (r.room, r.variant) in covered)]
    return sorted(out, key=lambda r: (r.room, r.variant, r.params))


def errors(table: list[Row]) -> list[Row]:
    return [r for r in table if r.state == ERROR]


def lines(table: list[Row]) -> list[str]:
    """The table as Markdown, one row per variant and params."""
    out = ["| kernel | room | variant | params | state | why |", "|---|---|---|---|---|---|"]
    out += [f"| {r.kernel} | {r.room} | {r.variant} | {r.params} | {r.state} | "
            f"{r.why.replace('|', '/')} |" for r in table]
    return out
