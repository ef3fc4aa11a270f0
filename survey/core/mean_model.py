"""The mean of a randomized number by randomized categorical covariates, each adjusted for the others.

Every number mechanism's report has an unbiased value ŷ (Duchi's bit, or a piecewise or hybrid
level, mapped back onto [min, max]): E[ŷ | true answer v] = v. With the covariates' true
categories x, their joint distribution π and the model E[v | x] = φ(x)·γ (φ: an intercept and
one indicator per non-reference category), the reports o of the covariates give

    E[ŷ | o] = Σ_x P(x | o) φ(x)·γ,   P(x | o) ∝ π(x) L(o | x),

linear in γ with weights from the known misclassification L (regression calibration, exact
here because the misclassification is known: van den Hout & van der Heijden 2002). So γ is
estimated by least squares of ŷ on the posterior-expected design row, with π the maximum
likelihood estimate from the covariates' reports, and the standard errors come from the
sandwich of the stacked estimating equations of π and γ, so they carry π's uncertainty.
The data enter as counts of distinct (covariate reports, number report) patterns.
Pure: no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import minimize
from scipy.special import ndtr, ndtri  # ndtr(-x) is scipy.stats' norm.sf(x), without importing scipy.stats

from .mechanisms import LEVEL, mechanism_for
from .regression import (EMPTY_CELL, RegressionError, Variable, cells_likelihood, covariate_cells, design_matrix,
                         jacobian)


@dataclass(frozen=True)
class MeanTerm:
    """One coefficient: the reference group's mean (intercept) or a group's difference from it, with its interval."""

    term: str
    estimate: float
    std_error: float
    z: float
    p_value: float
    ci_low: float
    ci_high: float


@dataclass(frozen=True)
class MeanModel:
    """A fitted model of a number's mean: its terms and the warnings a reader must see."""

    outcome: str
    covariates: tuple[str, ...]
    n: int
    level: float
    terms: tuple[MeanTerm, ...]
    warnings: tuple[str, ...] = field(default=())


def unbiased_values(question: dict, reports) -> np.ndarray:
    """Return each number report's unbiased value on [min, max]: E[value | true answer v] = v."""
    mechanism = mechanism_for(question)
    if question["kind"] != "number":
        raise RegressionError(f"{question['id']!r} is not a number question")
    reports = np.asarray(reports, dtype=np.int64).reshape(-1)
    level = mechanism.level_value_array(reports) if mechanism.report == LEVEL else reports.astype(float)
    p, q = mechanism.response_probabilities()
    lo, hi = question["min"], question["max"]
    return lo + (hi - lo) * (level - q) / (p - q)


