"""Confidence intervals for the mean of bounded values that hold at every n and for every population.

A report of a number mechanism, or a crosstab's per-respondent product of indicators, is a
value in a known range [low, high]. Student's t interval around its mean assumes a normal
mean and fails at small n and for skewed populations; these intervals assume only the range.

Method: a test by betting (Waudby-Smith & Ramdas 2024, JRSS-B; Howard, Ramdas, McAuliffe &
Sekhon 2021, Ann. Statist.). Rescale the values to u_i in [0, 1]. For a candidate mean m
and a bet λ with 0 < λ < 1/m, the wealth W_λ(m) = Π(1 + λ(u_i − m)) is non-negative and, when
the mean is at most m, has expectation Π(1 + λ(E u_i − m)) ≤ 1. A tally holds only n, Σu and
Σu², so the test uses a lower bound of log W_λ(m) that depends on these alone: the least of
Σ g(u_i), g(u) = log(1 + λ(u − m)), over all values in [0, 1] with this n, Σu and Σu². As
g''' > 0, the quadratic Q that touches g at 0 and is tangent to it at u₀ = Σu²/Σu satisfies
g − Q ≥ 0 on [0, 1] (g − Q has a root at 0 and a double root at u₀ and no other, by Rolle,
with a positive third derivative), and Σ Q(u_i) depends only on n, Σu and Σu²; so

    log W_λ(m) ≥ n [w log(1 + λ(u₀ − m)) + (1 − w) log(1 − λm)],   w = (Σu)²/(nΣu²),

the value at the two-point law {0 w.p. 1 − w, u₀ w.p. w} with the data's first two moments,
which is the least any such data can give (Karlin & Studden 1966, the Chebyshev–Markov–Krein
bound; Fan, Grama & Liu 2015 use the same minorant tangent at 0 instead, which is never
sharper). The bound decreases in m for each λ, and a bet with λm ≥ 1 counts as zero wealth,
so the average of these lower bounds over a fixed grid of bets (chosen before the data from
n, the level and, optionally, a range of the values' variance known in advance) decreases in
m: the means it rejects at 2/α (Markov's inequality: the average wealth has expectation at
most 1) form [0, lower), and bisection finds lower. The upper end is the same test on 1 − u.

Both one-sided tests run at α/2, so the interval covers the mean with probability at least
``level`` for every n ≥ 1 and every distribution on [low, high] (the variance range only
places the bets: a wrong one costs width, never coverage); n = 0 gives the whole range. It is
never a single point: at m = ū every bet's bound is at most log(1 + λ(ū − m)) = 0 by Jensen's
inequality, so no mean within reach of ū is rejected.

Whether an interval contains a given point needs no bisection (mean_intervals_contain, which a
crosstab's confidence sets ask at many points): the bisection's lower end is the largest point
k·ū/2^44 of its grid that the test rejects, so it lies at or below p exactly when 0 or the first
grid point above p is not rejected; two tests an end give the same decision as the interval.
Pure numpy: no Flask, no SQL, no I/O.
"""

from __future__ import annotations

import math

import numpy as np

# The bets, on the [0, 1] scale, run from the one suited to the largest variance up to the one
# suited to the least (at most LARGEST_BET, which a mean of a few in a thousand needs), by
# factors of BET_FACTOR; chosen by measurement (docs/explanation/intervals.md).
LARGEST_BET = 64.0
BET_FACTOR = 2.0
_BISECTIONS = 44


def mean_interval(total, squares, n, *, low, high, level, variance=None) -> tuple[float, float]:
    """Return (ci_low, ci_high) for the mean of n values in [low, high] with sum ``total`` and sum of squares ``squares``.

    The interval holds at ``level`` for every n and every distribution on [low, high]
    (module docstring); it lies within [low, high] and is the whole range when n = 0.
    ``variance``, a (least, most) variance of one value known before the data, only tunes the bets.
    """
    lows, highs = mean_intervals(np.array([total], dtype=float), np.array([squares], dtype=float),
                                 np.array([n]), low=low, high=high, level=level, variance=variance)
    return float(lows[0]), float(highs[0])


