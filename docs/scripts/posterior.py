"""Recompute a survey's posterior (credible) intervals from its two exports alone: responses.csv and codebook.json.

Usage:
    python posterior.py responses.csv codebook.json [A B [LEVEL]] > credible.csv

For every estimand the codebook gives as one indicator (a column, the value counted in it, and the
exact p and q), with k of its n non-empty cells equal to the value: the equal-tailed LEVEL (default
0.95) interval of the posterior proportional to x^(A-1) (1-x)^(B-1) lam^k (1-lam)^(n-k),
lam = q + (p - q) x, under the prior Beta(A, B) (default A = B = 1/2, Jeffreys; a single choice's
options take the symmetric Dirichlet(A, ..., A), whose marginal is Beta(A, (d - 1) A)), found with
scipy's adaptive quadrature (the prior's singular ends by QUADPACK's algebraic weight) and Brent's
method; a number's mean is mapped from [0, 1] to its [min, max]. Writes question, option, ci_low,
ci_high, ci_level and ci_kind as `ldp-survey aggregate --intervals posterior --prior A,B` does.
An estimand of a level mechanism (its value is null) is left out: its posterior uses a normal
approximation, which the codebook's method states. Needs pandas and scipy; nothing of ldp-survey.
"""

import csv
import json
import math
import sys

import pandas as pd
from scipy import integrate, optimize


def credible_interval(k, n, p, q, a, b, level):
    """Return the equal-tailed interval of x given k of n reports 1, each 1 with chance q + (p - q)x."""
    def loglik(x):
        lam = q + (p - q) * x
        return k * math.log(lam) + (n - k) * math.log1p(-lam)
    mode = min(max((k / n - q) / (p - q), 0.0), 1.0) if n else 0.5
    lam = q + (p - q) * mode
    spread = math.sqrt(lam * (1 - lam) / max(n, 1)) / abs(p - q)
    peak = loglik(mode)
    breaks = sorted(x for x in (mode + j * spread for j in (-12, -6, -3, -1, 0, 1, 3, 6, 12)) if 1e-3 < x < 1 - 1e-3)

    def piece(left, right):
        options = dict(epsabs=1e-14, epsrel=1e-10, limit=400)
        if left == 0:
            return integrate.quad(lambda x: math.exp((b - 1) * math.log1p(-x) + loglik(x) - peak), left, right,
                                  weight="alg", wvar=(a - 1, 0), **options)[0]
        if right == 1:
            return integrate.quad(lambda x: math.exp((a - 1) * math.log(x) + loglik(x) - peak), left, right,
                                  weight="alg", wvar=(0, b - 1), **options)[0]
        return integrate.quad(lambda x: math.exp((a - 1) * math.log(x) + (b - 1) * math.log1p(-x) + loglik(x) - peak),
                              left, right, **options)[0]

    def mass(start, end):
        edges = [start, *[x for x in breaks if start < x < end], end]
        return sum(piece(left, right) for left, right in zip(edges, edges[1:]) if right > left)
    total = mass(0.0, 1.0)

    def cdf(x):
        return mass(0.0, x) / total if x <= 0.5 else 1 - mass(x, 1.0) / total
    alpha = 1 - level
    return [optimize.brentq(lambda x, share=share: cdf(x) - share, 1e-12, 1 - 1e-9, xtol=1e-14)
            for share in (alpha / 2, 1 - alpha / 2)]


def prior_name(a, b):
    """Return the prior as ci_kind names it: jeffreys, uniform or beta(A,B)."""
    if (a, b) == (0.5, 0.5):
        return "jeffreys"
    if (a, b) == (1.0, 1.0):
        return "uniform"
    return f"beta({a:g},{b:g})"


def main(responses_path, codebook_path, a=0.5, b=0.5, level=0.95):
    """Write one CSV row per indicator estimand of the codebook."""
    book = json.load(open(codebook_path, encoding="utf-8"))
    responses = pd.read_csv(responses_path, dtype=str, keep_default_na=False)
    questions = {question["id"]: question for question in book["design"]["questions"]}
    writer = csv.writer(sys.stdout, lineterminator="\r\n")
    writer.writerow(["question", "option", "ci_low", "ci_high", "ci_level", "ci_kind"])
    for estimand in book["estimands"]:
        if estimand["value"] is None:
            continue
        question = questions[estimand["question"]]
        cells = responses[estimand["column"]]
        cells = cells[cells != ""]
        k, n = int((cells.astype(int) == estimand["value"]).sum()), len(cells)
        share_b = (len(question["options"]) - 1) * a if question["kind"] == "choice" else b
        if n == 0:
            from scipy.stats import beta
            low, high = beta.ppf([(1 - level) / 2, (1 + level) / 2], a, share_b)
        else:
            low, high = credible_interval(k, n, estimand["p"], estimand["q"], a, share_b, level)
        lo, hi = estimand["scale"] or (0, 1)
        writer.writerow([estimand["question"], estimand["option"], repr(lo + (hi - lo) * low),
                         repr(lo + (hi - lo) * high), format(level, "g"), f"posterior-{prior_name(a, b)}"])


if __name__ == "__main__":
    arguments = sys.argv[1:]
    main(arguments[0], arguments[1], *(float(value) for value in arguments[2:5]))
