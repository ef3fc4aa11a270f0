"""Logistic regression with a randomized outcome and randomized covariates: the likelihoods it rests on, its
closed form in the simplest case, and by simulation its unbiasedness, interval coverage and test size."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.special import expit, logit

from survey.core.definition import parse_definition_toml
from survey.core.design import build_design
from survey.core.mechanisms import mechanism_for
from survey.core.regression import RegressionError, Variable, logistic_regression, question_variable

DEFINITION = """
slug = "regression"
title = "Regression"
epsilon = 6

[[questions]]
id = "disease"
kind = "yes_no"
text = "Lung disease?"

[[questions]]
id = "smoker"
kind = "yes_no"
text = "Smoker?"

[[questions]]
id = "region"
kind = "choice"
text = "Region?"
options = ["north", "centre", "south"]

[[questions]]
id = "sports"
kind = "multi"
text = "Sports?"
options = ["run", "swim"]
"""
DESIGN = build_design(parse_definition_toml(DEFINITION, source="test_regression.py"))
QUESTIONS = {question["id"]: question for question in DESIGN["questions"]}
BETA = np.array([-1.0, 1.2, 0.5, -0.7])  # intercept, smoker: yes, region: centre, region: south


def simulate(rng, n: int, beta=BETA):
    """Return the report patterns and counts of n respondents drawn from the model, randomized as browsers do."""
    smoker = (rng.random(n) < 0.4).astype(np.int64)
    region = rng.choice(3, size=n, p=[0.5, 0.3, 0.2])
    eta = beta[0] + beta[1] * smoker + np.where(region == 1, beta[2], 0.0) + np.where(region == 2, beta[3], 0.0)
    disease = (rng.random(n) < expit(eta)).astype(np.int64)
    reports = np.column_stack([mechanism_for(QUESTIONS[qid]).randomize(truth, rng)
                               for qid, truth in (("disease", disease), ("smoker", smoker), ("region", region))])
    patterns, counts = np.unique(reports, axis=0, return_counts=True)
    variables = [question_variable(QUESTIONS[qid], patterns[:, index])
                 for index, qid in enumerate(("disease", "smoker", "region"))]
    return variables, counts


def test_the_design_randomizes_every_variable():
    assert [(q["id"], q["mechanism"]) for q in DESIGN["questions"][:3]] == [
        ("disease", "rr"), ("smoker", "rr"), ("region", "grr")]
    assert all(1.4 < q["epsilon"] <= 1.5 for q in DESIGN["questions"])


def test_oue_likelihood_is_the_exact_distribution_of_its_bits():
    """A 4-option OUE by enumeration of every report: each category's likelihoods sum to 1 and match the product."""
    from survey.core.mechanisms.oue import OptimizedUnaryEncoding

    mechanism = OptimizedUnaryEncoding(options=("a", "b", "c", "d"), q_threshold=2**51)
    reports = np.array(list(itertools.product((0, 1), repeat=4)))
    table = mechanism.likelihood(reports)
    assert table.sum(axis=0) == pytest.approx(np.ones(4), abs=1e-15)
    q = 2**51 / 2**53
    for row, bits in zip(table, reports):
        for category in range(4):
            expected = math.prod(0.5 if option == category else (q if bit else 1 - q) for option, bit in enumerate(bits))
            assert row[category] == pytest.approx(expected, rel=1e-14)


def test_a_multiple_choice_or_a_number_cannot_enter_with_the_reason():
    with pytest.raises(RegressionError, match="only yes/no and single-choice"):
        question_variable(QUESTIONS["sports"], np.zeros((3, 2), dtype=np.int64))


def test_with_an_exact_covariate_the_estimate_is_the_debiased_shares_log_odds():
    """One exactly known yes/no covariate: the MLE of P(yes | group) is (ā_g − q)/(p − q) inside (0, 1), so the
    coefficients are the logits of the two groups' debiased shares (Scheers & Dayton 1988)."""
    mechanism = mechanism_for(QUESTIONS["disease"])
    p, q = mechanism.response_probabilities()
    # Patterns: (disease report, group) with counts: group 0 has 300 of 1,000 reports yes, group 1 650 of 1,000.
    reports = np.array([0, 1, 0, 1])
    groups = np.array([0, 0, 1, 1])
    counts = np.array([700, 300, 350, 650])
    outcome = Variable("disease", ("no", "yes"), mechanism.likelihood(reports))
    exact = Variable("group", ("a", "b"), np.eye(2)[groups])
    fit = logistic_regression(outcome, [exact], counts)
    shares = [(0.3 - q) / (p - q), (0.65 - q) / (p - q)]
    assert fit.terms[0].estimate == pytest.approx(logit(shares[0]), abs=1e-6)
    assert fit.terms[1].estimate == pytest.approx(logit(shares[1]) - logit(shares[0]), abs=1e-6)
    assert fit.terms[1].odds_ratio == pytest.approx(math.exp(fit.terms[1].estimate))
    assert fit.converged and not fit.warnings


