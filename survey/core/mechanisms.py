"""Compute the integer thresholds of each randomizer and mirror the browser's randomizers.

Every probability the browser uses is an integer threshold T over 2^53, computed here
with exact decimal arithmetic, and the realised epsilon of the rounded threshold (never
above the nominal one) is what the design records (MATH.md §6; Garfinkel & Leclerc 2020).

The ``randomize_*`` functions are the Python mirror of ``client_js/mechanisms/``: they
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


def hybrid_variance(ratio_a: int, ratio_b: int, x, *, beta=None) -> Fraction:
    """Return the exact variance of one report's estimate (R - q)/(p - q) of x in [0, 1] under the discretised HM.

    ``beta`` defaults to the hybrid's (a - b)/a; beta = 1 gives the discretised piecewise mechanism alone.
    """
    a, b = ratio_a, ratio_b
    x = Fraction(x)
    beta = hybrid_branch(a, b)[0] if beta is None else Fraction(beta)
    piece = min(int(x * a), a - 1)
    u = x * a - piece
    c0, c1, c2 = _piece_quadratic(a, b, beta, piece)
    return (c0 + c1 * u + c2 * u * u) / Fraction(a - b, a + b) ** 2


@functools.lru_cache(maxsize=1024)
def hybrid_worst(ratio_a: int, ratio_b: int, beta: Fraction | None = None) -> tuple[Fraction, Fraction]:
    """Return (x, Var) at the x in [0, 1] of largest exact variance of the discretised HM (or PM, beta = 1).

    Var(R) is a concave quadratic in x on each piece [j/a, (j+1)/a] (the grid rounding adds
    u(1 - u) times a positive constant), so each piece's maximum is at its vertex or an end.
    Every piece is screened in floating point and the four largest settled exactly.
    """
    a, b = ratio_a, ratio_b
    beta = hybrid_branch(a, b)[0] if beta is None else Fraction(beta)
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


def hybrid_worst_variance(ratio_a: int, ratio_b: int) -> float:
    """Return the largest variance over x in [0, 1] of one report's estimate of x under the discretised HM (exact)."""
    return float(hybrid_worst(ratio_a, ratio_b)[1])


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


def randomize_hybrid(values, *, lo: int, hi: int, ratio_a: int, ratio_b: int, rng=None) -> np.ndarray:
    """Return the output level in 0..G+1 of each integer in lo..hi under the hybrid mechanism (Wang et al. 2019).

    Branch: below(a) < a - b (beta = (a - b)/a) sends the piecewise level in 0..G-1, G = a + b;
    else Duchi's bit, rounded w.p. (x - lo)/(hi - lo) and flipped when below(a² + b²) < b², as G + bit.
    """
    rng = _rng(rng)
    v = np.asarray(values, dtype=np.int64)
    piecewise = rng.integers(0, ratio_a, size=v.shape, dtype=np.int64) < ratio_a - ratio_b
    levels = randomize_piecewise(v, lo=lo, hi=hi, ratio_a=ratio_a, ratio_b=ratio_b, rng=rng)
    bits = (rng.integers(0, hi - lo, size=v.shape, dtype=np.int64) < (v - lo)).astype(np.int64)
    flips = rng.integers(0, ratio_a ** 2 + ratio_b ** 2, size=v.shape, dtype=np.int64) < ratio_b ** 2
    return np.where(piecewise, levels, ratio_a + ratio_b + (bits ^ flips.astype(np.int64)))


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
    if kind == "choice" and mechanism == "ss":
        return randomize_ss(true_values, d=len(question["options"]), k=question["subset_size"],
                            keep_threshold=question["keep_threshold"], rng=rng)
    if kind == "multi" and mechanism == "sampled":
        return randomize_multi_sampled(true_values, flip_threshold=question["flip_threshold"], rng=rng)
    if kind == "multi":
        return randomize_multi(true_values, flip_threshold=question["flip_threshold"], rng=rng)
    if kind == "number":
        if mechanism == "piecewise":
            return randomize_piecewise(true_values, lo=question["min"], hi=question["max"],
                                       ratio_a=question["ratio_a"], ratio_b=question["ratio_b"], rng=rng)
        if mechanism == "hybrid":
            return randomize_hybrid(true_values, lo=question["min"], hi=question["max"],
                                    ratio_a=question["ratio_a"], ratio_b=question["ratio_b"], rng=rng)
        return randomize_duchi(true_values, lo=question["min"], hi=question["max"],
                               flip_threshold=question["flip_threshold"], rng=rng)
    raise ValueError(f"unknown question kind/mechanism {kind!r}/{mechanism!r}")


