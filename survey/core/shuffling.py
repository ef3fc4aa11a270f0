"""The central privacy of results released in batches: amplification by shuffling.

Everything the product shows or exports about a survey is a function of the *multiset* of its
reports (counts, estimates, crosstabs, models), never of their order. Feldman, McMillan &
Talwar ("Hiding among the clones", FOCS 2021, Theorem 3.2) show that n reports of any
ε₀-LDP randomizers, seen only as a multiset, are (ε, δ)-DP for one respondent, with the
tight numerical bound computed here.

Their reduction: the view of one respondent's report among n − 1 others is post-processing of
one of two distributions on pairs of counts,

    P = (A + Δ, C − A + 1 − Δ),  Q = (A + 1 − Δ, C − A + Δ),
    C ~ Bin(n − 1, e^−ε₀),  A ~ Bin(C, 1/2),  Δ ~ Bernoulli(e^ε₀/(e^ε₀ + 1)),

so the release is (ε, δ)-DP for every δ ≥ D_{e^ε}(P‖Q), the hockey-stick divergence
Σ max(0, P(x) − e^ε·Q(x)) (by the symmetry k ↔ C + 1 − k, D(P‖Q) = D(Q‖P)). Given C = c the
likelihood ratio P/Q of a first count k is (α·r + 1 − α)/((1 − α)·r + α) with r = k/(c + 1 − k)
and α = e^ε₀/(e^ε₀ + 1), increasing in k: the positive part is a tail of k, two binomial tails
per c, so the divergence is exact up to floating point and the neglected mass of C (added to δ,
so the result stays an upper bound). ε is then the least ε with D ≤ δ, by bisection.

Pure: no Flask, no SQL, no I/O.
"""

from __future__ import annotations

import functools
import math

import numpy as np

DEFAULT_DELTA = 1e-6
# The smallest release step the planner proposes, and the largest batch it searches.
MIN_DEFAULT_RELEASE = 100
MAX_DEFAULT_RELEASE = 100_000


def _check(epsilon0: float, n: int, delta: float):
    if isinstance(epsilon0, bool) or not isinstance(epsilon0, (int, float)) or not 0 < epsilon0 < math.inf:
        raise ValueError(f"the local epsilon must be a positive number, got {epsilon0!r}")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"the batch must hold at least 1 report, got {n!r}")
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")


def shuffle_delta(epsilon0: float, n: int, epsilon: float) -> float:
    """Return the δ at which n shuffled ε₀-LDP reports are (ε, δ)-DP (Feldman, McMillan & Talwar 2021, Thm 3.2)."""
    _check(epsilon0, n, 0.5)
    if epsilon >= epsilon0:
        return 0.0
    clones, weights, left_out = _clones(float(epsilon0), int(n))
    alpha = 1.0 / (1.0 + math.exp(-epsilon0))
    gain = math.exp(epsilon)
    # P/Q > e^ε exactly when r = k/(c + 1 − k) > r*, i.e. k > (c + 1)·r*/(1 + r*).
    threshold = (gain * alpha - (1 - alpha)) / (alpha - gain * (1 - alpha))
    first = np.floor((clones + 1) * (threshold / (1 + threshold))).astype(np.int64) + 1
    # P(k ≥ first) = α·Pr[A ≥ first − 1] + (1 − α)·Pr[A ≥ first], Q with α and 1 − α swapped.
    above_shifted = _at_least(first - 1, clones)
    above = _at_least(first, clones)
    p_tail = alpha * above_shifted + (1 - alpha) * above
    q_tail = (1 - alpha) * above_shifted + alpha * above
    divergence = np.maximum(p_tail - gain * q_tail, 0.0)
    return float(min(1.0, float(np.dot(weights, divergence)) + left_out))


