"""Numbers as people read them, shared by the html, markdown and terminal reports.

One place decides how a value looks, so the same median reads the same in every output.
Rule: 3 significant digits (4 when rounding pushes a value up to the next decade), thousands
grouped, and times and sizes scaled to the unit that keeps the number between 1 and 1000.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from bakeoff.declare.model import BenchmarkInfo, Case, ParamValue

# Smallest unit first; the factor converts to the first unit of the ladder.
_TIME_LADDER: tuple[tuple[str, float], ...] = (("ns", 1.0), ("µs", 1e3), ("ms", 1e6), ("s", 1e9))
_BYTE_LADDER: tuple[tuple[str, float], ...] = (
    ("B", 1.0), ("KiB", 1024.0), ("MiB", 1024.0**2), ("GiB", 1024.0**3), ("TiB", 1024.0**4),
)
_ALIASES = {"us": "µs", "μs": "µs", "usec": "µs", "nsec": "ns", "msec": "ms", "sec": "s",
            "bytes": "B", "kib": "KiB", "mib": "MiB", "gib": "GiB"}

MISSING = "—"


def _ladder_of(unit: str) -> tuple[tuple[tuple[str, float], ...], float, str] | None:
    """(ladder, factor of `unit` on it, suffix such as '/s') when the unit scales, else None."""
    base, slash, rest = unit.partition("/")
    suffix = slash + rest
    base = _ALIASES.get(base, _ALIASES.get(base.lower(), base))
    for ladder in (_TIME_LADDER, _BYTE_LADDER):
        for name, factor in ladder:
            if name == base:
                # A rate of time ("ns/op") scales like time; a rate of bytes ("B/s") like bytes.
                return ladder, factor, suffix
    return None


def is_time_unit(unit: str) -> bool:
    """'ns', 'µs', 'ms', 's' and their spellings (not a rate such as 'ns/op' of something else:
    a time per operation still reads as faster/slower, so 'ns/op' counts too)."""
    found = _ladder_of(unit)
    return found is not None and found[0] is _TIME_LADDER


def scale_for(x: float, unit: str) -> tuple[float, str]:
    """(divisor, display unit) that puts |x| in [1, 1000) (bytes: [1, 1024)) where possible."""
    found = _ladder_of(unit)
    if found is None or not math.isfinite(x) or x == 0:
        return 1.0, unit
    ladder, own, suffix = found
    base = abs(x) * own
    step = 1000.0 if ladder is _TIME_LADDER else 1024.0
    chosen_name, chosen_factor = ladder[0]
    for name, factor in ladder:
        # 999.6 ns must read "1.000 µs", not "1,000 ns": compare after rounding to 3 digits.
        if float(f"{base / factor:.3g}") >= 1 or factor == ladder[0][1]:
            chosen_name, chosen_factor = name, factor
        if float(f"{base / factor:.3g}") < step:
            break
    return chosen_factor / own, chosen_name + suffix


def fmt_number(x: float, digits: int = 3) -> str:
    """3 significant digits (or `digits`) with thousands grouping: 7.08, 70.8, 708, 7,084,
    0.0123."""
    if math.isnan(x):
        return MISSING
    if math.isinf(x):
        return "∞" if x > 0 else "-∞"
    if x == 0:
        return "0"
    a = abs(x)
    if a < 1e-4 or a >= 1e15:
        return f"{x:.{digits}g}"
    decimals = max(0, digits - 1 - math.floor(math.log10(a)))
    return f"{x:,.{decimals}f}"


# A positive interval whose ends are more decades apart than this is not printed: a t interval
# on log scale from trials whose medians lie decades apart (a whole-app wall time on a busy
# machine, 3 trials) reached "4.93e-07–33,016 s". WIDE_CI stands in for its ends.
MAX_CI_DECADES = 3.0
WIDE_CI = "over three decades wide"
# Digits an estimate and its CI may take so that neither end reads as the point itself.
_MAX_DIGITS = 6


@dataclass(frozen=True)
class Estimate:
    """A point and its CI as text, in one unit and with the same digits: `point` '1.05 ns',
    `interval` '1.02–1.34 ns'; None when every trial gave the same figure (no spread to
    show: an interval of one value would say nothing, and end at its point)."""

    point: str
    interval: str | None

    def said(self, label: str = "95% CI ") -> str:
        """'1.05 ns (95% CI 1.02–1.34 ns)', or '1.05 ns (the same in every trial)'."""
        if self.interval is None:
            return f"{self.point} (the same in every trial)"
        return f"{self.point} ({label}{self.interval})"


def fmt_with_ci(point: float, low: float, high: float, unit: str, label: str = "95% CI ") -> str:
    """'1.05 ns (95% CI 1.02–1.34 ns)': fmt_estimate said."""
    return fmt_estimate(point, low, high, unit).said(label)


def ratio_with_ci(ratio: float, low: float, high: float) -> str:
    """'ratio 0.0285, 95% CI 0.0192–0.0410': how every sentence quotes a ratio."""
    e = fmt_estimate(ratio, low, high, "", si=False)
    return f"ratio {e.point}, " + (f"95% CI {e.interval}" if e.interval else
                                    "the same in every trial")


def fmt_estimate(point: float, low: float, high: float, unit: str, si: bool = True
                 ) -> Estimate:
    """A point and its CI with digits enough that each end differs from the point as printed
    (3 significant digits, up to 6): '1.05 ns' and '1.02–1.34 ns', never '1.05 (1.05–1.34)'.
    A count's CI that stops at 0 where its point is 0 reads 'up to 0.3'. si=False for a
    ratio: a factor takes no SI prefix ("1.15e-12 T" was a ratio of 1.15 scaled by its
    CI's end)."""
    if any(math.isnan(x) for x in (point, low, high)):
        return Estimate(fmt_value(point, unit), None if low == high == point else MISSING)
    if 0 < low < high and math.log10(high / low) > MAX_CI_DECADES:
        # Trials spread over decades (or too few of them): ends such as "4.93e-07–33,016 s"
        # say nothing a reader can use, so the interval is named for what it is.
        return Estimate(fmt_value(point, unit) if si else f"{fmt_number(point)} {unit}".strip(),
                        WIDE_CI)
    divisor, shown = (_scale_by(max(abs(low), abs(high), abs(point)), unit) if si else
                      (1.0, unit))
    if low == high == point:
        return Estimate(f"{fmt_number(point / divisor)} {shown}".strip(), None)
    if point == low == 0:
        return Estimate("0", f"up to {fmt_number(high / divisor)} {shown}".strip())
    # An end equal to the point itself (a method that cannot centre) stays visible as such.
    # Told apart by the values printed, not the text: 0.99996 prints "1.000" at three
    # significant digits and 1.00499 "1.00", two strings for one value.
    digits = next((d for d in range(3, _MAX_DIGITS + 1)
                   if len({_printed_value(fmt_number(x / divisor, d))
                           for x in (point, low, high)}) == 3), None)
    if digits is None and low < point < high and point != 0:
        # Narrower than _MAX_DIGITS can show (a deterministic count, a TSC-tick figure that
        # repeats): its half-width relative to the point, so no end prints as the point.
        half = max(high - point, point - low) / abs(point) * 100
        return Estimate(f"{fmt_number(point / divisor, _MAX_DIGITS)} {shown}".strip(),
                        f"±{half:.1g}%")
    p, lo, hi = (fmt_number(x / divisor, digits or 3) for x in (point, low, high))
    return Estimate(f"{p} {shown}".strip(), f"{lo}–{hi} {shown}".strip())


def _printed_value(text: str) -> float | str:
    """The value a reader takes from fmt_number's text (the text itself if it is no number)."""
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return text


_SI = ((1e12, "T"), (1e9, "G"), (1e6, "M"))


def _scale_by(top: float, unit: str) -> tuple[float, str]:
    """(divisor, unit shown) for figures whose largest magnitude is top: the unit's own ladder
    where it has one, else an SI prefix from a million (as fmt_value)."""
    divisor, shown = scale_for(top, unit)
    if _ladder_of(unit) is None and math.isfinite(top):
        for factor, prefix in _SI:
            if top >= factor * 0.9995:
                return factor, f"{prefix} {unit}".strip()
    return divisor, shown


def fmt_value(x: float | None, unit: str) -> str:
    """'7.08 µs' for (7084, 'ns'); '16.0 MiB' for (16777216, 'B'); '7,084 ops/s' and
    '1.23 M ops/s' for units that do not scale (SI prefix from a million, where grouped digits
    stop being readable at a glance)."""
    if x is None or math.isnan(x):
        return MISSING
    divisor, shown = scale_for(x, unit)
    if divisor == 1.0 and shown == unit and _ladder_of(unit) is None and math.isfinite(x):
        for factor, prefix in _SI:
            if abs(x) >= factor * 0.9995:
                return f"{fmt_number(x / factor)} {prefix} {unit}".strip()
    return f"{fmt_number(x / divisor)} {shown}".strip()


def fmt_range(low: float | None, high: float | None, unit: str) -> str:
    """A CI in one unit chosen by its larger end: '6.95–7.21 µs'."""
    if low is None or high is None or math.isnan(low) or math.isnan(high):
        return MISSING
    if 0 < low < high and math.log10(high / low) > MAX_CI_DECADES:
        return WIDE_CI
    divisor, shown = _scale_by(max(abs(low), abs(high)), unit)
    return f"{fmt_number(low / divisor)}–{fmt_number(high / divisor)} {shown}".strip()


def fmt_ratio(ratio: float, low: float, high: float) -> str:
    """'0.0912 (0.0850–0.0970)': a ratio and its CI, unitless (fmt_estimate's digits)."""
    e = fmt_estimate(ratio, low, high, "", si=False)
    return e.point + (f" ({e.interval})" if e.interval else " (the same in every trial)")


def interval_words(low: float, high: float, unit: str) -> str:
    """'-0.34 to +0.42 ns': an interval said alone, signed ends (one that straddles 0)."""
    e = fmt_estimate((low + high) / 2, low, high, unit)
    lo, _, hi = (e.interval or fmt_range(low, high, unit)).partition("–")
    return f"{lo} to {hi if hi.startswith(('-', '−')) else '+' + hi}"


def not_resolved_text(low: float, high: float, unit: str) -> str:
    """'not resolved from 0 (-358 to +288 ns)': a net difference (Metric.net) whose CI
    includes 0, said with its interval and without a point that would read as a cost."""
    return f"not resolved from 0 ({interval_words(low, high, unit)})"


def fmt_times(x: float) -> str:
    """A speed-up factor: '11.0×'."""
    return f"{fmt_number(x)}×" if math.isfinite(x) else MISSING


def fmt_p(p: float) -> str:
    """Mann-Whitney p; NaN means fewer than 2 trials on a side, which the reader must see."""
    if math.isnan(p):
        return "n/a (< 2 trials)"
    if p < 0.001:
        return "< 0.001"
    return f"{p:.3f}" if p < 0.1 else f"{p:.2f}"


def fmt_count(n: int) -> str:
    return f"{n:,}"


def param_estimate_label(info: BenchmarkInfo, name: str, value: float) -> str:
    """An interpolated (not swept) param value: '176 KiB', '180 threads', never '180.337'."""
    kind = next((p["kind"] for p in info.params if p["name"] == name), "float")
    if kind == "bytes":
        return info.param_label(name, value)
    rounded: ParamValue = float(f"{value:.3g}")
    if rounded == int(rounded):
        rounded = int(rounded)
    return info.param_label(name, rounded)


def swept_label(info: BenchmarkInfo, name: str, value: float) -> str:
    """A swept value handed back as a float (crossover ends): '4 threads', not '4.0 threads'."""
    kind = next((p["kind"] for p in info.params if p["name"] == name), "float")
    if kind in ("int", "bytes") and value == int(value):
        return info.param_label(name, int(value))
    return info.param_label(name, value)


def params_label(info: BenchmarkInfo, params: Iterable[tuple[str, ParamValue]]) -> str:
    """'size=16 MiB, threads=4'; '(no params)' for a benchmark without axes."""
    parts = [f"{name}={info.param_label(name, value)}" for name, value in params]
    return ", ".join(parts) if parts else "(no params)"


def case_params_label(info: BenchmarkInfo, case: Case, without: str | None = None) -> str:
    return params_label(info, [(k, v) for k, v in case.params if k != without])


def spans_decades(values: Iterable[float], decades: float = 1.5) -> bool:
    """Whether a log axis reads better: all positive and max/min beyond `decades` decades."""
    vs = [v for v in values if math.isfinite(v)]
    if len(vs) < 2 or min(vs) <= 0:
        return False
    return math.log10(max(vs) / min(vs)) > decades
