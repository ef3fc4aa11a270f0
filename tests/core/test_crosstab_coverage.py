"""Crosstab intervals keep their promise at small n: coverage over 400 repetitions, never a single point.

Reports are drawn by a sampler written here from the published (p, q) of each question
(Warner randomized response for yes/no, generalized randomized response for a choice), not
by the product's own randomizer, and grouped into distinct pairs with counts as the store
groups them. Each cell, conditional share and odds ratio must cover its true value in at
least 0.95 − 2.33 Monte Carlo standard errors of the repetitions, and no interval may be a
single point (the audit of issue 25 found cells printed as [0, 0] at n = 50 and 200).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from survey.core.crosstab import crosstab
from survey.core.design import response_probabilities

from test_crosstab import YES_NO_2, make_design

REPETITIONS = 400
MIN_COVERAGE = 0.95 - 2.33 * math.sqrt(0.95 * 0.05 / REPETITIONS)

YES_NO_CHOICE = """
[[questions]]
id = "smoker"
kind = "yes_no"
text = "Do you smoke?"
[[questions]]
id = "drink"
kind = "choice"
text = "Drink?"
options = ["o0", "o1", "o2", "o3", "o4"]
"""

# P(A = yes) = 0.10; B's shares among yes and among no (one cell of the table is empty).
SHARE_YES = 0.10
B_GIVEN_YES = np.array([0.40, 0.30, 0.20, 0.10, 0.00])
B_GIVEN_NO = np.array([0.20, 0.20, 0.20, 0.20, 0.20])


def warner(truth, p, rng):
    """Return Warner reports: the true bit with probability p, else its flip."""
    return np.where(rng.random(truth.size) < p, truth, 1 - truth)


def grr(truth, d, p, rng):
    """Return generalized randomized response reports: the true index w.p. p, else a uniform other index."""
    other = rng.integers(0, d - 1, truth.size)
    other = other + (other >= truth)
    return np.where(rng.random(truth.size) < p, truth, other)


def tables_of(qa, qb, reports_a, reports_b, n):
    """Return one crosstab per repetition (rows of n), from the distinct report pairs and their counts."""
    tables = []
    for rep in range(reports_a.shape[0]):
        pairs, counts = np.unique(np.column_stack([reports_a[rep], reports_b[rep]]), axis=0, return_counts=True)
        tables.append(crosstab(qa, qb, pairs[:, :1], pairs[:, 1:], counts))
    return tables


def check(tables, measure, a_option, b_option, truth):
    """Assert coverage ≥ MIN_COVERAGE and no single-point interval for one row over all repetitions."""
    rows = [table.get(measure, a_option, b_option) for table in tables]
    covered = 0
    for row in rows:
        high = math.inf if row.ci_high is None else row.ci_high
        assert row.ci_low is not None and row.ci_low < high, row
        covered += row.ci_low <= truth <= high
    assert covered / len(rows) >= MIN_COVERAGE, (measure, a_option, b_option, covered / len(rows))


@pytest.mark.slow
@pytest.mark.parametrize("n", [50, 200])
def test_yes_no_by_choice_cells_and_conditional_shares_cover(n):
    rng = np.random.default_rng(25 + n)
    design = make_design(YES_NO_CHOICE, 2.0)
    qa, qb = design["questions"]
    assert qb["mechanism"] == "grr"
    p_a, _ = response_probabilities(qa)
    p_b, _ = response_probabilities(qb)
    size = (REPETITIONS, n)
    smoker = (rng.random(size) < SHARE_YES).astype(np.int64)
    drink = np.where(smoker == 1, rng.choice(5, size=size, p=B_GIVEN_YES), rng.choice(5, size=size, p=B_GIVEN_NO))
    reports_a = warner(smoker.ravel(), p_a, rng).reshape(size)
    reports_b = grr(drink.ravel(), 5, p_b, rng).reshape(size)
    tables = tables_of(qa, qb, reports_a, reports_b, n)
    for label, share, given in (("yes", SHARE_YES, B_GIVEN_YES), ("no", 1 - SHARE_YES, B_GIVEN_NO)):
        for k in range(5):
            check(tables, "joint", label, f"o{k}", share * given[k])
            check(tables, "b_given_a", label, f"o{k}", given[k])


@pytest.mark.slow
@pytest.mark.parametrize("n", [50, 200])
def test_odds_ratio_covers_and_never_raises(n):
    rng = np.random.default_rng(7 + n)
    design = make_design(YES_NO_2, 2.0)
    qa, qb = design["questions"]
    joint = np.array([[0.5, 0.1], [0.15, 0.25]])  # [smoker no/yes, lung no/yes]
    flat = rng.choice(4, size=(REPETITIONS, n), p=joint.ravel())
    p_a, _ = response_probabilities(qa)
    p_b, _ = response_probabilities(qb)
    reports_a = warner((flat // 2).ravel(), p_a, rng).reshape(flat.shape)
    reports_b = warner((flat % 2).ravel(), p_b, rng).reshape(flat.shape)
    tables = tables_of(qa, qb, reports_a, reports_b, n)
    check(tables, "odds_ratio", "", "", joint[0, 0] * joint[1, 1] / (joint[0, 1] * joint[1, 0]))
    labels = ("no", "yes")
    for i in (0, 1):
        for j in (0, 1):
            check(tables, "joint", labels[i], labels[j], joint[i, j])
            check(tables, "b_given_a", labels[i], labels[j], joint[i, j] / joint[i].sum())
    for table in tables:
        row = table.get("odds_ratio", "", "")
        assert row.ci_high is not None or "no upper limit" in row.note
        assert row.estimate is not None or "no estimate" in row.note
