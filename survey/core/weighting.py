"""Weighted estimates of randomized reports: design weights, linearised standard errors, calibration to margins.

Every estimate of the product is linear in its reports: a report's *debiased value*
z = lo + (R − q)/(p − q)·(hi − lo) (R the report's indicator, or a level's value; (p, q) and
[lo, hi] asked of its mechanism) has the estimand as its mean. With design weights w the
estimate is the weighted (Hájek) mean θ̂ = Σ w z / Σ w over the rows that answered, a ratio
of two weighted totals. Its standard error is Taylor-linearised with the with-replacement
approximation of a single-stage design (Wolter, *Introduction to Variance Estimation*, 2nd ed.
2007, ch. 6; Särndal, Swensson & Wretman 1992, §5.6): with u_i = w_i·a_i·(z_i − θ̂)/Σ w a,
a_i = 1 when row i answered, v = n/(n − 1)·Σ (u_i − ū)² over all n rows of the file (a domain
estimate: the rows that skipped a question stay in the sample). With equal weights this is the
unweighted s²/n exactly.

Calibration makes the *debiased* weighted estimate of chosen estimands equal known population
margins m. The debiased estimate is linear in the weighted report indicators, so the constraint
Σ w*_i a_i (z_i − m) = 0 is linear in the calibrated weights w*: generalized raking (Deville &
Särndal, JASA 1992) with the calibration variables c_i = a_i (z_i − m) solves it, by Newton's
method on the convex dual, as w* = w·exp(c·λ) (always positive), or linearly as w* = w·(1 + c·λ)
(closed form; refused when a weight would be negative or zero). The other estimates then use w*;
their linearised standard errors use the residuals of a weighted regression of their linearised
values on c (Deville & Särndal 1992, §3), so a calibrated estimate itself has standard error 0.
Pure: numpy only, no I/O.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from statistics import NormalDist

import numpy as np

from .answer_rows import ReanalysisError

RAKING, LINEAR = "raking", "linear"
METHODS = (RAKING, LINEAR)
SE_METHOD = ("Taylor linearisation of the ratio (Hajek) estimator, with-replacement approximation of a "
             "single-stage design (Wolter 2007, ch. 6)")
ASSUMPTION = ("the standard errors and intervals assume the stated design: one stage, rows drawn independently "
              "(with replacement) with the given weights; strata and clusters are not taken into account")

# A weight as plain decimal text: 2, 0.5, .5, 1e3 (no sign, no spaces, no inf or nan).
WEIGHT = re.compile(r"([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]{1,3})?")
WEIGHT_BYTES = re.compile(WEIGHT.pattern.encode())


def weight_of(cell: str, row: int, column: str) -> float:
    """Return a row's weight from its cell: a positive finite number, or ReanalysisError naming the row."""
    where = f"row {row}, column {column!r}"
    shown = repr(cell) if len(cell) <= 40 else f"{cell[:37]!r}..."
    if cell == "":
        raise ReanalysisError(f"{where}: the weight is missing; every row needs a positive weight")
    if cell.startswith("-") and WEIGHT.fullmatch(cell[1:]):
        raise ReanalysisError(f"{where}: the weight {shown} is negative; weights must be positive numbers")
    if not WEIGHT.fullmatch(cell):
        raise ReanalysisError(f"{where}: the weight {shown} is not a number (write it like 1.25 or 3e2)")
    value = float(cell)
    if not math.isfinite(value):
        raise ReanalysisError(f"{where}: the weight {shown} is too large to compute with")
    if value <= 0:
        raise ReanalysisError(f"{where}: the weight {shown} is zero; weights must be positive numbers "
                              "(leave out a row that should not count)")
    return value


@dataclass(frozen=True)
class Item:
    """One question's debiased values per row of the file: ``values`` (rows, estimands), 0 where not ``present``."""

    question: str
    kind: str
    mechanism: str
    epsilon: float
    text: str
    labels: tuple[str, ...]
    present: np.ndarray
    values: np.ndarray
    feasible: tuple[float, float]
    simultaneous: int


def debiased(raw: np.ndarray, p: float, q: float, feasible: tuple[float, float]) -> np.ndarray:
    """Return the debiased value lo + (R − q)/(p − q)·(hi − lo) of each report value R."""
    lo, hi = feasible
    return lo + (np.asarray(raw, dtype=float) - q) / (p - q) * (hi - lo)


@dataclass(frozen=True)
class Margin:
    """A known population value of one estimand: a share of an option (or "yes"), or a number's mean ("")."""

    question: str
    option: str | None
    value: float


