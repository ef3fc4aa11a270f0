"""The discretised piecewise mechanism for a number (Wang et al. 2019): a level near the answer, or anywhere else."""

from __future__ import annotations

import functools
import math
import numbers
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import ClassVar

import numpy as np

from ..estimators import Estimate, check_count, level_mean
from ..words import percent_up
from ..wording import tr
from .base import LevelMechanism
from .common import CTX, as_decimal, check_integer, check_range, default_rng
from .mixture import mixture_least_variance, mixture_variance

MAX_PIECEWISE_BINS = 4096
MAX_LEVELS = 65536


def piecewise_ratio(*, epsilon, max_bins: int = MAX_PIECEWISE_BINS) -> tuple[int, int]:
    """Return integers a > b >= 1 with a + b <= max_bins and a/b the largest such ratio <= e^(eps/2).

    The discretised piecewise mechanism needs e^(eps/2) as a rational a/b so that every
    output probability is rational; its realised epsilon is eps' = 2 ln(a/b) <= eps exactly.
    Raises ValueError when eps is too small for any such ratio (e^(eps/2) below (b+1)/b for
    every allowed b).
    """
    eps = as_decimal(epsilon)
    if isinstance(max_bins, bool) or not isinstance(max_bins, int) or max_bins < 3:
        raise ValueError(f"max_bins must be an integer >= 3, got {max_bins!r}")
    return _piecewise_ratio(eps, max_bins, epsilon)


