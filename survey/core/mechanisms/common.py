"""What the mechanisms share: exact thresholds over 2^53, Warner's flip, variances of an indicator, integer draws.

Every probability the browser uses is an integer threshold T over 2^53, computed here with
exact decimal arithmetic; the realised epsilon of the rounded threshold (never above the
nominal one) is what the design records (Garfinkel & Leclerc 2020 on floating-point noise).
The numpy draws are the vectorised mirror of ``client_js/random.js``'s integer comparisons;
the scalar checks are those of the browser's randomizers, for the draw-for-draw replay.
"""

from __future__ import annotations

import math
from decimal import ROUND_CEILING, ROUND_FLOOR, Context, Decimal
from fractions import Fraction

import numpy as np

THRESHOLD_BITS = 53
TWO53 = 2**THRESHOLD_BITS
TWO32 = 2**32
MAX_SAFE = TWO53 - 1
MAX_OPTIONS = 65536
CTX = Context(prec=80)

# A new encoding replaces the classic one only where it saves at least this share of the
# variance: below that the gain is noise next to the cost of d-bit reports (storage, CSV
# columns) and of changing a mechanism researchers already know.
MIN_VARIANCE_GAIN = 0.05


def as_decimal(epsilon, name="epsilon") -> Decimal:
    """Return epsilon as an exact Decimal, or raise ValueError unless it is a finite number in (0, 50]."""
    if isinstance(epsilon, Decimal):
        value = epsilon
    elif isinstance(epsilon, (int, float)) and not isinstance(epsilon, bool) and math.isfinite(epsilon):
        value = Decimal(epsilon)
    elif isinstance(epsilon, Fraction):
        value = CTX.divide(Decimal(epsilon.numerator), Decimal(epsilon.denominator))
    else:
        raise ValueError(f"{name} must be a finite number in (0, 50], got {epsilon!r}")
    if not Decimal(0) < value <= Decimal(50):
        raise ValueError(f"{name} must be a finite number in (0, 50], got {epsilon!r}")
    return value


def check_d(d):
    """Raise ValueError unless d, a number of options, is an integer >= 2."""
    if isinstance(d, bool) or not isinstance(d, int) or d < 2:
        raise ValueError(f"d must be an integer >= 2, got {d!r}")


def rr_flip_threshold(*, epsilon) -> int:
    """Return T with P(flip) = T/2^53, T = ceil(2^53/(1+e^eps)), so that e^eps' = (2^53-T)/T <= e^eps.

    Warner (1965) randomized response keeps the answer with probability e^eps/(1+e^eps).
    Rounding the flip probability up can only lower the realised epsilon.
    """
    eps = as_decimal(epsilon)
    ratio = CTX.divide(Decimal(TWO53), CTX.add(Decimal(1), CTX.exp(eps)))
    threshold = int(ratio.to_integral_value(rounding=ROUND_CEILING))
    threshold = max(threshold, 1)
    while rr_epsilon(threshold) > eps:
        threshold += 1
    return threshold


def rr_epsilon(flip_threshold: int) -> Decimal:
    """Return the realised epsilon ln((2^53 - T)/T) of a flip threshold T."""
    t = flip_threshold
    return CTX.ln(CTX.divide(Decimal(TWO53 - t), Decimal(t)))


def per_option_epsilon(epsilon, d: int) -> Decimal:
    """Return eps/d rounded down: a multi question sends d bits, each through RR at eps/d."""
    eps = as_decimal(epsilon)
    return Context(prec=80, rounding=ROUND_FLOOR).divide(eps, Decimal(d))


def worst_case_variance(p, q) -> float:
    """Return n·Var of an indicator's estimate at its worst true share: max λ(1 − λ)/(p − q)², λ between q and p."""
    low, high = min(p, q), max(p, q)
    nearest = min(max(Fraction(1, 2), Fraction(low)), Fraction(high))
    return float(nearest * (1 - nearest) / (Fraction(p) - Fraction(q)) ** 2)


def worst_case_spread(p: float, q: float) -> float:
    """Return the largest λ(1 − λ) over λ between q and p (the reported share's variance per report)."""
    low, high = min(p, q), max(p, q)
    nearest = min(max(0.5, low), high)
    return nearest * (1 - nearest)


