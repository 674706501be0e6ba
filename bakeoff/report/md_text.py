"""Markdown text that renders as exactly the text given: escaping for GitHub-flavoured
Markdown, and code fences no text can end.

Text from the data is escaped so it stays text: a '|' cannot split a table cell, '<tag>'
cannot become HTML, '*' cannot start emphasis, and a newline cannot end a row.
"""

from __future__ import annotations

import re

_PUNCT = re.compile(r"([\\`*\[\]|<>~])")
# '_' emphasises only at a word edge in GFM; escaping it inside 'lookup_batch' would make
# the raw text (what a CI log shows) harder to read for nothing.
_EDGE_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
_ENTITY = re.compile(r"&(?=#?[A-Za-z0-9]+;)")
# Only where a list item or paragraph starts: '# x' (heading), '- x' / '+ x' (list), '1. x'.
_BLOCK_START = re.compile(r"^(\s*)(?:(#{1,6}|[+\-])|(\d{1,9})([.)]))(?=\s|$)")


def md_escape(text: str) -> str:
    """One line of inline markdown that renders as exactly `text`."""
    text = " ".join(text.splitlines())
    text = _PUNCT.sub(r"\\\1", text)
    text = _EDGE_UNDERSCORE.sub(r"\\_", text)
    text = _ENTITY.sub("&amp;", text)
    # A leading "# ", "- " or "1. " would make a list item or paragraph a heading or list.
    return _BLOCK_START.sub(_escape_block_start, text)


def _escape_block_start(m: re.Match[str]) -> str:
    if m.group(2):
        return f"{m.group(1)}\\{m.group(2)}"
    return f"{m.group(1)}{m.group(3)}\\{m.group(4)}"  # '1\. x': the dot makes the list


def fenced(text: str) -> str:
    """A code block whose fence is longer than any backtick run inside, so text cannot end it."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text.rstrip()}\n{fence}"
