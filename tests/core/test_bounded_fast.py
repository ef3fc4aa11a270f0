"""The fast decisions of the guaranteed intervals equal the bisections they replace.

A crosstab's conditional shares are confidence sets found by asking, at each point c of a grid,
whether the bounded-mean interval of W(c) contains 0. That question used to be answered by
computing the interval (44 bisection steps per end) and comparing; it is now answered by
``bounded_mean.mean_intervals_contain`` with two tests per end. The reference below is the code
as it was before (the bisection of ``bounded_mean`` and ``crosstab_bounds.conditional_hulls``),
kept verbatim: on random inputs, including n = 0, 1, 2, all-equal values and values at the
ends of the range, every decision, interval and hull agrees. Floats are compared at 1e-9
(relative to the range); a decision is compared at points at least 1e-9 of the range from an
end of the reference interval (at an end itself the two differ only by round-off of the ends).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from survey.core import bounded_mean
from survey.core import crosstab_bounds as bounds

TOLERANCE = 1e-9

# ---------------------------------------------------------------------------------------------
# The reference: bounded_mean and crosstab_bounds.conditional_hulls before the fast path.


def reference_mean_intervals(totals, squares, counts, *, low, high, level, variance=None):
    """Return (ci_low, ci_high) as bounded_mean.mean_intervals computed them before (bisection)."""
    counts = np.asarray(counts, dtype=float)
    width = high - low
    unit_variance = bounded_mean._unit_variance(variance, width)
    totals = np.asarray(totals, dtype=float)
    squares = np.asarray(squares, dtype=float)
    unit_sum = np.clip((totals - counts * low) / width, 0.0, counts)
    unit_squares = (squares - 2 * low * totals + counts * low * low) / (width * width)
    safe_n = np.maximum(counts, 1.0)
    unit_squares = np.clip(unit_squares, unit_sum * unit_sum / safe_n, unit_sum)
    threshold = math.log(2.0 / (1.0 - float(level)))
    lower = reference_bound(unit_sum, unit_squares, counts, threshold, unit_variance)
    upper = 1.0 - reference_bound(counts - unit_sum, np.maximum(counts - 2 * unit_sum + unit_squares, 0.0), counts,
                                  threshold, unit_variance)
    empty = counts == 0
    lower = np.where(empty, 0.0, lower)
    upper = np.where(empty, 1.0, upper)
    return low + lower * width, low + upper * width


def reference_bound(unit_sum, unit_squares, counts, threshold, variance):
    """Return the largest m in [0, ū] whose one-sided test rejects, by 44 bisection steps (the old _bound)."""
    result = np.zeros(unit_sum.shape)
    for n_value in np.unique(counts):
        if n_value == 0:
            continue
        rows = counts == n_value
        grid = bounded_mean.bets(float(n_value), threshold, variance)
        s1, s2 = unit_sum[rows], unit_squares[rows]
        mean = s1 / n_value
        positive = s2 > 0
        top = np.where(positive, s2 / np.where(positive, s1, 1.0), 0.0)
        weight = np.where(positive, s1 * s1 / (n_value * np.where(positive, s2, 1.0)), 0.0)
        rejected = np.zeros(s1.shape)
        accepted = mean.copy()
        rejects_zero = reference_rejects(top, weight, n_value, np.zeros(s1.shape), grid, threshold)
        for _ in range(44):
            middle = (rejected + accepted) / 2
            hit = reference_rejects(top, weight, n_value, middle, grid, threshold)
            rejected = np.where(hit, middle, rejected)
            accepted = np.where(hit, accepted, middle)
        result[rows] = np.where(rejects_zero, rejected, 0.0)
    return result


def reference_rejects(top, weight, n, m, grid, threshold):
    """Return whether the average wealth bound over the bets reaches 2/α (the old _rejects)."""
    lam = grid[None, :]
    m = m[:, None]
    allowed = lam * m < 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        gain = np.log1p(lam * (top[:, None] - m))
        loss = np.log1p(-np.where(allowed, lam * m, 0.0))
        logs = n * (weight[:, None] * gain + np.where(weight[:, None] < 1.0, (1.0 - weight[:, None]) * loss, 0.0))
    logs = np.where(allowed, logs, -np.inf)
    peak = logs.max(axis=1)
    finite = np.isfinite(peak)
    safe_peak = np.where(finite, peak, 0.0)
    with np.errstate(divide="ignore"):
        mixture = safe_peak + np.log(np.sum(np.exp(logs - safe_peak[:, None]), axis=1) / grid.size)
    return finite & (mixture >= threshold)


def reference_bounded_intervals(totals, squares, n, low, high, level):
    """The old crosstab_bounds.bounded_intervals on the reference intervals."""
    totals, squares = np.asarray(totals, dtype=float), np.asarray(squares, dtype=float)
    low, high = np.broadcast_to(np.asarray(low, dtype=float), totals.shape), \
        np.broadcast_to(np.asarray(high, dtype=float), totals.shape)
    width = high - low
    unit_sum = (totals - n * low) / width
    unit_squares = (squares - 2 * low * totals + n * low * low) / (width * width)
    counts = np.full(totals.size, float(n))
    lower, upper = reference_mean_intervals(unit_sum.ravel(), unit_squares.ravel(), counts, low=0.0, high=1.0,
                                            level=level)
    return low + lower.reshape(totals.shape) * width, low + upper.reshape(totals.shape) * width


def reference_batched(requests, n, level):
    """The old crosstab_bounds.batched on the reference intervals."""
    shapes = [np.shape(request[0]) for request in requests]
    flat = [np.concatenate([np.broadcast_to(np.asarray(request[k], dtype=float), shape).ravel()
                            for request, shape in zip(requests, shapes)]) for k in range(4)]
    ci_low, ci_high = reference_bounded_intervals(flat[0], flat[1], n, flat[2], flat[3], level)
    results, start = [], 0
    for shape in shapes:
        size = int(np.prod(shape))
        results.append((ci_low[start:start + size].reshape(shape), ci_high[start:start + size].reshape(shape)))
        start += size
    return results


def reference_accepted(interval):
    ci_low, ci_high = interval
    return (ci_low <= 0.0) & (0.0 <= ci_high)


def reference_conditional_hulls(cells, level, seeds, extra=()):
    """The old crosstab_bounds.conditional_hulls: every grid point's interval computed, then compared with 0."""
    n = cells.n
    coarse = np.broadcast_to(np.linspace(0.0, 1.0, 65), (seeds.size, 65))
    seed = np.clip(np.nan_to_num(np.asarray(seeds, dtype=float), nan=0.5), 0.0, 1.0)
    grid = np.sort(np.column_stack([coarse, seed]), axis=1)
    answers = reference_batched([cells.ratio_request(grid), *extra], n, level)
    passed = reference_accepted(answers[0])
    rows = np.arange(grid.shape[0])
    first = np.argmax(passed, axis=1)
    last = grid.shape[1] - 1 - np.argmax(passed[:, ::-1], axis=1)
    rejected = np.concatenate([grid[rows, np.maximum(first - 1, 0)], grid[rows, np.minimum(last + 1, grid.shape[1] - 1)]])
    accepted = np.concatenate([grid[rows, first], grid[rows, last]])
    active = np.concatenate([first > 0, last < grid.shape[1] - 1])
    steps = np.linspace(0.0, 1.0, 33)
    for _ in range(2 if active.any() else 0):
        points = rejected[:, None] + (accepted - rejected)[:, None] * steps[None, :]
        both = [cells.ratio_request(points[:len(rows)]), cells.ratio_request(points[len(rows):])]
        request = tuple(np.concatenate([both[0][k], both[1][k]]) for k in range(4))
        hit = reference_accepted(reference_batched([request], n, level)[0])
        hit[:, -1] = True
        index = np.argmax(hit, axis=1)
        moved = active & (index > 0)
        picked = np.arange(points.shape[0])
        rejected = np.where(moved, points[picked, np.maximum(index - 1, 0)], rejected)
        accepted = np.where(moved, points[picked, index], accepted)
    none = ~passed.any(axis=1)
    low = np.where(none, 0.0, rejected[:len(rows)])
    high = np.where(none, 1.0, rejected[len(rows):])
    return (low, high, none | ((low <= 0.0) & (high >= 1.0))), answers[1:]


