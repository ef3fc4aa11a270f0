"""The hybrid mechanism for numbers (Wang et al. 2019): exact distribution, variance, privacy, estimator, tallies.

The output distribution is enumerated here from the mechanism's definition with exact
fractions, independently of survey.core.mechanisms, and everything the product computes (the
worst-case variance the design compares, ε′, the level values and scores, the unbiased
estimator and its Student-t interval, the SQLite tallies) is checked against it.
"""

from __future__ import annotations

import math
from decimal import Context, Decimal
from fractions import Fraction

import numpy as np
import pytest

from survey.core import codec
from survey.core import mechanisms as mech
from survey.core.mechanisms.common import rr_flip_threshold
from survey.core.mechanisms.duchi import duchi_worst_variance
from survey.core.mechanisms.hybrid import (MAX_HYBRID_BINS, debias_hybrid_mean, hybrid_epsilon, hybrid_level_values,
                                           hybrid_ratio, hybrid_scores, hybrid_variance, hybrid_worst,
                                           hybrid_worst_variance, randomize_hybrid)
from survey.core.mechanisms.piecewise import piecewise_ratio, piecewise_worst_variance
from survey.core.aggregate import aggregate
from survey.core.definition import parse_definition
from survey.core.design import build_design, response_probabilities
from survey.store import Store


def exact_distribution(value: int, lo: int, hi: int, a: int, b: int) -> list[Fraction]:
    """Return P(L) for every level L in 0..G+1 of the hybrid mechanism for one integer answer."""
    g = a + b
    beta, keep = Fraction(a - b, a), Fraction(a * a, a * a + b * b)
    x = Fraction(value - lo, hi - lo)
    grid, up = divmod(x * a, 1)
    probabilities = [Fraction(0)] * (g + 2)
    for point, weight in ((int(grid), 1 - up), (int(grid) + 1, up)):
        if weight == 0:
            continue
        for k in range(g):
            inside = point <= k < point + b
            probabilities[k] += beta * weight * (Fraction(a, g * b) if inside else Fraction(b, g * a))
    probabilities[g] = (1 - beta) * ((1 - x) * keep + x * (1 - keep))
    probabilities[g + 1] = (1 - beta) * (x * keep + (1 - x) * (1 - keep))
    return probabilities


def enumerated_variance(value, lo, hi, a, b) -> tuple[Fraction, Fraction]:
    """Return (E[x̂], Var(x̂)) of one report's estimate (R - q)/(p - q), by enumeration."""
    values = hybrid_level_values(a, b)
    probabilities = exact_distribution(value, lo, hi, a, b)
    g = a + b
    p, q = Fraction(a, g), Fraction(b, g)
    mean = sum(pr * r for pr, r in zip(probabilities, values))
    second = sum(pr * r * r for pr, r in zip(probabilities, values))
    return (mean - q) / (p - q), (second - mean * mean) / (p - q) ** 2


@pytest.mark.parametrize("epsilon", [1, 2, 4])
def test_exact_variance_matches_enumeration_and_the_estimate_is_unbiased(epsilon):
    a, b = hybrid_ratio(epsilon=epsilon)
    assert sum(exact_distribution(40, 18, 90, a, b)) == 1
    for value, lo, hi in [(18, 18, 90), (40, 18, 90), (61, 18, 90), (90, 18, 90), (0, 0, 1), (1, 0, 1),
                          (123, 0, 1000), (7, 0, 3 * a)]:
        mean, variance = enumerated_variance(value, lo, hi, a, b)
        assert mean == Fraction(value - lo, hi - lo), "E[x̂] = x exactly in both branches"
        assert variance == hybrid_variance(a, b, Fraction(value - lo, hi - lo))


@pytest.mark.parametrize("epsilon", [1, 1.29, 4])
def test_worst_case_variance_is_the_maximum_over_every_answer(epsilon):
    a, b = hybrid_ratio(epsilon=epsilon)
    x, worst = hybrid_worst(a, b)
    assert worst == hybrid_variance(a, b, x) and float(worst) == hybrid_worst_variance(a, b)
    span = 4 * a
    dense = [hybrid_variance(a, b, Fraction(v, span)) for v in range(span + 1)]
    assert max(dense) <= worst and float(max(dense)) > 0.999 * float(worst)
    # Its answer, when it is an integer of a range, is attained by the enumeration.
    hi = x.denominator
    if hi <= 10**5:
        assert enumerated_variance(x.numerator, 0, hi, a, b)[1] == worst


