"""Compute the integer thresholds of each randomizer and mirror the browser's randomizers.

Every probability the browser uses is an integer threshold T over 2^53, computed here
with exact decimal arithmetic, and the realised epsilon of the rounded threshold (never
above the nominal one) is what the design records (MATH.md §6; Garfinkel & Leclerc 2020).

The ``randomize_*`` functions are the Python mirror of ``client_js/mechanisms.js``: they
draw the same integer comparisons, vectorised with numpy, for simulations and tests. The
server never randomizes on a respondent's behalf.
"""

from __future__ import annotations

import functools
import math
from decimal import ROUND_CEILING, ROUND_FLOOR, Context, Decimal
from fractions import Fraction

import numpy as np

THRESHOLD_BITS = 53
TWO53 = 2**THRESHOLD_BITS
_CTX = Context(prec=80)


def _as_decimal(epsilon, name="epsilon") -> Decimal:
    if isinstance(epsilon, Decimal):
        value = epsilon
    elif isinstance(epsilon, (int, float)) and not isinstance(epsilon, bool) and math.isfinite(epsilon):
        value = Decimal(epsilon)
    elif isinstance(epsilon, Fraction):
        value = _CTX.divide(Decimal(epsilon.numerator), Decimal(epsilon.denominator))
    else:
        raise ValueError(f"{name} must be a finite number in (0, 50], got {epsilon!r}")
    if not Decimal(0) < value <= Decimal(50):
        raise ValueError(f"{name} must be a finite number in (0, 50], got {epsilon!r}")
    return value


def _check_d(d):
    if isinstance(d, bool) or not isinstance(d, int) or d < 2:
        raise ValueError(f"d must be an integer >= 2, got {d!r}")


def rr_flip_threshold(*, epsilon) -> int:
    """Return T with P(flip) = T/2^53, T = ceil(2^53/(1+e^eps)), so that e^eps' = (2^53-T)/T <= e^eps.

    Warner (1965) randomized response keeps the answer with probability e^eps/(1+e^eps).
    Rounding the flip probability up can only lower the realised epsilon (MATH.md §6).
    """
    eps = _as_decimal(epsilon)
    ratio = _CTX.divide(Decimal(TWO53), _CTX.add(Decimal(1), _CTX.exp(eps)))
    threshold = int(ratio.to_integral_value(rounding=ROUND_CEILING))
    threshold = max(threshold, 1)
    while rr_epsilon(threshold) > eps:
        threshold += 1
    return threshold


def rr_epsilon(flip_threshold: int) -> Decimal:
    """Return the realised epsilon ln((2^53 - T)/T) of a flip threshold T."""
    t = flip_threshold
    return _CTX.ln(_CTX.divide(Decimal(TWO53 - t), Decimal(t)))


def grr_keep_threshold(*, epsilon, d: int) -> int:
    """Return T with P(keep) = T/2^53, T = floor(2^53 e^eps/(e^eps+d-1)).

    Generalized randomized response (Wang et al. 2017): keep the true option, else report
    one of the d-1 others uniformly, so e^eps' = T(d-1)/(2^53-T) <= e^eps.
    """
    eps = _as_decimal(epsilon)
    _check_d(d)
    e = _CTX.exp(eps)
    ratio = _CTX.divide(_CTX.multiply(Decimal(TWO53), e), _CTX.add(e, Decimal(d - 1)))
    threshold = int(ratio.to_integral_value(rounding=ROUND_FLOOR))
    while grr_epsilon(threshold, d) > eps:
        threshold -= 1
    return threshold


def grr_epsilon(keep_threshold: int, d: int) -> Decimal:
    """Return the realised epsilon ln(T(d-1)/(2^53-T)) of a GRR keep threshold."""
    t = keep_threshold
    return _CTX.ln(_CTX.divide(Decimal(t * (d - 1)), Decimal(TWO53 - t)))


