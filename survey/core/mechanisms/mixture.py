"""The exact variance of the discretised piecewise mechanism mixed with Duchi's (Wang et al. 2019), per answer.

β = 1 is the piecewise mechanism alone; β = (a − b)/a the hybrid. Shared by both modules.
"""

from __future__ import annotations

import functools
from fractions import Fraction

import numpy as np


def _piece_quadratic(ratio_a: int, ratio_b: int, beta, piece, one=Fraction(1)) -> tuple:
    """Return (c0, c1, c2) with Var(R) = c0 + c1 u + c2 u² for x = (piece + u)/a, u in [0, 1], of the HM mixture.

    PM's grid point is piece or piece + 1 (w.p. u), its level uniform on the band of b levels
    from there w.p. a/G, else on the other a; Duchi's bit is 1 w.p. x, kept w.p. 1 - f. Both
    branches have the same E[R], so Var(R) = beta Var_PM(R) + (1 - beta) Var_Duchi(R). Exact
    with one = Fraction(1) and an integer piece; vectorised floats with one = 1.0 and an array.
    """
    a, b = ratio_a, ratio_b
    g = a + b
    all1, all2 = one * g * (g - 1) / 2, one * (g - 1) * g * (2 * g - 1) / 6

    def moments(grid):
        band1 = b * grid + one * b * (b - 1) / 2
        band2 = b * grid * grid + grid * b * (b - 1) + one * (b - 1) * b * (2 * b - 1) / 6
        return (one * a / g * band1 / b + one * b / g * (all1 - band1) / a,
                one * a / g * band2 / b + one * b / g * (all2 - band2) / a)

    m1_lo, m2_lo = moments(piece)
    m1_hi, m2_hi = moments(piece + 1)
    # PM on the k scale: E[k²] = m2_lo + (m2_hi - m2_lo)u, E[k] = m1_lo + (m1_hi - m1_lo)u.
    d1, d2 = m1_hi - m1_lo, m2_hi - m2_lo
    pm = (m2_lo - m1_lo ** 2, d2 - 2 * m1_lo * d1, -d1 ** 2)
    # Duchi: P(high) = pi = f + (1 - 2f)x, Var(R) = spread² pi(1 - pi).
    flip = one * b * b / (a * a + b * b)
    spread = one * (a * a + b * b) / (g * g)
    slope = (1 - 2 * flip) / a
    pi0 = flip + slope * piece
    duchi = (pi0 * (1 - pi0), slope * (1 - 2 * pi0), -slope ** 2)
    return tuple(beta * pm[i] / (g * g) + (1 - beta) * spread ** 2 * duchi[i] for i in range(3))


def _quadratic_max(c0, c1, c2):
    """Return (u, value) of the largest c0 + c1 u + c2 u² over u in [0, 1] (exact, one piece)."""
    points = [Fraction(0), Fraction(1)]
    if c2 < 0 and 0 < -c1 / (2 * c2) < 1:
        points.append(-c1 / (2 * c2))
    return max(((u, c0 + c1 * u + c2 * u * u) for u in points), key=lambda pair: pair[1])


def mixture_variance(ratio_a: int, ratio_b: int, x, beta) -> Fraction:
    """Return the exact variance of one report's estimate (R - q)/(p - q) of x in [0, 1], PM taken w.p. beta."""
    a, b = ratio_a, ratio_b
    x = Fraction(x)
    beta = Fraction(beta)
    piece = min(int(x * a), a - 1)
    u = x * a - piece
    c0, c1, c2 = _piece_quadratic(a, b, beta, piece)
    return (c0 + c1 * u + c2 * u * u) / Fraction(a - b, a + b) ** 2