# ---------------------------------------------------------------------------------------------
# Random inputs with the edge cases.


def samples(rng, count: int, low: float, high: float):
    """Return (totals, squares, counts) of ``count`` samples of values in [low, high], edge cases among them."""
    totals, squares, counts = [], [], []
    sizes = [0, 1, 2, 3, 5, 17, 200, 5_000]
    for index in range(count):
        n = sizes[index % len(sizes)]
        kind = (index // len(sizes)) % 6
        if kind == 0:        # uniform
            values = rng.uniform(low, high, n)
        elif kind == 1:      # all equal, anywhere in the range
            values = np.full(n, rng.uniform(low, high))
        elif kind == 2:      # all at the low end
            values = np.full(n, low)
        elif kind == 3:      # all at the high end
            values = np.full(n, high)
        elif kind == 4:      # the two ends, one of them rare
            values = np.where(rng.random(n) < rng.choice([0.001, 0.3, 0.999]), high, low)
        else:                # skewed towards one end
            values = low + (high - low) * rng.beta(0.2, 3.0, n)
        totals.append(values.sum())
        squares.append((values * values).sum())
        counts.append(n)
    # Tallies standing for large samples (means of a few in a thousand up to nearly all).
    for n in (10**6, 10**7):
        for share in (0.0, 0.002, 0.4, 0.998, 1.0):
            totals.append(n * (low + share * (high - low)))
            squares.append(n * (low * low + share * (high * high - low * low)))
            counts.append(n)
    return np.array(totals), np.array(squares), np.array(counts, dtype=float)


@pytest.mark.parametrize("low, high, level, variance", [(0.0, 1.0, 0.95, None), (-2.5, 7.0, 0.9, None),
                                                         (0.0, 1.0, 0.995, None), (1.0, 5.0, 0.95, (0.1, 2.0))])
def test_mean_intervals_are_unchanged_and_contain_decides_as_the_bisection(low, high, level, variance):
    rng = np.random.default_rng(31)
    totals, squares, counts = samples(rng, 96, low, high)
    ref_low, ref_high = reference_mean_intervals(totals, squares, counts, low=low, high=high, level=level,
                                                 variance=variance)
    got_low, got_high = bounded_mean.mean_intervals(totals, squares, counts, low=low, high=high, level=level,
                                                    variance=variance)
    width = high - low
    np.testing.assert_allclose(got_low, ref_low, rtol=0, atol=TOLERANCE * width)
    np.testing.assert_allclose(got_high, ref_high, rtol=0, atol=TOLERANCE * width)
    # Points on both sides of each end, just beyond the tolerance, at the ends of the range and at random.
    offsets = np.array([-1e8, -1e5, -1e2, -1.0, 1.0, 1e2, 1e5, 1e8]) * TOLERANCE * width
    near = np.concatenate([ref_low[:, None] + offsets[None, :], ref_high[:, None] + offsets[None, :]], axis=1)
    spread = np.concatenate([near, np.full((counts.size, 2), low), np.full((counts.size, 2), high),
                             rng.uniform(low - 0.1 * width, high + 0.1 * width, (counts.size, 8))], axis=1)
    points = np.clip(spread, low - width, high + width)
    expected = (ref_low[:, None] <= points) & (points <= ref_high[:, None])
    repeat = points.shape[1]
    got = bounded_mean.mean_intervals_contain(
        points.ravel(), np.repeat(totals, repeat), np.repeat(squares, repeat), np.repeat(counts, repeat),
        low=low, high=high, level=level, variance=variance).reshape(points.shape)
    wrong = np.argwhere(got != expected)
    assert wrong.size == 0, [(counts[i], totals[i], ref_low[i], ref_high[i], points[i, j]) for i, j in wrong[:5]]
    # Both sides of every decision occur (the comparison is not vacuous).
    assert expected.any() and (~expected).any()


def random_cells(rng, n: int, d_a: int, d_b: int, *, epsilon: float, same: bool = False, never: bool = False):
    """Return Cells of n respondents' randomized-response reports of d_a and d_b indicators (both sides when 1).

    ``same``: every respondent sent the same reports (all-equal values); ``never``: A's first indicator is never reported.
    """
    q = 1 / (1 + math.exp(epsilon))
    p = 1 - q
    patterns_a = rng.integers(0, 2, (64, d_a)).astype(float)
    patterns_b = rng.integers(0, 2, (64, d_b)).astype(float)
    if never:
        patterns_a[:, 0] = 0.0
    weights = rng.multinomial(n, rng.dirichlet(np.full(64, 0.3))).astype(float) if n else np.zeros(64)
    if same and n:
        weights = np.zeros(64)
        weights[0] = n
    factors_a, factors_b = (patterns_a - q) / (p - q), (patterns_b - q) / (p - q)
    factor = ((0 - q) / (p - q), (1 - q) / (p - q))
    sides = [(True, True), (False, True), (True, False), (False, False)] if d_a == 1 and d_b == 1 else \
        [(True, True), (False, True)] if d_a == 1 else [(True, True)]
    return bounds.Cells(factors_a, factors_b, weights, factor, factor, sides)


HULL_CASES = [(1, 1, 1, 1.0, {}), (2, 1, 1, 1.0, {}), (3, 2, 3, 2.0, {}), (50, 1, 1, 0.5, {}), (200, 1, 4, 2.0, {}),
              (5_000, 1, 1, 1.0, {}), (5_000, 3, 2, 4.0, {}), (100_000, 1, 5, 1.0, {}), (2_000_000, 1, 1, 2.0, {}),
              (40, 1, 1, 2.0, {"same": True}), (3_000, 2, 2, 1.0, {"never": True}),
              (500, 1, 1, 8.0, {"same": True}), (10_000_000, 1, 3, 0.5, {})]


@pytest.mark.parametrize("n, d_a, d_b, epsilon, options", HULL_CASES)
def test_conditional_hulls_and_joint_intervals_equal_the_reference(n, d_a, d_b, epsilon, options):
    rng = np.random.default_rng(n + 7 * d_a + 13 * d_b)
    cells = random_cells(rng, n, d_a, d_b, epsilon=epsilon, **options)
    size = cells.columns["z"].size
    # Seeds: estimates of the shares (W(c)'s mean is 0 there), random points and none.
    with np.errstate(divide="ignore", invalid="ignore"):
        estimates = cells.columns["z"] / cells.columns["a"]
    seeds = np.where(rng.random(size) < 0.7, estimates, np.where(rng.random(size) < 0.5, rng.random(size), np.nan))
    for level in (0.95, bounds.odds_level(0.95), 0.8):
        (low, high, whole), joints = bounds.conditional_hulls(cells, level, seeds, [cells.joint_request()])
        (ref_low, ref_high, ref_whole), ref_joints = reference_conditional_hulls(cells, level, seeds,
                                                                                 [cells.joint_request()])
        np.testing.assert_allclose(low, ref_low, rtol=0, atol=TOLERANCE)
        np.testing.assert_allclose(high, ref_high, rtol=0, atol=TOLERANCE)
        np.testing.assert_array_equal(whole, ref_whole)
        width = cells.joint_request()[3] - cells.joint_request()[2]
        for got, expected in zip(joints[0], ref_joints[0]):
            assert np.all(np.abs(got - expected) <= TOLERANCE * width), (got, expected)
