"""Run metadata as (label, text) rows, the same in every report; host facts' rows are
bakeoff.machine.fact_rows (the analysis across hosts reads them too)."""

from __future__ import annotations

import shlex

from bakeoff.declare.model import RunRecord
from bakeoff.machine.fact_rows import Machine, fact_text, flatten_facts, machine

__all__ = ["Machine", "fact_text", "flatten_facts", "machine", "run_rows"]


def run_rows(run: RunRecord) -> list[tuple[str, str]]:
    return [
        ("run id", run.run_id),
        ("status", run.status),
        ("profile", run.profile),
        ("seed", str(run.seed)),
        ("command", shlex.join(run.argv)),
        ("started", run.started_at),
        ("finished", run.finished_at or "— (not finished)"),
        ("schema version", str(run.schema_version)),
    ]