@dataclass
class Weighting:
    """How the estimates were weighted: the column, the calibration, and the weights' summary."""

    column: str | None
    margins: list[Margin] = field(default_factory=list)
    method: str = RAKING
    rows: int = 0
    total: float = 0.0
    effective_n: float = 0.0
    adjustment: tuple[float, float] | None = None

    def as_dict(self) -> dict:
        """Return the weighting as JSON-ready fields (for the output and the codebook)."""
        return {"weights": self.column, "rows": self.rows, "total_weight": self.total,
                "effective_n": self.effective_n,
                "calibration": [{"question": m.question, "option": m.option, "value": m.value} for m in self.margins],
                "calibration_method": (("generalized raking (Deville & Sarndal 1992), exponential distance"
                                        if self.method == RAKING else
                                        "linear calibration (Deville & Sarndal 1992), chi-square distance")
                                       + ", on the reports' debiased values") if self.margins else None,
                "adjustment_range": None if self.adjustment is None else list(self.adjustment),
                "std_error": SE_METHOD, "assumption": ASSUMPTION}


@dataclass
class WeightedRow:
    """One weighted estimate (an aggregate row's fields that a weighted estimate has)."""

    question: str
    option: str | None
    kind: str
    mechanism: str
    epsilon: float
    n: int
    effective_n: float
    estimate: float | None
    std_error: float | None
    ci_low: float
    ci_high: float
    ci_level: float
    calibrated: bool = False
    text: str = ""


def kish(weights: np.ndarray) -> float:
    """Return Kish's effective sample size (Σw)²/Σw² (0 for no rows)."""
    weights = np.asarray(weights, dtype=float)
    if not weights.size:
        return 0.0
    return float(weights.sum() ** 2 / np.dot(weights, weights))


