"""Logistic regression of a randomized yes/no answer on randomized categorical answers, by maximum likelihood.

Every answer is randomized with a known misclassification: P(report | true category) is the
mechanism's ``likelihood``. With y the true yes/no outcome, x the true categories of the
covariates, π(x) their joint distribution and P(y = 1 | x) = logistic(φ(x)·β) (φ: an intercept
and one indicator per non-reference category), the observed reports o have likelihood

    P(o) = Σ_x π(x) · L_x(o) · [L_y(o, 1)·σ(φ(x)β) + L_y(o, 0)·(1 − σ(φ(x)β))],

which for one covariate-free outcome is P(report = 1) = q + (p − q)·σ(β₀) (Scheers & Dayton 1988;
van den Hout, van der Heijden & Gilchrist 2007), and with randomized covariates is maximum
likelihood over the joint table of noisy reports with a known misclassification matrix (van den
Hout & van der Heijden 2002). The data enter only as counts of distinct report patterns, so a
million responses cost as much as the few hundred patterns they hold.

The maximum is found by Newton's method on (β, α) with π = softmax(0, α), using the exact gradient
and Hessian of the pattern log-likelihood (derived in ``_Model._derivatives``), with step halving and,
where the Hessian is not negative definite, a shift of its eigenvalues (Levenberg–Marquardt damping;
Nocedal & Wright 2006, §3.4), until every gradient component is below 1e-10·n; BFGS on the exact gradient takes over only
if that fails. Standard errors come from the observed information, the same exact Hessian at the
maximum, with π's parameters in it (so β's errors account for not knowing π).
The likelihood-ratio test compares the model with the intercept-only one.
Pure: no I/O.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np
# scipy.special's chdtrc and ndtr are what scipy.stats' chi2.sf and norm.sf compute, without importing scipy.stats
# (0.3 s of every command that fits a model).
from scipy.special import chdtrc, expit, ndtr, ndtri

# Above this |β| an odds ratio is past e^12 ≈ 160,000: some group is estimated all yes or all no.
BOUNDARY_COEFFICIENT = 12.0
EMPTY_CELL = 1e-7
FLAT_CONDITION = 1e10
# Past this condition number (1/machine epsilon) the information is singular in floating point: its
# inverse is round-off, so no standard errors are given.
SINGULAR_CONDITION = 1.0 / np.finfo(float).eps


class RegressionError(ValueError):
    """A model that cannot be fitted: the message says why, in the words of the data."""


@dataclass(frozen=True)
class Variable:
    """One categorical variable: its name, the labels of its categories (the first is the reference), and
    P(report | category) for each distinct report pattern (rows) and category (columns)."""

    name: str
    labels: tuple[str, ...]
    likelihood: np.ndarray


@dataclass(frozen=True)
class Term:
    """One coefficient: log odds ratio, its standard error, Wald z and p, and the odds ratio with its interval."""

    term: str
    estimate: float
    std_error: float
    z: float
    p_value: float
    odds_ratio: float
    ci_low: float
    ci_high: float


@dataclass(frozen=True)
class Regression:
    """A fitted model: its terms, fit statistics and the warnings a reader must see."""

    outcome: str
    covariates: tuple[str, ...]
    n: int
    level: float
    terms: tuple[Term, ...]
    log_likelihood: float
    null_log_likelihood: float
    lr_statistic: float
    lr_df: int
    lr_p_value: float
    converged: bool
    warnings: tuple[str, ...] = field(default=())


def covariate_cells(variables: list[Variable]) -> np.ndarray:
    """Return every combination of the covariates' categories, one row each (J × number of covariates)."""
    sizes = [len(variable.labels) for variable in variables]
    return np.array(list(itertools.product(*(range(size) for size in sizes))), dtype=np.int64).reshape(-1, len(sizes))


def cells_likelihood(covariates: list[Variable], cells: np.ndarray) -> np.ndarray:
    """Return P(the covariates' reports of each pattern | each combination of their true categories)."""
    likelihood = np.ones((covariates[0].likelihood.shape[0], len(cells)))
    for index, variable in enumerate(covariates):
        likelihood = likelihood * variable.likelihood[:, cells[:, index]]
    return likelihood


