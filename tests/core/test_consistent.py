"""The consistent view of a single choice: tightened simultaneous intervals, the candidates and the measured rule."""

import numpy as np
import pytest

from survey.core.consistent import (
    DEVIANCE_EVERY,
    IBU_ITERATIONS,
    QUIET_NOISE,
    consistent_view,
    indicator_mle,
    iterative_bayesian_update,
)
from survey.core.estimators import project_box_simplex, project_simplex, relative_noise, simplex_intervals
from survey.core.mechanisms import GeneralizedRR, OptimizedUnaryEncoding
from survey.core.mechanisms.grr import grr_keep_threshold
from survey.core.mechanisms.oue import oue_q_threshold


def random_box(rng, d):
    """Return a random box, sometimes with degenerate, clipped-out or whole-range ends."""
    centre = rng.dirichlet(np.ones(d) * rng.choice([0.2, 1.0, 5.0]))
    half = rng.choice([0.0, 0.01, 0.1, 0.5, 2.0], size=d) * rng.random(d)
    shift = rng.normal(0, rng.choice([0.0, 0.05, 0.3]), size=d)
    return centre + shift - half, centre + shift + half


def test_tightened_intervals_are_never_wider_and_are_the_exact_ranges_over_many_random_boxes():
    rng = np.random.default_rng(20261125)
    empty = 0
    for _ in range(3000):
        d = int(rng.integers(2, 9))
        lows, highs = random_box(rng, d)
        tight_lows, tight_highs, tightened = simplex_intervals(lows, highs)
        box_lows, box_highs = np.clip(lows, 0, 1), np.clip(highs, 0, 1)
        assert np.all(tight_lows >= box_lows) and np.all(tight_highs <= box_highs)
        assert np.all(tight_lows <= tight_highs)
        if not tightened:
            empty += 1
            assert box_lows.sum() > 1 or box_highs.sum() < 1
            assert np.array_equal(tight_lows, box_lows) and np.array_equal(tight_highs, box_highs)
            continue
        for i in range(d):
            # Each end is reached by shares that sum to 1 within the box: the interval is the exact range.
            others = np.delete(np.arange(d), i)
            for end in (tight_lows[i], tight_highs[i]):
                point = np.empty(d)
                point[i] = end
                point[others] = _fill(1.0 - end, box_lows[others], box_highs[others])
                assert point.sum() == pytest.approx(1.0, abs=1e-9)
                assert np.all(point >= box_lows - 1e-9) and np.all(point <= box_highs + 1e-9)
    assert empty > 50


def _fill(total, lows, highs):
    """Return values within [lows, highs] that sum to ``total`` (which must be reachable)."""
    assert lows.sum() - 1e-9 <= total <= highs.sum() + 1e-9
    weight = 0.0 if highs.sum() == lows.sum() else (total - lows.sum()) / (highs.sum() - lows.sum())
    return lows + weight * (highs - lows)


def test_tightening_edge_cases():
    lows, highs, tightened = simplex_intervals([0.6, 0.6], [0.9, 0.9])
    assert not tightened and lows.tolist() == [0.6, 0.6] and highs.tolist() == [0.9, 0.9]
    lows, highs, tightened = simplex_intervals([0.1, 0.1], [0.3, 0.4])
    assert not tightened and highs.tolist() == [0.3, 0.4]
    lows, highs, tightened = simplex_intervals([0.5, 0.5], [0.5, 0.5])
    assert tightened and lows.tolist() == [0.5, 0.5] and highs.tolist() == [0.5, 0.5]
    lows, highs, tightened = simplex_intervals([-0.2, 0.7], [0.2, 1.4])
    assert tightened and lows == pytest.approx([0.0, 0.8]) and highs == pytest.approx([0.2, 1.0])
    lows, highs, _ = simplex_intervals([0, 0, 0], [1, 1, 1])
    assert lows.tolist() == [0, 0, 0] and highs.tolist() == [1, 1, 1]
    with pytest.raises(ValueError):
        simplex_intervals([0.5, 0.1], [0.4, 0.2])
    with pytest.raises(ValueError):
        simplex_intervals([0.1], [0.2, 0.3])


