"""The consistent view's flow (survey.core.consistent._flow_rest) against the EM run step by step.

Past FLOW_AFTER steps a slow update (a flat channel: tens of thousands of steps, up to the cap of
IBU_ITERATIONS) is followed as the flow its steps trace. Its shares must equal the step-by-step
update's within TOLERANCE_SE standard errors of one option's estimate at uniform shares (measured:
1e-8 or less, bench/README.md), stop for the same reason within one deviance check, and give a warm
start the same point of the path. Seeded counts; the capped case runs a lower cap to stay fast.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from survey.core import consistent
from survey.core.consistent import DEVIANCE_EVERY, DEVIANCE_FACTORS, FLOW_AFTER, _update, forget_anchors, warm_update
from survey.core.estimators import relative_noise

TOLERANCE_SE = 1e-3


def _oue_counts(d: int, epsilon: float, n: int, seed: int) -> tuple[list[int], float, float]:
    """Return seeded option counts of n OUE reports (d bits each) of answers drawn from Dirichlet shares, and (p, q)."""
    rng = np.random.default_rng(seed)
    p, q = 0.5, 1 / (math.exp(epsilon) + 1)
    chosen = rng.multinomial(n, rng.dirichlet(np.ones(d)))
    counts = rng.binomial(chosen, p) + rng.binomial(n - chosen, q)
    return [int(c) for c in counts], p, q


def _factor(n, p, q, d) -> float:
    """Return the rule's deviance factor k = 0.2 + 0.4r within DEVIANCE_FACTORS."""
    return min(max(0.2 + 0.4 * relative_noise(n, p=p, q=q, d=d), DEVIANCE_FACTORS[0]), DEVIANCE_FACTORS[1])


@pytest.mark.parametrize("d, epsilon, n, iterations, reason", [
    (128, 0.5, 100_000, 20_000, "cap"),       # the results page's worst case: the EM still creeping at the cap
    (32, 0.5, 100_000, 100_000, "target"),   # stopped by the discrepancy principle after ~37,000 steps
])
def test_the_flow_gives_the_step_by_step_shares_within_the_tolerance(d, epsilon, n, iterations, reason):
    """Shares, stop and warm-start point of the flow equal the step-by-step update's within TOLERANCE_SE."""
    counts, p, q = _oue_counts(d, epsilon, n, seed=d)
    factor = _factor(n, p, q, d)
    exact = _update(counts, n, p=p, q=q, multinomial=False, iterations=iterations, deviance_factor=factor)
    flow = _update(counts, n, p=p, q=q, multinomial=False, iterations=iterations, deviance_factor=factor,
                   flow_after=FLOW_AFTER)
    rate = q + (p - q) / d
    se = math.sqrt(rate * (1 - rate) / n) / (p - q)
    assert exact[2] == flow[2] == reason
    assert exact[1] > FLOW_AFTER and abs(exact[1] - flow[1]) <= DEVIANCE_EVERY
    assert np.max(np.abs(exact[0] - flow[0])) <= TOLERANCE_SE * se
    assert flow[0].sum() == pytest.approx(1.0, abs=1e-12) and np.all(flow[0] >= 0)
    assert exact[3][0] == flow[3][0] and np.max(np.abs(exact[3][1] - flow[3][1])) <= TOLERANCE_SE * se


def test_the_flow_keeps_the_limit_rule():
    """Bit vectors whose deviance target is out of reach stop at the EM's limit on the flow too, at the same check."""
    counts, n, p, q = [3000, 500, 500, 6000], 10_000, 0.5, 0.2
    exact = _update(counts, n, p=p, q=q, multinomial=False, iterations=100_000, deviance_factor=0.25)
    flow = _update(counts, n, p=p, q=q, multinomial=False, iterations=100_000, deviance_factor=0.25, flow_after=0)
    assert exact[2] == flow[2] == "limit" and exact[1] == flow[1]
    assert np.max(np.abs(exact[0] - flow[0])) == pytest.approx(0.0, abs=1e-12)


def test_a_view_from_scratch_takes_the_flow_past_flow_after_steps(monkeypatch):
    """warm_update's runs from scratch follow the flow once FLOW_AFTER steps have not stopped the update."""
    calls = []
    original = consistent._flow_rest
    monkeypatch.setattr(consistent, "_flow_rest", lambda path, shares, start, *rest: calls.append(start)
                        or original(path, shares, start, *rest))
    monkeypatch.setattr(consistent, "IBU_ITERATIONS", 20_000)
    counts, p, q = _oue_counts(128, 0.5, 100_000, seed=128)
    forget_anchors()
    try:
        shares = warm_update(counts, 100_000, p=p, q=q, multinomial=False, deviance_factor=_factor(100_000, p, q, 128))
    finally:
        forget_anchors()
    assert calls == [FLOW_AFTER]
    assert shares.sum() == pytest.approx(1.0, abs=1e-12)
