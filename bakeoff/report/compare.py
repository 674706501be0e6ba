"""`bakeoff compare` output: a rich table for the terminal, markdown for pull requests."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from bakeoff.model import RunRecord
from bakeoff.report.facts import machine
from bakeoff.report.format import case_params_label, fmt_p, fmt_range, fmt_ratio, fmt_value
from bakeoff.report.markdown import md_escape
from bakeoff.run_comparison import CANT_TELL, CaseChange, RunComparison

_STYLE = {"faster": "bold green", "slower": "bold red", "same": "dim", CANT_TELL: "yellow"}
NO_RATIO = "no ratio (the old median is not told apart from 0, or the new one has the other sign)"
HEADERS = ["benchmark", "variant", "params", "old median (95% CI)", "new median (95% CI)",
           "new / old (95% CI)", "change", "verdict", "p (Holm)"]


def _cells(c: CaseChange) -> list[str]:
    of = "|value| " if c.signed else ""  # a signed metric is compared by its size
    return [
        c.case.benchmark, c.case.variant, case_params_label(c.info, c.case),
        f"{of}{fmt_value(c.old.median, c.unit)} "
        f"({fmt_range(c.old.ci_low, c.old.ci_high, c.unit)})",
        f"{of}{fmt_value(c.new.median, c.unit)} "
        f"({fmt_range(c.new.ci_low, c.new.ci_high, c.unit)})",
        fmt_ratio(c.ratio.ratio, c.ratio.ci_low, c.ratio.ci_high),
        f"{(c.ratio.ratio - 1) * 100:+.1f}%", c.verdict,
        fmt_p(c.p_holm) if c.tellable else "— (drift untold)",
    ]


def _machines(cmp: RunComparison) -> tuple[str, str]:
    return machine(cmp.old.host).sentence(), machine(cmp.new.host).sentence()


def _run_ids(runs: list[RunRecord], first: RunRecord) -> str:
    return ", ".join(r.run_id for r in runs) if len(runs) > 1 else first.run_id


def print_comparison(cmp: RunComparison, console: Console) -> None:
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


def render_comparison_markdown(cmp: RunComparison) -> str:
    old_m, new_m = _machines(cmp)
    lines = [f"**old**: `{md_escape(_run_ids(cmp.olds, cmp.old))}` on {md_escape(old_m)}  ",
             f"**new**: `{md_escape(_run_ids(cmp.news, cmp.new))}` on {md_escape(new_m)}", "",
             md_escape(cmp.basis_sentence()), "",
             "| " + " | ".join(HEADERS) + " |",
             "|" + "|".join("---" if i < 3 or i == 7 else "---:" for i in range(len(HEADERS))) + "|"]
    lines += ["| " + " | ".join(md_escape(x) for x in _cells(c)) + " |" for c in cmp.changes]
    for label, cases in (("Only in old", cmp.only_old), ("Only in new", cmp.only_new),
                         (NO_RATIO[0].upper() + NO_RATIO[1:], cmp.no_ratio)):
        if cases:
            lines += ["", f"{label}: " + "; ".join(md_escape(c.key) for c in cases)]
    return "\n".join(lines) + "\n"