# Wang et al. (2019), continuous mechanisms on [0, 1]: HM 1.07, .643, .261, .108, .055; the better of Duchi and PM.
MATH = {1: (1.07, 1.17), 1.29: (0.643, 0.774), 2: (0.261, 0.307), 3: (0.108, 0.123), 4: (0.055, 0.060)}


@pytest.mark.parametrize("epsilon", sorted(MATH))
def test_the_discretised_hybrid_beats_duchi_and_piecewise_as_designed(epsilon):
    a, b = hybrid_ratio(epsilon=epsilon)
    hybrid = hybrid_worst_variance(a, b)
    duchi = duchi_worst_variance(rr_flip_threshold(epsilon=epsilon))
    piecewise = piecewise_worst_variance(*piecewise_ratio(epsilon=epsilon))
    expected, better = MATH[epsilon]
    assert hybrid == pytest.approx(expected, rel=0.01) and min(duchi, piecewise) == pytest.approx(better, rel=0.01)
    assert hybrid < 0.92 * min(duchi, piecewise)
    entry = build_design(parse_definition({"slug": "n", "title": "N", "epsilon": epsilon, "questions": [
        {"id": "n", "kind": "number", "text": "N", "min": 0, "max": 9, "mechanism": "hybrid"}]}))["questions"][0]
    assert (entry["mechanism"], entry["ratio_a"], entry["ratio_b"]) == ("hybrid", a, b)


@pytest.mark.parametrize("epsilon", [0.7, 1, 2, 3.3, 4, 8, 10])
def test_realised_epsilon_is_the_largest_level_ratio_and_never_above_epsilon(epsilon):
    """Between any two answers every level's probability ratio is at most (a/b)² = e^eps' <= e^eps, and min/max attain it."""
    a, b = hybrid_ratio(epsilon=epsilon)
    assert hybrid_epsilon(a, b) <= Decimal(epsilon)
    assert Fraction(a, b) ** 2 <= Fraction(Context(prec=60).exp(Decimal(epsilon)))
    distributions = [exact_distribution(v, 0, 10, a, b) for v in range(11)]
    largest = max(p / q for first in distributions for second in distributions for p, q in zip(first, second))
    assert largest == Fraction(a, b) ** 2
    assert 2 * math.log(a / b) == pytest.approx(float(hybrid_epsilon(a, b)), abs=1e-12)


def test_level_values_scores_and_int64_bound():
    a, b = 133, 18
    g = a + b
    values, scores = hybrid_level_values(a, b), hybrid_scores(a, b)
    assert len(values) == len(scores) == g + 2
    assert all(Fraction(s + g * g, 2 * g * g) == r for s, r in zip(scores, values))
    assert values[g] == Fraction(a * b, g * g) and values[g + 1] == Fraction(a * a + a * b + b * b, g * g)
    question = {"mechanism": "hybrid", "ratio_a": a, "ratio_b": b, "bins": g, "levels": g + 2, "kind": "number", "min": 0, "max": 10}
    assert mech.mechanism_for(question).levels == g + 2 and codec.level_values(question) == values
    assert codec.tally(question, np.array([[g], [g + 1], [0]])).tolist() == [
        scores[g] + scores[g + 1] + scores[0], scores[g] ** 2 + scores[g + 1] ** 2 + scores[0] ** 2]
    assert max(abs(s) for s in scores) ** 2 * 10**8 < 2**63
    assert [codec.level_score(question, level) for level in range(g + 2)] == scores
    assert codec.tally_increments(question, g + 1) == [(0, scores[g + 1]), (1, scores[g + 1] ** 2)]
    piecewise = {"mechanism": "piecewise", "ratio_a": a, "ratio_b": b, "bins": g, "kind": "number", "min": 0, "max": 10}
    assert [codec.level_score(piecewise, level) for level in range(g)] == codec.level_scores(piecewise)


def _simulate(epsilon, truth_p, repetitions, n, seed, lo=0, hi=100):
    a, b = hybrid_ratio(epsilon=epsilon)
    rng = np.random.default_rng(seed)
    answers = lo + rng.binomial(hi - lo, truth_p, size=(repetitions, n))
    levels = randomize_hybrid(answers, lo=lo, hi=hi, ratio_a=a, ratio_b=b, rng=rng)
    scores = np.array(hybrid_scores(a, b), dtype=np.int64)[levels]
    estimates = [debias_hybrid_mean(int(row.sum()), int((row * row).sum()), n, ratio_a=a, ratio_b=b, lo=lo, hi=hi,
                                    level=0.95) for row in scores]
    return estimates, lo + (hi - lo) * truth_p


