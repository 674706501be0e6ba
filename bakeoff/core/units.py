"""Sizes as people type and read them: '4KiB' -> 4096 -> '4 KiB'.

Binary units throughout (1 KiB = 1024 B). Parsing is exact (no float in between); a value
an error quotes is cut to a readable length.
"""

from __future__ import annotations

import re
from fractions import Fraction

_SIZE_SUFFIXES = {
    "": 1, "b": 1,
    "k": 1024, "kb": 1024, "kib": 1024,
    "m": 1024**2, "mb": 1024**2, "mib": 1024**2,
    "g": 1024**3, "gb": 1024**3, "gib": 1024**3,
    "t": 1024**4, "tb": 1024**4, "tib": 1024**4,
}
# ASCII digits only (\d would take any script's digits); whitespace, ASCII or not, is trimmed.
_SIZE_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*)\s*$")
# More digits than any count or size can use (2^64 has 20); also keeps Python's own limit on
# converting long digit strings (4300) out of the way.
MAX_DIGITS = 30


def shown(text: str) -> str:
    """A value as an error quotes it: a 5000-character paste is cut, not echoed whole."""
    return repr(text if len(text) <= 40 else text[:37] + "...")


def parse_bytes(text: str) -> int:
    """'4096', '4KiB', '16M', '1.5GiB' -> bytes. Binary units: 1 KiB = 1024 B. Exact: no
    float in between, so 2^53 + 1 stays itself and 400 nines are an error, not infinity."""
    m = _SIZE_RE.match(text)
    if not m or m.group(2).lower() not in _SIZE_SUFFIXES:
        raise ValueError(f"{shown(text)} is not a size; use e.g. 4096, 4KiB, 16MiB")
    if len(m.group(1)) > MAX_DIGITS:
        raise ValueError(f"{shown(text)} is far too large a size; use e.g. 4096, 4KiB, 16MiB")
    value = Fraction(m.group(1)) * _SIZE_SUFFIXES[m.group(2).lower()]
    if value.denominator != 1:
        raise ValueError(f"{shown(text)} is not a whole number of bytes; use e.g. 1536 or 1.5KiB")
    return int(value)


def format_bytes(n: float) -> str:
    """4096 -> '4 KiB', 1536 -> '1.5 KiB', 100 -> '100 B'."""
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if abs(n) >= scale:
            v = n / scale
            return f"{v:g} {unit}" if v == int(v) else f"{v:.3g} {unit}"
    return f"{n:g} B"
