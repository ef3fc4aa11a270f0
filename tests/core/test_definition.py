"""Survey definitions and designs: validation errors name the place; budgets split and never overspend."""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from survey.core.mechanisms.common import rr_epsilon, rr_flip_threshold
from survey.core.mechanisms.duchi import duchi_worst_variance
from survey.core.mechanisms.grr import grr_epsilon
from survey.core.mechanisms.hybrid import MAX_HYBRID_BINS, hybrid_epsilon, hybrid_ratio, hybrid_worst_variance
from survey.core.mechanisms.opm import MAX_OPM_RATIO_A, opm_epsilon, opm_ratio, opm_shape, opm_worst_variance
from survey.core.mechanisms.oue import use_oue
from survey.core.mechanisms.piecewise import (MAX_PIECEWISE_BINS, piecewise_epsilon, piecewise_ratio,
                                              piecewise_worst_variance)
from survey.core.definition import DefinitionError, load_definition, parse_definition, parse_definition_toml
from survey.core.design import build_design, design_hash

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def definition(**overrides):
    data = {"slug": "s", "title": "T", "epsilon": 1.0,
            "questions": [{"id": "q", "kind": "yes_no", "text": "Q?"}]}
    data.update(overrides)
    return data


def question(**fields):
    return definition(questions=[{"id": "q", "kind": "yes_no", "text": "Q?", **fields}])


def test_smoking_example_loads_and_designs():
    defn = load_definition(EXAMPLES / "smoking.toml")
    assert [q.kind for q in defn.questions] == ["yes_no", "yes_no", "choice", "number"]
    design = build_design(defn)
    # Five options at 2/3.5: subset selection of 2 beats GRR (Wang et al. 2016; Ye & Barg 2018).
    assert [q["mechanism"] for q in design["questions"]] == ["rr", "rr", "ss", "duchi"]
    nominal = [q["epsilon_nominal"] for q in design["questions"]]
    assert nominal == pytest.approx([2 / 3.5, 2 / 3.5, 2 / 3.5, 1 / 3.5])


def test_sample_allocation_is_designed_at_epsilon_over_m():
    defn = load_definition(EXAMPLES / "athletes.toml")
    assert defn.allocation == "sample" and defn.sample == 2
    design = build_design(defn)
    assert design["allocation"] == "sample" and design["sample"] == 2
    assert [q["epsilon_nominal"] for q in design["questions"]] == [0.5] * 6


BAD = [
    (definition(slug="Bad Slug"), None, "slug"),
    (definition(epsilon=0), None, "epsilon"),
    (definition(epsilon=float("nan")), None, "epsilon"),
    (definition(epsilon=21), None, "epsilon"),
    (definition(epsilon=True), None, "epsilon"),
    (definition(allocation="random"), None, "allocation"),
    (definition(questions=[]), None, "questions"),
    (definition(colour="red"), None, "colour"),
    (definition(sample=2), None, "sample"),
    (question(kind="essay"), "q", "kind"),
    (question(weight=-1), "q", "weight"),
    (question(options=["a"]), "q", "options"),
    (definition(questions=[{"id": "1q", "kind": "yes_no", "text": "Q?"}]), "#1", "id"),
    (definition(questions=[{"id": "q", "kind": "choice", "text": "Q?", "options": ["a"]}]), "q", "options"),
    (definition(questions=[{"id": "q", "kind": "choice", "text": "Q?", "options": ["a", "a"]}]), "q", "options"),
    (definition(questions=[{"id": "q", "kind": "multi", "text": "Q?", "options": []}]), "q", "options"),
    (definition(questions=[{"id": "q", "kind": "number", "text": "Q?", "min": 5, "max": 5}]), "q", "max"),
    (definition(questions=[{"id": "q", "kind": "number", "text": "Q?", "min": 0.5, "max": 5}]), "q", "min"),
    (definition(questions=[{"id": "q", "kind": "yes_no", "text": ""}]), "q", "text"),
    (question(mechanism="duchi"), "q", "mechanism"),
    (definition(questions=[{"id": "q", "kind": "number", "text": "Q?", "min": 0, "max": 5, "mechanism": "PM"}]),
     "q", "mechanism"),
    (definition(questions=[{"id": "q", "kind": "yes_no", "text": "A"},
                           {"id": "q", "kind": "yes_no", "text": "B"}]), "q", "id"),
]


