"""The mean of a randomized number by randomized categorical covariates: unbiased values of every number
mechanism, and by simulation unbiased coefficients with sandwich intervals that cover."""

from __future__ import annotations

import math

import numpy as np
import pytest

from survey.core.definition import parse_definition_toml
from survey.core.design import build_design
from survey.core.mean_model import mean_model, unbiased_values
from survey.core.mechanisms import mechanism_for
from survey.core.regression import RegressionError, question_variable

DEFINITION = """
slug = "means"
title = "Means"
epsilon = 6

[[questions]]
id = "age"
kind = "number"
text = "Age?"
min = 18
max = 90
mechanism = "{mechanism}"

[[questions]]
id = "smoker"
kind = "yes_no"
text = "Smoker?"

[[questions]]
id = "region"
kind = "choice"
text = "Region?"
options = ["north", "centre", "south"]
"""
GAMMA = np.array([40.0, 8.0, -5.0, 6.0])  # the north non-smokers' mean, smoker: yes, region: centre, region: south


def questions(mechanism: str) -> dict:
    design = build_design(parse_definition_toml(DEFINITION.format(mechanism=mechanism), source="test_mean_model.py"))
    return {question["id"]: question for question in design["questions"]}


@pytest.mark.parametrize("mechanism", ["duchi", "piecewise", "hybrid"])
def test_a_number_reports_unbiased_value_has_the_answer_as_its_mean(mechanism):
    question = questions(mechanism)["age"]
    rng = np.random.default_rng(1)
    for answer in (18, 47, 90):
        reports = mechanism_for(question).randomize(np.full(200_000, answer), rng)
        values = unbiased_values(question, reports)
        assert abs(values.mean() - answer) < 5 * values.std() / math.sqrt(len(values)), (answer, values.mean())


def simulate(rng, qs, n):
    smoker = (rng.random(n) < 0.4).astype(np.int64)
    region = rng.choice(3, size=n, p=[0.5, 0.3, 0.2])
    mean = GAMMA[0] + GAMMA[1] * smoker + np.where(region == 1, GAMMA[2], 0) + np.where(region == 2, GAMMA[3], 0)
    age = np.rint(mean + rng.uniform(-15, 15, n)).astype(np.int64)  # symmetric: the group means stay GAMMA's
    reports = np.column_stack([mechanism_for(qs[qid]).randomize(truth, rng)
                               for qid, truth in (("age", age), ("smoker", smoker), ("region", region))])
    patterns, counts = np.unique(reports, axis=0, return_counts=True)
    return mean_model("age", unbiased_values(qs["age"], patterns[:, 0]),
                      [question_variable(qs["smoker"], patterns[:, 1]), question_variable(qs["region"], patterns[:, 2])],
                      counts)


@pytest.mark.slow
@pytest.mark.parametrize("mechanism", ["duchi", "piecewise"])
def test_coefficients_are_unbiased_and_intervals_cover_over_400_simulated_surveys(mechanism):
    qs = questions(mechanism)
    rng = np.random.default_rng(20261125)
    fits = [simulate(rng, qs, 8000) for _ in range(400)]
    estimates = np.array([[term.estimate for term in fit.terms] for fit in fits])
    errors = np.array([[term.std_error for term in fit.terms] for fit in fits])
    spread = estimates.std(axis=0, ddof=1)
    assert np.all(np.abs(estimates.mean(axis=0) - GAMMA) <= 4 * spread / math.sqrt(400)), estimates.mean(axis=0)
    assert np.all(np.abs(errors.mean(axis=0) / spread - 1) < 0.15), errors.mean(axis=0) / spread
    covered = np.array([[term.ci_low <= truth <= term.ci_high for term, truth in zip(fit.terms, GAMMA)]
                        for fit in fits])
    assert np.all(covered.mean(axis=0) >= 0.93), covered.mean(axis=0)


def test_a_question_that_is_not_a_number_has_no_unbiased_value():
    with pytest.raises(RegressionError, match="not a number question"):
        unbiased_values(questions("duchi")["smoker"], [0, 1])