def _shares(covariate: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Return the maximum likelihood of the covariates' joint distribution from their reports (softmax, BFGS)."""
    cells = covariate.shape[1]

    def negative(alpha):
        shares = _softmax(alpha)
        mixed = covariate @ shares
        posterior = covariate * shares[None, :] / mixed[:, None]
        gradient = counts @ posterior - counts.sum() * shares
        return -float(counts @ np.log(mixed)), -gradient[1:]

    result = minimize(negative, np.zeros(cells - 1), jac=True, method="BFGS", options={"gtol": 1e-10, "maxiter": 5000})
    return result.x


def _softmax(alpha: np.ndarray) -> np.ndarray:
    full = np.concatenate([[0.0], alpha])
    weights = np.exp(full - full.max())
    return weights / weights.sum()


def _equations(theta: np.ndarray, covariate: np.ndarray, phi: np.ndarray, values: np.ndarray,
               kept: np.ndarray) -> np.ndarray:
    """Return each pattern's estimating functions: the score of π's free parameters, then W(o)ᵀ(ŷ − W(o)γ)."""
    free = int(kept.sum())
    alpha = np.full(len(kept), -np.inf)
    alpha[kept] = theta[:free]
    shares = _softmax(np.where(np.isfinite(alpha), alpha, -1e300))
    gamma = theta[free:]
    mixed = covariate @ shares
    posterior = covariate * shares[None, :] / mixed[:, None]
    score = (posterior - shares[None, :])[:, 1:][:, kept]
    weights = posterior @ phi
    residual = values - weights @ gamma
    return np.column_stack([score, weights * residual[:, None]])


def without_point_errors(errors: np.ndarray, names: list[str], values: np.ndarray, residuals: np.ndarray,
                         counts: np.ndarray, warnings: list) -> np.ndarray:
    """Return the standard errors, NaN where the reports show no spread (an interval of width ~0), and say so.

    When the responses sent reports that the model fits exactly (every response in a group sent
    the same report, likely at a large ε or a small n) the sandwich reads no spread and gives
    standard errors of 0 up to round-off: an interval would be a point, which promises no
    coverage. Then no term, or each term whose error is 0 up to round-off, gets a standard error
    or an interval, and a warning says why.
    """
    tiny = 1e-9 * max(1.0, float(np.max(np.abs(values), initial=0.0)))
    spread = math.sqrt(float(counts @ residuals ** 2) / max(float(counts.sum()), 1.0))
    flat = np.isfinite(errors) & ((errors <= tiny) | (spread <= tiny))
    if not flat.any():
        return errors
    shown = [name for name, none in zip(names, flat) if none]
    warnings.append(f"the reports show no spread for {', '.join(shown)} (the model fits them exactly, as when "
                    "the responses all sent the same report): no standard error or interval for them, as one "
                    "would shrink to a point; gather more responses")
    return np.where(flat, math.nan, errors)


def mean_model(outcome: str, values, covariates: list[Variable], counts, *, level: float = 0.95) -> MeanModel:
    """Fit the mean of a number (each pattern's unbiased value in ``values``) by the covariates' true categories."""
    if not 0.5 <= level < 1:
        raise RegressionError(f"level must be in [0.5, 1), got {level!r}")
    if not covariates:
        raise RegressionError("name at least one covariate")
    counts = np.asarray(counts, dtype=float).reshape(-1)
    values = np.asarray(values, dtype=float).reshape(-1)
    n = int(round(counts.sum()))
    cells = covariate_cells(covariates)
    phi, names = design_matrix(cells, covariates)
    if n <= phi.shape[1] + len(cells):
        raise RegressionError(f"{n} responses answered all of {outcome!r} and "
                              f"{', '.join(v.name for v in covariates)}: too few for a model with "
                              f"{phi.shape[1]} coefficients over {len(cells)} combinations of answers")
    covariate = cells_likelihood(covariates, cells)
    alpha = _shares(covariate, counts)
    shares = _softmax(alpha)
    warnings = []
    kept = shares[1:] > EMPTY_CELL
    if not kept.all():
        warnings.append(f"{int((~kept).sum())} combination(s) of the covariates' answers are estimated to be "
                        "held by nobody; the model treats them as empty")
    posterior = covariate * shares[None, :] / (covariate @ shares)[:, None]
    weights = posterior @ phi
    gram = weights.T @ (weights * counts[:, None])
    try:
        gamma = np.linalg.solve(gram, weights.T @ (counts * values))
    except np.linalg.LinAlgError:
        raise RegressionError("the covariates cannot be told apart in these data (their groups are not "
                              "identified): drop one, or gather more responses") from None
    theta = np.concatenate([alpha[kept], gamma])
    stacked = _equations(theta, covariate, phi, values, kept)
    meat = stacked.T @ (stacked * counts[:, None])
    bread = jacobian(lambda point: counts @ _equations(point, covariate, phi, values, kept), theta,
                     relative_step=1e-6)
    errors = np.full(len(gamma), math.nan)
    try:
        inverse = np.linalg.inv(bread)
        covariance = inverse @ meat @ inverse.T
        errors = np.sqrt(np.clip(np.diag(covariance)[-len(gamma):], 0, None))
        if np.linalg.cond(bread) > 1e12:
            warnings.append("the model is nearly unidentified: some coefficients can hardly be told apart")
    except np.linalg.LinAlgError:
        warnings.append("the estimating equations could not be inverted: no standard errors")
    errors = without_point_errors(errors, names, values, values - weights @ gamma, counts, warnings)
    z_level = float(ndtri(0.5 + level / 2))
    terms = []
    for name, estimate, error in zip(names, gamma, errors):
        z = estimate / error if error > 0 else math.nan
        terms.append(MeanTerm(term=name, estimate=float(estimate), std_error=float(error), z=float(z),
                              p_value=float(2 * ndtr(-abs(z))) if math.isfinite(z) else math.nan,
                              ci_low=float(estimate - z_level * error), ci_high=float(estimate + z_level * error)))
    return MeanModel(outcome=outcome, covariates=tuple(v.name for v in covariates), n=n, level=level,
                     terms=tuple(terms), warnings=tuple(warnings))
