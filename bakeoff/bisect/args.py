"""What a bisect is asked (`bakeoff bisect`'s options as a dataclass), its defaults and the
metrics it can decide on: apart from bakeoff/bisect/command.py so that the command line can
declare its options without loading the measuring machinery (every `bakeoff` start-up
imports the command line; docs/ARCHITECTURE.md, "Start-up").
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bakeoff.cmd import definition as adhoc

# instructions: counted under cachegrind, one execution per trial (cmd --instructions 1).
METRICS = (*(m.name for m in adhoc.METRICS if m.name != "peak_rss"), adhoc.INSTRUCTIONS.name)

DEFAULT_THRESHOLD_PCT = 5.0
DEFAULT_BUDGET_ROUNDS = 200
DEFAULT_STEP_TIME_S = 600.0
DEFAULT_RUNS = 3


@dataclass(frozen=True)
class Args:
    repo: Path
    good: str
    bad: str
    build: str
    measure: str
    threshold: str = f"{DEFAULT_THRESHOLD_PCT:g}%"
    budget: int = DEFAULT_BUDGET_ROUNDS
    step_time: float = DEFAULT_STEP_TIME_S
    runs: int = DEFAULT_RUNS
    metric: str = "wall_time"
    shell: bool = False
    seed: int = 1
    out: Path | None = None
    cache: Path | None = None