# --- Subset selection and multi-select alternatives (MATH.md §2b; Wang et al. 2016; Ye & Barg 2018) ---

def worst_case_variance(p, q) -> float:
    """Return n·Var of an indicator's estimate at its worst true share: max λ(1 − λ)/(p − q)², λ between q and p."""
    low, high = min(p, q), max(p, q)
    nearest = min(max(Fraction(1, 2), Fraction(low)), Fraction(high))
    return float(nearest * (1 - nearest) / (Fraction(p) - Fraction(q)) ** 2)


def _check_k(k, d):
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= d - 1:
        raise ValueError(f"k must be an integer from 1 to d - 1 = {d - 1}, got {k!r}")


def ss_keep_threshold(*, epsilon, d: int, k: int) -> int:
    """Return T with P(true option in the subset) = T/2^53, T = floor(2^53·k·e^eps/(k·e^eps + d − k)).

    Subset selection reports a k-subset S: P(S | x ∈ S)/P(S | x ∉ S) = p/(1 − p)·(d − k)/k,
    so e^eps' = T(d − k)/((2^53 − T)k) <= e^eps (Wang et al. 2016; Ye & Barg 2018).
    """
    eps = _as_decimal(epsilon)
    _check_d(d)
    _check_k(k, d)
    e = _CTX.exp(eps)
    ke = _CTX.multiply(Decimal(k), e)
    ratio = _CTX.divide(_CTX.multiply(Decimal(TWO53), ke), _CTX.add(ke, Decimal(d - k)))
    threshold = int(ratio.to_integral_value(rounding=ROUND_FLOOR))
    while ss_epsilon(threshold, d, k) > eps:
        threshold -= 1
    return threshold


def ss_epsilon(keep_threshold: int, d: int, k: int) -> Decimal:
    """Return the realised epsilon ln(T(d − k)/((2^53 − T)k)) of a subset-selection threshold."""
    t = keep_threshold
    return _CTX.ln(_CTX.divide(Decimal(t * (d - k)), Decimal((TWO53 - t) * k)))


def ss_probabilities(keep_threshold: int, d: int, k: int) -> tuple[Fraction, Fraction]:
    """Return the exact (p, q) of an option's indicator [v ∈ S]: p = T/2^53, q = (p(k − 1) + (1 − p)k)/(d − 1)."""
    p = Fraction(keep_threshold, TWO53)
    return p, (p * (k - 1) + (1 - p) * k) / (d - 1)


def grr_probabilities(keep_threshold: int, d: int) -> tuple[Fraction, Fraction]:
    """Return the exact (p, q) of GRR: p = T/2^53, q = (1 − p)/(d − 1)."""
    p = Fraction(keep_threshold, TWO53)
    return p, (1 - p) / (d - 1)


def uniform_variance(p, q, d: int) -> float:
    """Return n·Var of one option's estimate when the answers are uniform (f = 1/d): λ(1 − λ)/(p − q)².

    The measure by which choice mechanisms are compared (Wang et al. 2017 compare at f → 0;
    MATH.md §2b at f = 1/d): the worst case over f (one option at 1/2) would pick subsets
    far larger than a survey's usual shares need, e.g. k = 15 instead of 2 at d = 128, ε = 4,
    which multiplies the variance of an option near 0 by 2.9 and at a 1% share by 2.2.
    """
    p, q = Fraction(p), Fraction(q)
    lam = q + (p - q) / d
    return float(lam * (1 - lam) / (p - q) ** 2)


@functools.lru_cache(maxsize=1024)
def best_subset_size(*, epsilon, d: int) -> tuple[int, int, float]:
    """Return (k, keep threshold, n·Var at f = 1/d) of the subset size k in 2..d−1 of least variance.

    k = 1 is GRR itself, so it is left out; d = 2 has no proper subset size and raises.
    """
    _check_d(d)
    if d < 3:
        raise ValueError(f"subset selection needs d >= 3 options, got {d}")
    best = None
    for k in range(2, d):
        threshold = ss_keep_threshold(epsilon=epsilon, d=d, k=k)
        variance = uniform_variance(*ss_probabilities(threshold, d, k), d)
        if best is None or variance < best[2]:
            best = (k, threshold, variance)
    return best


