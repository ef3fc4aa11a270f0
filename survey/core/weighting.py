"""Weighted estimates of randomized reports: design weights, linearised standard errors, calibration to margins.

Every estimate of the product is linear in its reports: a report's *debiased value*
z = lo + (R − q)/(p − q)·(hi − lo) (R the report's indicator, or a level's value; (p, q) and
[lo, hi] asked of its mechanism) has the estimand as its mean. With design weights w the
estimate is the weighted (Hájek) mean θ̂ = Σ w z / Σ w over the rows that answered, a ratio
of two weighted totals. Its standard error is Taylor-linearised with the with-replacement
approximation (Wolter, *Introduction to Variance Estimation*, 2nd ed. 2007, ch. 6; Särndal,
Swensson & Wretman 1992, ch. 5): with u_i = w_i·a_i·(z_i − θ̂)/Σ w a, a_i = 1 when row i answered,
v = n/(n − 1)·Σ (u_i − ū)² over all n rows of the file (a domain estimate: the rows that skipped a
question stay in the sample); with equal weights this is the unweighted s²/n exactly. With strata
and clusters (primary sampling units, nested in strata), v = Σ_h n_h/(n_h − 1)·Σ_i (U_hi − Ū_h)²
over the n_h clusters of stratum h, U_hi the sum of u over cluster i (Wolter 2007, ch. 6).

Calibration makes the *debiased* weighted estimate of chosen estimands equal known population
margins m. The debiased estimate is linear in the weighted report indicators, so the constraint
Σ w*_i a_i (z_i − m) = 0 is linear in the calibrated weights w*: generalized raking (Deville &
Särndal, JASA 1992) with the calibration variables c_i = a_i (z_i − m) solves it, by Newton's
method on the convex dual, as w* = w·exp(c·λ) (always positive), or linearly as w* = w·(1 + c·λ)
(closed form; refused when a weight would be negative or zero). The other estimates then use w*;
their linearised standard errors use the residuals of a weighted regression of their linearised
values on c (Deville & Särndal 1992), so a calibrated estimate itself has standard error 0.
Pure: numpy only, no I/O.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Callable

import numpy as np

from .answer_rows import ReanalysisError

RAKING, LINEAR = "raking", "linear"
METHODS = (RAKING, LINEAR)
SE_METHOD = ("Taylor linearisation of the ratio (Hajek) estimator, with-replacement approximation of the "
             "design (Wolter 2007, ch. 6)")
ASSUMPTION = ("the standard errors and intervals assume the stated design: one stage, rows drawn independently "
              "(with replacement) with the given weights, no strata or clusters")


def assumption(strata: str | None, clusters: str | None) -> str:
    """Return the design the standard errors and intervals assume, in words."""
    if strata is None and clusters is None:
        return ASSUMPTION
    units = f"clusters (column {clusters!r})" if clusters else "rows"
    within = f" within strata (column {strata!r}), independently across strata" if strata else ""
    return (f"the standard errors and intervals assume the stated design: {units} drawn independently (with "
            f"replacement){within}, with the given weights; any later stage of sampling is covered by the "
            "with-replacement approximation")


def label_of(cell: str, row: int, column: str, what: str) -> str:
    """Return a row's stratum or cluster label, refusing an empty one with its row."""
    if cell == "":
        raise ReanalysisError(f"row {row}, column {column!r}: the {what} is missing; every row needs one")
    return cell


