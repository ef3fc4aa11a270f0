"""Number covariates of a regression: exact numbers entered linearly, randomized ones by regression calibration.

An *exact* covariate (a column asked directly, as R ``rr``'s direct covariates) enters as given: a
number linearly, a category as indicators. With a randomized yes/no outcome whose report has the
known likelihood L(o | y), the conditional likelihood of the reports given the covariates x is

    ℓ(β) = Σ_i log[L(o_i | 0) + (L(o_i | 1) − L(o_i | 0))·σ(x_iβ)]

(Scheers & Dayton 1988; Blair, Imai & Zhou 2015), maximised by damped Newton steps on the analytic
Hessian with the number columns centred and scaled for the fit, and reported per unit of the
original scale; standard errors come from the observed information.

A *randomized* covariate (a number answered through Duchi's, a piecewise, … mechanism, or a
yes/no answer) has a per-report unbiased value W with E[W | X] = X and a per-report variance
v(X) the mechanism states (``variance_at``), a quadratic a + bX + cX² (fitted by least squares
over the answers' range where it is only piecewise quadratic; the largest relative misfit is
reported). Regression calibration (Carroll, Ruppert, Stefanski & Crainiceanu, *Measurement Error
in Nonlinear Models*, 2nd ed. 2006, ch. 4) replaces X by its best linear prediction from all the
covariates' values,

    X̂ = μ + Σ_X Σ_W⁻¹ (W − μ),  Σ_X = Σ_W − diag(E v(X)),  E v(X) = a + bμ + c·E[X²],
    E[X²] = (E[W²] − a − bμ)/(1 + c),

the noise of different questions being independent; exact columns have v = 0 and predict
themselves. The outcome model is then fitted on X̂: logistic as above for a yes/no outcome, least
squares on the unbiased values for a number's mean. Standard errors are sandwich ones from the
stacked estimating equations of the moments (μ, E[WWᵀ]) and of the outcome model (Carroll et al.
2006, appendix B.6), so they include the calibration's uncertainty. Regression calibration is
consistent for a linear model; for a logistic one it is an approximation that holds while
β²·Var(X | W) is small and biases β toward zero beyond (Carroll et al. 2006, §4.8).
Pure: no I/O.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from scipy.special import chdtrc, expit, ndtr, ndtri

from .mean_model import MeanModel, MeanTerm, unbiased_values, without_point_errors
from .regression import BOUNDARY_COEFFICIENT, FLAT_CONDITION, Regression, RegressionError, Term, jacobian

# Where the quadratic through a mechanism's per-report variance misses it by more than this share, say so.
QUADRATIC_MISFIT = 0.01
# Where 1 + c (the quadratic's X² coefficient) is below this, E[W²] does not depend on E[X²]: no spread is seen.
SPREAD_BLIND = 1e-6
# At most this many true answers of a number's range are used to fit the quadratic of its variance.
VARIANCE_GRID = 401

EXACT_METHOD = ("exact covariates entered as given (numbers linearly, fitted centred and scaled, reported per "
                "unit); maximum likelihood with the outcome's known misclassification; standard errors from the "
                "observed information")
CALIBRATION_METHOD = ("regression calibration (Carroll, Ruppert, Stefanski & Crainiceanu 2006, ch. 4): each "
                      "randomized covariate replaced by its best linear prediction from the reports, through its "
                      "mechanism's known noise variance; sandwich standard errors of the stacked estimating "
                      "equations, which include the calibration's uncertainty")
LOGISTIC_CAVEAT = ("regression calibration is an approximation for a logistic regression: it holds while a "
                   "coefficient times the spread of the true number given its report is small, and biases the "
                   "coefficient toward zero beyond")


@dataclass(frozen=True)
class Column:
    """One covariate column: its term name, each pattern's value, and the quadratic (a, b, c) of the per-report
    variance of that value given the true one (None when exact); ``number`` says a term per unit."""

    term: str
    values: np.ndarray
    noise: tuple[float, float, float] | None = None
    number: bool = True
    misfit: float = 0.0


@dataclass(frozen=True)
class NumberRegression(Regression):
    """A logistic regression with a number covariate: the method in words and the per-unit terms."""

    method: str = ""
    test: str = "likelihood-ratio"
    per_unit: tuple[str, ...] = ()


@dataclass(frozen=True)
class NumberMeanModel(MeanModel):
    """A model of a number's mean with a number covariate: the method in words and the per-unit terms."""

    method: str = ""
    per_unit: tuple[str, ...] = ()


