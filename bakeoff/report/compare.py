"""`bakeoff compare` output: a rich table for the terminal, markdown for pull requests (as
sections, rendered by the Markdown exporter).

Both open on the benchmarks' declared questions (report/answers/), each answer's figures
old against new, before the cases. A figure "holds" when its two CIs share a range; it
"differs" only when they do not *and* the table below calls a case of that benchmark faster or
slower (the table's CIs allow for run-to-run drift, an answer's within-run CIs do not);
otherwise it is "inconclusive", as the table is. The question block never says more than the
table.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from bakeoff.analysis.across_runs import CaseChange, RunComparison
from bakeoff.analysis.within_run import BenchmarkAnalysis, analyze
from bakeoff.declare.model import BenchmarkInfo, RunRecord
from bakeoff.report.answers import Answer, answers, figures_agree
from bakeoff.report.exporters import MarkdownExporter
from bakeoff.report.facts import machine
from bakeoff.report.format import case_params_label, fmt_p, fmt_ratio, fmt_with_ci
from bakeoff.report.sections import Block, Cell, Column, Paragraph, code, strong, table
from bakeoff.report.sections import Table as SectionTable
from bakeoff.stats import estimates as stats
from bakeoff.stats import verdicts

_STYLE = {verdicts.FASTER: "bold green", verdicts.SLOWER: "bold red",
          verdicts.EQUIVALENT: "cyan", verdicts.INCONCLUSIVE: "yellow"}
HOLDS, DIFFERS = "holds", "differs"
_QUESTION_STYLE = {HOLDS: "green", DIFFERS: "bold red", verdicts.INCONCLUSIVE: "yellow"}
MAX_SETTLE_LINES = 10
NO_RATIO = "no ratio (the old median is not told apart from 0, or the new one has the other sign)"
HEADERS = ["benchmark", "variant", "params", "old median (95% CI)", "new median (95% CI)",
           "new / old (95% CI)", "change", "verdict", "p (Holm)"]


def _cells(c: CaseChange) -> list[str]:
    of = "|value| " if c.signed else ""  # a signed metric is compared by its size
    return [
        c.case.benchmark, c.case.variant, case_params_label(c.info, c.case),
        f"{of}{fmt_with_ci(c.old.median, c.old.ci_low, c.old.ci_high, c.unit, '')}",
        f"{of}{fmt_with_ci(c.new.median, c.new.ci_low, c.new.ci_high, c.unit, '')}",
        fmt_ratio(c.ratio.ratio, c.ratio.ci_low, c.ratio.ci_high),
        f"{(c.ratio.ratio - 1) * 100:+.1f}%", c.verdict,
        fmt_p(c.p_holm) if c.tellable else "— (drift not measured)",
    ]


def settle_lines(cmp: RunComparison) -> list[str]:
    """Each inconclusive case's what-would-settle-it (one line for the cases that share it)."""
    by_text: dict[str, list[str]] = {}
    for c in cmp.changes:
        if c.verdict == verdicts.INCONCLUSIVE and c.settle:
            by_text.setdefault(c.settle, []).append(c.case.key)
    lines = [(f"inconclusive: {keys[0]}" if len(keys) == 1 else
              f"inconclusive: {len(keys)} cases ({', '.join(keys[:3])}"
              f"{', …' if len(keys) > 3 else ''})") + f": {text}"
             for text, keys in by_text.items()]
    return lines[:MAX_SETTLE_LINES] + ([f"… and {len(lines) - MAX_SETTLE_LINES} more"]
                                       if len(lines) > MAX_SETTLE_LINES else [])


@dataclass(frozen=True)
class QuestionChange:
    """A declared question, answered by the old run and by the new one."""

    benchmark: str
    ask: str
    # Per figure of the answers: what it is, as the old and the new run say it, and whether
    # the two agree (figures_agree: CIs that share a range, or the same statement).
    rows: list[tuple[str, str, str, bool]]
    # The comparison's table calls a case of this benchmark faster or slower: only then may
    # a figure whose CIs part say "differs" (state()).
    table_calls: bool = False

    def state(self, agree: bool) -> str:
        if agree:
            return HOLDS
        return DIFFERS if self.table_calls else verdicts.INCONCLUSIVE


def _as_declared_now(old: BenchmarkInfo, new: BenchmarkInfo) -> BenchmarkInfo:
    """The old run's info with the new one's questions and diagnostic/control marks: a run
    recorded before its room declared them is asked the same questions."""
    marks = {str(v["name"]): v for v in new.variants}

    def marked(v: dict[str, Any]) -> dict[str, Any]:
        now = marks.get(str(v["name"]), {})
        return {**v, **{k: now[k] for k in ("diagnostic", "control") if k in now}}
    return dataclasses.replace(old, questions=new.questions,
                               variants=[marked(v) for v in old.variants])


