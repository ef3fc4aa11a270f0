"""The Bennett boundary's root (survey.core.anytime.bernstein_radius) found by safeguarded Newton steps.

It must equal the root a plain bisection finds (the former computation: 100 halvings of [0, high]
with scipy's logsumexp, here with 300 so that it converges everywhere) to 1e-12 relative, and it
must never lie below the exact root: checked in 60-digit decimal arithmetic, the mixture at the
returned boundary is at least 2/α (the equality with the bisection shows it is only just so).
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext

import numpy as np
import pytest
from scipy.special import logsumexp

from survey.core import anytime
from survey.core.anytime import bernstein_radius, half_width

CASES = [  # (alpha, planned, variance, spread): the product's range, and far beyond it
    (0.05, 1000, 0.3, 2.5),
    (0.05 / 128, 1000, 30.0, 20.0),
    (0.001, 100_000, 2.0, 12.0),
    (0.01, 20, 0.06, 20.5),
    (0.0003, 4, 0.4, 134.9),
]
COUNTS = np.array([1, 2, 7, 50, 999, 1000, 12_345, 100_000, 10_000_000])


def _bisection(n: float, alpha: float, planned: float, variance: float, spread: float) -> float:
    """Return the boundary s_n/n by bisection on [0, high], as before, with enough halvings to converge."""
    lambdas, psi = anytime._bennett_terms(alpha, planned, variance, spread)
    base = anytime._LOG_WEIGHTS - variance * n * psi
    target = math.log(2 / alpha)
    low, high = 0.0, (target - base[8]) / lambdas[8]
    for _ in range(1100):
        middle = 0.5 * (low + high)
        if middle in (low, high):
            break
        if logsumexp(base + lambdas * middle) >= target:
            high = middle
        else:
            low = middle
    return high / n


def _exact_mixture_minus_target(boundary: float, n: float, alpha: float, planned: float, variance: float,
                                spread: float) -> Decimal:
    """Return log Σ w_j exp(λ_j s − variance·n·ψ_j) − log(2/α) at s = boundary·n, in 60-digit decimals."""
    lambdas, psi = anytime._bennett_terms(alpha, planned, variance, spread)
    with localcontext() as context:
        context.prec = 60
        s = Decimal(boundary) * Decimal(n)
        total = Decimal(0)
        for weight, lam, term in zip(anytime._LOG_WEIGHTS, lambdas, psi):
            if not math.isfinite(term):
                continue
            total += (Decimal(weight) + Decimal(lam) * s - Decimal(variance) * Decimal(n) * Decimal(term)).exp()
        return total.ln() - (Decimal(2) / Decimal(alpha)).ln()


@pytest.mark.parametrize("alpha, planned, variance, spread", CASES)
def test_the_newton_root_equals_the_bisection_and_is_never_below_the_exact_root(alpha, planned, variance, spread):
    """Every n at once: the same root as a converged bisection (1e-12 relative), and at or just above the exact one."""
    widths = bernstein_radius(COUNTS, alpha=alpha, planned=planned, variance=variance, spread=spread)
    for n, width in zip(COUNTS, widths):
        assert width == pytest.approx(_bisection(float(n), alpha, planned, variance, spread), rel=1e-12, abs=0)
        gap = _exact_mixture_minus_target(float(width), float(n), alpha, planned, variance, spread)
        assert gap >= 0, (n, gap)
        assert width == bernstein_radius(int(n), alpha=alpha, planned=planned, variance=variance, spread=spread)


def test_a_choice_questions_options_share_one_half_width():
    """anytime_estimate computes the half-width once per (n, design): the 128 options of one view ask once."""
    from survey.core.anytime import anytime_estimate
    from survey.core.estimators import Estimate

    anytime._half_width_at.cache_clear()
    estimates = [Estimate(estimate=share, std_error=0.01, ci_low=0.0, ci_high=1.0, n=54_321, noisy_share=0.5)
                 for share in np.linspace(0.2, 0.8, 128)]
    watched = [anytime_estimate(estimate, debiased=(-3.0, 4.0), feasible=(0.0, 1.0), level=0.95, planned=1000,
                                simultaneous_over=128, variance=2.0) for estimate in estimates]
    info = anytime._half_width_at.cache_info()
    assert (info.misses, info.hits) == (1, 127)
    half = half_width(54_321, spread=7.0, level=0.95, planned=1000, simultaneous_over=128, variance=2.0)
    for estimate, interval in zip(estimates, watched):
        assert interval.ci_high - estimate.estimate == pytest.approx(half, rel=1e-12)
