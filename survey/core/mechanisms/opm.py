"""The optimal piecewise mechanism for a number: the piecewise family with its band's width chosen for each ε.

Zheng, Mishra & Hu (2025, "Optimal Piecewise-based Mechanism for Collecting Bounded Numerical
Data under Local Differential Privacy", Proceedings on Privacy Enhancing Technologies 2025,
arXiv:2505.15483) show that the piecewise mechanism of Wang et al. (2019) is one heuristic
member of a family of piecewise
mechanisms whose high-probability band has a free width and placement, and that optimising
them lowers the variance. This module takes the member of that family that the product can
sample exactly and debias with one line, optimised for the worst case over answers.

Derivation (discretised, all integers). The output is a level k in 0..G−1, G = m + w. The
answer x in [0, 1] is rounded at random onto the grid i in 0..m (E[i] = mx); the band is the
w levels i..i+w−1 (its placement slides linearly from the bottom to the top, which keeps the
mean of the report linear in x); every band level has probability A/D and every other level
B/D, D = wA + mB, e^ε′ = A/B. Any level's probability under two answers differs at most by
the factor A/B (a mixture of two grid points' rows of A/D and B/D), and the lowest answer's
band levels 0..w−1 with m ≥ 1 attain it: ε′ = ln(A/B) exactly. With Δ = (A − B)/D:

    E[k | i]  = α + β i,                         α = B·G(G−1)/(2D) + Δ w(w−1)/2,   β = Δ w,
    E[k² | i] = γ + δ i + η i²,                  γ = B·(G−1)G(2G−1)/(6D) + Δ (w−1)w(2w−1)/6,
                                                 δ = Δ w(w−1),   η = Δ w.

With y = mx = j + u (j = ⌊y⌋), E[i] = y and E[i²] = y² + u(1 − u), so

    Var(k | x) = Q(y) + η u(1 − u),   Q(y) = γ + δy + ηy² − (α + βy)².

R = (k + 1/2)/G has mean q + (p − q)x with q = (α + 1/2)/G and p − q = βm/G, and p = 1 − q
by the mirror symmetry k ↦ G − 1 − k; the estimate (R̄ − q)/(p − q) is unbiased with
n·Var = Var(k | x)/(βm)² per report. Q is a convex quadratic (its y² coefficient is
Δw(1 − Δw) > 0, as Δw < 1) symmetric about m/2, so Q(j + u) ≤ max(Q(u), Q(m − 1 + u)) for
every piece j: the worst answer lies on the first or the last piece, where the variance is a
concave quadratic in u (coefficient −β²) maximised exactly. The population worst case is the
concave envelope of V(x) + x² (``mixture.population_worst``), here the two ends.

Parameters: A/B is the largest ratio ≤ e^ε with B ≤ 4096 and A ≤ 2^20 (checked with exact
decimals), then (m, w) with m + w ≤ 512 minimise the exact worst-case variance above. The
continuous optimum of the band's share θ = w/G falls from about 0.47 at ε = 0.5 to 0.08 at
ε = 8, where Wang et al.'s choice is θ = 1/(1 + e^(ε/2)). Discretised, the optimum has few
levels at moderate ε (two, Duchi's mechanism, at ε ≤ 1; three at ε = 2; seven at ε = 3), as the
N-output mechanism of Baek & Chung (2025) finds for few outputs. The design ranks it with the
classic number mechanisms (no ``gain_needed``: its report is one level like theirs), so ``auto``
takes it wherever its worst case is the least (from ε ≈ 1.9 on; the hybrid below).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

import numpy as np

from ..estimators import Estimate, check_count, level_mean
from ..words import percent_up
from ..wording import tr
from .base import LevelMechanism
from .common import CTX, as_decimal, check_integer, check_range, default_rng
from .mixture import population_worst

MAX_OPM_LEVELS = 512
MAX_OPM_RATIO_B = 4096
MAX_OPM_RATIO_A = 2**20


def opm_ratio(*, epsilon) -> tuple[int, int]:
    """Return integers A > B >= 1, B <= 4096, A <= 2^20, with A/B the largest such ratio <= e^eps (exactly)."""
    return _opm_ratio(as_decimal(epsilon), epsilon)


@functools.lru_cache(maxsize=1024)
def _opm_ratio(eps: Decimal, epsilon) -> tuple[int, int]:
    """Search every B for A = floor(B e^eps), capped; step A down until ln(A/B) <= eps in exact decimals."""
    numerator, denominator = CTX.exp(eps).as_integer_ratio()
    best = None
    for b in range(1, MAX_OPM_RATIO_B + 1):
        a = min(b * numerator // denominator, MAX_OPM_RATIO_A)
        if a > b and (best is None or a * best[1] > best[0] * b):
            best = (a, b)
    if best is None:
        raise ValueError(f"epsilon = {epsilon!r} is too small for the optimal piecewise mechanism; "
                         "use Duchi's mechanism")
    a, b = best
    while opm_epsilon(a, b) > eps:
        a -= 1
    if a <= b:
        raise ValueError(f"epsilon = {epsilon!r} is too small for the optimal piecewise mechanism")
    return a, b


def opm_epsilon(ratio_a: int, ratio_b: int) -> Decimal:
    """Return the realised epsilon ln(A/B) of the optimal piecewise mechanism."""
    return CTX.ln(CTX.divide(Decimal(ratio_a), Decimal(ratio_b)))


def opm_moments(ratio_a: int, ratio_b: int, steps: int, band: int, one=Fraction(1)) -> tuple:
    """Return (α, β, γ, δ, η): E[k | i] = α + βi and E[k² | i] = γ + δi + ηi² (exact with one = Fraction(1))."""
    a, b, m, w = ratio_a, ratio_b, steps, band
    g = m + w
    d = w * a + m * b
    low, delta = one * b / d, one * (a - b) / d
    alpha = low * g * (g - 1) / 2 + delta * w * (w - 1) / 2
    gamma = low * (g - 1) * g * (2 * g - 1) / 6 + delta * (w - 1) * w * (2 * w - 1) / 6
    return alpha, delta * w, gamma, delta * w * (w - 1), delta * w


def opm_probabilities(ratio_a: int, ratio_b: int, steps: int, band: int) -> tuple[Fraction, Fraction]:
    """Return the exact (p, q): R = (k + 1/2)/G has mean q + (p − q)x, q = (α + 1/2)/G, p − q = βm/G."""
    alpha, beta, *_ = opm_moments(ratio_a, ratio_b, steps, band)
    g = steps + band
    q = (alpha + Fraction(1, 2)) / g
    return q + beta * steps / g, q


def _piece_quadratics(ratio_a, ratio_b, steps, band, pieces, one):
    """Return (c0, c1, c2): Var(k) = c0 + c1 u + c2 u² for y = piece + u, u in [0, 1] (see the module docstring)."""
    alpha, beta, gamma, delta, eta = opm_moments(ratio_a, ratio_b, steps, band, one)
    curve = eta - beta * beta
    at = gamma + delta * pieces + eta * pieces * pieces - (alpha + beta * pieces) ** 2
    slope = delta - 2 * alpha * beta + 2 * curve * pieces
    return at, slope + eta, curve - eta


def opm_variance(ratio_a: int, ratio_b: int, steps: int, band: int, x) -> Fraction:
    """Return the exact n·Var of one report's estimate (R − q)/(p − q) of x in [0, 1]."""
    y = Fraction(x) * steps
    piece = min(int(y), steps - 1)
    u = y - piece
    c0, c1, c2 = _piece_quadratics(ratio_a, ratio_b, steps, band, piece, Fraction(1))
    beta = opm_moments(ratio_a, ratio_b, steps, band)[1]
    return (c0 + c1 * u + c2 * u * u) / (beta * steps) ** 2