def test_project_box_simplex_is_the_closest_feasible_point():
    rng = np.random.default_rng(5)
    for _ in range(300):
        d = int(rng.integers(2, 7))
        lows, highs, tightened = simplex_intervals(*random_box(rng, d))
        if not tightened:
            continue
        values = rng.normal(1 / d, 0.4, size=d)
        point = project_box_simplex(values, lows, highs)
        assert point.sum() == pytest.approx(1.0, abs=1e-9)
        assert np.all(point >= lows) and np.all(point <= highs)
        assert project_box_simplex(point, lows, highs) == pytest.approx(point, abs=1e-9)
        for _ in range(20):
            other = _fill(1.0, lows, highs) + 0.0
            mix = rng.random()
            candidate = mix * other + (1 - mix) * point
            assert np.sum((values - point) ** 2) <= np.sum((values - candidate) ** 2) + 1e-9


@pytest.mark.slow
def test_grr_mle_is_the_limit_of_the_iterative_bayesian_update():
    rng = np.random.default_rng(11)
    for _ in range(20):
        d, n = int(rng.integers(3, 9)), int(rng.integers(50, 2000))
        p = 0.6
        q = (1 - p) / (d - 1)
        counts = rng.multinomial(n, q + (p - q) * rng.dirichlet(np.ones(d) * 0.4))
        mle = indicator_mle(counts, n, p=p, q=q, multinomial=True)
        limit, _ = iterative_bayesian_update(counts, n, p=p, q=q, multinomial=True, iterations=500_000,
                                             tolerance=1e-15)
        assert mle.sum() == pytest.approx(1.0) and np.all(mle >= 0)
        assert mle == pytest.approx(limit, abs=1e-6)
        if np.all(project_simplex((counts / n - q) / (p - q)) > 0):
            assert mle == pytest.approx((counts / n - q) / (p - q), abs=1e-9)


def binomial_deviance(counts, n, rates):
    """Return 2Σ C log(C/E) + (n − C) log((n − C)/(n − E)), E = n·rate: bit-vector counts against their rates."""
    counts, expected = np.asarray(counts, dtype=float), n * np.asarray(rates)
    ones = np.where(counts > 0, counts * np.log(np.maximum(counts, 1) / expected), 0.0)
    zeros = np.where(counts < n, (n - counts) * np.log(np.maximum(n - counts, 1) / (n - expected)), 0.0)
    return 2.0 * float(np.sum(ones + zeros))


@pytest.mark.parametrize("counts, n", [([147, 113, 98, 112, 119, 112], 300), ([117, 127, 103, 99, 119, 111, 108, 134], 300)])
def test_bit_vector_update_returns_its_limit_early_when_the_deviance_target_is_out_of_reach(counts, n):
    # OUE at ε = 0.5: the EM's limit (the multinomial-likelihood maximiser) fits the bits worse than k·d, so the
    # discrepancy principle never stops it; it used to crawl on to the tolerance (about 20,000 iterations here).
    p, q, factor = 0.5, 1 / (np.exp(0.5) + 1), 0.4
    target = factor * len(counts)
    limit, long_run = iterative_bayesian_update(counts, n, p=p, q=q, multinomial=False, iterations=IBU_ITERATIONS)
    assert binomial_deviance(counts, n, q + (p - q) * limit) > target
    assert limit == pytest.approx(indicator_mle(counts, n, p=p, q=q, multinomial=True), abs=1e-7)
    shares, iterations = iterative_bayesian_update(counts, n, p=p, q=q, multinomial=False,
                                                   iterations=IBU_ITERATIONS, deviance_factor=factor)
    assert iterations % DEVIANCE_EVERY == 0 and iterations <= 2_000 < long_run
    assert shares.sum() == pytest.approx(1.0) and np.all(shares >= 0)
    assert shares == pytest.approx(limit, abs=1e-6)


def test_the_multinomial_mle_of_large_counts_does_not_overflow():
    # Bisecting log μ from −700 used to overflow C(p − q)/μ (a RuntimeWarning, an error under this suite's settings).
    counts, n, p, q = [40000, 31000, 28000, 30500], 100_000, 0.5, 1 / (np.exp(0.5) + 1)
    mle = indicator_mle(counts, n, p=p, q=q, multinomial=True)
    assert mle.sum() == pytest.approx(1.0) and np.all(mle >= 0)
    shares, iterations = iterative_bayesian_update(counts, n, p=p, q=q, multinomial=False, iterations=IBU_ITERATIONS,
                                                   deviance_factor=0.4)
    assert iterations < 1_000 and shares == pytest.approx(mle, abs=1e-12)


