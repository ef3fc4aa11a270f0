"""Choice and multi-select frequency oracles: subset selection, the sampled multi report, the
design's choice among encodings, exact privacy of each, and simultaneous intervals.

Statistical tests follow tests/core/test_estimators.py: the mean of R estimates within 4 exact
standard errors (from λ(1−λ)/(n(p−q)²)), joint coverage of the options' intervals ≥ 93% over
≥ 400 seeded repetitions (Wang et al. 2016; Ye & Barg 2018).
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from survey.core import mechanisms as mech
from survey.core.mechanisms.common import TWO53, uniform_variance, worst_case_variance
from survey.core.mechanisms.oue import use_oue
from survey.core.mechanisms.subset import ss_epsilon, ss_probabilities
from survey.core.aggregate import QuestionCounts, question_rows
from survey.core.definition import parse_definition
from survey.core.design import build_design, response_probabilities
from survey.core.estimators import debias_indicators

MIN_COVERAGE = 0.93
TOLERANCE_SE = 4.0


def design_of(kind: str, d: int, epsilon: float) -> dict:
    """Return the design entry of a one-question survey of ``kind`` with d options at ``epsilon``."""
    return build_design(parse_definition({
        "slug": "f", "title": "F", "epsilon": epsilon,
        "questions": [{"id": "q", "kind": kind, "text": "Q", "options": [f"o{i}" for i in range(d)]}]}))["questions"][0]


def exact_report_distribution(question: dict, answer) -> dict[tuple, Fraction]:
    """Return P(report | answer) exactly, by enumerating the mechanism's integer parameters."""
    d = len(question["options"])
    mechanism = question["mechanism"]
    if mechanism == "ss":
        k = question["subset_size"]
        p = Fraction(question["keep_threshold"], TWO53)
        inside, outside = p / math.comb(d - 1, k - 1), (1 - p) / math.comb(d - 1, k)
        return {tuple(int(i in s) for i in range(d)): inside if answer in s else outside
                for s in map(set, itertools.combinations(range(d), k))}
    flip = Fraction(question["flip_threshold"], TWO53)
    out: dict[tuple, Fraction] = {}
    if mechanism == "sampled":
        for j in range(d):
            one = (1 - flip) if answer[j] else flip
            hot = tuple(int(i == j) for i in range(d))
            out[hot] = out.get(hot, 0) + one / d
            zero = (0,) * d
            out[zero] = out.get(zero, 0) + (1 - one) / d
        return out
    for bits in itertools.product((0, 1), repeat=d):
        out[bits] = math.prod((1 - flip) if b == a else flip for b, a in zip(bits, answer))
    return out


def max_log_ratio(question: dict, answers) -> float:
    """Return max over answer pairs and reports of ln P(y | a)/P(y | a′): the mechanism's exact ε."""
    tables = [exact_report_distribution(question, a) for a in answers]
    worst = Fraction(1)
    for first, second in itertools.permutations(tables, 2):
        for report, probability in first.items():
            worst = max(worst, probability / second[report])
    return math.log(worst)


# The design's choice


def test_subset_selection_is_chosen_where_its_variance_is_lowest():
    question = design_of("choice", 8, 0.5)
    assert (question["mechanism"], question["subset_size"]) == ("ss", 3)
    variances = mech.choice_variances(epsilon=0.5, d=8)
    assert min(variances["grr"], variances["oue"]) / variances["ss"] == pytest.approx(1.33, abs=0.01)
    assert ss_epsilon(question["keep_threshold"], 8, 3) <= 0.5
    assert question["epsilon"] == float(ss_epsilon(question["keep_threshold"], 8, 3))
    for d, epsilon, k, ratio in ((8, 1, 2, 1.24), (32, 2, 4, 1.16), (128, 4, 2, 1.18)):  # Wang et al. 2016; Ye & Barg 2018
        assert (design_of("choice", d, epsilon)["subset_size"], ) == (k, )
        variances = mech.choice_variances(epsilon=epsilon, d=d)
        assert min(variances["grr"], variances["oue"]) / variances["ss"] == pytest.approx(ratio, abs=0.01)


def test_the_design_takes_the_least_variance_only_for_a_real_gain():
    for d, epsilon in itertools.product((3, 4, 5, 8, 20, 64, 256), (0.3, 1.0, 3.0)):
        question = design_of("choice", d, epsilon)
        variances = mech.choice_variances(epsilon=epsilon, d=d)
        classic = "oue" if use_oue(epsilon=epsilon, d=d) else "grr"
        if variances["ss"] <= 0.95 * min(variances["grr"], variances["oue"]):
            assert question["mechanism"] == "ss", (d, epsilon)
        else:
            assert question["mechanism"] == classic, (d, epsilon)
        p, q = response_probabilities(question)
        chosen = uniform_variance(p, q, d)
        assert chosen <= min(variances.values()) / 0.95 + 1e-9, (d, epsilon)


def test_multi_picks_the_encoding_of_least_worst_case_variance():
    assert design_of("multi", 5, 1.0)["mechanism"] == "sampled"
    assert design_of("multi", 5, 8.0)["mechanism"] == "rr"
    assert design_of("multi", 2, 1.0)["mechanism"] == "rr"
    for d, epsilon in itertools.product((1, 2, 3, 5, 12, 64), (0.5, 1.0, 2.0, 4.0, 8.0)):
        question = design_of("multi", d, epsilon)
        variances = mech.multi_worst_variances(epsilon=epsilon, d=d)
        p, q = response_probabilities(question)
        assert worst_case_variance(p, q) == pytest.approx(variances[question["mechanism"]])
        assert variances[question["mechanism"]] <= min(variances.values()) / 0.95


