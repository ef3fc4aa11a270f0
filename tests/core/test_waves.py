"""Series waves under two layers (Erlingsson, Pihur & Korolova 2014): linkage, change detection, unbiased estimates.

Seeded simulations. The linkage test is the issue's: 1,000 respondents answer two waves of a
series with one number question of 153 possible answers and 8 yes/no questions, the answers
unchanged (the observer's best case). Under the one-layer design the kept reports are a
fingerprint; under two layers equality and nearest-match linking stay within 1% of chance
(1/1,000), and the best change-detection test stays within (e^ε₁ − 1)/(e^ε₁ + 1).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from survey.core.definition import DefinitionError, parse_definition
from survey.core.design import build_design
from survey.core.linkage import (change_advantage, change_bound, change_simulated, linkage_bound, measure_linkage,
                                  profile_links, series_design)
from survey.core.mechanisms import mechanism_for

LINKED_ABOVE_CHANCE = 0.01  # the stated bound under two layers (docs/how-to/waves.md)
FIGURE = dict(yes_no=8, number=(0, 152), epsilon=4.0, mechanism="piecewise")


@pytest.fixture(scope="module")
def one_layer():
    return series_design(**FIGURE)


@pytest.fixture(scope="module")
def two_layers():
    return series_design(**FIGURE, wave_epsilon=2.0)


def test_one_layer_reports_are_a_fingerprint(one_layer):
    linkage = measure_linkage(one_layer, 1000, seed=29)
    assert linkage.unique > 0.9
    assert linkage.above_chance("equality") > 0.9
    assert linkage.above_chance("nearest") > 0.9


def test_two_layers_link_at_most_the_stated_share_above_chance(two_layers):
    linkage = measure_linkage(two_layers, 1000, seed=29)
    assert linkage.above_chance("equality") <= LINKED_ABOVE_CHANCE
    assert linkage.above_chance("nearest") <= LINKED_ABOVE_CHANCE


def test_many_earlier_waves_do_not_link_a_new_one_beyond_the_epsilon_1_bound(one_layer, two_layers):
    n = 1000
    assert profile_links(one_layer, n, seed=5, earlier=8) > 0.9
    bound = linkage_bound(two_layers, n)
    assert bound < 0.01
    # One respondent's success is Bernoulli(≤ bound): 5 SE of the share over n respondents.
    assert profile_links(two_layers, n, seed=5, earlier=8) <= bound + 5 * math.sqrt(bound / n)


def test_a_change_shows_under_one_layer_and_is_bounded_by_epsilon_1_under_two(one_layer, two_layers):
    question = one_layer["questions"][0]
    keep = 1 - question["flip_threshold"] / 2**53
    # One layer: the kept reports of no and yes differ w.p. p² + (1 − p)², and an unchanged answer never changes.
    assert change_advantage(question) == pytest.approx(keep**2 + (1 - keep) ** 2, abs=1e-12)
    assert change_bound(question) == 1.0
    layered = two_layers["questions"][0]
    bound = change_bound(layered)
    assert bound == pytest.approx(math.tanh(layered["wave"]["epsilon"] / 2))
    assert 0 < change_advantage(layered) <= bound
    # The "reports differ" attacker, simulated, is within 5 SE of its exact advantage and below the bound.
    for question in (question, layered):
        n = 20000
        simulated = change_simulated(question, n, seed=7)
        se = math.sqrt(0.5 / n)
        assert simulated <= change_bound(question) + 5 * se
        assert simulated == pytest.approx(_differ_advantage(question), abs=5 * se)


def _differ_advantage(question: dict) -> float:
    """Return P(differ | changed 0 → 1) − P(differ | stayed 0) of the two waves' reports, exactly."""
    mechanism = mechanism_for(question)
    inner = getattr(mechanism, "inner", mechanism)
    kept = inner.likelihood(np.arange(2))
    send = np.eye(2) if "wave" not in question else mechanism.layer.likelihood(np.arange(2))
    stayed = np.einsum("ab,b,cb->ac", send, kept[:, 0], send)
    moved = np.einsum("ab,b,cd,d->ac", send, kept[:, 0], send, kept[:, 1])
    return float(moved.sum() - np.trace(moved) - (stayed.sum() - np.trace(stayed)))


def _design(questions, epsilon=4.0, wave_epsilon=2.0, **extra):
    data = {"slug": "w", "title": "W", "epsilon": epsilon, "series": "s", "questions": questions, **extra}
    if wave_epsilon is not None:
        data["wave_epsilon"] = wave_epsilon
    return build_design(parse_definition(data))


QUESTIONS = [
    {"id": "yes", "kind": "yes_no", "text": "Yes?"},
    {"id": "pick", "kind": "choice", "text": "Which?", "options": ["a", "b", "c"]},
    {"id": "ticks", "kind": "multi", "text": "Which ones?", "options": ["a", "b", "c"]},
    {"id": "count", "kind": "number", "text": "How many?", "min": 0, "max": 100, "mechanism": "piecewise"},
    {"id": "rounded", "kind": "number", "text": "How many?", "min": 0, "max": 100, "mechanism": "duchi"},
]


def _answers(question: dict, n: int, rng):
    """Return n answers and the true values of the estimands."""
    kind = question["kind"]
    if kind == "yes_no":
        answers = (rng.random(n) < 0.3).astype(np.int64)
        return answers, [answers.mean()]
    if kind == "choice":
        answers = rng.choice(3, size=n, p=[0.5, 0.3, 0.2])
        return answers, [np.mean(answers == i) for i in range(3)]
    if kind == "multi":
        answers = (rng.random((n, 3)) < [0.2, 0.5, 0.8]).astype(np.int64)
        return answers, list(answers.mean(axis=0))
    answers = np.minimum(rng.geometric(0.05, size=n), 100)
    return answers, [answers.mean()]


