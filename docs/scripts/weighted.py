"""Recompute the weighted estimates of `ldp-survey analyze ... --weights COLUMN` from responses.csv and codebook.json.

Usage:
    python weighted.py responses.csv codebook.json WEIGHT_COLUMN > weighted.csv

For each estimand of the codebook: every report's debiased value z = lo + (R - q)/(p - q)(hi - lo)
(R the report's indicator, or a level's value), the weighted mean of z over the rows that answered
(a ratio, Hajek's estimator), and its standard error by Taylor linearisation with the
with-replacement approximation (Wolter 2007, ch. 6): u = w a (z - estimate)/sum(w a), a = 1 for a
row that answered, and SE^2 = n/(n - 1) sum (u - mean u)^2 over all n rows of the file. Kish's
effective sample size is (sum w)^2/sum w^2 over the rows that answered. Needs pandas (with numpy);
nothing of ldp-survey.
"""

import json
import sys
from fractions import Fraction

import numpy as np
import pandas as pd


def report_values(cells: pd.Series, estimand: dict) -> pd.Series:
    """R of each report: 1 or 0 for an indicator, the level's value for a number reported as a level."""
    if estimand["value"] is not None:
        return (cells == estimand["value"]).astype(float)
    if "level_values" in estimand:  # hybrid: each level's value is listed
        values = [float(Fraction(value)) for value in estimand["level_values"]]
        return cells.map(lambda cell: values[int(cell)])
    return (cells + 0.5) / estimand["levels"]  # piecewise and opm: R = (k + 1/2)/levels


def weighted_row(responses: pd.DataFrame, weights: pd.Series, estimand: dict) -> dict:
    """The weighted estimate of one estimand, its linearised standard error and Kish's effective n."""
    lo, hi = estimand["scale"] or (0, 1)
    p, q = estimand["p"], estimand["q"]
    cells = responses[estimand["column"]]
    answered = cells.notna()  # an empty cell: a question not asked
    z = lo + (report_values(cells[answered], estimand) - q) / (p - q) * (hi - lo)
    w = weights[answered]
    total = w.sum()
    estimate = (w * z).sum() / total
    u = pd.Series(0.0, index=responses.index)
    u[answered] = w * (z - estimate) / total
    n = len(u)
    std_error = np.sqrt(n / (n - 1) * ((u - u.mean()) ** 2).sum())
    return dict(question=estimand["question"], option=estimand["option"], n=int(answered.sum()),
                effective_n=total ** 2 / (w * w).sum(), estimate=estimate, std_error=std_error)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    with open(sys.argv[2], encoding="utf-8") as handle:
        codebook = json.load(handle)
    data = pd.read_csv(sys.argv[1], dtype={"response_id": str})
    rows = [weighted_row(data, data[sys.argv[3]], estimand) for estimand in codebook["estimands"]]
    pd.DataFrame(rows).to_csv(sys.stdout, index=False, float_format="%.17g", lineterminator="\n")
