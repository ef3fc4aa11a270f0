"""Recompute a survey's estimates from its two exports alone: responses.csv and codebook.json.

Usage:
    python aggregates.py responses.csv codebook.json [LEVEL] > aggregates.csv

Writes the columns of the aggregates CSV (question, option, kind, mechanism, epsilon, n,
noisy_share, estimate, std_error, ci_low, ci_high, ci_level, ci_kind, ci_planned), one row per
estimand of the codebook, numbers at full precision, with the intervals valid at the planned
end (ci_kind "fixed"); not the consistent view of a single choice (consistent, consistent_low,
consistent_high), which the codebook's method states. Needs pandas (with numpy) and scipy; nothing of
ldp-survey.
"""

import json
import math
import sys
from fractions import Fraction

import numpy as np
import pandas as pd
from scipy.stats import beta

HEADER = ["question", "option", "kind", "mechanism", "epsilon", "n", "noisy_share", "estimate", "std_error",
          "ci_low", "ci_high", "ci_level", "ci_kind", "ci_planned"]


# The bounded-mean interval's constants (survey.core.bounded_mean): the largest bet on the [0, 1] scale,
# the ratio between neighbouring bets, and the bisection steps that find each end.
LARGEST_BET = 64.0
BET_FACTOR = 2.0
BISECTIONS = 44


def clip(value, low, high):
    return min(max(value, low), high)


def inside(low, high):
    """Clip [low, high] to [0, 1]; an interval wholly beyond an end is moved inside keeping its width (never a point).

    Such an interval misses every feasible value already, so moving it changes no coverage.
    """
    width = min(high - low, 1.0)
    if low >= 1.0:
        return 1.0 - width, 1.0
    if high <= 0.0:
        return 0.0, width
    return clip(low, 0.0, 1.0), clip(high, 0.0, 1.0)


def indicator_row(cells, estimand, level):
    """An estimand that is one indicator: the share a of reports equal to `value`, debiased by (a - q)/(p - q).

    The interval is Clopper-Pearson on the count, at level 1 - (1 - level)/simultaneous_over
    (Bonferroni over a question's options), mapped the same way and moved inside [0, 1] (`inside`);
    the standard error is taken at a clipped to [min(p, q), max(p, q)], so that it is never a false 0.
    """
    n = len(cells)
    p, q = estimand["p"], estimand["q"]
    lo, hi = estimand["scale"] or (0, 1)
    width, spread = hi - lo, p - q
    if n == 0:
        return dict(n=0, noisy_share=None, estimate=None, std_error=None, ci_low=lo, ci_high=hi)
    ones = int((cells == estimand["value"]).sum())
    share = ones / n
    alpha = (1 - level) / estimand["simultaneous_over"]
    share_low = 0.0 if ones == 0 else beta.ppf(alpha / 2, ones, n - ones + 1)
    share_high = 1.0 if ones == n else beta.ppf(1 - alpha / 2, ones + 1, n - ones)
    # The standard error at the share clipped to [min(p, q), max(p, q)], where every possible share lies.
    feasible = clip(share, min(p, q), max(p, q))
    std_error = width * math.sqrt(feasible * (1 - feasible) / (n - 1)) / abs(spread) if n > 1 else None
    low, high = inside(*sorted([(share_low - q) / spread, (share_high - q) / spread]))  # swapped when p < q
    return dict(n=n, noisy_share=share, estimate=lo + width * (share - q) / spread, std_error=std_error,
                ci_low=lo + width * low, ci_high=lo + width * high)


def bets(n, threshold, least, most):
    """The fixed grid of bets for n values in [0, 1] whose variance lies in [least, most], chosen before the data."""
    smallest = math.sqrt(2 * threshold / (n * most))
    largest = LARGEST_BET if least <= 0 else math.sqrt(2 * threshold / (n * least))
    largest = max(min(largest, LARGEST_BET), smallest)
    steps = max(1, math.ceil(math.log(largest / smallest) / math.log(BET_FACTOR) - 1e-9) + 1)
    return np.geomspace(smallest, largest, steps)


def rejects(m, top, weight, n, grid, threshold):
    """Whether the bets' average wealth against 'the mean is at most m' reaches exp(threshold) = 2/alpha.

    Each bet's log-wealth is bounded below by its value at the two-point law {0 w.p. 1 - w, top w.p. w}
    with the data's n, sum and sum of squares; a bet with bet * m >= 1 counts as zero wealth.
    """
    allowed = grid[grid * m < 1.0]
    if allowed.size == 0:
        return False
    gain = np.log1p(allowed * (top - m))
    loss = np.log1p(-allowed * m) if weight < 1 else 0.0
    logs = n * (weight * gain + (1 - weight) * loss)
    peak = logs.max()
    return peak + math.log(np.exp(logs - peak).sum() / grid.size) >= threshold


