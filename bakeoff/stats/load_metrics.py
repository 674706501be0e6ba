"""Which metric decides better on a busy machine, and the words that say so.

Measured beside two CPU hogs on a 2-vCPU VM, per metric and per decision (compare, gate,
history, bisect step; docs/STATISTICS.md, "Each metric per decision, beside two CPU hogs",
with its figures): no metric raised false alarms there, and the instruction count found a
+10% change of work in every decision, CPU time in a few, wall time in almost none. So
instructions decide best, then cpu_time, then wall_time; a metric outside this ranking
(user_time, a room's own) was not measured against it, and nothing here claims another
decides better than it.

`compare`, `history` and `bisect` name the metric that decided; where it left the answer open
and the runs recorded (or a bisect can count) a better one, `better_metric` names that one and
`better_metric_text` says so, with the decision's own command to use it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Final

INSTRUCTIONS: Final = "instructions"
CPU_TIME: Final = "cpu_time"
WALL_TIME: Final = "wall_time"
# Best first, as the table ranks them.
RANKED: Final = (INSTRUCTIONS, CPU_TIME, WALL_TIME)
# The metrics that decide better than wall time (selftest --of keeps their drift too).
BETTER_UNDER_LOAD: Final = RANKED[:-1]

# What a busy machine does to each ranked metric but the best (docs/STATISTICS.md,
# "Contention": cpu_time excludes the wait but still moves with what sharing a CPU does).
_MOVED_BY: Final = {
    WALL_TIME: "which waiting for a CPU lengthens",
    CPU_TIME: "which sharing a CPU still moves (caches)",
}
# What the better one cannot see, said where it is offered.
_BLIND_TO: Final = {
    INSTRUCTIONS: " (user-space work only: blind to kernel work and waits)",
    CPU_TIME: "",
}
TABLE: Final = 'docs/STATISTICS.md, "Each metric per decision"'


def better_metric(decided: str, recorded: Iterable[Collection[str]]) -> str | None:
    """The best ranked metric above `decided` that every one of `recorded` (each run's, or
    step's, metric names) has; None when `decided` is not ranked or none is better."""
    if decided not in RANKED:
        return None
    every = list(recorded)
    if not every:
        return None
    above = RANKED[:RANKED.index(decided)]
    return next((m for m in above if all(m in names for names in every)), None)


def better_metric_text(decided: str, better: str, have: str, how: str) -> str:
    """'decided on wall_time, which waiting for a CPU lengthens; these runs also recorded
    instructions, which a busy machine moves less (…): compare again with …'. `have` says
    who holds the better metric ('these runs also recorded'), `how` the command to use it."""
    return (f"decided on {decided}, {_MOVED_BY[decided]}; {have} {better}"
            f"{_BLIND_TO[better]}, which a busy machine moves less ({TABLE}): {how}")


def counted_instead(primary: str, recorded: Iterable[Collection[str]]) -> bool:
    """A decision on wall time whose every run also counted instructions (`cmd
    --instructions`) is made on the count instead: the table's best metric, there at no
    further cost, and the user asked for it when they made the runs. `history` and
    `compare` both decide so; `--metric wall_time` keeps wall time."""
    return primary == WALL_TIME and better_metric(primary, recorded) == INSTRUCTIONS


def counted_instead_text(primary: str, how: str) -> str:
    """'decided on instructions, not the primary wall_time: …', with `how` the command that
    decides on the primary metric again."""
    return (f"decided on {INSTRUCTIONS}, not the primary {primary}: every run counted them, "
            f"and a busy machine does not move them ({TABLE}); they cannot see kernel work or "
            f"waits: {how}")