def noise_quadratic(variances: np.ndarray, truths: np.ndarray) -> tuple[tuple[float, float, float], float]:
    """Return the least-squares quadratic (a, b, c) through per-report variances at true values, and its largest
    relative misfit (a straight line through two truths)."""
    degree = min(2, len(truths) - 1)
    coefficients = np.polynomial.polynomial.polyfit(truths, variances, degree)
    coefficients = np.concatenate([coefficients, np.zeros(3 - len(coefficients))])
    fitted = np.polynomial.polynomial.polyval(truths, coefficients)
    misfit = float(np.max(np.abs(fitted - variances)) / max(float(np.max(np.abs(variances))), 1e-300))
    return (float(coefficients[0]), float(coefficients[1]), float(coefficients[2])), misfit


@functools.cache
def _noise_of(mechanism, lo: int, hi: int) -> tuple[tuple[float, float, float], float]:
    """Return the quadratic of a mechanism's per-report variance over lo..hi (at most VARIANCE_GRID answers)."""
    steps = np.unique(np.rint(np.linspace(0, hi - lo, min(VARIANCE_GRID, hi - lo + 1))).astype(np.int64))
    variances = np.array([mechanism.variance_at(Fraction(int(k), hi - lo)) for k in steps]) * (hi - lo) ** 2
    return noise_quadratic(variances, lo + steps.astype(float))


def number_noise(question: dict) -> tuple[tuple[float, float, float], float]:
    """Return the quadratic (a, b, c) of a number question's per-report variance in its answer, and its misfit."""
    from .mechanisms import mechanism_for

    return _noise_of(mechanism_for(question), int(question["min"]), int(question["max"]))


def number_covariate_problem(question: dict) -> str | None:
    """Return why a randomized number question cannot be a calibrated covariate, or None when it can."""
    from .mechanisms import mechanism_for

    if 1 + number_noise(question)[0][2] >= SPREAD_BLIND:
        return None
    return (f"{question['id']!r} is answered by {mechanism_for(question).title}, whose reports carry the number's "
            "mean but not its spread (the square of a report is the same for every answer), and a number covariate "
            "needs its spread; it can be an outcome")


def question_column(question: dict, reports) -> Column:
    """Return a randomized number or yes/no question as a calibrated column: unbiased values and their noise."""
    from .mechanisms import BIT, mechanism_for

    mechanism = mechanism_for(question)
    reports = np.asarray(reports, dtype=np.int64).reshape(-1)
    if question["kind"] == "number":
        noise, misfit = number_noise(question)
        problem = number_covariate_problem(question)
        if problem:
            raise RegressionError(problem)
        return Column(question["id"], unbiased_values(question, reports), noise, True, misfit)
    if question["kind"] == "yes_no" and mechanism.report == BIT:
        p, q = mechanism.response_probabilities()
        variances = np.array([mechanism.variance_at(0), mechanism.variance_at(1)])
        noise, _ = noise_quadratic(variances, np.array([0.0, 1.0]))
        return Column(f"{question['id']}: yes", (reports - q) / (p - q), noise, False)
    raise RegressionError(f"{question['id']!r} is a {question['kind'].replace('_', '/')} question: beside a number "
                          "covariate only yes/no and number questions can enter, because their reports have a known "
                          "unbiased value and noise variance")


def exact_columns(name: str, cells: np.ndarray, *, number: bool) -> list[Column]:
    """Return an exact column as one number column, or as indicators of its categories after the first (sorted)."""
    if number:
        try:
            values = cells.astype(float)
        except ValueError:
            bad = next(cell for cell in cells.tolist() if not _is_float(cell))
            raise RegressionError(f"{name!r} is a number column, but holds {bad[:40]!r}") from None
        if not np.all(np.isfinite(values)):
            raise RegressionError(f"{name!r} is a number column, but holds a value that is not finite")
        return [Column(name, values)]
    labels = sorted(set(cells.tolist()), key=_natural)
    return [Column(f"{name}: {label}", (cells == label).astype(float), None, False) for label in labels[1:]]


