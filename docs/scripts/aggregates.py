"""Recompute a survey's estimates from its two exports alone: responses.csv and codebook.json.

Usage:
    python aggregates.py responses.csv codebook.json [LEVEL] > aggregates.csv

Writes the columns of the aggregates CSV (question, option, kind, mechanism, epsilon, n,
noisy_share, estimate, std_error, ci_low, ci_high, ci_level, ci_kind, ci_planned), one row per
estimand of the codebook, numbers at full precision, with the intervals valid at the planned
end (ci_kind "fixed"); not the consistent view of a single choice (consistent, consistent_low,
consistent_high), which the codebook's method states. Needs pandas and scipy; nothing of ldp-survey.
"""

import json
import math
import sys
from fractions import Fraction

import pandas as pd
from scipy.stats import beta, t

HEADER = ["question", "option", "kind", "mechanism", "epsilon", "n", "noisy_share", "estimate", "std_error",
          "ci_low", "ci_high", "ci_level", "ci_kind", "ci_planned"]


def clip(value, low, high):
    return min(max(value, low), high)


def indicator_row(cells, estimand, level):
    """An estimand that is one indicator: the share a of reports equal to `value`, debiased by (a - q)/(p - q).

    The interval is Clopper-Pearson on the count, at level 1 - (1 - level)/simultaneous_over
    (Bonferroni over a question's options), mapped the same way and clipped to [0, 1]; the standard
    error is taken at a clipped to [min(p, q), max(p, q)], so that it is never a false 0.
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
    ends = sorted([(share_low - q) / spread, (share_high - q) / spread])  # swapped when p < q
    return dict(n=n, noisy_share=share, estimate=lo + width * (share - q) / spread, std_error=std_error,
                ci_low=lo + width * clip(ends[0], 0, 1), ci_high=lo + width * clip(ends[1], 0, 1))


def level_row(cells, estimand, level):
    """A number under the piecewise or hybrid mechanism: the mean of the reported levels' values R.

    R has mean q + (p - q)x for the answer x scaled to [0, 1], so x is estimated by
    (mean R - q)/(p - q), with a Student-t interval on n - 1 degrees of freedom.
    """
    n = len(cells)
    p, q = estimand["p"], estimand["q"]
    lo, hi = estimand["scale"]
    width, spread = hi - lo, p - q
    if "level_values" in estimand:  # hybrid: each level's value is listed
        values = [float(Fraction(value)) for value in estimand["level_values"]]
        levels = cells.map(lambda cell: values[int(cell)])
    else:  # piecewise: R = (k + 1/2)/levels
        levels = (cells + 0.5) / estimand["levels"]
    if n == 0:
        return dict(n=0, noisy_share=None, estimate=None, std_error=None, ci_low=lo, ci_high=hi)
    mean = float(levels.mean())
    unit = (mean - q) / spread
    if n < 2:
        return dict(n=n, noisy_share=mean, estimate=lo + width * unit, std_error=None, ci_low=lo, ci_high=hi)
    se_unit = math.sqrt(float(levels.var(ddof=1)) / n) / spread
    half = t.ppf(1 - (1 - level) / 2, n - 1) * se_unit
    return dict(n=n, noisy_share=mean, estimate=lo + width * unit, std_error=width * se_unit,
                ci_low=lo + width * clip(unit - half, 0, 1), ci_high=lo + width * clip(unit + half, 0, 1))


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