def _at_least(k: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Return Pr[Bin(c, 1/2) ≥ k] elementwise (1 for k ≤ 0, 0 for k > c)."""
    from scipy.special import bdtrc  # here, not at the top: importing a design stays light (the CLI's start-up)

    result = np.where(k <= 0, 1.0, 0.0)
    inside = (k > 0) & (k <= c)
    result[inside] = bdtrc(k[inside] - 1, c[inside], 0.5)
    return result


@functools.lru_cache(maxsize=256)
def _clones(epsilon0: float, n: int) -> tuple[np.ndarray, np.ndarray, float]:
    """Return the values c of C ~ Bin(n − 1, e^−ε₀) worth summing, their probabilities, and the mass left out."""
    from scipy.stats import binom  # here, not at the top: scipy.stats takes 0.3 s to import

    if n == 1:
        return np.zeros(1, dtype=np.int64), np.ones(1), 0.0
    clone = math.exp(-epsilon0)
    # 12 standard deviations (plus a margin for small means) hold all but far less than 1e-17 of
    # C's mass; whatever they leave out is added to δ below.
    mean, spread = (n - 1) * clone, math.sqrt((n - 1) * clone * (1 - clone))
    low, high = math.floor(mean - 12 * spread - 10), math.ceil(mean + 12 * spread + 10)
    clones = np.arange(max(low, 0), min(high, n - 1) + 1, dtype=np.int64)
    weights = binom.pmf(clones, n - 1, clone)
    return clones, weights, max(0.0, 1.0 - float(weights.sum()))


def is_within(epsilon0: float, n: int, epsilon: float, delta: float = DEFAULT_DELTA) -> bool:
    """Return whether a release of n ε₀-LDP reports is (ε, δ)-DP by the bound (one evaluation, no search)."""
    return shuffle_delta(epsilon0, n, epsilon) <= delta


def central_epsilon(epsilon0: float, n: int, delta: float = DEFAULT_DELTA) -> float:
    """Return the ε for which a release of n ε₀-LDP reports seen as a multiset is (ε, δ)-DP; ε₀ when shuffling gives nothing.

    The least ε (to 1e-10, rounded up) with ``shuffle_delta`` ≤ δ; ε₀ itself when that is within
    0.01% of ε₀ (a release can reveal no more than the reports themselves).
    """
    _check(epsilon0, n, delta)
    return _central_epsilon(float(epsilon0), int(n), float(delta))


@functools.lru_cache(maxsize=4096)
def _central_epsilon(epsilon0: float, n: int, delta: float) -> float:
    from scipy.optimize import brentq

    if is_within(epsilon0, n, 0.0, delta):
        return 0.0
    if not is_within(epsilon0, n, epsilon0 * (1 - 1e-12), delta):
        return epsilon0
    root = brentq(lambda eps: math.log(max(shuffle_delta(epsilon0, n, eps), 1e-300)) - math.log(delta),
                  0.0, epsilon0 * (1 - 1e-12), xtol=1e-11)
    # Step up until the bound holds at the returned ε (brentq's root may sit a hair below it).
    while not is_within(epsilon0, n, root, delta):
        root += 1e-11
    return epsilon0 if root > epsilon0 * (1 - 1e-4) else root


def closed_form_epsilon(epsilon0: float, n: int, delta: float = DEFAULT_DELTA) -> float | None:
    """Return the closed-form bound of Feldman, McMillan & Talwar (2021, Thm 3.1), or None outside its range.

    Valid when ε₀ ≤ ln(n / (16·ln(2/δ))); always at least the numerical ``central_epsilon``.
    """
    _check(epsilon0, n, delta)
    if epsilon0 > math.log(n / (16 * math.log(2 / delta))):
        return None
    e0 = math.exp(epsilon0)
    spread = 8 * math.sqrt(e0 * math.log(4 / delta)) / math.sqrt(n) + 8 * e0 / n
    return math.log(1 + (e0 - 1) / (e0 + 1) * spread)


# The steps the planner proposes: two significant figures, 100, 110, …, 990, 1,000, 1,100, … 100,000.
_READABLE_STEPS = tuple(sorted({mantissa * 10**power for power in range(1, 5) for mantissa in range(10, 100)
                                if MIN_DEFAULT_RELEASE <= mantissa * 10**power <= MAX_DEFAULT_RELEASE}))


@functools.lru_cache(maxsize=1024)
def default_release_every(epsilon0: float, delta: float = DEFAULT_DELTA) -> int:
    """Return the release step the planner proposes: the least readable batch (≥ 100) whose central ε is at most ε₀/2.

    Readable: two significant figures (370, 1,900, 12,000). When no batch up to 100,000 halves ε₀
    (a large ε₀ is amplified only by far larger batches), the least step, 100: releases still
    come in batches, and the pages say the central ε is ε₀.
    """
    target = epsilon0 / 2
    if not is_within(epsilon0, MAX_DEFAULT_RELEASE, target, delta):
        return MIN_DEFAULT_RELEASE
    low, high = -1, len(_READABLE_STEPS) - 1
    while high - low > 1:
        middle = (low + high) // 2
        if is_within(epsilon0, _READABLE_STEPS[middle], target, delta):
            high = middle
        else:
            low = middle
    return _READABLE_STEPS[high]