def choice_variances(*, epsilon, d: int) -> dict[str, float]:
    """Return n·Var of one option's estimate at f = 1/d for GRR, OUE and the best subset selection (d >= 3)."""
    grr = uniform_variance(*grr_probabilities(grr_keep_threshold(epsilon=epsilon, d=d), d), d)
    oue = uniform_variance(Fraction(1, 2), Fraction(oue_q_threshold(epsilon=epsilon), TWO53), d)
    out = {"grr": grr, "oue": oue}
    if d >= 3:
        out["ss"] = best_subset_size(epsilon=epsilon, d=d)[2]
    return out


# A new encoding replaces the classic one only where it saves at least this share of the
# variance: below that the gain is noise next to the cost of d-bit reports (storage, CSV
# columns) and of changing a mechanism researchers already know.
MIN_VARIANCE_GAIN = 0.05


def use_ss(*, epsilon, d: int) -> bool:
    """Return whether subset selection's variance at f = 1/d is at least 5% below both GRR's and OUE's."""
    variances = choice_variances(epsilon=epsilon, d=d)
    best_classic = min(variances["grr"], variances["oue"])
    return "ss" in variances and variances["ss"] <= best_classic * (1 - MIN_VARIANCE_GAIN)


def multi_sampled_probabilities(flip_threshold: int, d: int) -> tuple[Fraction, Fraction]:
    """Return the exact (p, q) of option v's indicator in the sampled multi report.

    One option j is drawn uniformly and its bit sent through RR; the report's bit v is 1 when
    j = v and the randomized bit is 1: p = (1 − f)/d, q = f/d with f = T/2^53.
    """
    flip = Fraction(flip_threshold, TWO53)
    return (1 - flip) / d, flip / d


def multi_worst_variances(*, epsilon, d: int) -> dict[str, float]:
    """Return the worst-case n·Var of one option's estimate for per-bit RR at eps/d and one sampled option at eps."""
    flip = Fraction(rr_flip_threshold(epsilon=per_option_epsilon(epsilon, d)), TWO53)
    sampled = multi_sampled_probabilities(rr_flip_threshold(epsilon=epsilon), d)
    return {"rr": worst_case_variance(1 - flip, flip), "sampled": worst_case_variance(*sampled)}


def use_multi_sampled(*, epsilon, d: int) -> bool:
    """Return whether one sampled option at full eps has at least 5% less worst-case variance than every bit at eps/d."""
    variances = multi_worst_variances(epsilon=epsilon, d=d)
    return variances["sampled"] <= variances["rr"] * (1 - MIN_VARIANCE_GAIN)


def randomize_ss(indices, *, d: int, k: int, keep_threshold: int, rng=None) -> np.ndarray:
    """Return n rows of d bits, each the indicator of a random k-subset holding the true index w.p. T/2^53.

    The other members are a uniform subset of the d − 1 other options (Wang et al. 2016).
    """
    rng = _rng(rng)
    x = np.asarray(indices, dtype=np.int64)
    n = x.shape[0]
    keep = _bern53(keep_threshold, n, rng)
    out = np.zeros((n, d), dtype=np.int64)
    out[np.arange(n)[keep], x[keep]] = 1
    step = max(1, 2**22 // d)
    for start in range(0, n, step):
        rows = slice(start, min(n, start + step))
        # A uniform ordering of the d - 1 others per row; the first k - [x in S] of them join S.
        order = np.argsort(rng.random((rows.stop - start, d - 1)), axis=1)
        others = order + (order >= x[rows, None])
        take = np.arange(d - 1)[None, :] < (k - keep[rows].astype(np.int64))[:, None]
        chunk = out[rows]
        chunk[np.nonzero(take)[0], others[take]] = 1
    return out


def randomize_multi_sampled(bit_matrix, *, flip_threshold: int, rng=None) -> np.ndarray:
    """Return n rows of d bits: one option j drawn uniformly, RR of its bit kept at j, every other bit 0."""
    rng = _rng(rng)
    bits = np.asarray(bit_matrix, dtype=np.int64)
    n, d = bits.shape
    j = rng.integers(0, d, size=n, dtype=np.int64)
    sent = bits[np.arange(n), j] ^ _bern53(flip_threshold, n, rng).astype(np.int64)
    out = np.zeros((n, d), dtype=np.int64)
    out[np.arange(n), j] = sent
    return out