# Exact privacy: the realised ε′ the design records is the mechanism's true worst ratio


@pytest.mark.parametrize("d, epsilon", [(6, 0.5), (8, 0.5), (10, 1.0)])
def test_subset_selection_epsilon_is_exact(d, epsilon):
    question = design_of("choice", d, epsilon)
    assert question["mechanism"] == "ss"
    exact = max_log_ratio(question, range(d))
    assert exact == pytest.approx(question["epsilon"], rel=1e-12) and exact <= epsilon


@pytest.mark.parametrize("d, epsilon, mechanism", [(3, 1.0, "sampled"), (4, 1.0, "sampled"), (3, 8.0, "rr")])
def test_multi_epsilon_counts_every_bit_a_change_of_answer_can_change(d, epsilon, mechanism):
    question = design_of("multi", d, epsilon)
    assert question["mechanism"] == mechanism
    exact = max_log_ratio(question, [list(bits) for bits in itertools.product((0, 1), repeat=d)])
    assert exact == pytest.approx(question["epsilon"], rel=1e-9) and exact <= epsilon


def test_subset_probabilities_match_the_enumeration():
    question = design_of("choice", 6, 0.5)
    p, q = ss_probabilities(question["keep_threshold"], 6, question["subset_size"])
    table = exact_report_distribution(question, 2)
    assert sum(table.values()) == 1
    assert sum(prob for report, prob in table.items() if report[2]) == p
    assert sum(prob for report, prob in table.items() if report[4]) == q


# Statistical: unbiased and simultaneous


def simulate_counts(question: dict, truth_draw, n: int, repetitions: int, rng) -> np.ndarray:
    """Return (repetitions, d) counts of each option's indicator from n reports per repetition."""
    reports = mech.randomize_question(question, truth_draw(repetitions * n), rng)
    return reports.reshape(repetitions, n, -1).sum(axis=1)


def check_unbiased_and_simultaneous(question, counts, n, shares, label):
    p, q = response_probabilities(question)
    rows = [question_rows(question, QuestionCounts(n=n, ones=row), level=0.95) for row in counts]
    for option, share in enumerate(shares):
        lam = q + share * (p - q)
        se = math.sqrt(lam * (1 - lam) / (n * (p - q) ** 2) / len(rows))
        mean = np.mean([row[option].estimate for row in rows])
        assert abs(mean - share) <= TOLERANCE_SE * se, f"{label} option {option}: {(mean - share) / se:.2f} SE"
    joint = np.mean([all(r.ci_low <= s <= r.ci_high for r, s in zip(row, shares)) for row in rows])
    assert len(rows) >= 400 and joint >= MIN_COVERAGE, f"{label}: joint coverage {joint:.3f}"
    return joint


@pytest.mark.parametrize("d, epsilon, n", [(8, 0.5, 2000), (10, 1.0, 1000), (32, 2.0, 1000), (6, 0.5, 300)])
def test_subset_selection_is_unbiased_and_covers_simultaneously(d, epsilon, n):
    rng = np.random.default_rng([7, d, int(epsilon * 10), n])
    question = design_of("choice", d, epsilon)
    assert question["mechanism"] == "ss"
    shares = rng.dirichlet(np.ones(d))
    shares[0] += 0.3
    shares /= shares.sum()
    counts = simulate_counts(question, lambda size: rng.choice(d, size=size, p=shares), n, 400, rng)
    check_unbiased_and_simultaneous(question, counts, n, shares, f"ss d={d} eps={epsilon}")


@pytest.mark.parametrize("epsilon, mechanism", [(1.0, "sampled"), (8.0, "rr")])
def test_multi_d5_is_unbiased_and_covers_simultaneously(epsilon, mechanism):
    rng = np.random.default_rng([8, int(epsilon)])
    question = design_of("multi", 5, epsilon)
    assert question["mechanism"] == mechanism
    shares = np.array([0.05, 0.3, 0.5, 0.7, 0.95])
    n = 1500
    counts = simulate_counts(question, lambda size: (rng.random((size, 5)) < shares).astype(np.int64), n, 500, rng)
    check_unbiased_and_simultaneous(question, counts, n, shares, f"multi d=5 eps={epsilon}")


def test_choice_d10_joint_coverage_is_simultaneous_not_per_option():
    """Per-option 95% intervals would miss jointly far more often; Bonferroni over d keeps ≥ 93%."""
    rng = np.random.default_rng(10)
    question = design_of("choice", 10, 1.0)
    shares = np.full(10, 0.1)
    n = 1000
    counts = simulate_counts(question, lambda size: rng.choice(10, size=size, p=shares), n, 400, rng)
    joint = check_unbiased_and_simultaneous(question, counts, n, shares, "choice d=10")
    p, q = response_probabilities(question)
    single = [debias_indicators([int(c)], n, p=p, q=q, level=0.95)[0] for c in counts.ravel()]
    per_option = np.mean([all(e.ci_low <= 0.1 <= e.ci_high for e in single[i * 10:(i + 1) * 10])
                          for i in range(len(counts))])
    assert per_option < joint