def uniform_variance(p, q, d: int) -> float:
    """Return n·Var of one option's estimate when the answers are uniform (f = 1/d): λ(1 − λ)/(p − q)².

    The measure by which a newer choice encoding must beat the classic ones (Wang et al. 2017
    compare at f → 0): the worst case over f (one option at 1/2) would pick subsets far
    larger than a survey's usual shares need, e.g. k = 15 instead of 2 at d = 128, ε = 4,
    which multiplies the variance of an option near 0 by 2.9 and at a 1% share by 2.2.
    """
    p, q = Fraction(p), Fraction(q)
    lam = q + (p - q) / d
    return float(lam * (1 - lam) / (p - q) ** 2)


def check_threshold(name: str, threshold) -> int:
    """Return a threshold, or raise ValueError unless it is an integer from 0 to 2^53."""
    if isinstance(threshold, bool) or not isinstance(threshold, int) or not 0 <= threshold <= TWO53:
        raise ValueError(f"{name} must be an integer from 0 to 2^53, got {threshold!r}")
    return threshold


def threshold_fraction(name: str, threshold) -> Fraction:
    """Return threshold/2^53, or raise ValueError unless it is an integer from 0 to 2^53."""
    return Fraction(check_threshold(name, threshold), TWO53)


def default_rng(rng):
    """Return ``rng``, or a new unseeded numpy Generator (OS entropy) when it is None."""
    return np.random.default_rng() if rng is None else rng


def bern53(threshold: int, size, rng) -> np.ndarray:
    """Draw Bernoulli(T/2^53) as u53 < T, u53 uniform on [0, 2^53)."""
    return rng.integers(0, TWO53, size=size, dtype=np.int64) < threshold


def randomize_rr(bits, *, flip_threshold: int, rng=None) -> np.ndarray:
    """Flip each 0/1 value with probability flip_threshold/2^53 (Warner 1965)."""
    rng = default_rng(rng)
    bits = np.asarray(bits, dtype=np.int64)
    return bits ^ bern53(flip_threshold, bits.shape, rng).astype(np.int64)


def check_integer(name: str, value, low: int, high: int) -> int:
    """Return value if it is an integer from low to high (TypeError, ValueError otherwise), as the browser checks."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an integer from {low} to {high}, got {value!r}")
    if not low <= value <= high:
        raise ValueError(f"{name} must be an integer from {low} to {high}, got {value!r}")
    return value


def check_bit(name: str, value) -> int:
    """Return value if it is 0 or 1, else raise ValueError."""
    if isinstance(value, bool) or value not in (0, 1):
        raise ValueError(f"{name} must be 0 or 1, got {value!r}")
    return value


def check_bits(bits) -> list[int]:
    """Return a non-empty list of 0/1 values, or raise (TypeError for a non-list, ValueError for a bad bit)."""
    if not isinstance(bits, list) or not bits:
        raise TypeError(f"bits must be a non-empty list of 0/1 values, got {bits!r}")
    for i, bit in enumerate(bits):
        check_bit(f"bits[{i}]", bit)
    return bits


def check_range(lo: int, hi: int):
    """Raise unless min..max is a range the browser's integer draws can round over (max - min <= 2^32)."""
    check_integer("min", lo, -MAX_SAFE, MAX_SAFE)
    check_integer("max", hi, lo + 1, MAX_SAFE)
    if hi - lo > TWO32:
        raise ValueError(f"max - min must be at most 2^32, got {hi - lo}")


def replay_rr(bit: int, *, flip_threshold: int, stream) -> int:
    """Return bit XOR bern53(flip_threshold) drawn from a replay stream (Warner 1965)."""
    check_bit("bit", bit)
    return bit ^ int(stream.bern53(flip_threshold))


def round_at_random(values, lo: int, hi: int, rng) -> np.ndarray:
    """Return 1 w.p. (x − lo)/(hi − lo), else 0, for each integer x in lo..hi (Duchi et al. 2013's rounding)."""
    v = np.asarray(values, dtype=np.int64)
    return (rng.integers(0, hi - lo, size=v.shape, dtype=np.int64) < (v - lo)).astype(np.int64)
