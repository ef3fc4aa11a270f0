"""Randomized number covariates by regression calibration (Carroll, Ruppert, Stefanski & Crainiceanu 2006, ch. 4):
the mechanisms' stated per-report variance is what their reports show; by simulation over 400 surveys the slopes
are unbiased within 4 SE and their 95% sandwich intervals cover 93–97% (a logistic regression at a small effect,
where the approximation holds, and a number's mean, where calibration is exact); and the inputs it cannot take
are refused with the reason."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import expit

from survey.core.definition import parse_definition_toml
from survey.core.design import build_design
from survey.core.mean_model import unbiased_values
from survey.core.mechanisms import mechanism_for
from survey.core.modelling import fit_reports
from survey.core.number_covariates import NumberMeanModel, NumberRegression, noise_quadratic, question_column
from survey.core.regression import RegressionError
from survey.core.regression_text import regression_to_json, regression_to_table, term_sentence

DEFINITION = """
slug = "numbers"
title = "Numbers"
epsilon = 12

[[questions]]
id = "ill"
kind = "yes_no"
text = "Ill?"

[[questions]]
id = "years"
kind = "number"
text = "Years?"
min = 0
max = 10
mechanism = "{mechanism}"

[[questions]]
id = "score"
kind = "number"
text = "Score?"
min = 0
max = 40
mechanism = "piecewise"