def mean_intervals(totals, squares, counts, *, low, high, level, variance=None) -> tuple[np.ndarray, np.ndarray]:
    """Return the intervals of mean_interval for arrays of sums, sums of squares and counts (one per sample)."""
    low, high, counts, unit_sum, unit_squares, threshold, unit_variance = _prepared(
        totals, squares, counts, low, high, level, variance)
    width = high - low
    lower = _bound(unit_sum, unit_squares, counts, threshold, unit_variance)
    upper = 1.0 - _bound(counts - unit_sum, _flipped_squares(unit_sum, unit_squares, counts), counts,
                         threshold, unit_variance)
    empty = counts == 0
    lower = np.where(empty, 0.0, lower)
    upper = np.where(empty, 1.0, upper)
    return low + lower * width, low + upper * width


def mean_intervals_contain(points, totals, squares, counts, *, low, high, level, variance=None) -> np.ndarray:
    """Return whether each interval of mean_intervals contains its point (``points`` broadcast), at two tests an end.

    The same decision as ``low <= point <= high`` on mean_intervals' result up to round-off, without the bisections:
    the bisection's lower end is the largest point k·ū/2^_BISECTIONS of its grid whose test rejects (0 when 0 is
    not rejected), the rejected means forming [0, end); so the end lies at or below a point p exactly when 0 is
    not rejected or the first grid point above p is not. The upper end is the same on 1 − u, at 1 − p.
    """
    low, high, counts, unit_sum, unit_squares, threshold, unit_variance = _prepared(
        totals, squares, counts, low, high, level, variance)
    target = (np.broadcast_to(np.asarray(points, dtype=float), counts.shape) - low) / (high - low)
    below = _end_at_most(unit_sum, unit_squares, counts, target, threshold, unit_variance)
    above = _end_at_most(counts - unit_sum, _flipped_squares(unit_sum, unit_squares, counts), counts, 1.0 - target,
                         threshold, unit_variance)
    empty = counts == 0
    return np.where(empty, (target >= 0.0) & (target <= 1.0), below & above)


def _prepared(totals, squares, counts, low, high, level, variance):
    """Check the arguments; return (low, high, counts, Σu, Σu², threshold, unit variance) on the [0, 1] scale."""
    low, high = float(low), float(high)
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise ValueError(f"the range must be finite with low < high, got low={low!r}, high={high!r}")
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
        raise ValueError(f"level must be a number in (0, 1), e.g. 0.95, got {level!r}")
    counts = np.asarray(counts, dtype=float)
    if np.any(counts < 0) or np.any(counts != np.floor(counts)):
        raise ValueError("counts must be non-negative integers")
    width = high - low
    unit_variance = _unit_variance(variance, width)
    totals = np.asarray(totals, dtype=float)
    squares = np.asarray(squares, dtype=float)
    # Rescale to [0, 1]; clamp round-off so that 0 <= Σu <= n and (Σu)²/n <= Σu² <= Σu.
    unit_sum = np.clip((totals - counts * low) / width, 0.0, counts)
    unit_squares = (squares - 2 * low * totals + counts * low * low) / (width * width)
    safe_n = np.maximum(counts, 1.0)
    unit_squares = np.clip(unit_squares, unit_sum * unit_sum / safe_n, unit_sum)
    threshold = math.log(2.0 / (1.0 - float(level)))
    return low, high, counts, unit_sum, unit_squares, threshold, unit_variance


def _flipped_squares(unit_sum, unit_squares, counts):
    """Return Σ(1 − u)² from n, Σu and Σu²."""
    return np.maximum(counts - 2 * unit_sum + unit_squares, 0.0)


def _unit_variance(variance, width: float) -> tuple[float, float]:
    """Return the (least, most) variance on the [0, 1] scale: the given range clipped to [0, 1/4], else [0, 1/4]."""
    if variance is None:
        return 0.0, 0.25
    least, most = (float(value) / (width * width) for value in variance)
    if not (math.isfinite(least) and math.isfinite(most) and 0 <= least <= most):
        raise ValueError(f"variance must be a (least, most) pair with 0 <= least <= most, got {variance!r}")
    most = min(max(most, 1e-12), 0.25)
    return min(least, most), most