def question_changes(cmp: RunComparison,
                     threshold: float = stats.DEFAULT_THRESHOLD) -> list[QuestionChange]:
    """Each question the new run's benchmarks declare, old against new, figure by figure."""
    names = [n for n, info in cmp.new.benchmarks.items()
             if info.questions and n in cmp.old.benchmarks]
    if not names:
        return []
    old_run = dataclasses.replace(cmp.old, benchmarks={
        n: _as_declared_now(cmp.old.benchmarks[n], cmp.new.benchmarks[n]) for n in names})
    old_by = {ba.info.name: ba for ba in analyze(old_run, threshold).benchmarks}
    new_by = {ba.info.name: ba for ba in analyze(cmp.new, threshold).benchmarks
              if ba.info.name in names}
    out = []
    for name in names:
        old_answers = _answers_by_ask(old_by[name])
        for ask, new_answer in _answers_by_ask(new_by[name]).items():
            old_answer = old_answers.get(ask)
            old_figs = {f.label: f for f in (old_answer.figures if old_answer else ())}
            rows = []
            for f in (new_answer.figures if new_answer else ()):
                was = old_figs.pop(f.label, None)
                rows.append((f.label, was.shown if was else "not measured", f.shown,
                             was is not None and figures_agree([was, f])))
            rows += [(label, f.shown, "not measured", False) for label, f in old_figs.items()]
            out.append(QuestionChange(name, ask, rows, any(
                c.case.benchmark == name and verdicts.is_called(c.verdict)
                for c in cmp.changes)))
    return out


def _answers_by_ask(ba: BenchmarkAnalysis) -> dict[str, Answer | None]:
    return {str(q["ask"]): a for q, a in answers(ba)}


_QUESTIONS_LEGEND = ("holds: the two CIs share a range; differs: they do not, and the table "
                     "below calls a change; inconclusive: they do not, but the table calls no "
                     "change (run-to-run drift is not ruled out)")


def print_question_changes(changes: list[QuestionChange], console: Console) -> None:
    if not changes:
        return
    console.print(Text(f"Questions: old → new ({_QUESTIONS_LEGEND})", style="bold"))
    for qc in changes:
        console.print(Text(f"{qc.benchmark}: ", style="bold") + Text(qc.ask))
        if not qc.rows:
            console.print(Text("  not answered by either run", style="yellow"))
        for label, old, new, ok in qc.rows:
            console.print(Text(f"  {label}: {old} → {new}: ")
                          + Text(qc.state(ok), style=_QUESTION_STYLE[qc.state(ok)]))
    console.print()


def _question_blocks(changes: list[QuestionChange]) -> list[Block]:
    if not changes:
        return []
    rows = [[qc.benchmark, qc.ask, label, old, new, qc.state(ok)]
            for qc in changes for label, old, new, ok in qc.rows or [("—", "—", "—", False)]]
    return [Paragraph((strong("Questions"), f": each answer old and new; {_QUESTIONS_LEGEND}.")),
            table(["benchmark", "question", "figure", "old", "new", ""], rows)]


def _machines(cmp: RunComparison) -> tuple[str, str]:
    return machine(cmp.old.host).sentence(), machine(cmp.new.host).sentence()


def _run_ids(runs: list[RunRecord], first: RunRecord) -> str:
    return ", ".join(r.run_id for r in runs) if len(runs) > 1 else first.run_id


def print_comparison(cmp: RunComparison, console: Console,
                     threshold: float = stats.DEFAULT_THRESHOLD) -> None:
    print_question_changes(question_changes(cmp, threshold), console)
    old_m, new_m = _machines(cmp)
    table = Table(title=Text(f"old: {_run_ids(cmp.olds, cmp.old)} on {old_m}\n"
                             f"new: {_run_ids(cmp.news, cmp.new)} on {new_m}"),
                  title_justify="left")
    for h in HEADERS:
        table.add_column(Text(h), overflow="fold",
                         justify="right" if h not in ("benchmark", "variant", "params", "verdict")
                         else "left")
    for c in cmp.changes:
        cells = [Text(x) for x in _cells(c)]
        cells[7].stylize(_STYLE[c.verdict])
        table.add_row(*cells)
    console.print(table)
    for label, cases in (("only in old", cmp.only_old), ("only in new", cmp.only_new),
                         (NO_RATIO, cmp.no_ratio)):
        if cases:
            console.print(Text(f"{label}: " + "; ".join(c.key for c in cases), style="yellow"))
    if cmp.changes:
        console.print(Text(cmp.basis_sentence()), soft_wrap=True)
        console.print(Text(cmp.rule_sentence(threshold)), soft_wrap=True)
        for line in settle_lines(cmp):
            console.print(Text(line, style="yellow"), soft_wrap=True)


def render_comparison_markdown(cmp: RunComparison,
                               threshold: float = stats.DEFAULT_THRESHOLD) -> str:
    """The comparison as Markdown blocks (report/sections.py), for a pull request."""
    old_m, new_m = _machines(cmp)
    cases = SectionTable(
        tuple(Column(h, numeric=not (i < 3 or i == 7)) for i, h in enumerate(HEADERS)),
        tuple(tuple(Cell(x) for x in _cells(c)) for c in cmp.changes))
    blocks: list[Block] = [
        Paragraph((strong("old"), ": ", code(_run_ids(cmp.olds, cmp.old)), f" on {old_m}")),
        Paragraph((strong("new"), ": ", code(_run_ids(cmp.news, cmp.new)), f" on {new_m}")),
        Paragraph((cmp.basis_sentence(),)),
        Paragraph((cmp.rule_sentence(threshold),)),
        *_question_blocks(question_changes(cmp, threshold)),
        cases,
    ]
    for label, left in (("Only in old", cmp.only_old), ("Only in new", cmp.only_new),
                        (NO_RATIO[0].upper() + NO_RATIO[1:], cmp.no_ratio)):
        if left:
            blocks.append(Paragraph((f"{label}: " + "; ".join(c.key for c in left),)))
    blocks += [Paragraph((line,)) for line in settle_lines(cmp)]
    return MarkdownExporter().fragment(blocks)
