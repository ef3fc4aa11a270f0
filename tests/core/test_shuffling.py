"""The central ε of a release (amplification by shuffling) against independent computations and known bounds.

The reference values are computed here from the definitions in Feldman, McMillan & Talwar
(FOCS 2021, Theorem 3.2) by brute force — every count pair's probability from log-gamma,
every term of the hockey-stick divergence summed — not by the tail formula the product uses.
The lower bound is the exact privacy of shuffled binary randomized response (an ε₀-LDP
randomizer, so no valid bound for all ε₀-LDP randomizers can be below it).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import gammaln

from survey.core import shuffling
from survey.core.shuffling import central_epsilon, closed_form_epsilon, default_release_every, shuffle_delta


def _log_binomial_pmf(k: np.ndarray, n: int, p: float) -> np.ndarray:
    """Return log Pr[Bin(n, p) = k] elementwise (−inf outside 0..n)."""
    k = np.asarray(k, dtype=float)
    inside = (k >= 0) & (k <= n)
    kk = np.where(inside, k, 0)
    value = (gammaln(n + 1) - gammaln(kk + 1) - gammaln(n - kk + 1)
             + kk * math.log(p) + (n - kk) * math.log1p(-p)) if 0 < p < 1 else np.where(kk == n * p, 0.0, -np.inf)
    return np.where(inside, value, -np.inf)


def brute_force_delta(epsilon0: float, n: int, epsilon: float) -> float:
    """Return D_{e^ε}(P‖Q) of the clones' pair of distributions, summing every (c, k) term."""
    alpha = math.exp(epsilon0) / (math.exp(epsilon0) + 1)
    clones = np.arange(n)
    log_weight = _log_binomial_pmf(clones, n - 1, math.exp(-epsilon0))
    total = 0.0
    for c, lw in zip(clones, log_weight):
        if lw < -60:
            continue
        k = np.arange(c + 2)
        a_k = np.exp(_log_binomial_pmf(k, c, 0.5))        # Pr[A = k]
        a_k1 = np.exp(_log_binomial_pmf(k - 1, c, 0.5))   # Pr[A = k − 1]
        p = alpha * a_k1 + (1 - alpha) * a_k               # first count A + Δ
        q = (1 - alpha) * a_k1 + alpha * a_k               # first count A + 1 − Δ
        total += math.exp(lw) * float(np.maximum(p - math.exp(epsilon) * q, 0).sum())
    return total


def shuffled_rr_delta(epsilon0: float, n: int, epsilon: float) -> float:
    """Return the exact δ(ε) of n shuffled binary randomized responses, one respondent's answer 0 vs 1, others 0."""
    keep = math.exp(epsilon0) / (1 + math.exp(epsilon0))
    others = np.exp(_log_binomial_pmf(np.arange(n), n - 1, 1 - keep))   # ones among the others' reports
    zero = np.concatenate([others * keep, [0.0]]) + np.concatenate([[0.0], others * (1 - keep)])
    one = np.concatenate([others * (1 - keep), [0.0]]) + np.concatenate([[0.0], others * keep])
    return max(float(np.maximum(one - math.exp(epsilon) * zero, 0).sum()),
               float(np.maximum(zero - math.exp(epsilon) * one, 0).sum()))


def least_epsilon(delta_of, epsilon0: float, delta: float) -> float:
    """Return the least ε in [0, ε₀] with delta_of(ε) ≤ δ, by bisection to 1e-10."""
    low, high = 0.0, epsilon0
    if delta_of(0.0) <= delta:
        return 0.0
    while high - low > 1e-10:
        middle = (low + high) / 2
        low, high = (low, middle) if delta_of(middle) <= delta else (middle, high)
    return high


@pytest.mark.parametrize("epsilon0, n, delta", [(0.5, 300, 1e-6), (1.0, 1000, 1e-6), (2.0, 1000, 1e-6),
                                                (2.0, 2435, 1e-6), (3.0, 2000, 1e-8), (1.0, 400, 1e-4)])