@pytest.mark.slow
def test_coefficients_are_unbiased_and_intervals_cover_over_400_simulated_surveys():
    rng = np.random.default_rng(20261125)
    fits = []
    for _ in range(400):
        variables, counts = simulate(rng, 4000)
        fits.append(logistic_regression(variables[0], variables[1:], counts))
    estimates = np.array([[term.estimate for term in fit.terms] for fit in fits])
    errors = np.array([[term.std_error for term in fit.terms] for fit in fits])
    assert all(fit.converged for fit in fits)
    spread = estimates.std(axis=0, ddof=1)
    # Unbiased within 4 standard errors of the mean of 400 estimates.
    assert np.all(np.abs(estimates.mean(axis=0) - BETA) <= 4 * spread / math.sqrt(400)), (estimates.mean(axis=0), BETA)
    # The observed information's standard errors match the estimates' spread.
    assert np.all(np.abs(errors.mean(axis=0) / spread - 1) < 0.15), errors.mean(axis=0) / spread
    lows = np.array([[math.log(term.ci_low) for term in fit.terms] for fit in fits])
    highs = np.array([[math.log(term.ci_high) for term in fit.terms] for fit in fits])
    coverage = ((lows <= BETA) & (BETA <= highs)).mean(axis=0)
    assert np.all(coverage >= 0.93), coverage


@pytest.mark.slow
def test_the_likelihood_ratio_test_holds_its_size_when_nothing_goes_with_the_outcome():
    rng = np.random.default_rng(7)
    null = np.array([-0.5, 0.0, 0.0, 0.0])
    p_values = []
    for _ in range(400):
        variables, counts = simulate(rng, 2000, null)
        p_values.append(logistic_regression(variables[0], variables[1:], counts).lr_p_value)
    rejected = np.mean(np.array(p_values) < 0.05)
    # 5% expected; 4 standard errors of a share of 400 is 4.4 points.
    assert rejected <= 0.05 + 4 * math.sqrt(0.05 * 0.95 / 400), rejected


def test_a_group_all_yes_is_flagged_on_the_boundary():
    mechanism = mechanism_for(QUESTIONS["disease"])
    p, q = mechanism.response_probabilities()
    # Group b reports yes at rate p exactly: its true share is 1, its log odds infinite.
    counts = np.array([700, 300, round(1000 * (1 - p)), round(1000 * p)])
    outcome = Variable("disease", ("no", "yes"), mechanism.likelihood(np.array([0, 1, 0, 1])))
    exact = Variable("group", ("a", "b"), np.eye(2)[np.array([0, 0, 1, 1])])
    fit = logistic_regression(outcome, [exact], counts)
    assert any("boundary" in warning for warning in fit.warnings), fit.warnings


def test_too_few_responses_are_refused_with_the_reason():
    mechanism = mechanism_for(QUESTIONS["disease"])
    outcome = Variable("disease", ("no", "yes"), mechanism.likelihood(np.array([0, 1])))
    exact = Variable("group", ("a", "b"), np.eye(2))
    with pytest.raises(RegressionError, match="too few"):
        logistic_regression(outcome, [exact], np.array([1, 2]))


def test_covariates_the_data_cannot_tell_apart_get_no_standard_errors_and_the_reason():
    mechanism = mechanism_for(QUESTIONS["disease"])
    outcome = Variable("disease", ("no", "yes"), mechanism.likelihood(np.array([0, 1, 0, 1])))
    group = np.eye(2)[np.array([0, 0, 1, 1])]
    copy = [Variable("group", ("a", "b"), group), Variable("copy", ("a", "b"), group)]
    fit = logistic_regression(outcome, copy, np.array([600, 400, 450, 550]))
    assert any("cannot tell some coefficients apart" in warning for warning in fit.warnings), fit.warnings
    assert all(math.isnan(term.std_error) and math.isnan(term.ci_low) for term in fit.terms)
    assert all(math.isfinite(term.estimate) for term in fit.terms)
