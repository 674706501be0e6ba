"""What a question's independent check leaves unsettled, said after its answer
(report/answers/checked.py, model.Question.checked), and the rooms whose checks do not
reproduce every headline figure saying so where the headline is printed."""

from __future__ import annotations

import re

from bakeoff.declare.model import Question
from bakeoff.declare.questions import question_from_dict
from bakeoff.declare.registry import discover
from bakeoff.report.answers.checked import with_checked
from bakeoff.report.answers.common import Answer
from conftest import REPO


def _answer(text: str, short: str) -> Answer:
    return Answer("ask?", "ratio", text, short, "", ())


def test_the_note_follows_the_answer_in_full_and_short() -> None:
    q = Question("ask?", "ratio", checked="its figure turns on the layout").to_dict()
    got = with_checked(_answer("At 64 B, hash is 2.00× slower.", "At 64 B: 2.00× slower"), q)
    assert got is not None
    assert got.text == ("At 64 B, hash is 2.00× slower. Independent check: its figure turns "
                        "on the layout.")
    assert got.short == ("At 64 B: 2.00× slower. Independent check: part of it open (the "
                         "answer below says what).")
    named = Question("ask?", "ratio", checked="Poisson agrees").to_dict()
    got = with_checked(_answer("x.", "x"), named)
    assert got is not None and got.text == "x. Independent check: Poisson agrees."


def test_no_note_leaves_the_answer_as_it_was() -> None:
    a = _answer("x.", "x")
    assert with_checked(a, Question("ask?", "ratio").to_dict()) is a
    assert with_checked(a, {"ask": "ask?", "form": "ratio"}) is a  # a run from before
    assert with_checked(None, Question("ask?", "ratio", checked="c").to_dict()) is None


def test_the_note_survives_the_results_record() -> None:
    q = Question("ask?", "overhead", checked="open")
    assert question_from_dict(q.to_dict()) == q


def test_rooms_with_an_unsettled_check_say_so_at_their_headline() -> None:
    """heap-sampling's and tracing-overhead's headline questions carry what their checks
    leave open, with no figure in it (figures change run to run; the dated note has them)
    and naming a note that exists."""
    rooms = discover()
    for room in ("heap-sampling", "tracing-overhead"):
        checked = rooms[room].questions[0].checked
        assert checked, room
        assert not re.search(r"\d+(\.\d+)?\s*(ns|µs|×|%)", checked), checked
        (doc,) = re.findall(r"docs/notes/[\w.-]+\.md", checked)
        assert (REPO / doc).exists(), doc