def _tallies(mechanism, reports) -> list[int]:
    """Return the counts the store keeps: Σ indicator per estimand, or Σ level and Σ level² for a level report."""
    if mechanism.report == "level":
        return [int(reports.sum()), int((reports.astype(np.int64) ** 2).sum())]
    if mechanism.report == "index":
        return [int(np.sum(reports == i)) for i in range(mechanism.d)]
    return list(np.asarray(reports).reshape(len(reports), -1).sum(axis=0).astype(int))


@pytest.mark.parametrize("question", QUESTIONS, ids=[q["id"] for q in QUESTIONS])
def test_two_layer_estimates_are_unbiased(question):
    entry = _design([question])["questions"][0]
    mechanism = mechanism_for(entry)
    assert type(mechanism).__name__.startswith("TwoLayer")
    rng = np.random.default_rng(2914)
    n = 400_000
    answers, truths = _answers(entry, n, rng)
    estimates = mechanism.estimates(_tallies(mechanism, mechanism.randomize(answers, rng)), n, 0.95)
    for estimate, truth in zip(estimates, truths):
        assert abs(estimate.estimate - truth) <= 4.5 * estimate.std_error
        # The planner's worst case bounds the standard error actually seen (in the estimand's units).
        lo, hi = mechanism.estimand_range()
        assert estimate.std_error <= 1.05 * math.sqrt(mechanism.worst_variance() / n) * (hi - lo)


@pytest.mark.parametrize("question", [QUESTIONS[0], pytest.param(QUESTIONS[3], marks=pytest.mark.slow)],
                         ids=["yes", "count"])
def test_two_layer_intervals_cover_over_400_surveys(question):
    entry = _design([question])["questions"][0]
    mechanism = mechanism_for(entry)
    rng = np.random.default_rng(4000)
    n, repetitions, covered = 300, 400, 0
    for _ in range(repetitions):
        answers, truths = _answers(entry, n, rng)
        truth = 0.3 if entry["kind"] == "yes_no" else _geometric_mean_capped()
        estimate = mechanism.estimates(_tallies(mechanism, mechanism.randomize(answers, rng)), n, 0.95)[0]
        covered += estimate.ci_low <= truth <= estimate.ci_high
    assert covered / repetitions >= 0.95 - 2.33 * math.sqrt(0.95 * 0.05 / repetitions)


def _geometric_mean_capped() -> float:
    """Return E[min(G, 100)] for G geometric with p = 0.05 on 1, 2, …: Σ_{k=0}^{99} P(G > k)."""
    return sum(0.95**k for k in range(100))


def test_designs_without_wave_epsilon_are_as_before():
    design = _design(QUESTIONS[:2], wave_epsilon=None)
    assert "wave_epsilon" not in design
    assert all("wave" not in question for question in design["questions"])
    assert not type(mechanism_for(design["questions"][0])).__name__.startswith("TwoLayer")


def test_the_design_states_both_epsilons():
    design = _design(QUESTIONS[:3], epsilon=3.0, wave_epsilon=1.5)
    assert design["wave_epsilon"] == 1.5
    assert design["wave_epsilon_spent"] <= 1.5
    assert sum(q["wave"]["epsilon"] for q in design["questions"]) == pytest.approx(design["wave_epsilon_spent"])
    for question in design["questions"]:
        assert question["wave"]["epsilon"] <= question["epsilon"] / 2 + 1e-12


@pytest.mark.parametrize("value", [0.01, 5, True, "1"])
def test_wave_epsilon_is_validated_naming_the_range(value):
    with pytest.raises(DefinitionError) as info:
        _design(QUESTIONS[:1], wave_epsilon=value)
    assert "from 0.05 to epsilon = 4" in str(info.value)
    assert "wave_epsilon" in str(info.value)


def test_wave_epsilon_needs_a_series():
    data = {"slug": "w", "title": "W", "epsilon": 2, "wave_epsilon": 1, "questions": QUESTIONS[:1]}
    with pytest.raises(DefinitionError, match="only allowed with series"):
        parse_definition(data)


def test_a_mechanism_without_a_layer_is_refused_with_the_ones_that_have_one():
    question = {**QUESTIONS[3], "mechanism": "hybrid"}
    with pytest.raises(DefinitionError) as info:
        _design([question])
    assert "piecewise" in str(info.value) and "wave_epsilon" in str(info.value)


@pytest.mark.parametrize("question", QUESTIONS[:2] + QUESTIONS[3:], ids=["yes", "pick", "count", "rounded"])
def test_the_vectorised_draw_and_the_browser_replay_of_two_layers_agree(question):
    """The mean report (an option's share for a choice) of randomize and of replay on random words, within 5 SE."""
    from survey.core.replay import U32Stream

    entry = _design([question])["questions"][0]
    mechanism = mechanism_for(entry)
    true = 1 if entry["kind"] in ("yes_no", "choice") else 70
    rng = np.random.default_rng(11)
    drawn = mechanism.randomize(np.full(40_000, true), rng).astype(float)
    words = rng.integers(0, 2**32, size=3000 * 40, dtype=np.uint64).tolist()
    stream = U32Stream(words)
    replayed = np.array([mechanism.replay(true, stream) for _ in range(3000)], dtype=float)
    if entry["kind"] == "choice":
        drawn, replayed = drawn == true, replayed == true
    se = math.sqrt(np.var(drawn) / len(drawn) + np.var(replayed) / len(replayed))
    assert abs(np.mean(drawn) - np.mean(replayed)) <= 5 * se