def test_central_epsilon_equals_the_brute_force_bound(epsilon0, n, delta):
    ours = central_epsilon(epsilon0, n, delta)
    reference = least_epsilon(lambda eps: brute_force_delta(epsilon0, n, eps), epsilon0, delta)
    assert ours == pytest.approx(reference, abs=1e-6)
    # The bound holds at the ε returned, and a hair below it, it does not.
    assert brute_force_delta(epsilon0, n, ours) <= delta * (1 + 1e-9)
    assert brute_force_delta(epsilon0, n, ours - 1e-6) > delta


@pytest.mark.parametrize("epsilon", [0.05, 0.2, 0.6, 1.5])
def test_the_divergence_equals_the_brute_force_sum(epsilon):
    assert shuffle_delta(2.0, 1500, epsilon) == pytest.approx(brute_force_delta(2.0, 1500, epsilon), rel=1e-9, abs=1e-15)


@pytest.mark.parametrize("epsilon0", [0.5, 1.0, 2.0, 4.0])
@pytest.mark.parametrize("n", [100, 1000, 5000])
def test_never_below_shuffled_randomized_response(epsilon0, n):
    lower = least_epsilon(lambda eps: shuffled_rr_delta(epsilon0, n, eps), epsilon0, 1e-6)
    assert central_epsilon(epsilon0, n, 1e-6) >= lower - 1e-9
    assert lower > 0


@pytest.mark.parametrize("epsilon0, n", [(0.5, 1000), (1.0, 10_000), (2.0, 50_000), (1.0, 2000)])
def test_the_closed_form_is_an_upper_bound_where_it_applies(epsilon0, n):
    closed = closed_form_epsilon(epsilon0, n, 1e-6)
    assert closed is not None
    assert central_epsilon(epsilon0, n, 1e-6) <= closed


def test_the_closed_form_refuses_outside_its_range():
    assert closed_form_epsilon(8.0, 10_000, 1e-6) is None


@pytest.mark.parametrize("epsilon0, figures", [
    # The numerical bound as the authors' stepped code computes it (an upper bound on the exact sum).
    (2.0, {1000: 0.56, 2435: 0.34, 10_000: 0.16}),
    (1.0, {1000: 0.19, 2435: 0.12, 10_000: 0.055}),
])
def test_published_figures(epsilon0, figures):
    for n, figure in figures.items():
        ours = central_epsilon(epsilon0, n, 1e-6)
        assert figure * 0.9 <= ours <= figure + 0.005


def test_no_amplification_without_enough_clones():
    assert central_epsilon(8.0, 10_000) == 8.0
    assert central_epsilon(2.0, 1) == 2.0
    assert shuffle_delta(2.0, 1, 1.0) == pytest.approx(math.exp(2) / (1 + math.exp(2)) - math.e / (1 + math.exp(2)))


def test_central_epsilon_falls_as_the_batch_grows():
    values = [central_epsilon(2.0, n) for n in (100, 300, 1000, 3000, 10_000, 30_000)]
    assert values == sorted(values, reverse=True)
    assert values[0] < 2.0


@pytest.mark.parametrize("epsilon0", [0.5, 1.0, 2.0, 3.0, 4.0])
def test_default_release_halves_the_local_epsilon(epsilon0):
    step = default_release_every(epsilon0)
    assert step >= shuffling.MIN_DEFAULT_RELEASE
    assert central_epsilon(epsilon0, step) <= epsilon0 / 2
    if step > shuffling.MIN_DEFAULT_RELEASE:
        # The least such batch, rounded up to two significant figures.
        assert central_epsilon(epsilon0, int(step * 0.9)) > epsilon0 / 2


def test_default_release_without_amplification_is_the_least_step():
    assert default_release_every(12.0) == shuffling.MIN_DEFAULT_RELEASE


@pytest.mark.parametrize("bad", [0, -1.0, float("inf"), float("nan"), True, "2"])
def test_bad_epsilon_is_refused(bad):
    with pytest.raises(ValueError, match="local epsilon"):
        central_epsilon(bad, 100)


@pytest.mark.parametrize("bad", [0, -5, 1.5, True])
def test_bad_batch_is_refused(bad):
    with pytest.raises(ValueError, match="at least 1 report"):
        central_epsilon(2.0, bad)


@pytest.mark.parametrize("bad", [0, 1, 1.5, -1e-6])
def test_bad_delta_is_refused(bad):
    with pytest.raises(ValueError, match="delta"):
        central_epsilon(2.0, 100, bad)
