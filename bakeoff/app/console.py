"""The two consoles every command prints to: results on stdout, notes and progress on stderr."""

from __future__ import annotations

from rich.console import Console

# Piped into a log, rich would wrap tables at 80 columns; the case table needs more.
# markup=False: names, params, paths and error text come from outside, and '[...]' in them
# must print as it is, not be taken for rich markup. Colour is given with style= instead.
out_console = Console(width=None if Console().is_terminal else 160, markup=False)
err_console = Console(stderr=True, width=None if Console(stderr=True).is_terminal else 160,
                      markup=False)