def opm_worst(ratio_a: int, ratio_b: int, steps: int, band: int) -> tuple[Fraction, Fraction]:
    """Return (x, Var) at the x in [0, 1] of largest exact variance: the first or last piece (Q is convex)."""
    beta = opm_moments(ratio_a, ratio_b, steps, band)[1]
    best = None
    for piece in sorted({0, steps - 1}):
        c0, c1, c2 = _piece_quadratics(ratio_a, ratio_b, steps, band, piece, Fraction(1))
        points = [Fraction(0), Fraction(1)]
        if c2 < 0 and 0 < -c1 / (2 * c2) < 1:
            points.append(-c1 / (2 * c2))
        for u in points:
            value = (c0 + c1 * u + c2 * u * u) / (beta * steps) ** 2
            if best is None or value > best[1]:
                best = ((piece + u) / steps, value)
    return best


def _float_worst(ratio_a: int, ratio_b: int, steps: np.ndarray, band: np.ndarray) -> np.ndarray:
    """Return the worst-case variance of arrays of (m, w) in floats (first piece; the last mirrors it)."""
    c0, c1, c2 = _piece_quadratics(ratio_a, ratio_b, steps, band, 0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        vertex = np.where(c2 < 0, np.clip(-c1 / (2 * c2), 0.0, 1.0), 0.0)
    top = np.maximum.reduce([c0, c0 + c1 + c2, c0 + c1 * vertex + c2 * vertex * vertex])
    beta = opm_moments(ratio_a, ratio_b, steps, band, 1.0)[1]
    return top / (beta * steps) ** 2


@functools.lru_cache(maxsize=1024)
def opm_shape(ratio_a: int, ratio_b: int) -> tuple[int, int]:
    """Return (m, w), m + w <= 512, of least worst-case variance at e^ε′ = A/B (screened in floats, settled exactly)."""
    m, w = np.meshgrid(np.arange(1, MAX_OPM_LEVELS, dtype=np.float64),
                       np.arange(1, MAX_OPM_LEVELS, dtype=np.float64), indexing="ij")
    keep = m + w <= MAX_OPM_LEVELS
    m, w = m[keep], w[keep]
    worst = _float_worst(ratio_a, ratio_b, m, w)
    screened = np.argsort(worst, kind="stable")[:8]
    shapes = [(int(m[i]), int(w[i])) for i in screened]
    return min(shapes, key=lambda shape: (opm_worst(ratio_a, ratio_b, *shape)[1], shape))


def opm_worst_variance(ratio_a: int, ratio_b: int, steps: int, band: int) -> float:
    """Return the largest variance over x in [0, 1] of one report's estimate of x (exact, as a float)."""
    return float(opm_worst(ratio_a, ratio_b, steps, band)[1])


def randomize_opm(values, *, lo: int, hi: int, ratio_a: int, ratio_b: int, steps: int, band: int,
                  rng=None) -> np.ndarray:
    """Return the output level in 0..m+w−1 of each integer in lo..hi under the optimal piecewise mechanism.

    The value is rounded at random onto the grid i = 0..m; then below(wA + mB) < wA puts the
    level uniform on the band i..i+w−1, else uniform on the m other levels.
    """
    rng = default_rng(rng)
    v = np.asarray(values, dtype=np.int64)
    scaled = (v - lo) * steps
    grid = scaled // (hi - lo) + (rng.integers(0, hi - lo, size=v.shape, dtype=np.int64) < scaled % (hi - lo))
    high = rng.integers(0, band * ratio_a + steps * ratio_b, size=v.shape, dtype=np.int64) < band * ratio_a
    inside = grid + rng.integers(0, band, size=v.shape, dtype=np.int64)
    outside = rng.integers(0, steps, size=v.shape, dtype=np.int64)
    return np.where(high, inside, np.where(outside < grid, outside, outside + band))


@dataclass(frozen=True)
class OptimalPiecewise(LevelMechanism):
    """Report a level in 0..m+w−1: the band of w levels at the answer's grid point w.p. wA/(wA + mB), else elsewhere."""

    lo: int
    hi: int
    ratio_a: int
    ratio_b: int
    steps: int
    band: int
    kind = "number"
    name = "opm"
    title = "optimal piecewise mechanism"
    label = "Optimal piecewise"
    menu = 4

    @classmethod
    def build(cls, question, share: Decimal) -> tuple[dict, Decimal]:
        a, b = opm_ratio(epsilon=share)
        m, w = opm_shape(a, b)
        return ({"mechanism": cls.name, "ratio_a": a, "ratio_b": b, "steps": m, "band": w, "levels": m + w},
                opm_epsilon(a, b))

    @classmethod
    def smallest_epsilon(cls) -> float:
        return 0.001

    @property
    def levels(self) -> int:
        return self.steps + self.band

    def levels_of_band(self) -> int:
        """Return the denominator that p and q share (p + q = 1)."""
        return self.probabilities()[0].denominator

    def probabilities(self) -> tuple[Fraction, Fraction]:
        return opm_probabilities(self.ratio_a, self.ratio_b, self.steps, self.band)

    def variance_at(self, truth) -> float:
        """Return the exact n·Var of one report's estimate of x = ``truth`` (the answer scaled to [0, 1])."""
        return float(opm_variance(self.ratio_a, self.ratio_b, self.steps, self.band, truth))

    def answer_worst_variance(self) -> float:
        return opm_worst_variance(self.ratio_a, self.ratio_b, self.steps, self.band)

    def least_report_variance(self) -> float:
        """Var(k) is a concave quadratic on each piece of y = mx, so its least value is at a grid point; R = (k + 1/2)/G."""
        c0, c1, c2 = _piece_quadratics(self.ratio_a, self.ratio_b, self.steps, self.band,
                                       np.arange(self.steps, dtype=np.float64), 1.0)
        least = np.minimum(np.broadcast_to(c0, (self.steps,)), c0 + c1 + c2).min()
        return float(least) / self.levels ** 2

    @property
    def branch_weight(self) -> Fraction:
        return Fraction(1)

    def _population(self) -> tuple[float, dict[float, float]]:
        """Return the worst n·Var of the mean over populations, and that population (floats: it plans)."""
        pieces = np.arange(self.steps, dtype=np.float64)
        coefficients = np.broadcast_arrays(*_piece_quadratics(self.ratio_a, self.ratio_b, self.steps, self.band,
                                                              pieces, 1.0))
        beta = float(opm_moments(self.ratio_a, self.ratio_b, self.steps, self.band)[1])
        return population_worst(*coefficients, (beta * self.steps) ** 2)

    def worst_population(self) -> dict[float, float]:
        return self._population()[1]

    def worst_variance(self) -> float:
        return self._population()[0]

    def level_scores(self) -> list[int]:
        return list(range(self.levels))

    def level_score(self, level: int) -> int:
        return level

    def level_values(self) -> list[Fraction]:
        return [Fraction(2 * k + 1, 2 * self.levels) for k in range(self.levels)]

    def level_value_array(self, levels: np.ndarray) -> np.ndarray:
        return (levels + 0.5) / self.levels

    def score_pieces(self) -> list[tuple[int, int, int, int]]:
        return [(0, self.levels - 1, 1, 0)]

    def randomize(self, true_values, rng=None) -> np.ndarray:
        return randomize_opm(true_values, lo=self.lo, hi=self.hi, ratio_a=self.ratio_a, ratio_b=self.ratio_b,
                             steps=self.steps, band=self.band, rng=rng)

    def replay(self, true_value, stream):
        """Round onto the grid by below(max − min), then below(wA + mB) < wA: band level, else another level."""
        a, b, m, w = self.ratio_a, self.ratio_b, self.steps, self.band
        check_range(self.lo, self.hi)
        check_integer("value", true_value, self.lo, self.hi)
        check_integer("steps", m, 1, MAX_OPM_LEVELS - 1)
        check_integer("band", w, 1, MAX_OPM_LEVELS - m)
        check_integer("ratio_b", b, 1, MAX_OPM_RATIO_B)
        check_integer("ratio_a", a, b + 1, MAX_OPM_RATIO_A)
        grid, remainder = divmod((true_value - self.lo) * m, self.hi - self.lo)
        grid += 1 if stream.below(self.hi - self.lo) < remainder else 0
        if stream.below(w * a + m * b) < w * a:
            return grid + stream.below(w)
        other = stream.below(m)
        return other if other < grid else other + w

    def estimates(self, ones, n, level) -> list[Estimate]:
        return [debias_level_mean(ones[0], ones[1], n, levels=self.levels, p=self.probabilities()[0],
                                  lo=self.lo, hi=self.hi, level=level, variance=self.report_variance_range())]

    def estimator_sentence(self) -> str:
        return f"with k the n non-empty cells of the column, R = (k + 1/2)/{self.levels}"

    def meanings(self, p, q) -> list[str]:
        lo, hi, a, b, m, w = self.lo, self.hi, self.ratio_a, self.ratio_b, self.steps, self.band
        meaning = (f"the output level k in 0..{m + w - 1} of the optimal piecewise mechanism: the answer x in "
                   f"{lo}..{hi} was rounded at random to a grid point i in 0..{m} with mean {m}(x - {lo})/{hi - lo}, "
                   f"then k was uniform on i..i+{w - 1} with probability {w * a}/{w * a + m * b}, else uniform on "
                   f"the other {m} levels; R = (k + 1/2)/{m + w} has mean q + (p - q)(x - {lo})/{hi - lo}")
        return [meaning]

    def protection_note(self, epsilon: str) -> str:
        m, w, a, b = self.steps, self.band, self.ratio_a, self.ratio_b
        return tr("Your number is swapped for one of %(points)s points spread a bit beyond %(low)s–%(high)s. "
                  "This point is in a band of %(width)s points around your number with a chance of %(band)s. "
                  "Otherwise, it is anywhere else (ε′ = %(epsilon)s).", points=m + w, low=self.lo,
                  high=self.hi, band=percent_up(Fraction(w * a, w * a + m * b)), width=w, epsilon=epsilon)

    def kept_sentence(self, keep: str) -> str:
        m, w, a, b = self.steps, self.band, self.ratio_a, self.ratio_b
        return (f"The report is one of {m + w} levels; with probability {w * a / (w * a + m * b):.1%} it lies in "
                f"the band of {w} levels around the true answer, else anywhere outside it.")


def debias_level_mean(level_sum, level_squares, n, *, levels, p, lo, hi, level, variance=None) -> Estimate:
    """Estimate the mean of numbers in [lo, hi] from reports of levels k in 0..levels-1 with R = (k + 1/2)/levels.

    For a level mechanism whose R has mean q + (p − q)x with q = 1 − p (``p`` an exact Fraction
    above 1/2), such as the optimal piecewise mechanism: from Σk and Σk², exactly as
    debias_piecewise_mean.
    """
    n = check_count(n, "n")
    levels = check_count(levels, "levels")
    p = Fraction(p)
    if not Fraction(1, 2) < p <= 1 or levels < 2:
        raise ValueError(f"p must be a fraction in (1/2, 1] and levels >= 2, got p = {p}, levels = {levels}")
    level_sum = check_count(level_sum, "level_sum", upper=n * (levels - 1))
    level_squares = check_count(level_squares, "level_squares", upper=n * (levels - 1) ** 2)
    return level_mean(level_sum, level_squares, n, offset=0.5, divisor=levels, scores=(0, levels - 1),
                      ratio_a=p.numerator, ratio_b=p.denominator - p.numerator, lo=lo, hi=hi, level=level,
                      name="level", variance=variance)
