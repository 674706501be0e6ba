"""report.md, the answer to paste into a pull request, an issue or a mailing-list thread
(findings and one compact table per benchmark), and details.md beside it (every metric's
full table, the counters, skipped cases, failed trials, host facts). GitHub-flavoured.

Both are put together from the run report's sections (report/run_content.py) and rendered by
report/exporters.py's MarkdownExporter, which escapes every string from the data
(report/md_text.py: a '|' cannot split a table cell, '<tag>' cannot become HTML).
"""

from __future__ import annotations

from bakeoff.analysis.within_run import Analysis
from bakeoff.declare.model import RunRecord
from bakeoff.report.exporters import MarkdownExporter
from bakeoff.report.md_text import md_escape
from bakeoff.report.run_content import (
    RunContent,
    contention_paragraph,
    environment,
    machine_text,
    run_content,
    top_findings_md,
    warnings_list,
)
from bakeoff.report.sections import Item, Items, Page, Paragraph, Section, strong
from bakeoff.report.words import verdict_rule

__all__ = ["md_escape", "render_details", "render_markdown", "run_pages_md"]


def _warnings(run: RunRecord, analysis: Analysis) -> Section:
    warnings = warnings_list(run, analysis)
    if run.status != "complete":
        warnings.insert(0, f"this run is {run.status}: the figures cover only the trials "
                           "recorded before it stopped")
    listed = (Items(tuple(Item((f"⚠ {w}",)) for w in warnings)) if warnings
              else Paragraph(("No noise warnings for this run.",)))
    return Section(f"Warnings ({len(warnings)})", (listed,))


def run_pages_md(content: RunContent) -> tuple[Page, Page]:
    """report.md: the findings first, one compact table per benchmark, then the warnings;
    details.md: everything report.md leaves out."""
    run, analysis, benches = content.run, content.analysis, content.benchmarks
    incomplete = ([Paragraph(("⚠ ", strong(f"This run is {run.status}"), ": the figures cover "
                              "only the trials recorded before it stopped."))]
                  if run.status != "complete" else [])
    threshold = analysis.benchmarks[0].threshold if analysis.benchmarks else 0.02
    report = Page(
        title=f"bakeoff results: {run.run_id}",
        intro=(*contention_paragraph(run),
               Paragraph((*machine_text(run), " Every figure has its 95% CI (trial-t: t over "
                          "trials) and its n; full tables, every metric and counter, skipped "
                          "cases, failures and host facts are in details.md beside this "
                          "file.")), *incomplete),
        lead=(top_findings_md(content.found),),
        body=(*(c.report_section() for c in benches), _warnings(run, analysis),
              Paragraph((verdict_rule(threshold),))))
    details = Page(
        title=f"bakeoff details: {run.run_id}",
        intro=(*contention_paragraph(run),
               Paragraph((*machine_text(run), " The findings and the compact tables are in "
                          "report.md.")),),
        lead=(_warnings(run, analysis),),
        body=(*(c.details_section() for c in benches), Section("Environment", environment(run))))
    return report, details


def render_markdown(run: RunRecord, analysis: Analysis) -> str:
    return MarkdownExporter().page(run_pages_md(run_content(run, analysis))[0])


def render_details(run: RunRecord, analysis: Analysis) -> str:
    return MarkdownExporter().page(run_pages_md(run_content(run, analysis))[1])