@functools.lru_cache(maxsize=1024)
def mixture_worst(ratio_a: int, ratio_b: int, beta: Fraction) -> tuple[Fraction, Fraction]:
    """Return (x, Var) at the x in [0, 1] of largest exact variance, PM taken w.p. beta (1: PM alone).

    Var(R) is a concave quadratic in x on each piece [j/a, (j+1)/a] (the grid rounding adds
    u(1 - u) times a positive constant), so each piece's maximum is at its vertex or an end.
    Every piece is screened in floating point and the four largest settled exactly.
    """
    a, b = ratio_a, ratio_b
    beta = Fraction(beta)
    c0, c1, c2 = _piece_quadratic(a, b, float(beta), np.arange(a, dtype=np.float64), 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        vertex = np.where(c2 < 0, np.clip(-c1 / (2 * c2), 0.0, 1.0), 0.0)
    screened = np.maximum.reduce([c0, c0 + c1 + c2, c0 + c1 * vertex + c2 * vertex * vertex])
    scale = Fraction(a - b, a + b) ** 2
    best = None
    for piece in np.argsort(screened)[-4:]:
        u, value = _quadratic_max(*_piece_quadratic(a, b, beta, int(piece)))
        if best is None or value > best[1]:
            best = ((int(piece) + u) / a, value / scale)
    return best


def mixture_least_variance(ratio_a: int, ratio_b: int, beta) -> float:
    """Return the least variance of one report's level value R over answers x in [0, 1], PM taken w.p. beta (floats).

    Var(R) is a concave quadratic in x on each piece, so its least value is at a piece's end.
    """
    c0, c1, c2 = _piece_quadratic(ratio_a, ratio_b, float(beta), np.arange(ratio_a, dtype=np.float64), 1.0)
    return float(np.minimum(c0, c0 + c1 + c2).min())


def mixture_population_worst(ratio_a: int, ratio_b: int, beta) -> tuple[float, dict[float, float]]:
    """Return the largest n·Var of the mean's estimate over every population of answers, and that population.

    A population drawing x in [0, 1] gives n·Var = E[V(x)] + Var(x) with V the variance of one
    report's estimate at x (Var(R) = E[Var(R | x)] + (p − q)² Var(x)), so the worst population
    maximises E[V(x) + x²] − E[x]². For a mean m the best E[V + x²] is the concave envelope of
    V + x² at m, reached by at most two answers; it is found from V on every piece's ends and
    vertex (V is quadratic on each piece), then the envelope's best m. Floats: it plans, it
    proves nothing.
    """
    a, b = ratio_a, ratio_b
    c0, c1, c2 = _piece_quadratic(a, b, float(beta), np.arange(a, dtype=np.float64), 1.0)
    return population_worst(c0, c1, c2, ((a - b) / (a + b)) ** 2)


def population_worst(c0, c1, c2, scale) -> tuple[float, dict[float, float]]:
    """Return the worst n·Var of the mean over populations, and that population, from V on a grid of pieces.

    V(x) = (c0 + c1 u + c2 u²)/scale on piece j, x = (j + u)/pieces, with c0, c1, c2 arrays of one
    entry per piece: the concave envelope of V + x² (see ``mixture_population_worst``).
    """
    a = len(c0)
    with np.errstate(divide="ignore", invalid="ignore"):
        vertex = np.where(c2 < 0, np.clip(-c1 / (2 * c2), 0.0, 1.0), 0.5)
    u = np.concatenate([np.zeros(a), vertex, np.ones(a)])
    coefficients = [np.tile(c, 3) for c in (c0, c1, c2)]
    x = (np.tile(np.arange(a, dtype=np.float64), 3) + u) / a
    h = (coefficients[0] + coefficients[1] * u + coefficients[2] * u * u) / scale + x * x
    order = np.lexsort((h, x))
    hull: list[tuple[float, float]] = []
    for point in zip(x[order].tolist(), h[order].tolist()):
        while len(hull) >= 2 and _turns_up(hull[-2], hull[-1], point):
            hull.pop()
        hull.append(point)
    best = (-np.inf, {})
    for (x1, h1), (x2, h2) in zip(hull, hull[1:] or hull):
        slope = (h2 - h1) / (x2 - x1) if x2 > x1 else 0.0
        m = min(max(slope / 2, x1), x2)
        value = h1 + slope * (m - x1) - m * m
        if value > best[0]:
            weight = (x2 - m) / (x2 - x1) if x2 > x1 else 1.0
            best = (value, {x1: weight, x2: 1 - weight} if x2 > x1 else {x1: 1.0})
    return best


def _turns_up(first, middle, last) -> bool:
    """Return whether ``middle`` lies on or below the chord from ``first`` to ``last`` (not on an upper hull)."""
    return ((middle[0] - first[0]) * (last[1] - first[1]) - (middle[1] - first[1]) * (last[0] - first[0])) >= 0