def _is_float(text: str) -> bool:
    """Return whether a cell reads as a finite number."""
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def _natural(label: str):
    """Sort numbers as numbers and before words, so that 0 is the reference category of a 0/1 column."""
    try:
        return (0, float(label), "")
    except ValueError:
        return (1, 0.0, label)


class _Calibration:
    """The moments (μ, vech E[WWᵀ]) of the covariate columns and the best linear prediction of their true values."""

    def __init__(self, columns: list[Column]):
        self.k = len(columns)
        self.values = np.column_stack([column.values for column in columns])
        noise = [column.noise or (0.0, 0.0, 0.0) for column in columns]
        self.a, self.b, self.c = (np.array(part) for part in zip(*noise))
        self.noisy = np.array([column.noise is not None for column in columns])
        self.rows, self.cols = np.triu_indices(self.k)

    def moments(self, counts: np.ndarray) -> np.ndarray:
        """Return (μ, vech E[WWᵀ]) of the columns over the patterns' counts."""
        mean = counts @ self.values / counts.sum()
        second = (self.values.T * counts) @ self.values / counts.sum()
        return np.concatenate([mean, second[self.rows, self.cols]])

    def equations(self, theta: np.ndarray) -> np.ndarray:
        """Return each pattern's moment equations: W − μ and vech(WWᵀ) − vech(M)."""
        mean, second = theta[:self.k], theta[self.k:]
        products = self.values[:, self.rows] * self.values[:, self.cols]
        return np.column_stack([self.values - mean, products - second])

    def predicted(self, theta: np.ndarray, *, check: bool = False) -> np.ndarray:
        """Return X̂ = μ + Σ_X Σ_W⁻¹ (W − μ) for every pattern (RegressionError when Σ_X is not positive)."""
        mean = theta[:self.k]
        second = np.zeros((self.k, self.k))
        second[self.rows, self.cols] = theta[self.k:]
        second = second + np.triu(second, 1).T
        spread = second - np.outer(mean, mean)
        true_square = (np.diag(second) - self.a - self.b * mean) / (1 + self.c)
        noise = np.where(self.noisy, np.diag(second) - true_square, 0.0)
        truth = spread - np.diag(noise)
        if check:
            self._check(truth)
        return mean + (self.values - mean) @ np.linalg.solve(spread, truth).T

    def _check(self, truth: np.ndarray) -> None:
        """Refuse a calibration whose true covariance is not positive: the noise swamps the spread."""
        if np.any(np.diag(truth) <= 0) or np.linalg.eigvalsh(truth).min() <= 0:
            raise RegressionError("the reports' spread is no larger than the noise the mechanism adds, so the true "
                                  "answers' spread cannot be told from it: gather more responses")


