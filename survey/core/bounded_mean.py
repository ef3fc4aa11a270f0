"""Confidence intervals for the mean of bounded values that hold at every n and for every population.

A report of a number mechanism, or a crosstab's per-respondent product of indicators, is a
value in a known range [low, high]. Student's t interval around its mean assumes a normal
mean and fails at small n and for skewed populations; these intervals assume only the range.

Method: the empirical-Bernstein test supermartingale (Howard, Ramdas, McAuliffe & Sekhon
2021, Ann. Statist.; Waudby-Smith & Ramdas 2024, JRSS-B, §3): for values u_i in [0, 1] with
mean at most m and a bet λ in [0, 1),

    exp(λ Σ(u_i − m) − ψ(λ) Σ(u_i − m)²),   ψ(λ) = −log(1 − λ) − λ,

is bounded by the product Π(1 + λ(u_i − m)) (Fan, Grama & Liu 2015: log(1 + λy) ≥ λy − ψ(λ)y²
for y ≥ −1), whose expectation is at most 1; so, by Markov's inequality, the average of such
factors over a fixed grid of bets exceeds 2/α with probability at most α/2. The statistic
needs only n, Σu and Σu², which is all a tally holds. The grid of bets is fixed before the
data (from n and the level alone), spaced by factors of 2 from the bet suited to the largest
variance of a [0, 1] value (1/4) up to 1/2, so the interval adapts to the data's own
variance at the price of a logarithm of the grid's size. Bets of at most 1/2 keep each
statistic decreasing in m on [0, 1] (its slope is −λn + 2ψ(λ)n(ū − m) and λ ≥ 2ψ(λ) there),
so the rejected means form [0, lower) and (upper, 1] and bisection finds both ends.

Both one-sided tests run at α/2, so the interval covers the mean with probability at least
``level`` for every n ≥ 1 and every distribution on [low, high]; n = 0 gives the whole range.
It is never a single point: a mean of at least n ≥ 1 values cannot rule out its neighbours.
Pure numpy: no Flask, no SQL, no I/O.
"""

from __future__ import annotations

import math

import numpy as np

LARGEST_BET = 0.5
_BISECTIONS = 64


def mean_interval(total, squares, n, *, low, high, level) -> tuple[float, float]:
    """Return (ci_low, ci_high) for the mean of n values in [low, high] with sum ``total`` and sum of squares ``squares``.

    The interval holds at ``level`` for every n and every distribution on [low, high]
    (module docstring); it lies within [low, high] and is the whole range when n = 0.
    """
    lows, highs = mean_intervals(np.array([total], dtype=float), np.array([squares], dtype=float),
                                 np.array([n]), low=low, high=high, level=level)
    return float(lows[0]), float(highs[0])


def mean_intervals(totals, squares, counts, *, low, high, level) -> tuple[np.ndarray, np.ndarray]:
    """Return the intervals of mean_interval for arrays of sums, sums of squares and counts (one per sample)."""
    low, high = float(low), float(high)
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise ValueError(f"the range must be finite with low < high, got low={low!r}, high={high!r}")
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
        raise ValueError(f"level must be a number in (0, 1), e.g. 0.95, got {level!r}")
    counts = np.asarray(counts, dtype=float)
    if np.any(counts < 0) or np.any(counts != np.floor(counts)):
        raise ValueError("counts must be non-negative integers")
    width = high - low
    totals = np.asarray(totals, dtype=float)
    squares = np.asarray(squares, dtype=float)
    # Rescale to [0, 1]; clamp round-off so that 0 <= Σu <= n and (Σu)²/n <= Σu² <= Σu.
    unit_sum = np.clip((totals - counts * low) / width, 0.0, counts)
    unit_squares = (squares - 2 * low * totals + counts * low * low) / (width * width)
    safe_n = np.maximum(counts, 1.0)
    unit_squares = np.clip(unit_squares, unit_sum * unit_sum / safe_n, unit_sum)
    threshold = math.log(2.0 / (1.0 - float(level)))
    lower = _bound(unit_sum, unit_squares, counts, threshold)
    upper = 1.0 - _bound(counts - unit_sum, counts - 2 * unit_sum + unit_squares, counts, threshold)
    empty = counts == 0
    lower = np.where(empty, 0.0, lower)
    upper = np.where(empty, 1.0, upper)
    return low + lower * width, low + upper * width


def bets(n: float, threshold: float) -> np.ndarray:
    """Return the fixed grid of bets for n values: from the bet suited to variance 1/4 up to LARGEST_BET, by factors of 2."""
    if n <= 0:
        return np.array([LARGEST_BET])
    smallest = min(LARGEST_BET, math.sqrt(2 * threshold / (n * 0.25)))
    steps = max(1, math.ceil(math.log2(LARGEST_BET / smallest)) + 1)
    return np.geomspace(smallest, LARGEST_BET, steps)


def _bound(unit_sum, unit_squares, counts, threshold) -> np.ndarray:
    """Return the largest m in [0, ū] whose one-sided test (mean above m) rejects, 0 when none does (vectorised)."""
    result = np.zeros(unit_sum.shape)
    for n_value in np.unique(counts):
        if n_value == 0:
            continue
        rows = counts == n_value
        grid = bets(float(n_value), threshold)
        psi = -np.log1p(-grid) - grid
        s1, s2 = unit_sum[rows], unit_squares[rows]
        mean = s1 / n_value
        rejected = np.zeros(s1.shape)          # invariant: rejected at `rejected` (or it is 0) ...
        accepted = mean.copy()                 # ... and not rejected at `accepted`
        rejects_zero = _rejects(s1, s2, n_value, np.zeros(s1.shape), grid, psi, threshold)
        for _ in range(_BISECTIONS):
            middle = (rejected + accepted) / 2
            hit = _rejects(s1, s2, n_value, middle, grid, psi, threshold)
            rejected = np.where(hit, middle, rejected)
            accepted = np.where(hit, accepted, middle)
        result[rows] = np.where(rejects_zero, rejected, 0.0)
    return result


def _rejects(s1, s2, n, m, grid, psi, threshold) -> np.ndarray:
    """Return whether the mixture of bets on 'the mean exceeds m' reaches exp(threshold)."""
    centred = s1 - n * m
    spread = s2 - 2 * m * s1 + n * m * m
    logs = grid[None, :] * centred[:, None] - psi[None, :] * spread[:, None]
    top = logs.max(axis=1)
    mixture = top + np.log(np.mean(np.exp(logs - top[:, None]), axis=1))
    return mixture >= threshold