def test_the_deviance_stop_is_unchanged_where_the_target_is_reached():
    rng = np.random.default_rng(13)
    for _ in range(20):
        d, n, q = int(rng.integers(3, 9)), int(rng.integers(50, 2000)), 1 / (np.exp(rng.choice([0.5, 1.0])) + 1)
        counts = rng.binomial(n, q + (0.5 - q) * rng.dirichlet(np.ones(d)))
        shares, iterations = iterative_bayesian_update(counts, n, p=0.5, q=q, multinomial=False,
                                                       iterations=IBU_ITERATIONS, deviance_factor=0.4)
        deviance = binomial_deviance(counts, n, q + (0.5 - q) * shares)
        if deviance <= 0.4 * d:
            # Stopped by the principle: the first check at or under the target, as the plain EM reaches it.
            plain, _ = iterative_bayesian_update(counts, n, p=0.5, q=q, multinomial=False, iterations=iterations)
            assert shares == pytest.approx(plain, abs=1e-12)
            if iterations:
                before, _ = iterative_bayesian_update(counts, n, p=0.5, q=q, multinomial=False,
                                                      iterations=iterations - DEVIANCE_EVERY)
                assert binomial_deviance(counts, n, q + (0.5 - q) * before) > 0.4 * d
        else:
            # Out of reach: the EM's limit (returned early, or reached by the tolerance first).
            assert shares == pytest.approx(indicator_mle(counts, n, p=0.5, q=q, multinomial=True), abs=1e-7)


def test_bit_vector_mle_satisfies_its_kkt_conditions():
    rng = np.random.default_rng(12)
    for _ in range(20):
        d, n, p, q = int(rng.integers(3, 9)), int(rng.integers(50, 2000)), 0.5, 0.2
        counts = rng.binomial(n, q + (p - q) * rng.dirichlet(np.ones(d) * 0.4))
        shares = indicator_mle(counts, n, p=p, q=q, multinomial=False)
        rate = q + (p - q) * shares
        slope = (p - q) * (counts / rate - (n - counts) / (1 - rate))
        positive = shares > 1e-9
        assert shares.sum() == pytest.approx(1.0)
        assert np.ptp(slope[positive]) == pytest.approx(0.0, abs=1e-5 * n)
        assert np.all(slope[~positive] <= slope[positive].min() + 1e-5 * n)


def test_candidates_reject_bad_input():
    with pytest.raises(ValueError):
        indicator_mle([1, 2], 0, p=0.5, q=0.25, multinomial=True)
    with pytest.raises(ValueError):
        iterative_bayesian_update([0, 0], 3, p=0.5, q=0.25, multinomial=False)
    with pytest.raises(ValueError):
        consistent_view([1, 2], 3, p=0.25, q=0.5, multinomial=True, lows=[0, 0], highs=[1, 1])
    with pytest.raises(ValueError):
        project_box_simplex([0.5, 0.5], [0.6, 0.6], [1, 1])


def grr(d, epsilon):
    options = tuple(str(v) for v in range(d))
    return GeneralizedRR(options=options, keep_threshold=grr_keep_threshold(epsilon=epsilon, d=d))


def oue(d, epsilon):
    return OptimizedUnaryEncoding(options=tuple(str(v) for v in range(d)), q_threshold=oue_q_threshold(epsilon=epsilon))


def zipf(d):
    weights = 1.0 / np.arange(1, d + 1)
    return weights / weights.sum()


def simulate(mechanism, truth, n, reps, seed):
    """Yield (counts, estimates, view) of seeded repetitions of n respondents drawn from ``truth``."""
    rng = np.random.default_rng(seed)
    d = truth.size
    for _ in range(reps):
        reports = mechanism.randomize(rng.choice(d, size=n, p=truth), rng)
        counts = (np.bincount(reports, minlength=d) if reports.ndim == 1 else reports.sum(axis=0)).tolist()
        estimates = mechanism.estimates(counts, n, 0.95)
        yield counts, estimates, mechanism.consistent(counts, n, estimates)


