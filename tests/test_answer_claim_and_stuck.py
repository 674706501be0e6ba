"""A question's claim named before its answer (report/answers/claim.py), and a stuck
estimator's error said in words rather than as a tight RMS interval (answers/stuck.py)."""

from __future__ import annotations

from bakeoff.declare.model import Question
from bakeoff.report.answers.claim import with_claim
from bakeoff.report.answers.common import Answer
from bakeoff.report.answers.stuck import stuck_words
from bakeoff.stats.estimates import signed_error


def _answer(text: str, short: str) -> Answer:
    return Answer("ask?", "ratio", text, short, "", ())


def test_the_claim_goes_before_the_answer_in_full_and_short() -> None:
    q = Question("ask?", "ratio", claim="seed: hash 3–62× faster").to_dict()
    got = with_claim(_answer("At workload=inline-64, stateless-hash is 2.00× slower.",
                             "At workload=inline-64: stateless-hash 2.00× slower."), q)
    assert got is not None
    assert got.text == ("Seed: hash 3–62× faster; here: at workload=inline-64, stateless-hash "
                        "is 2.00× slower.")
    assert got.short.startswith("Seed: hash 3–62× faster; here: at workload=inline-64:")


def test_no_claim_leaves_the_answer_as_it_was() -> None:
    a = _answer("RMS of x: 1 %.", "RMS (95% CI): x 1 %.")
    assert with_claim(a, Question("ask?", "error").to_dict()) is a
    assert with_claim(None, Question("ask?", "ratio", claim="c").to_dict()) is None
    # A run recorded before questions had claims: no key at all.
    assert with_claim(a, {"ask": "ask?", "form": "error"}) is a


def test_an_acronym_keeps_its_case_after_the_claim() -> None:
    got = with_claim(_answer("RMS of x: 1 %.", "RMS: x."), {"claim": "seed: 2 %"})
    assert got is not None and got.text == "Seed: 2 %; here: RMS of x: 1 %."


def test_an_estimate_of_0_in_every_run_is_said_so() -> None:
    e = signed_error([[-100.0] * 4 for _ in range(5)])
    assert stuck_words(e, "%") == "estimates 0 in every run (20 of 20: error -100 %; RMS 100 %)"


def test_most_runs_on_one_value_say_how_many() -> None:
    e = signed_error([[-100.0] * 4 for _ in range(4)] + [[-100.0, -100.0, 300.0, -100.0]])
    words = stuck_words(e, "%")
    assert words is not None and words.startswith("estimates 0 in 19 of 20 runs (error -100 %")
    e = signed_error([[3.0] * 4 for _ in range(3)] + [[3.0, 1.0, 2.0, 4.0]] * 2)
    assert stuck_words(e, "%") == "errs by the same 3.00 % in 14 of 20 runs (RMS 2.90 %)"


def test_spread_errors_keep_their_rms_interval() -> None:
    e = signed_error([[1.0, -2.0, 3.0, -4.0], [0.5, 1.5, -2.5, 3.5], [2.0, -1.0, 0.0, 1.0]])
    assert stuck_words(e, "%") is None
    # One run: no "every run" from a single value.
    assert stuck_words(signed_error([[5.0]]), "%") is None
