"""What a question's independent check leaves unsettled (model.Question.checked), said where
its answer is printed: "... Independent check: <checked>" in full, and at the top of a
report a short pointer to it (the full note, a few lines, pushed the first chart below the
first screen), so a figure that a program written apart from the room's code does not
reproduce is never read without that said beside it. The words are the room's; no figure
is made up here."""

from __future__ import annotations

import dataclasses
from typing import Any

from bakeoff.report.answers.common import Answer


def with_checked(answer: Answer | None, q: dict[str, Any]) -> Answer | None:
    """The answer with the question's independent-check note after it; as it was without
    one (and for runs recorded before questions had one)."""
    checked = str(q.get("checked") or "").strip()
    if answer is None or not checked:
        return answer
    return dataclasses.replace(answer, text=_after(answer.text, checked),
                               short=_after(answer.short, SHORT))


# At the top of a report, where each answer is one line.
SHORT = "part of it open (the answer below says what)"


def _after(said: str, checked: str) -> str:
    note = f"Independent check: {checked}"  # as written: it may begin with a name
    if not note.endswith("."):
        note += "."
    if not said:
        return note
    return f"{said.rstrip()} {note}" if said.rstrip().endswith(".") else f"{said.rstrip()}. {note}"
