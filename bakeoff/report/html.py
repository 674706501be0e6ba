"""report.html: one self-contained page (plotly.js inlined, no network access of any kind),
put together from the run report's sections (report/run_content.py) and rendered by
report/exporters.py's HtmlExporter, which escapes every string from the data.

It opens on the findings and, per benchmark, the chart they stand on; the rest of the
figures, tables and facts are in collapsed <details> below; then the flame graphs of
`bakeoff profile`, when there are any.
"""

from __future__ import annotations

from collections.abc import Sequence

from bakeoff.analysis.within_run import Analysis
from bakeoff.declare.model import RunRecord
from bakeoff.perf.store import LoadedPair
from bakeoff.report.exporters import HtmlExporter
from bakeoff.report.html_page import script_json
from bakeoff.report.profiles_html import profiles_section
from bakeoff.report.run_content import (
    RunContent,
    contention_paragraph,
    environment,
    run_content,
    run_header_html,
    top_findings_html,
    warnings_list,
)
from bakeoff.report.sections import Block, Details, Item, Items, Page, Paragraph, strong

__all__ = ["render_html", "run_page_html", "script_json"]


def _warnings(run: RunRecord, analysis: Analysis) -> list[Block]:
    """Collapsed under a line that counts them; an incomplete run is said in the open."""
    out: list[Block] = []
    if run.status != "complete":
        out.append(Paragraph(("This run is ", strong(run.status), ": the figures cover only "
                              "the trials recorded before it stopped."), "warnings"))
    warnings = warnings_list(run, analysis)
    if not warnings:
        return [*out, Paragraph(("No noise warnings for this run.",), "ok")]
    return [*out, Details(f"⚠ Warnings ({len(warnings)}): conditions that widen intervals or "
                          "bias figures", (Items(tuple(Item((w,)) for w in warnings)),),
                          style="warnings", anchor="warnings")]


def run_page_html(content: RunContent, profiles: Sequence[LoadedPair] = ()) -> Page:
    run, analysis, benches = content.run, content.analysis, content.benchmarks
    nav = [(c.anchor, c.info_name, c.title) for c in benches]
    nav += [("profiles", "Profiles", "")] if profiles else []
    return Page(
        title="bakeoff report", html_title=f"bakeoff report {run.run_id}",
        intro=(*contention_paragraph(run), run_header_html(run)),
        lead=(top_findings_html(content.found), *_warnings(run, analysis)),
        nav=(*nav, ("environment", "Environment", "")),
        body=(*(c.report_section() for c in benches),
              *profiles_section(profiles, run.benchmarks),
              Details("Environment: the run and the host", environment(run),
                      anchor="environment")))


def render_html(run: RunRecord, analysis: Analysis, profiles: Sequence[LoadedPair] = ()) -> str:
    return HtmlExporter().page(run_page_html(run_content(run, analysis), profiles))
