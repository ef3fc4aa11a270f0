"""The builder's per-question preview (planning.question_previews): the numbers `plan` gives, and margins the
intervals really have, checked by seeded simulation of the reports."""

from __future__ import annotations

import math

import numpy as np
import pytest

from survey.core.definition import parse_definition
from survey.core.design import build_design, response_probabilities
from survey.core.estimators import clopper_pearson, debias_binary
from survey.core.words import percent_up
from survey.core.planning import (NOMINAL_EPSILON, nominal_warning, plan_allocation, posterior_bound,
                             question_previews)

QUESTIONS = [{"id": "smoker", "kind": "yes_no", "text": "Smoke?"},
             {"id": "transport", "kind": "choice", "text": "How?", "options": ["walk", "bike", "bus", "car"]},
             {"id": "pets", "kind": "multi", "text": "Pets?", "options": ["dog", "cat", "fish"]},
             {"id": "age", "kind": "number", "text": "Age?", "min": 18, "max": 90, "weight": 0.5}]


def definition(epsilon=4.0, questions=QUESTIONS, **extra):
    return parse_definition({"slug": "s", "title": "T", "epsilon": epsilon, "questions": questions, **extra})


@pytest.mark.parametrize("sample", [None, 1, 2, 4])
def test_previews_agree_with_the_plan_of_the_same_allocation(sample):
    extra = {} if sample is None else {"allocation": "sample", "sample": sample}
    defn = definition(**extra)
    previews = question_previews(defn, respondents=1500, margin=0.04)
    planned = plan_allocation(defn, sample=sample, respondents=1500, margin=0.04)
    for preview, question in zip(previews, planned.questions, strict=True):
        assert (preview["id"], preview["mechanism"], preview["epsilon"]) == (question.id, question.mechanism,
                                                                           question.epsilon)
        assert preview["half_width"] == question.half_width
        assert preview["respondents_needed"] == question.respondents
        assert preview["posterior"] == posterior_bound(question.epsilon)
        assert preview["nominal"] is (question.epsilon > NOMINAL_EPSILON)
    assert [p["scale"] for p in previews] == [None, None, None, 72]


@pytest.mark.parametrize("sample", [None, 1, 3])
def test_previews_from_the_callers_design_are_the_previews_designed_again(sample):
    extra = {} if sample is None else {"allocation": "sample", "sample": sample}
    defn = definition(questions=[{k: v for k, v in q.items() if k != "weight"} for q in QUESTIONS], **extra)
    assert question_previews(defn, respondents=900, design=build_design(defn)) == question_previews(defn, respondents=900)


def test_sample_allocation_scales_respondents_by_k_over_m():
    """MATH §8: under sample, a question's reports come from m/k of the respondents, each at ε/m."""
    split = question_previews(definition(epsilon=1.0, questions=QUESTIONS[:1] * 1), respondents=1000, margin=0.05)
    two = [{**QUESTIONS[0], "id": f"q{i}"} for i in range(4)]
    sampled = question_previews(definition(epsilon=1.0, questions=two, allocation="sample", sample=1),
                                respondents=1000, margin=0.05)
    assert sampled[0]["epsilon"] == split[0]["epsilon"]
    assert sampled[0]["respondents_needed"] in (4 * split[0]["respondents_needed"] - 3,
                                                4 * split[0]["respondents_needed"])
    assert sampled[0]["half_width"] == pytest.approx(2 * split[0]["half_width"], rel=1e-12)


def one_preview(epsilon: float, question: dict) -> dict:
    [preview] = question_previews(definition(epsilon=epsilon, questions=[question]), respondents=1000, margin=0.05)
    return preview


def choice(d: int) -> dict:
    return {"id": "many", "kind": "choice", "text": "?", "options": [f"o{i}" for i in range(d)]}