def design_matrix(cells: np.ndarray, variables: list[Variable]) -> tuple[np.ndarray, list[str]]:
    """Return φ(x) for every cell (an intercept and one indicator per non-reference category) and the term names."""
    columns, names = [np.ones(len(cells))], ["(intercept)"]
    for index, variable in enumerate(variables):
        for category in range(1, len(variable.labels)):
            columns.append((cells[:, index] == category).astype(float))
            names.append(f"{variable.name}: {variable.labels[category]}")
    return np.column_stack(columns), names


class _Model:
    """The observed-data log-likelihood of one model with its exact gradient and Hessian, over the pattern counts."""

    def __init__(self, outcome: np.ndarray, covariate: np.ndarray, counts: np.ndarray, phi: np.ndarray):
        self.outcome, self.covariate, self.counts, self.phi = outcome, covariate, counts, phi
        self.dims = phi.shape[1]

    def split(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        beta, alpha = theta[:self.dims], np.concatenate([[0.0], theta[self.dims:]])
        shares = np.exp(alpha - alpha.max())
        return beta, shares / shares.sum()

    def _parts(self, theta: np.ndarray):
        """Return (β, π, σ(φβ), A, T): A[o, x] = π(x) L_x(o) [L_y(o, 1) σ + L_y(o, 0)(1 − σ)], T = Σ_x A, or None if
        some pattern has probability 0."""
        beta, shares = self.split(theta)
        yes = expit(self.phi @ beta)
        mix = self.outcome[:, 1:2] * yes[None, :] + self.outcome[:, 0:1] * (1 - yes)[None, :]
        joint = shares[None, :] * self.covariate * mix
        total = joint.sum(axis=1)
        if np.any(total <= 0):
            return None
        return beta, shares, yes, joint, total

    def value_and_gradient(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        parts = self._parts(theta)
        if parts is None:
            return -math.inf, np.zeros_like(theta)
        value, gradient, _ = self._derivatives(parts, hessian=False)
        return value, gradient

    def derivatives(self, theta: np.ndarray) -> tuple[float, np.ndarray, np.ndarray | None]:
        """Return the log-likelihood, its gradient and its Hessian at θ (−inf, zeros and None where undefined)."""
        parts = self._parts(theta)
        if parts is None:
            return -math.inf, np.zeros_like(theta), None
        return self._derivatives(parts, hessian=True)

    def _derivatives(self, parts, *, hessian: bool):
        """Return ℓ = Σ_o c_o log T_o, its gradient and (if asked) its Hessian, from the per-pattern terms.

        With w = σ(1 − σ), B = π L_x (L_y(·, 1) − L_y(·, 0)) and ∂π_x/∂α_k = π_x(δ_xk − π_k):
        ∂T_o/∂β = Σ_x B_ox w_x φ_x, ∂T_o/∂α_k = A_ok − π_k T_o, and ∇²ℓ = Σ_o c_o (∇²T_o / T_o − ∇T_o ∇T_oᵀ / T_o²),
        whose first sum is written below through r = c / T without forming ∇²T_o per pattern.
        """
        _, shares, yes, joint, total = parts
        counts, phi = self.counts, self.phi
        value = float(counts @ np.log(total))
        weight = counts / total
        slope = shares[None, :] * self.covariate * (self.outcome[:, 1:2] - self.outcome[:, 0:1])
        spread = yes * (1 - yes)
        slope_sum = weight @ slope  # Σ_o r_o B_ox
        posterior_cells = weight @ joint  # expected count of each covariate cell
        n = counts.sum()
        grad_beta = phi.T @ (slope_sum * spread)
        grad_alpha = posterior_cells[1:] - n * shares[1:]
        gradient = np.concatenate([grad_beta, grad_alpha])
        if not hessian:
            return value, gradient, None
        # Each pattern's gradient of T_o, then the outer-product part of the Hessian.
        per_pattern = np.concatenate([(slope * spread[None, :]) @ phi,
                                      joint[:, 1:] - total[:, None] * shares[None, 1:]], axis=1)
        outer = per_pattern.T @ (per_pattern * (weight / total)[:, None])
        beta_beta = phi.T @ (phi * (slope_sum * spread * (1 - 2 * yes))[:, None])
        beta_alpha = phi[1:].T * (slope_sum * spread)[None, 1:] - np.outer(grad_beta, shares[1:])
        a, p = posterior_cells[1:], shares[1:]
        alpha_alpha = np.diag(a - n * p) - np.outer(a, p) - np.outer(p, a) + 2 * n * np.outer(p, p)
        dims = self.dims
        curvature = -outer
        curvature[:dims, :dims] += beta_beta
        curvature[:dims, dims:] += beta_alpha
        curvature[dims:, :dims] += beta_alpha.T
        curvature[dims:, dims:] += alpha_alpha
        return value, gradient, (curvature + curvature.T) / 2


# Newton stops when every component of the gradient is below this share of n (the log-likelihood's scale).
GRADIENT_TOLERANCE = 1e-10
NEWTON_ITERATIONS = 100
HALVINGS = 40


def _newton(model: _Model, start: np.ndarray) -> tuple[np.ndarray, bool]:
    """Maximise by Newton steps on the exact Hessian (damped towards the gradient where it is not negative
    definite), with step halving; return the last point and whether the gradient met the tolerance."""
    theta = start.copy()
    value, gradient, hessian = model.derivatives(theta)
    limit = GRADIENT_TOLERANCE * max(1.0, float(model.counts.sum()))
    for _ in range(NEWTON_ITERATIONS):
        if hessian is None or not np.all(np.isfinite(hessian)) or not np.all(np.isfinite(gradient)):
            return theta, False
        if np.max(np.abs(gradient)) <= limit:
            return theta, True
        step = _ascent_step(hessian, gradient)
        if step is None:
            return theta, False
        for _ in range(HALVINGS):
            trial = theta + step
            trial_value, trial_gradient, trial_hessian = model.derivatives(trial)
            # Near the maximum a step's gain is below the rounding of ℓ itself: accept no worse than that.
            if trial_value >= value - 4 * np.spacing(abs(value)):
                break
            step = step / 2
        else:
            return theta, False
        theta, value, gradient, hessian = trial, trial_value, trial_gradient, trial_hessian
    return theta, bool(np.max(np.abs(gradient)) <= limit)


def _ascent_step(hessian: np.ndarray, gradient: np.ndarray) -> np.ndarray | None:
    """Return the Newton step −H⁻¹g, with −H + μI where −H is not positive definite (μ twice its most negative
    eigenvalue's size, plus 10⁻¹² of its largest): one eigendecomposition, no trial factorisations."""
    try:
        values, vectors = np.linalg.eigh(-hessian)
    except np.linalg.LinAlgError:
        return None
    if not np.all(np.isfinite(values)):
        return None
    floor = 1e-12 * (float(np.max(np.abs(values))) or 1.0)
    if values.min() <= floor:
        values = values + 2 * abs(float(values.min())) + floor
    step = vectors @ ((vectors.T @ gradient) / values)
    return step if np.all(np.isfinite(step)) else None


def _maximise(model: _Model, start: np.ndarray) -> tuple[np.ndarray, float, bool]:
    """Return the maximum likelihood point, the log-likelihood there and whether the fit converged.

    Newton's method on the exact Hessian; only if it fails (a non-finite likelihood, no ascent step, or the
    gradient still above the tolerance after NEWTON_ITERATIONS steps) does BFGS take over from its best point.
    """
    theta, done = _newton(model, start)
    if not done:
        theta = _maximise_bfgs(model, theta if np.isfinite(model.value_and_gradient(theta)[0]) else start)
    value, gradient = model.value_and_gradient(theta)
    converged = bool(np.max(np.abs(gradient)) <= 1e-5 * max(1.0, model.counts.sum() ** 0.5))
    return theta, value, converged


def _maximise_bfgs(model: _Model, start: np.ndarray) -> np.ndarray:
    """Return the maximum by BFGS on the exact gradient, polished with Newton steps (the fallback of _maximise)."""
    from scipy.optimize import minimize  # only here: 0.1 s of import that a Newton fit never needs

    
    def negative(theta):
        value, gradient = model.value_and_gradient(theta)
        return -value, -gradient

    result = minimize(negative, start, jac=True, method="BFGS", options={"gtol": 1e-9, "maxiter": 5000})
    # BFGS stops at its tolerance on the gradient's size, which depends on n: polish with Newton steps
    # until the step is negligible.
    theta = result.x
    for _ in range(20):
        value, gradient, hessian = model.derivatives(theta)
        if hessian is None:
            break
        try:
            step = np.linalg.solve(hessian, -gradient)
        except np.linalg.LinAlgError:
            break
        if not np.all(np.isfinite(step)) or np.max(np.abs(step)) > 1.0:
            break
        trial = theta + step
        if model.value_and_gradient(trial)[0] < value - 1e-9:
            break
        theta = trial
        if np.max(np.abs(step)) < 1e-10:
            break
    return theta


def jacobian(function, theta: np.ndarray, *, relative_step: float) -> np.ndarray:
    """Return the Jacobian of a vector function at ``theta`` by central differences (column j: ∂f/∂θ_j).

    Each step is ``relative_step`` times max(1, |θ_j|).
    """
    columns = []
    for index in range(len(theta)):
        step = relative_step * max(1.0, abs(theta[index]))
        up, down = theta.copy(), theta.copy()
        up[index] += step
        down[index] -= step
        columns.append((function(up) - function(down)) / (2 * step))
    return np.column_stack(columns)


def _hessian(model: _Model, theta: np.ndarray) -> np.ndarray:
    """Return the exact Hessian of the log-likelihood at θ (by central differences of the gradient where the
    likelihood of some pattern is 0 there, which the exact one cannot evaluate)."""
    hessian = model.derivatives(theta)[2]
    if hessian is None:
        hessian = jacobian(lambda point: model.value_and_gradient(point)[1], theta, relative_step=1e-5)
        hessian = (hessian + hessian.T) / 2
    return hessian


def _start(model: _Model) -> np.ndarray:
    """Start at β = (logit of a rough overall share, 0, …) and uniform covariate shares."""
    theta = np.zeros(model.dims + model.covariate.shape[1] - 1)
    counts = model.counts
    reported = float(counts @ model.outcome[:, 1] / counts.sum()) if counts.sum() else 0.5
    theta[0] = float(np.log(np.clip(reported, 0.05, 0.95) / (1 - np.clip(reported, 0.05, 0.95))))
    return theta


def _odds(log_odds: float) -> float:
    """Return e^x, capped at e^700 so that a boundary estimate gives a huge odds ratio, not an overflow; NaN stays."""
    return float(math.exp(min(log_odds, 700))) if math.isfinite(log_odds) else math.nan


def logistic_regression(outcome: Variable, covariates: list[Variable], counts, *, level: float = 0.95) -> Regression:
    """Fit P(outcome = its second category | covariates) by maximum likelihood over the report patterns' counts.

    ``outcome`` has two categories (no, yes); each covariate any number. Every Variable's
    likelihood has one row per pattern, in the order of ``counts``.
    """
    if not 0.5 <= level < 1:
        raise RegressionError(f"level must be in [0.5, 1), got {level!r}")
    if len(outcome.labels) != 2:
        raise RegressionError(f"the outcome {outcome.name!r} must be a yes/no question, not one with "
                              f"{len(outcome.labels)} answers")
    if not covariates:
        raise RegressionError("name at least one covariate")
    counts = np.asarray(counts, dtype=float).reshape(-1)
    for variable in (outcome, *covariates):
        if variable.likelihood.shape != (len(counts), len(variable.labels)):
            raise RegressionError(f"{variable.name!r}: the likelihood has shape {variable.likelihood.shape}, "
                                  f"expected ({len(counts)}, {len(variable.labels)})")
    n = int(round(counts.sum()))
    cells = covariate_cells(covariates)
    phi, names = design_matrix(cells, covariates)
    if n <= phi.shape[1] + len(cells):
        raise RegressionError(f"{n} responses answered all of {outcome.name!r} and "
                              f"{', '.join(v.name for v in covariates)}: too few for a model with "
                              f"{phi.shape[1]} coefficients over {len(cells)} combinations of answers")
    covariate = cells_likelihood(covariates, cells)
    full = _Model(outcome.likelihood, covariate, counts, phi)
    theta, value, converged = _maximise(full, _start(full))
    null = _Model(outcome.likelihood, covariate, counts, phi[:, :1])
    null_start = np.concatenate([theta[:1], theta[full.dims:]])
    null_theta, null_value, _ = _maximise(null, null_start)
    beta, shares = full.split(theta)
    warnings = []
    # Covariate combinations estimated empty sit on the boundary of π: their parameters are left out of
    # the information (fixed there), which keeps β's errors finite and honest.
    kept = np.concatenate([np.ones(full.dims, dtype=bool), shares[1:] > EMPTY_CELL])
    if not kept.all():
        warnings.append(f"{int((~kept).sum())} combination(s) of the covariates' answers are estimated to be "
                        "held by nobody; the model treats them as empty")
    information = -_hessian(full, theta)[np.ix_(kept, kept)]
    std_errors = np.full(full.dims, math.nan)
    try:
        eigen = np.linalg.eigvalsh(information)
        if eigen.min() <= 0 or eigen.max() / eigen.min() > FLAT_CONDITION:
            warnings.append("the likelihood is flat in some direction: the data cannot tell some coefficients "
                            "apart (too few responses, too much noise, or a category nobody holds)")
        if eigen.min() > 0 and eigen.max() / eigen.min() < SINGULAR_CONDITION:
            # Round-off can still leave a variance ≤ 0 near that limit: no standard error there.
            variances = np.diag(np.linalg.inv(information))[:full.dims]
            std_errors = np.sqrt(np.where(variances > 0, variances, math.nan))
    except np.linalg.LinAlgError:
        warnings.append("the observed information could not be inverted: no standard errors")
    if np.any(np.abs(beta) > BOUNDARY_COEFFICIENT):
        warnings.append("an estimate is on the boundary (an odds ratio beyond e^12): some group is estimated "
                        "to answer all yes or all no, and its interval is not reliable")
    if not converged:
        warnings.append("the maximisation did not converge: treat the estimates with caution")
    z_level = float(ndtri(0.5 + level / 2))
    terms = []
    for name, estimate, error in zip(names, beta, std_errors):
        z = estimate / error if error > 0 else math.nan
        terms.append(Term(term=name, estimate=float(estimate), std_error=float(error), z=float(z),
                          p_value=float(2 * ndtr(-abs(z))) if math.isfinite(z) else math.nan,
                          odds_ratio=_odds(estimate),
                          ci_low=_odds(estimate - z_level * error), ci_high=_odds(estimate + z_level * error)))
    statistic = max(0.0, 2 * (value - null_value))
    df = full.dims - 1
    return Regression(outcome=outcome.name, covariates=tuple(v.name for v in covariates), n=n, level=level,
                      terms=tuple(terms), log_likelihood=value, null_log_likelihood=null_value,
                      lr_statistic=statistic, lr_df=df, lr_p_value=float(chdtrc(df, statistic)) if df > 0 else math.nan,
                      converged=converged, warnings=tuple(warnings))


def question_variable(question: dict, reports) -> Variable:
    """Return a yes/no or single-choice design question as a Variable over these wire-format reports."""
    from .mechanisms import mechanism_for

    mechanism = mechanism_for(question)
    if mechanism.categories is None:
        raise RegressionError(f"{question['id']!r} is a {question['kind'].replace('_', '/')} question: only yes/no "
                              "and single-choice questions can enter a regression, because only their true "
                              "answers are categories whose misclassification is known")
    labels = ("no", "yes") if question["kind"] == "yes_no" else tuple(question["options"])
    return Variable(question["id"], labels, mechanism.likelihood(np.asarray(reports, dtype=np.int64)))
