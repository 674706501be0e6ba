"""Answers: the questions a benchmark declares (BenchmarkInfo.questions, model.Question),
answered first, one finding per question, before any generic contrast.

Which cases a question reads is resolved once, by declare/questions.py (common.readings);
each form of answer, a module of its own, reads the figures the analysis already holds for
them, with their CIs and trials:
- ratio.py: the ratio of medians to the reference at each point of `at`, with the kernel
  counters that explain it;
- crossover.py: along `along`, where that ratio crosses 1; an unsettled crossing is said to
  be one, never stated as a crossover;
- overhead.py: the Fit's intercept a (what a variant adds per operation) and, for each of the
  benchmark's crossover_ratios, from which value of `along` the ratio stays under it;
- added.py: the shift (variant - reference, Hodges-Lehmann) with its CI at each point;
- error.py: the RMS of each signed metric named (CaseResult.signed) at each point;
- claim.py: a question's claim (model.Question.claim) named before its answer;
- checked.py: what its independent check leaves unsettled (model.Question.checked), after it.
Diagnostic and control variants never answer. Each Answer has its full text (the
benchmark's section), a short form for the top of a report (speed-ups as factors with their
CIs, the lead counter of the why kept apart as short_why), and its Figures, which `bakeoff
compare` and the report across hosts set side by side. Nothing here knows a benchmark by
name; sentences are raw text, each renderer escapes them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bakeoff.analysis.within_run import BenchmarkAnalysis
from bakeoff.report.answers.added import added_answer
from bakeoff.report.answers.checked import with_checked
from bakeoff.report.answers.claim import with_claim
from bakeoff.report.answers.common import Answer, Figure, figures_agree
from bakeoff.report.answers.crossover import crossover_answer
from bakeoff.report.answers.error import error_answer
from bakeoff.report.answers.overhead import overhead_answer
from bakeoff.report.answers.ratio import ratio_answer

__all__ = ["Answer", "Figure", "answers", "figures_agree", "unanswered"]

FORMS: dict[str, Callable[[BenchmarkAnalysis, dict[str, Any]], Answer | None]] = {
    "ratio": ratio_answer, "crossover": crossover_answer, "overhead": overhead_answer,
    "added": added_answer, "error": error_answer,
}


def answers(ba: BenchmarkAnalysis) -> list[tuple[dict[str, Any], Answer | None]]:
    """Each declared question with its answer; None when the run measured nothing it reads
    (its variants skipped, or its points not in the profile run)."""
    return [(q, with_checked(with_claim(FORMS[q["form"]](ba, q), q), q)
             if q.get("form") in FORMS else None)
            for q in ba.info.questions]


def unanswered(q: dict[str, Any], ba: BenchmarkAnalysis | None = None) -> str:
    below = [r for r in (ba.for_metric(str(q.get("metric") or ba.info.primary_metric))
                         if ba is not None else []) if r.below_resolution]
    if below:
        names = ", ".join(dict.fromkeys(r.case.variant for r in below))
        return (f"Not answered by this run: {names} cannot be told from 0 once "
                f"{below[0].below_resolution} is taken off (below its resolution), and a "
                "ratio needs positive figures on both sides; give each execution more work "
                "(a loop of it), or compare without the shell (--no-shell).")
    return (f"Not answered by this run: it measured none of the cases \"{q['ask']}\" reads "
            "(skipped, or not in the profile run).")
