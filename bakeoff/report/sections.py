"""A report's content, built once as sections of blocks; report/exporters.py renders it.

A builder (the run report, the report across hosts, details.md) says what a page holds:
headings, sentences, lists, tables, charts, collapsed details. An `Exporter` per format
(HTML, Markdown) says how each block looks, and escapes every string: the text here is raw,
as the data gave it. So a sentence or a table is written once and reads the same in
report.html and report.md; what only one format shows (a chart, a colour swatch) is a block
or a field the other format leaves out, said where it is declared.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeAlias

from bakeoff.report.charts import Chart


@dataclass(frozen=True)
class Span:
    """A run of text set apart: "strong" (bold), "code" (monospace), "why" (the quieter
    '[tentative: …]' of a finding; plain in Markdown)."""

    text: str
    style: str = "strong"


Inline: TypeAlias = str | Span
Text: TypeAlias = tuple[Inline, ...]


def strong(text: object) -> Span:
    return Span(str(text), "strong")


def code(text: object) -> Span:
    return Span(str(text), "code")


@dataclass(frozen=True)
class Paragraph:
    text: Text
    style: str = ""  # the HTML class: "note", "muted", "ok", "warnings"


@dataclass(frozen=True)
class Item:
    text: Text
    style: str = ""  # the HTML class of the <li>: "tentative"
    children: tuple[Item, ...] = ()
    link: str = ""  # an anchor the item's first span links to (HTML)
    swatch: str = ""  # a colour before the text (HTML): a variant's, as in the charts


@dataclass(frozen=True)
class Items:
    """A bulleted list."""

    items: tuple[Item, ...]
    style: str = ""  # the HTML class of the <ul>: "answers"


@dataclass(frozen=True)
class Column:
    header: str
    numeric: bool = False
    swatch: str = ""  # a colour before the header (HTML): a variant's, as in the charts


@dataclass(frozen=True)
class Cell:
    text: str
    style: str = ""  # the HTML class of the <td>: "num", "differs", "faster", …
    swatch: str = ""  # a colour shown before the text (HTML), as in the charts
    tag: str = ""  # a quieter word after the text: "baseline"


@dataclass(frozen=True)
class Table:
    columns: tuple[Column, ...]
    rows: tuple[tuple[Cell, ...], ...]
    style: str = ""  # the HTML class of its wrapper besides "table-wrap": "compact"


def table(headers: list[str] | tuple[str, ...], rows: list[list[str]],
          style_of: dict[tuple[int, int], str] | None = None) -> Table:
    """A table of text columns; style_of: (row, column) -> the cell's HTML class."""
    styles = style_of or {}
    return Table(tuple(Column(h) for h in headers),
                 tuple(tuple(Cell(c, styles.get((i, j), "")) for j, c in enumerate(row))
                       for i, row in enumerate(rows)))


@dataclass(frozen=True)
class Figure:
    """A chart: drawn in HTML, left out of Markdown (a text file shows the tables instead).
    heading False: the chart's own title heads it, its note under it."""

    chart: Chart
    name: str  # what the chart is of (the benchmark): its PNG's file name starts with it
    heading: bool = True


@dataclass(frozen=True)
class Drawing:
    """A figure that is already a plotly dict (a flame graph), drawn tall under its own
    title; HTML only, as a Figure."""

    figure: dict[str, Any]
    name: str


@dataclass(frozen=True)
class Preformatted:
    text: str  # a failed trial's stderr: HTML <pre>, a Markdown fence no text can end


@dataclass(frozen=True)
class Details:
    """Collapsed in HTML under its summary; in Markdown, a file read top to bottom, the blocks
    in the open after the summary in bold."""

    summary: str
    blocks: tuple[Block, ...]
    style: str = "more"
    anchor: str = ""
    open: bool = False


@dataclass(frozen=True)
class Columns:
    """Blocks side by side in HTML (the findings beside their chart); one after the other in
    Markdown."""

    columns: tuple[tuple[Block, ...], ...]
    style: str = "lead"


@dataclass(frozen=True)
class Section:
    """A heading and what it holds. level 2 is a page's section (an HTML <section> with its
    anchor); 3 and 4 are headings inside one. aside: a name after the title, set apart."""

    title: str
    blocks: tuple[Block, ...] = ()
    anchor: str = ""
    aside: str = ""
    level: int = 2
    style: str = ""  # the HTML class of the <section>: "warnings"


@dataclass(frozen=True)
class Only:
    """Blocks one format shows and the other leaves out: "html" for what needs a browser
    (a collapsed part whose text details.md holds), "md" for what a text file holds in place
    of what report.html shows folded elsewhere."""

    format: str
    blocks: tuple[Block, ...]


Block: TypeAlias = (Paragraph | Items | Table | Figure | Drawing | Preformatted | Details | Columns
                    | Section | Only)


@dataclass(frozen=True)
class Page:
    """One output file: an h1 with what follows it, sections, and a table of contents that
    only HTML shows (after `lead`, before `body`)."""

    title: str  # the h1
    intro: tuple[Block, ...] = ()
    lead: tuple[Block, ...] = ()
    body: tuple[Block, ...] = ()
    nav: tuple[tuple[str, str, str], ...] = ()  # (anchor, text, hover title)
    html_title: str = ""  # the browser tab's, when not the h1
    css: str = ""  # HTML: rules of this page beside the common ones
