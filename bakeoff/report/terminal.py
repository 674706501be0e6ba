"""The summary printed after a run: one rich table per benchmark, primary metric only, with
its findings; last, the findings that answer the run.

Data strings go in as rich Text, never as markup, so a variant called '[bold]x' prints as
written. Colour is only a hint: the verdict word carries the meaning on a plain terminal.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from bakeoff.analysis.within_run import Analysis, BenchmarkAnalysis
from bakeoff.declare.model import Case, RunRecord
from bakeoff.report import contention
from bakeoff.report.findings import Finding, all_findings, more_trials_hint, tentative_count
from bakeoff.report.tables import CaseRow, case_rows, failed_trials
from bakeoff.report.words import better_phrase

MAX_SKIP_REASONS = 5  # distinct skip reasons printed per benchmark; report.md has them all
_VERDICT_STYLE = {"faster": "green", "slower": "red", "equivalent": "cyan",
                  "inconclusive": "yellow", "—": "", "n/a": "dim"}


def _params_cell(ba: BenchmarkAnalysis, row: CaseRow, single: str | None) -> str:
    if single is None:
        return row.cells["params"]
    return ba.info.param_label(single, row.result.case.param(single))


def _table(ba: BenchmarkAnalysis, contended: frozenset[Case] = frozenset()) -> Table:
    info = ba.info
    metric = info.primary_metric
    unit = str(info.metric(metric)["unit"])
    better = better_phrase(ba, metric)
    marked = {r.case for r in ba.results} & contended
    caption = f"baseline: {info.baseline}; ratio = variant median / baseline median"
    table = Table(
        title=Text(f"{info.title} — {metric} ({unit}, {better})"),
        caption=Text(caption + (f"; {contention.legend()}" if marked else "")),
        title_justify="left", caption_justify="left",
    )
    # On a narrow or piped console (80 columns) cells wrap rather than end in '…': a cut
    # variant name or CI end would silently change what the row says.
    # With one param its name goes in the header ('size' over '4 KiB'): a terminal is narrow.
    single = info.params[0]["name"] if len(info.params) == 1 else None
    table.add_column("variant", overflow="fold")
    table.add_column(Text(single or "params"), overflow="fold")
    for header in ("n", "median", "95% CI", "ratio (95% CI)"):
        table.add_column(Text(header), justify="right", overflow="fold")
    table.add_column("verdict", no_wrap=True)
    for r in case_rows(ba, metric):
        c = r.cells
        variant = Text(c["variant"]) + (Text(" (baseline)", style="dim") if r.is_baseline else "")
        table.add_row(
            variant, Text(_params_cell(ba, r, single)), Text(c["n"]),
            Text(c["median"] + (f" {contention.CONTENDED_MARK}" if r.result.case in marked
                                else "")),
            Text(c["ci"]), Text(c["ratio"]), Text(c["verdict"], style=_VERDICT_STYLE[r.verdict]),
        )
    return table


def _print_skip_reasons(ba: BenchmarkAnalysis, console: Console) -> None:
    """Each distinct reason once, with how many cases it skipped: a user without root or BPF
    reads here, not in a report, why a benchmark did not run and what fixes it."""
    counts: dict[str, int] = {}
    for s in ba.skips:
        counts[s.reason] = counts.get(s.reason, 0) + 1
    shown = list(counts.items())[:MAX_SKIP_REASONS]
    for reason, n in shown:
        console.print(Text(f"  skipped ({n}): ", style="yellow") + Text(reason))
    if len(counts) > len(shown):
        console.print(Text(f"  and {len(counts) - len(shown)} other reason(s): see report.md",
                           style="yellow"))


def _finding(f: Finding, bullet: str = "• ") -> Text:
    return Text(bullet) + Text(f.text, style="dim" if f.tentative else "")


def print_summary(run: RunRecord, analysis: Analysis, console: Console) -> None:
    """Per benchmark its table, the answers to its questions and its other findings; then the
    warnings; last, closest to the prompt, the answers (findings), a line per benchmark."""
    found = all_findings(analysis)
    rc = contention.of_run(run)
    if rc is not None:  # first: every figure below is read knowing it
        console.print(Text(contention.sentence(rc), style="yellow" if rc.contended else "dim"))
        console.print()
    for ba, bf in zip(analysis.benchmarks, found, strict=True):
        console.print(_table(ba, contention.contended_cases(run, ba.info.name)))
        for f in bf.answers:
            console.print(Text("• ") + Text(f.question + " ", style="bold")
                          + Text(f.text, style="dim" if f.tentative else ""))
        if bf.answers and bf.findings:
            console.print(Text("Other contrasts", style="bold"))
        for f in bf.findings:
            if f.kind not in ("skipped", "failed"):  # said below, with their reasons
                console.print(_finding(f))
        failed = len(failed_trials(run, ba))
        if ba.skips or failed:
            console.print(Text(
                f"{len(ba.skips)} case(s) skipped, {failed} trial(s) failed: "
                "see report.md or report.html for the reasons", style="yellow",
            ))
        _print_skip_reasons(ba, console)
        console.print()
    if run.status != "complete":
        console.print(Text(f"warning: this run is {run.status}; figures cover only the trials "
                           "recorded before it stopped", style="yellow"))
    for w in [*run.warnings, *analysis.warnings]:
        console.print(Text(f"warning: {w}", style="yellow"))
    if found:
        console.print()
        console.print(Text("Findings", style="bold"))
        for bf in found:
            said = " ".join(f.headline_text for f in bf.headline)
            console.print(Text(f"• {bf.analysis.info.name}: ", style="bold") + Text(said))
        unsure = sum(tentative_count(bf.every) for bf in found)
        if unsure:
            console.print(Text(f"{unsure} of {sum(len(bf.every) for bf in found)} findings "
                               f"are tentative, each saying why{more_trials_hint(found)}",
                               style="dim"))
