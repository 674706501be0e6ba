"""The few distribution functions the intervals and tests need: Student's t (quantile and
tail), the normal's quantile, the chi-squared tail.

scipy.stats computes these with scipy.special's functions (stdtrit, stdtr, chdtrc), but
loading scipy.stats costs about 0.7 s of CPU per process (its distributions, optimisers and
sparse modules) against about 0.2 s for scipy.special, and every `bakeoff run`, `report` or
`compare` forms intervals: across the test suite, hundreds of processes paid it. So the
functions are called where scipy.stats calls them, and give its figures (checked in
tests/test_stats.py). The normal's quantile is the standard library's.
"""

from __future__ import annotations

import functools
import math
from statistics import NormalDist
from types import ModuleType

from bakeoff.core import lazy


@functools.cache  # loaded (with interrupts held) once, not at every quantile
def _special() -> ModuleType:
    return lazy.load("scipy.special")


def norm_ppf(p: float) -> float:
    """The standard normal's quantile at p (scipy.stats.norm.ppf)."""
    return NormalDist().inv_cdf(p)


def t_ppf(p: float, df: float) -> float:
    """Student's t quantile at p on df degrees of freedom (scipy.stats.t.ppf); the normal's
    for infinite df."""
    if df == math.inf:
        return norm_ppf(p)
    return float(_special().stdtrit(df, p))


def t_sf(x: float, df: float) -> float:
    """P(T > x) on df degrees of freedom (scipy.stats.t.sf); the normal's for infinite df."""
    if df == math.inf:
        return 0.5 * math.erfc(x / math.sqrt(2))  # erfc: exact deep in the tail too
    return float(_special().stdtr(df, -x))


def chi2_sf(x: float, df: float) -> float:
    """P(X > x) for a chi-squared variable on df degrees of freedom (scipy.stats.chi2.sf)."""
    return float(_special().chdtrc(df, x))


def _average_ranks(values: list[float]) -> tuple[list[float], list[int]]:
    """1-based ranks, ties given their average rank; and the size of each group of ties."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    groups: list[int] = []
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        groups.append(j - i + 1)
        i = j + 1
    return ranks, groups


def _u_counts(m: int, n: int) -> list[int]:
    """How many of the C(m+n, m) orderings give each U = 0..m*n: the coefficients of the
    Gaussian binomial [m+n choose m]_q = prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i), exact."""
    poly = [1] + [0] * (m * n)
    for i in range(1, m + 1):
        for k in range(len(poly) - 1, n + i - 1, -1):  # times (1 - q^(n+i))
            poly[k] -= poly[k - n - i]
        for k in range(i, len(poly)):  # divided by (1 - q^i)
            poly[k] += poly[k - i]
    return poly


def mann_whitney_p(x: list[float], y: list[float]) -> float:
    """Two-sided Mann-Whitney U p-value, as scipy.stats.mannwhitneyu computes it by default
    (method "auto", continuity corrected): exact when either side has at most 8 values and
    nothing is tied, else the normal approximation with its tie correction."""
    n1, n2 = len(x), len(y)
    ranks, ties = _average_ranks([*x, *y])
    u1 = sum(ranks[:n1]) - n1 * (n1 + 1) / 2
    u = max(u1, n1 * n2 - u1)
    if (n1 <= 8 or n2 <= 8) and max(ties) == 1:
        counts = _u_counts(min(n1, n2), max(n1, n2))
        p = 2 * sum(counts[round(u):]) / math.comb(n1 + n2, n1)
    else:
        n = n1 + n2
        tie_term = sum(t ** 3 - t for t in ties)
        s = math.sqrt(n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1))))
        if s == 0:  # every value tied: U is its mean, and scipy's p (2, clipped) is 1
            return 1.0
        z = (u - n1 * n2 / 2 - 0.5) / s
        p = math.erfc(z / math.sqrt(2))  # 2 * P(Z > z)
    return min(1.0, max(0.0, p))