@pytest.mark.parametrize("epsilon, truth_p", [(1, 0.3), (4, 0.8), (4, 0.02)])
def test_simulated_means_are_unbiased_and_intervals_cover(epsilon, truth_p):
    """400 seeded surveys of 2000: the mean estimate within 4.5 SE of the truth, 95% intervals cover >= 93%."""
    estimates, truth = _simulate(epsilon, truth_p, 400, 2000, seed=int(epsilon * 100 + truth_p * 10))
    values = np.array([e.estimate for e in estimates])
    spread = values.std(ddof=1) / math.sqrt(len(values))
    assert abs(values.mean() - truth) <= 4.5 * spread, (values.mean(), truth, spread)
    coverage = np.mean([e.ci_low <= truth <= e.ci_high for e in estimates])
    assert coverage >= 0.93, coverage
    # The reported standard error is the spread of the estimates.
    assert np.mean([e.std_error for e in estimates]) == pytest.approx(values.std(ddof=1), rel=0.1)


def test_numpy_randomizer_fits_the_exact_distribution():
    """The simulation's randomizer draws every level with the exact probability (chi-square, seeded)."""
    from scipy.stats import chi2

    a, b = 5, 2
    rng = np.random.default_rng(11)
    for value in (18, 40, 90):
        levels = randomize_hybrid(np.full(200_000, value), lo=18, hi=90, ratio_a=a, ratio_b=b, rng=rng)
        expected = np.array([float(p) for p in exact_distribution(value, 18, 90, a, b)]) * levels.size
        counts = np.bincount(levels, minlength=a + b + 2)
        keep = expected > 0
        assert not counts[~keep].any()
        stat = float(((counts[keep] - expected[keep]) ** 2 / expected[keep]).sum())
        assert stat < chi2.ppf(1 - 1e-4, keep.sum() - 1), (value, stat)


def test_estimator_rejects_impossible_tallies():
    with pytest.raises(ValueError, match="score_sum"):
        debias_hybrid_mean(10**9, 10**18, 2, ratio_a=5, ratio_b=2, lo=0, hi=1, level=0.95)
    with pytest.raises(ValueError, match="score_squares"):
        debias_hybrid_mean(-40, 100, 2, ratio_a=5, ratio_b=2, lo=0, hi=1, level=0.95)
    with pytest.raises(ValueError, match="ratio_a"):
        debias_hybrid_mean(0, 0, 0, ratio_a=2, ratio_b=2, lo=0, hi=1, level=0.95)
    empty = debias_hybrid_mean(0, 0, 0, ratio_a=5, ratio_b=2, lo=0, hi=1, level=0.95)
    assert (empty.estimate, empty.ci_low, empty.ci_high) == (None, 0, 1)


HYBRID_SURVEY = {"slug": "hy", "title": "Hy", "epsilon": 3.0, "release_every": 1, "questions": [
    {"id": "smoker", "kind": "yes_no", "text": "Smoke?"},
    {"id": "hours", "kind": "number", "text": "Hours?", "min": 0, "max": 60}]}


def test_tally_trigger_equals_codec_tally_on_a_real_database(tmp_path):
    """Every level sent one at a time through the INSERT trigger gives codec.tally's Σs and Σs², and the same estimate."""
    design = build_design(parse_definition(HYBRID_SURVEY))
    question = design["questions"][1]
    assert question["mechanism"] == "hybrid"
    levels = list(range(question["levels"])) + [question["bins"], question["bins"] + 1, question["bins"] + 1, 3]
    path = tmp_path / "hy.sqlite"
    store = Store(path)
    try:
        store.create_survey("", design)
        for level in levels:
            store.add_response("hy", design["hash"], {"smoker": level % 2, "hours": level})
        store.add_response("hy", design["hash"], {"smoker": 1})
        counts = store.question_counts("hy")
        assert counts["hours"] == (len(levels), [int(x) for x in codec.tally(question, np.array(levels))])
        assert counts == store.recount("hy")
        answers = list(store.iter_answers("hy"))
    finally:
        store.close()
    reopened = Store(path)
    try:
        assert reopened.question_counts("hy") == counts
    finally:
        reopened.close()
    from survey.core.aggregate import aggregate_counts

    assert aggregate_counts(design, counts) == aggregate(design, answers)


def test_design_entry_and_response_probabilities():
    design = build_design(parse_definition(HYBRID_SURVEY))
    question = design["questions"][1]
    a, b = question["ratio_a"], question["ratio_b"]
    assert (question["bins"], question["levels"]) == (a + b, a + b + 2) and a + b <= MAX_HYBRID_BINS
    assert response_probabilities(question) == (a / (a + b), b / (a + b))
    assert question["epsilon"] == float(hybrid_epsilon(a, b)) <= question["epsilon_nominal"] <= 1.5
