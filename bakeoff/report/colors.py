"""One colour per variant, identical in every chart of a report, so a reader learns it once."""

from __future__ import annotations

import re
from collections.abc import Mapping

from bakeoff.declare.model import BenchmarkInfo

BASELINE_COLOR = "#7f8c8d"
# Colours end up in inline CSS and plotly JSON; accept only plain hex so that a colour string
# can never smuggle in CSS such as url(...) that would fetch from the network.
_HEX = re.compile(r"^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$")
# Okabe-Ito: distinguishable with the common colour-vision deficiencies. Its black is left
# out (it reads as text) and yellow comes last (weak on white).
PALETTE: tuple[str, ...] = (
    "#E69F00", "#0072B2", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#F0E442",
)


def variant_colors(
    info: BenchmarkInfo, preferred: Mapping[str, str] | None = None
) -> dict[str, str]:
    """variant name -> colour. The baseline is always grey.

    A colour can be asked for per variant, first through `preferred`, then through a
    "color" key in the variant's recorded facts (info.variants); only '#rgb' or '#rrggbb'
    is accepted. The rest take palette colours in declaration order, skipping those already
    taken, so a variant keeps its colour between runs and reports.
    """
    wanted = dict(preferred or {})
    colors: dict[str, str] = {}
    for v in info.variants:
        name = str(v["name"])
        if name == info.baseline:
            colors[name] = BASELINE_COLOR
        elif _HEX.match(wanted.get(name, "")):
            colors[name] = wanted[name]
        elif isinstance(v.get("color"), str) and _HEX.match(v["color"]):
            colors[name] = str(v["color"])
    taken = {c.lower() for c in colors.values()}
    free = [c for c in PALETTE if c.lower() not in taken] or list(PALETTE)
    rest = [str(v["name"]) for v in info.variants if str(v["name"]) not in colors]
    for i, name in enumerate(rest):
        # More variants than colours: reuse rather than fail; the legend still names them.
        colors[name] = free[i % len(free)]
    return colors


def with_alpha(hex_color: str, alpha: float) -> str:
    """'#E69F00', 0.2 -> 'rgba(230,159,0,0.2)' for CI bands that must not hide the line."""
    h = hex_color.lstrip("#")
    if len(h) == 3:
        h = "".join(c * 2 for c in h)
    if len(h) != 6:
        return hex_color
    r, g, b = (int(h[i : i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"