def lower_end(total, squares, n, threshold, least, most):
    """The largest mean m in [0, total/n] that the test rejects (0 when it rejects none): the interval's lower end."""
    grid = bets(n, threshold, least, most)
    top = squares / total if squares > 0 else 0.0               # the two-point law's upper point ...
    weight = total * total / (n * squares) if squares > 0 else 0.0  # ... and its weight
    if not rejects(0.0, top, weight, n, grid, threshold):
        return 0.0
    rejected, accepted = 0.0, total / n
    for _ in range(BISECTIONS):
        middle = (rejected + accepted) / 2
        if rejects(middle, top, weight, n, grid, threshold):
            rejected = middle
        else:
            accepted = middle
    return rejected


def mean_interval(values, low, high, level, variance):
    """The interval for the mean of values in [low, high], valid at every n (survey.core.bounded_mean).

    A test by betting: the values are rescaled to u in [0, 1]; the lower end is the test on u, the
    upper end the same test on 1 - u, each at alpha/2. `variance`, the (least, most) variance of one
    value known before the data, only places the bets.
    """
    n, width = len(values), high - low
    units = (values - low) / width
    total = clip(float(units.sum()), 0.0, n)
    squares = clip(float((units * units).sum()), total * total / n, total)
    threshold = math.log(2 / (1 - level))
    most = min(max(variance[1] / width ** 2, 1e-12), 0.25)
    least = min(variance[0] / width ** 2, most)
    lower = lower_end(total, squares, n, threshold, least, most)
    upper = 1 - lower_end(n - total, max(n - 2 * total + squares, 0.0), n, threshold, least, most)
    return low + width * lower, low + width * upper


def level_row(cells, estimand, level):
    """A number reported as a level (piecewise, hybrid, opm): the mean of the reported levels' values R.

    R has mean q + (p - q)x for the answer x scaled to [0, 1], so x is estimated by (mean R - q)/(p - q);
    the standard error uses the sample variance of R raised to the least variance of one report; the
    interval is `mean_interval` on R over report_range, mapped the same way and moved inside [0, 1].
    """
    n = len(cells)
    p, q = estimand["p"], estimand["q"]
    lo, hi = estimand["scale"]
    width, spread = hi - lo, p - q
    if "level_values" in estimand:  # hybrid: each level's value is listed
        values = [float(Fraction(value)) for value in estimand["level_values"]]
        levels = cells.map(lambda cell: values[int(cell)])
    else:  # piecewise and opm: R = (k + 1/2)/levels
        levels = (cells + 0.5) / estimand["levels"]
    if n == 0:
        return dict(n=0, noisy_share=None, estimate=None, std_error=None, ci_low=lo, ci_high=hi)
    least, most = estimand["report_variance"]
    mean = float(levels.mean())
    unit = (mean - q) / spread
    std_error = width * math.sqrt(max(float(levels.var(ddof=1)), least) / n) / spread if n > 1 else None
    r_low, r_high = (float(Fraction(value)) for value in estimand["report_range"])
    ci_r_low, ci_r_high = mean_interval(levels.to_numpy(dtype=float), r_low, r_high, level, (least, most))
    low, high = inside((ci_r_low - q) / spread, (ci_r_high - q) / spread)
    return dict(n=n, noisy_share=mean, estimate=lo + width * unit, std_error=std_error,
                ci_low=lo + width * low, ci_high=lo + width * high)


def aggregates(responses: pd.DataFrame, book: dict, level: float = 0.95) -> pd.DataFrame:
    """Return the estimates of every estimand in the codebook, as the aggregates CSV has them."""
    columns = {column["question"]: column for column in book["columns"]}
    rows = []
    for estimand in book["estimands"]:
        cells = responses[estimand["column"]].dropna()  # an empty cell: a question not asked
        compute = level_row if estimand["value"] is None else indicator_row
        question = columns[estimand["question"]]
        rows.append(dict(question=estimand["question"], option=estimand["option"], kind=question["kind"],
                         mechanism=question["mechanism"], epsilon=question["epsilon"],
                         **compute(cells, estimand, level), ci_level=level, ci_kind="fixed", ci_planned=None))
    return pd.DataFrame(rows, columns=HEADER)


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    with open(sys.argv[2], encoding="utf-8") as handle:
        codebook = json.load(handle)
    reports = pd.read_csv(sys.argv[1], dtype={"response_id": str})
    estimates = aggregates(reports, codebook, float(sys.argv[3]) if len(sys.argv) == 4 else 0.95)
    estimates.to_csv(sys.stdout, index=False, float_format="%.17g", lineterminator="\n")