def oue_q_threshold(*, epsilon) -> int:
    """Return T with q = T/2^53 = ceil-rounded 1/(e^eps+1), the OUE probability of a false 1.

    Optimized unary encoding (Wang et al. 2017) sends the true bit as 1 with probability
    1/2 and every other bit as 1 with probability q, so e^eps' = (1-q)/q = (2^53-T)/T.
    """
    return rr_flip_threshold(epsilon=epsilon)


def oue_epsilon(q_threshold: int) -> Decimal:
    """Return the realised epsilon of an OUE q threshold."""
    return rr_epsilon(q_threshold)


def use_oue(*, epsilon, d: int) -> bool:
    """Return whether OUE has lower variance than GRR: d >= 3e^eps + 2 (Wang et al. 2017)."""
    eps = _as_decimal(epsilon)
    return Decimal(d) >= _CTX.add(_CTX.multiply(Decimal(3), _CTX.exp(eps)), Decimal(2))


def per_option_epsilon(epsilon, d: int) -> Decimal:
    """Return eps/d rounded down: a multi question sends d bits, each through RR at eps/d."""
    eps = _as_decimal(epsilon)
    return Context(prec=80, rounding=ROUND_FLOOR).divide(eps, Decimal(d))


MAX_PIECEWISE_BINS = 4096


def piecewise_ratio(*, epsilon, max_bins: int = MAX_PIECEWISE_BINS) -> tuple[int, int]:
    """Return integers a > b >= 1 with a + b <= max_bins and a/b the largest such ratio <= e^(eps/2).

    The discretised piecewise mechanism (Wang et al. 2019) needs e^(eps/2) as a rational
    a/b so that every output probability is rational; its realised epsilon is
    eps' = 2 ln(a/b) <= eps exactly. Raises ValueError when eps is too small for any such
    ratio (e^(eps/2) below (b+1)/b for every allowed b).
    """
    eps = _as_decimal(epsilon)
    if isinstance(max_bins, bool) or not isinstance(max_bins, int) or max_bins < 3:
        raise ValueError(f"max_bins must be an integer >= 3, got {max_bins!r}")
    return _piecewise_ratio(eps, max_bins, epsilon)


@functools.lru_cache(maxsize=1024)
def _piecewise_ratio(eps: Decimal, max_bins: int, epsilon) -> tuple[int, int]:
    """Search every b for a = floor(b e^(eps/2)) (capped by max_bins - b); cached, as the planner asks often."""
    numerator, denominator = _CTX.exp(_CTX.divide(eps, Decimal(2))).as_integer_ratio()
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
    return _CTX.multiply(Decimal(2), _CTX.ln(_CTX.divide(Decimal(ratio_a), Decimal(ratio_b))))


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


def duchi_worst_variance(flip_threshold: int) -> float:
    """Return the largest variance of one Duchi report's estimate of x on [0, 1]: 1/(4(1-2f)^2), at x = 1/2."""
    spread = 1 - 2 * Fraction(flip_threshold, TWO53)
    return float(1 / (4 * spread ** 2))


def _rng(rng):
    return np.random.default_rng() if rng is None else rng


def _bern53(threshold: int, size, rng) -> np.ndarray:
    """Draw Bernoulli(T/2^53) as u53 < T, u53 uniform on [0, 2^53)."""
    return rng.integers(0, TWO53, size=size, dtype=np.int64) < threshold


def randomize_rr(bits, *, flip_threshold: int, rng=None) -> np.ndarray:
    """Flip each 0/1 value with probability flip_threshold/2^53 (Warner 1965)."""
    rng = _rng(rng)
    bits = np.asarray(bits, dtype=np.int64)
    return bits ^ _bern53(flip_threshold, bits.shape, rng).astype(np.int64)


def randomize_grr(indices, *, d: int, keep_threshold: int, rng=None) -> np.ndarray:
    """Keep each option index w.p. T/2^53, else report one of the other d-1 uniformly."""
    rng = _rng(rng)
    x = np.asarray(indices, dtype=np.int64)
    keep = _bern53(keep_threshold, x.shape, rng)
    other = rng.integers(0, d - 1, size=x.shape, dtype=np.int64)
    other = other + (other >= x)
    return np.where(keep, x, other)


