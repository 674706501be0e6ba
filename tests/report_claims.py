"""What a report must never say, found by reading its text as a reviewer would: report.md and
details.md, whatever produced them.

- an interval that ends at its own point ("3.94× faster (95% CI 3.94–8.24×)", "1.00 (95% CI
  1.00–1.00)"): it says the estimate is its least likely value, or claims a certainty no
  trial showed;
- a ranking of cases whose CIs overlap ("the lowest … [tentative: runner-up's CI overlaps]");
- a negative cost said as a cost ("the lowest decide_ns is X's, -165 ns"), or a count with an
  interval below zero ("-5.85–6.85 context switches");
- two figures for one cell: a ratio or median a sentence quotes for a case at a point that
  differs from the one the table shows in that case's cell;
- an interval whose ends lie more than three decades apart ("6.81e-05 µs (1.77e-11–262 µs)",
  "23.5 (0.149–3,705)"): a t interval from 2 trials on log scale, which says nothing;
- a ratio with an SI prefix ("poisson / poisson-tagged 1.15e-12 T"): a factor has no unit;
- a negative cost in a table's cell ("-34.9 ns (-358–288 ns)"): a net difference whose CI
  includes 0 is said "not resolved from 0", one below 0 as how much less it takes;
- a comparison (a ratio, "cannot be told apart", a ranking) quoting a figure whose CI
  includes 0: a cost not resolved from 0 is set beside nothing.

Used by tests/test_report_claims.py on recorded runs and a fresh one, and on the output of
the code before the fix (there it finds each kind).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from bakeoff.report.compact import GLYPHS
from bakeoff.report.contention import CONTENDED_MARK
from bakeoff.report.format import MAX_CI_DECADES

_NUM = r"[-−]?(?:\d[\d,]*\.?\d*|\.\d+)(?:e[-+]?\d+)?"
_UNIT = r"(?:ns|µs|ms|s|B|KiB|MiB|GiB|TiB|%|×|k|M|G|T)"
_SCALE = {"ns": 1.0, "µs": 1e3, "ms": 1e6, "s": 1e9, "B": 1.0, "KiB": 1024.0,
          "MiB": 1024.0**2, "GiB": 1024.0**3, "TiB": 1024.0**4, "k": 1e3, "M": 1e6, "G": 1e9,
          "T": 1e12, "%": 1.0, "×": 1.0, "": 1.0}
# A point and the interval printed right after it, in the forms the reports use:
# "1.05 ns (95% CI 1.02–1.34 ns", "0.826 ns (0.585–0.933 ns)", "3.94× faster (95% CI
# 3.94–8.24×)", "ratio 0.792, 95% CI 0.582–1.30".
_POINT_THEN_CI = re.compile(
    rf"(?<![\w.–-])(?P<p>{_NUM})\s?(?P<pu>{_UNIT})?(?:\s(?:faster|slower|lower|higher))?"
    rf"(?:\s\(|,\s)(?:95% CI\s)?(?P<lo>{_NUM})\s?(?P<lu>{_UNIT})?–(?P<hi>{_NUM})\s?"
    rf"(?P<hu>{_UNIT})?(?![\d])")
_TIME = r"(?:ns|µs|ms|s)\b"


def _value(number: str, unit: str | None) -> float:
    return float(number.replace(",", "").replace("−", "-")) * _SCALE[unit or ""]


@dataclass(frozen=True)
class Flaw:
    kind: str  # 'interval ends at its point', 'ranking of overlapping cases', ...
    where: str  # the file and line
    text: str  # what was said

    def __str__(self) -> str:
        return f"{self.where}: {self.kind}: {self.text[:240]}"


def _ends_at_point(line: str) -> list[str]:
    out = []
    for m in _POINT_THEN_CI.finditer(line):
        unit = m["hu"] or m["pu"] or ""
        lo_unit = m["lu"] or unit
        try:
            p = _value(m["p"], m["pu"] or unit)
            lo, hi = _value(m["lo"], lo_unit), _value(m["hi"], unit)
        except (ValueError, KeyError):
            continue
        if any(math.isclose(p, end, rel_tol=1e-9, abs_tol=0.0) for end in (lo, hi)):
            out.append(m.group(0))
    return out


# Ends more decades apart than this (both above 0) are no interval a reader can use: a t
# interval from 2 trials on log scale ("1.77e-11–262 µs", "0.149–3,705"). A noisy figure
# from 10 trials honestly spans two (tracing-overhead's app_wall_ms at 0 µs of work).
MAX_DECADES = MAX_CI_DECADES
# An interval as printed after a point or a "CI": "(1.77e-11–262 µs", "CI 1.95e-51–6.79e+26".
_INTERVAL = re.compile(rf"(?:\(|CI )(?P<lo>{_NUM})\s?(?P<lu>{_UNIT})?–(?P<hi>{_NUM})\s?"
                       rf"(?P<hu>{_UNIT})?(?![\d])")


def _spans_decades(line: str) -> list[str]:
    out = []
    for m in _INTERVAL.finditer(line):
        try:
            lo = _value(m["lo"], m["lu"] or m["hu"])
            hi = _value(m["hi"], m["hu"])
        except (ValueError, KeyError):
            continue
        if lo > 0 and hi > 0 and math.log10(hi / lo) > MAX_DECADES:
            out.append(m.group(0))
    return out


# A ratio said with an SI prefix: "a / b 1.15e-12 T", "ratio 2.57 T", "3.1 T×".
_SI_RATIO = re.compile(rf"(?:[\w.-]+ / [\w.-]+|\bratio) {_NUM} [kMGT]\b|{_NUM} [kMGT]×")


def _si_ratio(line: str) -> list[str]:
    return [m.group(0) for m in _SI_RATIO.finditer(line)]


# A table cell that prints a time below 0 as its figure: "-34.9 ns (-358–288 ns)".
_NEGATIVE_TIME_CELL = re.compile(rf"^[-−]\d[\d.,]*(?:e[-+]?\d+)?\s?{_TIME}")
# Columns whose figures are differences or signed by nature (a shift, a bias), or ranges.
_SIGNED_COLUMNS = ("shift", "bias", "difference", "Δ", "range", "a (", "b (", "slope",
                   "intercept", "drift", "change", "p5", "min", "max")


def _negative_cost_cells(lines: list[str]) -> list[str]:
    out = []
    for _, header, cells in _table_rows(lines):
        if any("per op" in h for h in header):
            continue
        for col, cell in zip(header[1:], cells[1:], strict=False):
            if not any(w in col.lower() for w in _SIGNED_COLUMNS) and \
                    _NEGATIVE_TIME_CELL.match(cell):
                out.append(f"{col}: {cell}")
    return out


# A figure with its CI quoted in a comparison: "0.168 ns (95% CI -2.93–3.27 ns; 2 trials)".
_FIGURE_CI = re.compile(rf"(?P<p>{_NUM})\s?(?:{_UNIT})?\s\((?:95% CI\s)?(?P<lo>{_NUM})\s?"
                        rf"(?:{_UNIT})?–(?P<hi>{_NUM})")


def _compares_unresolved(line: str) -> list[str]:
    """A clause that compares cases ("cannot be told apart", "a / b", "the lowest … against
    the next") quoting a figure whose CI includes 0."""
    out = []
    for clause in re.split(r"; (?=at |\w+ and \w)|\. ", line):
        if not re.search(r"cannot be told apart|\bthe (?:lowest|highest)\b| / [\w.-]+ \d",
                         clause):
            continue
        for m in _FIGURE_CI.finditer(clause):
            lo, hi = (float(x.replace(",", "").replace("−", "-")) for x in (m["lo"], m["hi"]))
            if lo <= 0 <= hi and lo < hi:
                out.append(m.group(0))
    return out


def _table_rows(lines: list[str]) -> list[tuple[int, list[str], list[str]]]:
    """Each markdown table row with the header of its table: (line number, header, cells)."""
    out = []
    header: list[str] | None = None
    for i, line in enumerate(lines):
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
        elif not all(set(c) <= set("-: ") for c in cells):
            out.append((i, header, cells))
    return out


def _split_columns(lines: list[str]) -> list[str]:
    """A table whose median and its CI sit in two columns, read as one 'median (CI)' text."""
    out = []
    for _, header, cells in _table_rows(lines):
        if "median" in header and "95% CI" in header and len(cells) == len(header):
            out.append(f"{cells[header.index('median')]} ({cells[header.index('95% CI')]})")
    return out


def _prose(line: str) -> bool:
    return line.startswith(("- ", "* ")) or (bool(line) and not line.startswith(("|", "#")))


def _without_intervals(line: str) -> str:
    """The line with what states intervals and differences taken out: parenthesised text,
    'difference [a − b] x to y', 'CI x to y'."""
    line = re.sub(r"\([^()]*\)", "", re.sub(r"\([^()]*\)", "", line))
    return re.sub(rf"(?:difference(?: [\w.-]+ − [\w.-]+)?|CI|from)\s{_NUM}\s?{_UNIT}?\s"
                  rf"(?:to|–)\s[-+−]?{_NUM}\s?{_UNIT}?", "", line)


def _negative_cost(line: str) -> list[str]:
    said = _without_intervals(line)
    # A slope ('b = -40.4 ns per µs') is a rate, not a cost.
    return re.findall(rf"(?<![\w.])[-−]\d[\d.,]*\s?{_TIME}(?!\s*per\b)", said)


def _negative_count(line: str) -> list[str]:
    """A per-operation counter's figure or interval below 0 (counts are >= 0)."""
    return [m for sentence in re.split(r"\.\s", line) if re.search(r"\bper op\b", sentence)
            for m in re.findall(r"\([^()]*(?<![\w.])[-−]\d[^()]*\)", sentence)]


# The verdict glyphs a compact table's cell ends with (report.compact.GLYPHS), and the mark
# of a contended case after it (report.contention.CONTENDED_MARK).
_GLYPHS = re.escape("".join(GLYPHS.values()))
_MARK = re.escape(CONTENDED_MARK)


def _cells(lines: list[str]) -> dict[tuple[str, str], str]:
    """The compact tables' cells: (row label, column) -> the cell's text, glyph and
    contention mark aside."""
    out = {}
    for _, header, cells in _table_rows(lines):
        for col, cell in zip(header[1:], cells[1:], strict=False):
            out[(cells[0], col)] = re.sub(rf"(?:\s*[{_GLYPHS}])?(?:\s*{_MARK})?$", "", cell)
    return out


# A ratio cell: a bare figure and its interval, no unit ("0.109 (0.0421–0.285)"); a cell
# with a unit ("13.4 ns (12.1–14.9 ns)") is a median, never a ratio's other telling.
_RATIO_CELL = re.compile(rf"{_NUM} \({_NUM}–{_NUM}\)")
# The metric a section's table shows ("Table: ns_per_entry of each …", "Table: median of
# decide_ns_per_alloc …") and the one a sentence says it reads ("On first_ns_per_entry: …",
# "… cannot be told apart on decide_ns_per_alloc: …").
_TABLE_METRIC = re.compile(r"\bTable: (?:median of )?([\w.-]+)")
_METRIC_SAID = re.compile(r"\b[Oo]n ([A-Za-z][\w.-]*)[:,]")


def _off_table_metric(line: str, metric: str | None) -> bool:
    """Whether a sentence says it reads a metric other than the table's: its figures are
    another metric's, not the table's cells told again."""
    return metric is not None and any(m != metric for m in _METRIC_SAID.findall(line))


_RATIO_SAID = re.compile(rf"\((?:ratio )?(?P<r>{_NUM}), 95% CI (?P<lo>{_NUM})–(?P<hi>{_NUM})")


def _two_figures(section: list[str]) -> list[str]:
    """A ratio a sentence quotes at a point (a row of the section's table) for a variant (a
    column, the last one named before the figure) that differs from the table's cell there:
    the same cell said twice, two ways."""
    cells = _cells(section)
    metric = next((m[1] for line in section if (m := _TABLE_METRIC.search(line))), None)
    rows = sorted({row for row, _ in cells}, key=len, reverse=True)
    columns = {col for _, col in cells}
    out = []
    for line in section:
        if not _prose(line) or _off_table_metric(line, metric):
            continue
        for clause in re.split(r"; |\. ", re.sub(r"\b[\w-]+=", "", line)):
            row = next((r for r in rows if re.search(rf"\b[Aa]t {re.escape(r)}(?![\w])", clause)),
                       None)
            if row is None:
                continue
            for m in _RATIO_SAID.finditer(clause):
                before = clause[:m.start()]
                named = [(n.start(), c) for c in columns
                         for n in re.finditer(rf"(?<![\w-]){re.escape(c)}(?![\w-])", before)]
                if not named:
                    continue
                col = max(named)[1]
                cell = cells.get((row, col))
                if cell is None or not _RATIO_CELL.fullmatch(cell):
                    continue
                said = f"{m['r']} ({m['lo']}–{m['hi']})"
                if cell != said:
                    out.append(f"at {row}, {col}: said {said}, table {cell}")
    return out


_PAIR_SAID = re.compile(rf"(?P<pair>(?:difference )?[\w.-]+ [/−] [\w.-]+)(?P<fig>(?: {_NUM})?,? "
                        rf"[\d.]+% CI [^,;)\]]+)")


def _pair_twice(section: str) -> list[str]:
    """Two cases set side by side at one point ('a / b 0.95, 95% CI …', the point the last
    'at …' before it names) with different figures within one benchmark's section: the same
    comparison said two ways."""
    said: dict[tuple[str, str, str], set[str]] = {}
    for line in section.splitlines():
        # A sentence that says it reads another metric ("On first_ns_per_entry: …") sets
        # the two cases side by side on that metric: another comparison.
        metric = next(iter(_METRIC_SAID.findall(line)), "")
        # 'Along fields with content=legacy: at 40 fields …': the line's fixed params, then
        # the point of the clause (carried to the next clause that names none).
        lead = " ".join(re.findall(r"\bwith ((?:[\w-]+=[^,:;()]+(?:, )?)+)", line))
        where = lead
        for clause in line.split("; "):
            # "at least 10% of their wall time" (a contended note) is not a point.
            at = re.findall(r"\b[Aa]t (?!least\b|most\b)((?:[\w-]+=[^,:;()]+(?:, )?)+|[^,:;()]+)",
                            clause)
            where = f"{lead} {at[-1].strip()}".strip() if at else where
            for m in _PAIR_SAID.finditer(clause):
                said.setdefault((metric, where, m["pair"]), set()).add(m["fig"].strip(", "))
    return [f"at {where or '(every point)'}, {pair}{' on ' + metric if metric else ''}: "
            f"{' | '.join(sorted(figs))}"
            for (metric, where, pair), figs in said.items() if len(figs) > 1]


def flaws(text: str, name: str) -> list[Flaw]:
    """Every flaw of the module docstring in one report's text (name: for the messages)."""
    lines = text.splitlines()
    found: list[Flaw] = []
    for i, line in enumerate(lines, 1):
        where = f"{name}:{i}"
        found += [Flaw("interval ends at its point", where, s) for s in _ends_at_point(line)]
        if re.search(r"CIs? overlaps?\b", line):
            found.append(Flaw("ranking of overlapping cases", where, line))
        if _prose(line):
            found += [Flaw("negative cost", where, s) for s in _negative_cost(line)]
        found += [Flaw("count below zero", where, s) for s in _negative_count(line)]
        found += [Flaw("interval spans decades", where, s) for s in _spans_decades(line)]
        found += [Flaw("ratio with an SI prefix", where, s) for s in _si_ratio(line)]
        if _prose(line):
            found += [Flaw("comparison with a figure not resolved from 0", where, s)
                      for s in _compares_unresolved(line)]
    found += [Flaw("negative cost", f"{name} (table)", s) for s in _negative_cost_cells(lines)]
    for _, header, cells in _table_rows(lines):
        if any("per op" in h for h in header):
            found += [Flaw("count below zero", name, c) for c in cells
                      if re.search(rf"(?<![\w.]){'[-−]'}\d", c)]
    found += [Flaw("interval ends at its point", f"{name} (table)", s)
              for row in _split_columns(lines) for s in _ends_at_point(row)]
    sections = re.split(r"\n(?=## )", text)
    found += [Flaw("two figures for one cell", name, s)
              for sec in sections for s in _two_figures(sec.splitlines()) + _pair_twice(sec)]
    return found