@pytest.mark.parametrize("data,question_id,field", BAD, ids=[f"{b[2]}-{i}" for i, b in enumerate(BAD)])
def test_errors_name_the_file_question_and_field(data, question_id, field):
    with pytest.raises(DefinitionError) as info:
        parse_definition(data, source="survey.toml")
    error = info.value
    assert (error.source, error.question, error.field) == ("survey.toml", question_id, field)
    assert str(error).startswith("survey.toml")
    assert f"field {field!r}" in str(error)


@pytest.mark.parametrize("text", ["slug = ", "epsilon = " + "1" * 5000, "x = " + "[" * 5000 + "]" * 5000])
def test_unparseable_toml_is_a_definition_error(text):
    with pytest.raises(DefinitionError) as info:
        parse_definition_toml(text, source="bad.toml")
    assert info.value.source == "bad.toml"


def test_missing_file_is_a_definition_error(tmp_path):
    with pytest.raises(DefinitionError, match="cannot read"):
        load_definition(tmp_path / "absent.toml")


def test_tiny_share_of_the_budget_is_refused():
    data = definition(epsilon=0.01, questions=[{"id": "a", "kind": "yes_no", "text": "A", "weight": 1000},
                                               {"id": "b", "kind": "yes_no", "text": "B", "weight": 1}])
    with pytest.raises(DefinitionError) as info:
        build_design(parse_definition(data))
    assert (info.value.question, info.value.field) == ("b", "weight")


def test_choice_keeps_grr_where_no_subset_beats_it():
    for epsilon, d in ((1.0, 2), (1.0, 3), (4.0, 3), (8.0, 5)):
        data = definition(epsilon=epsilon, questions=[{"id": "c", "kind": "choice", "text": "C",
                                                       "options": [f"o{i}" for i in range(d)]}])
        assert build_design(parse_definition(data))["questions"][0]["mechanism"] == "grr", (epsilon, d)


def test_choice_switches_to_oue_exactly_at_d_3e_eps_plus_2():
    for epsilon in (0.5, 1.0, 2.0):
        boundary = 3 * math.exp(epsilon) + 2
        for d in (math.floor(boundary), math.floor(boundary) + 1):
            options = [f"o{i}" for i in range(d)]
            data = definition(epsilon=epsilon, questions=[{"id": "c", "kind": "choice", "text": "C",
                                                           "options": options}])
            mechanism = build_design(parse_definition(data))["questions"][0]["mechanism"]
            assert use_oue(epsilon=epsilon, d=d) is (d >= boundary), (epsilon, d)
            # Around the GRR/OUE boundary subset selection has the least variance of the three.
            assert mechanism == "ss", (epsilon, d)


def random_definition(rng) -> dict:
    questions = []
    for index in range(int(rng.integers(1, 9))):
        kind = ["yes_no", "choice", "multi", "number"][int(rng.integers(4))]
        entry = {"id": f"q{index}", "kind": kind, "text": "?", "weight": float(rng.uniform(0.2, 5))}
        if kind in ("choice", "multi"):
            entry["options"] = [f"o{i}" for i in range(int(rng.integers(2, 40)))]
        if kind == "number":
            entry.update(min=int(rng.integers(-100, 100)), max=int(rng.integers(101, 10_000)))
        questions.append(entry)
    return definition(epsilon=float(rng.uniform(0.05, 20)), questions=questions)