def randomize_oue(indices, *, d: int, q_threshold: int, rng=None) -> np.ndarray:
    """Encode each index one-hot; send its bit as 1 w.p. 1/2 and every other bit as 1 w.p. q."""
    rng = _rng(rng)
    x = np.asarray(indices, dtype=np.int64)
    out = _bern53(q_threshold, (x.shape[0], d), rng).astype(np.int64)
    out[np.arange(x.shape[0]), x] = rng.integers(0, 2, size=x.shape[0], dtype=np.int64)
    return out


def randomize_multi(bit_matrix, *, flip_threshold: int, rng=None) -> np.ndarray:
    """Send each option's 0/1 bit through Warner RR with the per-option flip threshold."""
    return randomize_rr(np.asarray(bit_matrix, dtype=np.int64), flip_threshold=flip_threshold, rng=rng)


def randomize_duchi(values, *, lo: int, hi: int, flip_threshold: int, rng=None) -> np.ndarray:
    """Round each integer in lo..hi to 1 w.p. (x-lo)/(hi-lo), then apply Warner RR (Duchi et al. 2013)."""
    rng = _rng(rng)
    v = np.asarray(values, dtype=np.int64)
    bits = (rng.integers(0, hi - lo, size=v.shape, dtype=np.int64) < (v - lo)).astype(np.int64)
    return randomize_rr(bits, flip_threshold=flip_threshold, rng=rng)


def randomize_piecewise(values, *, lo: int, hi: int, ratio_a: int, ratio_b: int, rng=None) -> np.ndarray:
    """Return the output bin in 0..a+b-1 of each integer in lo..hi under the discretised piecewise mechanism.

    The value is rounded at random onto the grid i = 0..a (i/a = the scaled value on
    average); then with probability a/(a+b) the bin is uniform on the b bins i..i+b-1
    around it, else uniform on the a others. Each bin has probability a/((a+b)b) or
    b/((a+b)a), so any two inputs differ by at most (a/b)^2 = e^eps' (Wang et al. 2019).
    """
    rng = _rng(rng)
    v = np.asarray(values, dtype=np.int64)
    scaled = (v - lo) * ratio_a
    grid = scaled // (hi - lo) + (rng.integers(0, hi - lo, size=v.shape, dtype=np.int64) < scaled % (hi - lo))
    high = rng.integers(0, ratio_a + ratio_b, size=v.shape, dtype=np.int64) < ratio_a
    inside = grid + rng.integers(0, ratio_b, size=v.shape, dtype=np.int64)
    outside = rng.integers(0, ratio_a, size=v.shape, dtype=np.int64)
    return np.where(high, inside, np.where(outside < grid, outside, outside + ratio_b))


def randomize_question(question: dict, true_values, rng=None):
    """Randomize true answers of one design question; return reports in the wire format's shape.

    ``true_values`` holds 0/1 for yes_no, option indices for choice, 0/1 rows of d bits
    for multi, and integers in min..max for number.
    """
    mechanism, kind = question["mechanism"], question["kind"]
    if kind == "yes_no":
        return randomize_rr(true_values, flip_threshold=question["flip_threshold"], rng=rng)
    if kind == "choice" and mechanism == "grr":
        return randomize_grr(true_values, d=len(question["options"]),
                             keep_threshold=question["keep_threshold"], rng=rng)
    if kind == "choice" and mechanism == "oue":
        return randomize_oue(true_values, d=len(question["options"]),
                             q_threshold=question["q_threshold"], rng=rng)
    if kind == "multi":
        return randomize_multi(true_values, flip_threshold=question["flip_threshold"], rng=rng)
    if kind == "number":
        if mechanism == "piecewise":
            return randomize_piecewise(true_values, lo=question["min"], hi=question["max"],
                                       ratio_a=question["ratio_a"], ratio_b=question["ratio_b"], rng=rng)
        return randomize_duchi(true_values, lo=question["min"], hi=question["max"],
                               flip_threshold=question["flip_threshold"], rng=rng)
    raise ValueError(f"unknown question kind/mechanism {kind!r}/{mechanism!r}")