@functools.lru_cache(maxsize=1024)
def _piecewise_ratio(eps: Decimal, max_bins: int, epsilon) -> tuple[int, int]:
    """Search every b for a = floor(b e^(eps/2)) (capped by max_bins - b); cached, as the planner asks often."""
    numerator, denominator = CTX.exp(CTX.divide(eps, Decimal(2))).as_integer_ratio()
    best = None
    for b in range(1, max_bins // 2 + 1):
        a = min(b * numerator // denominator, max_bins - b)
        if a > b and (best is None or a * best[1] > best[0] * b):
            best = (a, b)
    if best is None:
        raise ValueError(f"epsilon = {epsilon!r} is too small for the piecewise mechanism with at most "
                         f"{max_bins} bins; use Duchi's mechanism")
    a, b = best
    while piecewise_epsilon(a, b) > eps:
        a -= 1
    if a <= b:
        raise ValueError(f"epsilon = {epsilon!r} is too small for the piecewise mechanism")
    return a, b


def piecewise_epsilon(ratio_a: int, ratio_b: int) -> Decimal:
    """Return the realised epsilon 2 ln(a/b) of the discretised piecewise mechanism."""
    return CTX.multiply(Decimal(2), CTX.ln(CTX.divide(Decimal(ratio_a), Decimal(ratio_b))))


def least_ratio_epsilon(max_bins: int) -> float:
    """Return the least share of the budget (rounded up to 3 digits) with a ratio a/b > 1 within max_bins levels.

    The closest ratio (b + 1)/b with the largest b allowed sets it.
    """
    b = (max_bins - 1) // 2
    least = float(piecewise_epsilon(b + 1, b))
    scale = 10 ** (2 - math.floor(math.log10(least)))
    return math.ceil(least * scale) / scale


def piecewise_probabilities(ratio_a: int, ratio_b: int) -> tuple[Fraction, Fraction]:
    """Return (p, q) = (a/(a+b), b/(a+b)): the report's level R = (k + 1/2)/(a+b) has mean q + (p - q)x.

    x is the answer scaled to [0, 1]; R is the midpoint of the reported bin scaled from
    [-C, C] to [0, 1], C = (a+b)/(a-b) (Wang et al. 2019, with e^(eps/2) = a/b).
    """
    return Fraction(ratio_a, ratio_a + ratio_b), Fraction(ratio_b, ratio_a + ratio_b)


def piecewise_worst_variance(ratio_a: int, ratio_b: int) -> float:
    """Return an upper bound on the variance of one report's estimate of x on [0, 1], over all x.

    Continuous PM on t = 2x - 1 (Wang et al. 2019): Var = t^2/(r-1) + (r+3)/(3(r-1)^2) with
    r = a/b, largest at t = +-1; reporting bin midpoints of width 2/(a-b) removes w^2/12; the
    randomized rounding of x onto the input grid of a + 1 points adds at most 1/(4a^2).
    Everything is divided by 4 for the [0, 1] scale.
    """
    r = Fraction(ratio_a, ratio_b)
    width = Fraction(2, ratio_a - ratio_b)
    t_scale = 1 / (r - 1) + (r + 3) / (3 * (r - 1) ** 2) - width ** 2 / 12
    return float(t_scale / 4 + Fraction(1, 4 * ratio_a ** 2))


def randomize_piecewise(values, *, lo: int, hi: int, ratio_a: int, ratio_b: int, rng=None) -> np.ndarray:
    """Return the output bin in 0..a+b-1 of each integer in lo..hi under the discretised piecewise mechanism.

    The value is rounded at random onto the grid i = 0..a (i/a = the scaled value on
    average); then with probability a/(a+b) the bin is uniform on the b bins i..i+b-1
    around it, else uniform on the a others. Each bin has probability a/((a+b)b) or
    b/((a+b)a), so any two inputs differ by at most (a/b)^2 = e^eps'.
    """
    rng = default_rng(rng)
    v = np.asarray(values, dtype=np.int64)
    scaled = (v - lo) * ratio_a
    grid = scaled // (hi - lo) + (rng.integers(0, hi - lo, size=v.shape, dtype=np.int64) < scaled % (hi - lo))
    high = rng.integers(0, ratio_a + ratio_b, size=v.shape, dtype=np.int64) < ratio_a
    inside = grid + rng.integers(0, ratio_b, size=v.shape, dtype=np.int64)
    outside = rng.integers(0, ratio_a, size=v.shape, dtype=np.int64)
    return np.where(high, inside, np.where(outside < grid, outside, outside + ratio_b))


def check_level_input(value: int, lo: int, hi: int, ratio_a: int, ratio_b: int, levels: int):
    """Check a level mechanism's input as the browser's checkLevelInput does: lo <= value <= hi, a > b >= 1, a + b <= levels."""
    check_range(lo, hi)
    check_integer("value", value, lo, hi)
    check_integer("ratio_b", ratio_b, 1, levels)
    check_integer("ratio_a", ratio_a, ratio_b + 1, levels - ratio_b)


def replay_piecewise(value: int, *, lo: int, hi: int, ratio_a: int, ratio_b: int, stream) -> int:
    """Return the output level of the discretised piecewise mechanism drawn from a replay stream, as randomizePiecewise."""
    grid, remainder = divmod((value - lo) * ratio_a, hi - lo)
    grid += 1 if stream.below(hi - lo) < remainder else 0
    if stream.below(ratio_a + ratio_b) < ratio_a:
        return grid + stream.below(ratio_b)
    other = stream.below(ratio_a)
    return other if other < grid else other + ratio_b


@dataclass(frozen=True)
class RatioLevelMechanism(LevelMechanism):
    """A level mechanism built on e^(ε′/2) = a/b: G = a + b piecewise levels, p = a/G and q = b/G (Wang et al. 2019)."""

    lo: int
    hi: int
    ratio_a: int
    ratio_b: int
    max_bins: ClassVar[int]

    @classmethod
    def smallest_epsilon(cls) -> float:
        return least_ratio_epsilon(cls.max_bins)

    @property
    def bins(self) -> int:
        """G = a + b, the piecewise branch's levels."""
        return self.ratio_a + self.ratio_b

    def levels_of_band(self) -> int:
        return self.bins

    def least_report_variance(self) -> float:
        return mixture_least_variance(self.ratio_a, self.ratio_b, self.branch_weight)

    def probabilities(self) -> tuple[Fraction, Fraction]:
        return piecewise_probabilities(self.ratio_a, self.ratio_b)


@dataclass(frozen=True)
class Piecewise(RatioLevelMechanism):
    """Report a level k in 0..G−1 (G = a + b): near the answer w.p. a/G, else elsewhere; e^ε′ = (a/b)²."""

    layered = True
    kind = "number"
    name = "piecewise"
    title = "piecewise mechanism"
    label = "Piecewise"
    menu = 2
    max_bins = MAX_PIECEWISE_BINS

    @classmethod
    def build(cls, question, share: Decimal) -> tuple[dict, Decimal]:
        a, b = piecewise_ratio(epsilon=share)
        return {"mechanism": cls.name, "ratio_a": a, "ratio_b": b, "bins": a + b}, piecewise_epsilon(a, b)



    @property
    def levels(self) -> int:
        return self.bins

    def variance_at(self, truth) -> float:
        """Return the exact n·Var of one report's estimate of x = ``truth`` (the answer scaled to [0, 1])."""
        return float(mixture_variance(self.ratio_a, self.ratio_b, truth, 1))

    def answer_worst_variance(self) -> float:
        return piecewise_worst_variance(self.ratio_a, self.ratio_b)

    @property
    def branch_weight(self) -> Fraction:
        return Fraction(1)

    def level_scores(self) -> list[int]:
        return list(range(self.bins))

    def level_score(self, level: int) -> int:
        return level

    def level_values(self) -> list[Fraction]:
        return [Fraction(2 * k + 1, 2 * self.bins) for k in range(self.bins)]

    def level_value_array(self, levels: np.ndarray) -> np.ndarray:
        return (levels + 0.5) / self.bins

    def score_pieces(self) -> list[tuple[int, int, int, int]]:
        return [(0, self.bins - 1, 1, 0)]

    def randomize(self, true_values, rng=None) -> np.ndarray:
        return randomize_piecewise(true_values, lo=self.lo, hi=self.hi, ratio_a=self.ratio_a, ratio_b=self.ratio_b,
                                   rng=rng)

    def replay(self, true_value, stream):
        check_level_input(true_value, self.lo, self.hi, self.ratio_a, self.ratio_b, MAX_LEVELS)
        return replay_piecewise(true_value, lo=self.lo, hi=self.hi, ratio_a=self.ratio_a, ratio_b=self.ratio_b,
                                stream=stream)

    def estimates(self, ones, n, level) -> list[Estimate]:
        return [debias_piecewise_mean(ones[0], ones[1], n, ratio_a=self.ratio_a, ratio_b=self.ratio_b,
                                      lo=self.lo, hi=self.hi, level=level, variance=self.report_variance_range())]

    def estimator_sentence(self) -> str:
        return f"with k the n non-empty cells of the column, R = (k + 1/2)/{self.bins}"

    def meanings(self, p, q) -> list[str]:
        lo, hi, a, b = self.lo, self.hi, self.ratio_a, self.ratio_b
        return [f"the output level k in 0..{a + b - 1} of the discretised piecewise mechanism: the answer x in "
                f"{lo}..{hi} was rounded at random to a grid point i in 0..{a} with mean {a}(x - {lo})/{hi - lo}, "
                f"then k was uniform on i..i+{b - 1} with probability {a}/{a + b}, else uniform on the other "
                f"{a} levels; R = (k + 1/2)/{a + b} has mean q + (p - q)(x - {lo})/{hi - lo}"]

    def protection_note(self, epsilon: str) -> str:
        a, b = self.ratio_a, self.ratio_b
        return tr("Your number is swapped for one of %(points)s points spread a bit beyond %(low)s–%(high)s. "
                  "This point is in a narrow band around your number with a chance of %(band)s. Otherwise, "
                  "it is anywhere else (ε′ = %(epsilon)s).", points=a + b, low=self.lo, high=self.hi,
                  band=percent_up(Fraction(a, a + b)), epsilon=epsilon)

    def kept_sentence(self, keep: str) -> str:
        return (f"The report is one of {self.bins} levels; with probability {keep} it lies in the narrow band "
                "around the true answer, else anywhere outside it.")


def check_ratio(ratio_a, ratio_b):
    """Raise ValueError unless the ratio a:b of a level mechanism has integers a > b >= 1."""
    for name, value in (("ratio_a", ratio_a), ("ratio_b", ratio_b)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    if not ratio_a > ratio_b:
        raise ValueError(f"ratio_a must exceed ratio_b = {ratio_b!r}, got {ratio_a!r}")


def debias_piecewise_mean(level_sum, level_squares, n, *, ratio_a, ratio_b, lo, hi, level, variance=None) -> Estimate:
    """Estimate the mean of numbers in [lo, hi] from discretised piecewise-mechanism reports (Wang et al. 2019).

    Each report is an output level k in 0..G-1, G = a + b; R = (k + 1/2)/G has mean
    q + (p − q)x for the answer x scaled to [0, 1], p = a/G, q = b/G. From Σk
    (``level_sum``) and Σk² (``level_squares``): x̂ = (R̄ − q)/(p − q), unbiased and
    unclipped. The interval is survey.core.bounded_mean's on the mean of R, which lies in
    [1/(2G), 1 − 1/(2G)] (valid at every n for every population: Waudby-Smith & Ramdas 2024),
    mapped through (R − q)/(p − q), clipped to [0, 1] and then by lo + x(hi − lo); n = 0 gives
    the whole range. ``variance``, the (least, most) variance of one report's R known from the
    mechanism (``LevelMechanism.report_variance_range``), places the interval's bets and floors
    the standard error: std_error = s_R/(√n (p − q)) with s_R² the unbiased sample variance of
    R, raised to the least variance one report can have (positive for every level mechanism),
    so identical reports never give 0; None when n < 2. ``noisy_share`` is R̄.
    """
    n = check_count(n, "n")
    check_ratio(ratio_a, ratio_b)
    levels = int(ratio_a) + int(ratio_b)
    level_sum = check_count(level_sum, "level_sum", upper=n * (levels - 1))
    level_squares = check_count(level_squares, "level_squares", upper=n * (levels - 1) ** 2)
    return level_mean(level_sum, level_squares, n, offset=0.5, divisor=levels, scores=(0, levels - 1),
                      ratio_a=ratio_a, ratio_b=ratio_b, lo=lo, hi=hi, level=level, name="level", variance=variance)
