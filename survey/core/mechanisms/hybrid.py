"""The hybrid mechanism for a number (Wang et al. 2019): the piecewise mechanism or Duchi's, chosen at random.

Report PM at ε w.p. β = 1 − e^(−ε/2), else Duchi et al. (2013) at ε. With e^(ε/2) = a/b both
are rational, and the two branches have disjoint outputs: the mixture is ε′-LDP.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

import numpy as np

from ..estimators import Estimate, check_count, level_mean
from ..words import percent, percent_up
from ..wording import tr
from .common import default_rng, round_at_random
from .mixture import mixture_variance, mixture_worst
from .piecewise import (
    RatioLevelMechanism,
    check_ratio,
    check_level_input,
    piecewise_epsilon,
    piecewise_ratio,
    randomize_piecewise,
    replay_piecewise,
)

# The hybrid mechanism's output levels G = a + b stay at most this: its tallies keep the
# sum of squared scores |s| < G^2, so n < 2^63 / G^4 = 2^27 (over 1.3e8) reports fit an int64.
MAX_HYBRID_BINS = 512


def hybrid_ratio(*, epsilon) -> tuple[int, int]:
    """Return the largest a/b <= e^(eps/2) with a + b <= MAX_HYBRID_BINS: the piecewise ratio of the hybrid mechanism."""
    return piecewise_ratio(epsilon=epsilon, max_bins=MAX_HYBRID_BINS)


def hybrid_epsilon(ratio_a: int, ratio_b: int) -> Decimal:
    """Return the realised epsilon 2 ln(a/b) of the hybrid mechanism (both branches run at it)."""
    return piecewise_epsilon(ratio_a, ratio_b)


def hybrid_branch(ratio_a: int, ratio_b: int) -> tuple[Fraction, Fraction]:
    """Return (beta, f): the chance of the piecewise branch, (a - b)/a, and the Duchi branch's flip, b²/(a² + b²).

    Wang et al. (2019, "Collecting and analyzing multidimensional data with local differential
    privacy", ICDE), the hybrid mechanism: report PM at eps w.p. beta = 1 - e^(-eps/2), else
    Duchi et al. (2013) at eps. With e^(eps/2) = a/b both are rational: Duchi keeps its bit
    w.p. a²/(a² + b²), so its ratio is (a/b)² = e^eps' exactly, as PM's. The mixture weight does
    not depend on the answer and the two branches have disjoint outputs, so every output's
    probability ratio between two answers is that of one branch: the mixture is eps'-LDP.
    """
    return Fraction(ratio_a - ratio_b, ratio_a), Fraction(ratio_b ** 2, ratio_a ** 2 + ratio_b ** 2)


def hybrid_level_values(ratio_a: int, ratio_b: int) -> list[Fraction]:
    """Return R(L) for every output level L in 0..G+1 of the hybrid mechanism, G = a + b.

    PM's levels 0..G-1 keep R = (k + 1/2)/G; Duchi's 0 and 1, reported as G and G + 1, sit at
    ab/G² and (a² + ab + b²)/G², so that E[R] = q + (p - q)x in both branches with PM's
    p = a/G, q = b/G: the mixture's mean is that line whatever the branch.
    """
    a, b = ratio_a, ratio_b
    g = a + b
    return ([Fraction(2 * k + 1, 2 * g) for k in range(g)]
            + [Fraction(a * b, g * g), Fraction(a * a + a * b + b * b, g * g)])


def hybrid_scores(ratio_a: int, ratio_b: int) -> list[int]:
    """Return the integer score s(L) = 2G²R(L) - G² of every hybrid level: G(2k + 1 - G) for PM, ∓(a² + b²) for Duchi.

    R = (s + G²)/(2G²); |s| < G², so tallies of s and s² stay exact integers (MAX_HYBRID_BINS).
    """
    a, b = ratio_a, ratio_b
    g = a + b
    return [g * (2 * k + 1 - g) for k in range(g)] + [-(a * a + b * b), a * a + b * b]


def hybrid_variance(ratio_a: int, ratio_b: int, x, *, beta=None) -> Fraction:
    """Return the exact variance of one report's estimate (R - q)/(p - q) of x in [0, 1] under the discretised HM.

    ``beta`` defaults to the hybrid's (a - b)/a; beta = 1 gives the discretised piecewise mechanism alone.
    """
    return mixture_variance(ratio_a, ratio_b, x, hybrid_branch(ratio_a, ratio_b)[0] if beta is None else beta)


def hybrid_worst(ratio_a: int, ratio_b: int, beta: Fraction | None = None) -> tuple[Fraction, Fraction]:
    """Return (x, Var) at the x in [0, 1] of largest exact variance of the discretised HM (or PM, beta = 1)."""
    return mixture_worst(ratio_a, ratio_b, hybrid_branch(ratio_a, ratio_b)[0] if beta is None else Fraction(beta))


def hybrid_worst_variance(ratio_a: int, ratio_b: int) -> float:
    """Return the largest variance over x in [0, 1] of one report's estimate of x under the discretised HM (exact)."""
    return float(hybrid_worst(ratio_a, ratio_b)[1])



def randomize_hybrid(values, *, lo: int, hi: int, ratio_a: int, ratio_b: int, rng=None) -> np.ndarray:
    """Return the output level in 0..G+1 of each integer in lo..hi under the hybrid mechanism.

    Branch: below(a) < a - b (beta = (a - b)/a) sends the piecewise level in 0..G-1, G = a + b;
    else Duchi's bit, rounded w.p. (x - lo)/(hi - lo) and flipped when below(a² + b²) < b², as G + bit.
    """
    rng = default_rng(rng)
    v = np.asarray(values, dtype=np.int64)
    piecewise = rng.integers(0, ratio_a, size=v.shape, dtype=np.int64) < ratio_a - ratio_b
    levels = randomize_piecewise(v, lo=lo, hi=hi, ratio_a=ratio_a, ratio_b=ratio_b, rng=rng)
    bits = round_at_random(v, lo, hi, rng)
    flips = rng.integers(0, ratio_a ** 2 + ratio_b ** 2, size=v.shape, dtype=np.int64) < ratio_b ** 2
    return np.where(piecewise, levels, ratio_a + ratio_b + (bits ^ flips.astype(np.int64)))


@dataclass(frozen=True)
class Hybrid(RatioLevelMechanism):
    """Report a piecewise level in 0..G−1 w.p. (a − b)/a, else Duchi's bit as level G or G + 1; e^ε′ = (a/b)²."""

    kind = "number"
    name = "hybrid"
    title = "hybrid of the piecewise and Duchi mechanisms"
    label = "Hybrid"
    menu = 1
    max_bins = MAX_HYBRID_BINS

    @classmethod
    def build(cls, question, share: Decimal) -> tuple[dict, Decimal]:
        a, b = hybrid_ratio(epsilon=share)
        return ({"mechanism": cls.name, "ratio_a": a, "ratio_b": b, "bins": a + b, "levels": a + b + 2},
                hybrid_epsilon(a, b))



    @property
    def levels(self) -> int:
        return self.bins + 2

    def variance_at(self, truth) -> float:
        """Return the exact n·Var of one report's estimate of x = ``truth`` (the answer scaled to [0, 1])."""
        return float(hybrid_variance(self.ratio_a, self.ratio_b, truth))

    def answer_worst_variance(self) -> float:
        return hybrid_worst_variance(self.ratio_a, self.ratio_b)

    @property
    def branch_weight(self) -> Fraction:
        return hybrid_branch(self.ratio_a, self.ratio_b)[0]

    def level_scores(self) -> list[int]:
        return hybrid_scores(self.ratio_a, self.ratio_b)

    def level_score(self, level: int) -> int:
        bins = self.bins
        if level < bins:
            return bins * (2 * level + 1 - bins)
        duchi = self.ratio_a ** 2 + self.ratio_b ** 2
        return duchi if level > bins else -duchi

    def level_values(self) -> list[Fraction]:
        return hybrid_level_values(self.ratio_a, self.ratio_b)

    def score_pieces(self) -> list[tuple[int, int, int, int]]:
        g, duchi = self.bins, self.ratio_a ** 2 + self.ratio_b ** 2
        return [(0, g - 1, 2 * g, g * (1 - g)), (g, g, 0, -duchi), (g + 1, g + 1, 0, duchi)]

    def randomize(self, true_values, rng=None) -> np.ndarray:
        return randomize_hybrid(true_values, lo=self.lo, hi=self.hi, ratio_a=self.ratio_a, ratio_b=self.ratio_b,
                                rng=rng)

    def replay(self, true_value, stream):
        """below(a) < a - b gives the piecewise level; else bern(value - lo, hi - lo), flipped when below(a² + b²) < b²."""
        a, b = self.ratio_a, self.ratio_b
        check_level_input(true_value, self.lo, self.hi, a, b, MAX_HYBRID_BINS)
        if stream.below(a) < a - b:
            return replay_piecewise(true_value, lo=self.lo, hi=self.hi, ratio_a=a, ratio_b=b, stream=stream)
        rounded = int(stream.bern(true_value - self.lo, self.hi - self.lo))
        flipped = int(stream.below(a * a + b * b) < b * b)
        return a + b + (rounded ^ flipped)

    def estimates(self, ones, n, level) -> list[Estimate]:
        return [debias_hybrid_mean(ones[0], ones[1], n, ratio_a=self.ratio_a, ratio_b=self.ratio_b,
                                   lo=self.lo, hi=self.hi, level=level, variance=self.report_variance_range())]

    def estimator_sentence(self) -> str:
        return "with L the n non-empty cells of the column, R = level_values[L]"

    def codebook_fields(self) -> dict:
        return {**super().codebook_fields(),
                "level_values": [f"{value.numerator}/{value.denominator}" for value in self.level_values()]}

    def meanings(self, p, q) -> list[str]:
        lo, hi, a, b = self.lo, self.hi, self.ratio_a, self.ratio_b
        g = a + b
        return [f"the output level L in 0..{g + 1} of the hybrid mechanism: with probability {a - b}/{a} "
                f"(the piecewise branch) L = k in 0..{g - 1}, the answer x in {lo}..{hi} rounded at random to a "
                f"grid point i in 0..{a} with mean {a}(x - {lo})/{hi - lo}, then k uniform on i..i+{b - 1} with "
                f"probability {a}/{g}, else uniform on the other {a} levels; otherwise (the Duchi branch) x was "
                f"rounded to 1 with probability (x - {lo})/{hi - lo}, else to 0, that bit flipped with probability "
                f"{b * b}/{a * a + b * b}, and L = {g} + bit. The level's value R (level_values: (k + 1/2)/{g} for "
                f"k < {g}, {a * b}/{g * g} for L = {g}, {a * a + a * b + b * b}/{g * g} for L = {g + 1}) "
                f"has mean q + (p - q)(x - {lo})/{hi - lo} in either branch"]

    def protection_note(self, epsilon: str) -> str:
        a, b = self.ratio_a, self.ratio_b
        beta, flip = hybrid_branch(a, b)
        return tr("Your device hides your number in one of two ways, picked at random. With a chance of %(branch)s, "
                  "your number is swapped for one of %(points)s points spread a bit beyond %(low)s–%(high)s. "
                  "This point is in a narrow band around your number with a chance of %(band)s. Otherwise, "
                  "it is anywhere else. The rest of the time, your number is moved at random to the low end or "
                  "the high end of %(low)s–%(high)s. This end is sent with a chance of %(keep)s. Otherwise, "
                  "the other end is sent (ε′ = %(epsilon)s).", branch=percent(beta), points=a + b,
                  low=self.lo, high=self.hi, band=percent_up(Fraction(a, a + b)), keep=percent_up(1 - flip),
                  epsilon=epsilon)

    def kept_sentence(self, keep: str) -> str:
        a, b = self.ratio_a, self.ratio_b
        return (f"With probability {(a - b) / a:.1%} the report is one of {self.bins} levels, in the narrow band "
                f"around the true answer with probability {a / (a + b):.1%}; otherwise the answer is rounded at "
                "random to the smallest or the largest value, which is reported as itself with probability "
                f"{a * a / (a * a + b * b):.1%}.")


def debias_hybrid_mean(score_sum, score_squares, n, *, ratio_a, ratio_b, lo, hi, level, variance=None) -> Estimate:
    """Estimate the mean of numbers in [lo, hi] from hybrid-mechanism reports (Wang et al. 2019).

    Each report is a level L in 0..G+1 (G = a + b): PM's levels, then Duchi's 0 and 1. Its
    integer score s (mechanisms.hybrid_scores, within ±G(G − 1)) gives R = (s + G²)/(2G²), whose
    mean is q + (p − q)x in either branch (p = a/G, q = b/G). From Σs (``score_sum``) and Σs²
    (``score_squares``) the estimate, std_error and interval follow exactly as for
    debias_piecewise_mean.
    """
    n = check_count(n, "n")
    check_ratio(ratio_a, ratio_b)
    levels = int(ratio_a) + int(ratio_b)
    square = levels * levels
    if isinstance(score_sum, bool) or not isinstance(score_sum, numbers.Integral) or abs(score_sum) > n * square:
        raise ValueError(f"score_sum must be an integer with |score_sum| <= n·G² = {n * square}, got {score_sum!r}")
    score_squares = check_count(score_squares, "score_squares", upper=n * square * square)
    reach = levels * (levels - 1)
    return level_mean(int(score_sum), score_squares, n, offset=square, divisor=2 * square, scores=(-reach, reach),
                      ratio_a=ratio_a, ratio_b=ratio_b, lo=lo, hi=hi, level=level, name="score", variance=variance)