@pytest.mark.slow
def test_realised_epsilons_never_exceed_the_shares_or_the_budget():
    rng = np.random.default_rng(7)
    for _ in range(400):
        data = random_definition(rng)
        design = build_design(parse_definition(data))
        weights = [Fraction(q["weight"]) for q in data["questions"]]
        total = sum(Fraction(q["epsilon"]) for q in design["questions"])
        assert total <= Fraction(data["epsilon"])
        for entry, weight in zip(design["questions"], weights):
            share = Fraction(data["epsilon"]) * weight / sum(weights)
            assert Fraction(entry["epsilon_nominal"]) <= share
            assert 0 < Fraction(entry["epsilon"]) <= Fraction(entry["epsilon_nominal"])
            if entry["mechanism"] == "piecewise" and float(share) > 2 * math.log(MAX_PIECEWISE_BINS - 1):
                # e^(eps/2) beyond the largest ratio a/b with a + b <= MAX_PIECEWISE_BINS: eps' = 2 ln 4095 < eps.
                assert (entry["ratio_a"], entry["ratio_b"]) == (MAX_PIECEWISE_BINS - 1, 1)
                continue
            if entry["mechanism"] == "opm" and float(share) > math.log(MAX_OPM_RATIO_A):
                # e^eps beyond the largest ratio A/B with A <= 2^20: eps' = ln 2^20 < eps.
                assert (entry["ratio_a"], entry["ratio_b"]) == (MAX_OPM_RATIO_A, 1)
                continue
            if entry["mechanism"] == "hybrid":
                # At most 512 levels: a/b is a coarser rational (the design compares variances at eps').
                assert entry["epsilon"] > 0.995 * float(share), "rounding costs only a sliver of the budget"
                continue
            assert entry["epsilon"] > 0.999 * float(share), "rounding costs only a sliver of the budget"


def _number_variances(epsilon) -> dict:
    """Return the worst-case variance of each number mechanism at a nominal epsilon, with its ratio if any."""
    threshold = rr_flip_threshold(epsilon=epsilon)
    a, b = piecewise_ratio(epsilon=epsilon)
    c, d = hybrid_ratio(epsilon=epsilon)
    return {"duchi": (duchi_worst_variance(threshold), None),
            "piecewise": (piecewise_worst_variance(a, b), (a, b)),
            "hybrid": (hybrid_worst_variance(c, d), (c, d)),
            "opm": (opm_worst_variance(*opm_parameters(epsilon)), opm_parameters(epsilon))}


def opm_parameters(epsilon) -> tuple[int, int, int, int]:
    """Return (A, B, m, w) of the optimal piecewise mechanism at a nominal epsilon."""
    a, b = opm_ratio(epsilon=epsilon)
    return (a, b, *opm_shape(a, b))


@pytest.mark.parametrize("epsilon, mechanism", [(0.3, "duchi"), (0.5, "duchi"), (0.7, "hybrid"), (1.0, "hybrid"),
                                                (1.29, "hybrid"), (1.6, "hybrid"), (2.0, "opm"), (4.0, "opm"),
                                                (8.0, "opm"), (12.5, "opm"), (20.0, "opm")])
def test_number_mechanism_is_the_one_of_lowest_worst_case_variance(epsilon, mechanism):
    """Duchi et al. (2013) at small eps, the hybrid (Wang et al. 2019) from about 0.61, the optimal piecewise from 1.65."""
    data = definition(epsilon=epsilon, questions=[{"id": "n", "kind": "number", "text": "N", "min": 0, "max": 9}])
    entry = build_design(parse_definition(data))["questions"][0]
    assert entry["mechanism"] == mechanism
    variances = _number_variances(entry["epsilon_nominal"])
    assert min(variances, key=lambda name: variances[name][0]) == mechanism
    ratio = variances[mechanism][1]
    if mechanism == "opm":
        a, b, m, w = ratio
        assert (entry["ratio_a"], entry["ratio_b"], entry["steps"], entry["band"], entry["levels"]) == (a, b, m, w, m + w)
        assert entry["epsilon"] == float(opm_epsilon(a, b)) <= epsilon and "flip_threshold" not in entry
    elif mechanism == "piecewise":
        a, b = ratio
        assert (entry["ratio_a"], entry["ratio_b"], entry["bins"]) == (a, b, a + b)
        assert entry["epsilon"] == float(piecewise_epsilon(a, b)) <= epsilon
        assert "flip_threshold" not in entry
    elif mechanism == "hybrid":
        a, b = ratio
        assert (entry["ratio_a"], entry["ratio_b"], entry["bins"], entry["levels"]) == (a, b, a + b, a + b + 2)
        assert a + b <= MAX_HYBRID_BINS and "flip_threshold" not in entry
        assert hybrid_epsilon(a, b) <= Decimal(entry["epsilon_nominal"]) <= Decimal(epsilon)
        assert entry["epsilon"] == float(hybrid_epsilon(a, b))
    else:
        assert entry["flip_threshold"] == rr_flip_threshold(epsilon=entry["epsilon_nominal"])
        assert "ratio_a" not in entry


