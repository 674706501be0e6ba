"""The report's sections rendered by each exporter (bakeoff/report/exporters.py): one page,
both formats, the text from the data escaped in each, and what only one format shows."""

from __future__ import annotations

import re

from bakeoff.report.exporters import HtmlExporter, MarkdownExporter
from bakeoff.report.sections import (
    Cell,
    Column,
    Details,
    Item,
    Items,
    Only,
    Page,
    Paragraph,
    Preformatted,
    Section,
    Span,
    Table,
    strong,
)

HOSTILE = "<script>alert(1)</script> | *x* `y` # z"


def _page() -> Page:
    table = Table((Column("variant"), Column("ratio", numeric=True)),
                  ((Cell(HOSTILE, swatch="#123456", tag="baseline"), Cell("0.5", "faster")),))
    return Page(
        title=f"run {HOSTILE}",
        intro=(Paragraph(("Machine: ", strong(HOSTILE), ".")),),
        lead=(Section("Findings", (Items((Item(("a ", Span("[tentative: few]", "why")),
                                          link="bench-0"),)),), anchor="findings"),),
        nav=(("bench-0", "bench", HOSTILE),),
        body=(Section("Bench", (
            table,
            Only("html", (Paragraph(("only in HTML",)),)),
            Only("md", (Paragraph(("only in Markdown",)),)),
            Details("more", (Preformatted("``` a fence\nsecond line"),)),
        ), anchor="bench-0", aside="name"),))


def test_html_escapes_every_string_and_keeps_what_only_it_shows() -> None:
    html = HtmlExporter().page(_page())
    assert "<script>alert" not in html.split('<script id="plotly-js">')[0]
    assert html.count("&lt;script&gt;alert(1)&lt;/script&gt;") == 5  # title, h1, b, cell, nav
    assert '<td class="num faster">0.5</td>' in html
    assert '<span class="swatch" style="background:#123456"></span>' in html
    assert '<span class="baseline-tag">(baseline)</span>' in html
    assert '<li><a href="#bench-0">a </a><span class="why">[tentative: few]</span></li>' in html
    assert '<section id="bench-0"><h2>Bench <span class="muted mono">name</span></h2>' in html
    assert "only in HTML" in html and "only in Markdown" not in html
    assert '<details class="more"><summary>more</summary><pre>``` a fence' in html


def test_markdown_escapes_every_string_and_keeps_what_only_it_shows() -> None:
    md = MarkdownExporter().page(_page())
    assert md.startswith("# run \\<script\\>alert(1)\\</script\\> \\| \\*x\\* \\`y\\` # z\n")
    assert "Machine: **\\<script\\>" in md
    row = next(line for line in md.splitlines() if line.startswith("| \\<script"))
    assert len(re.findall(r"(?<!\\)\|", row)) == 3  # two cells: no pipe of the data splits one
    assert "(baseline)" in row and "| 0.5 |" in row
    assert "| variant | ratio |\n|---|---:|" in md
    assert "## Bench (name)" in md and "- a \\[tentative: few\\]" in md
    assert "only in Markdown" in md and "only in HTML" not in md
    assert "**more**\n\n````text\n``` a fence\nsecond line\n````" in md  # no text ends the fence
