"""The regression's optimizer: the exact Hessian against central differences of the exact gradient, Newton's
maximum found to the last digits (the same estimates for counts scaled tenfold), at least as high as BFGS's
where covariates have structurally empty combinations, and the BFGS fallback when Newton is cut short."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit

from survey.core import regression
from survey.core.definition import parse_definition_toml
from survey.core.design import build_design
from survey.core.mechanisms import mechanism_for
from survey.core.regression import logistic_regression, question_variable

DEFINITION = """
slug = "newton"
title = "Newton"
epsilon = 3

[[questions]]
id = "disease"
kind = "yes_no"
text = "Lung disease?"

[[questions]]
id = "smoker"
kind = "yes_no"
text = "Smoker?"

[[questions]]
id = "cigarettes"
kind = "choice"
text = "Cigarettes a day?"
options = ["none", "1-5", "6-10", "more"]
"""
DESIGN = build_design(parse_definition_toml(DEFINITION, source="test_regression_newton.py"))
QUESTIONS = {question["id"]: question for question in DESIGN["questions"]}


def simulate(seed: int, n: int, *, structural: bool):
    """Return the outcome and covariate Variables and the pattern counts of n simulated respondents.

    With ``structural`` a non-smoker always smokes "none" (three combinations of the covariates are empty)."""
    rng = np.random.default_rng(seed)
    smoker = (rng.random(n) < 0.35).astype(np.int64)
    if structural:
        cigarettes = np.where(smoker == 1, rng.integers(1, 4, n), 0)
    else:
        cigarettes = np.where(smoker == 1, rng.integers(0, 4, n), rng.choice(4, n, p=[0.7, 0.1, 0.1, 0.1]))
    disease = (rng.random(n) < expit(-2 + 1.0 * smoker + 0.3 * cigarettes)).astype(np.int64)
    parts = [np.asarray(mechanism_for(QUESTIONS[qid]).randomize(truth, rng)).reshape(n, -1)
             for qid, truth in (("disease", disease), ("smoker", smoker), ("cigarettes", cigarettes))]
    widths = np.cumsum([0] + [part.shape[1] for part in parts])
    patterns, counts = np.unique(np.column_stack(parts), axis=0, return_counts=True)
    variables = [question_variable(QUESTIONS[qid], patterns[:, widths[i]:widths[i + 1]].squeeze(axis=1)
                                   if widths[i + 1] - widths[i] == 1 else patterns[:, widths[i]:widths[i + 1]])
                 for i, qid in enumerate(("disease", "smoker", "cigarettes"))]
    return variables, counts


def model_of(variables, counts) -> regression._Model:
    """Return the full model's likelihood object, as logistic_regression builds it."""
    cells = regression.covariate_cells(variables[1:])
    phi, _ = regression.design_matrix(cells, variables[1:])
    return regression._Model(variables[0].likelihood, regression.cells_likelihood(variables[1:], cells),
                             np.asarray(counts, dtype=float), phi)


@pytest.mark.parametrize("structural", [False, True])
def test_the_exact_hessian_is_the_central_difference_of_the_exact_gradient(structural):
    model = model_of(*simulate(1, 20_000, structural=structural))
    rng = np.random.default_rng(2)
    for _ in range(5):
        theta = rng.normal(0, 0.8, model.dims + model.covariate.shape[1] - 1)
        _, gradient, hessian = model.derivatives(theta)
        assert np.array_equal(gradient, model.value_and_gradient(theta)[1])
        numeric = regression.jacobian(lambda point: model.value_and_gradient(point)[1], theta, relative_step=1e-6)
        # Central differences are exact to O(h²) plus rounding: 1e-6 of the Hessian's scale is far above both.
        assert np.max(np.abs(hessian - numeric)) <= 1e-6 * np.max(np.abs(hessian))
        assert np.array_equal(hessian, hessian.T)


def test_the_exact_gradient_is_the_central_difference_of_the_log_likelihood():
    model = model_of(*simulate(3, 20_000, structural=False))
    theta = np.random.default_rng(4).normal(0, 0.8, model.dims + model.covariate.shape[1] - 1)
    numeric = regression.jacobian(lambda point: np.array([model.value_and_gradient(point)[0]]), theta,
                                  relative_step=1e-6).ravel()
    gradient = model.value_and_gradient(theta)[1]
    assert np.max(np.abs(gradient - numeric)) <= 1e-6 * np.max(np.abs(gradient))


def test_the_maximum_is_found_to_the_last_digits_whatever_the_number_of_responses(monkeypatch):
    # Counts scaled tenfold have the same maximum; BFGS stopped about 1e-6 away from it, Newton within rounding.
    variables, counts = simulate(5, 200_000, structural=False)
    fallbacks = []
    monkeypatch.setattr(regression, "_maximise_bfgs", lambda *args: fallbacks.append(args) or None)
    once, tenfold = logistic_regression(variables[0], variables[1:], counts), \
        logistic_regression(variables[0], variables[1:], counts * 10)
    assert not fallbacks and once.converged and tenfold.converged
    for one, ten in zip(once.terms, tenfold.terms):
        assert ten.estimate == pytest.approx(one.estimate, abs=1e-9)
        assert ten.std_error == pytest.approx(one.std_error / np.sqrt(10), rel=1e-7)


def test_newton_climbs_at_least_as_high_as_bfgs_where_combinations_are_empty():
    variables, counts = simulate(8, 300_000, structural=True)  # one empty combination estimated at 0
    model = model_of(variables, counts)
    start = regression._start(model)
    theta, value, converged = regression._maximise(model, start)
    bfgs_value = model.value_and_gradient(regression._maximise_bfgs(model, start))[0]
    assert converged
    # A relative 1e-12 is the rounding of ℓ (about 8e5 here); BFGS stops about 0.9 lower on this data.
    assert value >= bfgs_value - 1e-12 * abs(bfgs_value)
    fit = logistic_regression(variables[0], variables[1:], counts)
    assert fit.log_likelihood == value and any("held by nobody" in warning for warning in fit.warnings)


def test_bfgs_takes_over_when_newton_is_cut_short(monkeypatch):
    variables, counts = simulate(7, 100_000, structural=False)
    newton = logistic_regression(variables[0], variables[1:], counts)
    monkeypatch.setattr(regression, "NEWTON_ITERATIONS", 1)
    fallbacks = []
    original = regression._maximise_bfgs
    monkeypatch.setattr(regression, "_maximise_bfgs", lambda *args: fallbacks.append(1) or original(*args))
    bfgs = logistic_regression(variables[0], variables[1:], counts)
    assert fallbacks and bfgs.converged
    for ours, theirs in zip(newton.terms, bfgs.terms):
        # BFGS with its Newton polish reaches the maximum to about 1e-6 (see above); its errors follow.
        assert theirs.estimate == pytest.approx(ours.estimate, abs=1e-5)
        assert theirs.std_error == pytest.approx(ours.std_error, rel=1e-4)