def _logistic_parts(eta: np.ndarray, outcome: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return each pattern's log-likelihood and its first and second derivatives in η."""
    yes = expit(eta)
    slope = outcome[:, 1] - outcome[:, 0]
    total = outcome[:, 0] + slope * yes
    with np.errstate(divide="ignore"):
        value = np.log(total)
    first = slope * yes * (1 - yes) / total
    second = slope * yes * (1 - yes) * (1 - 2 * yes) / total - first ** 2
    return value, first, second


def _fit_logistic(design: np.ndarray, outcome: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, float, bool]:
    """Maximise the conditional log-likelihood by damped Newton steps on centred, scaled columns; return β per unit."""
    centre = counts @ design / counts.sum()
    centre[0] = 0.0
    scale = np.sqrt(counts @ (design - centre) ** 2 / counts.sum())
    scale[0] = 1.0
    scale[scale == 0] = 1.0
    scaled = (design - centre) / scale
    beta = np.zeros(design.shape[1])

    def evaluate(point):
        value, first, second = _logistic_parts(scaled @ point, outcome)
        return float(counts @ value), scaled.T @ (counts * first), (scaled.T * (counts * second)) @ scaled

    value, gradient, hessian = evaluate(beta)
    damping = 0.0
    for _ in range(200):
        information = -hessian + damping * np.eye(len(beta))
        try:
            step = np.linalg.solve(information, gradient)
        except np.linalg.LinAlgError:
            step = None
        trial = beta + step if step is not None and np.all(np.isfinite(step)) else beta
        trial_value = evaluate(trial)[0] if step is not None else -math.inf
        if step is not None and np.all(np.linalg.eigvalsh(information) > 0) and trial_value >= value - 1e-12:
            beta, damping = trial, damping / 10
            value, gradient, hessian = evaluate(beta)
            if np.max(np.abs(step)) < 1e-11:
                break
        else:
            damping = max(10 * damping, 1e-3 * max(1.0, float(np.max(np.abs(hessian)))))
    converged = bool(np.max(np.abs(gradient)) <= 1e-6 * max(1.0, counts.sum() ** 0.5))
    boundary = bool(np.any(np.abs(beta) > BOUNDARY_COEFFICIENT))
    per_unit = beta / scale
    per_unit[0] = beta[0] - float(per_unit[1:] @ centre[1:])
    return per_unit, value, converged and not boundary


def _logistic_value(design: np.ndarray, outcome: np.ndarray, counts: np.ndarray, beta: np.ndarray):
    """Return the log-likelihood, gradient and Hessian at β (per unit)."""
    value, first, second = _logistic_parts(design @ beta, outcome)
    return float(counts @ value), design.T @ (counts * first), (design.T * (counts * second)) @ design


def _check_size(n: int, dims: int, names: str) -> None:
    """Refuse a model with no more responses than coefficients and one."""
    if n <= dims + 1:
        raise RegressionError(f"{n} responses answered all of {names}: too few for a model with {dims} coefficients")


def _design(predicted: np.ndarray) -> np.ndarray:
    """Return the design matrix: an intercept, then the (predicted) covariate columns."""
    return np.column_stack([np.ones(len(predicted)), predicted])


def _terms_logistic(names, beta, errors, level) -> tuple[Term, ...]:
    """Return the logistic terms: log odds, its error, Wald z and p, the odds ratio and its interval."""
    z_level = float(ndtri(0.5 + level / 2))
    terms = []
    for name, estimate, error in zip(names, beta, errors):
        z = estimate / error if error > 0 else math.nan
        terms.append(Term(term=name, estimate=float(estimate), std_error=float(error), z=float(z),
                          p_value=float(2 * ndtr(-abs(z))) if math.isfinite(z) else math.nan,
                          odds_ratio=_odds(estimate), ci_low=_odds(estimate - z_level * error),
                          ci_high=_odds(estimate + z_level * error)))
    return tuple(terms)


def _odds(log_odds: float) -> float:
    """Return e^x, capped at e^700 (a boundary estimate gives a huge odds ratio, not an overflow); NaN stays."""
    return float(math.exp(min(log_odds, 700))) if math.isfinite(log_odds) else math.nan


def _errors(covariance: np.ndarray, warnings: list[str]) -> np.ndarray:
    """Return the square roots of a covariance's diagonal (NaN where it is not positive)."""
    variances = np.diag(covariance)
    if np.any(~np.isfinite(variances)) or np.any(variances <= 0):
        warnings.append("some standard errors could not be computed: the data cannot tell some coefficients apart")
    return np.sqrt(np.where(np.isfinite(variances) & (variances > 0), variances, math.nan))


def _inverse(matrix: np.ndarray, warnings: list[str]) -> np.ndarray:
    """Return the inverse of an information (or bread) matrix, warning when it is nearly singular."""
    try:
        if np.linalg.cond(matrix) > FLAT_CONDITION:
            warnings.append("the likelihood is flat in some direction: the data cannot tell some coefficients "
                            "apart (too few responses, too much noise, or a value nobody holds)")
        return np.linalg.inv(matrix)
    except np.linalg.LinAlgError:
        warnings.append("the information could not be inverted: no standard errors")
        return np.full(matrix.shape, math.nan)


def _sandwich(calibration: _Calibration, score, beta: np.ndarray, counts: np.ndarray,
              warnings: list[str]) -> np.ndarray:
    """Return the covariance of β from the stacked moment and outcome equations (bread⁻¹ meat bread⁻ᵀ)."""
    moments = calibration.moments(counts)

    def stacked(theta):
        head = theta[:len(moments)]
        return np.column_stack([calibration.equations(head),
                                score(_design(calibration.predicted(head)), theta[len(moments):])])

    theta = np.concatenate([moments, beta])
    each = stacked(theta)
    meat = each.T @ (each * counts[:, None])
    bread = jacobian(lambda point: counts @ stacked(point), theta, relative_step=1e-6)
    inverse = _inverse(bread, warnings)
    return (inverse @ meat @ inverse.T)[len(moments):, len(moments):]


def _logistic_score(outcome: np.ndarray):
    """Return the per-pattern score of the logistic model with a randomized outcome, as a function of (X, β)."""
    def score(design: np.ndarray, beta: np.ndarray) -> np.ndarray:
        return design * _logistic_parts(design @ beta, outcome)[1][:, None]
    return score


def _linear_score(values: np.ndarray):
    """Return the per-pattern least-squares equations of a number's unbiased values, as a function of (X, β)."""
    def score(design: np.ndarray, beta: np.ndarray) -> np.ndarray:
        return design * (values - design @ beta)[:, None]
    return score


def _misfit_warnings(columns: list[Column]) -> list[str]:
    """Return a warning for each calibrated column whose noise variance is not close to a quadratic."""
    return [f"the mechanism's per-report variance of {column.term} is not a quadratic in the answer: the "
            f"calibration uses the closest quadratic, off by up to {math.ceil(column.misfit * 1000) / 10:g}%"
            for column in columns if column.noise is not None and column.misfit > QUADRATIC_MISFIT]


def logistic_with_numbers(outcome_name: str, outcome: np.ndarray, columns: list[Column], counts, *,
                          covariates: tuple[str, ...], level: float = 0.95) -> NumberRegression:
    """Fit a yes/no outcome (``outcome``: L(o | no), L(o | yes) per pattern) on columns, exact or calibrated."""
    if not 0.5 <= level < 1:
        raise RegressionError(f"level must be in [0.5, 1), got {level!r}")
    counts = np.asarray(counts, dtype=float).reshape(-1)
    n = int(round(counts.sum()))
    _check_size(n, len(columns) + 1, f"{outcome_name!r} and {', '.join(covariates)}")
    calibration = _Calibration(columns)
    noisy = bool(calibration.noisy.any())
    moments = calibration.moments(counts)
    design = _design(calibration.predicted(moments, check=noisy) if noisy else calibration.values)
    if np.linalg.matrix_rank(design.T * counts @ design) < design.shape[1]:
        raise RegressionError("the covariates cannot be told apart in these data (one is constant, or a mix of "
                              "the others): drop one, or gather more responses")
    beta, value, converged = _fit_logistic(design, outcome, counts)
    null_beta, null_value, _ = _fit_logistic(design[:, :1], outcome, counts)
    warnings = _misfit_warnings(columns)
    if noisy:
        covariance = _sandwich(calibration, _logistic_score(outcome), beta, counts, warnings)
        slopes = beta[1:]
        try:
            statistic = float(slopes @ np.linalg.solve(covariance[1:, 1:], slopes))
        except np.linalg.LinAlgError:
            statistic = math.nan
        test, method = "Wald", f"{CALIBRATION_METHOD}; {LOGISTIC_CAVEAT}"
    else:
        covariance = _inverse(-_logistic_value(design, outcome, counts, beta)[2], warnings)
        statistic, test, method = max(0.0, 2 * (value - null_value)), "likelihood-ratio", EXACT_METHOD
    errors = _errors(covariance, warnings)
    if not converged:
        warnings.append("the maximisation did not converge, or an estimate is on the boundary (some group is "
                        "estimated to answer all yes or all no): treat the estimates with caution")
    df = len(columns)
    p_value = float(chdtrc(df, statistic)) if math.isfinite(statistic) else math.nan
    names = ["(intercept)", *(column.term for column in columns)]
    return NumberRegression(
        outcome=outcome_name, covariates=covariates, n=n, level=level,
        terms=_terms_logistic(names, beta, errors, level), log_likelihood=value, null_log_likelihood=null_value,
        lr_statistic=statistic, lr_df=df, lr_p_value=p_value, converged=converged, warnings=tuple(warnings),
        method=method, test=test, per_unit=tuple(column.term for column in columns if column.number))


def mean_with_numbers(outcome_name: str, values, columns: list[Column], counts, *,
                      covariates: tuple[str, ...], level: float = 0.95) -> NumberMeanModel:
    """Fit a number's mean (each pattern's unbiased value) linearly on columns, exact or calibrated."""
    if not 0.5 <= level < 1:
        raise RegressionError(f"level must be in [0.5, 1), got {level!r}")
    counts = np.asarray(counts, dtype=float).reshape(-1)
    values = np.asarray(values, dtype=float).reshape(-1)
    n = int(round(counts.sum()))
    _check_size(n, len(columns) + 1, f"{outcome_name!r} and {', '.join(covariates)}")
    calibration = _Calibration(columns)
    moments = calibration.moments(counts)
    design = _design(calibration.predicted(moments, check=bool(calibration.noisy.any())))
    gram = design.T * counts @ design
    if np.linalg.matrix_rank(gram) < design.shape[1]:
        raise RegressionError("the covariates cannot be told apart in these data (one is constant, or a mix of "
                              "the others): drop one, or gather more responses")
    gamma = np.linalg.solve(gram, design.T @ (counts * values))
    warnings = _misfit_warnings(columns)
    errors = _errors(_sandwich(calibration, _linear_score(values), gamma, counts, warnings), warnings)
    names = ["(intercept)", *(column.term for column in columns)]
    errors = without_point_errors(errors, names, values, values - design @ gamma, counts, warnings)
    z_level = float(ndtri(0.5 + level / 2))
    terms = []
    for name, estimate, error in zip(names, gamma, errors):
        z = estimate / error if error > 0 else math.nan
        terms.append(MeanTerm(term=name, estimate=float(estimate), std_error=float(error), z=float(z),
                              p_value=float(2 * ndtr(-abs(z))) if math.isfinite(z) else math.nan,
                              ci_low=float(estimate - z_level * error), ci_high=float(estimate + z_level * error)))
    method = CALIBRATION_METHOD if calibration.noisy.any() else "least squares; sandwich standard errors"
    return NumberMeanModel(outcome=outcome_name, covariates=covariates, n=n, level=level, terms=tuple(terms),
                           warnings=tuple(warnings), method=method,
                           per_unit=tuple(column.term for column in columns if column.number))



def binary_column(name: str, yes: np.ndarray, p: float, q: float) -> Column:
    """Return a randomized yes/no item of known (p, q) as a calibrated column: (report − q)/(p − q) and its noise."""
    variances = np.array([lam * (1 - lam) for lam in (q, p)]) / (p - q) ** 2
    noise, _ = noise_quadratic(variances, np.array([0.0, 1.0]))
    return Column(f"{name}: yes", (yes.astype(float) - q) / (p - q), noise, False)


def codebook_regression(names: list[str], columns: dict, estimands: dict, distinct: np.ndarray, counts, *,
                        level: float) -> NumberRegression:
    """Fit a codebook's randomized yes/no item (names[0]) on covariates among which is an exact number.

    ``distinct`` holds the cells of each distinct pattern (one column per name), ``counts`` how
    many rows hold it; randomized yes/no covariates are calibrated, exact ones entered as given.
    """
    p, q = estimands[names[0]]["p"], estimands[names[0]]["q"]
    yes = distinct[:, 0] == "1"
    outcome = np.column_stack([np.where(yes, q, 1 - q), np.where(yes, p, 1 - p)])
    entered = []
    for index, name in enumerate(names[1:], start=1):
        cells = distinct[:, index]
        if columns[name]["kind"] == "yes_no":
            estimand = estimands[name]
            entered.append(binary_column(name, cells == "1", estimand["p"], estimand["q"]))
        else:
            entered += exact_columns(name, cells, number=columns[name]["kind"] == "number")
    return logistic_with_numbers(names[0], outcome, entered, counts, covariates=tuple(names[1:]), level=level)


def fit_question_columns(questions: list[dict], reports: list, counts, *, level: float = 0.95):
    """Fit ``questions[0]`` (yes/no: logistic; number: its mean) on randomized number and yes/no covariates."""
    from .mechanisms import mechanism_for

    outcome, covariates = questions[0], questions[1:]
    columns = [question_column(question, column) for question, column in zip(covariates, reports[1:])]
    names = tuple(question["id"] for question in covariates)
    if outcome["kind"] == "number":
        return mean_with_numbers(outcome["id"], unbiased_values(outcome, reports[0]), columns, counts,
                                 covariates=names, level=level)
    likelihood = mechanism_for(outcome).likelihood(np.asarray(reports[0], dtype=np.int64))
    return logistic_with_numbers(outcome["id"], likelihood, columns, counts, covariates=names, level=level)
