"""One exporter per format renders a `Page` of sections (report/sections.py), as hyperfine
has one Exporter per format: HTML (self-contained: plotly.js inlined, the charts drawn from
one JSON block) and GitHub-flavoured Markdown. Every string is escaped here, once.

The same block reads the same in both; where a format cannot show a thing, its exporter says
what it does instead (Markdown leaves charts out, lists a collapsed part in the open, and
writes a cell's colour swatch as nothing and its tag in brackets).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from bakeoff.report.html_page import CSS, INIT_JS, Figures, esc, plotly_script, script_json
from bakeoff.report.md_text import fenced, md_escape
from bakeoff.report.sections import (
    Block,
    Cell,
    Column,
    Columns,
    Details,
    Drawing,
    Figure,
    Inline,
    Item,
    Items,
    Only,
    Page,
    Paragraph,
    Preformatted,
    Section,
    Table,
    Text,
)


class Exporter(Protocol):
    def page(self, page: Page) -> str:
        """The whole file's text."""
        ...


def _cls(*names: str) -> str:
    joined = " ".join(n for n in names if n)
    return f' class="{esc(joined)}"' if joined else ""


class HtmlExporter:
    """One self-contained HTML file per page; its figures are collected as blocks are
    rendered, so each chart's div and its JSON share one id."""

    def __init__(self) -> None:
        self.figures = Figures()

    def page(self, page: Page) -> str:
        self.figures = Figures()
        intro = "".join(self.block(b) for b in page.intro)
        lead = "".join(self.block(b) for b in page.lead)
        body = "".join(self.block(b) for b in page.body)
        nav = ""
        if page.nav:
            links = "".join(f'<li><a href="#{esc(anchor)}"{self._title(title)}>{esc(text)}</a></li>'
                            for anchor, text, title in page.nav)
            nav = f"<nav><ul>{links}</ul></nav>"
        return (
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{esc(page.html_title or page.title)}</title>"
            f"<style>{CSS}{page.css}</style></head><body>"
            # The links beside the title, so the first screen keeps its height for the
            # findings and the first chart.
            f'<header><div class="masthead"><h1>{esc(page.title)}</h1>{nav}</div>{intro}'
            f"</header>{lead}{body}"
            f'<script id="plotly-js">{plotly_script()}</script>'
            f'<script type="application/json" id="bakeoff-figures">'
            f"{script_json(self.figures.entries)}</script><script>{INIT_JS}</script>"
            "</body></html>\n")

    @staticmethod
    def _title(title: str) -> str:
        return f' title="{esc(title)}"' if title else ""

    def inline(self, text: Text) -> str:
        return "".join(self._span(part) for part in text)

    @staticmethod
    def _span(part: Inline) -> str:
        if isinstance(part, str):
            return esc(part)
        tag = {"strong": "b", "code": "code"}.get(part.style)
        if tag:
            return f"<{tag}>{esc(part.text)}</{tag}>"
        return f'<span class="{esc(part.style)}">{esc(part.text)}</span>'

    def block(self, block: Block) -> str:
        if isinstance(block, Paragraph):
            return f"<p{_cls(block.style)}>{self.inline(block.text)}</p>"
        if isinstance(block, Items):
            return f"<ul{_cls(block.style)}>{''.join(self._item(i) for i in block.items)}</ul>"
        if isinstance(block, Table):
            return self.table(block)
        if isinstance(block, Figure):
            return self.figures.place(block.chart, block.name, heading=block.heading)
        if isinstance(block, Drawing):
            return self.figures.place_figure(block.figure, block.name)
        if isinstance(block, Only):
            return "".join(self.block(b) for b in block.blocks) if block.format == "html" else ""
        if isinstance(block, Preformatted):
            return f"<pre>{esc(block.text)}</pre>"
        if isinstance(block, Details):
            anchor = f' id="{esc(block.anchor)}"' if block.anchor else ""
            opened = " open" if block.open else ""
            inner = "".join(self.block(b) for b in block.blocks)
            return (f"<details{_cls(block.style)}{anchor}{opened}><summary>{esc(block.summary)}"
                    f"</summary>{inner}</details>")
        if isinstance(block, Columns):
            cols = "".join("<div>" + "".join(self.block(b) for b in col) + "</div>"
                           for col in block.columns)
            return f"<div{_cls(block.style)}>{cols}</div>"
        return self.section(block)

    def section(self, s: Section) -> str:
        aside = f' <span class="muted mono">{esc(s.aside)}</span>' if s.aside else ""
        heading = f"<h{s.level}>{esc(s.title)}{aside}</h{s.level}>"
        inner = "".join(self.block(b) for b in s.blocks)
        if s.level > 2 and not s.anchor:
            return heading + inner  # a heading inside a section, not a section of its own
        anchor = f' id="{esc(s.anchor)}"' if s.anchor else ""
        return f"<section{anchor}{_cls(s.style)}>{heading}{inner}</section>"

    def _item(self, item: Item) -> str:
        first, *rest = item.text or ("",)
        head = self._span(first)
        if item.link:
            head = f'<a href="#{esc(item.link)}">{head}</a>'
        if item.swatch:
            head = f'<span class="swatch" style="background:{esc(item.swatch)}"></span>{head}'
        children = (f"<ul>{''.join(self._item(c) for c in item.children)}</ul>"
                    if item.children else "")
        return f"<li{_cls(item.style)}>{head}{self.inline(tuple(rest))}{children}</li>"

    @staticmethod
    def _cell(column: Column, cell: Cell) -> str:
        swatch = (f'<span class="swatch" style="background:{esc(cell.swatch)}"></span>'
                  if cell.swatch else "")
        tag = f' <span class="baseline-tag">({esc(cell.tag)})</span>' if cell.tag else ""
        return (f'<td{_cls("num" if column.numeric else "", cell.style)}>'
                f"{swatch}{esc(cell.text)}{tag}</td>")

    @staticmethod
    def _header(column: Column) -> str:
        swatch = (f'<span class="swatch" style="background:{esc(column.swatch)}"></span>'
                  if column.swatch else "")
        return f'<th{_cls("num" if column.numeric else "")}>{swatch}{esc(column.header)}</th>'

    def table(self, t: Table) -> str:
        head = "".join(self._header(c) for c in t.columns)
        body = "".join("<tr>" + "".join(self._cell(c, cell) for c, cell in zip(t.columns, row,
                                                                              strict=True))
                       + "</tr>" for row in t.rows)
        return (f'<div{_cls(t.style, "table-wrap")}><table><thead><tr>{head}</tr></thead>'
                f"<tbody>{body}</tbody></table></div>")


