"""Reports from a recorded run: report.html (self-contained), report.md with details.md, and
the terminal.

The renderers take (RunRecord, Analysis) and return text; only write_reports touches disk.
"""

from __future__ import annotations

from pathlib import Path

from bakeoff.analysis.within_run import Analysis
from bakeoff.core.errors import UsageError
from bakeoff.declare.model import RunRecord
from bakeoff.perf import store as profile_store
from bakeoff.report.html import render_html
from bakeoff.report.markdown import render_details, render_markdown
from bakeoff.run import interrupts
from bakeoff.store.results import write_atomic

__all__ = ["render_details", "render_html", "render_markdown", "write_reports"]


def write_reports(run: RunRecord, analysis: Analysis, out_dir: Path) -> list[Path]:
    """Write report.html, report.md and details.md into out_dir; returns their paths in
    that order."""
    outputs = [
        # With the flame graphs `bakeoff profile` left beside the run, if any.
        (out_dir / "report.html", render_html(run, analysis, profile_store.load(out_dir))),
        (out_dir / "report.md", render_markdown(run, analysis)),
        (out_dir / "details.md", render_details(run, analysis)),
    ]
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        for path, text in outputs:
            interrupts.checkpoint(f"report:{path.name}")  # each file whole, or not at all
            write_atomic(path, text)
    except OSError as exc:
        raise UsageError(
            f"cannot write reports to {out_dir}: {exc.strerror or exc} "
            "(check that the directory exists and is writable, or choose another one)"
        ) from None
    return [path for path, _ in outputs]
