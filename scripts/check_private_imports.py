#!/usr/bin/env python3
"""Fails on an import of another module's private name inside bakeoff/ (run by `make lint`).

    .venv/bin/python scripts/check_private_imports.py [PATH...]     # default: bakeoff

A leading underscore says "only this module uses it"; `from bakeoff.report.html import _e`
breaks that promise, and the next engineer renames `_e` believing nobody else sees it. A
name another module needs is public (no underscore) or moves to the module it belongs to.
Dunder names (`__version__`) are public. Prints one line per import and exits 1 on any.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def private_names(node: ast.ImportFrom) -> list[str]:
    """The private names an import takes from one of bakeoff's modules (relative or not)."""
    if not (node.level or (node.module or "").split(".")[0] == "bakeoff"):
        return []
    return [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]


def problems(source: str, filename: str) -> Iterator[str]:
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.ImportFrom):
            names = private_names(node)
            if names:
                module = "." * node.level + (node.module or "")
                yield (f"{filename}:{node.lineno}: imports private {', '.join(names)} from "
                       f"{module}: make it public or move it where it belongs")


def main(argv: list[str]) -> int:
    roots = [Path(a) for a in argv] or [REPO / "bakeoff"]
    found = [line for root in roots for path in sorted(root.rglob("*.py"))
             for line in problems(path.read_text(), str(path))]
    print(*found, sep="\n") if found else None
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