[[questions]]
id = "region"
kind = "choice"
text = "Region?"
options = ["north", "south", "east"]
"""


def questions(mechanism: str) -> dict:
    design = build_design(parse_definition_toml(DEFINITION.format(mechanism=mechanism), source="test_numbers.py"))
    return {question["id"]: question for question in design["questions"]}


@pytest.mark.parametrize("mechanism", ["piecewise", "hybrid"])
def test_the_noise_a_calibration_uses_is_the_variance_the_reports_show(mechanism):
    question = questions(mechanism)["years"]
    a, b, c = question_column(question, [0]).noise
    rng = np.random.default_rng(3)
    for answer in (0, 4, 10):
        values = unbiased_values(question, mechanism_for(question).randomize(np.full(100_000, answer), rng))
        stated = a + b * answer + c * answer ** 2
        # The sample variance's standard error: sqrt((m4 − variance²)/n), m4 the fourth central moment.
        error = math.sqrt((np.mean((values - values.mean()) ** 4) - values.var() ** 2) / len(values))
        assert abs(values.var() - stated) < 5 * error, (answer, values.var(), stated, error)


def test_a_quadratic_variance_is_fitted_exactly_and_a_line_through_two_truths():
    truths = np.arange(11.0)
    (a, b, c), misfit = noise_quadratic(3 - 0.5 * truths + 0.25 * truths ** 2, truths)
    assert abs(a - 3) < 1e-9 and abs(b + 0.5) < 1e-9 and abs(c - 0.25) < 1e-9 and misfit < 1e-12
    (a, b, c), misfit = noise_quadratic(np.array([2.0, 5.0]), np.array([0.0, 1.0]))
    assert (round(a, 12), round(b, 12), c, misfit) == (2.0, 3.0, 0.0, 0.0)


def simulate_logistic(rng, qs, n, slope):
    years = rng.integers(0, 11, n)
    ill = (rng.random(n) < expit(-1 + slope * years)).astype(np.int64)
    reports = np.column_stack([mechanism_for(qs["ill"]).randomize(ill, rng),
                               mechanism_for(qs["years"]).randomize(years, rng)])
    patterns, counts = np.unique(reports, axis=0, return_counts=True)
    return fit_reports([qs["ill"], qs["years"]], [patterns[:, 0], patterns[:, 1]], counts)


def simulate_mean(rng, qs, n, slope):
    years = rng.integers(0, 11, n)
    ill = (rng.random(n) < 0.3).astype(np.int64)
    score = np.clip(np.rint(10 + slope * years + 5 * ill + rng.uniform(-6, 6, n)), 0, 40).astype(np.int64)
    reports = np.column_stack([mechanism_for(qs[qid]).randomize(truth, rng)
                               for qid, truth in (("score", score), ("years", years), ("ill", ill))])
    patterns, counts = np.unique(reports, axis=0, return_counts=True)
    return fit_reports([qs["score"], qs["years"], qs["ill"]], [patterns[:, 0], patterns[:, 1], patterns[:, 2]],
                       counts)


def check_coverage(fits, term: int, truth: float):
    estimates = np.array([fit.terms[term].estimate for fit in fits])
    errors = np.array([fit.terms[term].std_error for fit in fits])
    spread = estimates.std(ddof=1)
    assert abs(estimates.mean() - truth) < 4 * spread / math.sqrt(len(fits)), (estimates.mean(), truth, spread)
    covered = np.mean(np.abs(estimates - truth) <= 1.959964 * errors)
    print(f"mean {estimates.mean():.5f} (truth {truth}, bias {(estimates.mean() - truth) / spread * math.sqrt(len(fits)):+.2f} SE), "
          f"coverage {covered:.4f}, median SE {np.median(errors):.5f} vs spread {spread:.5f}")
    assert 0.93 <= covered <= 0.97, covered
    # The sandwich errors are the spread the estimates show (within the sampling error of a spread, ~4%).
    assert abs(np.median(errors) / spread - 1) < 0.15, (np.median(errors), spread)


@pytest.mark.slow
@pytest.mark.parametrize("mechanism", ["piecewise", "hybrid"])
def test_a_logistic_slope_on_a_randomized_number_is_unbiased_and_covered_over_400_surveys(mechanism):
    """At a slope of 0.1 per year over 0..10 years, slope² · Var(years | report) < 0.1: the approximation holds."""
    qs = questions(mechanism)
    rng = np.random.default_rng(20261126)
    fits = [simulate_logistic(rng, qs, 2000, 0.1) for _ in range(400)]
    assert all(isinstance(fit, NumberRegression) and fit.test == "Wald" for fit in fits)
    check_coverage(fits, 1, 0.1)


@pytest.mark.slow
def test_a_numbers_mean_on_a_randomized_number_and_yes_no_is_unbiased_and_covered_over_400_surveys():
    """Calibration is exact for a linear model: a strong slope (1.5 per year) and a yes/no covariate beside it."""
    qs = questions("piecewise")
    rng = np.random.default_rng(20261127)
    fits = [simulate_mean(rng, qs, 2000, 1.5) for _ in range(400)]
    assert all(isinstance(fit, NumberMeanModel) for fit in fits)
    assert [term.term for term in fits[0].terms] == ["(intercept)", "years", "ill: yes"]
    check_coverage(fits, 1, 1.5)
    check_coverage(fits, 2, 5.0)


def test_the_output_names_the_method_and_says_where_it_is_approximate():
    qs = questions("piecewise")
    fit = simulate_logistic(np.random.default_rng(5), qs, 3000, 0.1)
    table = regression_to_table(fit)
    assert "regression calibration (Carroll, Ruppert, Stefanski & Crainiceanu 2006, ch. 4)" in table
    assert "an approximation for a logistic regression" in table and "Wald test" in table
    assert term_sentence(fit, fit.terms[1]).startswith("Each 1 more of years multiplies the odds of ill by ")
    body = regression_to_json(fit)
    assert body["model"] == "logistic" and body["per_unit"] == ["years"] and "sandwich" in body["method"]
    mean = simulate_mean(np.random.default_rng(6), qs, 3000, 1.5)
    assert "an approximation" not in regression_to_table(mean) and "regression calibration" in mean.method
    assert term_sentence(mean, mean.terms[1]).startswith("Each 1 more of years goes with a mean score ")


def test_a_mechanism_whose_reports_hide_the_spread_is_refused_as_a_covariate():
    qs = questions("duchi")
    with pytest.raises(RegressionError, match="carry the number's mean but not its spread"):
        fit_reports([qs["ill"], qs["years"]], [[0, 1, 0, 1], [0, 0, 1, 1]], [10, 10, 10, 10])


def test_a_choice_beside_a_number_covariate_is_refused_with_the_reason():
    qs = questions("piecewise")
    with pytest.raises(RegressionError, match="beside a number covariate only yes/no and number"):
        fit_reports([qs["ill"], qs["years"], qs["region"]], [[0, 1], [0, 1], [0, 1]], [10, 10])


def test_reports_noisier_than_their_spread_are_refused_with_the_reason():
    qs = questions("piecewise")
    rng = np.random.default_rng(9)
    reports = mechanism_for(qs["years"]).randomize(np.full(40, 5), rng)  # nobody's true answer differs
    patterns, counts = np.unique(np.column_stack([rng.integers(0, 2, 40), reports]), axis=0, return_counts=True)
    with pytest.raises(RegressionError, match="spread cannot be told from it"):
        fit_reports([qs["ill"], qs["years"]], [patterns[:, 0], patterns[:, 1]], counts)