def test_the_design_picks_the_least_worst_case_variance_over_a_grid_of_epsilons():
    """Wherever a number mechanism's worst case is the lowest it is chosen (a tie goes to the one listed first)."""
    for epsilon in [0.05, 0.2, 0.4, 0.6, 0.62, 0.8, 1.1, 1.5, 2.5, 3.0, 5.0, 6.5, 10.0, 11.0, 14.0]:
        data = definition(epsilon=epsilon, questions=[{"id": "n", "kind": "number", "text": "N", "min": 0, "max": 9}])
        entry = build_design(parse_definition(data))["questions"][0]
        variances = _number_variances(entry["epsilon_nominal"])
        assert entry["mechanism"] == min(variances, key=lambda name: variances[name][0]), epsilon
    assert build_design(parse_definition(definition(epsilon=0.004, questions=[
        {"id": "n", "kind": "number", "text": "N", "min": 0, "max": 9}])))["questions"][0]["mechanism"] == "duchi"


def test_thresholds_reproduce_the_realised_epsilon():
    data = definition(epsilon=3.0, questions=[
        {"id": "y", "kind": "yes_no", "text": "Y"},
        {"id": "c", "kind": "choice", "text": "C", "options": ["a", "b", "c"]},
        {"id": "m", "kind": "multi", "text": "M", "options": ["a", "b"]},
        {"id": "n", "kind": "number", "text": "N", "min": 0, "max": 10}])
    questions = {q["id"]: q for q in build_design(parse_definition(data))["questions"]}
    assert questions["y"]["epsilon"] == float(rr_epsilon(questions["y"]["flip_threshold"]))
    assert questions["c"]["epsilon"] == float(grr_epsilon(questions["c"]["keep_threshold"], 3))
    # Two options at 0.75: a sampled option gains under 5% over both bits at 0.375, so per-bit RR.
    assert questions["m"]["mechanism"] == "rr"
    assert questions["m"]["epsilon"] == pytest.approx(2 * float(rr_epsilon(questions["m"]["flip_threshold"])))
    assert questions["n"]["mechanism"] == "hybrid"
    assert questions["n"]["epsilon"] == float(hybrid_epsilon(questions["n"]["ratio_a"], questions["n"]["ratio_b"]))


def test_design_hash_covers_every_parameter():
    design = build_design(load_definition(EXAMPLES / "smoking.toml"))
    assert design["hash"] == design_hash(design)
    changed = {**design, "questions": [{**design["questions"][0], "flip_threshold": 1}, *design["questions"][1:]]}
    assert design_hash(changed) != design["hash"]
    again = build_design(load_definition(EXAMPLES / "smoking.toml"))
    assert again["hash"] == design["hash"], "the same definition always gives the same design"


def number_definition(epsilon, mechanism=None, **overrides):
    number = {"id": "n", "kind": "number", "text": "N", "min": 0, "max": 9}
    if mechanism is not None:
        number["mechanism"] = mechanism
    return parse_definition(definition(epsilon=epsilon, questions=[number], **overrides))


def test_the_mechanism_field_of_a_number_question():
    assert number_definition(2.0).questions[0].mechanism == "auto"
    for mechanism in ("auto", "hybrid", "piecewise", "duchi", "opm"):
        assert number_definition(2.0, mechanism).questions[0].mechanism == mechanism
    with pytest.raises(DefinitionError) as info:
        parse_definition(definition(questions=[{"id": "c", "kind": "choice", "text": "C", "options": ["a", "b"],
                                                "mechanism": "auto"}]))
    assert (info.value.question, info.value.field) == ("c", "mechanism")
    assert "only a number question has a mechanism, not a choice question" in str(info.value)
    with pytest.raises(DefinitionError) as info:
        number_definition(2.0, "laplace")
    assert "must be one of auto, hybrid, piecewise, duchi, opm, got 'laplace'" in str(info.value)