def test_keep_is_the_chance_a_report_says_the_truth():
    rr = one_preview(0.1, QUESTIONS[0])
    assert rr["mechanism"] == "rr" and rr["keep"] == pytest.approx(1 / (1 + math.exp(-rr["epsilon"])), rel=1e-12)
    oue = one_preview(0.1, choice(100))
    assert oue["mechanism"] == "oue" and oue["keep"] == 0.5
    # Subset selection: the k-subset holds the true answer w.p. k e^ε′/(k e^ε′ + d − k).
    ss = one_preview(0.1, choice(30))
    k = build_design(definition(epsilon=0.1, questions=[choice(30)]))["questions"][0]["subset_size"]
    assert ss["mechanism"] == "ss" and 1 < k < 29
    assert ss["keep"] == pytest.approx(k * math.exp(ss["epsilon"]) / (k * math.exp(ss["epsilon"]) + 30 - k), rel=1e-9)
    # Multi: every option's bit at ε′/d, or (sampled) one option drawn w.p. 1/d and its bit at the full ε′.
    multi = one_preview(2.0, QUESTIONS[2])
    assert multi["mechanism"] == "rr"
    assert multi["keep"] == pytest.approx(1 / (1 + math.exp(-multi["epsilon"] / 3)), rel=1e-9)
    sampled = one_preview(0.1, QUESTIONS[2])
    assert sampled["mechanism"] == "sampled"
    assert sampled["keep"] == pytest.approx(1 / (1 + math.exp(-sampled["epsilon"])) / 3, rel=1e-9)


def test_the_nominal_warning_is_the_one_create_prints():
    assert nominal_warning("'a'", 5.0) == ("'a' has epsilon 5: someone who thought an answer 50/50 can be "
                                           f"{percent_up(posterior_bound(5.0), 2)} sure of it after seeing the report, "
                                           "so its protection is nominal")
    [loud] = question_previews(definition(epsilon=4.5, questions=QUESTIONS[:1]), respondents=10, margin=0.1)
    [quiet] = question_previews(definition(epsilon=4.0, questions=QUESTIONS[:1]), respondents=10, margin=0.1)
    assert loud["nominal"] and not quiet["nominal"]


def worst_case_share(p: float, q: float) -> float:
    """The true share θ whose reported share λ = q + θ(p − q) is nearest 1/2: the planner's worst case."""
    target = min(max(0.5, min(p, q)), max(p, q))
    return (target - q) / (p - q)


@pytest.mark.parametrize("index", [0, 1, 2])
def test_the_previewed_margin_is_the_margin_the_intervals_have(index):
    """Over 400 seeded surveys of the planned size, the mean half-width of the product's interval matches
    the preview (Clopper–Pearson on the reports, Bonferroni over a choice's options), and it covers."""
    from survey.core.design import build_design

    defn = definition(epsilon=2.0)
    design = build_design(defn)
    question = design["questions"][index]
    preview = question_previews(defn, respondents=1000, margin=0.05)[index]
    p, q = response_probabilities(question)
    theta = worst_case_share(p, q)
    rng = np.random.default_rng(6 + index)
    for n, planned in ((1000, preview["half_width"]), (preview["respondents_needed"], 0.05)):
        ones = rng.binomial(n, q + theta * (p - q), size=400)
        intervals = [debias_binary(int(k), n, p_one_if_true=p, p_one_if_false=q, level=0.95,
                                   alpha_divisor=preview["simultaneous_over"]) for k in ones]
        # The interval's half-width before it is clipped to [0, 1] (the worst case may sit at a bound).
        bounds = [clopper_pearson(int(k), n, level=1 - 0.05 / preview["simultaneous_over"]) for k in ones]
        widths = np.array([(high - low) / (2 * (p - q)) for low, high in bounds])
        assert widths.mean() == pytest.approx(planned, rel=0.02), (n, widths.mean(), planned)
        covered = np.mean([e.ci_low <= theta <= e.ci_high for e in intervals])
        assert covered >= 0.93