@dataclass(frozen=True)
class Sampling:
    """The primary sampling units (PSUs) of the rows and their strata: every row its own PSU in one stratum by
    default; clusters are nested in strata (the same label in two strata names two clusters)."""

    psu: np.ndarray
    stratum_of_psu: np.ndarray

    @classmethod
    def of(cls, rows: int, strata: list[str] | None = None, clusters: list[str] | None = None,
           names: tuple[str | None, str | None] = (None, None)) -> Sampling:
        """Return the sampling of ``rows`` rows from their stratum and cluster labels (None: not given)."""
        stratum = np.zeros(rows, dtype=np.int64) if strata is None else np.unique(strata, return_inverse=True)[1]
        if clusters is None:
            psu = np.arange(rows)
        else:
            pairs = np.column_stack([stratum, np.unique(clusters, return_inverse=True)[1]])
            psu = np.unique(pairs, axis=0, return_inverse=True)[1].reshape(-1)
        stratum_of_psu = np.zeros(int(psu.max()) + 1 if rows else 0, dtype=np.int64)
        stratum_of_psu[psu] = stratum
        counts = np.bincount(stratum_of_psu)
        if rows > 1 and (counts == 1).any() and (strata is not None or clusters is not None):
            lonely = int(np.flatnonzero(counts == 1)[0])
            row = int(np.flatnonzero(stratum == lonely)[0])
            unit = "cluster" if clusters is not None else "row"
            if strata is None:
                raise ReanalysisError(f"all the rows are one cluster ({names[1]}): the variance between clusters "
                                      "cannot be estimated from a single one")
            raise ReanalysisError(f"stratum {strata[row]!r} ({names[0]}) has a single {unit} (row {row + 2}): its "
                                  "variance cannot be estimated; merge it with a neighbouring stratum")
        return cls(psu, stratum_of_psu)

    def variance(self, scores: np.ndarray) -> np.ndarray:
        """Return Σ_h n_h/(n_h − 1) Σ_i (U_hi − Ū_h)² of the PSU totals U of the rows' linearised scores."""
        totals = _sums(self.psu, scores, self.stratum_of_psu.size)
        counts = np.bincount(self.stratum_of_psu).astype(float)
        means = _sums(self.stratum_of_psu, totals, counts.size) / counts[:, None]
        centred = totals - means[self.stratum_of_psu]
        factor = counts / (counts - 1)
        return (factor[self.stratum_of_psu][:, None] * centred * centred).sum(axis=0)


def _sums(index: np.ndarray, values: np.ndarray, size: int) -> np.ndarray:
    """Return the column sums of ``values`` grouped by ``index`` (0..size−1)."""
    return np.column_stack([np.bincount(index, weights=values[:, column], minlength=size)
                            for column in range(values.shape[1])]).reshape(size, values.shape[1])


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
    """One question's debiased values per row of the file: ``values`` (rows, estimands), 0 where not ``present``.

    ``stored`` holds them, or, with ``debias``, the reports' compact form that ``debias`` turns into them
    when asked (so a file's rows are held at a few bytes per question, not 8 per estimand).
    """

    question: str
    kind: str
    mechanism: str
    epsilon: float
    text: str
    labels: tuple[str, ...]
    present: np.ndarray
    stored: np.ndarray
    feasible: tuple[float, float]
    simultaneous: int
    debias: Callable[[np.ndarray], np.ndarray] | None = None

    @property
    def values(self) -> np.ndarray:
        """The debiased values (rows, estimands), computed from the stored reports when they are not stored."""
        return self.stored if self.debias is None else self.debias(self.stored)


def debiased(raw: np.ndarray, p: float, q: float, feasible: tuple[float, float]) -> np.ndarray:
    """Return the debiased value lo + (R − q)/(p − q)·(hi − lo) of each report value R."""
    lo, hi = feasible
    values = np.array(raw, dtype=float)  # a copy, worked on in place: lo + (R - q)/(p - q)·(hi - lo)
    values -= q
    values /= p - q
    values *= hi - lo
    values += lo
    return values


@dataclass(frozen=True)
class Margin:
    """A known population value of one estimand: a share of an option (or "yes"), or a number's mean ("");
    option None for a bare value, which ``weighted_rows.resolve_margins`` fills in."""

    question: str
    option: str | None
    value: float


@dataclass
class Weighting:
    """How the estimates were weighted: the column, the calibration, and the weights' summary."""

    column: str | None
    margins: list[Margin] = field(default_factory=list)
    method: str = RAKING
    strata: str | None = None
    clusters: str | None = None
    rows: int = 0
    total: float = 0.0
    effective_n: float = 0.0
    adjustment: tuple[float, float] | None = None

    def as_dict(self) -> dict:
        """Return the weighting as JSON-ready fields (for the output and the codebook)."""
        return {"weights": self.column, "strata": self.strata, "clusters": self.clusters, "rows": self.rows,
                "total_weight": self.total, "effective_n": self.effective_n,
                "calibration": [{"question": m.question, "option": m.option, "value": m.value} for m in self.margins],
                "calibration_method": (("generalized raking (Deville & Sarndal 1992), exponential distance"
                                        if self.method == RAKING else
                                        "linear calibration (Deville & Sarndal 1992), chi-square distance")
                                       + ", on the reports' debiased values") if self.margins else None,
                "adjustment_range": None if self.adjustment is None else list(self.adjustment),
                "std_error": SE_METHOD, "assumption": assumption(self.strata, self.clusters)}


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
             calibration: np.ndarray | None = None, sampling: Sampling | None = None
             ) -> tuple[np.ndarray, np.ndarray | None]:
    """Return the weighted estimates of an item's columns and their linearised standard errors (None if n < 2).

    ``calibration`` is the (rows, m) matrix of calibration variables the weights were calibrated on;
    ``sampling`` the strata and clusters (default: every row its own unit, one stratum).
    """
    w = np.asarray(weights, dtype=float)
    answered = w * present
    total = answered.sum()
    theta = (answered @ values) / total
    if w.shape[0] < 2:
        return theta, None
    errors = np.empty_like(theta)
    for start in range(0, values.shape[1], BLOCK):  # a few columns at a time: temporaries stay small
        block = slice(start, start + BLOCK)
        errors[block] = _errors(w, present, values[:, block], theta[block], total, calibration, sampling)
    return theta, errors


