"""The warm-started consistent view (survey.core.consistent.warm_update) against the from-scratch update.

A seeded stream of responses is added one (or seven) at a time to a survey of some thousands, as
the results page sees it; after each, the warm-started shares must equal the from-scratch shares of
``iterative_bayesian_update`` (IBU_ITERATIONS, the rule's deviance factor) to within TOLERANCE_SE
standard errors of one option's estimate at uniform shares: about the change that one response
makes to the from-scratch shares themselves at small n (the discrepancy stop moves in steps of
ten iterations). Most views must be served warm (from an anchor), and where an anchor ended at the
EM's limit the shares are the new counts' limit exactly.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from survey.core import consistent
from survey.core.consistent import (
    DEVIANCE_FACTORS,
    IBU_ITERATIONS,
    forget_anchors,
    indicator_mle,
    iterative_bayesian_update,
    warm_update,
)
from survey.core.estimators import relative_noise
from survey.core.mechanisms import GeneralizedRR, OptimizedUnaryEncoding

from test_anytime import _mechanism

TOLERANCE_SE = 0.15
STEPS = 24


def _stream(mechanism, n0: int, seed: int):
    """Yield (counts, n) of a survey of n0 responses and then STEPS more batches of 1 or 7, randomized by ``mechanism``."""
    rng = np.random.default_rng(seed)
    d = mechanism.d
    p, q = mechanism.response_probabilities()
    truth = rng.dirichlet(np.ones(d))

    def draw(k):
        answers = rng.choice(d, size=k, p=truth)
        if mechanism.report == "index":
            other = (answers + rng.integers(1, d, size=k)) % d
            return np.bincount(np.where(rng.random(k) < p, answers, other), minlength=d)
        bits = rng.random((k, d)) < q
        bits[np.arange(k), answers] = rng.random(k) < p
        return bits.sum(axis=0)

    counts, n = draw(n0), n0
    for step in range(STEPS):
        add = 7 if step % 3 == 0 else 1
        counts, n = counts + draw(add), n + add
        yield [int(c) for c in counts], n


@pytest.mark.parametrize("cls, d, epsilon, n0, mostly_warm", [
    (OptimizedUnaryEncoding, 16, 0.5, 6000, True),
    (GeneralizedRR, 8, 0.5, 3000, True),
    (GeneralizedRR, 4, 0.5, 300, False),  # one response moves the shares by 1/300: beyond an anchor's reach
])
def test_warm_shares_equal_the_from_scratch_update_within_the_tolerance(cls, d, epsilon, n0, mostly_warm):
    """After every new response the warm start gives the from-scratch shares within TOLERANCE_SE standard errors."""
    mechanism = _mechanism(cls, "choice", epsilon=epsilon, options=tuple(f"o{i}" for i in range(d)))
    p, q = mechanism.response_probabilities()
    multinomial = mechanism.report == "index"
    forget_anchors()
    scratch_runs = 0
    original = consistent._update

    def counting(*args, **kwargs):
        nonlocal scratch_runs
        scratch_runs += kwargs.get("start") is None
        return original(*args, **kwargs)

    consistent._update = counting
    try:
        for counts, n in _stream(mechanism, n0, seed=d):
            noise = relative_noise(n, p=p, q=q, d=d)
            factor = min(max(0.2 + 0.4 * noise, DEVIANCE_FACTORS[0]), DEVIANCE_FACTORS[1])
            warm = warm_update(counts, n, p=p, q=q, multinomial=multinomial, deviance_factor=factor)
            runs = scratch_runs
            scratch, _ = iterative_bayesian_update(counts, n, p=p, q=q, multinomial=multinomial,
                                                   iterations=IBU_ITERATIONS, deviance_factor=factor)
            scratch_runs = runs  # the reference's own run is not the warm start's
            rate = q + (p - q) / d
            se = math.sqrt(rate * (1 - rate) / n) / (p - q)
            assert np.max(np.abs(warm - scratch)) <= TOLERANCE_SE * se, (n, np.max(np.abs(warm - scratch)) / se)
            assert warm.sum() == pytest.approx(1.0, abs=1e-9) and np.all(warm >= 0)
    finally:
        consistent._update = original
    if mostly_warm:
        assert scratch_runs <= STEPS // 3, f"{scratch_runs} of {STEPS} views ran from scratch"


def test_an_anchor_at_the_limit_gives_the_new_counts_limit_exactly():
    """Bit vectors whose deviance target is out of reach stop at the EM's limit; a warm view takes the new limit."""
    counts, n, p, q = [3000, 500, 500, 6000], 10_000, 0.5, 0.2
    forget_anchors()
    first = warm_update(counts, n, p=p, q=q, multinomial=False, deviance_factor=0.25)
    assert first == pytest.approx(indicator_mle(counts, n, p=p, q=q, multinomial=True), abs=1e-12)
    moved = [3000, 500, 501, 6000]
    assert [a.reason for a in consistent._ANCHORS[(4, p, q, False)]] == ["limit"]
    assert warm_update(moved, n, p=p, q=q, multinomial=False, deviance_factor=0.25) == pytest.approx(
        indicator_mle(moved, n, p=p, q=q, multinomial=True), abs=0)
    assert len(consistent._ANCHORS[(4, p, q, False)]) == 1, "the near counts were served by the anchor"


def test_warm_update_rejects_what_the_update_rejects():
    """Bad counts, n or (p, q) raise ValueError as iterative_bayesian_update does."""
    with pytest.raises(ValueError):
        warm_update([1, 2], 0, p=0.5, q=0.25, multinomial=True, deviance_factor=0.3)
    with pytest.raises(ValueError):
        warm_update([1, 5], 3, p=0.5, q=0.25, multinomial=True, deviance_factor=0.3)
    with pytest.raises(ValueError):
        warm_update([1, 2], 3, p=0.25, q=0.5, multinomial=True, deviance_factor=0.3)