class MarkdownExporter:
    """GitHub-flavoured Markdown: blocks one after another, a blank line between."""

    def page(self, page: Page) -> str:
        return f"# {md_escape(page.title)}\n\n" + self.fragment(
            (*page.intro, *page.lead, *page.body))

    def fragment(self, blocks: Sequence[Block]) -> str:
        """Blocks without a page around them (`bakeoff compare --markdown`, pasted into a
        pull request under its own heading)."""
        lines: list[str] = []
        for b in blocks:
            lines += self._spaced(self.block(b))
        return "\n".join(lines[1:]) + "\n"

    @staticmethod
    def _spaced(lines: list[str]) -> list[str]:
        return ["", *lines] if lines else []

    def inline(self, text: Text) -> str:
        return "".join(self._span(part) for part in text)

    @staticmethod
    def _span(part: Inline) -> str:
        if isinstance(part, str):
            return md_escape(part)
        if part.style == "strong":
            return f"**{md_escape(part.text)}**"
        if part.style == "code" and "`" not in part.text:
            return f"`{' '.join(part.text.splitlines())}`"
        return md_escape(part.text)  # the quieter why: plain, readable in a CI log

    def block(self, block: Block) -> list[str]:
        if isinstance(block, Paragraph):
            return [self.inline(block.text)]
        if isinstance(block, Items):
            return [line for item in block.items for line in self._item(item, "")]
        if isinstance(block, Table):
            return self.table(block)
        if isinstance(block, Figure | Drawing):
            return []  # a chart has no text form; its figures are in the tables
        if isinstance(block, Only):
            out = []
            if block.format == "md":
                for b in block.blocks:
                    out += self._spaced(self.block(b))
            return out[1:]
        if isinstance(block, Preformatted):
            return [fenced(block.text)]
        if isinstance(block, Details):
            out = [f"**{md_escape(block.summary)}**"]
            for b in block.blocks:
                out += self._spaced(self.block(b))
            return out
        if isinstance(block, Columns):
            out = []
            for col in block.columns:
                for b in col:
                    out += self._spaced(self.block(b))
            return out[1:]
        return self.section(block)

    def section(self, s: Section) -> list[str]:
        aside = f" ({md_escape(s.aside)})" if s.aside else ""
        out = ["#" * s.level + f" {md_escape(s.title)}{aside}"]
        for b in s.blocks:
            out += self._spaced(self.block(b))
        return out

    def _item(self, item: Item, indent: str) -> list[str]:
        out = [f"{indent}- {self.inline(item.text)}"]
        for child in item.children:
            out += self._item(child, indent + "  ")
        return out

    @staticmethod
    def table(t: Table) -> list[str]:
        def cell(c: Cell) -> str:
            return md_escape(c.text + (f" ({c.tag})" if c.tag else ""))

        lines = ["| " + " | ".join(md_escape(c.header) for c in t.columns) + " |",
                 "|" + "|".join("---:" if c.numeric else "---" for c in t.columns) + "|"]
        return lines + ["| " + " | ".join(cell(c) for c in row) + " |" for row in t.rows]


def render(page: Page, fmt: str) -> str:
    """The page as `fmt` ("html" or "md") gives it."""
    exporter: Exporter = HtmlExporter() if fmt == "html" else MarkdownExporter()
    return exporter.page(page)