def bets(n: float, threshold: float, variance: tuple[float, float] = (0.0, 0.25)) -> np.ndarray:
    """Return the fixed grid of bets for n values: from the bet suited to the most variance to that suited to the least."""
    least, most = variance
    if n <= 0:
        return np.array([1.0])
    smallest = math.sqrt(2 * threshold / (n * most))
    largest = LARGEST_BET if least <= 0 else math.sqrt(2 * threshold / (n * least))
    largest = max(min(largest, LARGEST_BET), smallest)
    steps = max(1, math.ceil(math.log(largest / smallest) / math.log(BET_FACTOR) - 1e-9) + 1)
    return np.geomspace(smallest, largest, steps)


def _bound(unit_sum, unit_squares, counts, threshold, variance) -> np.ndarray:
    """Return the largest m in [0, ū] whose one-sided test (mean above m) rejects, 0 when none does (vectorised)."""
    result = np.zeros(unit_sum.shape)
    for n_value, rows, grid, top, weight, mean in _groups(unit_sum, unit_squares, counts, threshold, variance):
        rejected = np.zeros(mean.shape)        # invariant: rejected at `rejected` (or it is 0) ...
        accepted = mean.copy()                 # ... and not rejected at `accepted`
        rejects_zero = _rejects(top, weight, n_value, np.zeros(mean.shape), grid, threshold)
        for _ in range(_BISECTIONS):
            middle = (rejected + accepted) / 2
            hit = _rejects(top, weight, n_value, middle, grid, threshold)
            rejected = np.where(hit, middle, rejected)
            accepted = np.where(hit, accepted, middle)
        result[rows] = np.where(rejects_zero, rejected, 0.0)
    return result


def _end_at_most(unit_sum, unit_squares, counts, target, threshold, variance) -> np.ndarray:
    """Return whether _bound's end is at most ``target`` (per sample), from the tests at 0 and at one grid point."""
    result = np.zeros(unit_sum.shape, dtype=bool)
    for n_value, rows, grid, top, weight, mean in _groups(unit_sum, unit_squares, counts, threshold, variance):
        goal = target[rows]
        step = mean * 2.0 ** -_BISECTIONS       # the bisection's grid: k·step for k = 0 … 2^_BISECTIONS
        with np.errstate(divide="ignore", invalid="ignore"):
            index = np.floor(np.where(step > 0, goal / np.where(step > 0, step, 1.0), 0.0)) + 1.0
        inside = (goal >= 0.0) & (step > 0) & (index < 2.0 ** _BISECTIONS)
        point = np.where(inside, index * step, 0.0)
        size = mean.size
        hits = _rejects(np.tile(top, 2), np.tile(weight, 2), n_value, np.concatenate([np.zeros(size), point]),
                        grid, threshold)
        settled = ~hits[:size] | ~hits[size:]
        result[rows] = (goal >= 0.0) & (~inside | settled)
    return result


def _groups(unit_sum, unit_squares, counts, threshold, variance):
    """Yield (n, rows, bets, u0, w, ū) for each nonzero count: the two-point law {0, u0} (weight w at u0) per row."""
    for n_value in np.unique(counts):
        if n_value == 0:
            continue
        rows = counts == n_value
        s1, s2 = unit_sum[rows], unit_squares[rows]
        # The two-point law {0, u0} with the data's first two moments: weight w at u0 = Σu²/Σu.
        positive = s2 > 0
        top = np.where(positive, s2 / np.where(positive, s1, 1.0), 0.0)
        weight = np.where(positive, s1 * s1 / (n_value * np.where(positive, s2, 1.0)), 0.0)
        yield n_value, rows, bets(float(n_value), threshold, variance), top, weight, s1 / n_value


def _rejects(top, weight, n, m, grid, threshold) -> np.ndarray:
    """Return whether the average over the bets of the wealth's lower bound on 'the mean exceeds m' reaches 2/α."""
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
