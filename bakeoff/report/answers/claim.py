"""A question that tests a claim (model.Question.claim, e.g. what the project a room replaces
said: "seed: hash 3–62× faster") has its answer read against it: "<claim>; here: <answer>",
in full and at the top of a report, so the reader sees the claim and what was measured side
by side. What the claim says is not parsed or judged: the measured figures beside it are."""

from __future__ import annotations

import dataclasses
from typing import Any

from bakeoff.report.answers.common import Answer


def with_claim(answer: Answer | None, q: dict[str, Any]) -> Answer | None:
    """The answer with the question's claim named before it; as it was without one."""
    claim = str(q.get("claim") or "").strip()
    if answer is None or not claim:
        return answer
    return dataclasses.replace(answer, text=_beside(claim, answer.text),
                               short=_beside(claim, answer.short))


def _beside(claim: str, said: str) -> str:
    if not said:
        return claim
    # "At workload=…" reads on as "at workload=…"; a name or an acronym keeps its case.
    first = said[0].lower() if said[1:2].islower() else said[0]
    return f"{claim[0].upper()}{claim[1:]}; here: {first}{said[1:]}"