COVERAGE_REPS = 1000


@pytest.mark.parametrize("make, d, epsilon, n, dominant", [
    (grr, 3, 1.0, 300, False), (grr, 5, 0.5, 2000, False), (grr, 8, 2.0, 1000, False), (grr, 3, 2.0, 200, True),
    (oue, 4, 1.0, 500, False), (oue, 8, 0.5, 2000, False), (oue, 16, 2.0, 1000, False), (oue, 3, 1.0, 300, True),
])
def test_tightened_intervals_keep_simultaneous_coverage(make, d, epsilon, n, dominant):
    """1,000 seeded repetitions: the consistent intervals hold together whenever the box does, in at least 95%.

    The truth sums to 1, so tightening never loses it: coverage equals the Bonferroni box's, which is at
    least 95% by construction; the observed share may fall short of 0.95 only by chance (at most 2.33
    binomial standard errors, a one-sided 1% test). Where one option holds most of the shares the
    tightening narrows OUE's intervals in many repetitions. The consistent point (the first 40 repetitions:
    the update is the slow part) sums to 1 inside its intervals.
    """
    mechanism, truth = make(d, epsilon), (np.array([0.88, 0.08, 0.04]) if dominant else zipf(d))
    rng = np.random.default_rng(d * 1000 + n)
    covered = box_covered = narrower = 0
    for rep in range(COVERAGE_REPS):
        reports = mechanism.randomize(rng.choice(d, size=n, p=truth), rng)
        counts = (np.bincount(reports, minlength=d) if reports.ndim == 1 else reports.sum(axis=0)).tolist()
        estimates = mechanism.estimates(counts, n, 0.95)
        box_lows, box_highs = np.array([e.ci_low for e in estimates]), np.array([e.ci_high for e in estimates])
        lows, highs, tightened = simplex_intervals(box_lows, box_highs)
        assert np.all(lows >= box_lows) and np.all(highs <= box_highs)
        if rep < 40:
            view = mechanism.consistent(counts, n, estimates)
            assert (view.lows, view.highs) == (tuple(lows), tuple(highs))
            shares = np.array(view.shares)
            assert shares.sum() == pytest.approx(1.0, abs=1e-9) and np.all(shares >= 0)
            if tightened:
                assert np.all(lows - 1e-12 <= shares) and np.all(shares <= highs + 1e-12)
        narrower += bool(np.any(highs - lows < box_highs - box_lows - 1e-12))
        covered += bool(np.all((lows <= truth) & (truth <= highs)))
        box_covered += bool(np.all((box_lows <= truth) & (truth <= box_highs)))
    assert covered == box_covered
    assert narrower > (COVERAGE_REPS // 10 if dominant and make is oue else -1)
    assert covered / COVERAGE_REPS >= 0.95 - 2.33 * np.sqrt(0.95 * 0.05 / COVERAGE_REPS), covered


@pytest.mark.parametrize("make, d, epsilon, n", [(grr, 8, 1.0, 2000), (oue, 8, 2.0, 1000), (grr, 6, 0.5, 3000),
                                                 (grr, 4, 4.0, 20000)])
def test_the_rule_is_not_worse_than_norm_sub(make, d, epsilon, n):
    """400 seeded repetitions: the consistent point's MSE is no worse than Norm-Sub's beyond 2 standard errors."""
    mechanism, truth = make(d, epsilon), zipf(d)
    p, q = mechanism.response_probabilities()
    quiet = relative_noise(n, p=p, q=q, d=d) < QUIET_NOISE
    ours, norm_sub = [], []
    for counts, estimates, view in simulate(mechanism, truth, n, 400, seed=d + n):
        assert view.method == ("norm-sub" if quiet else "ibu")
        ours.append(np.mean((np.array(view.shares) - truth) ** 2))
        norm_sub.append(np.mean((project_simplex([e.estimate for e in estimates]) - truth) ** 2))
    difference = np.array(ours) - np.array(norm_sub)
    assert difference.mean() <= 2 * difference.std(ddof=1) / np.sqrt(difference.size)
    if not quiet:
        assert np.mean(ours) < np.mean(norm_sub)
