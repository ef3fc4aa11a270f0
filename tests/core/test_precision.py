"""Precision warnings and crosstab precision: the rule and its sentences (survey/core/precision.py), the planning
formula of a conditional share against simulated crosstabs, and where they show: the builder (server-rendered and
the JSON preview), `ldp-survey create` and `ldp-survey plan`."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

from survey.cli import main
from survey.core.definition import parse_definition, parse_definition_toml
from survey.core.design import build_design
from survey.core.crosstab_planning import conditional_share_variance
from survey.core.planning import plan, plan_question
from survey.core.precision import (about, crosstab_precision, imprecise_questions,
                                   precision_warnings, remedies, too_imprecise)
from conftest import definition
from test_builder import fields, owner, page, press  # noqa: F401 (owner is a fixture)
from test_crosstab import YES_NO_2, choice_yes_no, draw_pairs, make_design, simulate, values

IMPRECISE_TOML = """slug = "habits"
title = "Habits"
epsilon = 2.0
[[questions]]
id = "cheated"
kind = "yes_no"
text = "Have you ever cheated?"
[[questions]]
id = "sector"
kind = "choice"
text = "Which sector do you work in?"
options = ["Business", "Science", "Arts", "Other"]
[[questions]]
id = "sports"
kind = "multi"
text = "Which sports do you do?"
options = ["running", "swimming", "cycling", "football", "tennis"]
""" + definition("age")

PRECISE_TOML = 'slug = "precise"\ntitle = "Precise"\nepsilon = 4.0\n' + definition("smoker_lung")


def definition(text: str):
    return parse_definition_toml(text, source="test.toml")


# The rule and its sentences


def test_a_multi_select_at_epsilon_2_over_4_questions_is_too_imprecise_at_1000():
    defn = definition(IMPRECISE_TOML)
    found = {item.id: item for item in imprecise_questions(defn, respondents=1000)}
    assert set(found) == {"cheated", "sector", "sports", "age"}
    sports = found["sports"]
    assert sports.half_width == pytest.approx(0.549, abs=5e-4)
    design = build_design(defn)
    assert sports.needed == plan_question(design["questions"][2], respondents=1000, margin=0.10).respondents
    warning = precision_warnings(defn, respondents=1000, recommended=plan(defn)["recommended"])["sports"]
    assert warning.startswith("With 1,000 respondents the estimates of question 'sports' will be within ±54.9 points")
    assert "wider than the whole range from 0% to 100%" in warning
    assert f"about {about(sports.needed)} respondents for ±10 points" in warning
    assert warning.endswith("or a larger ε, fewer questions or the sample allocation with 1 question per respondent")
    assert "±12.7% of the range" in precision_warnings(defn, respondents=1000)["age"]
    assert "from 18 to 90" not in precision_warnings(defn, respondents=1000)["age"], "±12.7% is within the range"


def test_no_warning_for_a_precise_survey_and_the_threshold_is_configurable():
    defn = definition(PRECISE_TOML)
    assert precision_warnings(defn, respondents=1000) == {}
    [(qid, message), _] = precision_warnings(defn, respondents=1000, warn_margin=0.03).items()
    assert qid == "smoker" and "for ±3 points" in message


def test_margins_above_100_points_read_as_wider_than_the_range():
    sentence = too_imprecise("the estimate of this question", respondents=40, half_width=1.24, warn_margin=0.1,
                             needed=6_149)
    assert sentence == ("With 40 respondents the estimate of this question will be within ±124.0 points: the "
                        "interval is wider than the whole range from 0% to 100%, so it tells nothing; it needs "
                        "about 6,200 respondents for ±10 points")
    assert "too imprecise to be useful" in too_imprecise("x", respondents=1, half_width=0.2, warn_margin=0.1,
                                                         needed=4)


@pytest.mark.parametrize("count,words", [(7, "7"), (663, "670"), (30_140, "31,000"), (31_000, "31,000"),
                                         (1_234_567, "1,300,000")])
def test_about_rounds_up_to_two_significant_figures(count, words):
    assert about(count) == words


def test_remedies_name_only_what_would_help():
    single = parse_definition({"slug": "s", "title": "S", "epsilon": 20, "questions": [
        {"id": "a", "kind": "yes_no", "text": "A?"}]})
    assert remedies(single, {"allocation": "split", "sample": None}) == []
    defn = definition(IMPRECISE_TOML)
    assert remedies(defn) == ["a larger ε", "fewer questions"]
    assert remedies(defn, {"allocation": "sample", "sample": 2})[-1] == ("the sample allocation with 2 questions "
                                                                          "per respondent")


# The planning formula of a conditional share, against the real crosstab path

REPETITIONS, RESPONDENTS = 2000, 3000


@pytest.mark.slow
@pytest.mark.parametrize("questions,epsilon,joint,a_option", [
    (YES_NO_2, 2.0, [[0.5, 0.1], [0.15, 0.25]], "yes"),
    (choice_yes_no(3), 3.0, [[0.2, 0.1], [0.15, 0.25], [0.2, 0.1]], "o1"),
])
def test_the_conditional_share_variance_matches_simulated_crosstabs(questions, epsilon, joint, a_option):
    """Over 2,000 seeded crosstabs of 3,000 respondents the spread of P(B = yes | A's option) and the crosstab's
    own standard errors are the planned ones (within 5% and 2%)."""
    design = make_design(questions, epsilon)
    question_a, question_b = design["questions"]
    joint = np.array(joint)
    rng = np.random.default_rng(13)
    true_a, true_b = draw_pairs(joint, REPETITIONS * RESPONDENTS, rng)
    tables = simulate(design, true_a, true_b, REPETITIONS, RESPONDENTS, rng)
    row = 1  # A's option: "yes", or o1
    share_a, share_b, both = joint[row].sum(), joint[:, 1].sum(), joint[row, 1]
    planned = math.sqrt(conditional_share_variance(
        question_a, question_b, [1 - share_a - share_b + both, share_b - both, share_a - both, both]) / RESPONDENTS)
    estimates = values(tables, "b_given_a", a_option, "yes")
    errors = [table.get("b_given_a", a_option, "yes").std_error for table in tables]
    assert estimates.std(ddof=1) == pytest.approx(planned, rel=0.05)
    assert np.mean(errors) == pytest.approx(planned, rel=0.02)


def test_the_conditional_share_variance_refuses_a_number():
    design = make_design(YES_NO_2 + '[[questions]]\nid = "n"\nkind = "number"\ntext = "N?"\nmin = 0\nmax = 9\n', 2)
    with pytest.raises(ValueError, match="'n' is a number"):
        conditional_share_variance(design["questions"][0], design["questions"][2], [0.25] * 4)


def test_the_crosstab_precision_of_a_pair():
    defn = definition(IMPRECISE_TOML)
    shares = crosstab_precision(defn, "sector", "cheated", respondents=20_001)
    assert "among those who choose a given option of sector (25% of respondents)" in shares["lines"][0]
    half = float(re.search(r"within ±([\d.]+) points", shares["lines"][0]).group(1))
    assert 30 < half < 45, "the issue's P(cheated | Business) at n = 20,001 had an interval [0.000, 0.813]"
    assert shares["warning"].startswith("With 20,001 respondents the share with each answer of cheated")
    mean = crosstab_precision(defn, "cheated", "age", respondents=1000)
    assert "is not planned here" in mean["lines"][0] and mean["warning"] is None
    refused = crosstab_precision(defn, "age", "cheated", respondents=1000)
    assert refused["lines"] == ["'age' is a number question; put it second (B) to get its mean among each option "
                                "of the first question."]


# The command line


def test_create_and_plan_print_the_warning(cli_runner, tmp_path):
    survey = tmp_path / "habits.toml"
    survey.write_text(IMPRECISE_TOML, encoding="utf-8")
    created = cli_runner.invoke(main, ["--db", str(tmp_path / "h.db"), "create", str(survey)])
    assert created.exit_code == 0, created.output
    assert ("Warning: With 1,000 respondents the estimates of question 'sports' will be within ±54.9 points"
            in created.stderr)
    planned = cli_runner.invoke(main, ["plan", str(survey)])
    assert planned.exit_code == 0, planned.output
    assert planned.stderr.count("Warning: ") == 4 and "'sports' will be within ±54.9 points" in planned.stderr
    loose = cli_runner.invoke(main, ["plan", str(survey), "--respondents", "40000", "--warn-margin", "0.10"])
    assert loose.stderr == ""
    strict = cli_runner.invoke(main, ["plan", str(survey), "--respondents", "40000", "--format", "json",
                                      "--warn-margin", "0.05"])
    warned = json.loads(strict.stdout)["warnings"]
    assert [w["id"] for w in warned] == ["sports"] and "for ±5 points" in warned[0]["message"]
    bad = cli_runner.invoke(main, ["plan", str(survey), "--warn-margin", "10"])
    assert bad.exit_code == 2 and "--warn-margin" in bad.stderr


def test_create_warns_at_the_respondents_given_and_not_for_a_precise_survey(cli_runner, tmp_path):
    survey = tmp_path / "precise.toml"
    survey.write_text(PRECISE_TOML, encoding="utf-8")
    quiet = cli_runner.invoke(main, ["--db", str(tmp_path / "p.db"), "create", str(survey)])
    assert quiet.exit_code == 0 and "Warning" not in quiet.stderr
    few = cli_runner.invoke(main, ["--db", str(tmp_path / "q.db"), "create", str(survey), "--respondents", "100"])
    assert "Warning: With 100 respondents the estimate of question 'smoker'" in few.stderr


# The builder


def builder_data(owner, toml: str, **changes) -> tuple:
    """Import a definition into the builder; return the page and its fields with ``changes``."""
    token = fields(owner.get("/surveys/build"), "import")["csrf_token"]
    response = owner.post("/surveys/build/import", data={"csrf_token": token, "toml": toml})
    assert response.status_code == 200, response.get_data(as_text=True)[:500]
    return response, {**fields(response), **changes}


def test_the_builder_warns_beside_the_imprecise_question_and_in_the_summary(owner):
    response, _ = builder_data(owner, IMPRECISE_TOML)
    body = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", page(response)))
    expected = precision_warnings(definition(IMPRECISE_TOML), respondents=1000,
                                  recommended=plan(definition(IMPRECISE_TOML))["recommended"],
                                  subject=lambda _: "this question")
    assert f"Warning: {expected['sports']}." in body
    assert "the estimates of this question will be within ±54.9 points" in body
    assert "All 4 questions are too imprecise to be useful with 1,000 respondents" in body
    preview = page(response)
    sports = re.search(r'id="questions-2-preview">(.*?)</div>', preview, re.S).group(1)
    assert "±54.9 points" in sports, "the warning sits in the multi-select's own preview"
    quiet, _ = builder_data(owner, PRECISE_TOML)
    assert "Warning" not in page(quiet) and "too imprecise" not in page(quiet)


def test_the_json_preview_has_the_same_warnings(owner):
    _, data = builder_data(owner, IMPRECISE_TOML)
    body = owner.post("/surveys/build/preview.json", data=data).json
    warnings = [q["warnings"] for q in body["questions"]]
    assert all(len(w) == 1 for w in warnings)
    assert "within ±54.9 points" in warnings[2][0]
    assert body["summary"]["warnings"][0].startswith("All 4 questions are too imprecise")
    raised = owner.post("/surveys/build/preview.json", data={**data, "respondents": "5000"}).json
    assert [q["id"] for q in raised["questions"] if q["warnings"]] == ["sector", "sports"]
    assert raised["summary"]["warnings"] == ["2 of the 4 questions are too imprecise to be useful with 5,000 "
                                             "respondents: a margin wider than ±10 points (see the warning beside "
                                             "each, with the respondents it needs)"]
    _, precise = builder_data(owner, PRECISE_TOML)
    quiet = owner.post("/surveys/build/preview.json", data=precise).json
    assert all(q["warnings"] == [] for q in quiet["questions"]) and quiet["summary"]["warnings"] == []


def test_the_crosstab_preview_of_two_yes_no_questions_is_plan_odds_ratio(owner, cli_runner, tmp_path):
    survey = tmp_path / "precise.toml"
    survey.write_text(PRECISE_TOML, encoding="utf-8")
    planned = cli_runner.invoke(main, ["plan", str(survey), "--odds-ratio", "smoker", "lung", "2", "--format", "json"])
    needed = json.loads(planned.stdout)["odds_ratio"]["respondents"]
    _, data = builder_data(owner, PRECISE_TOML, odds_ratio="2")
    crosstab = owner.post("/surveys/build/preview.json", data=data).json["crosstab"]
    assert (crosstab["a"], crosstab["b"]) == ("smoker", "lung"), "the first two questions by default"
    assert crosstab["choices"] == [["smoker", "1. smoker (yes/no)"], ["lung", "2. lung (yes/no)"]]
    assert f"To detect an odds ratio of 2 between smoker and lung" in crosstab["lines"][0]
    assert f": {needed:,} respondents (more than the 1,000 you expect)." in crosstab["lines"][0]
    three = owner.post("/surveys/build/preview.json", data={**data, "odds_ratio": "3", "respondents": "900000"})
    planned3 = cli_runner.invoke(main, ["plan", str(survey), "--odds-ratio", "smoker", "lung", "3", "--format",
                                        "json"])
    assert (f"{json.loads(planned3.stdout)['odds_ratio']['respondents']:,} respondents (your 900,000 are enough)"
            in three.json["crosstab"]["lines"][0])


def test_the_crosstab_preview_without_javascript(owner):
    response, _ = builder_data(owner, IMPRECISE_TOML)
    body = page(response)
    assert re.search(r'<select[^>]*id="pair_a"', body) and '<option selected value="cheated">1. cheated (yes/no)' in body
    assert "among those who answer yes to cheated (50% of respondents)" in body
    response = press(owner, response, "preview", pair_a="sector", pair_b="cheated")
    body = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", page(response)))
    expected = crosstab_precision(definition(IMPRECISE_TOML), "sector", "cheated", respondents=1000)
    assert expected["lines"][0] in body and f"Warning: {expected['warning']}." in body
    response = press(owner, response, "preview", pair_a="age", pair_b="cheated")
    assert "'age' is a number question; put it second (B)" in page(response)
    response = press(owner, response, "preview", odds_ratio="1")
    assert response.status_code == 422 and "Type an odds ratio above 0 and other than 1" in page(response)


def test_one_question_has_no_crosstab(owner):
    single = PRECISE_TOML.split('[[questions]]\nid = "lung"')[0]
    _, data = builder_data(owner, single)
    crosstab = owner.post("/surveys/build/preview.json", data=data).json["crosstab"]
    assert crosstab["a"] is None and crosstab["lines"] == [
        "Add a second question to see how precise a crosstab of two questions will be."]