BLOCK = 8  # columns whose linearised scores are computed together


def _errors(w, present, values, theta, total, calibration, sampling) -> np.ndarray:
    """Return the linearised standard errors of some columns' weighted estimates ``theta``."""
    return linear_errors(w, present[:, None] * (values - theta), total, calibration, sampling)


def linear_errors(w, linear, total, calibration=None, sampling=None) -> np.ndarray:
    """Return the standard errors of estimates whose linearised values are w·``linear``/``total`` per row (columns),
    net of the calibration variables, over the sampling's units (every row its own by default)."""
    if calibration is not None and calibration.shape[1]:
        gram = calibration.T @ (w[:, None] * calibration)
        slope = np.linalg.lstsq(gram, calibration.T @ (w[:, None] * linear), rcond=1e-12)[0]
        linear = linear - calibration @ slope
    scores = w[:, None] * linear / total
    if sampling is not None:
        return np.sqrt(sampling.variance(scores))
    n = w.shape[0]
    centred = scores - scores.mean(axis=0)
    return np.sqrt(n / (n - 1) * (centred * centred).sum(axis=0))


def weighted_rows(items: list[Item], weights: np.ndarray, *, level: float,
                  calibration: np.ndarray | None = None, calibrated: set = frozenset(),
                  sampling: Sampling | None = None) -> list[WeightedRow]:
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
        theta, errors = estimate(weights, item.present, item.values, calibration, sampling)
        z = NormalDist().inv_cdf(1 - (1 - level) / (2 * item.simultaneous))
        for index, label in enumerate(item.labels):
            value = float(theta[index])
            error = None if errors is None else float(errors[index])
            fixed = (item.question, label) in calibrated
            error, low, high = (error, *_clipped(value, error, z, lo, hi)) if fixed else \
                wald_interval(value, error, z, lo, hi)
            rows.append(WeightedRow(item.question, label, item.kind, item.mechanism, item.epsilon, n, effective,
                                    value, error, low, high, level, fixed, item.text))
    return rows


def _clipped(value: float, error: float | None, z: float, lo: float, hi: float) -> tuple[float, float]:
    """Return value ± z·error clipped to [lo, hi] (the whole range without an error)."""
    if error is None:
        return lo, hi
    return min(max(value - z * error, lo), hi), min(max(value + z * error, lo), hi)


def wald_interval(value: float, error: float | None, z: float, lo: float, hi: float
                  ) -> tuple[float | None, float, float]:
    """Return (standard error, low, high): value ± z·error inside [lo, hi], never a point.

    A standard error of 0 up to round-off (the reports show no spread: all the same, likely at a
    small n or a large ε) is no standard error: the interval is the whole range. An interval wholly
    past one end of the range (it has missed the true value, which lies in the range) becomes the
    band of its own width at that end. Both replace only intervals that were points or had missed,
    so the coverage never falls (tests/core/test_interval_edges.py).
    """
    if error is None or not math.isfinite(error) or error <= 1e-12 * max(1.0, hi - lo):
        return None, lo, hi
    low, high = value - z * error, value + z * error
    if high <= lo:
        return error, lo, min(hi, lo + (high - low))
    if low >= hi:
        return error, max(lo, hi - (high - low)), hi
    return error, max(low, lo), min(high, hi)


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
        if not item.present.any():
            raise ReanalysisError(f"cannot calibrate to {_shown([margin])}: no response answered {margin.question!r}")
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
