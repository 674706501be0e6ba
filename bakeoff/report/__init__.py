"""Reports from a recorded run: report.html (self-contained), report.md with details.md, and
the terminal.

The content is built once as sections (run_content.py, sections.py); an exporter per format
renders them (exporters.py); writer.py is the one place that writes files.
"""

from __future__ import annotations

from pathlib import Path

from bakeoff.analysis.within_run import Analysis
from bakeoff.declare.model import RunRecord
from bakeoff.perf import store as profile_store
from bakeoff.report.exporters import HtmlExporter, MarkdownExporter
from bakeoff.report.html import render_html, run_page_html
from bakeoff.report.markdown import render_details, render_markdown, run_pages_md
from bakeoff.report.run_content import run_content
from bakeoff.report.writer import write_outputs

__all__ = ["render_details", "render_html", "render_markdown", "write_reports"]


def write_reports(run: RunRecord, analysis: Analysis, out_dir: Path) -> list[Path]:
    """Write report.html, report.md and details.md into out_dir; returns their paths in
    that order."""
    content = run_content(run, analysis)
    report_md, details_md = run_pages_md(content)
    md = MarkdownExporter()
    return write_outputs(out_dir, [
        # With the flame graphs `bakeoff profile` left beside the run, if any.
        ("report.html", HtmlExporter().page(run_page_html(content, profile_store.load(out_dir)))),
        ("report.md", md.page(report_md)),
        ("details.md", md.page(details_md)),
    ])