@pytest.mark.parametrize("epsilon", [0.3, 2.0, 4.0, 15.0])
@pytest.mark.parametrize("mechanism", ["hybrid", "piecewise", "duchi"])
def test_a_forced_mechanism_is_designed_at_the_questions_share(epsilon, mechanism):
    entry = build_design(number_definition(epsilon, mechanism))["questions"][0]
    assert entry["mechanism"] == mechanism and entry["chosen_by"] == "definition"
    assert entry["epsilon"] <= entry["epsilon_nominal"] == epsilon
    if mechanism == "duchi":
        assert entry["flip_threshold"] == rr_flip_threshold(epsilon=Decimal(epsilon))
    else:
        ratio = (hybrid_ratio if mechanism == "hybrid" else piecewise_ratio)(epsilon=Decimal(epsilon))
        assert (entry["ratio_a"], entry["ratio_b"]) == ratio


@pytest.mark.parametrize("epsilon", [0.3, 0.7, 2.0, 12.5])
def test_auto_is_the_worst_case_choice_and_leaves_the_design_unchanged(epsilon):
    auto = build_design(number_definition(epsilon, "auto"))
    assert auto == build_design(number_definition(epsilon))
    assert "chosen_by" not in auto["questions"][0]
    forced = build_design(number_definition(epsilon, auto["questions"][0]["mechanism"]))
    assert {k: v for k, v in forced["questions"][0].items() if k != "chosen_by"} == auto["questions"][0]
    assert forced["hash"] != auto["hash"] == design_hash(auto)


def test_a_forced_mechanism_impossible_at_the_share_is_a_definition_error():
    defn = parse_definition(definition(epsilon=0.005, questions=[
        {"id": "days", "kind": "number", "text": "D", "min": 0, "max": 30, "mechanism": "hybrid"}]),
        source="days.toml")
    with pytest.raises(DefinitionError) as info:
        build_design(defn)
    error = info.value
    assert (error.source, error.question, error.field) == ("days.toml", "days", "mechanism")
    assert "hybrid mechanism needs a share of the budget of at least 0.00783" in str(error)
    assert 'use mechanism "auto" or "duchi"' in str(error)
    assert build_design(number_definition(0.00783, "hybrid"))["questions"][0]["mechanism"] == "hybrid"
    assert build_design(number_definition(0.001, "piecewise"))["questions"][0]["mechanism"] == "piecewise"
    assert build_design(number_definition(0.005, "duchi"))["questions"][0]["mechanism"] == "duchi"


def test_the_planner_and_the_previews_use_the_forced_mechanism():
    from survey.core.planning import plan, question_previews, recommend

    for mechanism in ("hybrid", "piecewise", "duchi", "opm"):
        defn = number_definition(4.0, mechanism)
        assert [q["mechanism"] for a in plan(defn)["allocations"] for q in a["questions"]] == [mechanism] * 2
        assert question_previews(defn)[0]["mechanism"] == mechanism
    worse = plan(number_definition(4.0, "piecewise"))["allocations"][0]["questions"][0]
    best = plan(number_definition(4.0))["allocations"][0]["questions"][0]
    assert best["mechanism"] == "opm" and worse["half_width"] > best["half_width"]
    # At eps/2 (sample 2 of 2) the hybrid is impossible: that allocation is left out, the others are planned.
    two = definition(epsilon=0.01, questions=[
        {"id": "a", "kind": "number", "text": "A", "min": 0, "max": 9, "mechanism": "hybrid"},
        {"id": "b", "kind": "number", "text": "B", "min": 0, "max": 9, "weight": 0.0001}])
    planned = plan(parse_definition(two))
    assert [(a["allocation"], a["sample"]) for a in planned["allocations"]] == [("split", None), ("sample", 1)]
    assert recommend(parse_definition(two))["sample"] in (None, 1)
