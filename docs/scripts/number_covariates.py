"""Logistic regression of a randomized yes/no item on exact covariates (numbers linearly, categories as
indicators), from a responses file and an `ldp-survey codebook` of another design: the numbers of
`ldp-survey analyze survey.csv regress OUTCOME COVARIATE... --codebook book.json`, written independently.

Usage: python number_covariates.py survey.csv book.json OUTCOME COVARIATE...
Prints CSV: term, estimate (log odds ratio, a number's per unit), std_error (observed information).
Needs pandas and scipy.

The likelihood of each report r given covariates x is P(r = 1 | x) = q + (p - q) * logistic(x'beta) with the
item's p = P(report 1 | true yes) and q = P(report 1 | true no) (Blair, Imai & Zhou 2015).
"""

import json
import sys

import numpy as np
import pandas as pd
from scipy.optimize import minimize
from scipy.special import expit


def natural(label):
    """Numbers first, in order, then words: the first is the reference category."""
    try:
        return (0, float(label), "")
    except ValueError:
        return (1, 0.0, label)


def main(responses, codebook, outcome, *covariates):
    book = json.load(open(codebook, encoding="utf-8"))
    kinds = {column["name"]: column["kind"] for column in book["columns"]}
    item = next(estimand for estimand in book["estimands"] if estimand["column"] == outcome)
    p, q = item["p"], item["q"]
    data = pd.read_csv(responses, dtype=str, keep_default_na=False)
    data = data[(data[[outcome, *covariates]] != "").all(axis=1)]
    y = data[outcome].astype(int).to_numpy()
    columns, terms = [np.ones(len(data))], ["(intercept)"]
    for name in covariates:
        if kinds[name] == "number":
            columns.append(data[name].astype(float).to_numpy())
            terms.append(name)
        elif kinds[name] == "category":
            labels = sorted(data[name].unique(), key=natural)
            for label in labels[1:]:
                columns.append((data[name] == label).to_numpy(dtype=float))
                terms.append(f"{name}: {label}")
        else:
            sys.exit(f"{name} is randomized: beside a number, it needs regression calibration (ldp-survey does it)")
    design = np.column_stack(columns)
    # Fit on centred, scaled columns (the same model, better conditioned), then map back per unit.
    centre = np.r_[0.0, design[:, 1:].mean(axis=0)]
    scale = np.r_[1.0, design[:, 1:].std(axis=0)]
    scaled = (design - centre) / scale

    def minus_log_likelihood(beta):
        share = q + (p - q) * expit(scaled @ beta)
        return -np.sum(np.where(y == 1, np.log(share), np.log1p(-share)))

    def minus_gradient(beta):
        yes = expit(scaled @ beta)
        share = q + (p - q) * yes
        slope = (p - q) * yes * (1 - yes)
        return -scaled.T @ np.where(y == 1, slope / share, -slope / (1 - share))

    def hessian(beta):  # central differences of the gradient
        steps = 1e-5 * np.eye(len(beta))
        rows = [(minus_gradient(beta + h) - minus_gradient(beta - h)) / 2e-5 for h in steps]
        matrix = np.array(rows)
        return (matrix + matrix.T) / 2

    beta = minimize(minus_log_likelihood, np.zeros(design.shape[1]), jac=minus_gradient, method="BFGS",
                    options={"gtol": 1e-10}).x
    for _ in range(20):  # Newton steps polish BFGS's answer
        move = np.linalg.solve(hessian(beta), minus_gradient(beta))
        beta = beta - move
        if np.max(np.abs(move)) < 1e-12:
            break
    covariance = np.linalg.inv(hessian(beta))
    back = np.diag(1 / scale)  # per unit: beta_j / scale_j, the intercept less each slope times its centre
    back[0, 1:] = -centre[1:] / scale[1:]
    estimate = back @ beta
    std_error = np.sqrt(np.diag(back @ covariance @ back.T))
    print("term,estimate,std_error")
    for term, value, error in zip(terms, estimate, std_error):
        print(f"{term},{value:.12g},{error:.12g}")


if __name__ == "__main__":
    main(*sys.argv[1:])