def estimate(weights: np.ndarray, present: np.ndarray, values: np.ndarray,
             calibration: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """Return the weighted estimates of an item's columns and their linearised standard errors (None if n < 2).

    ``calibration`` is the (rows, m) matrix of calibration variables the weights were calibrated on.
    """
    w = np.asarray(weights, dtype=float)
    answered = w * present
    total = answered.sum()
    theta = (answered @ values) / total
    linear = present[:, None] * (values - theta)
    if calibration is not None and calibration.shape[1]:
        gram = calibration.T @ (w[:, None] * calibration)
        slope = np.linalg.lstsq(gram, calibration.T @ (w[:, None] * linear), rcond=1e-12)[0]
        linear = linear - calibration @ slope
    n = w.shape[0]
    if n < 2:
        return theta, None
    scores = w[:, None] * linear / total
    centred = scores - scores.mean(axis=0)
    return theta, np.sqrt(n / (n - 1) * (centred * centred).sum(axis=0))


def weighted_rows(items: list[Item], weights: np.ndarray, *, level: float,
                  calibration: np.ndarray | None = None, calibrated: set = frozenset()) -> list[WeightedRow]:
    """Return one weighted row per estimand, with an interval estimate ± z·SE simultaneous over a question's
    estimands (Bonferroni, as the unweighted ones) and clipped to the feasible range."""
    rows = []
    for item in items:
        n = int(np.count_nonzero(item.present))
        lo, hi = item.feasible
        effective = kish(weights[item.present])
        if n == 0:
            rows += [WeightedRow(item.question, label, item.kind, item.mechanism, item.epsilon, 0, 0.0, None, None,
                                 lo, hi, level, False, item.text) for label in item.labels]
            continue
        theta, errors = estimate(weights, item.present, item.values, calibration)
        z = NormalDist().inv_cdf(1 - (1 - level) / (2 * item.simultaneous))
        for index, label in enumerate(item.labels):
            value = float(theta[index])
            error = None if errors is None else float(errors[index])
            low, high = (lo, hi) if error is None else (value - z * error, value + z * error)
            rows.append(WeightedRow(item.question, label, item.kind, item.mechanism, item.epsilon, n, effective,
                                    value, error, min(max(low, lo), hi), min(max(high, lo), hi), level,
                                    (item.question, label) in calibrated, item.text))
    return rows


def calibration_matrix(items: list[Item], margins: list[Margin]) -> np.ndarray:
    """Return the (rows, margins) calibration variables a_i·(z_i − m), refusing a margin of no estimand."""
    found = {item.question: item for item in items}
    columns = []
    for margin in margins:
        item = found.get(margin.question)
        if item is None:
            raise ReanalysisError(f"cannot calibrate to {margin.question!r}: it is not a question of the codebook; "
                                  f"its questions are {', '.join(found)}")
        if margin.option not in item.labels:
            shown = ", ".join(repr(label) for label in item.labels)
            raise ReanalysisError(f"cannot calibrate {margin.question!r} to option {margin.option!r}: its "
                                  f"estimands are {shown}")
        lo, hi = item.feasible
        if not lo <= margin.value <= hi:
            raise ReanalysisError(f"cannot calibrate to {_shown([margin])}: the value must lie in "
                                  f"[{lo:g}, {hi:g}]")
        column = item.values[:, item.labels.index(margin.option)]
        columns.append(np.where(item.present, column - margin.value, 0.0))
    return np.column_stack(columns) if columns else np.zeros((0, 0))


def _name(margin: Margin) -> str:
    """Return a margin's estimand as --calibrate writes it: question=option, or the question of a number."""
    return f"{margin.question}={margin.option}" if margin.option else margin.question


def _shown(margins: list[Margin]) -> str:
    """Return margins as --calibrate writes them: smoker=yes:0.3, age=40."""
    return ", ".join(f"{_name(m)}:{m.value:g}" if m.option else f"{m.question}={m.value:g}" for m in margins)


def calibrate(weights: np.ndarray, matrix: np.ndarray, margins: list[Margin], *, method: str = RAKING,
              first_row: int = 2) -> np.ndarray:
    """Return weights calibrated so that Σ w*·c = 0 for each column c of ``matrix``, scaled to the same total.

    Raises ReanalysisError saying why when no positive weights can do it.
    """
    if method not in METHODS:
        raise ReanalysisError(f"the calibration method must be one of {', '.join(METHODS)}, got {method!r}")
    _check_reachable(matrix, margins)
    w = np.asarray(weights, dtype=float)
    if method == LINEAR:
        calibrated = _linear(w, matrix, margins, first_row)
    else:
        calibrated = _raking(w, matrix, margins)
    return calibrated * (w.sum() / calibrated.sum())


def _check_reachable(matrix: np.ndarray, margins: list[Margin]) -> None:
    """Refuse a margin that every report's debiased value lies on one side of (no reweighting reaches it)."""
    for index, margin in enumerate(margins):
        column = matrix[:, index]
        low, high = float(column.min()) + margin.value, float(column.max()) + margin.value
        if column.max() <= 0 or column.min() >= 0:
            if not (column == 0).all() or not column.size:
                raise ReanalysisError(
                    f"cannot calibrate to {_shown([margin])}: the debiased values of its reports "
                    f"lie in [{low:.6g}, {high:.6g}], so any positive weighting of them gives an estimate in that "
                    f"range; the margin is outside what these reports allow")


def _linear(w: np.ndarray, matrix: np.ndarray, margins: list[Margin], first_row: int) -> np.ndarray:
    """Return w·(1 + c·λ) meeting the constraints, refusing a weight that would be negative or zero."""
    gram = matrix.T @ (w[:, None] * matrix)
    multipliers = np.linalg.lstsq(gram, -(matrix.T @ w), rcond=1e-12)[0]
    factors = 1 + matrix @ multipliers
    if (factors <= 0).any():
        worst = int(np.argmin(factors))
        raise ReanalysisError(
            f"linear calibration to {_shown(margins)} would give row "
            f"{first_row + worst} the weight factor {factors[worst]:.4g} (negative weights for "
            f"{int(np.count_nonzero(factors <= 0))} rows): the margins are too far from the weighted estimates "
            f"for a linear adjustment; use --calibration-method raking, whose weights are always positive")
    return w * factors


def _raking(w: np.ndarray, matrix: np.ndarray, margins: list[Margin]) -> np.ndarray:
    """Return w·exp(c·λ) with λ minimising Σ w·exp(c·λ) (its gradient is the constraints), by damped Newton."""
    scale = w / w.sum()
    multipliers = np.zeros(matrix.shape[1])
    largest = float(np.abs(matrix).max()) or 1.0
    for _ in range(200):
        factors = np.exp(matrix @ multipliers)
        current = scale * factors
        gradient = matrix.T @ current
        if np.abs(gradient).max() <= 1e-13 * largest * current.sum():
            return w * factors
        hessian = matrix.T @ (current[:, None] * matrix)
        step = np.linalg.lstsq(hessian, -gradient, rcond=1e-12)[0]
        multipliers = _descend(scale, matrix, multipliers, step, current.sum(), float(gradient @ step))
        if multipliers is None and np.abs(gradient).max() <= 1e-10 * largest * current.sum():
            return w * factors  # as near as double precision gets
        if multipliers is None or np.abs(multipliers).max() * largest > 600:
            break
    raise ReanalysisError(
        f"cannot calibrate to {_shown(margins)}: no positive weights make all of these debiased estimates equal their "
        f"margins at once (the margins lie outside, or on the edge of, the combinations the reports' debiased "
        f"values allow, so the weights would have to grow without bound)")


def _descend(scale, matrix, multipliers, step, objective: float, slope: float):
    """Return the multipliers a backtracking (Armijo) step along ``step`` reaches, or None if none descends."""
    size = 1.0
    while size > 1e-12:
        trial = multipliers + size * step
        exponent = matrix @ trial
        # The last term forgives rounding: near the solution the objective no longer changes in double precision.
        if exponent.max() < 700 and (scale * np.exp(exponent)).sum() <= objective * (1 + 1e-15) + 1e-4 * size * slope:
            return trial
        size /= 2
    return None
